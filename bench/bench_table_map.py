"""The committed map of table heads (issue 40): what it costs the log writer per spin, and the
writer's start-up load of it, against baselines measured in the same run.

CPU per spin, with and without the map: ``python -m bench.hotpath N --defaults --tables 1000``
(the servicer's SpinRoulette path and the real log writer on an SQLite log, 32 calls in flight,
round-robin over 1,000 tables) in a fresh process each, alternated A/B: A with the map (each
entry's root after its own head: one path of the map rehashed; the round tail check; the map's
rows upserted with the append), B with that work taken out (``--no-map``: the root stays the
empty map's; the rest of the writer is the same). The figure is the process CPU a call
(user + system), the best of the rounds of each.

Start-up load: the writer's map from the store's ``table_map`` rows (``load_map``: the rows
read, the map built, its root compared with the root signed in the newest entry) at 10^4 tables,
against reading the rows alone. The store check at 10^6 entries and 10^4 tables is
``bench/bench_storecheck.py``'s (its log is of format 3 over 10^4 tables).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._common import Row
from bench.bench_storecheck import build
from rng_service.storage.sqlite import SqliteStorage
from rng_service.writer.heads import load_map
from rng_service.writer.tree import MerkleTree

_CPU = re.compile(r"process CPU ([0-9.]+) us/call")
_REPO = Path(__file__).resolve().parents[1]


def _cpu_per_call(n: int, tables: int, *, with_map: bool) -> float:
    cmd = [sys.executable, "-m", "bench.hotpath", str(n), "--defaults", "--tables", str(tables)]
    if not with_map:
        cmd.append("--no-map")
    done = subprocess.run(
        cmd, cwd=_REPO, capture_output=True, text=True, timeout=600, check=True
    )  # fmt: skip
    found = _CPU.search(done.stdout)
    if found is None:
        raise RuntimeError(f"no CPU figure in {done.stdout!r} {done.stderr!r}")
    return float(found.group(1))


def _load(path: Path) -> None:
    store = SqliteStorage(path, read_only=True)
    try:
        tree = MerkleTree.load(store)
        loaded = load_map(store, tree)
        assert len(loaded.heads) > 0
    finally:
        store.close()


def _rows_only(path: Path) -> None:
    store = SqliteStorage(path, read_only=True)
    try:
        assert store.map_rows()
    finally:
        store.close()


def run(*, short: bool) -> list[Row]:
    n = 640 if short else 9_600
    tables = 1_000
    rounds = 1 if short else 4
    best = {True: float("inf"), False: float("inf")}
    for _ in range(rounds):  # alternated A/B, best of each (a shared, noisy machine)
        for with_map in (True, False):
            best[with_map] = min(best[with_map], _cpu_per_call(n, tables, with_map=with_map))
    entries, map_tables = (4_000, 100) if short else (200_000, 10_000)
    load_best = {"load": float("inf"), "rows": float("inf")}
    with tempfile.TemporaryDirectory(prefix="rng-bench-table-map-") as tmp:
        path = Path(tmp) / "log.sqlite3"
        build(path, entries, tables=map_tables)
        for _ in range(1 if short else 3):
            for name, fn in (("rows", _rows_only), ("load", _load)):
                t0 = time.perf_counter()
                fn(path)
                load_best[name] = min(load_best[name], time.perf_counter() - t0)
    return [
        Row(f"CPU per spin with the table map, 32 in flight, {tables:,} tables",
            best[True], "us", "the same without the map's work (--no-map)", best[False],
            target="<= 1.10"),
        Row(f"writer start-up: table map loaded and checked, {map_tables:,} tables "
            f"({entries:,} entries)", load_best["load"], "s",
            f"reading the {map_tables:,} rows", load_best["rows"]),
    ]  # fmt: skip
