"""Live table histories and disputes proven complete by the committed map of table heads
(issue 40): a real in-process service writing entry format 3, ``rng-audit table-history`` and
``rng-audit dispute`` against it, a saved proof file checked offline, and the done-when of
issue 40: after an edit of the store's columns, map rows or nodes (the edits of issue 34's
break 4, a hidden table head), before and after a restart, a live answer either proves the
signed truth or fails: exit status 0 only with every signed entry listed.

The signed truth of each scenario is what the service acknowledged (the receipts' indexes),
not what a lookup answers.
"""

from __future__ import annotations

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
from rng_service.config import Config
from rng_service.errors import IntegrityError
from rng_service.process.app import StartupError
from tests.integration.conftest import Running, make_config, start, wait_for_sample

REFUSED = (StartupError, IntegrityError)
"""A start the store check refused (an edited store): nothing is served, which is a failure
of the kind the done-when allows."""


@dataclass
class Log:
    tmp: Path
    config: Config
    running: Running
    target: str
    vkey: str
    t1: list[int]  # T1's entries (rounds G1..G6), in order
    t2: list[int]  # T2's (X1..X3)


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def jsoned(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out else {}


def sql(db: Path, statement: str, *params: object) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(statement, params)
    conn.close()


def spun(running: Running, request_id: str, table: str, round_id: str) -> int | None:
    """The index of a spin, or None if the service refused it (nothing logged)."""
    try:
        return int(running.spin(request_id, table_id=table, round_id=round_id).receipt.index)
    except grpc.RpcError:
        return None


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Log]:
    tmp = tmp_path_factory.mktemp("proofs")
    config = make_config(tmp)
    running = start(config)
    try:
        t1, t2 = [], []
        for i in range(1, 7):
            t1.append(running.spin(f"g{i}", table_id="T1", round_id=f"G{i}").receipt.index)
            if i % 2 == 0:
                t2.append(running.spin(f"x{i}", table_id="T2", round_id=f"X{i // 2}")
                          .receipt.index)  # fmt: skip
        yield Log(tmp, config, running, f"127.0.0.1:{running.port}",
                  str(config.log.key_file) + ".vkey", t1, t2)  # fmt: skip
    finally:
        running.stop()


# -- proven answers ------------------------------------------------------------------------


def test_a_live_table_history_is_proven_complete(
    log: Log, capsys: pytest.CaptureFixture[str]
) -> None:
    size = log.t1[-1] + 1 if log.t1[-1] > log.t2[-1] else log.t2[-1] + 1
    args = ["table-history", "--target", log.target, "--table", "T1", "--key", log.vkey]
    code, out = run(args, capsys)
    assert code == 0, out
    assert out.startswith(
        f"OK: the history of table 'T1' (client 'default') is complete from seq 1 to seq 6 as "
        f"of checkpoint {size} (signed by "
    ), out
    assert (
        f"the chain's head as of checkpoint {size} is seq 6 (log index {log.t1[-1]}), proven by "
        f"the map root signed in entry {size - 1}"
    ) in out
    code, report = jsoned([*args, "--from", "3", "--to", "4"], capsys)
    assert code == 0
    assert (report["ok"], report["proven_complete"], report["complete"]) == (True, True, True)
    assert [e["index"] for e in report["entries"]] == log.t1[2:4]
    assert report["head"] == {"index": log.t1[-1], "seq": 6}


def test_a_proven_absence(log: Log, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["table-history", "--target", log.target, "--table", "T-none", "--key",
                     log.vkey], capsys)  # fmt: skip
    assert code == 0, out
    assert out.startswith("OK: table 'T-none' has no entries (client 'default') as of checkpoint")
    code, report = jsoned(["table-history", "--target", log.target, "--table", "T-none",
                           "--client", "someone-else", "--key", log.vkey], capsys)  # fmt: skip
    assert code == 0
    assert (report["ok"], report["entries"], report["head"]) == (True, [], None)


def test_a_live_dispute_is_proven_and_saved_for_offline_checking(
    log: Log, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = log.tmp / "g3.proof"
    args = ["--client", "default", "--table", "T1", "--round", "G3", "--key", log.vkey]
    code, out = run(["dispute", "--target", log.target, *args, "--out", str(saved)], capsys)
    assert code == 0, out
    assert out.startswith(
        "OK: these are all the outcomes of round 'G3' of table 'T1' (client 'default') as of "
        "checkpoint"
    ), out
    assert f"the table's whole chain (seq 1 to 6) was walked back from its committed head (log " \
           f"index {log.t1[-1]})" in out  # fmt: skip
    header = json.loads(saved.read_text().splitlines()[0])
    assert header["format"] == "rng-audit-table-proof/v1"
    assert header["map"]["terminal"] == "present"
    # offline, with the key alone: the saved round, and another round of the same chain
    code, out = run(["dispute", str(saved), "--key", log.vkey], capsys)
    assert code == 0, out
    assert "OK: these are all the outcomes of round 'G3'" in out
    assert f"(saved in {saved})" in out
    code, report = jsoned(["dispute", str(saved), "--round", "G5", "--key", log.vkey], capsys)
    assert code == 0
    assert [e["index"] for e in report["rounds"][0]["entries"]] == [log.t1[4]]
    # the same file read as a table history
    code, out = run(["table-history", str(saved), "--key", log.vkey], capsys)
    assert code == 0, out
    assert "is complete from seq 1 to seq 6" in out
    # a map proof that does not verify: exit 1
    lines = saved.read_text().splitlines(keepends=True)
    bad = json.loads(lines[0])
    sibling = bad["map"]["siblings"][0]
    bad["map"]["siblings"][0] = ("0" if sibling[0] != "0" else "1") + sibling[1:]
    forged = log.tmp / "forged.proof"
    forged.write_text(json.dumps(bad) + "\n" + "".join(lines[1:]))
    code, out = run(["dispute", str(forged), "--key", log.vkey], capsys)
    assert code == 1, out
    assert "does not verify against the map root" in out
    # an entry of the chain dropped from the file: the walk from the head names it
    dropped = log.tmp / "dropped.proof"
    dropped.write_text("".join(x for x in lines if f'"index":{log.t1[1]},' not in x))
    code, out = run(["dispute", str(dropped), "--key", log.vkey], capsys)
    assert code == 1, out
    assert f"needs seq 2 (log index {log.t1[1]}), which the log did not give" in out


def test_a_table_history_saved_as_a_table_proof(
    log: Log, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = log.tmp / "t2.proof"
    code, out = run(["table-history", "--target", log.target, "--table", "T2", "--key",
                     log.vkey, "--out", str(saved)], capsys)  # fmt: skip
    assert code == 0, out
    code, out = run(["table-history", str(saved), "--key", log.vkey], capsys)
    assert code == 0, out
    assert "OK: the history of table 'T2' (client 'default') is complete from seq 1 to seq 3" in out


def test_find_entries_by_table_carries_the_map_proof(log: Log) -> None:
    reply = log.running.log.FindEntries(
        log_pb2.FindEntriesRequest(client="default", table_id="T2", round_id="X2")
    )
    assert reply.HasField("map_proof")
    assert reply.map_proof.terminal == log_pb2.TableMapProof.TERMINAL_PRESENT
    assert reply.map_proof.head_index == log.t2[-1]
    assert reply.map_proof.root_entry.index == reply.tree_size - 1
    # no single chain named: no proof
    reply = log.running.log.FindEntries(log_pb2.FindEntriesRequest(table_id="T2"))
    assert not reply.HasField("map_proof")


# -- the done-when of issue 40: edits, before and after a restart ---------------------------


def truth_or_failure(
    target: str, vkey: str, table: str, signed: list[int], capsys: pytest.CaptureFixture[str]
) -> int:
    """A live table-history of ``table``: exit 0 only with exactly the ``signed`` entries (the
    chain as acknowledged), else exit 1 (never 4 on a format 3 log, never 0 on less)."""
    code, report = jsoned(["table-history", "--target", target, "--table", table, "--key",
                           vkey], capsys)  # fmt: skip
    if code == 0:
        assert [e["index"] for e in report["entries"]] == signed, report
    else:
        assert code == 1, report
        assert report["ok"] is False
    return code


def round_truth_or_failure(
    target: str, vkey: str, table: str, round_id: str, signed: list[int],
    capsys: pytest.CaptureFixture[str],
) -> int:  # fmt: skip
    """A live dispute of a round: exit 0 only listing every signed spin of it, else 1."""
    code, report = jsoned(["dispute", "--target", target, "--client", "default", "--table",
                           table, "--round", round_id, "--key", vkey], capsys)  # fmt: skip
    if code == 0:
        assert [e["index"] for e in report["rounds"][0]["entries"]] == signed, report
    else:
        assert code == 1, report
    return code


@pytest.mark.parametrize("column", ["round_id", "client_id"])
def test_break_4_a_redrawn_round_is_shown_or_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str
) -> None:
    """Issue 34's break 4: R4's spin, spins of later rounds, R4's stored column changed while
    the service runs, R4 spun again under a new request id. Whatever the writer did with the
    second spin, the live dispute of R4 shows every signed spin of it or fails; the same after
    a restart."""
    config = make_config(tmp_path)
    vkey = str(config.log.key_file) + ".vkey"
    running = start(config)
    try:
        first = running.spin("r4", table_id="T5", round_id="R4").receipt.index
        chain = [first]
        for r in ("R5", "R6"):
            chain.append(running.spin(r.lower(), table_id="T5", round_id=r).receipt.index)
        sql(Path(config.storage.path), f"UPDATE entries SET {column} = 'moved' WHERE idx = ?",
            first)  # fmt: skip
        again = spun(running, "r4-again", "T5", "R4")
        r4 = [first] + ([again] if again is not None else [])
        chain += r4[1:]
        target = f"127.0.0.1:{running.port}"
        round_truth_or_failure(target, vkey, "T5", "R4", r4, capsys)
        truth_or_failure(target, vkey, "T5", chain, capsys)
    finally:
        running.stop()
    try:
        running = start(config)
    except REFUSED:  # the start-up check refused the edited store: nothing is served
        return
    try:
        target = f"127.0.0.1:{running.port}"
        round_truth_or_failure(target, vkey, "T5", "R4", r4, capsys)
        truth_or_failure(target, vkey, "T5", chain, capsys)
    finally:
        running.stop()


@pytest.mark.parametrize("when", ["running", "stopped"])
def test_a_hidden_table_head_is_never_proven_away(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], when: str
) -> None:
    """Table T7's newest entry hidden by its table_id column (while the service runs, or
    while it is stopped), H3 spun again: a live table-history proves the signed chain or
    fails, before and after a restart."""
    config = make_config(tmp_path)
    db = Path(config.storage.path)
    vkey = str(config.log.key_file) + ".vkey"
    running = start(config)
    chain = [running.spin(f"h{i}", table_id="T7", round_id=f"H{i}").receipt.index
             for i in (1, 2, 3)]  # fmt: skip
    if when == "stopped":
        running.stop()
        start(config).stop()  # records the checkpoint as verified
        sql(db, "UPDATE entries SET table_id = 'T7x' WHERE idx = ?", chain[-1])
        try:
            running = start(config)
        except REFUSED:  # refused at start: nothing is served
            return
    else:
        sql(db, "UPDATE entries SET table_id = 'T7x' WHERE idx = ?", chain[-1])
    try:
        again = spun(running, "h3-again", "T7", "H3")
        if again is not None:
            chain.append(again)
        truth_or_failure(f"127.0.0.1:{running.port}", vkey, "T7", chain, capsys)
        round_truth_or_failure(f"127.0.0.1:{running.port}", vkey, "T7", "H3",
                               [chain[2], *chain[3:]], capsys)  # fmt: skip
    finally:
        running.stop()
    try:
        running = start(config)
    except REFUSED:
        return
    try:
        truth_or_failure(f"127.0.0.1:{running.port}", vkey, "T7", chain, capsys)
    finally:
        running.stop()


def test_an_edited_map_row_is_data_loss_not_a_proof(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A map row moved back (T8's head hidden) while the service runs: a tree size the front
    end has not built its map for is rebuilt from the rows and refused (DATA_LOSS, counted
    under check="map", exit 1); the size it already proved still proves the signed truth.
    After a restart, the same edit is refused at start or answered DATA_LOSS."""
    config = make_config(tmp_path)
    db = Path(config.storage.path)
    vkey = str(config.log.key_file) + ".vkey"
    running = start(config)
    try:
        labels = {"method": "GetTableHistory", "check": "map"}
        assert running.service.registry.get_sample_value(
            "rng_log_integrity_errors_total", labels) == 0  # fmt: skip
        t8 = [running.spin(f"k{i}", table_id="T8", round_id=f"K{i}").receipt.index
              for i in (1, 2, 3)]  # fmt: skip
        other = running.spin("o1", table_id="T9", round_id="O1").receipt.index
        target = f"127.0.0.1:{running.port}"
        assert truth_or_failure(target, vkey, "T8", t8, capsys) == 0  # the map of size 5
        sql(db, "UPDATE table_map SET head_index = ?, head_seq = 2 WHERE table_id = 'T8'", t8[1])
        # the cached, proven map of this size still answers with the signed chain
        assert truth_or_failure(target, vkey, "T8", t8, capsys) == 0
        # a size not built yet: from the edited rows, refused
        with pytest.raises(grpc.RpcError) as info:
            running.log.GetTableHistory(
                log_pb2.GetTableHistoryRequest(table_id="T8", tree_size=other)
            )
        assert info.value.code() == grpc.StatusCode.DATA_LOSS
        assert "the map of table heads rebuilt from the store" in (info.value.details() or "")
        code, out = run(["table-history", "--target", target, "--table", "T8", "--tree-size",
                         str(other), "--key", vkey], capsys)  # fmt: skip
        assert code == 1, out
        assert "DATA_LOSS" in out
        assert wait_for_sample(running, "rng_log_integrity_errors_total", labels, at_least=2) == 2
    finally:
        running.stop()
    try:
        running = start(config)
    except REFUSED:
        return
    try:
        truth_or_failure(f"127.0.0.1:{running.port}", vkey, "T8", t8, capsys)
    finally:
        running.stop()


def test_an_edited_leaf_node_fails_after_a_restart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tree's level-0 node of a chain entry changed while the service is stopped: after
    the restart, the start-up check refuses it or the live answer fails."""
    config = make_config(tmp_path)
    db = Path(config.storage.path)
    vkey = str(config.log.key_file) + ".vkey"
    running = start(config)
    try:
        chain = [running.spin(f"n{i}", table_id="T10", round_id=f"N{i}").receipt.index
                 for i in (1, 2, 3)]  # fmt: skip
    finally:
        running.stop()
    sql(db, "UPDATE nodes SET hash = ? WHERE level = 0 AND idx = ?", b"\x01" * 32, chain[1])
    try:
        running = start(config)
    except REFUSED:
        return
    try:
        code = truth_or_failure(f"127.0.0.1:{running.port}", vkey, "T10", chain, capsys)
        assert code == 1
    finally:
        running.stop()


def test_usage_errors_of_the_proof_options(log: Log, capsys: pytest.CaptureFixture[str]) -> None:
    """Each a one-line usage error, exit 2, nothing fetched or written."""
    saved = log.tmp / "usage.proof"
    code, out = run(["dispute", "--target", log.target, "--client", "default", "--table", "T1",
                     "--round", "G1", "--key", log.vkey, "--out", str(saved)], capsys)  # fmt: skip
    assert code == 0, out
    bad = log.tmp / "bad.proof"
    bad.write_text('{"format": "rng-audit-table-proof/v1", "origin": 1}\n')
    witness = "w.test/w+01020304+BA" + "A" * 42 + "="
    for args, message in (
        (["dispute", str(saved), "--target", log.target], "give one of: a table proof FILE"),
        (["dispute", "--target", log.target, "--client", "default", "--table", "T1", "--round",
          "G1", "--out", str(log.tmp / "no-such" / "x.proof")], "--out"),
        (["dispute", str(saved), "--out", str(log.tmp / "again.proof")],
         "--out saves what --target fetched"),
        (["dispute", str(bad)], f"table proof {bad}: line 1: origin"),
        (["dispute", str(saved), "--client", "someone"], "--client 'someone', but the file is"),
        (["table-history", "--target", log.target, "--table", "T1", "--tree-size", "3",
          "--witness", witness], "--tree-size and --witness"),
        (["dispute", "--target", log.target, "--table", "T1", "--round", "G1"],
         "--client is needed"),
    ):  # fmt: skip
        code, out = run([*args, "--key", log.vkey], capsys)
        assert code == 2, (args, out)
        assert message in out, (args, out)
        assert "Traceback" not in out
    assert not (log.tmp / "again.proof").exists()
