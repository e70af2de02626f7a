"""Unary spins with more than one process: ``serve --front-ends N`` against N echo processes.

Rows, all at 32 in flight, one load client process, in one run:

- the grpc.aio echo with 1 and with 2 processes on one port (``SO_REUSEPORT``);
- the service (durable, signed ``SpinRoulette``, SQLite, its defaults) with ``--front-ends 1``
  (one process: front end and log writer together) and ``--front-ends 2`` (the writer process
  and two front ends);
- CPU-seconds per 1,000 calls of every process of each server (``/proc``, as in ``service``),
  and, with 2 front ends, the log writer process's own share: its serial section, the limit
  of the paper model in docs/performance.md.

The load client opens one channel per worker group (``--target`` repeated 8 times: the kernel
spreads the connections over the processes), so that two processes both get calls.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from bench._common import Row
from bench.bench_service import (
    ECHO,
    PY,
    ROOT,
    SPIN,
    _start,
    _stop,
    start_service,
    tree_cpu_seconds,
)

#: Channels of the load client (each its own connection).
CHANNELS = 8


def _own_cpu(pid: int) -> float:
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load(port: int, path: str, seconds: float, tag: str) -> dict[str, float]:
    import json

    max_calls = int(seconds * 20_000) + 32
    targets: list[str] = []
    for _ in range(CHANNELS):
        targets += ["--target", f"127.0.0.1:{port}"]
    out = subprocess.run(
        [PY, "-m", "bench._load_client", *targets, "--path", path, "--seconds", str(seconds),
         "--concurrency", "32", "--tag", tag, "--max-calls", str(max_calls)],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=seconds + 120,
    )  # fmt: skip
    result: dict[str, float] = json.loads(out.stdout)
    if result["errors"]:
        raise RuntimeError(f"{tag}: {result['errors']} errors under load")
    return result


def _measure(pids: list[int], port: int, path: str, seconds: float, tag: str,
             writer: int | None = None) -> dict[str, float]:  # fmt: skip
    before = sum(tree_cpu_seconds(p) for p in pids)
    own = _own_cpu(writer) if writer is not None else 0.0
    r = _load(port, path, seconds, tag)
    calls = r["calls"] + 32
    r["cpu_per_1000"] = (sum(tree_cpu_seconds(p) for p in pids) - before) / calls * 1000
    if writer is not None:
        r["writer_per_1000"] = (_own_cpu(writer) - own) / calls * 1000
    return r


def run(*, short: bool) -> list[Row]:
    seconds = 1.5 if short else 10.0
    load_before = os.getloadavg()[0]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    echo1, port = _start([PY, "-m", "bench._echo_server"], env, "PORT")
    try:
        e1 = _measure([echo1.pid], port, ECHO, seconds, "e1")
        echo2, _ = _start([PY, "-m", "bench._echo_server", str(port)], env, "PORT")
        try:
            e2 = _measure([echo1.pid, echo2.pid], port, ECHO, seconds, "e2")
        finally:
            _stop(echo2)
    finally:
        _stop(echo1)
    spins: dict[int, dict[str, float]] = {}
    for n in (1, 2):
        with tempfile.TemporaryDirectory(prefix="rng-bench-") as tmp:
            service, sport = start_service(Path(tmp), env, "--front-ends", str(n))
            try:
                spins[n] = _measure([service.pid], sport, SPIN, seconds, f"s{n}",
                                    writer=service.pid if n > 1 else None)  # fmt: skip
            finally:
                _stop(service)
    s1, s2 = spins[1], spins[2]
    return [
        Row("echo calls/s, 2 processes, 32 in flight", e2["rate"], "calls/s",
            "echo, 1 process", e1["rate"]),
        Row("unary spins/s, --front-ends 1 (one process)", s1["rate"], "calls/s",
            "echo, 1 process", e1["rate"], ">= 0.75"),
        Row("unary spins/s, --front-ends 2 (writer + 2)", s2["rate"], "calls/s",
            "echo, 1 process", e1["rate"]),
        Row("unary spins/s, --front-ends 2 vs echo x2", s2["rate"], "calls/s",
            "echo, 2 processes", e2["rate"]),
        Row("spin p99, --front-ends 1", s1["p99"] * 1000, "ms", "echo p99, 1 process",
            e1["p99"] * 1000, "<= 2.0"),
        Row("spin p99, --front-ends 2", s2["p99"] * 1000, "ms", "echo p99, 2 processes",
            e2["p99"] * 1000, "<= 2.0"),
        Row("CPU-s per 1,000 spins, --front-ends 1", s1["cpu_per_1000"], "CPU-s",
            "echo CPU-s per 1,000, 1 process", e1["cpu_per_1000"], "<= 1.5"),
        Row("CPU-s per 1,000 spins, --front-ends 2 (all)", s2["cpu_per_1000"], "CPU-s",
            "echo CPU-s per 1,000, 2 processes", e2["cpu_per_1000"]),
        Row("log writer process CPU-s per 1,000 spins", s2["writer_per_1000"], "CPU-s",
            "all processes, --front-ends 2", s2["cpu_per_1000"]),
        Row("machine load average (1 min), end of run", os.getloadavg()[0], "load",
            "at the start", load_before),
    ]  # fmt: skip
