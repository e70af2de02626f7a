"""``read_chain`` (rng_service.cli.tables_live) against a fake LogService client that answers
from a log built in tests/table_log.py: a map proof is checked and the chain walked; without
one, the tree's newest entry is fetched and proven, and a format 3 entry there (a service
withholding its proof of completeness) fails, where a format 2 one leaves the answer unproven
(exit status 4)."""

from __future__ import annotations

import argparse
from typing import Any, cast

import pytest

from rng_service.audit.results import VerificationFailure
from rng_service.audit.verify import PinnedOrigin
from rng_service.cli.tables_common import Shared
from rng_service.cli.tables_live import read_chain
from rng_service.log.note import sign_note
from rng_service.log.table_map import MapHead, TableMap
from rng_service.rpc.log_client import ProvenEntry, ProvenPage
from rng_service.rpc.table_maps import WireMapProof
from tests.table_log import ORIGIN, SIGNER, TableLog


class FakeClient:
    """Answers GetTableHistory (with or without its map proof), GetEntries and
    GetInclusionProof from ``log``."""

    def __init__(self, log: TableLog, *, with_proof: bool) -> None:
        self.log = log
        self.with_proof = with_proof
        self.entries_read: list[tuple[int, int]] = []

    def table_history(self, table_id: str, *, client: str = "", first_seq: int = 1,
                      last_seq: int = 0, tree_size: int = 0) -> ProvenPage:  # fmt: skip
        log, size = self.log, len(self.log.entries)
        items = [log.item(e.index) for e in log.entries
                 if e.table_id == table_id and (e.table_seq or 0) >= first_seq]  # fmt: skip
        heads = {(e.client, e.table_id): MapHead(e.client, e.table_id, e.index, e.table_seq or 0)
                 for e in log.entries}  # fmt: skip
        root = log.item(size - 1)
        wire = WireMapProof(root.index, root.data, root.leaf_hash, root.proof,
                            TableMap(heads.values()).prove(client, table_id))  # fmt: skip
        note = sign_note(log.head().checkpoint.body(), [SIGNER]).decode()
        return ProvenPage(
            tuple(ProvenEntry(i.index, i.data, i.leaf_hash, i.proof) for i in items), size, note,
            client=client, map_proof=wire if self.with_proof else None,
        )  # fmt: skip

    def entries(self, start: int, end: int) -> list[tuple[int, bytes, bytes]]:
        self.entries_read.append((start, end))
        return [(i, self.log.item(i).leaf_hash, self.log.data[i]) for i in range(start, end)]

    def inclusion_proof(self, index: int, size: int) -> list[bytes]:
        return list(self.log.item(index, size).proof)


def shared() -> Shared:
    def unused(*args: Any) -> Any:
        raise AssertionError("not used here")

    return Shared(verifiers=unused, pinned=unused, client_tls=unused, kept=unused,
                  export_lines=unused, check_kept=unused, write_atomically=unused,
                  usage_error=ValueError, command=unused, export_total=unused,
                  witness_options=unused, witnessed_by=unused, verify_export=unused,
                  truncation=unused)  # fmt: skip


def chain_of(log: TableLog, *, with_proof: bool) -> Any:
    client = FakeClient(log, with_proof=with_proof)
    args = argparse.Namespace(target="fake:1", tree_size=0, witness=[])
    live = read_chain(
        shared(), args, cast(Any, client), table_id="T1", whose="c1", first_seq=1,
        verifiers=[SIGNER.verifier()], origin=PinnedOrigin(ORIGIN, "the key"), kept=[],
        tree=None,
    )  # fmt: skip
    return live, client


def built(version: int) -> TableLog:
    log = TableLog()
    for i in range(1, 5):
        log.add("c1", "T1", f"G{i}", version=version)
        log.add("c1", "T2", f"X{i}", version=version)
    return log


def test_a_map_proof_is_checked_and_the_chain_walked() -> None:
    live, client = chain_of(built(3), with_proof=True)
    assert live.committed is not None
    assert [e.round_id for e in live.committed.chain] == ["G1", "G2", "G3", "G4"]
    assert client.entries_read == []


def test_a_withheld_proof_of_a_format_3_log_fails() -> None:
    with pytest.raises(VerificationFailure, match="the service withheld the proof"):
        chain_of(built(3), with_proof=False)


def test_a_log_before_format_3_is_answered_unproven() -> None:
    live, client = chain_of(built(2), with_proof=False)
    assert live.committed is None
    assert [e.round_id for e in live.entries] == ["G1", "G2", "G3", "G4"]
    assert client.entries_read == [(7, 8)]  # the newest entry was read and proven
