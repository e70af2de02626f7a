"""The store's own check (``rng_service.writer.storecheck``): full (``rng-service check-store``) and
incremental (start-up), on an SQLite log, against its irreducible work.

Baseline, measured alone in the same run: read every entry of the range from the store through
``LogStorage.entries`` (pages of 4,096, as the check reads them) and SHA-256 it (RFC 6962 leaf
hash). The check additionally compares every entry's lookup columns with its signed bytes
(parsing its JSON), reads and compares every Merkle node (about two per entry), recomputes
them, verifies every stored checkpoint's Ed25519 signature and root, and replays the table map
(issue 40): every entry's head set in the map and its signed root compared, every chain link,
and the store's map rows against the heads.

Long form: 10^6 real format-3 entries (roulette spins round-robin over 10^4 tables' chains,
about 640 bytes, each with the table map's root after it, their rows' columns those of the
entries, the map's rows upserted with each append) in groups of 1,000 with a signed checkpoint
each (1,000 checkpoints), written by the real ``MerkleTree``, ``TableMap`` and
``SqliteStorage``. The incremental row is a start-up after 10,000 new entries: the recorded
checkpoint at 990,000 is re-verified (signature, and the stored frontier reproducing its root),
the map's heads at that size are read and checked against the root signed in entry 989,999,
and only the new 10,000 entries are checked; its baseline is reading and hashing those 10,000.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from bench._common import Row
from rng_service.log.entry import GeneratorRef, LogEntry
from rng_service.log.merkle import leaf_hash
from rng_service.log.note import Checkpoint, Ed25519NoteSigner, sign_note
from rng_service.log.table_map import TableMap
from rng_service.storage.base import AppendBatch, CheckpointRecord, EntryRecord, MapRow
from rng_service.storage.sqlite import SqliteStorage
from rng_service.writer.storecheck import (
    CHECKPOINT_SIGNERS_KEY,
    VERIFIED_CHECKPOINT_KEY,
    check_store,
)
from rng_service.writer.tree import MerkleTree

ORIGIN = "bench.example/log"
SIGNER = Ed25519NoteSigner(ORIGIN, Ed25519PrivateKey.from_private_bytes(b"\x06" * 32))
GROUP = 1000
PAGE = 4096
T0 = 1_767_225_600_000_000_000
GENERATOR = GeneratorRef("9c0d" * 8, 41, False)


CLIENT = "pit-3"
TABLES = 10_000


def _entry_bytes(i: int, tables: int, table_map: TableMap) -> bytes:
    """Entry ``i``: a spin of table ``T<i % tables>``'s chain, with the map's root after it."""
    spin = {"colour": "black", "number": "17", "position": 17, "voided": False}
    seq = i // tables + 1
    table_map.set(CLIENT, f"T{i % tables}", i, seq)
    return LogEntry(
        index=i, timestamp_ns=T0 + i * 1_000_000, kind="roulette_spin",
        params={"wheel": "double_zero"},
        outcome={"final": spin, "spins": [spin], "wheel": "double_zero"},
        client=CLIENT, table_id=f"T{i % tables}", round_id=f"R{i}",
        session_id="S-2026-11-29-morning", request_id=f"6f1c2a9e-{i:012d}",
        generator=GENERATOR, profile_sha256="ab" * 32, slot="spin", table_seq=seq,
        table_prev=None if i < tables else i - tables, table_map=table_map.root(), version=3,
    ).encode()  # fmt: skip


def build(path: Path, n: int, *, tables: int = TABLES) -> dict[int, bytes]:
    """An n-entry SQLite log over ``tables`` chains, a signed checkpoint per group; returns
    the notes by size."""
    store = SqliteStorage(path)
    tree = MerkleTree(size=0, get_nodes=store.nodes, cache_min_level=64, recent_nodes=0)
    table_map = TableMap()
    notes: dict[int, bytes] = {}
    try:
        for start in range(0, n, GROUP):
            end = min(start + GROUP, n)
            datas = [_entry_bytes(i, tables, table_map) for i in range(start, end)]
            records = [
                EntryRecord(i, d, leaf_hash(d), CLIENT, f"6f1c2a9e-{i:012d}",
                            b"\0" * 32, "roulette_spin", f"T{i % tables}", f"R{i}",
                            "S-2026-11-29-morning", T0 + i * 1_000_000, end, "spin",
                            i // tables + 1)
                for i, d in zip(range(start, end), datas, strict=True)
            ]  # fmt: skip
            heads = {r.table_id: MapRow(CLIENT, r.table_id, r.index, r.table_seq or 1)
                     for r in records}  # fmt: skip
            pending = tree.prepare([r.leaf_hash for r in records])
            note = sign_note(Checkpoint(ORIGIN, end, pending.root).body(), [SIGNER])
            notes[end] = note
            batch = AppendBatch(
                records, pending.nodes, CheckpointRecord(end, end, note), list(heads.values())
            )
            store.sequence(lambda _size, b=batch: b)
            tree.commit(pending)
    finally:
        store.close()
    return notes


def read_and_hash(path: Path, start: int, end: int) -> None:
    store = SqliteStorage(path, read_only=True)
    try:
        for lo in range(start, end, PAGE):
            for record in store.entries(lo, min(lo + PAGE, end)):
                leaf_hash(record.data)
    finally:
        store.close()


def check(path: Path, *, full: bool) -> None:
    store = SqliteStorage(path, read_only=True)
    try:
        report = check_store(store, [SIGNER.verifier()], origin=ORIGIN, full=full)
    finally:
        store.close()
    assert report.full == full, report


def run(*, short: bool) -> list[Row]:
    n = 4_000 if short else 1_000_000
    tables = 100 if short else TABLES
    new = 1_000 if short else 10_000
    rounds = 1 if short else 3
    with tempfile.TemporaryDirectory(prefix="rng-bench-storecheck-") as tmp:
        path = Path(tmp) / "log.sqlite3"
        notes = build(path, n, tables=tables)
        store = SqliteStorage(path)
        store.set_meta(VERIFIED_CHECKPOINT_KEY, notes[n - new])
        # as a start-up check records them (without it the check runs in full once)
        store.set_meta(CHECKPOINT_SIGNERS_KEY, f"{ORIGIN}+{SIGNER.key_id:08x}\n".encode())
        store.close()
        best: dict[str, float] = {}
        for _ in range(rounds):  # interleaved; best of each (shared, noisy machine)
            runs: tuple[tuple[str, Callable[[], None]], ...] = (
                ("baseline", lambda: read_and_hash(path, 0, n)),
                ("full", lambda: check(path, full=True)),
                ("new baseline", lambda: read_and_hash(path, n - new, n)),
                ("incremental", lambda: check(path, full=False)),
            )
            for name, fn in runs:
                t0 = time.perf_counter()
                fn()
                best[name] = min(best.get(name, float("inf")), time.perf_counter() - t0)
    return [
        Row(f"check-store (full), {n:,} entries, {tables:,} tables, {n // GROUP} checkpoints",
            best["full"], "s", f"read+hash {n:,} entries", best["baseline"]),
        Row(f"start-up check, {new:,} new of {n:,} entries, {tables:,} tables",
            best["incremental"], "s", f"read+hash {new:,} entries", best["new baseline"]),
    ]  # fmt: skip
