"""The writer's table map (issue 40), with in-memory stores: every new entry is format 3 and
carries the root of the map of table heads after itself (checked against the reference root
from the definition, ``map_root``, over heads taken from the decoded entries); the store's
rows follow each append; a group that is not stored leaves the map as it was; replicas keep
one map; the start refuses rows that are not the signed map, naming the table; and a round
whose newest entries were moved out of its lookup is refused before anything is drawn.
"""

from __future__ import annotations

import dataclasses
import threading

import pytest

from rng_service.clock import FakeClock
from rng_service.drbg import DeterministicGenerator
from rng_service.errors import IntegrityError, StorageUnavailable
from rng_service.log.entry import LogEntry
from rng_service.log.table_map import MapHead, map_root
from rng_service.storage.base import LogStorage, MapRow
from rng_service.storage.memory import MemoryStorage
from rng_service.writer import sequencer as sequencer_module
from rng_service.writer.appender import Appender, AppendResult
from rng_service.writer.heads import TableMapMismatch
from rng_service.writer.storecheck import StoreCheckFailed, check_store
from rng_service.writer.tree import MerkleTree
from tests.unit.writer.test_appender import SIGNER, Harness
from tests.unit.writer.test_appender_rounds import spin

ORIGIN = "unit.example/log"


class Integrity:
    """A recording observer of the writer's integrity errors (the metric's labels)."""

    def __init__(self) -> None:
        self.errors: list[tuple[str, str]] = []

    def integrity_error(self, method: str, check: str) -> None:
        self.errors.append((method, check))

    def committed(self, **_: object) -> None:
        pass

    def append_failed(self) -> None:
        pass


def writer(storage: LogStorage, seed: int = 1, observer: object = None) -> Appender:
    appender = Appender(
        storage=storage,
        tree=MerkleTree.load(storage),
        generator=DeterministicGenerator(entropy_input=bytes([seed]) * 32, nonce=b"\x02" * 16),
        signer=SIGNER,
        origin=ORIGIN,
        clock=FakeClock(),
        publish_interval_seconds=10,
        observer=observer,  # type: ignore[arg-type]
    )
    appender.start()
    return appender


def draw(
    appender: Appender, rid: str, round_id: str, table: str = "T", client: str = "c"
) -> LogEntry:
    done: AppendResult = appender.submit(spin(rid, round_id, table=table, client=client)).result(30)
    return LogEntry.decode(done.receipt.entry)


def reference_roots(storage: LogStorage) -> list[tuple[bytes | None, bytes]]:
    """(signed table_map, the reference root of the heads of entries [0, i]) of each entry."""
    heads: dict[tuple[str, str], MapHead] = {}
    out = []
    for record in storage.entries(0, storage.tree_size()):
        e = LogEntry.decode(record.data)
        assert e.table_seq is not None
        heads[(e.client, e.table_id)] = MapHead(e.client, e.table_id, e.index, e.table_seq)
        out.append((e.table_map, map_root(heads.values())))
    return out


def test_each_entry_carries_the_root_of_the_heads_after_it() -> None:
    storage = MemoryStorage()
    a = writer(storage)
    try:
        for i in range(12):
            e = draw(a, f"r{i}", f"R{i}", table=f"T{i % 3}", client=("c", "d")[i % 2])
            assert e.version == 3
    finally:
        a.stop(publish=False)
    roots = reference_roots(storage)
    assert len(roots) == 12
    assert all(signed == ref for signed, ref in roots)
    # The store's rows are the heads, upserted with each append.
    assert {(r.client_id, r.table_id): (r.head_index, r.head_seq) for r in storage.map_rows()} == {
        ("c", "T0"): (6, 2), ("d", "T1"): (7, 2), ("c", "T2"): (8, 2),
        ("d", "T0"): (9, 2), ("c", "T1"): (10, 2), ("d", "T2"): (11, 2),
    }  # fmt: skip


def test_a_group_that_is_not_stored_leaves_the_map_as_it_was() -> None:
    h = Harness()
    h.run_group([spin("a", "R1"), spin("b", "R2", table="U")])
    h.storage.fail_next_append("test: disk full")
    failed = h.run_group([spin("c", "R3", table="V")])[0]
    with pytest.raises(StorageUnavailable):
        failed.result()
    h.run_group([spin("d", "R4", table="W")])
    assert [signed == ref for signed, ref in reference_roots(h.storage)] == [True] * 3
    assert [r.table_id for r in h.storage.map_rows()] == ["T", "U", "W"]


def test_replicas_sharing_a_store_keep_one_map() -> None:
    storage = MemoryStorage()
    replicas = [writer(storage, seed) for seed in (1, 2)]
    try:

        def client(k: int) -> None:
            for i in range(15):
                draw(replicas[k], f"{k}-{i}", f"R{k}-{i}", table=f"T{i % 4}")

        threads = [threading.Thread(target=client, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for r in replicas:
            r.stop(publish=False)
    roots = reference_roots(storage)
    assert len(roots) == 30
    assert all(signed == ref for signed, ref in roots)


def _edited_row(storage: MemoryStorage, table: str, **change: int) -> None:
    row = storage.map[("c", table)]
    storage.map[("c", table)] = dataclasses.replace(row, **change)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda s: _edited_row(s, "T1", head_index=1, head_seq=1),
         "the table map's row of table 'T1' of client 'c' says its head is entry 1 (seq 1), "
         "but the signed entries say entry 4 (seq 2)"),
        (lambda s: s.map.pop(("c", "T0")),
         "the table map's row of table 'T0' of client 'c' says its head is no row, but the "
         "signed entries say entry 3 (seq 2)"),
        (lambda s: s.map.__setitem__(("c", "T9"), MapRow("c", "T9", 2, 1)),
         "the table map's row of table 'T9' of client 'c' says its head is entry 2 (seq 1), "
         "but the signed entries say no entry"),
        (lambda s: _edited_row(s, "T1", head_index=99),
         "the table map's row of table 'T1' of client 'c' names entry 99 as its head, but the "
         "log holds 6 entries"),
    ],
)  # fmt: skip
def test_a_start_on_edited_map_rows_is_refused_naming_the_table(edit: object, says: str) -> None:
    storage = MemoryStorage()
    a = writer(storage)
    for i in range(6):
        draw(a, f"r{i}", f"R{i}", table=f"T{i % 3}")
    a.stop(publish=False)
    edit(storage)  # type: ignore[operator]
    with pytest.raises(TableMapMismatch) as info:
        writer(storage)
    assert says in str(info.value)
    assert storage.tree_size() == 6


def _moved(storage: MemoryStorage, index: int, **change: str) -> None:
    """The entry's columns changed as a database editor would (its signed bytes kept)."""
    with storage._lock:
        record = storage._entries[index]
        storage._entries[index] = dataclasses.replace(record, **change)
        moved = storage._entries[index]
        storage._by_round[(record.client_id, record.table_id, record.round_id)].remove(index)
        storage._by_round.setdefault((moved.client_id, moved.table_id, moved.round_id), []).append(
            index
        )
        del storage._by_slot[
            (record.client_id, record.table_id, record.round_id, record.slot or "")
        ]
        storage._by_slot[(moved.client_id, moved.table_id, moved.round_id, moved.slot or "")] = (
            index
        )


@pytest.mark.parametrize("restart", [False, True])
def test_the_newest_round_moved_out_of_its_lookup_is_refused(restart: bool) -> None:
    storage = MemoryStorage()
    seen = Integrity()
    a = writer(storage, observer=seen)
    try:
        draw(a, "a", "R1")
        draw(a, "b", "R2")  # entry 1: the tail of T's chain, round R2
        draw(a, "x", "X1", table="U")  # entry 2 (the newest entry is not the edited one)
        _moved(storage, 1, round_id="hidden")
        if restart:
            a.stop(publish=False)
            a = writer(storage, observer=seen)
        with pytest.raises(IntegrityError) as info:
            draw(a, "b-again", "R2")
        assert storage.tree_size() == 3  # nothing drawn, nothing logged
        if restart:  # the table's newest entry fails its check: the table stops until fixed
            with pytest.raises(IntegrityError, match="this table's next entry"):
                draw(a, "c", "R3")
            _moved(storage, 1, round_id="R2")  # put back (the operator investigates)
        nxt = draw(a, "c", "R3")  # another round: after the committed head
    finally:
        a.stop(publish=False)
    if restart:  # the tail is read back from the store, and the row's columns are checked
        assert "entry 1: the store's lookup columns say round_id 'hidden'" in str(info.value)
        assert seen.errors == [("sequencer", "columns")] * 2
    else:
        assert (
            "round 'R2' of table 'T' of client 'c': the table's committed chain ends with "
            "entries [1] of this round, but the store's round lookup does not return entry 1"
        ) in str(info.value)
        assert seen.errors == [("sequencer", "chain")]
    assert (nxt.index, nxt.table_seq, nxt.table_prev) == (3, 3, 1)


def test_a_round_edited_out_behind_later_rounds_is_not_seen_by_the_writer() -> None:
    """What the writer cannot catch (docs/security.md): a round moved out of its lookup once
    later rounds follow it on the table. The re-draw is logged; its signed chain holds both
    spins of the round (the live dispute and rng-audit verify walk the whole chain)."""
    storage = MemoryStorage()
    a = writer(storage)
    try:
        draw(a, "a", "R1")
        draw(a, "b", "R2")
        _moved(storage, 0, round_id="hidden")
        again = draw(a, "a-again", "R1")
    finally:
        a.stop(publish=False)
    assert (again.index, again.table_seq, again.table_prev) == (2, 3, 1)


def test_check_store_names_the_first_wrong_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that committed a wrong root (its own head left out of entry 3's root): the
    full store check recomputes every root from the entries and names entry 3."""
    storage = MemoryStorage()
    a = writer(storage)
    real_set = sequencer_module.TableMap.set
    calls = {"n": 0}

    def skip_fourth(self: object, *args: object) -> None:
        calls["n"] += 1
        if calls["n"] != 4:
            real_set(self, *args)  # type: ignore[arg-type]

    try:
        for i in range(3):
            draw(a, f"r{i}", f"R{i}", table=f"T{i}")
        monkeypatch.setattr(sequencer_module.TableMap, "set", skip_fourth)
        calls["n"] = 3
        draw(a, "r3", "R3", table="T3")
        monkeypatch.undo()
        draw(a, "r4", "R4", table="T0")
    finally:
        a.stop()
    with pytest.raises(StoreCheckFailed) as info:
        check_store(storage, [SIGNER.verifier()], origin=ORIGIN, full=True)
    assert info.value.index == 3
    assert "entry 3's signed table_map is" in str(info.value)
    assert "the log committed a wrong map root at entry 3" in str(info.value)


def test_check_store_counts_the_roots_and_compares_the_rows() -> None:
    storage = MemoryStorage()
    a = writer(storage)
    try:
        for i in range(9):
            draw(a, f"r{i}", f"R{i}", table=f"T{i % 4}")
    finally:
        a.stop()
    report = check_store(storage, [SIGNER.verifier()], origin=ORIGIN, full=True)
    assert (report.map_roots, report.tables) == (9, 4)
    _edited_row(storage, "T2", head_index=2, head_seq=1)
    with pytest.raises(StoreCheckFailed, match="the table map's row of table 'T2' of client 'c'"):
        check_store(storage, [SIGNER.verifier()], origin=ORIGIN, full=True)
