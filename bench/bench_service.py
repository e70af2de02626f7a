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

from bench._common import Row

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def _start(cmd: list[str], env: dict[str, str], marker: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
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
    port: int, path: str, seconds: float, concurrency: int, tag: str, kind: str = "spin"
) -> dict[str, float]:
    max_calls = int(seconds * _MAX_CALL_RATE[kind]) + concurrency
    out = subprocess.run(
        [PY, "-m", "bench._load_client", "--target", f"127.0.0.1:{port}", "--path", path,
         "--kind", kind, "--items", str(BATCH), "--seconds", str(seconds),
         "--concurrency", str(concurrency), "--tag", tag, "--max-calls", str(max_calls)],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=seconds + 120,
    )  # fmt: skip
    result: dict[str, float] = json.loads(out.stdout)
    return result


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run(*, short: bool) -> list[Row]:
    seconds = 1.5 if short else 10.0
    concurrency = 32
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    echo, echo_port = _start([PY, "-m", "bench._echo_server"], env, "PORT")
    try:
        base = _load(echo_port, "/bench.Echo/Echo", seconds, concurrency, "echo")
        stream = _load(echo_port, "/bench.Echo/Stream", seconds, concurrency, "es", "stream")
    finally:
        _stop(echo)
    with tempfile.TemporaryDirectory(prefix="rng-bench-") as tmp:
        key = Path(tmp) / "key.pem"
        subprocess.run(
            [PY, "-m", "rng_service.cli", "keygen", "--out", str(key), "--name", "bench"],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        senv = {
            **env,
            "RNG_SERVICE__SERVER__PORT": "0",
            "RNG_SERVICE__METRICS__ENABLED": "false",
            "RNG_SERVICE__STORAGE__PATH": str(Path(tmp) / "log.sqlite3"),
            "RNG_SERVICE__LOG__KEY_FILE": str(key),
            "RNG_SERVICE__LOG__KEY_NAME": "bench",
        }
        service, port = _start(
            [PY, "-m", "rng_service.cli", "serve"], senv, '{"event": "listening"'
        )
        try:
            spins = _load(port, "/rng.v1.OutcomeService/SpinRoulette", seconds, concurrency, "s")
            rss = _peak_rss_mib(service.pid)
            batch = _load(
                port, "/rng.v1.OutcomeService/DrawBatch", seconds, concurrency, "b", "batch"
            )
        finally:
            _stop(service)
    errors = {
        "echo": base["errors"], "spins": spins["errors"],
        "stream echo": stream["errors"], "batches": batch["errors"],
    }  # fmt: skip
    if any(errors.values()):
        raise RuntimeError(f"errors under load: {errors}")
    return [
        Row("unary spins/s, 32 in flight (durable, signed)", spins["rate"], "calls/s",
            "grpc.aio echo", base["rate"], ">= 0.75"),
        Row("unary spin p99 latency", spins["p99"] * 1000, "ms",
            "echo p99", base["p99"] * 1000, "<= 2.0"),
        Row("unary spin p50 latency", spins["p50"] * 1000, "ms", "echo p50", base["p50"] * 1000),
        Row("service peak RSS under unary load", rss, "MiB", "-", 0.0),
        Row(f"batch outcomes/s, {BATCH:,}/DrawBatch, 32 in flight", batch["items_rate"],
            "outcomes/s", f"streaming echo msgs/s ({BATCH:,}/call)", stream["items_rate"],
            ">= 3.0"),
        Row(f"DrawBatch calls/s ({BATCH:,} outcomes, 1 entry)", batch["rate"], "calls/s",
            "unary grpc.aio echo", base["rate"]),
        Row("DrawBatch p99 latency", batch["p99"] * 1000, "ms",
            f"stream echo call p99 ({BATCH:,} msgs)", stream["p99"] * 1000),
    ]  # fmt: skip
