"""Table histories and disputes end to end: a live in-process service, ``rng-audit
table-history`` and ``rng-audit dispute`` against it, against a table-history file it saved and
against a full export, and what each says when an entry is missing or the store was edited.

The log (module fixture): table T1 has rounds G1..G9 (one spin each; G5 also voided by the
operator), table T2 rounds X1..X4 interleaved with them, so T1's chain runs through entries of
other tables; last, a lab batch naming table T2 and round X4.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from rng_service._proto.rng.v1 import log_pb2
from rng_service.cli.audit import main
from rng_service.errors import IntegrityError
from rng_service.process.app import StartupError
from rng_service.rpc.client import RngClient
from tests.integration.conftest import Running, make_config, start, wait_for_sample


@dataclass
class Log:
    tmp: Path
    target: str
    vkey: str
    export: Path
    db: Path
    running: Running
    indexes: dict[str, int]  # request id -> log index
    kept: str  # the checkpoint an auditor kept when exporting: it covers the export's end


TRUNCATION = "NOT CHECKED: truncation. No kept checkpoint (--checkpoint) and no checkpoint"


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def jsoned(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    code = main([*args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def fill(running: Running) -> dict[str, int]:
    """T1 rounds G1..G9 with T2 rounds X1..X4 between; G5 voided after G6; G6..G9 one
    session (a Touchdown Roulette game's downs, linked by their session id)."""
    indexes: dict[str, int] = {}
    for i in range(1, 10):
        session = "drive-1" if i >= 6 else ""
        reply = running.spin(f"g{i}", table_id="T1", round_id=f"G{i}", session_id=session)
        indexes[f"g{i}"] = reply.receipt.index
        if i % 2 == 0:
            reply = running.spin(f"x{i // 2}", table_id="T2", round_id=f"X{i // 2}")
            indexes[f"x{i // 2}"] = reply.receipt.index
        if i == 6:
            with RngClient(f"127.0.0.1:{running.port}") as client:
                void = client.void_round(
                    table_id="T1", round_id="G5", request_id="v5", reason="ball left the wheel"
                )
            indexes["void@v5"] = void.receipt.index
    # Last: a lab batch naming table T2 and round X4 (no slot of that round).
    with RngClient(f"127.0.0.1:{running.port}") as client:
        batch = client.batch(count=5, wheel="double_zero", request_id="lab-b1",
                             table_id="T2", round_id="X4")  # fmt: skip
    indexes["lab-b1"] = batch.receipt.index
    return indexes


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Log]:
    tmp = tmp_path_factory.mktemp("history")
    config = make_config(tmp)
    running = start(config)
    try:
        indexes = fill(running)
        target = f"127.0.0.1:{running.port}"
        export = tmp / "log.export"
        assert main(["export", "--target", target, "--out", str(export)]) == 0
        kept = tmp / "kept.checkpoint"
        kept.write_text(running.log.GetLatestCheckpoint(log_pb2.GetLatestCheckpointRequest()).note)
        yield Log(tmp, target, str(config.log.key_file) + ".vkey", export,
                  Path(config.storage.path), running, indexes, str(kept))  # fmt: skip
    finally:
        running.stop()


# -- table-history ---------------------------------------------------------------------------


def test_a_live_table_history_is_proven_complete(
    log: Log, capsys: pytest.CaptureFixture[str]
) -> None:
    """Live, on a format 3 log: every entry proven, and the chain walked back from the head the
    committed map proves: complete as of the checkpoint, exit 0."""
    code, out = run(["table-history", "--target", log.target, "--table", "T1", "--key", log.vkey],
                    capsys)  # fmt: skip
    assert code == 0, out
    assert out.startswith(
        "OK: the history of table 'T1' (client 'default') is complete from seq 1 to seq 10 as "
        "of checkpoint 15 (signed by test.example/log): 10 entries"
    ), out
    assert "each naming the one before as its predecessor, every one in the checkpoint of" in out
    assert "ROUND VOIDED by default: ball left the wheel" in out
    assert "seq 1 (log index 0) names no predecessor: it is the first entry" in out
    assert (
        f"the chain's head as of checkpoint 15 is seq 10 (log index {log.indexes['g9']}), proven "
        "by the map root signed in entry 14"
    ) in out
    code, report = jsoned(["table-history", "--target", log.target, "--table", "T1", "--from",
                           "3", "--to", "6", "--key", log.vkey], capsys)  # fmt: skip
    assert code == 0
    assert (report["first_seq"], report["last_seq"], report["complete"]) == (3, 6, True)
    assert (report["ok"], report["proven_complete"], report["not_checked"]) == (True, True, [])
    assert [e["seq"] for e in report["entries"]] == [3, 4, 5, 6]
    assert [e["round_id"] for e in report["entries"]] == ["G3", "G4", "G5", "G6"]
    # each entry's predecessor is the one listed before it, through T2's entries between
    entries = report["entries"]
    assert all(b["table_prev"] == a["index"] for a, b in itertools.pairwise(entries))
    assert log.indexes["x2"] in range(entries[1]["index"], entries[2]["index"])


def test_a_saved_history_verifies_offline_and_names_a_dropped_entry(
    log: Log, capsys: pytest.CaptureFixture[str]
) -> None:
    """--out on a format 3 log saves a table proof (rng-audit-table-proof/v1): checked again
    offline with the key alone, complete; with an entry dropped or changed, it fails."""
    saved = log.tmp / "t1.proof"
    code, out = run(["table-history", "--target", log.target, "--table", "T1", "--key", log.vkey,
                     "--out", str(saved)], capsys)  # fmt: skip
    assert code == 0, out
    code, out = run(["table-history", str(saved), "--key", log.vkey], capsys)
    assert code == 0, out
    assert "is complete from seq 1 to seq 10 as of checkpoint 15" in out
    lines = saved.read_text().splitlines(keepends=True)
    entry_of = {json.loads(line)["index"]: n for n, line in enumerate(lines) if n}
    g4 = log.indexes["g4"]  # seq 4

    def tampered(name: str, new: list[str]) -> str:
        path = log.tmp / name
        path.write_text("".join(new))
        return str(path)

    dropped = tampered("dropped.proof", [x for n, x in enumerate(lines) if n != entry_of[g4]])
    code, out = run(["table-history", dropped, "--key", log.vkey], capsys)
    assert code == 1, out
    assert (
        f"FAILED: the table 'T1' of client 'default' walked back from its committed head (log "
        f"index {log.indexes['g9']}, seq 10) needs seq 4 (log index {g4}), which the log did not "
        "give: the history is not complete"
    ) in out
    first = tampered("first.proof", [lines[0], *lines[2:]])
    code, out = run(["table-history", first, "--key", log.vkey], capsys)
    assert code == 1
    assert "needs seq 1 (log index 0)" in out
    last = tampered("last.proof", lines[:-1])
    code, out = run(["table-history", last, "--key", log.vkey], capsys)
    assert code == 1
    assert f"needs seq 10 (log index {log.indexes['g9']})" in out
    # an entry changed with its leaf hash: its proof no longer reaches the signed root
    record = json.loads(lines[3])
    data = base64.b64decode(record["entry"]).replace(b'"round_id":"G3"', b'"round_id":"G8"')
    record["entry"] = base64.b64encode(data).decode()
    record["leaf_hash"] = hashlib.sha256(b"\0" + data).hexdigest()
    forged = tampered("forged.proof", [*lines[:3], json.dumps(record) + "\n", *lines[4:]])
    code, out = run(["table-history", forged, "--key", log.vkey], capsys)
    assert code == 1
    assert "its inclusion proof does not verify" in out
    code, report = jsoned(["table-history", dropped, "--key", log.vkey], capsys)
    assert code == 1
    assert report["ok"] is False
    assert "needs seq 4" in report["failure"]


def test_against_an_export_the_chain_is_checked_first_and_names_the_break(
    log: Log, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--client", "default", "--table", "T1", "--key", log.vkey, "--checkpoint", log.kept]
    code, out = run(["table-history", "--against", str(log.export), *args], capsys)
    assert code == 0, out
    assert "complete from seq 1 to seq 10" in out
    assert "in the verified export" in out
    assert (
        "(15 entries, 2 checkpoints signed by test.example/log, consistent with 1 kept "
        "checkpoint(s); every chain followed)"
    ) in out
    assert "NOT CHECKED" not in out
    code, out = run(["verify", str(log.export), "--key", log.vkey], capsys)
    assert code == 4, out  # verified; no kept checkpoint, so truncation NOT CHECKED
    lines = log.export.read_text().splitlines(keepends=True)
    checkpoints = json.loads(lines[0])["checkpoints"]
    g7 = log.indexes["g7"]
    dropped = log.tmp / "dropped.export"
    dropped.write_text("".join(x for n, x in enumerate(lines) if n != 1 + checkpoints + g7))
    code, out = run(["table-history", "--against", str(dropped), *args], capsys)
    assert code == 1, out
    assert "broken after seq 7" in out  # the void of G5, logged after G6, is seq 7
    assert f"whose predecessor is log index {g7}): seq 8 is missing" in out
    # verify itself stops at the first renumbered line
    code, out = run(["verify", str(dropped), "--key", log.vkey], capsys)
    assert code == 1
    assert f"entry {g7} (line {2 + checkpoints + g7}): its index field is {g7 + 1}" in out


def _cut_back(log: Log) -> tuple[Path, Path]:
    """The export cut back to its oldest checkpoint (tree size 1: G1's spin only), newer
    entries and checkpoints dropped, self-consistent; and that checkpoint as a kept file (one
    that does not cover the full export's newest entry)."""
    lines = log.export.read_text().splitlines(keepends=True)
    head = json.loads(lines[0])
    notes = [json.loads(line)["note"] for line in lines[1 : 1 + head["checkpoints"]]]
    oldest = min(notes, key=lambda n: int(n.split("\n")[1]))
    size = int(oldest.split("\n")[1])
    assert size < head["tree_size"]
    head.update(tree_size=size, checkpoints=1)
    cut = log.tmp / "cut-back.export"
    cut.write_text("".join([
        json.dumps(head) + "\n",
        json.dumps({"type": "checkpoint", "published_at_ns": 1, "note": oldest}) + "\n",
        *lines[1 + len(notes) : 1 + len(notes) + size],
    ]))  # fmt: skip
    older = log.tmp / "older.checkpoint"
    older.write_text(oldest)
    return cut, older


@pytest.mark.parametrize("command", ["table-history", "dispute"])
def test_against_an_export_truncation_is_not_checked_without_a_covering_checkpoint(
    log: Log, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """docs/cli.md, convention 9: --against proves the answer in the export, but not that the
    log is no longer than the export (a later entry of the table, a later void of the round,
    could be past its end): without a kept checkpoint covering its newest entry, the answer
    names truncation NOT CHECKED and exits 4; with one, 0; an older kept checkpoint does not
    cover it (4); an export cut back below the kept checkpoint fails (1)."""
    what = ["--round", "G1"] if command == "dispute" else []
    args = [command, "--client", "default", "--table", "T1", *what, "--key", log.vkey]
    against = ["--against", str(log.export)]
    code, out = run([*args, *against], capsys)
    assert code == 4, out
    assert out.startswith("OK: "), out  # what it printed as OK is proven...
    last_line = out.rstrip().splitlines()[-1]  # ...and truncation, last, is not
    assert last_line.startswith(
        TRUNCATION + " cosigned by enough witnesses (--witness, --min-witnesses) covers the "
        "newest of the export's 15 entries"
    ), out
    code, report = jsoned([*args, *against], capsys)
    assert code == 4
    assert (report["ok"], report["proven_complete"]) == (False, False)
    assert len(report["not_checked"]) == 1
    assert report["not_checked"][0].startswith(TRUNCATION)
    # With the checkpoint the auditor kept when exporting: proven, exit 0.
    code, out = run([*args, *against, "--checkpoint", log.kept], capsys)
    assert code == 0, out
    assert "NOT CHECKED" not in out
    code, report = jsoned([*args, *against, "--checkpoint", log.kept], capsys)
    assert code == 0
    assert (report["ok"], report["proven_complete"], report["not_checked"]) == (True, True, [])
    cut, older = _cut_back(log)
    # A kept checkpoint older than the export's newest entry does not cover it.
    code, report = jsoned([*args, *against, "--checkpoint", str(older)], capsys)
    assert code == 4, report
    assert report["not_checked"][0].startswith(TRUNCATION)
    # The cut-back export alone answers with round G1 as the table's last: truncation NOT
    # CHECKED says so; against the kept checkpoint it fails.
    code, out = run([*args, "--against", str(cut)], capsys)
    assert code == 4, out
    assert "covers the newest of the export's 1 entries" in out
    code, out = run([*args, "--against", str(cut), "--checkpoint", log.kept], capsys)
    assert code == 1, out
    assert f"checkpoint file {log.kept} is for tree size 15, but the export" in out


# -- dispute ---------------------------------------------------------------------------------


def test_a_dispute_answered_from_the_live_service(
    log: Log, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--target", log.target, "--client", "default", "--key", log.vkey]
    code, out = run(["dispute", *args, "--table", "T1", "--round", "G3"], capsys)
    assert code == 0, out  # live, proven by the committed map: the table's whole chain walked
    assert out.startswith(
        "OK: these are all the outcomes of round 'G3' of table 'T1' (client 'default') as of "
        "checkpoint 15 (signed by test.example/log): 1 "
    ), out
    assert f"round 'G3': slots in order: spin (log index {log.indexes['g3']})" in out
    assert "voids: none (the round was not voided)" in out
    assert (
        f"Nothing of table 'T1' between the previous round ('G2', seq 2, log index "
        f"{log.indexes['g2']}) and the next round ('G4', seq 4, log index {log.indexes['g4']}) is "
        "missing: its chain runs unbroken from seq 2 to seq 4"
    ) in out
    # by request id, in JSON: the same round
    code, report = jsoned(["dispute", *args, "--request-id", "g3"], capsys)
    assert code == 0
    assert (report["ok"], report["proven_complete"], report["not_checked"]) == (True, True, [])
    assert report["table_id"] == "T1"
    assert [r["round_id"] for r in report["rounds"]] == ["G3"]
    assert report["previous"]["round_id"] == "G2"
    assert report["following"]["round_id"] == "G4"
    assert report["rounds"][0]["entries"][0]["index"] == log.indexes["g3"]


def test_a_dispute_of_several_rounds_with_a_void(
    log: Log, capsys: pytest.CaptureFixture[str]
) -> None:
    """Five consecutive rounds (a Touchdown Roulette game: the trigger spin and four downs)."""
    rounds = [x for r in ("G4", "G5", "G6", "G7", "G8") for x in ("--round", r)]
    args = ["--client", "default", "--table", "T1", *rounds, "--key", log.vkey]
    code, report = jsoned(["dispute", "--target", log.target, *args], capsys)
    assert code == 0, report
    assert [r["round_id"] for r in report["rounds"]] == ["G4", "G5", "G6", "G7", "G8"]
    g5 = report["rounds"][1]
    assert (g5["slots"], g5["voided"]) == (["spin", "void"], True)
    assert report["others_between"] == []
    assert (report["previous"]["round_id"], report["following"]["round_id"]) == ("G3", "G9")
    code, text = run(["dispute", "--target", log.target, *args], capsys)
    assert "the round was VOIDED at log index" in text
    # the same answer from the export, where every entry is found by its signed bytes
    kept = ["--checkpoint", log.kept]
    code, from_export = jsoned(["dispute", "--against", str(log.export), *args, *kept], capsys)
    assert code == 0
    assert (from_export["ok"], from_export["proven_complete"]) == (True, True)
    assert from_export["not_checked"] == []
    assert from_export["rounds"] == report["rounds"]
    for answer in (report, from_export):
        assert "the previous round ('G3', seq 3" in answer["chain"]
        assert "and the next round ('G9', seq 10" in answer["chain"]
    last = ["--client", "default", "--table", "T1", "--round", "G9", "--key", log.vkey, *kept]
    code, latest = jsoned(["dispute", "--against", str(log.export), *last], capsys)
    assert latest["following"] is None
    assert "the end of the table's chain in the export" in latest["chain"]


def test_a_dispute_by_session(log: Log, capsys: pytest.CaptureFixture[str]) -> None:
    """A session's rounds (G6..G9) without naming them: from the live service and the export;
    G5's void, logged between G6 and G7, is listed as another entry of the table between."""
    args = ["--client", "default", "--session", "drive-1", "--key", log.vkey]
    code, live = jsoned(["dispute", "--target", log.target, *args], capsys)
    assert code == 0, live
    assert live["table_id"] == "T1"
    assert live["sessions"] == ["drive-1"]
    assert [r["round_id"] for r in live["rounds"]] == ["G6", "G7", "G8", "G9"]
    assert [e["index"] for e in live["others_between"]] == [log.indexes["void@v5"]]
    assert live["previous"]["round_id"] == "G5"
    assert live["following"] is None
    code, text = run(["dispute", "--target", log.target, *args], capsys)
    assert code == 0
    assert "OK: these are all the outcomes of rounds 'G6', 'G7', 'G8', 'G9' (session " in text
    assert "round G7  session drive-1  slot spin  roulette_spin: " in text
    code, from_export = jsoned(["dispute", "--against", str(log.export), *args, "--checkpoint",
                                log.kept], capsys)  # fmt: skip
    assert code == 0, from_export
    assert from_export["rounds"] == live["rounds"]
    code, out = run(["dispute", "--target", log.target, "--client", "default", "--session",
                     "no-such", "--key", log.vkey], capsys)  # fmt: skip
    assert code == 1
    assert "session 'no-such' of client 'default' has no entry in the log" in out


def test_usage_errors(log: Log, capsys: pytest.CaptureFixture[str]) -> None:
    for args, message in (
        (["dispute", "--client", "c", "--round", "G1", "--table", "T1"], "give one of: a table"),
        (["dispute", "--target", log.target, "--client", "c", "--table", "T1"], "--round"),
        (["dispute", "--target", log.target, "--client", "c", "--round", "G1"], "--round needs"),
        (["table-history", "--table", "T1"], "give one of: a table-history FILE"),
        (["table-history", "--against", str(log.export), "--table", "T1"], "--client is needed"),
        (["table-history", "--target", log.target, "--table", "T1", "--from", "0"], "--from"),
    ):
        code, out = run([*args, "--key", log.vkey], capsys)
        assert code == 2, (args, out)
        assert message in out
        assert "Traceback" not in out


def test_the_cli_conventions(log: Log, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/cli.md: mTLS options before or after the command, --verifier-key, --out checked
    before anything is fetched, an unreachable service is exit 2 with a hint, nothing on
    stderr (no progress) when it is not a terminal, and --json on stdout only."""
    calls = {"method": "GetTableHistory", "code": "OK", "cause": "ok", "class": "ok"}
    registry = log.running.service.registry

    def history_calls() -> float:
        return registry.get_sample_value("rng_rpc_duration_seconds_count", calls) or 0.0

    table = ["--table", "T1", "--verifier-key", log.vkey]
    for args in (
        ["--ca", "ca.pem", "table-history", "--target", log.target, *table],
        ["table-history", "--target", log.target, *table, "--ca", "ca.pem"],
    ):
        code, out = run(args, capsys)
        assert code == 2, out
        assert "--cert, --tls-key needed too" in out
    before = history_calls()
    missing = log.tmp / "no-such-dir" / "t1.history"
    code, out = run(["table-history", "--target", log.target, *table, "--out", str(missing)],
                    capsys)  # fmt: skip
    assert code == 2, out
    assert f"--out {missing}: directory {missing.parent} does not exist" in out
    assert history_calls() == before  # nothing was fetched
    code, out = run(["dispute", "--target", "127.0.0.1:1", "--client", "default", "--table",
                     "T1", "--round", "G1", "--verifier-key", log.vkey], capsys)  # fmt: skip
    assert code == 2, out
    assert "hint: nothing accepts connections at that address" in out
    for args in (
        ["table-history", "--against", str(log.export), "--client", "default", *table,
         "--checkpoint", log.kept],
        ["dispute", "--against", str(log.export), "--client", "default", "--table", "T1",
         "--round", "G2", "--verifier-key", log.vkey, "--checkpoint", log.kept],
    ):  # fmt: skip
        assert main([*args, "--json"]) == 0
        captured = capsys.readouterr()
        assert captured.err == ""
        assert json.loads(captured.out)["ok"] is True


# -- an edited store: every lookup that touches the row says so --------------------------------


@pytest.fixture
def damaged(tmp_path: Path) -> Iterator[tuple[Running, Path, dict[str, int]]]:
    config = make_config(tmp_path)
    running = start(config)
    try:
        yield running, Path(config.storage.path), fill(running)
    finally:
        running.stop()


def sql(db: Path, statement: str, *params: object) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(statement, params)
    conn.close()


def test_a_rewritten_round_column_is_flagged_by_every_lookup(
    damaged: tuple[Running, Path, dict[str, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    running, db, indexes = damaged
    g4 = indexes["g4"]
    sql(db, "UPDATE entries SET table_id = 'T6', round_id = 'R999' WHERE idx = ?", g4)
    target = f"127.0.0.1:{running.port}"
    # The lookup by the rewritten columns returns the row: DATA_LOSS naming it and both values.
    with pytest.raises(grpc.RpcError) as info:
        running.log.FindEntries(log_pb2.FindEntriesRequest(table_id="T6", round_id="R999"))
    assert info.value.code() == grpc.StatusCode.DATA_LOSS
    assert (
        f"entry {g4}: the store's lookup columns say table_id 'T6', round_id 'R999', but the "
        "entry's signed bytes say table_id 'T1', round_id 'G4'"
    ) in (info.value.details() or "")
    # The lookup by the true round finds nothing (that is what the column edit hides) ...
    hidden = running.log.FindEntries(log_pb2.FindEntriesRequest(table_id="T1", round_id="G4"))
    assert list(hidden.entries) == []
    # ... but T1's chain misses seq 4 in the store's index: counted (check chain), and the
    # history is served walked back from the committed head, G4's entry included.
    reply = running.log.GetTableHistory(log_pb2.GetTableHistoryRequest(table_id="T1"))
    assert g4 in [e.index for e in reply.entries]
    vkey = str(db.parent / "key.pem.vkey")
    code, out = run(["dispute", "--target", target, "--client", "default", "--table", "T1",
                     "--round", "G4", "--key", vkey], capsys)  # fmt: skip
    assert code == 0, out  # G4's spin, found by its signed bytes in the committed chain
    assert f"round 'G4': slots in order: spin (log index {g4})" in out
    code, out = run(["table-history", "--target", target, "--table", "T1", "--key", vkey], capsys)
    assert code == 0, out
    assert "is complete from seq 1 to seq 10" in out
    for method, check, count in (("FindEntries", "columns", 1), ("GetTableHistory", "chain", 3)):
        labels = {"method": method, "check": check}
        assert wait_for_sample(
            running, "rng_log_integrity_errors_total", labels, at_least=count
        ) == (count)


def test_a_deleted_row_fails_get_entries_and_the_export(
    damaged: tuple[Running, Path, dict[str, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    running, db, indexes = damaged
    sql(db, "DELETE FROM entries WHERE idx = ?", indexes["g2"])
    with pytest.raises(grpc.RpcError) as info:
        running.log.GetEntries(log_pb2.GetEntriesRequest(start=0))
    assert info.value.code() == grpc.StatusCode.DATA_LOSS
    assert f"entry {indexes['g2']} is missing from the log store (the next stored entry is " in (
        info.value.details() or ""
    )
    out_file = db.parent / "gap.export"
    code, out = run(["export", "--target", f"127.0.0.1:{running.port}", "--out", str(out_file)],
                    capsys)  # fmt: skip
    assert code == 1, out
    assert "DATA_LOSS" in out
    assert not out_file.exists()
    assert wait_for_sample(running, "rng_log_integrity_errors_total",
                           {"method": "GetEntries", "check": "gap"}) == 2.0  # fmt: skip


def test_entries_come_with_proofs_in_one_stated_tree(log: Log) -> None:
    from rng_service.log import merkle
    from rng_service.log.note import Checkpoint, parse_note

    stub = log.running.log
    size = 10
    for reply in (
        stub.GetEntries(log_pb2.GetEntriesRequest(start=2, end=8, tree_size=size)),
        stub.FindEntries(
            log_pb2.FindEntriesRequest(client="default", table_id="T1", tree_size=size)
        ),
        stub.GetTableHistory(log_pb2.GetTableHistoryRequest(table_id="T1", tree_size=size)),
    ):
        assert reply.tree_size == size
        checkpoint = Checkpoint.parse(parse_note(reply.checkpoint.encode()).text)
        assert checkpoint.size == size
        assert reply.entries
        for e in reply.entries:
            assert e.index < size
            merkle.verify_inclusion(
                e.leaf_hash, e.index, size, list(e.inclusion_proof), checkpoint.root_hash
            )
    bare = stub.GetEntries(log_pb2.GetEntriesRequest(start=0, omit_proofs=True))
    assert all(not e.inclusion_proof for e in bare.entries)
    found = stub.FindEntries(log_pb2.FindEntriesRequest(client="default", request_id="g5"))
    assert [e.index for e in found.entries] == [log.indexes["g5"]]
    with pytest.raises(grpc.RpcError) as info:
        stub.FindEntries(log_pb2.FindEntriesRequest(request_id="g5"))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (info.value.details() or "").startswith("request_id: needs client")
    with pytest.raises(grpc.RpcError) as info:
        stub.GetTableHistory(log_pb2.GetTableHistoryRequest(table_id="T1", tree_size=10**6))
    assert info.value.code() == grpc.StatusCode.OUT_OF_RANGE


def test_the_python_client_reads_histories_and_lookups(log: Log) -> None:
    """RngClient's plain-value methods: the answer verifies with rng_service.audit alone."""
    from rng_service.audit import open_head
    from rng_service.audit.history import ProvenItem, check_history, prove_entries
    from rng_service.log.note import NoteVerifier

    keys = [NoteVerifier.from_verifier_key(Path(log.vkey).read_text().strip())]
    with RngClient(log.target) as client:
        page = client.table_history("T1", first_seq=2, last_seq=4)
        found = client.find_entries(client="default", table_id="T2", round_id="X3")
    head = open_head(page["checkpoint"], keys, source="GetTableHistory", origin=None)
    items = [
        ProvenItem(e["index"], e["entry"], e["leaf_hash"], tuple(e["inclusion_proof"]))
        for e in page["entries"]
    ]
    report = check_history(
        prove_entries(items, head), client=page["client"], table_id="T1", first_seq=2, last_seq=4
    )
    assert [e.round_id for e in report.entries] == ["G2", "G3", "G4"]
    assert [e["index"] for e in found["entries"]] == [log.indexes["x3"]]
    assert found["truncated"] is False


# -- live answers claim only what they prove (issue 34, break 4) -------------------------------


def _sql(db: Path, statement: str, *params: object) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(statement, params)
    conn.close()


@pytest.mark.parametrize("column", ["round_id", "client_id"])
def test_a_live_dispute_never_claims_all_the_outcomes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str
) -> None:
    """Round R4's spin, then spins of later rounds on its table; R4's stored round_id (or
    client_id) column changed while the service runs, and R4 spun again under a new request
    id: it is drawn (the sequencer finds no row of R4). The signed log holds two spins of R4,
    the live lookup one: the live dispute must not say "all the outcomes" nor exit 0. It
    reads the table's whole chain and fails on the edited row (exit 1); against a full export
    the dispute finds both spins by their signed bytes and exits 0 only if it proves the
    answer."""
    config = make_config(tmp_path)
    running = start(config)
    target = f"127.0.0.1:{running.port}"
    vkey = str(config.log.key_file) + ".vkey"
    try:
        first = running.spin("r4", table_id="T5", round_id="R4").receipt.index
        for r in ("R5", "R6"):
            running.spin(r.lower(), table_id="T5", round_id=r)
        _sql(Path(config.storage.path), f"UPDATE entries SET {column} = 'moved' WHERE idx = ?",
             first)  # fmt: skip
        again = running.spin("r4-again", table_id="T5", round_id="R4").receipt.index
        assert again > first  # drawn twice: what the live dispute cannot see
        args = ["dispute", "--target", target, "--client", "default", "--table", "T5",
                "--round", "R4", "--key", vkey]  # fmt: skip
        code, out = run(args, capsys)
        # The live dispute reads T5's whole committed chain by the signed bytes: it finds both
        # spins of R4 and fails on the slot filled twice, where it once answered FOUND with one
        assert code == 1, out
        assert "OK" not in out
        assert "all the outcomes" not in out
        assert (
            f"round 'R4' of table 'T5' (client 'default') has its slot 'spin' filled twice: log "
            f"index {first} and log index {again}"
        ) in out
        code, report = jsoned(args, capsys)
        assert code == 1
        assert report["ok"] is False
        export = tmp_path / "log.export"
        assert main(["export", "--target", target, "--out", str(export)]) == 1  # the edited row
        capsys.readouterr()
    finally:
        running.stop()
    # The export of the store (read without the service's row checks) proves what the signed
    # bytes say: verifying it names the double draw, so the dispute against it cannot pass.
    export = tmp_path / "db.export"
    assert main(["export", "--db", config.storage.path.as_posix(), "--out", str(export)]) == 0
    code, out = run(["dispute", "--against", str(export), "--client", "default", "--table",
                     "T5", "--round", "R4", "--key", vkey], capsys)  # fmt: skip
    assert code == 1, out
    assert f"which entry {first} already filled: a game event was drawn twice" in out


def test_a_live_table_history_never_claims_complete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Table T7's newest round (H3, seq 3) hidden by its table_id column while no service
    runs, after a start recorded it as verified (issue 34's break 4). The service no longer
    takes T7's head from the columns: its start refuses the edited store (the committed map of
    table heads disagrees with the columns), so H3 cannot be spun again and nothing is served;
    a full export of the store proves T7's history complete, seq 1 to 3."""
    config = make_config(tmp_path)
    db = Path(config.storage.path)
    vkey = str(config.log.key_file) + ".vkey"
    running = start(config)
    try:
        chain = [running.spin(f"h{i}", table_id="T7", round_id=f"H{i}").receipt.index
                 for i in (1, 2, 3)]  # fmt: skip
        kept = tmp_path / "kept.checkpoint"
        kept.write_text(running.log.GetLatestCheckpoint(log_pb2.GetLatestCheckpointRequest()).note)
    finally:
        running.stop()
    start(config).stop()  # records the checkpoint of size 3 as verified
    _sql(db, "UPDATE entries SET table_id = 'T7x' WHERE idx = 2")
    with pytest.raises((StartupError, IntegrityError), match="table_id 'T7x'"):
        start(config)
    export = tmp_path / "db.export"
    assert main(["export", "--db", db.as_posix(), "--out", str(export)]) == 0
    capsys.readouterr()
    code, report = jsoned(["table-history", "--against", str(export), "--client", "default",
                           "--table", "T7", "--key", vkey, "--checkpoint", str(kept)],
                          capsys)  # fmt: skip
    assert code == 0, report
    assert [e["index"] for e in report["entries"]] == chain


def test_a_dispute_names_lab_entries_of_the_round_apart(
    log: Log, capsys: pytest.CaptureFixture[str]
) -> None:
    """A DrawBatch naming the round's table and round id fills no slot of it: the dispute lists
    the round's own spin as its outcome and the batch apart (docs/outcomes-api.md)."""
    args = ["--client", "default", "--table", "T2", "--round", "X4", "--key", log.vkey,
            "--checkpoint", log.kept]  # fmt: skip
    code, report = jsoned(["dispute", "--against", str(log.export), *args], capsys)
    assert code == 0, report
    (x4,) = report["rounds"]
    assert x4["slots"] == ["spin"]
    assert [e["index"] for e in x4["entries"]] == [log.indexes["x4"]]
    assert [(e["index"], e["slot"]) for e in x4["lab_entries"]] == [
        (log.indexes["lab-b1"], "lab/lab-b1")
    ]
    code, text = run(["dispute", "--against", str(log.export), *args], capsys)
    assert code == 0, text
    assert "these are all the outcomes of round 'X4' of table 'T2' (client 'default'): 1 entry" in (
        text
    )
    assert f"round 'X4': slots in order: spin (log index {log.indexes['x4']})" in text
    assert "not among its slots: 1 lab entry naming this table and round id" in text
