"""rng_service.writer.columns: a stored row against its signed bytes, an index range against
deleted rows, a table's chain against breaks. Every check is tried with the one change that
must trip it and the untouched rows that must pass."""

from __future__ import annotations

import dataclasses
import random

import pytest

from rng_service.log.entry import GeneratorRef, LogEntry, format_time
from rng_service.log.merkle import leaf_hash
from rng_service.storage.base import EntryRecord
from rng_service.writer.columns import (
    CHECKS,
    LookupIntegrityError,
    check_chain,
    check_nodes,
    check_range,
    check_record,
)

T0 = 1_767_225_600_123_456_789


def row(i: int, *, table: str = "T1", seq: int | None = None, prev: int | None = -1,
        version: int = 2) -> EntryRecord:  # fmt: skip
    """Entry ``i`` of client c's chain of ``table`` (seq i + 1 after entry i - 1 unless
    given), and the row the sequencer stores for it."""
    seq = i + 1 if seq is None else seq
    prev = (None if seq == 1 else i - 1) if prev == -1 else prev
    chain = {"slot": "spin", "table_seq": seq, "table_prev": prev} if version == 2 else {}
    ts = T0 + i * 1_000_003
    data = LogEntry(
        index=i, timestamp_ns=ts, kind="roulette_spin", params={"wheel": "double_zero"},
        outcome={"n": i}, client="c", table_id=table, round_id=f"R{i}", session_id="S",
        request_id=f"q{i}", generator=GeneratorRef("g", 0, False), version=version, **chain,
    ).encode()  # fmt: skip
    return EntryRecord(
        index=i, data=data, leaf_hash=leaf_hash(data), client_id="c", request_id=f"q{i}",
        request_digest=b"\0" * 32, kind="roulette_spin", table_id=table, round_id=f"R{i}",
        session_id="S", timestamp_ns=ts, commit_size=i + 1,
        slot="spin" if version == 2 else None, table_seq=seq if version == 2 else None,
    )  # fmt: skip


def failure(fn: object, *args: object, **kwargs: object) -> LookupIntegrityError:
    with pytest.raises(LookupIntegrityError) as info:
        fn(*args, **kwargs)  # type: ignore[operator]
    return info.value


def test_untouched_rows_of_both_formats_pass() -> None:
    for i in range(5):
        signed = check_record(row(i))
        assert (signed.index, signed.table_seq, signed.table_prev) == (
            i, i + 1, None if i == 0 else i - 1
        )  # fmt: skip
    assert check_record(row(3, version=1)).slot is None


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("index", 4), ("client_id", "d"), ("request_id", "q9"), ("kind", "dice_roll"),
        ("table_id", "T6"), ("round_id", "R999"), ("session_id", ""), ("slot", "bonus"),
        ("table_seq", 9), ("timestamp_ns", T0 + 3 * 1_000_003 + 1_000),
    ],
)  # fmt: skip
def test_each_lookup_column_is_held_to_the_signed_bytes(column: str, value: object) -> None:
    changed = dataclasses.replace(row(3), **{column: value})
    e = failure(check_record, changed)
    assert e.check == "columns"
    assert e.index == changed.index
    assert f"the store's lookup columns say {column} {value!r}" in str(e)


def test_the_time_column_counts_to_the_microsecond_the_entry_signs() -> None:
    # nanoseconds below the entry's microseconds are not in the signed bytes
    check_record(dataclasses.replace(row(3), timestamp_ns=row(3).timestamp_ns // 1000 * 1000))
    e = failure(check_record, dataclasses.replace(row(3), timestamp_ns=row(3).timestamp_ns - 1000))
    assert "timestamp_ns" in str(e)


def test_a_format_1_row_with_format_2_columns_is_refused() -> None:
    e = failure(check_record, dataclasses.replace(row(3, version=1), slot="spin", table_seq=4))
    assert "slot 'spin', table_seq 4" in str(e)
    assert "slot None, table_seq None" in str(e)


def test_changed_bytes_are_a_leaf_hash_failure_and_non_entries_are_named() -> None:
    r = row(2)
    e = failure(check_record, dataclasses.replace(r, data=r.data.replace(b'"n":2', b'"n":3')))
    assert (e.check, e.index) == ("leaf_hash", 2)
    junk = b"not json"
    e = failure(check_record, dataclasses.replace(r, data=junk, leaf_hash=leaf_hash(junk)))
    assert e.check == "entry"
    assert "not a log entry" in str(e)


def test_time_text_equals_format_time() -> None:
    from rng_service.writer.columns import _time_text

    rng = random.Random(19)
    stamps = [0, 999, 10**9 - 1, 10**9, T0, T0 + 1]
    stamps += [rng.randrange(0, 2**62) for _ in range(2000)]
    stamps += [T0 + rng.randrange(0, 10**9) for _ in range(200)]  # same second, reused
    for ts in stamps:
        assert _time_text(ts) == format_time(ts)


def test_a_range_holds_every_index() -> None:
    rows = [row(i) for i in range(6)]
    check_range(rows, 0, 6)
    check_range(rows[2:4], 2, 4)
    e = failure(check_range, rows[:3] + rows[4:], 0, 6)
    assert (e.check, e.index) == ("gap", 3)
    assert "entry 3 is missing from the log store (the next stored entry is 4)" in str(e)
    e = failure(check_range, rows[:5], 0, 6)
    assert (e.check, e.index) == ("gap", 5)


def chain(rows: list[EntryRecord], first: int = 1) -> None:
    check_chain([(r, check_record(r)) for r in rows], client_id="c", table_id="T1", first_seq=first)


def test_a_chain_follows_on_without_a_break() -> None:
    rows = [row(i) for i in range(6)]
    chain(rows)
    chain(rows[2:], first=3)
    chain([])
    e = failure(chain, rows[:2] + rows[3:])  # seq 3 (entry 2) missing
    assert (e.check, e.index) == ("chain", 2)
    assert "after seq 2 (entry 1) the store gives seq 4 (entry 3, whose signed predecessor is " in (
        str(e)
    )
    e = failure(chain, rows[1:])  # the lookup from seq 1 starts at seq 2
    assert "the chain's lookup from seq 1 starts at seq 2" in str(e)
    # right number, another predecessor: two entries claim one place
    forked = [row(0), row(1), row(2, prev=0)]
    assert failure(chain, forked).check == "chain"
    e = failure(chain, [row(0), row(1, table="T2", seq=2)])
    assert "its signed bytes are of table 'T2'" in str(e)


def test_a_row_is_held_to_the_tree_s_leaf_node_of_its_index() -> None:
    """Bytes changed together with their leaf-hash column pass check_record; check_nodes
    compares the column with the tree's level-0 node (here the hash of the bytes as they
    were signed, computed independently with hashlib)."""
    import hashlib

    rows = [row(i) for i in range(3)]
    nodes = [hashlib.sha256(b"\x00" + r.data).digest() for r in rows]
    check_nodes(rows, nodes)
    changed = rows[1].data.replace(b'"n":1', b'"n":134')
    assert changed != rows[1].data
    edited = dataclasses.replace(rows[1], data=changed, leaf_hash=leaf_hash(changed))
    check_record(edited)  # the row check alone passes
    e = failure(check_nodes, [rows[0], edited, rows[2]], nodes)
    assert (e.check, e.index) == ("node", 1)
    assert "the tree's leaf node (level 0, index 1)" in str(e)
    assert "node" in CHECKS
    with pytest.raises(ValueError, match="2 records but 3 leaf nodes"):
        check_nodes(rows[:2], nodes)
