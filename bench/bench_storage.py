"""Log storage: durable append throughput, one row per commit vs group commit, on SQLite and on
PostgreSQL.

Each row is a realistic ``EntryRecord`` (about 600 bytes of canonical entry JSON plus its
lookup keys) with the Merkle nodes it completes (about 2 per entry, from the real
``MerkleTree``), appended with the driver's public ``append(entries, nodes)`` into a fresh,
empty log:

- ``SqliteStorage`` (WAL, ``synchronous=FULL``: one fsync per transaction);
- ``PostgresStorage`` on a throwaway local cluster started for the run the way the tests start
  theirs (``tests/postgres_cluster.py``: ``fsync = on``, ``synchronous_commit = on``, data under
  /tmp, the client on the cluster's unix socket), one fresh database per group size. Without
  PostgreSQL installed these rows are skipped with a message naming the Debian package.

Only the time spent inside ``append`` is counted; building entries and hashing is not. The
baseline is one entry per transaction of the same driver; groups of 32 and 100 show what group
commit buys. fsync is cheap on these virtual disks (about 0.1 ms), so compare ratios, not
absolute per-row rates, with production hardware.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from pathlib import Path

from bench._common import Row
from rng_service.log.merkle import leaf_hash
from rng_service.storage.base import EntryRecord, LogStorage, NodeRecord
from rng_service.storage.sqlite import SqliteStorage
from rng_service.writer.tree import MerkleTree

GROUPS = (1, 32, 100)
#: Most rows one measurement appends (the loop is also bounded in time).
MAX_ROWS = 2_000_000


def _entry_bytes(index: int) -> bytes:
    record = {
        "index": index,
        "kind": "roulette_spin",
        "client_id": "pit-3-table-12",
        "request_id": f"6f1c2a9e-{index:012d}",
        "table_id": "T12",
        "round_id": f"R{index // 7}",
        "session_id": "S-2026-11-29-morning",
        "timestamp_ns": 1_767_225_600_000_000_000 + index * 1_000_000,
        "generator": {"instance_id": "9c0d" * 8, "epoch": 41, "lab_mode": False},
        "params": {"wheel": "double_zero", "pockets": 38, "profile": "pa-617a-roulette-v1"},
        "outcome": {"pocket": "17", "color": "black", "pocket_index": 17},
        "request_digest": hashlib.sha256(str(index).encode()).hexdigest(),
        "note": "x" * 120,
    }
    return json.dumps(record, separators=(",", ":"), sort_keys=True).encode()


def _batch(tree: MerkleTree, start: int, count: int) -> tuple[list[EntryRecord], list[NodeRecord]]:
    entries = []
    for i in range(start, start + count):
        data = _entry_bytes(i)
        entries.append(
            EntryRecord(
                index=i,
                data=data,
                leaf_hash=leaf_hash(data),
                client_id="pit-3-table-12",
                request_id=f"6f1c2a9e-{i:012d}",
                request_digest=hashlib.sha256(str(i).encode()).digest(),
                kind="roulette_spin",
                table_id="T12",
                round_id=f"R{i // 7}",
                session_id="S-2026-11-29-morning",
                timestamp_ns=1_767_225_600_000_000_000 + i * 1_000_000,
                commit_size=start + count,
                slot=f"draw-{i % 7}",
                table_seq=i + 1,
            )
        )
    pending = tree.prepare([e.leaf_hash for e in entries])
    tree.commit(pending)
    return entries, list(pending.nodes)


def _append_rate(store: LogStorage, group: int, *, seconds: float) -> float:
    """Rows per second spent in durable ``append`` with ``group`` entries per transaction."""
    tree = MerkleTree(size=0, get_nodes=store.nodes)
    rows, busy = 0, 0.0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline and rows < MAX_ROWS:
        entries, nodes = _batch(tree, rows, group)
        start = time.perf_counter()
        store.append(entries, nodes)
        busy += time.perf_counter() - start
        rows += group
    return rows / busy


def sqlite_rates(*, seconds: float) -> dict[int, float]:
    """Rows/s of ``SqliteStorage.append`` for each group size, each in a fresh file."""
    rates = {}
    for group in GROUPS:
        with tempfile.TemporaryDirectory(prefix="bench-storage-") as directory:
            store = SqliteStorage(Path(directory) / "log.sqlite3")
            try:
                rates[group] = _append_rate(store, group, seconds=seconds)
            finally:
                store.close()
    return rates


def postgres_rates(*, seconds: float) -> dict[int, float]:
    """Rows/s of ``PostgresStorage.append`` for each group size, each in a fresh database of a
    throwaway cluster. Raises ``PostgresNotInstalled`` (message names the Debian package)."""
    from rng_service.storage.postgres import PostgresStorage
    from tests.postgres_cluster import Cluster, find_bindir

    cluster = Cluster(find_bindir())
    try:
        cluster.init()
        cluster.start()
        rates = {}
        for group in GROUPS:
            name = f"bench_append_{group}"
            cluster.create_database(name)
            store = PostgresStorage(cluster.dsn(name))
            try:
                rates[group] = _append_rate(store, group, seconds=seconds)
            finally:
                store.close()
        return rates
    finally:
        cluster.remove()


def _rows(driver: str, rates: dict[int, float]) -> list[Row]:
    return [
        Row(
            name=f"{driver} append, {g} entr{'y' if g == 1 else 'ies'}/commit",
            value=rates[g],
            unit="rows/s",
            baseline_name="1 entry/commit",
            baseline_value=rates[1],
        )
        for g in GROUPS
    ]


def run(*, short: bool) -> list[Row]:
    from tests.postgres_cluster import PostgresNotInstalled

    seconds = 0.4 if short else 4.0
    rows = _rows("sqlite", sqlite_rates(seconds=seconds))
    try:
        rows += _rows("postgres", postgres_rates(seconds=seconds))
    except PostgresNotInstalled as e:
        print(f"   skipped: the PostgreSQL rows: {e}")
    return rows
