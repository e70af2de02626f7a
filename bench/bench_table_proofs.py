"""What serving a table's map proof costs the front end (issue 40 item 5).

An SQLite log of format 3 entries over 10,000 tables (a real ``SqliteStorage`` with its map
rows, a real ``MerkleTree``, each entry carrying the map root after it), served by the real
``LogServicer`` (no gRPC):

- the first map at a tree size, built from the store's heads (``map_heads_at``: 10,000 rows),
  its root checked against the signed one (what a front end pays once per size it has not
  seen, e.g. after a start);
- the map of the next commit group's size, extended from the cached one by that group's 32
  entries (what a live front end pays as the log grows);
- a ``GetTableHistory`` call of one table's chain (50 entries), with the map proof from a
  cached map.

Baselines, in the same run and interleaved: the same ``GetTableHistory`` call with the map
taken out (``CommittedMaps.at`` answering None: the service before the map), and for the map
builds, that same call too (so each figure reads as "so many history calls' worth").
"""

from __future__ import annotations

import contextlib
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from bench._common import Row
from bench.bench_storecheck import GENERATOR, ORIGIN, SIGNER, T0
from rng_service._proto.rng.v1 import log_pb2
from rng_service.log.entry import LogEntry
from rng_service.log.merkle import leaf_hash
from rng_service.log.note import Checkpoint, sign_note
from rng_service.log.table_map import TableMap
from rng_service.rpc.log_servicer import LogServicer
from rng_service.rpc.table_maps import CommittedMap, CommittedMaps
from rng_service.storage.base import AppendBatch, CheckpointRecord, EntryRecord, MapRow
from rng_service.storage.sqlite import SqliteStorage
from rng_service.writer.tree import MerkleTree

GROUP = 32
CLIENT = "pit-3"


def build(path: Path, n: int, tables: int) -> dict[int, bytes]:
    """An n-entry format 3 log over ``tables`` tables (each entry at a random one), a
    checkpoint per group of 32; returns the notes by size."""
    store = SqliteStorage(path)
    tree = MerkleTree(size=0, get_nodes=store.nodes, cache_min_level=64, recent_nodes=0)
    table_map = TableMap()
    rng = random.Random(40)
    notes: dict[int, bytes] = {}
    try:
        for start in range(0, n, GROUP):
            end = min(start + GROUP, n)
            records, heads = [], {}
            for i in range(start, end):
                table = f"T{rng.randrange(tables)}" if i >= tables else f"T{i}"
                head = table_map.head(CLIENT, table)
                seq = 1 if head is None else head.seq + 1
                table_map.set(CLIENT, table, i, seq)
                data = LogEntry(
                    index=i, timestamp_ns=T0 + i * 1_000_000, kind="roulette_spin",
                    params={"wheel": "double_zero"}, outcome={"n": i}, client=CLIENT,
                    table_id=table, round_id=f"R{i}", session_id="", request_id=f"q{i}",
                    generator=GENERATOR, profile_sha256="ab" * 32, slot="spin",
                    table_seq=seq, table_prev=None if head is None else head.index,
                    table_map=table_map.root(), version=3,
                ).encode()  # fmt: skip
                records.append(EntryRecord(i, data, leaf_hash(data), CLIENT, f"q{i}", b"\0" * 32,
                                           "roulette_spin", table, f"R{i}", "",
                                           T0 + i * 1_000_000, end, "spin", seq))  # fmt: skip
                heads[table] = MapRow(CLIENT, table, i, seq)
            pending = tree.prepare([r.leaf_hash for r in records])
            note = sign_note(Checkpoint(ORIGIN, end, pending.root).body(), [SIGNER])
            notes[end] = note
            batch = AppendBatch(records, pending.nodes, CheckpointRecord(end, end, note),
                                tuple(heads.values()))  # fmt: skip
            store.sequence(lambda _size, b=batch: b)  # type: ignore[misc]
            tree.commit(pending)
    finally:
        store.close()
    return notes


@contextlib.contextmanager
def _without_map(maps: CommittedMaps) -> Iterator[None]:
    """The service before the map: no committed map at any size."""

    def none(size: int) -> CommittedMap | None:
        return None

    maps.at = none  # type: ignore[method-assign]
    try:
        yield
    finally:
        del maps.at


def _time(fn: Callable[[], object], calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def run(*, short: bool) -> list[Row]:
    tables = 1_000 if short else 10_000
    n = 2 * tables if short else 200_000
    rounds = 1 if short else 5
    calls = 20 if short else 200
    with tempfile.TemporaryDirectory(prefix="rng-bench-table-proofs-") as tmp:
        path = Path(tmp) / "log.sqlite3"
        notes = build(path, n, tables)
        store = SqliteStorage(path, read_only=True)
        try:
            tree = MerkleTree.load(store)

            def note(size: int) -> str:
                return notes[size].decode()

            def publish() -> CheckpointRecord:
                raise AssertionError("not called")

            maps = CommittedMaps(store, tree)
            servicer = LogServicer(keys=(), storage=store, tree=tree, checkpoint_note=note,
                                   publish=publish, maps=maps)  # fmt: skip
            size = n - n % GROUP or n
            request = log_pb2.GetTableHistoryRequest(client=CLIENT, table_id="T7",
                                                     tree_size=size)  # fmt: skip
            reply = servicer._history(request, CLIENT)
            assert reply.HasField("map_proof"), "the bench's log has no committed map"
            chain = len(reply.entries)

            def history() -> object:
                return servicer._history(request, CLIENT)

            def cold() -> object:
                return CommittedMaps(store, tree).at(size)

            def extend() -> object:
                fresh = CommittedMaps(store, tree)
                fresh.at(size - GROUP)
                t0 = time.perf_counter()
                fresh.at(size)
                return time.perf_counter() - t0

            best: dict[str, float] = {}
            for _ in range(rounds):  # interleaved; best of each (shared, noisy machine)
                with _without_map(maps):
                    best["baseline"] = min(best.get("baseline", 1e9), _time(history, calls))
                best["history"] = min(best.get("history", 1e9), _time(history, calls))
                best["cold"] = min(best.get("cold", 1e9), _time(cold, 1))
                best["extend"] = min(best.get("extend", 1e9), float(extend()))  # type: ignore[arg-type]
        finally:
            store.close()
    us = 1e6
    base = best["baseline"] * us
    return [
        Row(f"GetTableHistory of a {chain}-entry chain with its map proof ({tables:,} tables, "
            f"{n:,} entries)", best["history"] * us, "us/call", "without the map", base),
        Row(f"first map at a tree size from the store's {tables:,} heads, root checked",
            best["cold"] * us, "us/build", "GetTableHistory without the map", base),
        Row(f"map of the next size, extended by a group of {GROUP}", best["extend"] * us,
            "us/build", "GetTableHistory without the map", base),
    ]  # fmt: skip
