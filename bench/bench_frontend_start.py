"""How long ``rng-service serve`` takes to start, on a small and a ten-times larger log.

Rows, in one run: the time from the command to its ``listening`` line, with one process and
with ``--front-ends 2``, on a log of ``LARGE`` entries against the same on ``SMALL`` entries
(the baseline): a ratio near 1 says the start does not depend on the log's size. The logs are
real format-2 entries and Merkle nodes with a signed checkpoint per 1,000
(``bench.bench_storecheck.build``). Each log is started once before the timed starts, so that
its store check is recorded and the timed ones check only what is new (nothing): the first
start of a log checks all of it (docs/operations/running.md, "The log store's own check").
The starts alternate between the two logs; the median of ``REPEATS`` is reported.
"""

from __future__ import annotations

import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import bench_storecheck
from bench._common import Row
from rng_service.log.keys import generate_key_pair, load_signer

SMALL, LARGE = 10_000, 100_000
REPEATS = 5
ORIGIN = "bench.example/log"


def _log(directory: Path, n: int) -> Path:
    """A log of ``n`` entries signed by a key of its own, and its configuration file."""
    directory.mkdir(parents=True)
    key = directory / "key.pem"
    generate_key_pair(key, name=ORIGIN)
    # build() signs its checkpoints with bench_storecheck.SIGNER: here with this log's key,
    # which the service's start-up check verifies them with.
    shared = bench_storecheck.SIGNER
    bench_storecheck.SIGNER = load_signer(key, name=ORIGIN)
    try:
        bench_storecheck.build(directory / "log.sqlite3", n)
    finally:
        bench_storecheck.SIGNER = shared
    config = directory / "config.toml"
    config.write_text(
        "\n".join(
            [
                "[server]",
                'host = "127.0.0.1"',
                "port = 0",
                f'lock_dir = "{directory / "run"}"',
                "shutdown_grace_seconds = 2",
                "[metrics]",
                "enabled = false",
                "[log]",
                f'origin = "{ORIGIN}"',
                f'key_file = "{key}"',
                "[storage]",
                f'path = "{directory / "log.sqlite3"}"',
                "",
            ]
        )
    )
    return config


def start_seconds(config: Path, front_ends: int) -> float:
    """Seconds from ``serve`` to its ``listening`` line; the service is then stopped."""
    began = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rng_service.cli.service", "serve", "--config", str(config),
         "--front-ends", str(front_ends)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        seconds = time.perf_counter() - began
        if not line.startswith("{"):
            raise RuntimeError(f"serve did not start: {line!r}")
        json.loads(line)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    return seconds


def run(*, short: bool) -> list[Row]:
    small, large = (1_000, 10_000) if short else (SMALL, LARGE)
    repeats = 1 if short else REPEATS
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        configs = {n: _log(Path(tmp) / f"log{n}", n) for n in (small, large)}
        for front_ends in (1, 2):
            for config in configs.values():
                start_seconds(config, front_ends)  # the first start checks the whole log
            times: dict[int, list[float]] = {small: [], large: []}
            for _ in range(repeats):
                for n, config in configs.items():
                    times[n].append(start_seconds(config, front_ends))
            label = "one process" if front_ends == 1 else "--front-ends 2"
            rows.append(
                Row(
                    name=f"serve {label}: start to listening, {large:,} entries",
                    value=statistics.median(times[large]),
                    unit="s",
                    baseline_name=f"the same on {small:,} entries",
                    baseline_value=statistics.median(times[small]),
                    target="ratio about 1: the start does not depend on the log's size",
                )
            )
    return rows
