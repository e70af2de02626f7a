"""A log written by release 1 (entry format 1, SQLite schema 1), upgraded by this release.

The fixture (tests/vectors/v1_log/, made once by the code of commit 54081de with
make_v1_log.py) holds nine format-1 entries, among them a round spun twice under two request
ids (which format 1 allowed), a Fire Number -> spin -> bonus round, and a round with Fire
Numbers but no spin yet. This release refuses to serve the old database until it is migrated
(``rng-service migrate-store``); then the old rounds keep their outcomes (a format-1 entry fills
the slot of its kind), new entries are format 2 with table chains that start at the first of
them, and ``rng-audit verify`` accepts the whole log, consistent with the old checkpoints.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path

import grpc
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service._proto.rng.v1 import common_pb2, log_pb2, outcomes_pb2
from rng_service.cli.audit import main as audit_main
from rng_service.cli.service import main as cli_main
from rng_service.config import Config, load_config
from rng_service.log.entry import LogEntry
from rng_service.log.table_map import MapHead, map_root
from rng_service.process.app import Service, StartupError
from rng_service.writer import sequencer as sequencer_module
from tests.fakes import CounterEntropy
from tests.integration.conftest import Running, start

FIXTURE = Path(__file__).resolve().parents[1] / "vectors" / "v1_log"
KEY_SEED = b"rng-service v1 log fixture key!!"  # make_v1_log.py's test-only key
VKEY = (FIXTURE / "verifier.vkey").read_text().strip()
SZ = outcomes_pb2.WHEEL_TYPE_SINGLE_ZERO
DZ = outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO


def _config_file(tmp: Path) -> Path:
    shutil.copyfile(FIXTURE / "log.sqlite3", tmp / "log.sqlite3")
    (tmp / "key.pem").write_bytes(
        Ed25519PrivateKey.from_private_bytes(KEY_SEED).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path = tmp / "config.toml"
    path.write_text(
        f'[storage]\npath = "{tmp / "log.sqlite3"}"\n'
        f'[log]\nkey_file = "{tmp / "key.pem"}"\nkey_name = "v1-fixture.example/log"\n'
        'origin = "v1-fixture.example/log"\n[profiles]\nallow_examples = true\n'
    )
    return path


def _config(path: Path) -> Config:
    environ = {"RNG_SERVICE__SERVER__PORT": "0", "RNG_SERVICE__METRICS__PORT": "0"}
    return load_config(path, environ=environ, base_dir=path.parent)


def _schema_of(db: Path) -> tuple[str, set[str], bool]:
    """A log database's schema version, which of the entry columns of schema 2 it has, and
    whether it has the cosignature table of schema 3 (read with sqlite3, not the driver)."""
    raw = sqlite3.connect(db)
    try:
        version = raw.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        columns = {r[1] for r in raw.execute("PRAGMA table_info('entries')")}
        tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        raw.close()
    return bytes(version[0]).decode(), columns & {"slot", "table_seq"}, "cosignatures" in tables


def _spin(r: Running, rid: str, round_id: str, wheel: int = DZ, table: str = "T1") -> object:
    return r.spin(rid, wheel=wheel, table_id=table, round_id=round_id)


def _refused(call: object) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()  # type: ignore[operator]
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION, info.value.details()
    return info.value


def test_the_release_1_export_verifies(capsys: pytest.CaptureFixture[str]) -> None:
    assert audit_main(["verify", str(FIXTURE / "export.jsonl"), "--key", VKEY]) == 4  # no kept
    out = capsys.readouterr().out
    assert out.startswith("OK: 9 entries of v1-fixture.example/log")
    assert "format 2" not in out  # no format-2 entry in it
    header = json.loads((FIXTURE / "export.jsonl").read_text().splitlines()[0])
    assert header["format"] == "rng-audit-export/v1"


def test_a_release_1_log_upgraded_keeps_its_rounds_and_verifies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _config_file(tmp_path)
    service = Service(_config(path), entropy=CounterEntropy())
    with pytest.raises(StartupError, match=r"schema version 1.*migrate-store"):
        asyncio.run(service.start())
    asyncio.run(service.stop(0))  # releases the log's lock, as the process's exit would
    assert cli_main(["migrate-store", "--config", str(path)]) == 0
    # Every step in one run: 2 (round slots, table chains), 3 (witness cosignatures), 4 (the
    # table map: no rows, format 1 entries are in no chain).
    assert (
        "migrated from schema version 1 to 4 (its 9 entries are unchanged); the table map holds "
        "0 chains, checked against the signed entries at the next start"
    ) in capsys.readouterr().out
    assert _schema_of(tmp_path / "log.sqlite3") == ("4", {"slot", "table_seq"}, True)
    assert cli_main(["migrate-store", "--config", str(path)]) == 0
    assert "already at schema version 4" in capsys.readouterr().out

    r = start(_config(path))
    try:
        # Never under a running service: it owns the log's lock.
        assert cli_main(["migrate-store", "--config", str(path)]) == 2
        assert "stop the service before migrating its log" in capsys.readouterr().err
        # Round T1/R1 was spun twice under format 1: it is filled by its first spin.
        err = _refused(lambda: _spin(r, "after-upgrade", "R1"))
        assert "slot 'spin' is already filled by request 'spin-1' at log index 0" in (
            err.details() or ""
        )
        # A retry from before the upgrade still gets its logged (format 1) outcome.
        replay = _spin(r, "spin-1", "R1")
        assert replay.receipt.replayed  # type: ignore[attr-defined]
        assert LogEntry.decode(replay.receipt.entry).version == 1  # type: ignore[attr-defined]
        # Round T1/R2 had its bonus game: not another.
        err = _refused(
            lambda: r.outcomes.PlayMegaFireBlazeBonus(
                outcomes_pb2.PlayMegaFireBlazeBonusRequest(
                    context=common_pb2.RequestContext(
                        table_id="T1", round_id="R2", request_id="bonus-again"
                    ),
                    profile="mega_fire_blaze_example",
                ),
                timeout=30,
            )
        )
        assert "slot 'bonus' is already filled by request 'bonus-2'" in (err.details() or "")
        # Round T1/R4 has format-1 Fire Numbers: its spin is on a single zero wheel.
        err = _refused(lambda: _spin(r, "r4-dz", "R4"))
        assert "617b.7(a)" in (err.details() or "")
        r4 = LogEntry.decode(_spin(r, "r4-sz", "R4", SZ).receipt.entry)  # type: ignore[attr-defined]
        later = LogEntry.decode(_spin(r, "new-1", "R10").receipt.entry)  # type: ignore[attr-defined]
        other = LogEntry.decode(  # type: ignore[attr-defined]
            _spin(r, "new-2", "R10", table="T2").receipt.entry  # type: ignore[attr-defined]
        )
        # Format 3 from here; each table's chain starts at its first new entry, and each
        # entry carries the table map's root after it (the reference, from the definition).
        assert [(e.version, e.index, e.slot, e.table_seq, e.table_prev) for e in
                (r4, later, other)] == [(3, 9, "spin", 1, None), (3, 10, "spin", 2, 9),
                                       (3, 11, "spin", 1, None)]  # fmt: skip
        c = r4.client
        assert [e.table_map for e in (r4, later, other)] == [
            map_root([MapHead(c, "T1", 9, 1)]),
            map_root([MapHead(c, "T1", 10, 2)]),
            map_root([MapHead(c, "T1", 10, 2), MapHead(c, "T2", 11, 1)]),
        ]
        export = tmp_path / "upgraded.jsonl"
        target = f"127.0.0.1:{r.port}"
        assert audit_main(["export", "--target", target, "--out", str(export)]) == 0
    finally:
        r.stop()
    capsys.readouterr()
    # The whole log verifies, and is consistent with the checkpoints release 1 signed.
    old = [json.loads(line) for line in (FIXTURE / "export.jsonl").read_text().splitlines()]
    kept = tmp_path / "release-1-checkpoint.txt"
    kept.write_text(old[2]["note"])  # its newest: tree size 9
    # release 1's newest checkpoint (9) does not cover entries 9-11: truncation NOT CHECKED
    assert audit_main(["verify", str(export), "--key", VKEY, "--checkpoint", str(kept)]) == 4
    out = capsys.readouterr().out
    assert out.startswith("OK: 12 entries of v1-fixture.example/log")
    # this release writes format 3 straight after the release-1 entries
    assert "entries 0 to 8 are of entry format 1; format 3 (slots, table chains and committed " \
        "table map roots) from entry 9 on" in out  # fmt: skip
    assert json.loads(export.read_text().splitlines()[0])["format"] == "rng-audit-export/v3"


def release_2_log(path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    """The log of the release before witnessing (schema 2, entry format 2): the release-1
    fixture migrated, then one format-2 spin (round R20 of T1) written; the tables of the later
    schemas dropped and the version set back to 2, as that release left the database (its
    entries, nodes and checkpoints are the same bytes). Returns the spin's answer."""
    db = path.parent / "log.sqlite3"
    assert cli_main(["migrate-store", "--config", str(path)]) == 0
    monkeypatch.setattr(sequencer_module, "WRITE_VERSION", 2)
    r = start(_config(path))
    try:
        first = _spin(r, "v2-spin", "R20")
    finally:
        r.stop()
    monkeypatch.undo()
    assert LogEntry.decode(first.receipt.entry).version == 2  # type: ignore[attr-defined]
    raw = sqlite3.connect(db, isolation_level=None)
    raw.execute("DROP TABLE table_map")
    raw.execute("DROP TABLE cosignatures")
    raw.execute("UPDATE meta SET value = CAST('2' AS BLOB) WHERE key = 'schema_version'")
    raw.close()
    return first


def test_a_schema_2_log_is_brought_to_4_by_migrate_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A log of the release before witnessing (schema 2: the release-1 fixture migrated by that
    release's steps, then format-2 entries written) gets schema 4 from migrate-store alone,
    and its table chains in the table map; the next entry is format 3."""
    path = _config_file(tmp_path)
    db = tmp_path / "log.sqlite3"
    first = release_2_log(path, monkeypatch)
    capsys.readouterr()
    assert _schema_of(db) == ("2", {"slot", "table_seq"}, False)

    service = Service(_config(path), entropy=CounterEntropy())
    with pytest.raises(StartupError, match=r"schema version 2.*migrate-store"):
        asyncio.run(service.start())
    asyncio.run(service.stop(0))
    assert _schema_of(db) == ("2", {"slot", "table_seq"}, False)  # refusing changed nothing
    assert cli_main(["migrate-store", "--config", str(path)]) == 0
    assert (
        "migrated from schema version 2 to 4 (its 10 entries are unchanged); the table map holds "
        "1 chain, checked"
    ) in capsys.readouterr().out
    assert _schema_of(db) == ("4", {"slot", "table_seq"}, True)
    r = start(_config(path))
    try:
        replay = _spin(r, "v2-spin", "R20")  # the schema-2 entry is still the round's spin
        assert replay.receipt.replayed  # type: ignore[attr-defined]
        assert replay.receipt.entry == first.receipt.entry  # type: ignore[attr-defined]
        err = _refused(lambda: _spin(r, "v2-again", "R20"))
        assert "slot 'spin' is already filled by request 'v2-spin' at log index 9" in (
            err.details() or ""
        )
        # Served from the new table (empty: no witnesses configured): the plain checkpoint.
        latest = r.log.GetLatestCheckpoint(log_pb2.GetLatestCheckpointRequest(), timeout=30)
        assert latest.size == 10
        assert len(latest.note.split("\n\n", 1)[1].splitlines()) == 1  # the log's signature
        # The first format 3 entry: the chain continues from the format 2 head, and its root
        # commits to the map of both (from the definition, not the writer's map).
        nxt = LogEntry.decode(_spin(r, "v3-spin", "R21").receipt.entry)  # type: ignore[attr-defined]
        v2 = LogEntry.decode(first.receipt.entry)  # type: ignore[attr-defined]
        assert (nxt.version, nxt.index, nxt.table_seq, nxt.table_prev) == (3, 10, 2, 9)
        assert nxt.table_map == map_root([MapHead(v2.client, "T1", 10, 2)])
        export = tmp_path / "upgraded.jsonl"
        assert audit_main(["export", "--target", f"127.0.0.1:{r.port}", "--out", str(export)]) == 0
    finally:
        r.stop()
    capsys.readouterr()
    assert audit_main(["verify", str(export), "--key", VKEY]) == 4  # no kept checkpoint
    assert capsys.readouterr().out.startswith("OK: 11 entries of v1-fixture.example/log")


def test_a_live_answer_on_a_log_without_a_map_names_completeness_not_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A log whose newest entry is format 2 has no committed map of table heads: a live
    table-history or dispute proves every entry it shows, names that none is missing NOT
    CHECKED (text and ``"not_checked"``) and exits 4; once a format 3 entry commits the map,
    the same question is proven whole: exit 0, nothing NOT CHECKED (docs/cli.md, 9)."""
    path = _config_file(tmp_path)
    first = release_2_log(path, monkeypatch)
    client = LogEntry.decode(first.receipt.entry).client  # type: ignore[attr-defined]
    assert cli_main(["migrate-store", "--config", str(path)]) == 0
    capsys.readouterr()
    r = start(_config(path))
    try:
        target = f"127.0.0.1:{r.port}"
        history = ["table-history", "--target", target, "--client", client, "--table", "T1",
                   "--key", VKEY]  # fmt: skip
        dispute = ["dispute", "--target", target, "--client", client, "--table", "T1",
                   "--round", "R20", "--key", VKEY]  # fmt: skip
        for argv, what in ((history, "of this table's history"), (dispute, "of these rounds")):
            line = f"NOT CHECKED: that no entry {what} is missing."
            assert audit_main(argv) == 4
            out = capsys.readouterr().out
            assert out.startswith("FOUND: ")
            assert out.rstrip().splitlines()[-1].startswith(line)
            assert audit_main([*argv, "--json"]) == 4
            report = json.loads(capsys.readouterr().out)
            assert (report["ok"], report["proven_complete"]) == (False, False)
            assert [n[: len(line)] for n in report["not_checked"]] == [line]
        _spin(r, "v3-spin", "R21")  # format 3: the map of table heads is committed
        for argv in (history, dispute):
            assert audit_main([*argv, "--json"]) == 0
            report = json.loads(capsys.readouterr().out)
            assert (report["ok"], report["not_checked"]) == (True, [])
            assert audit_main(argv) == 0
            out = capsys.readouterr().out
            assert out.startswith("OK: ")
            assert "NOT CHECKED" not in out
    finally:
        r.stop()
