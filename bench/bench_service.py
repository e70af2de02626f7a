"""End-to-end: durable, signed unary spins with 32 in flight vs a bare grpc.aio echo server.

Both servers run in their own process with uvloop and the same server options; the same load
client process (bench/_load_client.py) drives each in turn. The service runs on its real
defaults: SQLite WAL with synchronous=FULL, Ed25519-signed checkpoints, receipts with
inclusion proofs. Also reported: the service's peak RSS under this load.
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
            # "PORT 1234" or "rng-service listening on 127.0.0.1:1234, metrics on :9464"
            return proc, int(re.findall(r"(?:PORT |:)(\d+)", line)[0])
    proc.kill()
    raise RuntimeError(f"{cmd} did not start")


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _load(port: int, path: str, seconds: float, concurrency: int, tag: str) -> dict[str, float]:
    out = subprocess.run(
        [PY, "-m", "bench._load_client", "--target", f"127.0.0.1:{port}", "--path", path,
         "--seconds", str(seconds), "--concurrency", str(concurrency), "--tag", tag,
         "--max-calls", str(int(seconds * 20_000) + concurrency)],
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
            [PY, "-m", "rng_service.cli", "serve"], senv, "rng-service listening on"
        )
        try:
            spins = _load(port, "/rng.v1.OutcomeService/SpinRoulette", seconds, concurrency, "s")
            rss = _peak_rss_mib(service.pid)
        finally:
            _stop(service)
    if spins["errors"] or base["errors"]:
        raise RuntimeError(f"errors under load: echo {base['errors']}, spins {spins['errors']}")
    return [
        Row("unary spins/s, 32 in flight (durable, signed)", spins["rate"], "calls/s",
            "grpc.aio echo", base["rate"], ">= 0.75"),
        Row("unary spin p99 latency", spins["p99"] * 1000, "ms",
            "echo p99", base["p99"] * 1000, "<= 2.0"),
        Row("unary spin p50 latency", spins["p50"] * 1000, "ms", "echo p50", base["p50"] * 1000),
        Row("service peak RSS under unary load", rss, "MiB", "-", 0.0),
    ]  # fmt: skip
