"""``rng-audit verify --witness``: a witnessed checkpoint must cover the export's newest entry.

The break (issue 34): a log grown to 441 entries and cosigned by two witnesses, rolled back to
an older copy of its store (392 entries, whose checkpoint the witnesses had cosigned) and
regrown to 466 entries without witnesses, exported. The witnesses' cosignatures on the old
checkpoint of 392 made ``verify --witness W1 W2 --min-witnesses 2`` exit 0 and drop the
"truncation NOT CHECKED" notice, while entries 392-465 are a second history nobody witnessed.

Built here from real canonical entries, a real Ed25519 log key and two witness keys, with the
export written by ``write_export`` as ``rng-audit export`` writes it; the command runs with a
fixed clock. The roots come from the RFC 6962 reference definitions (``merkle``).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.audit import write_export
from rng_service.cli.audit import main as audit_main
from rng_service.cli.witness_options import parse_duration
from rng_service.clock import FakeClock
from rng_service.log import merkle
from rng_service.log.cosignature import CosignatureSigner
from rng_service.log.entry import GeneratorRef, LogEntry
from rng_service.log.note import Checkpoint, Ed25519NoteSigner, sign_note
from rng_service.log.receipt import Receipt, receipt_to_json

ORIGIN = "coverage.test/log"
LOG = Ed25519NoteSigner(ORIGIN, Ed25519PrivateKey.from_private_bytes(b"\x11" * 32))
W1 = CosignatureSigner("w1.test/w", Ed25519PrivateKey.from_private_bytes(b"\x21" * 32))
W2 = CosignatureSigner("w2.test/w", Ed25519PrivateKey.from_private_bytes(b"\x22" * 32))
T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
COPY = 392  # the older store copy the service was restarted on
GROWN = 441  # what the witnesses saw
FORKED = 466  # 392 + 74 unwitnessed entries of a second history
NEWEST_FORKED = T0 + 400 + 8 * 60 + 30  # 8 min 30 s after the 392 checkpoint's cosignatures
NOW = NEWEST_FORKED + 60


def _entry(i: int, *, fork: bool) -> bytes:
    second = fork and i >= COPY
    seconds = NEWEST_FORKED - (FORKED - 1 - i) if second else T0 + i
    seq = i // 3 + 1
    return LogEntry(
        index=i, timestamp_ns=seconds * 10**9, kind="roulette_spin",
        params={"wheel": "double_zero"},
        outcome={"final": {"number": str((i * 7 if second else i) % 38)}},
        client="default", table_id=f"T{i % 3}", round_id=f"{'F' if second else 'R'}{i}",
        session_id="", request_id=f"{'f' if second else 'q'}{i}",
        generator=GeneratorRef("ab12", 0, False), version=2, slot="spin", table_seq=seq,
        table_prev=i - 3 if seq > 1 else None,
    ).encode()  # fmt: skip


GROWN_DATA = [_entry(i, fork=False) for i in range(GROWN)]
FORKED_DATA = [_entry(i, fork=True) for i in range(FORKED)]
assert GROWN_DATA[:COPY] == FORKED_DATA[:COPY]
assert GROWN_DATA[COPY] != FORKED_DATA[COPY]


def _checkpoint(data: list[bytes], size: int, cosigned: dict[CosignatureSigner, int]) -> str:
    leaves = [merkle.leaf_hash(d) for d in data[:size]]
    body = Checkpoint(ORIGIN, size, merkle.root_from_leaf_hashes(leaves)).body()
    lines = "".join(w.cosign(body, t).line() for w, t in cosigned.items())
    return (sign_note(body, [LOG]) + lines.encode()).decode()


BOTH_AT_392 = {W1: T0 + 401, W2: T0 + 400}


def _export(path: Path, data: list[bytes], checkpoints: list[str]) -> Path:
    out = io.StringIO()
    write_export(
        out, origin=ORIGIN, checkpoints=[(c, 0) for c in checkpoints],
        entries=[(i, merkle.leaf_hash(d), d) for i, d in enumerate(data)], tree_size=len(data),
    )  # fmt: skip
    path.write_text(out.getvalue())
    return path


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, str]:
    files = {}
    for name, verifier_key in (("log", LOG.verifier_key()), ("w1", W1.verifier().verifier_key()),
                               ("w2", W2.verifier().verifier_key())):  # fmt: skip
        path = tmp_path / f"{name}.vkey"
        path.write_text(verifier_key + "\n")
        files[name] = str(path)
    return files


def _forked(tmp_path: Path, *, newest: dict[CosignatureSigner, int] | None = None) -> Path:
    return _export(tmp_path / "forked.export", FORKED_DATA, [
        _checkpoint(FORKED_DATA, COPY, BOTH_AT_392),
        _checkpoint(FORKED_DATA, FORKED, newest or {}),
    ])  # fmt: skip


def _honest(tmp_path: Path) -> Path:
    """What ``export --witnessed`` writes of the grown log: it ends at the checkpoint of 441
    both witnesses cosigned."""
    return _export(tmp_path / "honest.export", GROWN_DATA, [
        _checkpoint(GROWN_DATA, COPY, BOTH_AT_392),
        _checkpoint(GROWN_DATA, GROWN, {W1: T0 + 450, W2: T0 + 455}),
    ])  # fmt: skip


def _verify(
    export: Path, keys: dict[str, str], capsys: pytest.CaptureFixture[str], *extra: str,
    witnesses: tuple[str, ...] = ("w1", "w2"),
) -> tuple[int, str, str]:  # fmt: skip
    argv = ["verify", str(export), "--key", keys["log"]]
    if witnesses:
        argv += ["--witness", *(keys[w] for w in witnesses)]
    code = audit_main([*argv, *extra], clock=FakeClock(NOW * 10**9))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_rolled_back_and_regrown_export_fails_naming_the_unwitnessed_entries(
    tmp_path: Path, keys: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    export = _forked(tmp_path)
    code, out, err = _verify(export, keys, capsys, "--min-witnesses", "2")
    assert code == 1, out
    assert (
        "entries 392-465: witnessed by none of the 2 keys; the newest witnessed checkpoint is "
        "of size 392, 8 min older than the newest entry"
    ) in err
    assert "rng-audit export --witnessed" in err
    assert not out.startswith("OK")
    # One witness is not enough either when two are asked for, and says so.
    export = _forked(tmp_path, newest={W1: NOW - 5})
    code, _, err = _verify(export, keys, capsys, "--min-witnesses", "2")
    assert code == 1
    assert "entries 392-465: witnessed by only 1 of the 2 keys (2 needed)" in err
    # With one required, that one covers the newest entry: it passes.
    code, out, _ = _verify(export, keys, capsys, "--min-witnesses", "1")
    assert code == 0, out
    assert "WITNESSED: checkpoint at line 3 (tree size 466)" in out
    assert "NOT CHECKED: truncation" not in out


def test_an_honest_witnessed_export_passes(
    tmp_path: Path, keys: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _verify(_honest(tmp_path), keys, capsys, "--min-witnesses", "2")
    assert code == 0, out + err
    assert "WITNESSED: checkpoint at line 3 (tree size 441) is cosigned by 2" in out
    assert "NOT CHECKED: truncation" not in out


def test_max_witness_age(
    tmp_path: Path, keys: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    export = _honest(tmp_path)
    # 441 is witnessed as of T0 + 450 (the 2nd newest of 450 and 455); NOW is T0 + 970.
    for limit in ("520s", "9m", "1h", "0.5d"):
        code, out, err = _verify(export, keys, capsys, "--max-witness-age", limit)
        assert code == 0, (limit, out, err)
    code, out, err = _verify(export, keys, capsys, "--min-witnesses", "2",
                             "--max-witness-age", "519s")  # fmt: skip
    assert code == 1, out
    assert "witnessed as of 2026-01-01T00:07:30Z (its 2nd newest cosignature), 8 min ago" in err
    assert "(520 s): older than --max-witness-age allows (519 s)" in err
    # With K = 1 the newest cosignature (T0 + 455) counts: 515 s old.
    code, _, _ = _verify(export, keys, capsys, "--min-witnesses", "1", "--max-witness-age", "516s")
    assert code == 0
    code, _, _ = _verify(export, keys, capsys, "--min-witnesses", "1", "--max-witness-age", "514s")
    assert code == 1


@pytest.mark.parametrize("bad", ["10", "5x", "-1m", "0s", "", "m", "1e3s", "36501d", "1 h"])
def test_a_bad_max_witness_age_is_a_usage_error(
    bad: str, tmp_path: Path, keys: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _verify(_honest(tmp_path), keys, capsys, f"--max-witness-age={bad}")
    assert code == 2, out
    assert f"--max-witness-age: {bad!r} is not a duration (allowed: a number with s, m, h or d" in (
        err
    )
    assert out == ""
    # Without witnesses there is nothing to be old: a usage error too.
    code, _, err = _verify(_honest(tmp_path), keys, capsys, "--max-witness-age", "1h",
                           witnesses=())  # fmt: skip
    assert code == 2
    assert "--max-witness-age needs --witness keys" in err


def test_parse_duration() -> None:
    assert [parse_duration(t) for t in ("90s", "10m", "1.5h", "2d")] == [90, 600, 5400, 172800]


def test_truncation_notice_unless_the_newest_entry_is_covered(
    tmp_path: Path, keys: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    export = _forked(tmp_path)
    # Witnesses only listed (K = 0): the cosigned checkpoint of 392 proves nothing about 466.
    code, out, _ = _verify(export, keys, capsys, "--min-witnesses", "0")
    assert code == 4  # what it printed OK is proven, truncation is not (docs/cli.md, 9)
    assert "NOT CHECKED: truncation. No kept checkpoint (--checkpoint)" in out
    assert "covers the newest of this export's 466 entries" in out
    # A kept checkpoint older than the newest entry does not cover it either...
    old = tmp_path / "392.checkpoint"
    old.write_text(_checkpoint(FORKED_DATA, COPY, {}))
    code, out, _ = _verify(export, keys, capsys, "--checkpoint", str(old), witnesses=())
    assert code == 4
    assert "NOT CHECKED: truncation" in out
    # ...one of the newest entry does.
    new = tmp_path / "466.checkpoint"
    new.write_text(_checkpoint(FORKED_DATA, FORKED, {}))
    code, out, _ = _verify(export, keys, capsys, "--checkpoint", str(new), witnesses=())
    assert code == 0
    assert "NOT CHECKED: truncation" not in out


def test_verify_receipt_shares_the_notice(
    tmp_path: Path, keys: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A receipt of entry 5 in the checkpoint of 392 is witnessed (both witnesses cosigned 392),
    but the export's entries 392-465 are not: the receipt passes, the notice is printed."""
    leaves = [merkle.leaf_hash(d) for d in FORKED_DATA[:COPY]]
    receipt = Receipt(
        index=5, entry=FORKED_DATA[5], leaf_hash=leaves[5],
        inclusion_proof=tuple(merkle.inclusion_proof(leaves, 5)), tree_size=COPY,
        checkpoint=_checkpoint(FORKED_DATA, COPY, {}), replayed=False,
    )  # fmt: skip
    path = tmp_path / "r.json"
    path.write_text(receipt_to_json(receipt))
    argv = ["verify-receipt", str(path), "--key", keys["log"], "--against",
            str(_forked(tmp_path)), "--witness", keys["w1"], keys["w2"],
            "--min-witnesses", "2"]  # fmt: skip
    code = audit_main(argv, clock=FakeClock(NOW * 10**9))
    out = capsys.readouterr().out
    assert code == 4, out
    assert "WITNESSED: checkpoint at line 2 (tree size 392)" in out
    assert "NOT CHECKED: truncation" in out
    assert "covers the newest of the export's 466 entries" in out
    # rng-service verify-receipt hands --max-witness-age over, bad values included.
    from rng_service.cli.service import main as cli_main

    assert cli_main(["verify-receipt", str(path), "--key", keys["log"], "--witness", keys["w1"],
                     "--max-witness-age=5x"]) == 2  # fmt: skip
    assert "--max-witness-age: '5x' is not a duration" in capsys.readouterr().err
    assert cli_main(["verify-receipt", str(path), "--key", keys["log"],
                     "--max-witness-age", "1h"]) == 2  # fmt: skip
    assert "--max-witness-age needs --witness keys" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["table-history", "dispute"])
def test_table_answers_against_an_export_take_the_witnesses_as_verify_does(
    tmp_path: Path, keys: dict[str, str], capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """``table-history`` and ``dispute --against`` check the export with ``verify``'s code: a
    checkpoint K witnesses cosigned covering the newest entry proves truncation (exit 0, the
    witnesses named); witnesses only listed (K = 0) do not (NOT CHECKED, exit 4); the regrown
    export fails naming the entries no witnessed checkpoint covers (exit 1)."""
    what = ["--round", "R0"] if command == "dispute" else []
    argv = [command, "--client", "default", "--table", "T0", *what, "--key", keys["log"],
            "--witness", keys["w1"], keys["w2"], "--json"]  # fmt: skip
    clock = FakeClock(NOW * 10**9)
    honest = ["--against", str(_honest(tmp_path))]
    code = audit_main([*argv, *honest, "--min-witnesses", "2"], clock=clock)
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    assert (report["ok"], report["proven_complete"], report["not_checked"]) == (True, True, [])
    # (the newest cosignature first: W2 at T0 + 455, W1 at T0 + 450)
    assert report["witnessed"] == "checkpoint of tree size 441 cosigned by w2.test/w, w1.test/w"
    code = audit_main([*argv, *honest, "--min-witnesses", "0"], clock=clock)
    report = json.loads(capsys.readouterr().out)
    assert code == 4, report
    assert (report["ok"], report["witnessed"]) == (False, None)
    assert report["not_checked"][0].startswith("NOT CHECKED: truncation. No kept checkpoint")
    assert "covers the newest of the export's 441 entries" in report["not_checked"][0]
    code = audit_main([*argv, "--against", str(_forked(tmp_path)), "--min-witnesses", "2"],
                      clock=clock)  # fmt: skip
    captured = capsys.readouterr()
    assert code == 1, captured.out
    assert "entries 392-465: witnessed by none of the 2 keys" in captured.out + captured.err
