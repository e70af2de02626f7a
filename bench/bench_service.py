"""End-to-end: the service under load vs a bare grpc.aio echo server.

- Durable, signed unary spins with 32 in flight vs the unary echo (calls/s, latency).
- Batch outcomes: ``DrawBatch`` calls of 1,000 double-zero spins each (one log entry, one
  receipt per call, every call a fresh request id), 32 in flight, counted in outcomes/s, vs a
  server-streaming echo: calls that each stream 1,000 messages of 16 bytes, 32 in flight,
  counted in messages/s.

Both servers run in their own process with uvloop and the same server options; the same load
client process (bench/_load_client.py) drives each in turn, on 127.0.0.1 only. The service runs
in plaintext development mode (every caller has every role, so the lab's ``DrawBatch`` is
allowed) on its real defaults: SQLite WAL with synchronous=FULL, Ed25519-signed checkpoints,
receipts with inclusion proofs. Also reported: the service's peak RSS under the unary load.

CPU: the CPU-seconds (user + system, from ``/proc/<pid>/stat``) that the server's processes
(the process and every descendant) used while the load ran, per 1,000 answered calls; the
warm-up calls of the load client are counted with the answered ones. The same for the echo,
in the same run. Low load: the unary rows again at 1 and 4 in flight, and the first lone call
after a burst of 32 (``_load_client --lone-after-burst``). The machine's load average is
reported with the rows: the machines here are shared, so compare ratios within one run.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench._common import Row

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def _start(
    cmd: list[str], env: dict[str, str], marker: str, cwd: Path = ROOT
) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert proc.stdout is not None
    for _ in range(200):
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith(marker):
            # "PORT 1234" (the echo server), or rng-service's JSON line
            # {"event": "listening", "grpc": "127.0.0.1:1234", "grpc_port": 1234, ...}
            if line.startswith("{"):
                return proc, int(json.loads(line)["grpc_port"])
            return proc, int(re.findall(r"PORT (\d+)", line)[0])
    proc.kill()
    raise RuntimeError(f"{cmd} did not start")


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


#: Outcomes per DrawBatch call, and messages per streaming-echo call.
BATCH = 1000
#: Most calls a second each load may make (bounds the requests built before the clock starts).
_MAX_CALL_RATE = {"spin": 20_000, "batch": 3_000, "stream": 1_000}


def _load(
    port: int,
    path: str,
    seconds: float,
    concurrency: int,
    tag: str,
    kind: str = "spin",
    lone_after_burst: int = 0,
    tables: int = 1,
) -> dict[str, float]:
    max_calls = int(seconds * _MAX_CALL_RATE[kind]) + concurrency
    max_calls += lone_after_burst * (concurrency + 1)
    out = subprocess.run(
        [PY, "-m", "bench._load_client", "--target", f"127.0.0.1:{port}", "--path", path,
         "--kind", kind, "--items", str(BATCH), "--seconds", str(seconds),
         "--concurrency", str(concurrency), "--tag", tag, "--max-calls", str(max_calls),
         "--lone-after-burst", str(lone_after_burst), "--tables", str(tables)],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=seconds + 120,
    )  # fmt: skip
    result: dict[str, float] = json.loads(out.stdout)
    return result


_TICK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str]:
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU-seconds of ``pid`` and every live descendant (``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int(_stat_fields(int(entry.name))[1])
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile
            children.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = _stat_fields(p)
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
        todo.extend(children.get(p, ()))
    return total / _TICK


def _measured(
    pid: int, port: int, path: str, seconds: float, concurrency: int, tag: str, **kw: object
) -> dict[str, float]:
    """``_load`` plus ``cpu_per_1000``: the server tree's CPU-seconds per 1,000 calls."""
    before = tree_cpu_seconds(pid)
    result = _load(port, path, seconds, concurrency, tag, **kw)  # type: ignore[arg-type]
    used = tree_cpu_seconds(pid) - before
    result["cpu_per_1000"] = used / (result["calls"] + concurrency) * 1000
    result["cpu_per_second"] = used / result["seconds"]
    return result


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_service(
    tmp: Path, env: dict[str, str], *args: str, settings: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], int]:
    """``rng-service serve ARGS`` on its defaults, with a fresh key and SQLite log in ``tmp``
    (plaintext development mode on a free loopback port, no metrics endpoint); ``settings``
    (``RNG_SERVICE__...`` variables) change those defaults."""
    key = tmp / "key.pem"
    subprocess.run(
        [PY, "-m", "rng_service.cli.service", "keygen", "--out", str(key), "--name", "bench"],
        cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip
    senv = {
        **env,
        "RNG_SERVICE__SERVER__PORT": "0",
        "RNG_SERVICE__METRICS__ENABLED": "false",
        "RNG_SERVICE__STORAGE__PATH": str(tmp / "log.sqlite3"),
        "RNG_SERVICE__LOG__KEY_FILE": str(key),
        "RNG_SERVICE__LOG__KEY_NAME": "bench",
        **(settings or {}),
    }
    return _start(
        [PY, "-m", "rng_service.cli.service", "serve", *args], senv, '{"event": "listening"'
    )


#: Rounds of a burst of 32 then one lone call (the low-load row).
LONE_ROUNDS = 60
SPIN = "/rng.v1.OutcomeService/SpinRoulette"
ECHO = "/bench.Echo/Echo"


def _unary_set(pid: int, port: int, path: str, seconds: float, tag: str) -> dict[str, Any]:
    """32 in flight (with CPU), then 1 and 4 in flight, then the lone call after a burst."""
    low = max(1.0, seconds / 2)
    return {
        "32": _measured(pid, port, path, seconds, 32, tag),
        "1": _load(port, path, low, 1, tag + "1"),
        "4": _load(port, path, low, 4, tag + "4"),
        "lone": _load(port, path, low * 2, 32, tag + "L",
                      lone_after_burst=6 if seconds < 5 else LONE_ROUNDS),
    }  # fmt: skip


def run(*, short: bool) -> list[Row]:
    seconds = 1.5 if short else 10.0
    concurrency = 32
    load_before = os.getloadavg()[0]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    echo, echo_port = _start([PY, "-m", "bench._echo_server"], env, "PORT")
    try:
        base_set = _unary_set(echo.pid, echo_port, ECHO, seconds, "echo")
        stream = _load(echo_port, "/bench.Echo/Stream", seconds, concurrency, "es", "stream")
    finally:
        _stop(echo)
    with tempfile.TemporaryDirectory(prefix="rng-bench-") as tmp:
        service, port = start_service(Path(tmp), env)
        try:
            spin_set = _unary_set(service.pid, port, SPIN, seconds, "s")
            rss = _peak_rss_mib(service.pid)
            batch = _load(
                port, "/rng.v1.OutcomeService/DrawBatch", seconds, concurrency, "b", "batch"
            )
        finally:
            _stop(service)
    base, spins = base_set["32"], spin_set["32"]
    errors = {
        "stream echo": stream["errors"], "batches": batch["errors"],
        **{f"echo {k}": v["errors"] for k, v in base_set.items()},
        **{f"spins {k}": v["errors"] for k, v in spin_set.items()},
    }  # fmt: skip
    if any(errors.values()):
        raise RuntimeError(f"errors under load: {errors}")
    load_after = os.getloadavg()[0]
    rows = [
        Row("unary spins/s, 32 in flight (durable, signed)", spins["rate"], "calls/s",
            "grpc.aio echo", base["rate"], ">= 0.75"),
        Row("unary spin p99 latency", spins["p99"] * 1000, "ms",
            "echo p99", base["p99"] * 1000, "<= 2.0"),
        Row("unary spin p50 latency", spins["p50"] * 1000, "ms", "echo p50", base["p50"] * 1000),
        Row("service CPU-s per 1,000 spins, 32 in flight", spins["cpu_per_1000"], "CPU-s",
            "echo CPU-s per 1,000 calls", base["cpu_per_1000"], "<= 1.5"),
        Row("service CPU-s per second under that load", spins["cpu_per_second"], "CPU-s/s",
            "echo CPU-s per second", base["cpu_per_second"]),
    ]  # fmt: skip
    for n in ("1", "4"):
        s_, b_ = spin_set[n], base_set[n]
        rows += [
            Row(f"unary spins/s, {n} in flight", s_["rate"], "calls/s", "echo", b_["rate"]),
            Row(f"unary spin p50, {n} in flight", s_["p50"] * 1000, "ms", "echo p50",
                b_["p50"] * 1000),
            Row(f"unary spin p99, {n} in flight", s_["p99"] * 1000, "ms", "echo p99",
                b_["p99"] * 1000),
        ]  # fmt: skip
    s_, b_ = spin_set["lone"], base_set["lone"]
    rows += [
        Row("first lone spin after a burst of 32, p50", s_["p50"] * 1000, "ms",
            "echo, same", b_["p50"] * 1000),
        Row("first lone spin after a burst of 32, p99", s_["p99"] * 1000, "ms",
            "echo, same", b_["p99"] * 1000),
        Row("service peak RSS under unary load", rss, "MiB", "-", 0.0),
        Row(f"batch outcomes/s, {BATCH:,}/DrawBatch, 32 in flight", batch["items_rate"],
            "outcomes/s", f"streaming echo msgs/s ({BATCH:,}/call)", stream["items_rate"],
            ">= 3.0"),
        Row(f"DrawBatch calls/s ({BATCH:,} outcomes, 1 entry)", batch["rate"], "calls/s",
            "unary grpc.aio echo", base["rate"]),
        Row("DrawBatch p99 latency", batch["p99"] * 1000, "ms",
            f"stream echo call p99 ({BATCH:,} msgs)", stream["p99"] * 1000),
        Row("machine load average (1 min), end of run", load_after, "load",
            "at the start", load_before),
    ]  # fmt: skip
    return rows
