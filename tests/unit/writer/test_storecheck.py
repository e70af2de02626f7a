"""The store's own check on a real SQLite store, tampered with through sqlite3 as an operator
with database access would.

The logs here are built from entry bytes written out by hand (format 2 entries whose fields
match the row's lookup columns; only those fields matter to the check), and their nodes and
checkpoint roots come from the reference definitions of RFC 6962 section 2.1
(``merkle.root_from_leaf_hashes``), not from the tree code the check uses.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.log import merkle
from rng_service.log.note import Checkpoint, Ed25519NoteSigner, NoteVerifier, sign_note
from rng_service.log.table_map import MapHead, map_root
from rng_service.storage.base import (
    AppendBatch,
    CheckpointRecord,
    EntryRecord,
    LogStorage,
    MapRow,
    NodeRecord,
)
from rng_service.storage.sqlite import SqliteStorage
from rng_service.writer.storecheck import (
    CHECKPOINT_SIGNERS_KEY,
    VERIFIED_CHECKPOINT_KEY,
    StoreCheckFailed,
    StoreCheckReport,
    UnconfiguredSigner,
    check_store,
    record_verified,
)

ORIGIN = "unit.example/log"
SIGNER = Ed25519NoteSigner(ORIGIN, Ed25519PrivateKey.from_private_bytes(b"\x11" * 32))
OLD = Ed25519NoteSigner(ORIGIN, Ed25519PrivateKey.from_private_bytes(b"\x22" * 32))
STRANGER = Ed25519NoteSigner(ORIGIN, Ed25519PrivateKey.from_private_bytes(b"\x33" * 32))
N = 40
GROUP = 3  # entries per append
EVERY = 2  # a checkpoint every second group: sizes 6, 12, ..., 36 and the last one, 40


def data(i: int, outcome: str = "") -> bytes:
    """Entry ``i``, canonical JSON of format 2 written out (keys sorted), matching the columns
    :func:`fill` stores: client c, request r<i>, kind opaque, table T, round R, slot s<i>,
    table_seq i + 1 (the chain of (c, T)), time ``i`` ns after the epoch."""
    prev = "null" if i == 0 else str(i - 1)
    return (
        '{"client":"c","generator":{"epoch":0,"instance":"00","lab_mode":false},'
        f'"index":{i},"kind":"opaque","outcome":{{"n":"{outcome or i}"}},"params":{{}},'
        f'"profile_sha256":"","request_id":"r{i}","round_id":"R","session_id":"",'
        f'"slot":"s{i}","table_id":"T","table_prev":{prev},"table_seq":{i + 1},'
        '"time":"1970-01-01T00:00:00.000000Z","v":2}'
    ).encode()


CHANGED_13 = data(13, outcome="changed")


def reference_nodes(leaves: list[bytes], old: int, new: int) -> list[NodeRecord]:
    """The complete-subtree nodes that appending leaves [old, new) completes (reference MTH)."""
    out = []
    for level in range(new.bit_length()):
        for index in range(old >> level, new >> level):
            lo, hi = index << level, (index + 1) << level
            if hi <= new and hi > old:
                out.append(NodeRecord(level, index, merkle.root_from_leaf_hashes(leaves[lo:hi])))
    return out


def checkpoint(size: int, leaves: list[bytes], *, signer: Ed25519NoteSigner = SIGNER,
               origin: str = ORIGIN, ts: int = 0) -> CheckpointRecord:  # fmt: skip
    body = Checkpoint(origin, size, merkle.root_from_leaf_hashes(leaves[:size])).body()
    return CheckpointRecord(size, (1_767_225_600 + ts) * 10**9, sign_note(body, [signer]))


def build(path: Path, n: int = N) -> list[bytes]:
    """An SQLite log of ``n`` opaque entries (see :func:`fill`)."""
    store = SqliteStorage(path)
    try:
        return fill(store, n)
    finally:
        store.close()


def fill(store: LogStorage, n: int = N) -> list[bytes]:
    """Appends ``n`` opaque entries to an empty store; the first half's checkpoints are signed
    by OLD (a retired key), the others by SIGNER. Returns the leaf hashes."""
    leaves: list[bytes] = []
    for group, start in enumerate(range(0, n, GROUP), 1):
        end = min(start + GROUP, n)
        records = []
        for i in range(start, end):
            leaves.append(merkle.leaf_hash(data(i)))
            record = EntryRecord(
                index=i, data=data(i), leaf_hash=leaves[i], client_id="c", request_id=f"r{i}",
                request_digest=b"\0" * 32, kind="opaque", table_id="T", round_id="R",
                session_id="", timestamp_ns=i, commit_size=end, slot=f"s{i}", table_seq=i + 1,
            )  # fmt: skip
            records.append(record)
        cp = None
        if group % EVERY == 0 or end == n:
            signer = OLD if end <= n // 2 else SIGNER
            cp = checkpoint(end, leaves, signer=signer, ts=end)
        # The table map's row of the chain (c, T) moves with each append, as the writer's do.
        batch = AppendBatch(
            records, reference_nodes(leaves, start, end), cp, [MapRow("c", "T", end - 1, end)]
        )
        store.sequence(lambda _size, b=batch: b)
    return leaves


KEYS = [SIGNER.verifier(), OLD.verifier()]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "log.sqlite3"
    build(path)
    return path


def check(
    path: Path, *, full: bool = True, page_size: int = 7, keys: list[NoteVerifier] | None = None
) -> StoreCheckReport:
    store = SqliteStorage(path)
    try:
        return check_store(
            store, keys if keys is not None else KEYS, origin=ORIGIN, full=full,
            page_size=page_size,
        )  # fmt: skip
    finally:
        store.close()


def failure(
    path: Path, *, full: bool = True, keys: list[NoteVerifier] | None = None
) -> StoreCheckFailed:
    with pytest.raises(StoreCheckFailed) as info:
        check(path, full=full, keys=keys)
    return info.value


def sql(path: Path, statement: str, *params: object) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(statement, params)
    conn.close()


def test_an_untouched_store_passes_in_full_on_any_page_size(db: Path) -> None:
    for page in (1, 5, 7, 4096):
        report = check(db, page_size=page)
        assert report.tree_size == N
        assert report.entries == N
        assert report.full
        assert report.root == merkle.root_from_leaf_hashes(
            [merkle.leaf_hash(data(i)) for i in range(N)]
        )
    conn = sqlite3.connect(db)
    stored_nodes, stored_checkpoints = (
        conn.execute("SELECT count(*) FROM nodes").fetchone()[0],
        conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0],
    )
    conn.close()
    assert report.nodes == stored_nodes
    assert report.checkpoints == stored_checkpoints == 7
    assert report.newest is not None
    assert report.newest.size == N


def test_incremental_starts_from_the_recorded_checkpoint(db: Path) -> None:
    store = SqliteStorage(db)
    first = check_store(store, KEYS, origin=ORIGIN)
    assert first.full
    assert "no verified checkpoint" in first.reason
    assert record_verified(store, first)
    assert first.newest is not None
    assert store.get_meta(VERIFIED_CHECKPOINT_KEY) == first.newest.note
    assert not record_verified(store, first)  # unchanged
    again = check_store(store, KEYS, origin=ORIGIN)
    assert (again.start, again.entries, again.full) == (N, 0, False)
    assert again.root == first.root
    store.close()


def test_a_record_that_does_not_verify_falls_back_to_the_full_check(db: Path) -> None:
    store = SqliteStorage(db)
    record_verified(store, check_store(store, KEYS, origin=ORIGIN))
    forged = checkpoint(N, build(db.parent / "other.sqlite3"), signer=STRANGER)
    store.set_meta(VERIFIED_CHECKPOINT_KEY, forged.note)
    report = check_store(store, KEYS, origin=ORIGIN)
    assert report.full
    assert "no signature from a known key" in report.reason
    store.close()


# -- each edit is refused, naming what and where -------------------------------------------


def test_changed_entry_bytes(db: Path) -> None:
    sql(db, "UPDATE entries SET data = ? WHERE idx = 13", CHANGED_13)
    e = failure(db)
    assert e.index == 13
    assert "entry 13: its bytes hash to" in str(e)
    assert "were changed" in str(e)


@pytest.mark.parametrize(
    ("column", "value", "signed"),
    [
        ("table_id", "T6", "table_id 'T'"),
        ("round_id", "R999", "round_id 'R'"),
        ("client_id", "other", "client_id 'c'"),
        ("request_id", "r999", "request_id 'r13'"),
        ("session_id", "S1", "session_id ''"),
        ("kind", "roulette_spin", "kind 'opaque'"),
        ("slot", "spin", "slot 's13'"),
        ("table_seq", 99, "table_seq 14"),
        ("timestamp_ns", 5_000, "timestamp_ns '1970-01-01T00:00:00.000000Z'"),
    ],
)
def test_changed_lookup_column(db: Path, column: str, value: object, signed: str) -> None:
    """A row's lookup column rewritten, its bytes untouched: a lookup by that column would
    select it wrongly (or miss it), so the check names the row, the column and both values."""
    sql(db, f"UPDATE entries SET {column} = ? WHERE idx = 13", value)
    e = failure(db)
    assert e.index == 13
    assert f"entry 13: the store's lookup columns say {column} {value!r}" in str(e)
    assert f"but the entry's signed bytes say {signed}" in str(e)


def test_changed_lookup_columns_in_the_verified_part_need_the_full_check(db: Path) -> None:
    store = SqliteStorage(db)
    record_verified(store, check_store(store, KEYS, origin=ORIGIN))
    store.close()
    sql(db, "UPDATE entries SET table_id = 'T6', round_id = 'R999' WHERE idx = 13")
    assert check(db, full=False).entries == 0  # the incremental check reads past it
    e = failure(db)
    assert "table_id 'T6', round_id 'R999'" in str(e)
    assert "table_id 'T', round_id 'R'" in str(e)


def test_changed_entry_bytes_with_their_leaf_hash(db: Path) -> None:
    new = CHANGED_13
    sql(db, "UPDATE entries SET data = ?, leaf_hash = ? WHERE idx = 13", new, merkle.leaf_hash(new))
    e = failure(db)
    assert e.index == 13
    assert "entry 13's leaf node (level 0, index 13) is not the hash the entries give" in str(e)


def test_a_consistently_rehashed_tree_is_caught_by_the_signed_checkpoints(db: Path) -> None:
    """Entry 13 replaced with its leaf hash and every node above it recomputed: only the
    signatures over the old roots tell."""
    leaves = [merkle.leaf_hash(data(i)) for i in range(N)]
    new = CHANGED_13
    leaves[13] = merkle.leaf_hash(new)
    sql(db, "UPDATE entries SET data = ?, leaf_hash = ? WHERE idx = 13", new, leaves[13])
    for node in reference_nodes(leaves, 0, N):
        sql(db, "UPDATE nodes SET hash = ? WHERE level = ? AND idx = ?", node.hash, node.level,
            node.index)  # fmt: skip
    e = failure(db)
    assert e.checkpoint_size == 18
    assert e.index == 12
    assert "stored checkpoint of tree size 18 (published 2026-01-01T00:00:18Z) does not match" in (
        str(e)
    )
    assert "An entry in [12, 18) was changed" in str(e)


def test_changed_inner_node(db: Path) -> None:
    sql(db, "UPDATE nodes SET hash = ? WHERE level = 2 AND idx = 5", b"\x07" * 32)
    e = failure(db)
    assert e.index == 20
    assert "Merkle node (level 2, index 5), over entries [20, 23], is not the hash" in str(e)


def test_deleted_middle_row(db: Path) -> None:
    sql(db, "DELETE FROM entries WHERE idx = 17")
    e = failure(db)
    assert e.index == 17
    assert "entry 17 is missing from the store (the next stored entry is 18" in str(e)
    assert "a row was deleted" in str(e)


def test_deleted_middle_node(db: Path) -> None:
    sql(db, "DELETE FROM nodes WHERE level = 0 AND idx = 17")
    e = failure(db)
    assert "entry 17's leaf node (level 0, index 17) is missing" in str(e)


def test_corrupted_checkpoint_signature(db: Path) -> None:
    conn = sqlite3.connect(db)
    note: bytes = conn.execute("SELECT note FROM checkpoints WHERE size = 24").fetchone()[0]
    conn.close()
    body, sig = note.rsplit(b"\n\n", 1)
    name, b64 = sig.rsplit(b" ", 1)
    flipped = b64[:10] + (b"A" if b64[10:11] != b"A" else b"B") + b64[11:]
    sql(db, "UPDATE checkpoints SET note = ? WHERE size = 24", body + b"\n\n" + name + b" " +
        flipped)  # fmt: skip
    e = failure(db)
    assert e.checkpoint_size == 24
    assert "stored checkpoint of tree size 24" in str(e)
    assert "invalid signature" in str(e)


def test_checkpoint_signed_by_an_unconfigured_key(db: Path) -> None:
    leaves = [merkle.leaf_hash(data(i)) for i in range(N)]
    forged = checkpoint(30, leaves, signer=STRANGER)
    sql(db, "INSERT INTO checkpoints (size, timestamp_ns, note) VALUES (30, 1, ?)", forged.note)
    e = failure(db)
    assert e.checkpoint_size == 30
    assert "no signature from a known key" in str(e)
    assert "log.retired_keys" in str(e)


def test_retired_keys_are_needed_for_old_checkpoints(db: Path) -> None:
    e = failure(db, keys=[SIGNER.verifier()])
    assert e.checkpoint_size == 6


def test_checkpoint_of_another_origin(db: Path) -> None:
    leaves = [merkle.leaf_hash(data(i)) for i in range(N)]
    other = checkpoint(30, leaves, origin="other.example/log")
    sql(db, "INSERT INTO checkpoints (size, timestamp_ns, note) VALUES (30, 1, ?)", other.note)
    assert "is a checkpoint of log 'other.example/log', but log.origin is" in str(failure(db))


def test_checkpoint_row_whose_size_was_changed(db: Path) -> None:
    sql(db, "UPDATE checkpoints SET size = 13 WHERE size = 12")
    e = failure(db)
    assert "stored checkpoint of tree size 13" in str(e)
    assert "its signed note is for tree size 12" in str(e)


# -- truncation: what the store alone catches ---------------------------------------------


def truncate(db: Path, size: int, *, nodes: bool = True, checkpoints: bool = True) -> None:
    sql(db, "DELETE FROM entries WHERE idx >= ?", size)
    if nodes:
        sql(db, "DELETE FROM nodes WHERE ((idx + 1) << level) > ?", size)
    if checkpoints:
        sql(db, "DELETE FROM checkpoints WHERE size > ?", size)


def test_truncation_below_the_recorded_checkpoint_is_refused(db: Path) -> None:
    store = SqliteStorage(db)
    record_verified(store, check_store(store, KEYS, origin=ORIGIN))
    store.close()
    truncate(db, 24)
    e = failure(db, full=False)
    assert e.index == 24
    assert e.checkpoint_size == N
    assert (
        "the store's record of the last verified checkpoint is for tree size 40, beyond the "
        "stored tree of 24 entries: entries [24, 40) were deleted"
    ) in str(e)


def test_consistent_truncation_with_the_record_removed_passes_the_store_alone(db: Path) -> None:
    """The limit of a store checking itself: entries, nodes, checkpoints and the record all
    removed leave a valid shorter log. Only a checkpoint kept outside catches it."""
    store = SqliteStorage(db)
    record_verified(store, check_store(store, KEYS, origin=ORIGIN))
    store.close()
    truncate(db, 24)
    sql(db, "DELETE FROM meta WHERE key = ?", VERIFIED_CHECKPOINT_KEY)
    report = check(db, full=False)
    assert report.tree_size == 24


def test_truncation_that_left_the_checkpoints(db: Path) -> None:
    truncate(db, 24, checkpoints=False)
    e = failure(db)
    assert e.checkpoint_size == 30
    assert "stored checkpoint of tree size 30" in str(e)
    assert "is beyond the stored tree of 24 entries: entries [24, 30) were deleted" in str(e)


def test_truncation_that_left_the_nodes(db: Path) -> None:
    truncate(db, 24, nodes=False)
    e = failure(db)
    assert e.index == 24
    assert (
        "the store holds Merkle node (level 0, index 24), which covers entry 24, but only 24"
        in (str(e))
    )


def test_a_stored_note_that_is_not_a_signed_note(db: Path) -> None:
    sql(db, "UPDATE checkpoints SET note = CAST('garbage' AS BLOB) WHERE size = 30")
    e = failure(db)
    assert e.checkpoint_size == 30
    assert "stored checkpoint of tree size 30 (published 2026-01-01T00:00:30Z): note has no" in (
        str(e)
    )
    assert "log.retired_keys" not in str(e)


def test_the_keys_that_signed_stored_checkpoints_are_recorded_and_required(db: Path) -> None:
    """Issue 34, break 5: the incremental check reads no checkpoint below the recorded one, so
    the store records every key that signed a verified checkpoint; a check whose keys lack
    one of them is refused as a configuration fault (UnconfiguredSigner), and a store without
    the record is checked in full."""
    store = SqliteStorage(db)
    try:
        first = check_store(store, KEYS, origin=ORIGIN)
        assert record_verified(store, first)
        names = sorted(f"{ORIGIN}+{k.key_id:08x}" for k in KEYS)
        assert store.get_meta(CHECKPOINT_SIGNERS_KEY) == "".join(f"{n}\n" for n in names).encode()
        again = check_store(store, KEYS, origin=ORIGIN)
        assert not again.full
        assert again.signers == frozenset(names)  # kept, though no old checkpoint was read
        with pytest.raises(UnconfiguredSigner) as info:
            check_store(store, [SIGNER.verifier()], origin=ORIGIN)
        assert info.value.keys == (f"{ORIGIN}+{OLD.key_id:08x}",)
        assert "log.retired_keys" in str(info.value)
        store.set_meta(CHECKPOINT_SIGNERS_KEY, b"")  # an empty record requires nothing ...
        store.close()
        sql(db, "DELETE FROM meta WHERE key = ?", CHECKPOINT_SIGNERS_KEY)
        store = SqliteStorage(db)
        # ... and without one the check runs in full, which verifies every checkpoint
        report = check_store(store, KEYS, origin=ORIGIN)
        assert report.full
        assert "keys that signed the stored checkpoints are not recorded" in report.reason
        assert failure(db, full=False, keys=[SIGNER.verifier()]).checkpoint_size == 6
    finally:
        store.close()


def test_a_signed_chain_link_that_does_not_follow_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entry 13 signed with table_prev 11 (its chain's head before it is entry 12): a log the
    writer never writes; the full check names it (the table map's replay of the chain)."""
    real = data

    def broken(i: int, outcome: str = "") -> bytes:
        text = real(i, outcome)
        return text.replace(b'"table_prev":12,', b'"table_prev":11,') if i == 13 else text

    monkeypatch.setattr(sys.modules[__name__], "data", broken)
    store = SqliteStorage(tmp_path / "broken.sqlite3")
    try:
        fill(store)
        with pytest.raises(StoreCheckFailed) as info:
            check_store(store, KEYS, origin=ORIGIN, full=True)
    finally:
        store.close()
    assert info.value.index == 13
    assert (
        "entry 13 is seq 14 of table 'T' of client 'c' after entry 11, but the chain's head "
        "before it is seq 13 at entry 12"
    ) in str(info.value)


def test_format_3_going_back_to_format_2_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entries 20-29 of format 3 (each with the root of the map of the chain's head, from the
    definition), entry 30 of format 2 again: the full check names entry 30."""
    real = data

    def mixed(i: int, outcome: str = "") -> bytes:
        text = real(i, outcome)
        if 20 <= i < 30:
            root = map_root([MapHead("c", "T", i, i + 1)]).hex()
            text = text.replace(b'"table_prev"', b'"table_map":"%s","table_prev"' % root.encode())
            text = text.replace(b'"v":2}', b'"v":3}')
        return text

    monkeypatch.setattr(sys.modules[__name__], "data", mixed)
    store = SqliteStorage(tmp_path / "mixed.sqlite3")
    try:
        fill(store)
        with pytest.raises(StoreCheckFailed) as info:
            check_store(store, KEYS, origin=ORIGIN, full=True)
    finally:
        store.close()
    assert info.value.index == 30
    assert "entry 30 is of format 2, but format 3 started at entry 20" in str(info.value)
