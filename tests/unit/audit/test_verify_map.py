"""``rng-audit verify`` and the table map (docs/log-format.md, "Table map"; "Verifying an
export" step 3): the map rebuilt from an export in log order and every format 3 entry's
committed root checked; a wrong root named with its entry and the first table whose head
differs; the format never going back from 3; export versions.

The format 3 logs come from tests/format3.py, whose roots are computed from the definition
with nothing of rng_service; the verifier's incremental map is held to the same definition
in test_map_check.py.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.audit import ExportFormatError, VerificationFailure, verify_export
from rng_service.audit.verify import canonical_entry_index
from rng_service.cli.audit import main as audit_main
from rng_service.log.entry import EntryFormatError, GeneratorRef, LogEntry
from rng_service.log.note import Ed25519NoteSigner
from tests.format3 import heads_through, root_of, signed_export, to_format_3, with_root

ORIGIN = "audit.test/log"
SIGNER = Ed25519NoteSigner("audit-test", Ed25519PrivateKey.from_private_bytes(b"\x01" * 32))
KEYS = [SIGNER.verifier()]


def _entries(n: int, *, version: int = 2, start: int = 0, tables: int = 3) -> list[bytes]:
    """Entries ``start`` .. ``start + n - 1`` round-robin on ``tables`` tables (format 2:
    chains from ``start``)."""
    chain: dict[str, Any] = {}
    out = []
    for i in range(start, start + n):
        if version == 2:
            seq = (i - start) // tables + 1
            prev = i - tables if seq > 1 else None
            chain = {"slot": "spin", "table_seq": seq, "table_prev": prev}
        out.append(
            LogEntry(
                index=i, timestamp_ns=1_767_225_600_000_000_000 + i * 1000, kind="roulette_spin",
                params={"wheel": "double_zero"}, outcome={"final": {"number": str(i % 38)}},
                client="default", table_id=f"T{i % tables}", round_id=f"R{i}", session_id="",
                request_id=f"q{i}", generator=GeneratorRef("ab12", 0, False), version=version,
                **chain,
            ).encode()
        )  # fmt: skip
    return out


# 5 format 1 entries, 10 format 2 (chains start at 5), 15 format 3 (from 15).
MIXED = _entries(5, version=1) + _entries(25, start=5)
UPGRADED = to_format_3(MIXED, 15)


def _verify(data: list[bytes], **kw: Any) -> Any:
    return verify_export(
        signed_export(data, SIGNER, ORIGIN, sizes=(min(7, len(data)), len(data))), KEYS, **kw
    )


def _failure(data: list[bytes]) -> VerificationFailure:
    with pytest.raises(VerificationFailure) as info:
        _verify(data)
    return info.value


def test_a_log_going_1_2_3_verifies_and_every_committed_root_is_checked() -> None:
    report = _verify(UPGRADED)
    assert (report.first_format_2, report.first_format_3, report.map_roots) == (5, 15, 15)
    assert report.chains == 3
    # A log written in format 3 from its first entry, and one without format 3.
    fresh = to_format_3(_entries(12, tables=4), 0)
    assert _verify(fresh).map_roots == 12
    assert _verify(fresh).first_format_3 == 0
    assert _verify(MIXED).map_roots == 0
    assert _verify(MIXED).first_format_3 is None
    # --fast decodes no entry: nothing is said of the map.
    assert _verify(UPGRADED, check_entries=False).map_roots is None


def test_the_first_map_holds_the_format_2_heads() -> None:
    # The writer's migration built the first map from the format 1 entries' "heads" too:
    # format 1 entries are in no chain, so the first root is wrong.
    heads = heads_through(MIXED, 16)
    with_v1 = {**heads, ("default", "T9"): (0, 1)}
    data = to_format_3(MIXED, 15, roots={15: root_of(with_v1)})
    failure = _failure(data)
    assert failure.index == 15
    assert "no single table's head explains the difference" in str(failure)
    # ... or without the format 2 heads: the first root is that of entry 15's head alone.
    only = to_format_3(MIXED, 15, roots={15: root_of({("default", "T0"): (15, 4)})})
    assert _failure(only).index == 15


def test_a_wrong_root_names_the_entry_and_its_own_table_first() -> None:
    # Entry 20 (T2, seq 6 after entry 17) commits the map before its own head: the writer did
    # not apply it.
    data = to_format_3(MIXED, 15, roots={20: root_of(heads_through(MIXED, 20))})
    failure = _failure(data)
    assert failure.index == 20
    assert str(failure).startswith(
        f"entry 20 (line 24) commits the table map root {root_of(heads_through(MIXED, 20)).hex()}"
        f", but the heads of the entries up to it give {root_of(heads_through(MIXED, 21)).hex()}"
        ": the first table whose head differs is table 'T2' of client 'default' (this entry's "
        "own table: its head was not applied): the committed root has its head at entry 17 "
        "(seq 5), the entries put it at entry 20 (seq 6)"
    )


def test_a_wrong_root_names_another_table_missing_or_behind() -> None:
    # A hidden head: T1's chain left out of the map committed by entry 21 (T0's).
    hidden = {k: v for k, v in heads_through(MIXED, 22).items() if k != ("default", "T1")}
    failure = _failure(to_format_3(MIXED, 15, roots={21: root_of(hidden)}))
    assert failure.index == 21
    assert (
        "the first table whose head differs is table 'T1' of client 'default': the committed "
        "root has no head for it, the entries put it at entry 19 (seq 5)"
    ) in str(failure)
    # T1 one entry behind in the map entry 21 commits: its head at entry 16, not 19.
    behind = {**heads_through(MIXED, 22), ("default", "T1"): (16, 4)}
    failure = _failure(to_format_3(MIXED, 15, roots={21: root_of(behind)}))
    assert (
        "table 'T1' of client 'default': the committed root has its head at entry 16 (seq 4), "
        "the entries put it at entry 19 (seq 5)"
    ) in str(failure)
    assert "own table" not in str(failure)


def test_a_root_no_single_table_explains_fails_all_the_same() -> None:
    failure = _failure(to_format_3(MIXED, 15, roots={27: bytes(32)}))
    assert failure.index == 27
    assert "commits the table map root " + "00" * 32 in str(failure)
    assert "no single table's head explains the difference" in str(failure)
    # Only the entry check recomputes the map: the signatures and the tree hold.
    _verify(to_format_3(MIXED, 15, roots={27: bytes(32)}), check_entries=False)


def test_a_root_of_a_later_map_is_wrong_too() -> None:
    # Entry 24 commits the map after entry 25, whose head the entries up to 24 do not hold: no
    # earlier head or absence explains it (the verifier knows no later heads then).
    failure = _failure(to_format_3(MIXED, 15, roots={24: root_of(heads_through(MIXED, 26))}))
    assert failure.index == 24
    assert "no single table's head explains the difference" in str(failure)


def test_format_2_after_format_3_is_refused_naming_where_3_starts() -> None:
    back = UPGRADED[:22] + MIXED[22:]
    failure = _failure(back)
    assert failure.index == 22
    assert str(failure) == (
        "entry 22 (line 26): a format 2 entry after the format 3 entry 15: the log's entry "
        "format never goes back, so it was inserted or forged"
    )
    # Format 1 after format 3: named against the first chained entry, as after format 2.
    v1 = UPGRADED[:25] + _entries(1, version=1, start=25) + UPGRADED[26:]
    assert "a format 1 entry after the format 2 entry 5" in str(_failure(v1))
    fresh = to_format_3(_entries(6), 0)
    back_to_1 = fresh[:4] + _entries(1, version=1, start=4) + fresh[5:]
    assert "a format 1 entry after the format 3 entry 0" in str(_failure(back_to_1))


def test_export_versions_hold_the_entry_formats_of_their_release() -> None:
    with pytest.raises(ExportFormatError, match=r"line 18: entry: a format 3 entry in an "
                       r"rng-audit-export/v2 file"):  # fmt: skip
        verify_export(signed_export(UPGRADED, SIGNER, ORIGIN, form="rng-audit-export/v2"), KEYS)
    # A v2 export of format 1 and 2 entries still reads; so does v1 of format 1.
    assert verify_export(signed_export(MIXED, SIGNER, ORIGIN, form="rng-audit-export/v2"),
                         KEYS).first_format_2 == 5  # fmt: skip
    assert verify_export(signed_export(MIXED[:5], SIGNER, ORIGIN, form="rng-audit-export/v1"),
                         KEYS).tree_size == 5  # fmt: skip


@pytest.mark.parametrize(
    "spelling",
    ["AB" * 32, "ab" * 31, "ab" * 33, "g" * 64, "", "0x" + "ab" * 31],
)
def test_a_table_map_not_of_64_lowercase_hex_digits_is_no_entry(spelling: str) -> None:
    good = UPGRADED[16]
    root = good.split(b'"table_map":"')[1][:64]
    bad = list(UPGRADED)
    bad[16] = good.replace(root, spelling.encode("ascii"))
    failure = _failure(bad)
    assert failure.index == 16
    assert "not a canonical entry (entry field 'table_map' must be 64 lowercase hex" in str(failure)


def test_cli_verify_reports_the_map_and_fails_on_a_wrong_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = SIGNER.verifier().verifier_key()
    good, bad = tmp_path / "good.export", tmp_path / "bad.export"
    good.write_text("".join(signed_export(UPGRADED, SIGNER, ORIGIN)))
    wrong = to_format_3(MIXED, 15, roots={20: root_of(heads_through(MIXED, 20))})
    bad.write_text("".join(signed_export(wrong, SIGNER, ORIGIN)))
    # 4: verified, but no kept checkpoint covers the newest entry (truncation NOT CHECKED)
    assert audit_main(["verify", str(good), "--key", key, "--origin", ORIGIN]) == 4
    out = capsys.readouterr().out
    assert "entries 0 to 4 are of entry format 1; format 2 (slots and table chains) from entry " \
        "5 on, where every table chain starts" in out  # fmt: skip
    assert "entries 5 to 14 are of entry format 2; format 3 (committed table map roots) from " \
        "entry 15 on" in out  # fmt: skip
    assert "table map: rebuilt from the entries' heads in log order; the root committed by " \
        "each of the 15 format 3 entries recomputed and equal" in out  # fmt: skip
    # --fast decodes no entry: it says so, and the wrong root goes unseen.
    assert audit_main(["verify", str(bad), "--key", key, "--origin", ORIGIN, "--fast"]) == 4
    out = capsys.readouterr().out
    assert "table map" not in out.split("NOT CHECKED")[0]
    assert "NOT CHECKED: the entries' own bytes (--fast): their canonical form and format, the " \
        "table chains, the committed table map roots and the round rules" in out  # fmt: skip
    assert audit_main(["verify", str(bad), "--key", key, "--origin", ORIGIN]) == 1
    err = capsys.readouterr().err
    assert "entry 20 (line 23) commits the table map root" in err
    assert "table 'T2' of client 'default' (this entry's own table" in err


def test_with_root_writes_what_log_entry_encodes() -> None:
    # The helper's spelling of format 3 is the entry module's (a check of the test's tool).
    record = LogEntry.decode(UPGRADED[16])
    assert record.version == 3
    assert record.table_map == root_of(heads_through(MIXED, 17))
    assert record.encode() == UPGRADED[16]
    assert (
        with_root(MIXED[16], bytes(32)) == LogEntry.decode(with_root(MIXED[16], bytes(32))).encode()
    )


def test_the_reference_check_accepts_what_log_entry_decode_accepts_in_format_3() -> None:
    # As tests/unit/log/test_audit.py holds them together for formats 1 and 2.
    base = UPGRADED[16]
    root = base.split(b'"table_map":"')[1][:64]
    member = b',"table_map":"' + root + b'"'
    rng = random.Random(3)
    mutations = [
        base, base.replace(root, root.upper()), base.replace(root, root[:63]),
        base.replace(root, root + b"0"), base.replace(root, b"g" + root[1:]),
        base.replace(member, b""), base.replace(member, b',"table_map":null'),
        base.replace(member, b',"table_map":0'), base.replace(b'"v":3}', b'"v":2}'),
        base.replace(b'"v":3}', b'"v":4}'), MIXED[16].replace(b'"v":2}', b'"v":3}'),
        base.replace(member, b"").replace(b',"time"', member + b',"time"'),
    ]  # fmt: skip
    for _ in range(300):
        data = bytearray(base)
        data[rng.randrange(len(data))] = rng.randrange(32, 127)
        mutations.append(bytes(data))
    accepted = 0
    for data in mutations:
        try:
            expected: int | None = LogEntry.decode(data).index
        except EntryFormatError:
            expected = None
        try:
            got: int | None = canonical_entry_index(data)
        except EntryFormatError:
            got = None
        if got != expected:  # the one known difference: the time's fraction (test_audit.py)
            assert got is None, data
            assert not re.fullmatch(r"[0-9T:-]{19}\.[0-9]{6}Z", json.loads(data)["time"]), data
        accepted += got is not None
    assert 2 <= accepted < 100
