"""``rng-audit dispute FILE`` and ``rng-audit table-history FILE`` on a saved table proof
(rng-audit-table-proof/v1), checked with the log's verifier key alone: the file is made here
from a log built in tests/table_log.py (the map's reference root, a signed checkpoint), so
the offline check is tested apart from any service."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.audit.history import ProvenItem
from rng_service.audit.table_proof import TableProofFile, write_table_proof
from rng_service.cli.audit import main
from rng_service.log.cosignature import CosignatureSigner
from rng_service.log.note import sign_note
from rng_service.log.table_map import MapHead, TableMap
from tests.table_log import ORIGIN, SIGNER, TableLog

WITNESS = CosignatureSigner("w1.test/w", Ed25519PrivateKey.from_private_bytes(b"\x41" * 32))


def saved(
    tmp_path: Path, log: TableLog, table: str, rounds: tuple[str, ...], *, cosigned: bool = False
) -> Path:
    size = len(log.entries)
    body = log.head().checkpoint.body()
    note = sign_note(body, [SIGNER]).decode()
    if cosigned:
        note += WITNESS.cosign(body, int(time.time()) - 60).line()
    heads: dict[tuple[str, str], MapHead] = {}
    for e in log.entries:
        heads[(e.client, e.table_id)] = MapHead(e.client, e.table_id, e.index, e.table_seq or 0)
    items: tuple[ProvenItem, ...] = tuple(
        log.item(e.index) for e in log.entries if e.table_id == table
    )
    proof = TableProofFile(
        origin=ORIGIN, client="c1", table_id=table, first_seq=1, tree_size=size,
        checkpoint=note, root=log.item(size - 1),
        proof=TableMap(heads.values()).prove("c1", table), items=items, rounds=rounds,
    )  # fmt: skip
    path = tmp_path / f"{table}.proof"
    with path.open("w") as fh:
        write_table_proof(fh, proof)
    return path


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def jsoned(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    code = main([*args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_saved_dispute_proof_is_checked_with_the_key_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = TableLog()
    for i in range(1, 6):
        log.add("c1", "T1", f"G{i}")
        log.add("c1", "T2", f"X{i}")
    path = saved(tmp_path, log, "T1", ("G2",))
    key = SIGNER.verifier().verifier_key()
    code, out = run(["dispute", str(path), "--key", key], capsys)
    assert code == 0, out
    assert out.startswith(
        "OK: these are all the outcomes of round 'G2' of table 'T1' (client 'c1') as of "
        "checkpoint 10 (signed by "
    ), out
    assert "the table's whole chain (seq 1 to 5) was walked back from its committed head " \
           f"(log index {log.heads['c1', 'T1'].index})" in out  # fmt: skip
    code, report = jsoned(["dispute", str(path), "--round", "G4", "--key", key], capsys)
    assert code == 0
    assert (report["ok"], report["proven_complete"]) == (True, True)
    assert [e["round_id"] for e in report["rounds"][0]["entries"]] == ["G4"]
    code, out = run(["table-history", str(path), "--key", key], capsys)
    assert code == 0, out
    assert "OK: the history of table 'T1' (client 'c1') is complete from seq 1 to seq 5" in out
    # another key: the checkpoint does not verify
    other = "other+01020304+AQ" + "A" * 42 + "="
    code, out = run(["dispute", str(path), "--key", other], capsys)
    assert code != 0


def test_a_redrawn_round_in_the_chain_fails_the_dispute(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Round G2's spin drawn twice in the chain (what break 4's column edit made the writer
    do): the dispute read from the chain lists both and fails on the slot filled twice."""
    log = TableLog()
    for round_id in ("G1", "G2", "G3", "G2"):
        log.add("c1", "T1", round_id)
    path = saved(tmp_path, log, "T1", ("G2",))
    code, out = run(["dispute", str(path), "--key", SIGNER.verifier().verifier_key()], capsys)
    assert code == 1, out
    assert "has its slot 'spin' filled twice: log index 1 and log index 3" in out


def test_an_absent_table_from_a_saved_proof(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = TableLog()
    for i in range(1, 4):
        log.add("c1", "T1", f"G{i}")
    path = saved(tmp_path, log, "T-none", ())
    code, out = run(["table-history", str(path), "--key", SIGNER.verifier().verifier_key()],
                    capsys)  # fmt: skip
    assert code == 0, out
    assert out.startswith("OK: table 'T-none' has no entries (client 'c1') as of checkpoint 3")


def test_a_saved_proof_of_a_witnessed_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = TableLog()
    for i in range(1, 4):
        log.add("c1", "T1", f"G{i}")
    key = SIGNER.verifier().verifier_key()
    witness = WITNESS.verifier().verifier_key()
    path = saved(tmp_path, log, "T1", ("G1",), cosigned=True)
    code, out = run(["dispute", str(path), "--key", key, "--witness", witness], capsys)
    assert code == 0, out
    assert "as of witnessed checkpoint 3 (signed by" in out
    assert "cosigned by w1.test/w" in out
    code, out = run(["dispute", str(path), "--key", key, "--witness", witness,
                     "--max-witness-age", "10s"], capsys)  # fmt: skip
    assert code == 1, out  # the cosignature is a minute old
    (tmp_path / "bare").mkdir()
    bare = saved(tmp_path / "bare", log, "T1", ("G1",))
    code, out = run(["dispute", str(bare), "--key", key, "--witness", witness], capsys)
    assert code == 1, out
    assert "witnessed" in out
