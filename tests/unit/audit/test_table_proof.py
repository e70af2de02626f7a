"""The auditor's side of the committed table map: a head proven by the map root signed in the
checkpoint's newest entry, the chain walked back from it, and the table proof file. The log
is built in tests/table_log.py with the map's reference root (not the service's map)."""

from __future__ import annotations

import dataclasses
import io

import pytest

from rng_service.audit.history import ChainBreak, HistoryFormatError, prove_entries
from rng_service.audit.results import VerificationFailure
from rng_service.audit.table_proof import (
    TableProofFile,
    prove_head,
    read_table_proof,
    walk_back,
    write_table_proof,
)
from rng_service.log.table_map import MapHead, MapProof, TableMap
from tests.table_log import TableLog


def two_tables() -> TableLog:
    log = TableLog()
    for i in range(1, 6):
        log.add("c1", "T1", f"G{i}")
        if i % 2 == 0:
            log.add("c1", "T2", f"X{i}")
    return log


def proof_of(log: TableLog, client: str, table: str, size: int | None = None) -> MapProof:
    size = size or len(log.entries)
    heads: dict[tuple[str, str], MapHead] = {}
    for e in log.entries[:size]:
        if e.table_seq is not None:
            heads[(e.client, e.table_id)] = MapHead(e.client, e.table_id, e.index, e.table_seq)
    return TableMap(heads.values()).prove(client, table)


def test_a_proven_head_and_the_chain_walked_back_from_it() -> None:
    log = two_tables()
    head = log.head()
    proven = prove_head(log.item(len(log.entries) - 1), proof_of(log, "c1", "T1"), head,
                        client="c1", table_id="T1")  # fmt: skip
    assert proven.head is not None
    assert (proven.head.index, proven.head.seq) == (log.heads["c1", "T1"].index, 5)
    entries = prove_entries([log.item(i) for i in range(len(log.entries))], head)
    chain = walk_back(entries, proven, 1)
    assert [e.round_id for e in chain] == ["G1", "G2", "G3", "G4", "G5"]
    assert [e.table_seq for e in walk_back(entries, proven, 4)] == [4, 5]
    # the walk takes only the chain's entries: T2's among them are left aside
    assert walk_back([e for e in entries if e.table_id == "T1"], proven, 1) == chain


def test_an_absence_is_proven_of_both_kinds() -> None:
    log = two_tables()
    head = log.head()
    kinds = set()
    for table in ("nope", "T3", "T4", "T5", "T6", "T7", "T8"):
        proof = proof_of(log, "c1", table)
        kinds.add(proof.kind)
        proven = prove_head(log.item(len(log.entries) - 1), proof, head, client="c1",
                            table_id=table)  # fmt: skip
        assert proven.head is None
        assert walk_back([], proven, 1) == []
    assert "absent_other" in kinds or "absent_empty" in kinds


def test_a_map_proof_that_does_not_verify_fails() -> None:
    log = two_tables()
    last = len(log.entries) - 1
    proof = proof_of(log, "c1", "T1")
    bad = dataclasses.replace(proof, siblings=(bytes(32), *proof.siblings[1:]))
    with pytest.raises(VerificationFailure, match="does not verify against the map root"):
        prove_head(log.item(last), bad, log.head(), client="c1", table_id="T1")
    # an older head (the map before T1's newest entry) against the newest root: fails
    stale = proof_of(log, "c1", "T1", size=last)
    with pytest.raises(VerificationFailure, match="does not verify"):
        prove_head(log.item(last), stale, log.head(), client="c1", table_id="T1")
    # a proof of absence for a chain that is there: fails
    absent = proof_of(log, "c1", "nope")
    with pytest.raises(VerificationFailure, match="does not verify"):
        prove_head(log.item(last), absent, log.head(), client="c1", table_id="T1")


def test_the_root_must_be_the_checkpoints_newest_entry_of_format_3() -> None:
    log = two_tables()
    last = len(log.entries) - 1
    with pytest.raises(VerificationFailure, match="not the newest entry"):
        prove_head(log.item(last - 1), proof_of(log, "c1", "T1", size=last), log.head(),
                   client="c1", table_id="T1")  # fmt: skip
    old = TableLog()
    old.add("c1", "T1", "G1", version=2)
    with pytest.raises(VerificationFailure, match="carries no map root"):
        prove_head(old.item(0), MapProof(()), old.head(), client="c1", table_id="T1")
    # a root entry whose inclusion proof fails is not read
    item = log.item(last)
    forged = dataclasses.replace(item, proof=(bytes(32), *item.proof[1:]))
    with pytest.raises(VerificationFailure, match="inclusion proof"):
        prove_head(forged, proof_of(log, "c1", "T1"), log.head(), client="c1", table_id="T1")


def test_the_walk_fails_on_a_missing_entry_and_on_a_second_one_of_a_place() -> None:
    log = two_tables()
    head = log.head()
    proven = prove_head(log.item(len(log.entries) - 1), proof_of(log, "c1", "T1"), head,
                        client="c1", table_id="T1")  # fmt: skip
    entries = prove_entries([log.item(i) for i in range(len(log.entries))], head)
    g3 = next(e for e in entries if e.round_id == "G3")
    with pytest.raises(ChainBreak, match="needs seq 3") as info:
        walk_back([e for e in entries if e is not g3], proven, 1)
    assert info.value.index == g3.index
    # the newest entry (the head) hidden: the walk cannot start
    with pytest.raises(ChainBreak, match="needs seq 5"):
        walk_back([e for e in entries if e.round_id != "G5"], proven, 1)
    # a second signed entry claiming seq 3 after the same predecessor (a fork)
    fork = TableLog()
    for i in range(1, 4):
        fork.add("c1", "T1", f"G{i}")
    g2 = fork.heads["c1", "T1"].index - 1
    fork.add("c1", "T1", "G3", seq=3, prev=g2)  # drawn again after a hidden head
    fork.add("c1", "T1", "G4")
    head = fork.head()
    proven = prove_head(fork.item(4), proof_of(fork, "c1", "T1"), head, client="c1",
                        table_id="T1")  # fmt: skip
    entries = prove_entries([fork.item(i) for i in range(5)], head)
    with pytest.raises(ChainBreak, match="two signed entries claim one place"):
        walk_back(entries, proven, 1)
    # an entry given for a chain the map proves absent
    absent = prove_head(fork.item(4), proof_of(fork, "c1", "T9"), head, client="c1",
                        table_id="T9")  # fmt: skip
    with pytest.raises(ChainBreak, match="proves has no entry"):
        walk_back(entries[:1], absent, 1)


def test_the_proof_file_round_trips_and_names_a_bad_field() -> None:
    log = two_tables()
    last = len(log.entries) - 1
    for table in ("T1", "nope"):
        saved = TableProofFile(
            origin="example.invalid/table-log", client="c1", table_id=table, first_seq=1,
            tree_size=last + 1, checkpoint="note\n", root=log.item(last),
            proof=proof_of(log, "c1", table),
            items=tuple(log.item(i) for i in range(last + 1) if log.entries[i].table_id == table),
            rounds=("G3",), sessions=("s",), extra=(log.item(0),),
        )  # fmt: skip
        out = io.StringIO()
        write_table_proof(out, saved)
        assert read_table_proof(out.getvalue().splitlines()) == saved
    lines = out.getvalue().splitlines()
    broken = lines[0].replace('"terminal":"', '"terminal":"x')
    with pytest.raises(HistoryFormatError, match=r"line 1: map\.terminal"):
        read_table_proof([broken, *lines[1:]])
    with pytest.raises(HistoryFormatError, match="line 2: type"):
        read_table_proof([lines[0], lines[1].replace('"found"', '"other"')])
    with pytest.raises(HistoryFormatError, match="is not 'rng-audit-table-proof/v1'"):
        read_table_proof(['{"format": "rng-audit-table-history/v1"}'])
