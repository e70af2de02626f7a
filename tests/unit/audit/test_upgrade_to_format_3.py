"""A log that goes 1 -> 2 -> 3, built on the release-1 fixture (tests/vectors/v1_log/: nine
format 1 entries and release 1's signed checkpoints): format 2 entries (table chains) after
them, then format 3 entries committing the table map, whose roots come from the definition
(tests/format3.py), with checkpoints signed by the fixture's test key. ``rng-audit verify``
accepts it, consistent with release 1's newest checkpoint, and says where each format starts;
a first map without a format 2 chain, or a format 2 entry after format 3, fails naming it.
The live upgrade (migrate-store, the writer's first format 3 entry) is
tests/integration/test_v1_upgrade.py's.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.cli.audit import main as audit_main
from rng_service.log.entry import GeneratorRef, LogEntry
from rng_service.log.note import Ed25519NoteSigner
from tests.format3 import heads_through, root_of, signed_export, to_format_3

FIXTURE = Path(__file__).resolve().parents[2] / "vectors" / "v1_log"
KEY_SEED = b"rng-service v1 log fixture key!!"  # make_v1_log.py's test-only key
ORIGIN = "v1-fixture.example/log"
VKEY = (FIXTURE / "verifier.vkey").read_text().strip()
SIGNER = Ed25519NoteSigner(ORIGIN, Ed25519PrivateKey.from_private_bytes(KEY_SEED))

_LINES = [json.loads(line) for line in (FIXTURE / "export.jsonl").read_text().splitlines()]
RELEASE_1 = [base64.b64decode(line["entry"]) for line in _LINES if line.get("type") == "entry"]
NEWEST_RELEASE_1_CHECKPOINT = _LINES[2]["note"]  # tree size 9


def _chained(index: int, table: str, seq: int, prev: int | None) -> bytes:
    """A format 2 spin of a new round (as the release that wrote format 2 logged them)."""
    return LogEntry(
        index=index, timestamp_ns=1_767_225_600_000_000_000 + index * 10**9,
        kind="roulette_spin", params={"wheel": "double_zero"},
        outcome={"final": {"number": str(index % 37)}}, client="default", table_id=table,
        round_id=f"N{index}", session_id="", request_id=f"upgrade-{index}",
        generator=GeneratorRef("9f2c" * 8, 1, False), slot="spin", table_seq=seq,
        table_prev=prev, version=2,
    ).encode()  # fmt: skip


# 0-8 format 1 (release 1); 9-11 format 2: T1 seq 1, T2 seq 1, T1 seq 2; 12-15 format 3:
# T2 seq 2, T3 seq 1, T1 seq 3, T3 seq 2.
CHAINS = [(9, "T1", 1, None), (10, "T2", 1, None), (11, "T1", 2, 9), (12, "T2", 2, 10),
          (13, "T3", 1, None), (14, "T1", 3, 11), (15, "T3", 2, 13)]  # fmt: skip
ENTRIES = RELEASE_1 + [_chained(*c) for c in CHAINS]


def _verify(
    data: list[bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    export, kept = tmp_path / "log.export", tmp_path / "release-1.note"
    export.write_text("".join(signed_export(data, SIGNER, ORIGIN, sizes=(9, 12, len(data)))))
    kept.write_text(NEWEST_RELEASE_1_CHECKPOINT)
    code = audit_main(["verify", str(export), "--key", VKEY, "--checkpoint", str(kept)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_fixture_key_signs_what_release_1_signed() -> None:
    assert SIGNER.verifier().verifier_key() == VKEY
    assert [LogEntry.decode(e).version for e in RELEASE_1] == [1] * 9


def test_a_log_going_1_2_3_verifies_against_release_1s_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = to_format_3(ENTRIES, 12)
    assert [LogEntry.decode(e).version for e in data] == [1] * 9 + [2] * 3 + [3] * 4
    code, out, err = _verify(data, tmp_path, capsys)
    # Release 1's checkpoint (tree size 9) does not cover the newest entry: truncation past
    # it is NOT CHECKED, exit status 4 (docs/cli.md, convention 9).
    assert code == 4, err
    assert "NOT CHECKED: truncation" in out
    assert out.startswith("OK: 16 entries of v1-fixture.example/log")
    assert "and with 1 kept checkpoint(s)" in out
    assert "entries 0 to 8 are of entry format 1; format 2 (slots and table chains) from entry " \
        "9 on, where every table chain starts" in out  # fmt: skip
    assert "entries 9 to 11 are of entry format 2; format 3 (committed table map roots) from " \
        "entry 12 on" in out  # fmt: skip
    assert "the root committed by each of the 4 format 3 entries recomputed and equal" in out
    assert "table chains: 3 followed, each unbroken" in out


def test_a_log_going_1_3_verifies_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The upgrade from release 1 straight to format 3 (no format 2 entry): the first map holds
    # the first format 3 entry's head alone.
    code, out, err = _verify(to_format_3(ENTRIES, 9), tmp_path, capsys)
    assert code == 4, err  # release 1's checkpoint covers entries 0-8 only
    assert "entries 0 to 8 are of entry format 1; format 3 (slots, table chains and committed " \
        "table map roots) from entry 9 on, where every table chain starts" in out  # fmt: skip
    assert "each of the 7 format 3 entries" in out


def test_a_first_map_without_a_format_2_chain_fails_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The migration left T1's chain (format 2 entries 9 and 11) out of the first map.
    heads = {k: v for k, v in heads_through(ENTRIES, 13).items() if k[1] != "T1"}
    code, out, err = _verify(to_format_3(ENTRIES, 12, roots={12: root_of(heads)}), tmp_path,
                             capsys)  # fmt: skip
    assert code == 1
    assert out == ""
    assert "entry 12 (line 17) commits the table map root" in err
    assert (
        "the first table whose head differs is table 'T1' of client 'default': the committed "
        "root has no head for it, the entries put it at entry 11 (seq 2)"
    ) in err


def test_format_2_after_format_3_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = to_format_3(ENTRIES, 12)
    data[14] = ENTRIES[14]  # T1's seq 3 written in format 2 again
    code, _, err = _verify(data, tmp_path, capsys)
    assert code == 1
    assert "entry 14 (line 19): a format 2 entry after the format 3 entry 12: the log's entry " \
        "format never goes back" in err  # fmt: skip
