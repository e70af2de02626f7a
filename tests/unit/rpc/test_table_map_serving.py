"""GetTableHistory and FindEntries with the map proof of a table's head, served by the real
LogServicer from a real SQLite store of format 3 entries (built in tests/table_log.py with the
map's reference root), with a fake context; the store is edited by SQL as whoever can write
the database would."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc import aio

from rng_service._proto.rng.v1 import log_pb2
from rng_service.log.merkle import verify_inclusion
from rng_service.log.table_map import verify_map_proof
from rng_service.rpc.log_servicer import LogServicer
from rng_service.rpc.table_maps import proof_from_proto
from rng_service.storage.base import CheckpointRecord
from rng_service.storage.sqlite import SqliteStorage
from rng_service.writer.tree import MerkleTree
from tests.table_log import TableLog, to_sqlite
from tests.unit.rpc.conftest import Aborted, FakeContext


class Recorder:
    def __init__(self) -> None:
        self.errors: list[tuple[str, str]] = []

    def integrity_error(self, method: str, check: str) -> None:
        self.errors.append((method, check))


def build(tmp_path: Path) -> tuple[TableLog, Path, dict[int, str]]:
    log = TableLog()
    for i in range(1, 9):
        log.add("c1", "T1", f"G{i}")
        if i % 3 == 0:
            log.add("c1", "T2", f"X{i}")
    path = tmp_path / "log.sqlite3"
    return log, path, to_sqlite(log, path)


def servicer(path: Path, notes: dict[int, str], recorder: Recorder) -> LogServicer:
    store = SqliteStorage(path)

    def publish() -> CheckpointRecord:
        raise AssertionError("not called")

    return LogServicer(keys=[], storage=store, tree=MerkleTree.load(store),
                       checkpoint_note=notes.__getitem__, publish=publish,
                       integrity_observer=recorder, client_id="c1")  # fmt: skip


def call(log: LogServicer, method: str, request: Any) -> Any:
    context = FakeContext()
    try:
        return asyncio.run(getattr(log, method)(request, context))
    except aio.AbortError:
        raise Aborted(context.status, context.details) from None


def sql(path: Path, statement: str, *params: object) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(statement, params)
    conn.close()


def test_the_history_carries_a_map_proof_of_its_head(tmp_path: Path) -> None:
    log, path, notes = build(tmp_path)
    size = len(log.entries)
    reply = call(servicer(path, notes, Recorder()), "GetTableHistory",
                 log_pb2.GetTableHistoryRequest(table_id="T1", first_seq=3))  # fmt: skip
    assert reply.tree_size == size
    assert [e.index for e in reply.entries] == [e.index for e in log.entries
                                                if e.table_id == "T1"][2:]  # fmt: skip
    proof = reply.map_proof
    assert proof.terminal == log_pb2.TableMapProof.TERMINAL_PRESENT
    assert (proof.head_index, proof.head_seq) == (log.heads["c1", "T1"].index, 8)
    root = proof.root_entry
    assert root.index == size - 1
    assert bytes(root.entry) == log.data[size - 1]
    verify_inclusion(bytes(root.leaf_hash), size - 1, size, list(root.inclusion_proof),
                     log.head().checkpoint.root_hash)  # fmt: skip
    wire = proof_from_proto(proof, "c1", "T1")
    assert wire is not None
    signed_root = log.entries[size - 1].table_map
    assert signed_root is not None
    assert verify_map_proof(signed_root, "c1", "T1", wire.proof) == log.heads["c1", "T1"]
    # in an older tree, the head of then
    reply = call(servicer(path, notes, Recorder()), "GetTableHistory",
                 log_pb2.GetTableHistoryRequest(table_id="T2", tree_size=8))  # fmt: skip
    assert reply.map_proof.root_entry.index == 7
    assert reply.map_proof.head_index == max(e.index for e in log.entries[:8]
                                             if e.table_id == "T2")  # fmt: skip
    # an absent table: a proof of absence, no entries
    reply = call(servicer(path, notes, Recorder()), "GetTableHistory",
                 log_pb2.GetTableHistoryRequest(table_id="T-none"))  # fmt: skip
    assert list(reply.entries) == []
    assert reply.map_proof.terminal in (
        log_pb2.TableMapProof.TERMINAL_ABSENT_EMPTY, log_pb2.TableMapProof.TERMINAL_ABSENT_OTHER
    )  # fmt: skip
    # past the chain's end: nothing, and the head proven
    reply = call(servicer(path, notes, Recorder()), "GetTableHistory",
                 log_pb2.GetTableHistoryRequest(table_id="T2", first_seq=9))  # fmt: skip
    assert list(reply.entries) == []
    assert reply.map_proof.head_seq == 2


def test_find_entries_of_one_chain_carries_the_proof(tmp_path: Path) -> None:
    _, path, notes = build(tmp_path)
    log = servicer(path, notes, Recorder())
    reply = call(log, "FindEntries", log_pb2.FindEntriesRequest(client="c1", table_id="T1",
                                                                round_id="G2"))  # fmt: skip
    assert reply.map_proof.terminal == log_pb2.TableMapProof.TERMINAL_PRESENT
    reply = call(log, "FindEntries", log_pb2.FindEntriesRequest(table_id="T1", round_id="G2"))
    assert not reply.HasField("map_proof")


def test_a_hidden_head_is_served_from_the_committed_chain(tmp_path: Path) -> None:
    """T1's newest entry moved to another table by its columns: the rows the store's index
    gives stop short of the committed head. That is counted (check chain), and the history is
    served walked back from the proven head by index and the signed table_prev: the signed
    chain, hidden entry included. A row deleted from the walk is DATA_LOSS (gap)."""
    log, path, notes = build(tmp_path)
    head = log.heads["c1", "T1"]
    t1 = [e.index for e in log.entries if e.table_id == "T1"]
    sql(path, "UPDATE entries SET table_id = 'T1x' WHERE idx = ?", head.index)
    recorder = Recorder()
    reply = call(servicer(path, notes, recorder), "GetTableHistory",
                 log_pb2.GetTableHistoryRequest(table_id="T1"))  # fmt: skip
    assert [e.index for e in reply.entries] == t1
    assert reply.map_proof.head_index == head.index
    assert recorder.errors == [("GetTableHistory", "chain")]
    reply = call(servicer(path, notes, recorder), "GetTableHistory",
                 log_pb2.GetTableHistoryRequest(table_id="T1", first_seq=3, last_seq=5,
                                                limit=2))  # fmt: skip
    assert [e.index for e in reply.entries] == t1[2:4]
    assert reply.truncated
    sql(path, "DELETE FROM entries WHERE idx = ?", t1[3])
    with pytest.raises(Aborted) as info:
        call(servicer(path, notes, recorder), "GetTableHistory",
             log_pb2.GetTableHistoryRequest(table_id="T1"))  # fmt: skip
    assert info.value.code == grpc.StatusCode.DATA_LOSS
    assert recorder.errors[-1] == ("GetTableHistory", "gap")


def test_an_edited_map_row_is_data_loss(tmp_path: Path) -> None:
    log, path, notes = build(tmp_path)
    t1 = [e.index for e in log.entries if e.table_id == "T1"]
    sql(path, "UPDATE table_map SET head_index = ?, head_seq = 7 WHERE table_id = 'T1'", t1[6])
    recorder = Recorder()
    for method, request in (
        ("GetTableHistory", log_pb2.GetTableHistoryRequest(table_id="T2")),
        ("FindEntries", log_pb2.FindEntriesRequest(client="c1", table_id="T2")),
    ):
        with pytest.raises(Aborted) as info:
            call(servicer(path, notes, recorder), method, request)
        assert info.value.code == grpc.StatusCode.DATA_LOSS
        assert "the map of table heads rebuilt from the store" in info.value.details
    assert recorder.errors == [("GetTableHistory", "map"), ("FindEntries", "map")]


def test_no_proof_before_format_3(tmp_path: Path) -> None:
    log = TableLog()
    for i in range(3):
        log.add("c1", "T1", f"G{i}", version=2)
    path = tmp_path / "v2.sqlite3"
    notes = to_sqlite(log, path)
    reply = call(servicer(path, notes, Recorder()), "GetTableHistory",
                 log_pb2.GetTableHistoryRequest(table_id="T1"))  # fmt: skip
    assert len(reply.entries) == 3
    assert not reply.HasField("map_proof")
