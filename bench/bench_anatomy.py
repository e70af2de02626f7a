"""Where a durable, signed spin's CPU goes, against the bare echo, one part at a time.

The service spends about three times the CPU a call of a bare grpc.aio echo server
(``bench_service``). This benchmark builds the echo up towards the service in steps, each its
own server process driven by the same load client at 32 in flight, and reports the server's
CPU (user + system, every thread, ``/proc``) per answered call:

1. the bare echo (the baseline of every row);
2. the echo answering every call with a real ``SpinRouletteResponse``'s bytes (the entry, the
   receipt's inclusion proof and signed note: about 900 bytes, against the request's 40);
3. the same with the request parsed and the response serialized as protobuf messages, as the
   service's handlers do;
4. the same with every call handed to a writer thread that takes groups as the log writer
   does and holds the GIL for as many microseconds of pure Python a request as the service's
   log writer thread spent a spin in step 5 (``bench._echo_server --writer-us``);
5. the service itself (plaintext development mode on its defaults: SQLite WAL with
   synchronous=FULL, Ed25519-signed checkpoints, receipts with inclusion proofs), with its main
   thread (grpc-aio's work and our handler) and its log writer thread shown apart.

Step 4 less step 3 is what sharing one interpreter with a writer costs grpc-aio's thread
(GIL hand-offs, wake-ups) besides the writer's own CPU; step 5 less step 4 is our handler,
the real writer's system time (the fsync) and what the simulation leaves out.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench._common import Row
from bench.bench_service import SPIN, _load, _start, _stop, start_service

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
ECHO = "/bench.Echo/Echo"
_TICK = os.sysconf("SC_CLK_TCK")


def _threads(pid: int) -> dict[int, float]:
    """CPU-seconds (user + system) of each thread of ``pid``."""
    out: dict[int, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "stat").read_text()
        except OSError:
            continue  # ended meanwhile
        fields = text[text.rindex(")") + 2 :].split()
        out[int(task.name)] = (int(fields[11]) + int(fields[12])) / _TICK
    return out


def _measure(pid: int, port: int, path: str, seconds: float, tag: str) -> dict[str, float]:
    """CPU-microseconds a call at 32 in flight: the process, its main thread, and its busiest
    other thread (the writer, where there is one)."""
    _load(port, path, min(seconds, 2.0), 32, tag + "w")
    before = _threads(pid)
    result = _load(port, path, seconds, 32, tag)
    after = _threads(pid)
    calls = result["calls"] + 32
    used = {t: after[t] - before.get(t, 0.0) for t in after}
    others = sorted((v for t, v in used.items() if t != pid), reverse=True)
    scale = 1e6 / calls
    return {
        "total": sum(used.values()) * scale,
        "main": used.get(pid, 0.0) * scale,
        "busiest other": (others[0] if others else 0.0) * scale,
        "rate": result["rate"],
    }


def _echo(args: list[str], env: dict[str, str], seconds: float, tag: str) -> dict[str, float]:
    proc, port = _start([PY, "-m", "bench._echo_server", *args], env, "PORT")
    try:
        return _measure(proc.pid, port, ECHO, seconds, tag)
    finally:
        _stop(proc)


def _capture(port: int, out: Path) -> None:
    """Saves one real SpinRoulette response's bytes (in a child process: no gRPC channel in
    this one, which forks the servers)."""
    code = (
        "import sys, grpc\n"
        "from rng_service._proto.rng.v1 import common_pb2, outcomes_pb2\n"
        "ctx = common_pb2.RequestContext(table_id='anatomy', round_id='r', request_id='q')\n"
        "req = outcomes_pb2.SpinRouletteRequest(context=ctx,"
        " wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO)\n"
        f"with grpc.insecure_channel('127.0.0.1:{port}') as ch:\n"
        f"    body = ch.unary_unary('{SPIN}')(req.SerializeToString(), timeout=30)\n"
        "open(sys.argv[1], 'wb').write(body)\n"
    )
    subprocess.run([PY, "-c", code, str(out)], cwd=ROOT, check=True, timeout=60)


def run(*, short: bool) -> list[Row]:
    seconds = 1.5 if short else 10.0
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="rng-anatomy-") as tmp:
        service, port = start_service(Path(tmp), env)
        try:
            svc = _measure(service.pid, port, SPIN, seconds, "s")
            response = Path(tmp) / "response.bin"
            _capture(port, response)
        finally:
            _stop(service)
        writer_us = round(svc["busiest other"], 1)
        bare = _echo([], env, seconds, "e")
        sized = _echo(["--response", str(response)], env, seconds, "r")
        proto = _echo(["--response", str(response), "--protobuf"], env, seconds, "p")
        threaded = _echo(
            ["--response", str(response), "--protobuf", "--writer-us", str(writer_us)],
            env, seconds, "t",
        )  # fmt: skip
        size = response.stat().st_size
    base = bare["total"]
    us = "CPU-us/call"
    return [
        Row(f"1+2. echo answering a real spin response ({size} bytes)", sized["total"], us,
            "bare echo", base),
        Row("3. + protobuf request and response messages", proto["total"], us,
            "bare echo", base),
        Row(f"4. + a writer thread holding the GIL {writer_us} us a request", threaded["total"],
            us, "bare echo", base),
        Row("5. the service: durable, signed spins", svc["total"], us, "bare echo", base,
            "<= 1.5"),
        Row("5. the service's main thread (grpc-aio and our handler)", svc["main"], us,
            "step 4's main thread (grpc-aio and the hand-off)", threaded["main"]),
        Row("5. the service's log writer thread", svc["busiest other"], us,
            "step 4's writer thread", threaded["busiest other"]),
        Row("4. step 4's main thread", threaded["main"], us,
            "step 3's main thread", proto["main"]),
        Row("machine load average (1 min), end of run", os.getloadavg()[0], "load",
            "at the start", load_before),
    ]  # fmt: skip
