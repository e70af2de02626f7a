"""rng-audit end to end on a real export of an in-process service: every tamper case fails.

One service run (module fixture) issues outcomes over several published checkpoints; its log is
exported through the LogService and from the SQLite file. Each test tampers with a copy in one
way and runs ``rng_service.cli.audit.main``: exit 0 only for the untouched export, 1 with a
message naming what is wrong and where for tampering, 2 for malformed input.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rng_service._proto.rng.v1 import log_pb2
from rng_service.cli.audit import main
from rng_service.clock import FakeClock
from rng_service.log.entry import canonical_json
from rng_service.log.keys import generate_key_pair, load_signer
from rng_service.log.merkle import leaf_hash
from rng_service.log.note import Checkpoint, sign_note
from rng_service.log.receipt import Receipt, receipt_to_json
from tests.integration.conftest import make_config, start

ENTRIES = 40


@dataclass
class Exported:
    tmp: Path
    export: Path
    db_export: Path
    vkey: Path
    key_file: Path
    key_name: str
    origin: str
    kept: Path
    receipt: Path
    target: str | None = None

    def lines(self) -> list[str]:
        return self.export.read_text().splitlines(keepends=True)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exported]:
    tmp = tmp_path_factory.mktemp("audit")
    clock = FakeClock()
    config = make_config(tmp, RNG_SERVICE__LOG__PUBLISH_INTERVAL_SECONDS="5")
    running = start(config, clock=clock)
    try:
        receipt_reply = None
        for i in range(ENTRIES):
            reply = running.spin(f"a{i}", table_id=f"T{i % 4}", round_id=f"R{i}")
            if i == 7:
                receipt_reply = reply
            if i % 6 == 5:
                clock.advance(6)
        assert receipt_reply is not None
        r = receipt_reply.receipt
        receipt = tmp / "receipt.json"
        receipt.write_text(
            receipt_to_json(
                Receipt(r.index, r.entry, r.leaf_hash, tuple(r.inclusion_proof), r.tree_size,
                        r.checkpoint, r.replayed)
            )
        )  # fmt: skip
        kept = tmp / "kept.checkpoint"
        kept.write_text(running.log.GetLatestCheckpoint(log_pb2.GetLatestCheckpointRequest()).note)
        export = tmp / "log.export"
        assert main(["export", "--target", f"127.0.0.1:{running.port}", "--out", str(export)]) == 0
        db_export = tmp / "db.export"
        running.log.PublishCheckpoint(log_pb2.PublishCheckpointRequest())
        assert main(["export", "--db", str(config.storage.path), "--out", str(db_export)]) == 0
        yield Exported(
            tmp=tmp,
            export=export,
            db_export=db_export,
            vkey=Path(str(config.log.key_file) + ".vkey"),
            key_file=config.log.key_file,
            key_name=config.log.key_name,
            origin=config.log.origin,
            kept=kept,
            receipt=receipt,
            target=f"127.0.0.1:{running.port}",
        )
    finally:
        running.stop()


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def verify(
    ex: Exported, path: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str]:
    return run(["verify", str(path), "--key", str(ex.vkey), *extra], capsys)


def tampered(ex: Exported, name: str, change: Callable[[list[str]], list[str]]) -> Path:
    path = ex.tmp / name
    path.write_text("".join(change(ex.lines())))
    return path


def header(lines: list[str]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(lines[0])
    return result


def first_entry_line(lines: list[str]) -> int:
    return 1 + int(header(lines)["checkpoints"])


def entry_line(index: int, data: bytes, *, leaf: bytes | None = None) -> str:
    return (
        json.dumps(
            {
                "type": "entry",
                "index": index,
                "leaf_hash": (leaf or leaf_hash(data)).hex(),
                "entry": base64.b64encode(data).decode(),
            },
            separators=(",", ":"),
        )
        + "\n"
    )


def entry_record(line: str) -> dict[str, object]:
    result: dict[str, object] = json.loads(base64.b64decode(json.loads(line)["entry"]))
    return result


def signed_checkpoint(ex: Exported, size: int, root: bytes, *, key: Path | None = None) -> str:
    signer = load_signer(key or ex.key_file, name=ex.key_name if key is None else "intruder")
    body = Checkpoint(origin=ex.origin, size=size, root_hash=root).body()
    return sign_note(body, [signer]).decode()


def checkpoint_line(note: str) -> str:
    return json.dumps({"type": "checkpoint", "published_at_ns": 1, "note": note}) + "\n"


# -- the untouched exports verify ----------------------------------------------------------


def test_untouched_exports_verify(exported: Exported, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = verify(exported, exported.export, capsys, "--checkpoint", str(exported.kept))
    assert code == 0, out
    assert f"OK: {ENTRIES} entries of {exported.origin}" in out
    assert "; round rules held across the export: each slot of a round filled once" in out
    lines = exported.lines()
    assert header(lines)["tree_size"] == ENTRIES
    assert int(header(lines)["checkpoints"]) >= 5
    assert "NOT CHECKED" not in out
    # Without the kept checkpoint the same checks pass, but truncation is NOT CHECKED: exit 4.
    code, out = verify(exported, exported.db_export, capsys)
    assert code == 4, out
    assert out.startswith(f"OK: {ENTRIES} entries of {exported.origin}")
    assert out.rstrip().splitlines()[-1].startswith("NOT CHECKED: truncation.")


def test_receipt_verifies_against_the_export_and_the_live_log(
    exported: Exported, capsys: pytest.CaptureFixture[str]
) -> None:
    key = ["--key", str(exported.vkey)]
    code, out = run(["verify-receipt", str(exported.receipt), *key], capsys)
    assert code == 4, out  # offline: that the log still holds it is NOT CHECKED
    assert "NOT CHECKED: that the log still holds this entry" in out
    code, out = run(
        ["verify-receipt", str(exported.receipt), *key, "--against", str(exported.export)], capsys
    )
    assert code == 4, out  # no kept checkpoint covers the export's newest entry
    assert "consistent with the export" in out
    assert "NOT CHECKED: truncation" in out
    code, out = run(
        ["verify-receipt", str(exported.receipt), *key, "--target", str(exported.target)], capsys
    )
    assert code == 0, out
    assert "consistent with the live log" in out


# -- tampering: exit 1 and the index or line at fault --------------------------------------


def test_changed_field_breaks_canonical_form(
    exported: Exported, capsys: pytest.CaptureFixture[str]
) -> None:
    def change(lines: list[str]) -> list[str]:
        k = first_entry_line(lines) + 12
        record = entry_record(lines[k])
        data = json.dumps(record, sort_keys=True).encode()  # spaces: not canonical
        lines[k] = entry_line(12, data)
        return lines

    path = tampered(exported, "noncanonical", change)
    code, out = verify(exported, path, capsys)
    assert code == 1
    assert "entry 12 " in out
    assert "not a canonical entry" in out
    # --fast does not decode entries: the tree still catches the change, between checkpoints.
    code, out = verify(exported, path, capsys, "--fast")
    assert code == 1
    assert "does not match the entries" in out
    code, out = verify(exported, exported.export, capsys, "--fast")
    assert code == 4, out  # the entries' own bytes (and truncation) NOT CHECKED
    assert "NOT CHECKED: the entries' own bytes (--fast)" in out
    # With the kept checkpoint, --fast alone still leaves the entries' bytes unchecked: 4.
    code, out = verify(exported, exported.export, capsys, "--fast", "--checkpoint",
                       str(exported.kept))  # fmt: skip
    assert code == 4, out
    assert "NOT CHECKED: the entries' own bytes (--fast)" in out
    assert "NOT CHECKED: truncation" not in out


def test_changed_field_without_new_leaf_hash(
    exported: Exported, capsys: pytest.CaptureFixture[str]
) -> None:
    def change(lines: list[str]) -> list[str]:
        k = first_entry_line(lines) + 20
        old = json.loads(lines[k])
        record = entry_record(lines[k])
        record["table_id"] = "T-forged"
        lines[k] = entry_line(20, canonical_json(record), leaf=bytes.fromhex(old["leaf_hash"]))
        return lines

    code, out = verify(exported, tampered(exported, "leafmismatch", change), capsys)
    assert code == 1
    assert "entry 20 " in out
    assert "the entry bytes were changed" in out


def test_changed_field_canonical_gives_a_root_mismatch(
    exported: Exported, capsys: pytest.CaptureFixture[str]
) -> None:
    def change(lines: list[str]) -> list[str]:
        k = first_entry_line(lines) + 25
        record = entry_record(lines[k])
        outcome = record["outcome"]
        assert isinstance(outcome, dict)
        # A different number from the logged one (outcomes vary run to run).
        number = "18" if outcome["final"]["number"] == "17" else "17"
        outcome["final"] = {**outcome["final"], "number": number}
        lines[k] = entry_line(25, canonical_json(record))
        return lines

    code, out = verify(exported, tampered(exported, "rootmismatch", change), capsys)
    assert code == 1
    assert "does not match the entries" in out
    # The message bounds the changed entry between two checkpoints.
    assert "An entry in [" in out


def test_deleted_entry(exported: Exported, capsys: pytest.CaptureFixture[str]) -> None:
    def change(lines: list[str]) -> list[str]:
        del lines[first_entry_line(lines) + 9]
        return lines

    code, out = verify(exported, tampered(exported, "deleted", change), capsys)
    assert code == 1
    assert "entry 9 " in out
    assert "index field is 10, expected 9" in out


def test_swapped_entries(exported: Exported, capsys: pytest.CaptureFixture[str]) -> None:
    def change(lines: list[str]) -> list[str]:
        k = first_entry_line(lines) + 3
        lines[k], lines[k + 1] = lines[k + 1], lines[k]
        return lines

    code, out = verify(exported, tampered(exported, "swapped", change), capsys)
    assert code == 1
    assert "entry 3 " in out
    assert "index field is 4, expected 3" in out


def test_swapped_and_renumbered_entries(
    exported: Exported, capsys: pytest.CaptureFixture[str]
) -> None:
    def change(lines: list[str]) -> list[str]:
        k = first_entry_line(lines) + 3
        a, b = entry_record(lines[k]), entry_record(lines[k + 1])
        a["index"], b["index"] = 4, 3
        lines[k], lines[k + 1] = entry_line(3, canonical_json(b)), entry_line(4, canonical_json(a))
        return lines

    code, out = verify(exported, tampered(exported, "swapped2", change), capsys)
    assert code == 1
    # Each entry's table map root was committed in the log's order, so the walk stops at the
    # first swapped one, before the tree's root (which would not match the entries either).
    assert "FAILED: entry 3 (line 13) commits the table map root" in out


def test_truncated_tail_against_a_kept_checkpoint(
    exported: Exported, capsys: pytest.CaptureFixture[str]
) -> None:
    def change(lines: list[str]) -> list[str]:
        head = header(lines)
        notes = [json.loads(line)["note"] for line in lines[1 : first_entry_line(lines)]]
        # Cut back to an older published checkpoint, dropping the newer ones.
        keep = max(s for n in notes if (s := int(n.split("\n")[1])) < ENTRIES - 3)
        notes = [n for n in notes if int(n.split("\n")[1]) <= keep]
        entries = lines[first_entry_line(lines) : first_entry_line(lines) + keep]
        head.update(tree_size=keep, checkpoints=len(notes))
        return [json.dumps(head) + "\n", *map(checkpoint_line, notes), *entries]

    path = tampered(exported, "truncated", change)
    # Alone, the shortened export is self-consistent, and the output says what was not checked...
    code, out = verify(exported, path, capsys)
    assert code == 4, out
    assert "NOT CHECKED: truncation. No kept checkpoint (--checkpoint)" in out
    # ...but not against the checkpoint the auditor kept.
    code, out = verify(exported, path, capsys, "--checkpoint", str(exported.kept))
    assert code == 1
    assert f"checkpoint file {exported.kept} is for tree size {ENTRIES}, but the export" in out
    assert "truncated" in out


def test_truncated_tail_with_the_header_left_alone(
    exported: Exported, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = verify(exported, tampered(exported, "cut", lambda lines: lines[:-3]), capsys)
    assert code == 1
    assert f"ends after {ENTRIES - 3} entries" in out


def test_inserted_forged_entry(exported: Exported, capsys: pytest.CaptureFixture[str]) -> None:
    def change(lines: list[str]) -> list[str]:
        k = first_entry_line(lines) + 15
        forged = entry_record(lines[k])
        forged["request_id"] = "forged"
        lines.insert(k, entry_line(15, canonical_json(forged)))
        return lines

    code, out = verify(exported, tampered(exported, "inserted", change), capsys)
    assert code == 1
    assert "entry 16 " in out
    assert "index field is 15, expected 16" in out


def test_appended_forged_entry_is_covered_by_no_checkpoint(
    exported: Exported, capsys: pytest.CaptureFixture[str]
) -> None:
    def change(lines: list[str]) -> list[str]:
        forged = entry_record(lines[-1])
        forged["index"] = ENTRIES
        head = header(lines)
        head["tree_size"] = ENTRIES + 1
        return [json.dumps(head) + "\n", *lines[1:], entry_line(ENTRIES, canonical_json(forged))]

    code, out = verify(exported, tampered(exported, "appended", change), capsys)
    assert code == 1
    assert f"entry {ENTRIES} " in out
    assert "no signed checkpoint covers it" in out


def test_checkpoint_signed_by_an_unknown_key(
    exported: Exported, capsys: pytest.CaptureFixture[str]
) -> None:
    intruder = exported.tmp / "intruder.pem"
    if not intruder.exists():
        generate_key_pair(intruder, name="intruder")

    def change(lines: list[str]) -> list[str]:
        note = json.loads(lines[2])["note"]
        checkpoint = Checkpoint.parse(note.split("\n\n")[0] + "\n")
        forged = signed_checkpoint(exported, checkpoint.size, checkpoint.root_hash, key=intruder)
        lines[2] = checkpoint_line(forged)
        return lines

    code, out = verify(exported, tampered(exported, "unknownkey", change), capsys)
    assert code == 1
    assert "checkpoint at line 3" in out
    assert "no signature from a known key" in out
    assert "intruder" in out


def test_fork_same_size_different_roots(
    exported: Exported, capsys: pytest.CaptureFixture[str]
) -> None:
    fork = exported.tmp / "fork.checkpoint"
    fork.write_text(signed_checkpoint(exported, ENTRIES, b"\x42" * 32))
    code, out = verify(exported, exported.export, capsys, "--checkpoint", str(fork))
    assert code == 1
    assert "fork:" in out
    assert f"both for tree size {ENTRIES}" in out


def test_fork_different_sizes_not_consistent(
    exported: Exported, capsys: pytest.CaptureFixture[str]
) -> None:
    def change(lines: list[str]) -> list[str]:
        head = header(lines)
        head["checkpoints"] = int(head["checkpoints"]) + 1
        forged = checkpoint_line(signed_checkpoint(exported, 30, b"\x24" * 32))
        return [json.dumps(head) + "\n", forged, *lines[1:]]

    code, out = verify(exported, tampered(exported, "forkdiff", change), capsys)
    assert code == 1
    assert "checkpoint at line 2 (tree size 30) does not match the entries" in out
    assert "fork" in out


def test_receipt_from_a_fork(exported: Exported, capsys: pytest.CaptureFixture[str]) -> None:
    receipt = json.loads(exported.receipt.read_text())
    size = receipt["tree_size"]
    # A receipt whose own proof and signature check out, but for another tree (one leaf).
    entry = base64.b64decode(receipt["entry"])
    record = json.loads(entry)
    record.update(index=0, table_seq=1, table_prev=None)  # the first entry of its tree
    data = canonical_json(record)
    forged = {
        **receipt,
        "index": 0,
        "entry": base64.b64encode(data).decode(),
        "leaf_hash": leaf_hash(data).hex(),
        "inclusion_proof": [],
        "tree_size": 1,
        "checkpoint": signed_checkpoint(exported, 1, leaf_hash(data)),
    }
    path = exported.tmp / "forked-receipt.json"
    path.write_text(json.dumps(forged))
    key = ["--key", str(exported.vkey)]
    code, out = run(["verify-receipt", str(path), *key], capsys)
    assert code == 4, out  # alone it verifies, and says the log is NOT CHECKED: only it can tell
    assert "NOT CHECKED: that the log still holds this entry" in out
    code, out = run(["verify-receipt", str(path), *key, "--against", str(exported.export)], capsys)
    assert code == 1
    assert "fork" in out
    code, out = run(["verify-receipt", str(path), *key, "--target", str(exported.target)], capsys)
    assert code == 1
    assert "fork" in out
    assert size > 1


def test_tampered_receipt(exported: Exported, capsys: pytest.CaptureFixture[str]) -> None:
    receipt = json.loads(exported.receipt.read_text())
    receipt["inclusion_proof"][0] = "00" * 32
    path = exported.tmp / "bad-receipt.json"
    path.write_text(json.dumps(receipt))
    code, out = run(["verify-receipt", str(path), "--key", str(exported.vkey)], capsys)
    assert code == 1
    assert "does not lead to the expected root" in out


# -- a verifier that cannot pass on nothing: exit 1 exactly -----------------------------------


def test_an_export_of_nothing_fails_unless_allowed(
    exported: Exported, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = {"format": "rng-audit-export/v1", "origin": exported.origin, "tree_size": 0,
             "checkpoints": 0}  # fmt: skip
    path = exported.tmp / "empty.export"
    path.write_text(json.dumps(empty) + "\n")
    code, out = verify(exported, path, capsys)
    assert code == 1, out
    assert "the export has no entries (header: 0 entries, 0 checkpoints): it proves nothing" in out
    code, out = verify(exported, path, capsys, "--allow-empty")
    assert code == 4, out
    assert "0 checkpoints (newest: tree size 0) verified, signed by nobody" in out
    assert "NOT CHECKED: truncation" in out
    # The empty tree's signed checkpoint alone is no better without --allow-empty.
    only_head = tampered(
        exported,
        "empty-signed",
        lambda _: [
            json.dumps({**empty, "checkpoints": 1}) + "\n",
            checkpoint_line(signed_checkpoint(exported, 0, hashlib.sha256(b"").digest())),
        ],
    )
    code, out = verify(exported, only_head, capsys)
    assert code == 1, out
    assert "the export has no entries" in out
    # Entries and no checkpoint: nothing signed.
    unsigned = tampered(
        exported,
        "unsigned",
        lambda lines: [
            json.dumps({**header(lines), "checkpoints": 0}) + "\n",
            *lines[first_entry_line(lines) :],
        ],
    )
    code, out = verify(exported, unsigned, capsys)
    assert code == 1, out
    assert "the export has no checkpoint" in out


def test_an_export_of_another_origin_is_not_this_log(
    exported: Exported, capsys: pytest.CaptureFixture[str]
) -> None:
    """The header names its own origin; the verifier pins the one it expects: --origin, or the
    key's name (the log's key is named by its origin). A log of another origin, even signed by
    the same key, is refused."""

    def relabel(lines: list[str]) -> list[str]:
        head = {**header(lines), "origin": "evil.example/log"}
        notes = []
        for line in lines[1 : first_entry_line(lines)]:
            text = json.loads(line)["note"].split("\n\n")[0] + "\n"
            signer = load_signer(exported.key_file, name=exported.key_name)
            notes.append(sign_note(text.replace(exported.origin, "evil.example/log", 1),
                                   [signer]).decode())  # fmt: skip
        return [json.dumps(head) + "\n", *map(checkpoint_line, notes),
                *lines[first_entry_line(lines) :]]  # fmt: skip

    path = tampered(exported, "other-origin", relabel)
    code, out = verify(exported, path, capsys)
    assert code == 1, out
    assert (
        f"the export is of log 'evil.example/log', not of the expected log '{exported.origin}' "
        f"(the name of the key"
    ) in out
    code, out = verify(exported, path, capsys, "--origin", "evil.example/log")
    assert code == 4, out  # what was asked for: every signature is the real key's (no kept one)
    code, out = verify(exported, exported.export, capsys, "--origin", "evil.example/log")
    assert code == 1, out
    assert "not of the expected log 'evil.example/log' (--origin)" in out


def test_receipts_are_checked_for_the_origin(
    exported: Exported, capsys: pytest.CaptureFixture[str]
) -> None:
    key = ["--key", str(exported.vkey)]
    code, out = run(["verify-receipt", str(exported.receipt), *key, "--origin", "x.example/log"],
                    capsys)  # fmt: skip
    assert code == 1, out
    assert "checkpoint is of log 'test.example/log', not of the expected log 'x.example/log'" in (
        out
    )
    code, out = run(["verify-receipt", str(exported.receipt), *key], capsys)
    assert code == 4, out
    assert "NOT CHECKED: that the log still holds this entry" in out
    from rng_service.cli.service import main as service_main

    vkey = exported.vkey.read_text().strip()
    # rng-service verify-receipt offline: the same rule (docs/cli.md, convention 9)...
    assert service_main(["verify-receipt", str(exported.receipt), "--key", vkey]) == 4
    out = capsys.readouterr().out
    assert out.startswith("OK: entry ")
    assert "NOT CHECKED: that the log still holds this entry" in out
    # ...and with --target it checks the live log: nothing left unchecked, 0.
    code = service_main(["verify-receipt", str(exported.receipt), "--key", vkey, "--target",
                         str(exported.target)])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "NOT CHECKED" not in out
    code = service_main(
        ["verify-receipt", str(exported.receipt), "--key", vkey, "--origin", "x.example/log"]
    )
    assert code == 1
    assert "not of the expected log 'x.example/log'" in capsys.readouterr().err


def test_verify_receipt_with_a_kept_checkpoint(
    exported: Exported, capsys: pytest.CaptureFixture[str]
) -> None:
    key = ["--key", str(exported.vkey)]
    receipt = str(exported.receipt)
    code, out = run(["verify-receipt", receipt, *key, "--checkpoint", str(exported.kept)], capsys)
    assert code == 2
    assert "--checkpoint needs --against or --target" in out
    code, out = run(["verify-receipt", receipt, *key, "--target", str(exported.target),
                     "--checkpoint", str(exported.kept)], capsys)  # fmt: skip
    assert code == 0, out
    assert "and with 1 kept checkpoint(s)" in out
    code, out = run(["verify-receipt", receipt, *key, "--against", str(exported.export),
                     "--checkpoint", str(exported.kept)], capsys)  # fmt: skip
    assert code == 0, out
    assert "NOT CHECKED" not in out
    # A kept checkpoint larger than the live log: the log was cut back.
    beyond = exported.tmp / "beyond.note"
    beyond.write_text(signed_checkpoint(exported, 10_000, b"\x01" * 32))
    code, out = run(["verify-receipt", receipt, *key, "--target", str(exported.target),
                     "--checkpoint", str(beyond)], capsys)  # fmt: skip
    assert code == 1, out
    assert "is for tree size 10000, beyond the latest checkpoint of" in out
    assert "the log was cut back" in out


def test_an_entry_missing_while_exporting_is_an_integrity_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = make_config(tmp_path)
    running = start(config)
    try:
        for i in range(6):
            running.spin(f"gap{i}")
        running.log.PublishCheckpoint(log_pb2.PublishCheckpointRequest())
        # An operator deletes a row of the live SQLite log (the service is idle).
        conn = sqlite3.connect(config.storage.path)
        with conn:
            conn.execute("DELETE FROM entries WHERE idx = 2")
        conn.close()
        out_file = tmp_path / "gap.export"
        code, out = run(["export", "--target", f"127.0.0.1:{running.port}", "--out",
                         str(out_file)], capsys)  # fmt: skip
        assert code == 1, out
        # the service itself refuses the page (DATA_LOSS: an integrity failure, exit 1)
        assert "FAILED: 127.0.0.1:" in out
        assert (
            "GetEntries: DATA_LOSS: entry 2 is missing from the log store (the next stored entry "
            "is 3), though the tree covers it: a row was deleted"
        ) in out
        assert not out_file.exists()
        code, out = run(["export", "--db", str(config.storage.path), "--out", str(out_file)],
                        capsys)  # fmt: skip
        assert code == 1, out
        assert "the log has no entry 2" in out
    finally:
        running.stop()


# -- malformed input: exit 2, one line naming the line or field ------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda lines: [lines[0], "{not json\n", *lines[2:]], "line 2: line: not JSON"),
        (lambda lines: ['{"format":"other"}\n', *lines[1:]], "line 1: format:"),
        (
            lambda lines: [lines[0], '{"type":"checkpoint","published_at_ns":1}\n', *lines[2:]],
            "line 2: note:",
        ),
        (
            lambda lines: [*lines[:-1], '{"type":"entry","index":39,"leaf_hash":"zz"}\n'],
            "leaf_hash: is not hex",
        ),
        (
            lambda lines: [
                *lines[:-1],
                json.dumps({**json.loads(lines[-1]), "entry": "%%%"}) + "\n",
            ],
            "entry: is not base64",
        ),
        (lambda lines: [], "line 1: line: the export is empty"),
    ],
)
def test_malformed_export(
    exported: Exported,
    capsys: pytest.CaptureFixture[str],
    change: Callable[[list[str]], list[str]],
    message: str,
) -> None:
    code, out = verify(exported, tampered(exported, "malformed", change), capsys)
    assert code == 2
    assert message in out
    assert "Traceback" not in out
    assert len(out.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.pop("tree_size"), "tree_size: None is not a non-negative integer"),
        (lambda r: r.update(index="3"), "index: '3' is not a non-negative integer"),
        (lambda r: r.update(entry="%%"), "entry: is not base64"),
        (lambda r: r.update(leaf_hash="ab"), "leaf_hash: is 1 bytes, expected 32"),
        (lambda r: r["inclusion_proof"].__setitem__(1, "xyz"), "inclusion_proof[1]: is not hex"),
        (lambda r: r.update(checkpoint=None), "checkpoint: missing or not a string"),
        (lambda r: r.update(checkpoint="no signature\n"), "field checkpoint:"),
        (lambda r: r.update(format="x"), "format: 'x' is not"),
    ],
)
def test_malformed_receipt(
    exported: Exported,
    capsys: pytest.CaptureFixture[str],
    change: Callable[[dict[str, Any]], object],
    message: str,
) -> None:
    receipt = json.loads(exported.receipt.read_text())
    change(receipt)
    path = exported.tmp / "malformed-receipt.json"
    path.write_text(json.dumps(receipt))
    code, out = run(["verify-receipt", str(path), "--key", str(exported.vkey)], capsys)
    assert code == 2
    assert message in out
    assert len(out.strip().splitlines()) == 1
    path.write_text("{")
    code, out = run(["verify-receipt", str(path), "--key", str(exported.vkey)], capsys)
    assert code == 2
    assert "receipt: not JSON" in out


def test_usage_errors(exported: Exported, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["verify", str(exported.export), "--key", "not-a-key"], capsys)
    assert code == 2
    assert "--key" in out
    code, out = run(["verify", str(exported.tmp / "missing"), "--key", str(exported.vkey)], capsys)
    assert code == 2
    assert "cannot read export" in out
    code, out = run(["export", "--out", str(exported.tmp / "x")], capsys)
    assert code == 2
    db = str(exported.tmp / "log.sqlite3")
    code, out = run(["export", "--db", db, "--out", str(exported.tmp / "no-dir" / "x")], capsys)
    assert code == 2
    assert f"--out {exported.tmp / 'no-dir' / 'x'}: directory" in out


def test_several_keys_and_checkpoints(
    exported: Exported, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    other = tmp_path / "other.pem"
    generate_key_pair(other, name="other-key")
    vkey = exported.vkey.read_text().strip()
    args = ["verify", str(exported.export), "--key", str(other) + ".vkey", vkey,
            "--checkpoint", str(exported.kept), str(exported.kept)]  # fmt: skip
    # Keys of two names pin no origin: the auditor must say which log it expects.
    code, out = run(args, capsys)
    assert code == 2, out
    assert "the keys have different names (other-key, test.example/log)" in out
    assert "pass --origin" in out
    code, out = run([*args, "--origin", exported.origin], capsys)
    assert code == 0, out
    code, out = run(["verify", str(exported.export), "--key", str(other) + ".vkey"], capsys)
    assert code == 1
    assert (
        "the export is of log 'test.example/log', not of the expected log 'other-key' "
        "(the name of the key; if the log's key is not named by its origin, pass --origin)"
    ) in out
    code, out = run(
        ["verify", str(exported.export), "--key", str(other) + ".vkey", "--origin",
         exported.origin],
        capsys,
    )  # fmt: skip
    assert code == 1
    assert "no signature from a known key" in out


# -- --target over mTLS ------------------------------------------------------------------------

TLS_CLIENTS = """
[tls]
cert_file = "certs/server.pem"
key_file = "certs/server.key"
client_ca_file = "certs/ca.pem"

[[clients]]
identity = "game-1"
roles = ["game_server"]
tables = ["*"]

[[clients]]
identity = "auditor-1"
roles = ["auditor"]
"""


@dataclass
class SecureLog:
    target: str
    certs: Path
    vkey: Path
    receipt: Path
    tmp: Path

    def tls(self, identity: str) -> list[str]:
        """rng-audit's --ca/--cert/--tls-key arguments for a development certificate."""
        c = self.certs
        return ["--ca", str(c / "ca.pem"), "--cert", str(c / f"{identity}.pem"),
                "--tls-key", str(c / f"{identity}.key")]  # fmt: skip


@pytest.fixture(scope="module")
def secure_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureLog]:
    """A service with mTLS (development CA) and a few spins drawn by its game server."""
    import datetime as dt

    from rng_service.config import load_config
    from rng_service.rpc.client import ClientTls, RngClient
    from rng_service.security.certs import write_dev_ca

    tmp = tmp_path_factory.mktemp("audit-tls")
    write_dev_ca(tmp / "certs", ["game-1", "auditor-1", "stranger"], now=dt.datetime.now(dt.UTC))
    (tmp / "config.toml").write_text(TLS_CLIENTS)
    base = make_config(tmp)  # the harness's storage and key
    environ = {
        "RNG_SERVICE__SERVER__PORT": "0",
        "RNG_SERVICE__METRICS__ENABLED": "false",
        "RNG_SERVICE__STORAGE__PATH": str(base.storage.path),
        "RNG_SERVICE__LOG__KEY_FILE": str(base.log.key_file),
        "RNG_SERVICE__LOG__KEY_NAME": base.log.key_name,
        "RNG_SERVICE__LOG__ORIGIN": base.log.origin,
    }
    config = load_config(tmp / "config.toml", environ=environ, base_dir=tmp)
    assert config.tls.enabled
    running = start(config)
    target = f"127.0.0.1:{running.port}"
    try:
        certs = tmp / "certs"
        game = ClientTls.from_files(certs / "ca.pem", certs / "game-1.pem", certs / "game-1.key")
        with RngClient(target, tls=game) as client:
            spins = [
                client.spin(wheel="double_zero", table_id="T1", round_id=f"R{i}",
                            request_id=f"tls-{i}")
                for i in range(6)
            ]  # fmt: skip
        receipt = tmp / "receipt.json"
        receipt.write_text(receipt_to_json(spins[2].receipt))
        yield SecureLog(
            target=target,
            certs=certs,
            vkey=Path(str(config.log.key_file) + ".vkey"),
            receipt=receipt,
            tmp=tmp,
        )
    finally:
        running.stop()


def test_export_and_verify_receipt_over_mtls_as_an_auditor(
    secure_log: SecureLog, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = secure_log.tmp / "tls.export"
    auditor = secure_log.tls("auditor-1")
    code, out = run(
        [*auditor, "export", "--target", secure_log.target, "--out", str(out_file)], capsys
    )
    assert code == 0, out
    assert "exported 6 entries" in out
    code, out = run(["verify", str(out_file), "--key", str(secure_log.vkey)], capsys)
    assert code == 4, out  # no kept checkpoint: truncation NOT CHECKED
    assert "OK: 6 entries" in out
    # verify-receipt: the top-level --key is the certificate's key, the command's --key the
    # log's verifier key.
    code, out = run(
        [*auditor, "verify-receipt", str(secure_log.receipt), "--key", str(secure_log.vkey),
         "--target", secure_log.target],
        capsys,
    )  # fmt: skip
    assert code == 0, out
    assert "consistent with the live log" in out
    assert "entry 2 (roulette_spin, table T1, round R2)" in out


def test_export_over_mtls_needs_an_auditor_certificate(
    secure_log: SecureLog, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = secure_log.tmp / "refused.export"
    # a game server may not read the log
    code, out = run(
        [*secure_log.tls("game-1"), "export", "--target", secure_log.target,
         "--out", str(out_file)],
        capsys,
    )  # fmt: skip
    assert code == 2
    assert "PERMISSION_DENIED" in out
    # a certificate from the CA whose identity is not configured
    code, out = run(
        [*secure_log.tls("stranger"), "export", "--target", secure_log.target,
         "--out", str(out_file)],
        capsys,
    )  # fmt: skip
    assert code == 2
    assert "UNAUTHENTICATED" in out
    # no certificate: the TLS port does not answer plaintext
    code, out = run(["export", "--target", secure_log.target, "--out", str(out_file)], capsys)
    assert code == 2
    assert "UNAVAILABLE" in out
    assert not out_file.exists()


def test_tls_options_usage_errors(
    secure_log: SecureLog, capsys: pytest.CaptureFixture[str]
) -> None:
    certs = secure_log.certs
    out_file = str(secure_log.tmp / "usage.export")
    code, out = run(
        ["--ca", str(certs / "ca.pem"), "export", "--target", secure_log.target, "--out", out_file],
        capsys,
    )
    assert code == 2
    assert "--cert, --tls-key needed too" in out
    code, out = run(
        [*secure_log.tls("auditor-1"), "export", "--db", str(secure_log.tmp / "log.sqlite3"),
         "--out", out_file],
        capsys,
    )  # fmt: skip
    assert code == 2
    assert "are for --target" in out
    code, out = run(
        [*secure_log.tls("auditor-1"), "verify-receipt", str(secure_log.receipt),
         "--key", str(secure_log.vkey), "--against", out_file],
        capsys,
    )  # fmt: skip
    assert code == 2
    assert "are for --target" in out
    code, out = run(
        ["--ca", str(certs / "ca.pem"), "--cert", str(certs / "auditor-1.pem"),
         "--tls-key", str(certs / "missing.key"), "export", "--target", secure_log.target,
         "--out", out_file],
        capsys,
    )  # fmt: skip
    assert code == 2
    assert "missing.key" in out
