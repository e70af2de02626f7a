"""The front end's committed table map (rng_service.rpc.table_maps): rebuilt from the store at
a tree size, served only when its root is the one signed in the tree's newest entry. The log
is built in tests/table_log.py with the map's reference root; the store is a fake that holds
its rows as given (so a test edits them as whoever can write the database would)."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import pytest

from rng_service.log.merkle import inclusion_proof, leaf_hash
from rng_service.rpc.table_maps import CommittedMaps
from rng_service.storage.base import EntryRecord, LogStorage, MapRow
from rng_service.writer.columns import LookupIntegrityError
from tests.table_log import TableLog


class FakeStore:
    """Entries by index and the map rows as of a size, straight from lists a test edits."""

    def __init__(self, log: TableLog) -> None:
        self.records = log.records()
        self.heads_asked: list[int] = []

    def entries(self, start: int, end: int) -> list[EntryRecord]:
        return [r for r in self.records if start <= r.index < end]

    def map_heads_at(self, size: int) -> list[MapRow]:
        self.heads_asked.append(size)
        heads: dict[tuple[str, str], MapRow] = {}
        for r in self.records[:size]:
            if r.table_seq is not None:
                heads[(r.client_id, r.table_id)] = MapRow(r.client_id, r.table_id, r.index,
                                                           r.table_seq)  # fmt: skip
        return sorted(heads.values(), key=lambda m: (m.client_id, m.table_id))


class Leaves:
    """The tree's level-0 nodes: the leaf hashes of the log as built (not as stored)."""

    def __init__(self, log: TableLog) -> None:
        self.leaves = log.leaves()

    def leaf_hash(self, index: int) -> bytes:
        return self.leaves[index]

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        return inclusion_proof(self.leaves[: size or len(self.leaves)], index)


def tables(n_rounds: int = 6) -> TableLog:
    log = TableLog()
    for i in range(n_rounds):
        log.add("c1", f"T{i % 3}", f"R{i}")
        log.add("c2", "T0", f"S{i}")
    return log


def maps(store: Any, log: TableLog, **kw: Any) -> CommittedMaps:
    return CommittedMaps(cast(LogStorage, store), Leaves(log), **kw)


def test_the_map_is_served_at_every_size_and_cached() -> None:
    log = tables()
    store = FakeStore(log)
    committed = maps(store, log)
    for size in range(1, len(log.entries) + 1):
        got = committed.at(size)
        assert got is not None
        assert got.root == log.entries[size - 1].table_map
        assert got.root_record.index == size - 1
    # the first size from the store's heads, each later one extended by its new entries
    assert store.heads_asked == [1]
    assert committed.builds == len(log.entries)
    assert committed.at(len(log.entries)) is got  # cached
    assert committed.builds == len(log.entries)
    assert got is not None
    head = got.table_map.head("c2", "T0")
    assert head is not None
    assert (head.index, head.seq) == (len(log.entries) - 1, 6)


def test_an_edited_map_row_is_data_loss_and_nothing_is_served() -> None:
    log = tables()
    store = FakeStore(log)
    original = store.map_heads_at

    def hidden_head(size: int) -> list[MapRow]:
        rows = original(size)
        # a table's head moved back one entry: the newest entry hidden
        return [dataclasses.replace(r, head_seq=r.head_seq - 1) if r.table_id == "T1" else r
                for r in rows]  # fmt: skip

    store.map_heads_at = hidden_head  # type: ignore[method-assign]
    committed = maps(store, log)
    size = len(log.entries)
    with pytest.raises(LookupIntegrityError, match=f"but entry {size - 1} signed") as info:
        committed.at(size)
    assert (info.value.check, info.value.index) == ("map", size - 1)
    with pytest.raises(LookupIntegrityError):  # not cached: asked again, refused again
        committed.at(size)


def test_an_edited_entry_read_to_extend_the_map_is_data_loss() -> None:
    log = tables()
    store = FakeStore(log)
    committed = maps(store, log)
    assert committed.at(4) is not None
    # entry 6 (the head of c1 T0 at size 8): its table_seq changed in its bytes and leaf hash
    record = store.records[6]
    data = record.data.replace(b'"table_seq":', b'"table_seq":1')
    store.records[6] = dataclasses.replace(record, data=data, leaf_hash=leaf_hash(data))
    with pytest.raises(LookupIntegrityError) as info:
        committed.at(8)
    assert info.value.check == "map"


def test_no_map_before_format_3_and_a_root_entry_not_the_trees_leaf() -> None:
    log = TableLog()
    log.add("c1", "T1", "R1", version=2)
    log.add("c1", "T1", "R2", version=2)
    assert maps(FakeStore(log), log).at(2) is None
    assert maps(FakeStore(log), log).at(0) is None
    log = tables()
    store = FakeStore(log)
    last = len(log.entries) - 1
    record = store.records[last]
    data = record.data.replace(b'"n":', b'"n":9')
    store.records[last] = dataclasses.replace(record, data=data, leaf_hash=leaf_hash(data))
    with pytest.raises(LookupIntegrityError, match="the tree's leaf node") as info:
        maps(store, log).at(last + 1)
    assert (info.value.check, info.value.index) == ("node", last)


def test_a_deleted_entry_is_a_gap() -> None:
    log = tables()
    store = FakeStore(log)
    committed = maps(store, log)
    assert committed.at(2) is not None
    del store.records[3]
    with pytest.raises(LookupIntegrityError) as info:
        committed.at(6)
    assert (info.value.check, info.value.index) == ("gap", 3)
