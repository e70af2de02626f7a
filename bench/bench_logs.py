"""Throughput by logs: two logs, each loaded by its own client, vs one log (issue "Many logs").

The load is the ``service`` area's unary row: durable, Ed25519-signed ``SpinRoulette`` calls, 32
in flight, every call a fresh request id, each load client its own process
(bench/_load_client.py) on 127.0.0.1 only.

- Baseline: ``rng-service serve`` with one ``[[logs]]`` entry (SQLite), one load client, 32 in
  flight.
- Measured: ``rng-service serve`` with two ``[[logs]]`` entries (two SQLite files): the
  supervisor and a process per log (``rng_service.process.supervisor``); two load clients at
  once, each 32 in flight to its own log's port. Aggregate spins/s is the sum of the two.
- The same two logs served on the shared port only (``server.port``, one shared front end,
  ``rng_service.process.shared_frontend``), each load client naming its log in ``rng-origin``,
  against the two logs on their own ports in the same run.

CPU per spin is the CPU-seconds of every process of the deployment (the supervisor, the log
processes, their idle standbys) over the run divided by the calls acknowledged; the load
clients' CPU is not counted (they share the two cores with the service all the same).

After each run the deployment is stopped and every log is checked before a figure is
reported: ``rng-service check-store --origin`` (every entry's bytes, leaf hash and node, every
stored checkpoint's signature) passes and the log holds exactly the calls acknowledged plus the
warm-up calls.

A paper model of more cores and of logs on several PostgreSQL servers from these figures
(printed, and in docs/performance.md): with ``c`` cores and ``n`` logs, aggregate spins/s is at
most ``min(n * per_log, c / cpu_per_spin)``, ``per_log`` being one log's ceiling set by its
writer's serial section (docs/performance.md) and ``cpu_per_spin`` the measured deployment CPU a
spin; each log's store is its own SQLite file or PostgreSQL database (on its own server if need
be), so no store is shared between logs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench._common import Row
from bench.bench_service import _stop

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
CONCURRENCY = 32
SPIN = "/rng.v1.OutcomeService/SpinRoulette"
ORIGINS = ("bench-a.rng-service.local/log", "bench-b.rng-service.local/log")
#: Most calls a second each load may make (bounds the requests built before the clock starts).
_MAX_CALL_RATE = 20_000
_TICK = os.sysconf("SC_CLK_TCK")


def _tree(root: int) -> list[int]:
    """``root`` and its descendants (the supervisor, the log processes and their standbys)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def _cpu(pids: list[int]) -> dict[int, float]:
    out = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / _TICK
    return out


def _config(d: Path, logs: int, *, shared: bool = False) -> Path:
    """``logs`` logs, each on a port of its own (and, with two, the shared ``server.port``,
    idle); ``shared``: on the shared port only."""
    lines = ["[server]", "port = 0", f'lock_dir = "{d}/run"', "[metrics]", "enabled = false"]
    tag = f"{logs}-shared" if shared else f"{logs}"
    for origin in ORIGINS[:logs]:
        name = origin.split(".")[0]
        lines += [
            "[[logs]]", f'origin = "{origin}"', f'key_file = "{d}/{name}.pem"',
            f'store = "{d}/{name}-{tag}.sqlite3"', *([] if shared else ["port = 0"]),
        ]  # fmt: skip
    path = d / f"logs-{tag}.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _start(config: Path) -> tuple[subprocess.Popen[str], dict[str, int]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RNG_SERVICE_")}
    proc = subprocess.Popen(
        [PY, "-m", "rng_service.cli.service", "serve", "--config", str(config)],
        env={**env, "PYTHONUNBUFFERED": "1"}, cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith('{"event": "listening"'):
        proc.kill()
        raise RuntimeError(f"rng-service serve --config {config} did not start")
    event = json.loads(line)
    if "logs" in event:  # a log without a port of its own is served on the shared port
        shared = int(event["grpc_port"])
        return proc, {o: int(p["grpc_port"] or shared) for o, p in event["logs"].items()}
    return proc, {ORIGINS[0]: int(event["grpc_port"])}


def _load_client(port: int, seconds: float, tag: str, origin: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "bench._load_client", "--target", f"127.0.0.1:{port}", "--path", SPIN,
         "--kind", "spin", "--seconds", str(seconds), "--concurrency", str(CONCURRENCY),
         "--tag", tag, "--max-calls", str(int(seconds * _MAX_CALL_RATE) + CONCURRENCY),
         "--origin", origin],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


def _checked_size(config: Path, origin: str) -> int:
    """``rng-service check-store --origin``: passes, and the log's size it proved. Exit status
    4 is a pass too: it names truncation NOT CHECKED (no kept checkpoint is given), which the
    caller checks itself against the calls the log acknowledged."""
    done = subprocess.run(
        [PY, "-m", "rng_service.cli.service", "check-store", "--config", str(config),
         "--origin", origin],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    found = re.search(r"^OK: .* holds ([\d,]+) entr", done.stdout, re.MULTILINE)
    if done.returncode not in (0, 4) or found is None:
        raise RuntimeError(f"check-store --origin {origin} failed: {done.stdout}{done.stderr}")
    return int(found.group(1).replace(",", ""))


def _measure(d: Path, logs: int, seconds: float, *, shared: bool = False) -> dict[str, Any]:
    config = _config(d, logs, shared=shared)
    proc, ports = _start(config)
    try:
        pids = _tree(proc.pid)
        cpu0 = _cpu(pids)
        clients = [_load_client(ports[o], seconds, f"{logs}-{shared}-{i}", o)
                   for i, o in enumerate(ports)]  # fmt: skip
        results = []
        for client in clients:
            out, _ = client.communicate(timeout=seconds + 120)
            if client.returncode != 0:
                raise RuntimeError(f"a load client failed (exit status {client.returncode})")
            results.append(json.loads(out))
        cpu1 = _cpu(pids)
    finally:
        _stop(proc)
    calls = sum(r["calls"] for r in results)
    errors = sum(r["errors"] for r in results)
    if errors:
        raise RuntimeError(f"{errors} calls failed under load ({logs} logs)")
    for origin, r in zip(ports, results, strict=True):
        size = _checked_size(config, origin)
        if size != r["calls"] + CONCURRENCY:
            raise RuntimeError(
                f"log {origin} holds {size} entries, but {r['calls']} calls were acknowledged "
                f"plus {CONCURRENCY} warm-up calls"
            )
    cpu = sum(cpu1.get(p, 0.0) - cpu0.get(p, 0.0) for p in cpu1)
    return {
        "rate": sum(r["rate"] for r in results),
        "rates": [r["rate"] for r in results],
        "p50": max(r["p50"] for r in results),
        "p99": max(r["p99"] for r in results),
        "calls": calls,
        "cpu_per_1000": 1000 * cpu / calls,
    }


def run(*, short: bool) -> list[Row]:
    seconds = 2.0 if short else 10.0
    with tempfile.TemporaryDirectory(prefix="rng-bench-logs-") as tmp:
        d = Path(tmp)
        for origin in ORIGINS:
            subprocess.run(
                [PY, "-m", "rng_service.cli.service", "keygen", "--out",
                 str(d / f"{origin.split('.')[0]}.pem"), "--name", origin],
                cwd=ROOT, check=True, capture_output=True, timeout=60,
            )  # fmt: skip
        one = _measure(d, 1, seconds)
        two = _measure(d, 2, seconds)
        port = _measure(d, 2, seconds, shared=True)
    per_log = [f"{r:,.0f}" for r in two["rates"]]
    print(
        f"   1 log : {one['rate']:,.0f} spins/s, p50 {one['p50'] * 1000:.1f} ms, p99 "
        f"{one['p99'] * 1000:.1f} ms, {one['cpu_per_1000']:.3f} CPU-s per 1,000 spins\n"
        f"   2 logs: {two['rate']:,.0f} spins/s ({' + '.join(per_log)}), p50 (worse log) "
        f"{two['p50'] * 1000:.1f} ms, p99 {two['p99'] * 1000:.1f} ms, "
        f"{two['cpu_per_1000']:.3f} CPU-s per 1,000 spins; every log checked (check-store) "
        "and holding exactly the calls acknowledged\n"
        f"   2 logs on the one shared port (server.port, each call naming its log): "
        f"{port['rate']:,.0f} spins/s, p50 (worse log) {port['p50'] * 1000:.1f} ms, p99 "
        f"{port['p99'] * 1000:.1f} ms, {port['cpu_per_1000']:.3f} CPU-s per 1,000 spins"
    )
    cpu_per_spin = two["cpu_per_1000"] / 1000
    for cores in (16, 64):
        ceiling = cores / cpu_per_spin
        print(
            f"   model, {cores} cores: CPU allows {ceiling:,.0f} spins/s; at 2,300-2,900 spins/s "
            f"a log (docs/performance.md), {ceiling / 2900:.0f}-{ceiling / 2300:.0f} logs fill it"
        )
    return [
        Row("2 logs, each 32 in flight from its own client: aggregate spins/s", two["rate"],
            "calls/s", "1 log, 32 in flight", one["rate"], ">= 1.3"),
        Row("2 logs: deployment CPU-s per 1,000 spins", two["cpu_per_1000"], "CPU-s",
            "1 log", one["cpu_per_1000"]),
        Row("2 logs: p99 of the worse log", two["p99"] * 1000, "ms", "1 log p99",
            one["p99"] * 1000),
        Row("2 logs on the shared port: aggregate spins/s", port["rate"], "calls/s",
            "2 logs, each on its own port", two["rate"]),
        Row("2 logs on the shared port: deployment CPU-s per 1,000 spins",
            port["cpu_per_1000"], "CPU-s", "2 logs, each on its own port",
            two["cpu_per_1000"]),
    ]  # fmt: skip
