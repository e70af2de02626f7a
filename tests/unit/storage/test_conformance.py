"""Storage conformance suite: every driver in ``drivers.DRIVERS`` against the LogStorage contract.

Covers every Protocol method, atomicity of ``append`` (a conflict or failure anywhere in a batch
stores nothing of it), persistence across reopen for persistent drivers, and concurrent readers
while a writer appends.
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest

from rng_service.errors import InvalidArgument, StorageUnavailable
from rng_service.storage import (
    AppendBatch,
    CheckpointRecord,
    CosignatureRecord,
    DuplicateRequest,
    LogStorage,
    NodeRecord,
    SequenceConflict,
)
from rng_service.storage.base import GroupState, MapRow, SlotRecord, TableHead
from tests.unit.storage.drivers import Driver, leaf_nodes, make_entry

T0 = 1_767_225_600_000_000_000


def _fill(store: LogStorage, n: int, batch: int = 4) -> None:
    for start in range(0, n, batch):
        entries = [make_entry(i) for i in range(start, min(n, start + batch))]
        store.append(entries, leaf_nodes(entries))


def _assert_unchanged(store: LogStorage, size: int, checkpoints: int = 0) -> None:
    assert store.tree_size() == size
    assert [e.index for e in store.entries(0, size + 10)] == list(range(size))
    assert store.nodes([(0, size), (0, size + 1), (1, size // 2)]) == {}
    assert len(store.checkpoints()) == checkpoints


def test_implements_protocol(store: LogStorage) -> None:
    assert isinstance(store, LogStorage)


def test_empty_store(store: LogStorage) -> None:
    assert store.tree_size() == 0
    assert store.entries(0, 10) == []
    assert store.entry_by_request("c", "r") is None
    assert store.entry_by_leaf_hash(b"\x00" * 32) is None
    assert store.find_entries() == []
    assert store.nodes([(0, 0), (3, 1)]) == {}
    assert store.nodes([]) == {}
    assert store.latest_checkpoint() is None
    assert store.checkpoints() == []
    assert store.get_meta("origin") is None


def test_entries_by_requests_is_one_lookup_for_many(store: LogStorage) -> None:
    batch = [make_entry(i) for i in range(500)]
    batch.append(make_entry(500, client_id="other", request_id="req-7"))
    store.append(batch, leaf_nodes(batch))
    wanted = [f"req-{i}" for i in range(0, 1000, 3)] + ["req-3", "missing"]
    found = store.entries_by_requests("table-client-1", wanted)
    assert found == {f"req-{i}": batch[i] for i in range(0, 500, 3)}
    assert store.entries_by_requests("other", ["req-7", "req-8"]) == {"req-7": batch[500]}
    assert store.entries_by_requests("nobody", wanted) == {}
    assert store.entries_by_requests("table-client-1", []) == {}


def test_round_slots_are_a_rounds_entries_by_index(store: LogStorage) -> None:
    batch = [
        make_entry(0, round_id="R1", slot="spin"),
        make_entry(1, round_id="R1", slot="fire_numbers"),
        make_entry(2, round_id="R2", slot="spin"),
        make_entry(3, table_id="T2", round_id="R1", slot="spin"),
        make_entry(4, client_id="other", round_id="R1", slot="spin"),
        make_entry(5, round_id="R1", slot="lab/req-5"),
    ]
    store.append(batch, leaf_nodes(batch))
    c = "table-client-1"

    def found(*rounds: tuple[str, str, str]) -> list[tuple[int, str | None]]:
        got = store.round_slots(list(rounds))
        assert all((r.client_id, r.table_id, r.round_id) in rounds for r in got)
        return [(r.index, r.slot) for r in got]

    assert found((c, "T1", "R1")) == [(0, "spin"), (1, "fire_numbers"), (5, "lab/req-5")]
    # By index whatever the order of the rounds; a repeated round once; each round's own
    # client, table and round id.
    assert found((c, "T1", "R2"), ("other", "T1", "R1"), (c, "T2", "R1"), (c, "T1", "R2")) == [
        (2, "spin"), (3, "spin"), (4, "spin"),
    ]  # fmt: skip
    assert found((c, "T1", "R3"), ("nobody", "T1", "R1"), (c, "T3", "R1")) == []
    assert found() == []
    assert store.round_slots([(c, "T1", "R2")]) == [SlotRecord(c, "T1", "R2", 2, "spin")]


def test_round_slots_of_many_rounds(store: LogStorage) -> None:
    batch = [make_entry(i, round_id=f"R{i // 2}", slot=f"s{i % 2}") for i in range(600)]
    store.append(batch, leaf_nodes(batch))
    rounds = [("table-client-1", "T1", f"R{i}") for i in range(0, 3000)]
    got = store.round_slots(rounds)
    assert [(r.index, r.round_id, r.slot) for r in got] == [
        (i, f"R{i // 2}", f"s{i % 2}") for i in range(600)
    ]


def test_table_heads_are_each_chains_last_entry(store: LogStorage) -> None:
    batch = [
        make_entry(0, table_id="T1", table_seq=1),
        make_entry(1, table_id="T2", table_seq=1),
        make_entry(2, table_id="T1", table_seq=2),
        make_entry(3, client_id="other", table_id="T1", table_seq=1),
    ]
    store.append(batch, leaf_nodes(batch))
    more = [make_entry(4, table_id="T1", table_seq=3)]
    store.append(more, leaf_nodes(more))
    c = "table-client-1"
    wanted = [(c, "T1"), (c, "T2"), ("other", "T1"), (c, "T3"), (c, "T1")]
    assert store.table_heads(wanted) == {
        (c, "T1"): TableHead(index=4, table_seq=3),
        (c, "T2"): TableHead(index=1, table_seq=1),
        ("other", "T1"): TableHead(index=3, table_seq=1),
    }
    assert store.table_heads([]) == {}
    assert store.table_heads([("other", "T2")]) == {}


def test_table_heads_many_tables(store: LogStorage) -> None:
    batch = [make_entry(i, table_id=f"T{i % 500}", table_seq=i // 500 + 1) for i in range(1500)]
    store.append(batch, leaf_nodes(batch))
    heads = store.table_heads([("table-client-1", f"T{t}") for t in range(600)])
    assert heads == {
        ("table-client-1", f"T{t}"): TableHead(index=1000 + t, table_seq=3) for t in range(500)
    }


def test_group_state_is_the_three_lookups_in_one(store: LogStorage) -> None:
    batch = [
        make_entry(i, table_id=f"T{i % 3}", round_id=f"R{i % 5}", slot=f"s{i}",
                   table_seq=i // 3 + 1)
        for i in range(30)
    ]  # fmt: skip
    batch.append(make_entry(30, client_id="other", request_id="req-2", slot="x", table_seq=1))
    store.append(batch, leaf_nodes(batch))
    c = "table-client-1"
    requests = [(c, f"req-{i}") for i in range(0, 40, 4)] + [("other", "req-2"), (c, "nope")]
    rounds = [(c, f"T{t}", f"R{r}") for t in range(4) for r in range(6)]
    tables = [(c, f"T{t}") for t in range(4)] + [("other", "T1"), ("nobody", "T0")]
    state = store.group_state(requests, rounds, tables)
    assert state.logged == {
        **{
            (c, rid): e
            for rid, e in store.entries_by_requests(c, [r for x, r in requests if x == c]).items()
        },
        ("other", "req-2"): batch[30],
    }
    assert len(state.logged) == 9
    assert state.slots == store.round_slots(rounds)
    assert state.heads == store.table_heads(tables)
    assert len(state.slots) == 30
    assert state.heads[(c, "T2")] == TableHead(index=29, table_seq=10)
    assert state.heads[("other", "T1")] == TableHead(index=30, table_seq=1)
    assert ("nobody", "T0") not in state.heads
    assert store.group_state([], [], []) == GroupState({}, [], {})
    assert store.group_state([], rounds, []).heads == {}
    assert store.group_state([], [], tables).slots == []
    # More keys than one statement of the SQL drivers binds: the same answers.
    many = store.group_state(
        requests + [(c, f"x{i}") for i in range(900)],
        rounds + [(c, "T0", f"X{i}") for i in range(900)],
        tables + [(c, f"Y{i}") for i in range(900)],
    )
    assert many == state


@pytest.mark.parametrize(
    "clash",
    [
        {"round_id": "R0", "slot": "spin"},  # a stored entry's slot
        {"table_id": "T1", "table_seq": 1},  # a stored entry's table sequence number
    ],
)
def test_a_stored_slot_or_table_seq_is_refused(store: LogStorage, clash: dict[str, object]) -> None:
    first = [make_entry(0, round_id="R0", slot="spin", table_seq=1)]
    store.append(first, leaf_nodes(first))
    batch = [make_entry(1), make_entry(2, **clash)]  # type: ignore[arg-type]
    with pytest.raises(SequenceConflict):
        store.append(batch, leaf_nodes(batch))
    _assert_unchanged(store, 1)
    # Another client, table or round has slots and chains of its own.
    ok = [
        make_entry(1, client_id="other", round_id="R0", slot="spin", table_seq=1),
        make_entry(2, round_id="R1", slot="spin", table_seq=2),
        make_entry(3, table_id="T2", round_id="R0", slot="spin", table_seq=1),
    ]
    store.append(ok, leaf_nodes(ok))
    assert store.tree_size() == 4


@pytest.mark.parametrize(
    "second",
    [{"round_id": "R0", "slot": "spin"}, {"table_seq": 1}, {"slot": ""}],
    ids=["slot", "table_seq", "empty-slot-ok"],
)
def test_a_batch_repeating_a_slot_or_table_seq_stores_nothing(
    store: LogStorage, second: dict[str, object]
) -> None:
    batch = [make_entry(0, round_id="R0", slot="spin", table_seq=1), make_entry(1, **second)]  # type: ignore[arg-type]
    if second.get("slot") == "":
        store.append(batch, leaf_nodes(batch))  # "" is a slot name like any other
        assert store.tree_size() == 2
        return
    with pytest.raises(SequenceConflict, match="repeats"):
        store.append(batch, leaf_nodes(batch))
    _assert_unchanged(store, 0)


def test_an_entry_without_slot_or_table_seq_is_refused(store: LogStorage) -> None:
    for missing in ({"slot": None}, {"table_seq": None}):
        entry = dataclasses.replace(make_entry(0), **missing)  # type: ignore[arg-type]
        with pytest.raises(SequenceConflict, match="no slot or table_seq"):
            store.append([entry], leaf_nodes([entry]))
        _assert_unchanged(store, 0)


def test_append_and_read_back(store: LogStorage) -> None:
    first = [make_entry(0), make_entry(1)]
    store.append(first, [*leaf_nodes(first), NodeRecord(1, 0, b"n" * 32)])
    second = [make_entry(2)]
    store.append(second, leaf_nodes(second))
    assert store.tree_size() == 3
    assert store.entries(0, 3) == [*first, *second]
    assert store.entries(1, 2) == [first[1]]
    assert store.entries(2, 100) == second
    assert store.entries(3, 5) == []
    assert store.entries(1, 1) == []
    assert store.entry_by_request("table-client-1", "req-1") == first[1]
    assert store.entry_by_request("other-client", "req-1") is None
    assert store.entry_by_leaf_hash(second[0].leaf_hash) == second[0]
    assert store.nodes([(0, 0), (0, 2), (1, 0), (1, 1), (0, 2)]) == {
        (0, 0): first[0].leaf_hash,
        (0, 2): second[0].leaf_hash,
        (1, 0): b"n" * 32,
    }


def test_nodes_many_coordinates(store: LogStorage) -> None:
    nodes = [
        NodeRecord(level, i, bytes([level, i % 256]) * 16) for level in range(3) for i in range(700)
    ]
    store.append([], nodes)
    wanted = [(n.level, n.index) for n in nodes] + [(5, 0)]
    assert store.nodes(iter(wanted)) == {(n.level, n.index): n.hash for n in nodes}


def test_entry_by_leaf_hash_returns_first(store: LogStorage) -> None:
    entries = [make_entry(i, data=b"same bytes") for i in range(3)]
    store.append(entries, [])
    found = store.entry_by_leaf_hash(entries[0].leaf_hash)
    assert found is not None
    assert found.index == 0


def test_invalid_arguments(store: LogStorage) -> None:
    with pytest.raises(InvalidArgument, match="range"):
        store.entries(-1, 2)
    with pytest.raises(InvalidArgument, match="range"):
        store.entries(5, 2)
    with pytest.raises(InvalidArgument, match="limit"):
        store.find_entries(limit=0)
    with pytest.raises(InvalidArgument, match="reserved"):
        store.set_meta("schema_version", b"99")


def test_find_entries(store: LogStorage) -> None:
    entries = [
        make_entry(0, table_id="T1", round_id="R1", session_id="S1", timestamp_ns=T0 + 10),
        make_entry(1, table_id="T2", round_id="R1", session_id="S2", timestamp_ns=T0 + 20),
        make_entry(2, table_id="T1", round_id="R2", session_id="S1", timestamp_ns=T0 + 30),
        make_entry(3, table_id="T1", round_id="R2", session_id="S2", timestamp_ns=T0 + 40),
    ]
    store.append(entries, [])

    def idx(
        *,
        table_id: str | None = None,
        round_id: str | None = None,
        session_id: str | None = None,
        since_ns: int | None = None,
        until_ns: int | None = None,
        limit: int = 1000,
    ) -> list[int]:
        found = store.find_entries(
            table_id=table_id,
            round_id=round_id,
            session_id=session_id,
            since_ns=since_ns,
            until_ns=until_ns,
            limit=limit,
        )
        return [e.index for e in found]

    assert idx() == [0, 1, 2, 3]
    assert idx(table_id="T1") == [0, 2, 3]
    assert idx(round_id="R1") == [0, 1]
    assert idx(session_id="S2") == [1, 3]
    assert idx(table_id="T1", round_id="R2", session_id="S2") == [3]
    assert idx(table_id="T3") == []
    assert idx(since_ns=T0 + 20) == [1, 2, 3]
    assert idx(until_ns=T0 + 30) == [0, 1]
    assert idx(since_ns=T0 + 20, until_ns=T0 + 40) == [1, 2]
    assert idx(table_id="T1", limit=2) == [0, 2]
    assert store.find_entries(round_id="R2")[0] == entries[2]


def test_find_entries_by_client_and_request_id(store: LogStorage) -> None:
    entries = [
        make_entry(0, client_id="a", request_id="q1", table_id="T1", round_id="R1"),
        make_entry(1, client_id="b", request_id="q1", table_id="T1", round_id="R1"),
        make_entry(2, client_id="a", request_id="q2", table_id="T1", round_id="R2"),
        make_entry(3, client_id="a", request_id="q3", table_id="T2", round_id="R1"),
    ]
    store.append(entries, [])

    def idx(**filters: str) -> list[int]:
        return [e.index for e in store.find_entries(**filters)]  # type: ignore[arg-type]

    assert idx(client_id="a") == [0, 2, 3]
    assert idx(client_id="b") == [1]
    assert idx(request_id="q1") == [0, 1]
    assert idx(client_id="a", request_id="q1") == [0]
    assert idx(client_id="a", table_id="T1", round_id="R1") == [0]
    assert idx(client_id="a", table_id="T1") == [0, 2]
    assert idx(client_id="c") == []


def test_table_history_is_a_chain_by_table_seq(store: LogStorage) -> None:
    """Two clients share table id T1 (their chains are apart), another table interleaves, and
    the chain's rows come back by table_seq whatever their index order."""
    entries = [
        make_entry(0, client_id="a", table_id="T1", table_seq=1),
        make_entry(1, client_id="a", table_id="T2", table_seq=1),
        make_entry(2, client_id="b", table_id="T1", table_seq=1),
        make_entry(3, client_id="a", table_id="T1", table_seq=2),
        make_entry(4, client_id="a", table_id="T1", table_seq=4),
        make_entry(5, client_id="a", table_id="T1", table_seq=3),
        make_entry(6, client_id="a", table_id="T2", table_seq=2),
    ]
    store.append(entries, [])

    def seqs(client: str, table: str, **kw: int | None) -> list[tuple[int | None, int]]:
        return [(e.table_seq, e.index) for e in store.table_history(client, table, **kw)]

    assert seqs("a", "T1") == [(1, 0), (2, 3), (3, 5), (4, 4)]
    assert seqs("a", "T1", first_seq=2, last_seq=3) == [(2, 3), (3, 5)]
    assert seqs("a", "T1", first_seq=3) == [(3, 5), (4, 4)]
    assert seqs("a", "T1", limit=2) == [(1, 0), (2, 3)]
    assert seqs("a", "T1", first_seq=5) == []
    assert seqs("b", "T1") == [(1, 2)]
    assert seqs("a", "T2") == [(1, 1), (2, 6)]
    assert seqs("c", "T1") == []
    assert store.table_history("a", "T1", first_seq=2, last_seq=2)[0] == entries[3]
    with pytest.raises(InvalidArgument, match="limit"):
        store.table_history("a", "T1", limit=0)


def test_checkpoints(store: LogStorage) -> None:
    c2 = CheckpointRecord(size=2, timestamp_ns=T0 + 100, note=b"note 2\n")
    c2_later = CheckpointRecord(size=2, timestamp_ns=T0 + 150, note=b"note 2 again\n")
    c5 = CheckpointRecord(size=5, timestamp_ns=T0 + 200, note=b"note 5\n")
    entries = [make_entry(0), make_entry(1)]
    store.append(entries, leaf_nodes(entries), c2)
    assert store.latest_checkpoint() == c2
    store.add_checkpoint(c5)
    store.add_checkpoint(c2_later)
    assert store.latest_checkpoint() == c5
    assert store.checkpoints() == [c2, c2_later, c5]
    assert store.checkpoints(min_size=3) == [c5]
    assert store.checkpoints(max_size=2) == [c2, c2_later]
    assert store.checkpoints(since_ns=T0 + 150) == [c2_later, c5]
    assert store.checkpoints(until_ns=T0 + 150) == [c2]
    assert store.checkpoints(min_size=2, max_size=2, since_ns=T0 + 101) == [c2_later]
    assert store.checkpoints(min_size=6) == []


def test_append_without_entries_stores_checkpoint(store: LogStorage) -> None:
    cp = CheckpointRecord(size=0, timestamp_ns=T0, note=b"empty\n")
    store.append([], [], cp)
    assert store.tree_size() == 0
    assert store.latest_checkpoint() == cp


def test_meta(store: LogStorage) -> None:
    store.set_meta("origin", b"casino.example/log")
    store.set_meta("key", b"\x00\xff")
    assert store.get_meta("origin") == b"casino.example/log"
    store.set_meta("origin", b"changed")
    assert store.get_meta("origin") == b"changed"
    assert store.get_meta("key") == b"\x00\xff"


@pytest.mark.parametrize("first_index", [0, 1, 2, 4, 5])
def test_sequence_conflict_on_wrong_start(store: LogStorage, first_index: int) -> None:
    _fill(store, 3)
    batch = [make_entry(first_index, request_id="new")]
    with pytest.raises(SequenceConflict, match="expected 3"):
        store.append(batch, leaf_nodes(batch))
    _assert_unchanged(store, 3)


def test_sequence_conflict_in_middle_of_batch_stores_nothing(store: LogStorage) -> None:
    _fill(store, 2)
    batch = [make_entry(2), make_entry(3), make_entry(5)]
    cp = CheckpointRecord(size=5, timestamp_ns=T0, note=b"n\n")
    with pytest.raises(SequenceConflict, match="index 5, expected 4"):
        store.append(batch, leaf_nodes(batch), cp)
    _assert_unchanged(store, 2)


def test_duplicate_request_in_middle_of_batch_stores_nothing(store: LogStorage) -> None:
    _fill(store, 3)
    batch = [make_entry(3), make_entry(4, request_id="req-1"), make_entry(5)]
    cp = CheckpointRecord(size=6, timestamp_ns=T0, note=b"n\n")
    with pytest.raises(DuplicateRequest) as info:
        store.append(batch, leaf_nodes(batch), cp)
    assert (info.value.client_id, info.value.request_id) == ("table-client-1", "req-1")
    _assert_unchanged(store, 3)
    assert store.entry_by_request("table-client-1", "req-3") is None
    # The same batch without the duplicate then goes through.
    fixed = [make_entry(3), make_entry(4), make_entry(5)]
    store.append(fixed, leaf_nodes(fixed), cp)
    assert store.tree_size() == 6


def test_same_request_id_for_another_client_is_not_a_duplicate(store: LogStorage) -> None:
    _fill(store, 1)
    batch = [make_entry(1, client_id="other", request_id="req-0")]
    store.append(batch, [])
    assert store.entry_by_request("other", "req-0") == batch[0]


def test_duplicate_request_inside_batch(store: LogStorage) -> None:
    batch = [make_entry(0, request_id="x"), make_entry(1, request_id="x")]
    with pytest.raises(DuplicateRequest):
        store.append(batch, leaf_nodes(batch))
    _assert_unchanged(store, 0)


def test_node_conflict_stores_nothing(store: LogStorage) -> None:
    _fill(store, 2)
    batch = [make_entry(2)]
    with pytest.raises(SequenceConflict, match="node"):
        store.append(batch, [*leaf_nodes(batch), NodeRecord(0, 1, b"z" * 32)])
    _assert_unchanged(store, 2)
    assert store.nodes([(0, 1)]) == {(0, 1): make_entry(1).leaf_hash}


def test_failed_commit_stores_nothing(driver: Driver, store: LogStorage, tmp_path: Path) -> None:
    _fill(store, 2)
    batch = [make_entry(2), make_entry(3)]
    cp = CheckpointRecord(size=4, timestamp_ns=T0, note=b"n\n")
    with driver.failing_commits(store, tmp_path), pytest.raises(StorageUnavailable):
        store.append(batch, leaf_nodes(batch), cp)
    _assert_unchanged(store, 2)
    store.append(batch, leaf_nodes(batch), cp)
    assert store.tree_size() == 4
    assert store.latest_checkpoint() == cp


def test_closed_store_is_unavailable(driver: Driver, tmp_path: Path) -> None:
    store = driver.open(tmp_path)
    _fill(store, 1)
    store.close()
    store.close()
    with pytest.raises(StorageUnavailable):
        store.tree_size()
    with pytest.raises(StorageUnavailable):
        store.entries(0, 1)
    batch = [make_entry(1)]
    with pytest.raises(StorageUnavailable):
        store.append(batch, [])


def test_reopen_keeps_everything(persistent_driver: Driver, tmp_path: Path) -> None:
    store = persistent_driver.open(tmp_path)
    _fill(store, 10, batch=3)
    nodes = [NodeRecord(1, i, bytes([i]) * 32) for i in range(5)]
    cp = CheckpointRecord(size=10, timestamp_ns=T0, note=b"cp\n")
    store.append([], nodes, cp)
    store.set_meta("origin", b"o")
    before = store.entries(0, 10)
    store.close()

    again = persistent_driver.open(tmp_path)
    try:
        assert again.tree_size() == 10
        assert again.entries(0, 10) == before
        assert again.nodes([(1, i) for i in range(5)]) == {(1, n.index): n.hash for n in nodes}
        assert again.latest_checkpoint() == cp
        assert again.get_meta("origin") == b"o"
        more = [make_entry(10)]
        again.append(more, leaf_nodes(more))
        assert again.tree_size() == 11
    finally:
        again.close()


def test_readers_while_writer_appends(store: LogStorage) -> None:
    batches, batch_size = 60, 5
    errors: list[BaseException] = []
    done = threading.Event()

    def writer() -> None:
        try:
            for b in range(batches):
                entries = [make_entry(i) for i in range(b * batch_size, (b + 1) * batch_size)]
                store.append(entries, leaf_nodes(entries))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)
        finally:
            done.set()

    def reader() -> None:
        try:
            last = 0
            while True:
                finished = done.is_set()
                size = store.tree_size()
                # Batches are atomic: sizes are whole batches, never go back, and every entry
                # and node below the size is readable.
                assert size % batch_size == 0
                assert size >= last
                last = size
                got = store.entries(0, size)
                assert [e.index for e in got] == list(range(size))
                assert len(store.nodes([(0, i) for i in range(size)])) == size
                if size:
                    assert store.entry_by_request("table-client-1", f"req-{size - 1}") is not None
                if finished:
                    assert size == batches * batch_size
                    return
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert store.tree_size() == batches * batch_size


# -- sequence(): the sequencer's write path (the stored size is read under the writers' lock) --


def test_sequence_builds_on_the_stored_size(store: LogStorage) -> None:
    _fill(store, 3)
    seen: list[int] = []

    def build(size: int) -> AppendBatch:
        seen.append(size)
        batch = [make_entry(size), make_entry(size + 1)]
        cp = CheckpointRecord(size=size + 2, timestamp_ns=T0, note=b"cp\n")
        return AppendBatch(batch, leaf_nodes(batch), cp)

    store.sequence(build)
    assert seen[-1] == 3
    assert store.tree_size() == 5
    assert [e.index for e in store.entries(0, 5)] == list(range(5))
    latest = store.latest_checkpoint()
    assert latest is not None
    assert latest.size == 5


def test_sequence_returning_none_stores_nothing(store: LogStorage) -> None:
    _fill(store, 2)
    store.sequence(lambda size: None)
    _assert_unchanged(store, 2)


def test_sequence_build_error_stores_nothing_and_propagates(store: LogStorage) -> None:
    _fill(store, 2)

    class Boom(Exception):
        pass

    def build(size: int) -> AppendBatch:
        raise Boom(f"planning failed at {size}")

    with pytest.raises(Boom, match="planning failed at 2"):
        store.sequence(build)
    _assert_unchanged(store, 2)
    _fill_from(store, 2, 4)  # the store still takes appends
    assert store.tree_size() == 4


def test_sequence_checks_the_batch_like_append(store: LogStorage) -> None:
    _fill(store, 2)
    stale = [make_entry(1)]
    with pytest.raises(SequenceConflict):
        store.sequence(lambda size: AppendBatch(stale, leaf_nodes(stale)))
    dup = [make_entry(2, request_id="req-0")]
    with pytest.raises(DuplicateRequest):
        store.sequence(lambda size: AppendBatch(dup, leaf_nodes(dup)))
    _assert_unchanged(store, 2)


def test_sequence_build_reads_the_store(store: LogStorage) -> None:
    """The sequencer's idempotency lookups and tree catch-up read the store inside build."""
    _fill(store, 4)
    reads: list[object] = []

    def build(size: int) -> AppendBatch:
        reads.append(store.tree_size())
        reads.append(sorted(store.entries_by_requests("table-client-1", ["req-1", "req-9"])))
        reads.append(len(store.nodes([(0, i) for i in range(size)])))
        batch = [make_entry(size)]
        return AppendBatch(batch, leaf_nodes(batch))

    store.sequence(build)
    assert reads == [4, ["req-1"], 4]
    assert store.tree_size() == 5


def test_sequence_serialises_writers(driver: Driver, store: LogStorage, tmp_path: Path) -> None:
    """Writers on several handles (for a persistent store: as several service replicas would
    open it) never collide: each build sees the size the previous writer committed."""
    handles = [store, driver.open(tmp_path)] if driver.persistent else [store, store]
    rounds, per_batch = 15, 3
    errors: list[BaseException] = []
    sizes: list[int] = []
    lock = threading.Lock()

    def writer(handle: LogStorage) -> None:
        try:
            for _ in range(rounds):

                def build(size: int) -> AppendBatch:
                    batch = [make_entry(i) for i in range(size, size + per_batch)]
                    return AppendBatch(batch, leaf_nodes(batch))

                for _attempt in range(200):  # a short lock wait may time out: retry
                    try:
                        handle.sequence(build)
                        break
                    except StorageUnavailable:
                        continue
                else:  # pragma: no cover - reported below
                    raise AssertionError("the writers' lock was never obtained")
                with lock:
                    sizes.append(handle.tree_size())
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(h,)) for h in handles]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    try:
        assert not errors, errors
        total = len(handles) * rounds * per_batch
        assert store.tree_size() == total
        assert [e.index for e in store.entries(0, total)] == list(range(total))
        assert len(store.nodes([(0, i) for i in range(total)])) == total
        assert all(s % per_batch == 0 for s in sizes)
    finally:
        if handles[1] is not store:
            handles[1].close()


def _fill_from(store: LogStorage, start: int, end: int) -> None:
    entries = [make_entry(i) for i in range(start, end)]
    store.append(entries, leaf_nodes(entries))


# -- witness cosignatures -------------------------------------------------------------------


def _cosig(size: int, witness: str, timestamp: int, *, body: bytes = b"b", key_id: int = 7,
           line: bytes | None = None) -> CosignatureRecord:  # fmt: skip
    return CosignatureRecord(
        size=size,
        body_sha256=body * 32 if len(body) == 1 else body,
        witness=witness,
        key_id=key_id,
        timestamp=timestamp,
        line=line if line is not None else f"{witness}@{size}@{timestamp}".encode(),
        received_ns=T0 + timestamp,
    )


def test_cosignatures_empty(store: LogStorage) -> None:
    assert store.cosignatures() == []
    assert store.latest_cosignatures() == []
    store.add_cosignatures([])
    assert store.cosignatures() == []


def test_cosignatures_filtered_by_size_and_ordered(store: LogStorage) -> None:
    store.add_cosignatures([_cosig(20, "w2", 5), _cosig(10, "w2", 3), _cosig(10, "w1", 4)])
    store.add_cosignatures([_cosig(30, "w1", 9)])
    assert [(c.size, c.witness) for c in store.cosignatures()] == [
        (10, "w1"), (10, "w2"), (20, "w2"), (30, "w1"),
    ]  # fmt: skip
    assert [(c.size, c.witness) for c in store.cosignatures(min_size=11, max_size=30)] == [
        (20, "w2"), (30, "w1"),
    ]  # fmt: skip
    assert store.cosignatures(min_size=10, max_size=10)[1] == _cosig(10, "w2", 3)


def test_a_newer_cosignature_of_the_same_checkpoint_replaces_an_older_one(
    store: LogStorage,
) -> None:
    # A quiet log asks again at every interval: one line per witness and checkpoint is kept,
    # the newest by the cosignature's own timestamp; an older one arriving late changes nothing.
    store.add_cosignatures([_cosig(10, "w1", 100)])
    store.add_cosignatures([_cosig(10, "w1", 200)])
    store.add_cosignatures([_cosig(10, "w1", 150)])
    assert store.cosignatures() == [_cosig(10, "w1", 200)]
    # Another key of the same name, or another body of the same size, is kept apart.
    store.add_cosignatures([_cosig(10, "w1", 50, key_id=8), _cosig(10, "w1", 60, body=b"c")])
    assert len(store.cosignatures()) == 3


def test_latest_cosignatures_per_witness_key(store: LogStorage) -> None:
    store.add_cosignatures([
        _cosig(10, "w1", 100), _cosig(20, "w1", 90), _cosig(20, "w1", 95, body=b"c"),
        _cosig(15, "w2", 300), _cosig(5, "w2", 400), _cosig(7, "w1", 500, key_id=9),
    ])  # fmt: skip
    latest = store.latest_cosignatures()
    assert [(c.witness, c.key_id, c.size, c.timestamp) for c in latest] == [
        ("w1", 7, 20, 95), ("w1", 9, 7, 500), ("w2", 7, 15, 300),
    ]  # fmt: skip


def test_cosignatures_persist(persistent_driver: Driver, tmp_path: Path) -> None:
    store = persistent_driver.open(tmp_path)
    store.add_cosignatures([_cosig(10, "w1", 100)])
    store.close()
    again = persistent_driver.open(tmp_path)
    try:
        assert again.cosignatures() == [_cosig(10, "w1", 100)]
    finally:
        again.close()


# -- the table map's rows -------------------------------------------------------------------


def _heads(store: LogStorage) -> list[tuple[str, str, int, int]]:
    return [(r.client_id, r.table_id, r.head_index, r.head_seq) for r in store.map_rows()]


def test_map_rows_are_upserted_with_the_append(store: LogStorage) -> None:
    c = "table-client-1"
    first = [make_entry(0, table_seq=1), make_entry(1, table_id="T2", table_seq=1)]
    store.sequence(
        lambda size: AppendBatch(
            first, leaf_nodes(first), None, [MapRow(c, "T1", 0, 1), MapRow(c, "T2", 1, 1)]
        )
    )
    assert _heads(store) == [(c, "T1", 0, 1), (c, "T2", 1, 1)]
    more = [make_entry(2, table_seq=2), make_entry(3, client_id="a", table_seq=1)]
    store.sequence(
        lambda size: AppendBatch(
            more, leaf_nodes(more), None, [MapRow(c, "T1", 2, 2), MapRow("a", "T1", 3, 1)]
        )
    )
    # Moved in place; a new chain added; by (client_id, table_id).
    assert _heads(store) == [("a", "T1", 3, 1), (c, "T1", 2, 2), (c, "T2", 1, 1)]
    assert store.map_rows()[0] == MapRow("a", "T1", 3, 1)


def test_map_heads_at_an_older_size_come_from_the_columns(store: LogStorage) -> None:
    c = "table-client-1"
    batch = [
        make_entry(0, table_seq=1),
        make_entry(1, table_id="T2", table_seq=1),
        make_entry(2, table_seq=2),
        make_entry(3, table_seq=3),
        make_entry(4, table_id="T3", table_seq=1),
    ]
    rows = [MapRow(c, "T1", 3, 3), MapRow(c, "T2", 1, 1), MapRow(c, "T3", 4, 1)]
    store.sequence(lambda size: AppendBatch(batch, leaf_nodes(batch), None, rows))
    assert store.map_heads_at(5) == rows
    assert store.map_heads_at(9) == rows
    # T1's row (3) is not below 3: its newest entry below 3 by the columns; T3 had none.
    assert store.map_heads_at(3) == [MapRow(c, "T1", 2, 2), MapRow(c, "T2", 1, 1)]
    assert store.map_heads_at(1) == [MapRow(c, "T1", 0, 1)]
    assert store.map_heads_at(0) == []


def test_a_batch_with_bad_map_rows_stores_nothing(store: LogStorage) -> None:
    _fill(store, 2)
    c = "table-client-1"
    entries = [make_entry(2)]
    for heads in (
        [MapRow(c, "T1", 2, 3), MapRow(c, "T1", 2, 3)],  # one chain twice
        [MapRow(c, "T1", 3, 3)],  # beyond the batch's last entry
        [MapRow(c, "T1", 2, 0)],  # no table_seq
    ):
        batch = AppendBatch(entries, leaf_nodes(entries), None, heads)

        def build(_size: int, b: AppendBatch = batch) -> AppendBatch:
            return b

        with pytest.raises(SequenceConflict):
            store.sequence(build)
        _assert_unchanged(store, 2)
        assert store.map_rows() == []


def test_a_failed_append_stores_no_map_row(
    driver: Driver, store: LogStorage, tmp_path: Path
) -> None:
    entries = [make_entry(0)]
    with driver.failing_commits(store, tmp_path), pytest.raises(StorageUnavailable):
        store.sequence(
            lambda _size: AppendBatch(
                entries, leaf_nodes(entries), None, [MapRow("table-client-1", "T1", 0, 1)]
            )
        )
    assert store.map_rows() == []
    _assert_unchanged(store, 0)


def test_map_rows_survive_reopen(persistent_driver: Driver, tmp_path: Path) -> None:
    store = persistent_driver.open(tmp_path)
    entries = [make_entry(0), make_entry(1, table_id="T9", table_seq=1)]
    rows = [MapRow("table-client-1", "T1", 0, 1), MapRow("table-client-1", "T9", 1, 1)]
    store.sequence(lambda _size: AppendBatch(entries, leaf_nodes(entries), None, rows))
    store.close()
    again = persistent_driver.open(tmp_path)
    try:
        assert again.map_rows() == rows
    finally:
        again.close()
