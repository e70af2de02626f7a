"""rng_service.audit: the export format and the offline verifier, without a service.

A synthetic log (real canonical entries, a real Ed25519 signer) is written with
``write_export`` and read back by ``verify_export``: recomputed roots equal the RFC 6962
reference at every checkpoint; every single random mutation of an export line (a changed byte,
a deletion, a swap, a duplicate) is caught; receipts check against an export and against a newer
checkpoint with proofs from the reference definitions.
"""

from __future__ import annotations

import base64
import io
import json
import random
import re
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.audit import (
    EXPORT_FORMAT,
    EntryChecker,
    ExportFormatError,
    ExportReader,
    MissingEntries,
    VerificationFailure,
    check_receipt_against_export,
    check_receipt_against_head,
    open_head,
    pinned_origin,
    verify_export,
    write_export,
)
from rng_service.errors import IntegrityError, InvalidArgument
from rng_service.log import merkle
from rng_service.log.entry import EntryFormatError, GeneratorRef, LogEntry
from rng_service.log.note import Checkpoint, Ed25519NoteSigner, sign_note
from rng_service.log.receipt import Receipt, verify_receipt

ORIGIN = "audit.test/log"
SIGNER = Ed25519NoteSigner("audit-test", Ed25519PrivateKey.from_private_bytes(b"\x01" * 32))
OTHER = Ed25519NoteSigner("audit-test", Ed25519PrivateKey.from_private_bytes(b"\x02" * 32))
KEYS = [SIGNER.verifier()]


def _entries(n: int, *, version: int = 2, start: int = 0) -> list[bytes]:
    """Entries ``start`` .. ``start + n - 1`` on three tables (format 2: chains from ``start``)."""
    chain: dict[str, Any] = {}
    out = []
    for i in range(start, start + n):
        if version == 2:
            seq = (i - start) // 3 + 1
            chain = {"slot": "spin", "table_seq": seq, "table_prev": i - 3 if seq > 1 else None}
        out.append(
            LogEntry(
                index=i, timestamp_ns=1_767_225_600_000_000_000 + i * 1000, kind="roulette_spin",
                params={"wheel": "double_zero"}, outcome={"final": {"number": str(i % 38)}},
                client="default", table_id=f"T{i % 3}", round_id=f"R{i}", session_id="",
                request_id=f"q{i}", generator=GeneratorRef("ab12", 0, False), version=version,
                **chain,
            ).encode()
        )  # fmt: skip
    return out


DATA = _entries(50)
LEAVES = [merkle.leaf_hash(d) for d in DATA]


def _note(size: int, *, root: bytes | None = None, signer: Ed25519NoteSigner = SIGNER) -> str:
    if root is None:
        root = merkle.root_from_leaf_hashes(LEAVES[:size])
    return sign_note(Checkpoint(ORIGIN, size, root).body(), [signer]).decode()


def _export(n: int = 50, sizes: tuple[int, ...] = (1, 7, 8, 31, 50)) -> str:
    out = io.StringIO()
    write_export(
        out,
        origin=ORIGIN,
        checkpoints=[(_note(s), s * 10) for s in sizes],
        entries=[(i, LEAVES[i], DATA[i]) for i in range(n)],
        tree_size=n,
    )
    return out.getvalue()


def test_round_trip_and_roots() -> None:
    text = _export()
    header = json.loads(text.splitlines()[0])
    assert header == {"format": EXPORT_FORMAT, "origin": ORIGIN, "tree_size": 50, "checkpoints": 5}
    report = verify_export(text.splitlines(keepends=True), KEYS, want_sizes=[0, 13])
    assert report.tree_size == 50
    assert report.root_hash == merkle.root_from_leaf_hashes(LEAVES)
    for size in (0, 1, 7, 8, 13, 31, 50):
        assert report.roots[size] == merkle.root_from_leaf_hashes(LEAVES[:size])
    assert [h.checkpoint.size for h in report.heads] == [1, 7, 8, 31, 50]
    reader = ExportReader(io.StringIO(text))
    assert [c.published_at_ns for c in reader.checkpoints()] == [10, 70, 80, 310, 500]
    entries = list(reader.entries())
    assert [e.data for e in entries] == DATA
    assert entries[0].line == 7


def test_an_empty_export_proves_nothing_unless_allowed() -> None:
    out = io.StringIO()
    write_export(out, origin=ORIGIN, checkpoints=[(_note(0), 1)], entries=[], tree_size=0)
    lines = out.getvalue().splitlines()
    with pytest.raises(VerificationFailure, match=r"the export has no entries .*--allow-empty"):
        verify_export(lines, KEYS)
    report = verify_export(lines, KEYS, allow_empty=True)
    assert report.root_hash == merkle.EMPTY_ROOT
    nothing = io.StringIO()
    write_export(nothing, origin=ORIGIN, checkpoints=[], entries=[], tree_size=0)
    with pytest.raises(VerificationFailure, match=r"no entries \(header: 0 entries, 0 checkp"):
        verify_export(nothing.getvalue().splitlines(), KEYS)
    assert verify_export(nothing.getvalue().splitlines(), KEYS, allow_empty=True).heads == ()


def test_an_export_without_a_checkpoint_fails_before_reading_entries() -> None:
    out = io.StringIO()
    write_export(out, origin=ORIGIN, checkpoints=[], entries=[(0, LEAVES[0], DATA[0])],
                 tree_size=1)  # fmt: skip
    with pytest.raises(VerificationFailure, match="the export has no checkpoint"):
        verify_export(out.getvalue().splitlines(), KEYS)
    # Allowed empty or not, its entry is covered by no signature.
    with pytest.raises(VerificationFailure, match="no signed checkpoint covers it"):
        verify_export(out.getvalue().splitlines(), KEYS, allow_empty=True)


def test_the_origin_is_pinned_by_option_or_by_the_key_name() -> None:
    lines = _export().splitlines(keepends=True)
    assert verify_export(lines, KEYS, origin=pinned_origin(KEYS, ORIGIN)).origin == ORIGIN
    by_name = pinned_origin(KEYS)  # SIGNER is named "audit-test", not the origin
    assert (by_name.origin, by_name.source) == ("audit-test", "the name of the key")
    with pytest.raises(
        VerificationFailure,
        match="the export is of log 'audit.test/log', not of the expected log 'audit-test' "
        r"\(the name of the key; if the log's key is not named by its origin, pass --origin\)",
    ):
        verify_export(lines, KEYS, origin=by_name)
    with pytest.raises(VerificationFailure, match=r"not of the expected log 'x.example/log'"):
        verify_export(lines, KEYS, origin=pinned_origin(KEYS, "x.example/log"))
    named = Ed25519NoteSigner(ORIGIN, Ed25519PrivateKey.from_private_bytes(b"\x03" * 32))
    rotated = Ed25519NoteSigner(ORIGIN, Ed25519PrivateKey.from_private_bytes(b"\x04" * 32))
    assert pinned_origin([named.verifier(), rotated.verifier()]).origin == ORIGIN
    with pytest.raises(InvalidArgument, match=r"different names \(audit-test, audit.test/log\)"):
        pinned_origin([named.verifier(), SIGNER.verifier()])
    with pytest.raises(InvalidArgument, match="at least one verifier key"):
        pinned_origin([])
    with pytest.raises(InvalidArgument, match="origin"):
        pinned_origin(KEYS, "")


def test_writer_refuses_gaps_and_wrong_counts_as_integrity_failures() -> None:
    gap = [(0, LEAVES[0], DATA[0]), (2, LEAVES[2], DATA[2])]
    with pytest.raises(MissingEntries, match=r"no entry 1 .*next one it gave is 2") as e:
        write_export(io.StringIO(), origin=ORIGIN, checkpoints=[], entries=gap, tree_size=3)
    assert isinstance(e.value, IntegrityError)
    assert e.value.index == 1
    with pytest.raises(MissingEntries, match=r"gave 1 entries, .* covers 2: entries \[1, 2\)"):
        write_export(io.StringIO(), origin=ORIGIN, checkpoints=[], entries=gap[:1], tree_size=2)


def _mutations(lines: list[str], rng: random.Random) -> list[tuple[str, list[str]]]:
    first = 1 + json.loads(lines[0])["checkpoints"]
    out: list[tuple[str, list[str]]] = []
    for _ in range(12):
        k = rng.randrange(first, len(lines))
        copy = list(lines)
        obj = json.loads(copy[k])
        data = bytearray(base64.b64decode(obj["entry"]))
        pos = rng.randrange(len(data))
        data[pos] ^= 1 << rng.randrange(8)
        obj["entry"] = base64.b64encode(bytes(data)).decode()
        if rng.random() < 0.5:
            obj["leaf_hash"] = merkle.leaf_hash(bytes(data)).hex()
        copy[k] = json.dumps(obj) + "\n"
        out.append((f"flip line {k} byte {pos}", copy))
    for _ in range(6):
        k = rng.randrange(first, len(lines))
        out.append((f"delete line {k}", lines[:k] + lines[k + 1 :]))
        j = rng.randrange(first, len(lines) - 1)
        swapped = list(lines)
        swapped[j], swapped[j + 1] = swapped[j + 1], swapped[j]
        out.append((f"swap lines {j}, {j + 1}", swapped))
        out.append((f"duplicate line {k}", lines[: k + 1] + lines[k:]))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_every_random_mutation_is_caught(seed: int) -> None:
    lines = _export().splitlines(keepends=True)
    rng = random.Random(seed)
    for what, mutated in _mutations(lines, rng):
        try:
            verify_export(mutated, KEYS)
        except (VerificationFailure, ExportFormatError):
            continue
        pytest.fail(f"not caught: {what}")


def test_failure_names_the_index() -> None:
    lines = _export().splitlines(keepends=True)
    del lines[6 + 17]
    with pytest.raises(VerificationFailure, match=r"entry 17 .*index field is 18") as info:
        verify_export(lines, KEYS)
    assert info.value.index == 17


def test_checkpoint_checks() -> None:
    lines = _export().splitlines(keepends=True)
    with pytest.raises(VerificationFailure, match="no signature from a known key"):
        verify_export(lines, [OTHER.verifier()])
    with pytest.raises(InvalidArgument, match="at least one verifier key"):
        verify_export(lines, [])
    fork = _note(8, root=b"\x00" * 32)
    with pytest.raises(VerificationFailure, match="fork: checkpoint at line 4 and kept"):
        verify_export(lines, KEYS, kept=[("kept", fork)])
    beyond = _note(51, root=b"\x00" * 32)
    with pytest.raises(VerificationFailure, match=r"kept is for tree size 51.*truncated"):
        verify_export(lines, KEYS, kept=[("kept", beyond)])
    other_log = sign_note(Checkpoint("other/log", 8, LEAVES[0]).body(), [SIGNER]).decode()
    with pytest.raises(VerificationFailure, match="checkpoint of log 'other/log'"):
        verify_export(lines, KEYS, kept=[("kept", other_log)])
    with pytest.raises(InvalidArgument, match="kept: not a signed checkpoint"):
        verify_export(lines, KEYS, kept=[("kept", "garbage")])
    # Co-signed by an unknown key as well: still fine, one known signature suffices.
    cosigned = sign_note(
        Checkpoint(ORIGIN, 50, merkle.root_from_leaf_hashes(LEAVES)).body(), [OTHER, SIGNER]
    ).decode()
    verify_export(lines, KEYS, kept=[("kept", cosigned)])


def test_uncovered_entries_fail() -> None:
    lines = _export(sizes=(1, 31)).splitlines(keepends=True)
    with pytest.raises(VerificationFailure, match=r"entry 31 .*no signed checkpoint covers it"):
        verify_export(lines, KEYS)


def _receipt(index: int, size: int) -> Receipt:
    return Receipt(
        index=index, entry=DATA[index], leaf_hash=LEAVES[index],
        inclusion_proof=tuple(merkle.inclusion_proof(LEAVES[:size], index)), tree_size=size,
        checkpoint=_note(size), replayed=False,
    )  # fmt: skip


def test_receipt_against_export_and_head() -> None:
    receipt = _receipt(5, 9)
    verified = verify_receipt(receipt, KEYS)
    report = verify_export(_export().splitlines(), KEYS, want_sizes=[9], want_indices=[5])
    check_receipt_against_export(receipt, verified, report)
    short = verify_export(_export(8, (8,)).splitlines(), KEYS, want_indices=[5])
    with pytest.raises(VerificationFailure, match="beyond the export's 8 entries"):
        check_receipt_against_export(receipt, verified, short)
    head = open_head(_note(50), KEYS, source="latest", origin=ORIGIN)
    check_receipt_against_head(
        receipt, verified, head,
        consistency_proof=merkle.consistency_proof(LEAVES, 9),
        inclusion_proof=merkle.inclusion_proof(LEAVES, 5),
    )  # fmt: skip
    forked = open_head(_note(50, root=b"\x03" * 32), KEYS, source="latest", origin=ORIGIN)
    with pytest.raises(VerificationFailure, match="fork: the receipt's checkpoint"):
        check_receipt_against_head(
            receipt, verified, forked,
            consistency_proof=merkle.consistency_proof(LEAVES, 9),
            inclusion_proof=merkle.inclusion_proof(LEAVES, 5),
        )  # fmt: skip
    with pytest.raises(VerificationFailure, match="entry 6 is not in the log"):
        check_receipt_against_head(
            _receipt(6, 9), verify_receipt(_receipt(6, 9), KEYS), head,
            consistency_proof=merkle.consistency_proof(LEAVES, 9),
            inclusion_proof=merkle.inclusion_proof(LEAVES, 5),
        )  # fmt: skip


def _entry_mutations(rng: random.Random) -> list[bytes]:
    base = DATA[7]
    out = [
        base,
        base.replace(b'"index":7', b'"index":7.0'),
        base.replace(b'"index":7', b'"index":9007199254740992'),
        base.replace(b'"index":7', b'"index":true'),
        base.replace(b'"kind":', b'"kind" :'),
        base.replace(b'"client":"default"', b'"client":"d\\u0065fault"'),
        base.replace(b'"client":"default"', b'"client":"d\xc3\xa9fault"'),
        base.replace(b'{"client"', b'{"cli\xc3\xa9nt":1,"client"'),
        base.replace(b'"epoch":0', b'"epoch":false'),
        base.replace(b"T00:00:00", b"T24:00:00"),
        base.replace(b"2026-01-01", b"2026-02-30"),
        base.replace(b',"v":2', b',"v":1'),
        base.replace(b',"v":2', b',"v":3'),
        base.replace(b',"v":2', b""),
        base.replace(b'"table_seq":3', b'"table_seq":1'),
        base.replace(b'"table_seq":3', b'"table_seq":0'),
        base.replace(b'"table_prev":4', b'"table_prev":7'),
        base.replace(b'"table_prev":4', b'"table_prev":null'),
        base.replace(b'"table_prev":4', b'"table_prev":"4"'),
        base.replace(b'"slot":"spin"', b'"slot":""'),
        base.replace(b'"slot":"spin",', b""),
        b"[" + base + b"]",
        base + b" ",
        b"\xff" + base,
        base.replace(b'"params":{', b'"params":{"x":NaN,'),
    ]
    for _ in range(300):
        data = bytearray(base)
        data[rng.randrange(len(data))] = rng.randrange(32, 127)
        out.append(bytes(data))
    return out


def test_canonical_entry_index_agrees_with_log_entry_decode() -> None:
    from rng_service.audit.verify import canonical_entry_index
    from rng_service.log.entry import EntryFormatError

    assert b"T00:00:00" in DATA[7]
    assert b"2026-01-01" in DATA[7]
    assert b'"table_prev":4,"table_seq":3' in DATA[7]
    accepted = 0
    for data in _entry_mutations(random.Random(8785)):
        try:
            expected: int | None = LogEntry.decode(data).index
        except EntryFormatError:
            expected = None
        try:
            got: int | None = canonical_entry_index(data)
        except EntryFormatError:
            got = None
        if got != expected:
            # The one known difference: LogEntry.decode does not check the time's "." and
            # fraction digits (reported); the verifier is stricter there, never laxer.
            assert got is None, data
            time_text = json.loads(data)["time"]
            assert not re.fullmatch(r"[0-9T:-]{19}\.[0-9]{6}Z", time_text), data
        accepted += got is not None
    assert 2 <= accepted < 100  # both outcomes were exercised


def test_the_verifier_needs_no_database_no_grpc_no_service() -> None:
    import subprocess
    import sys

    code = "import json, sys, rng_service.audit; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    forbidden = ("grpc", "sqlite3", "psycopg", "prometheus_client", "rng_service._proto",
                 "rng_service.storage", "rng_service.service", "rng_service.app")  # fmt: skip
    loaded = json.loads(out.stdout)
    assert "rng_service.audit.verify" in loaded
    bad = [m for m in loaded for f in forbidden if m == f or m.startswith(f + ".")]
    assert not bad


# The verifier's fast path (EntryChecker: entry shape templates) against the reference check
# (canonical_entry_index: decode and re-encode). The checker is taught each base entry's shape
# first, so every mutation below is tried against a template before the reference check.

_AWKWARD = [
    "plain",
    'quote " and \\ backslash /slash',
    "tab\tnewline\ncr\rbs\bff\f",
    "controls \x00\x01\x07\x0b\x0e\x1f and del \x7f",
    "caf\u00e9 \u2028 \U0001f600 \ufffe",
    "",
]


def _varied_entries() -> list[bytes]:
    """Twelve shapes: six format 1 entries (indexes 7-12), then six format 2 (13-18)."""
    out = []
    for version in (1, 2):
        for i, text in enumerate(_AWKWARD):
            chain: dict[str, Any] = {}
            if version == 2:  # a chain's first entry (null) and a later one (an index)
                chain = {"slot": "s" + text, "table_seq": 1 + i % 2 * 4,
                         "table_prev": 3 if i % 2 else None}  # fmt: skip
            out.append(
                LogEntry(
                    index=len(out) + 7,
                    timestamp_ns=1_767_225_600_000_000_000 + i * 86_400 * 10**9,
                    kind="cards", params={"decks": i, "note": text, "max": -(10**15 - 1)},
                    outcome={
                        "cards": ["AS", text, "KD"][: i % 3 + 1], "nested": [[1, 2], [3], []],
                        "none": None, "flags": [True, False], "mixed": [1, "one", {"k": text}],
                        "empty": {}, f"k{i % 3}": i,  # six shapes (with lab_mode)
                    },
                    client=text, table_id=f"T{i}", round_id="R", session_id="s" * i,
                    request_id=f"q{i}",
                    generator=GeneratorRef("g", 2**53 - 1 if i == 5 else i, i % 2 == 0),
                    version=version, **chain,
                ).encode()
            )  # fmt: skip
    return out


_VARIED = _varied_entries()

# (old, new) byte replacements; each is applied to every base entry that contains ``old``.
_NAMED_CHANGES: list[tuple[bytes, bytes]] = [
    # white space
    (b'"kind":', b'"kind": '), (b'"kind":', b'"kind" :'), (b',"kind"', b', "kind"'),
    (b'"kind":', b'"kind":\n'), (b'{"client"', b'{ "client"'), (b'"v":1}', b'"v":1}\n'),
    (b'"v":1}', b'"v":1} '), (b'{"client"', b'\t{"client"'), (b'"v":1}', b'"v":1\r}'),
    # key order, duplicate, extra and missing keys
    (b'"kind":"cards","outcome"', b'"outcome"'),
    (b'{"client"', b'{"client":"x","client"'),
    (b'"kind":"cards",', b'"kind":"cards","kind":"cards",'),
    (b'"decks":', b'"decks":1,"decks":'),
    (b'"flags":[true,false]', b'"flags":[true,false],"flags":[true,false]'),
    (b'"empty":{}', b'"empty":{},"a":1'), (b'"empty":{},', b""),
    (b'"v":1}', b'"v":1,"w":1}'), (b',"v":1}', b"}"), (b'"epoch":', b'"Epoch":'),
    (b'"cards":[', b'"cards":["AS"],"cardz":['), (b'"client":', b'"cli\xc3\xa9nt":'),
    (b'"client":', b'"\\u0063lient":'),
    # string escapes
    (b'"plain"', b'"pl\\u0061in"'), (b'"plain"', b'"pl\\u0061\\u0069n"'),
    (b"/slash", b"\\/slash"), (b"\\u001f", b"\\u001F"), (b"\\u000b", b"\\u000B"),
    (b"\\b", b"\\u0008"), (b"\\n", b"\\u000a"), (b"\\t", b"\\u0009"), (b"\\f", b"\\u000c"),
    (b"\\r", b"\\u000d"), (b"\\n", b"\n"), (b"\\t", b"\t"), (b"\\u0000", b"\x00"),
    (b"\\u0001", b"\\u01"), (b"\\u0001", b"\\x01"), (b"\\u0001", b"\\u0001\\"),
    (b"\x7f", b"\\u007f"), (b"caf\xc3\xa9", b"caf\\u00e9"), (b"caf\xc3\xa9", b"cafe\xcc\x81"),
    (b"\xf0\x9f\x98\x80", b"\\ud83d\\ude00"), (b"\xf0\x9f\x98\x80", b"\\ud83d"),
    (b"\xf0\x9f\x98\x80", b"\xed\xa0\xbd\xed\xb8\x80"), (b"caf\xc3\xa9", b"caf\xc0\xa9"),
    (b"caf\xc3\xa9", b"caf\xc3"), (b"caf\xc3\xa9", b"caf\xe9"), (b"\xe2\x80\xa8", b"\\u2028"),
    (b'"plain"', b"'plain'"), (b'\\"', b'\\\\"'), (b'"q0"', b'"q0'),
    # numbers
    (b'"epoch":0', b'"epoch":0.0'), (b'"epoch":0', b'"epoch":0e0'), (b'"epoch":0', b'"epoch":-0'),
    (b'"epoch":0', b'"epoch":00'), (b'"epoch":0', b'"epoch":+0'), (b'"epoch":1', b'"epoch":1E2'),
    (b'"epoch":1', b'"epoch":01'), (b'"epoch":1', b'"epoch":1.5'), (b'"epoch":1', b'"epoch":-1'),
    (b'"epoch":2', b'"epoch":9007199254740991'), (b'"epoch":2', b'"epoch":9007199254740992'),
    (b'"epoch":2', b'"epoch":1000000000000000'), (b'"epoch":2', b'"epoch":999999999999999'),
    (b'"epoch":2', b'"epoch":-999999999999999'), (b'"epoch":2', b'"epoch":-9007199254740992'),
    (b'"epoch":9007199254740991', b'"epoch":9007199254740990'), (b'"epoch":0', b'"epoch":NaN'),
    (b'"epoch":0', b'"epoch":Infinity'), (b'"epoch":0', b'"epoch":-Infinity'),
    (b'"index":7', b'"index":07'), (b'"index":7', b'"index":7.0'), (b'"index":7', b'"index":8'),
    (b'"index":7', b'"index":-7'), (b'"index":7', b'"index":"7"'), (b'"decks":0', b'"decks":1'),
    (b'"v":1}', b'"v":1.0}'), (b'"v":1}', b'"v":01}'), (b'"v":1}', b'"v":true}'),
    (b'"v":1}', b'"v":2}'), (b'"v":1}', b'"v":"1"}'), (b'"v":1}', b'"v":1e0}'),
    # types and literals
    (b'"lab_mode":false', b'"lab_mode":0'), (b'"lab_mode":false', b'"lab_mode":"false"'),
    (b'"lab_mode":true', b'"lab_mode":null'), (b'"lab_mode":false', b'"lab_mode":False'),
    (b'"lab_mode":false', b'"lab_mode":true'), (b'"none":null', b'"none":nul'),
    (b'"none":null', b'"none":false'), (b'"epoch":0', b'"epoch":false'),
    (b'"client":"plain"', b'"client":1'), (b'"params":{', b'"params":[{'),
    (b'"flags":[true,false]', b'"flags":[true,false,]'), (b'"flags":[true,false]', b"\"flags\":[]"),
    (b'"flags":[true,false]', b'"flags":[true,false,true]'), (b'"flags":[', b'"flags":[1,'),
    (b'"cards":["AS"]', b'"cards":["AS","KD","QH"]'), (b'"cards":["AS"]', b'"cards":["AS",1]'),
    (b'"nested":[[1,2],[3],[]]', b'"nested":[[1,2],[3,4,5],[6],[]]'),
    (b'"nested":[[1,2]', b'"nested":[[1,[2]]'), (b"[]]", b"[]"), (b"[]]", b"[]]]"),
    # time
    (b"T00:00:00", b"T24:00:00"), (b"T00:00:00", b"T23:59:59"), (b"T00:00:00", b"T00:60:00"),
    (b"T00:00:00", b"T00:00:60"), (b"T00:00:00", b"T0:00:00"), (b"T00:00:00", b"t00:00:00"),
    (b"T00:00:00", b" 00:00:00"), (b"2026-01-01", b"2026-02-29"), (b"2026-01-01", b"2028-02-29"),
    (b"2026-01-01", b"2026-13-01"), (b"2026-01-01", b"0000-01-01"), (b"2026-01-01", b"2026-1-01"),
    (b"2026-01-01", b"\\u0032026-01-01"), (b".000000Z", b".00000Z"), (b".000000Z", b".000000"),
    (b".000000Z", b".000000z"), (b".000000Z", b".000000+00:00"), (b".000000Z", b"Z"),
    (b"2026-01-02", b"2026-01-32"), (b"2026-01-02", b"2026-04-31"), (b"2026-01-02", b"9999-12-31"),
    # format 2: the slot and the table chain
    (b'"v":2}', b'"v":1}'), (b'"v":1}', b'"v":2}'), (b'"v":2}', b'"v":3}'),
    (b'"slot":"splain"', b'"slot":""'), (b'"slot":"splain"', b'"slot":null'),
    (b'"slot":"splain"', b'"slot":"plain"'), (b'"slot":"s', b'"slot":"'),
    (b'"table_prev":null,"table_seq":1', b'"table_prev":null,"table_seq":2'),
    (b'"table_prev":null,"table_seq":1', b'"table_prev":0,"table_seq":1'),
    (b'"table_prev":null,"table_seq":1', b'"table_prev":6,"table_seq":2'),
    (b'"table_prev":3,"table_seq":5', b'"table_prev":3,"table_seq":1'),
    (b'"table_prev":3,"table_seq":5', b'"table_prev":3,"table_seq":0'),
    (b'"table_prev":3,"table_seq":5', b'"table_prev":-1,"table_seq":5'),
    (b'"table_prev":3,"table_seq":5', b'"table_prev":99,"table_seq":5'),
    (b'"table_prev":3,"table_seq":5', b'"table_prev":12,"table_seq":5'),
    (b'"table_prev":3,"table_seq":5', b'"table_prev":3.0,"table_seq":5'),
    (b'"table_prev":3,"table_seq":5', b'"table_prev":false,"table_seq":5'),
    (b'"table_prev":3,', b""), (b'"table_seq":5,', b""),
    # the whole text
    (b'{"client"', b'[{"client"'), (b'"v":1}', b'"v":1}]'), (b'"v":1}', b'"v":1}{}'),
    (b'"v":1}', b'"v":1'), (b'{"client"', b'\xef\xbb\xbf{"client"'),
]  # fmt: skip


def _reference(data: bytes) -> int | None:
    from rng_service.audit.verify import canonical_entry_index

    try:
        return canonical_entry_index(data)
    except EntryFormatError:
        return None


def _fast(checker: EntryChecker, data: bytes) -> int | None:
    try:
        return checker.index(data)
    except EntryFormatError:
        return None


def _taught() -> EntryChecker:
    checker = EntryChecker()
    checker.ACTIVE = len(_VARIED)  # more shapes here than a log's usual few
    for i, data in enumerate(_VARIED):
        assert checker.index(data) == i + 7
    assert checker.misses == len(_VARIED)
    for i, data in enumerate(_VARIED):  # now each one is proven by its template ...
        assert checker.check(data) == (i + 7, 1 if i < len(_AWKWARD) else 2)
    # ... but those with a 16-digit integer (2^53 - 1), which only the reference check takes.
    big = sum(b"9007199254740991" in d for d in _VARIED)
    assert big == 2
    assert (checker.hits, checker.misses) == (len(_VARIED) - big, len(_VARIED) + big)
    # No more templates: accepted mutations would crowd the bases' templates out of the few
    # tried for each entry, and the mutations of a base are to be tried against its template.
    checker.COMPILED = 0
    return checker


def test_entry_checker_rejects_exactly_what_the_reference_rejects() -> None:
    checker = _taught()
    tried = accepted = 0
    for base in _VARIED:
        for old, new in _NAMED_CHANGES:
            if old not in base:
                continue
            for data in (base.replace(old, new, 1), base.replace(old, new)):
                tried += 1
                expected = _reference(data)
                assert _fast(checker, data) == expected, (old, new, data)
                accepted += expected is not None
    assert tried > 300
    assert 30 < accepted < tried - 200  # both outcomes were exercised
    assert checker.hits > 30  # ... and templates proved canonical variants


@pytest.mark.parametrize("seed", range(3))
def test_entry_checker_agrees_with_the_reference_on_random_edits(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = b'{}[]:,"\\ \t\n0123456789-+.eEabfnrtuTZ\x00\x1f\x7f\x80\xc3\xa9\xed\xff'
    checker = _taught()
    accepted = 0
    for base in _VARIED:
        for _ in range(400):
            data = bytearray(base)
            for _ in range(rng.choice((1, 1, 1, 2))):
                pos = rng.randrange(len(data))
                what = rng.random()
                if what < 0.6:
                    data[pos] = rng.choice(alphabet)
                elif what < 0.8:
                    data.insert(pos, rng.choice(alphabet))
                else:
                    del data[pos]
            expected = _reference(bytes(data))
            assert _fast(checker, bytes(data)) == expected, bytes(data)
            accepted += expected is not None
    assert accepted > 50


def test_entry_checker_generalises_arrays_and_stays_bounded() -> None:
    checker = _taught()
    longer = _VARIED[0].replace(b'"cards":["AS"]', b'"cards":["AS","KD","QH","\\n"]')
    hits = checker.hits
    assert _reference(longer) == 7
    assert checker.index(longer) == 7
    assert checker.hits == hits + 1  # proven by the template of a one-card entry
    small = EntryChecker()
    small.COMPILED = 2
    for data in _VARIED * 2:  # twelve shapes, two templates: the rest by the reference check
        assert small.index(data) == _reference(data)
    assert (small.hits, small.misses) == (2, 2 * len(_VARIED) - 2)


def test_entry_checker_gives_up_on_a_log_without_repeated_shapes() -> None:
    checker = EntryChecker()
    checker.GIVE_UP = 3
    for data in _VARIED[:4]:  # four shapes: four misses, the fourth over the limit
        assert checker.index(data) == _reference(data)
    for data in _VARIED[:4]:  # the templates learned are no longer tried
        assert checker.index(data) == _reference(data)
    assert (checker.hits, checker.misses) == (0, 8)
    with pytest.raises(EntryFormatError, match="not in canonical form"):
        checker.index(_VARIED[0].replace(b'"kind":', b'"kind": '))


def test_verify_export_with_awkward_entries() -> None:
    half = len(_AWKWARD)  # format 1 entries first: a log's format never goes back
    v1, v2 = _varied_entries()[:half], _varied_entries()[half:]
    entries = [e.replace(b'"index":%d' % (i % half + 7 + (i >= 3 * half) * half),
                         b'"index":%d' % i)
               for i, e in enumerate(v1 * 3 + v2 * 3)]  # fmt: skip
    # Each repetition its own request and round, as the service logs them (a request id and a
    # round's slot are logged once: RoundTracker).
    entries = [e.replace(b'"request_id":"q', b'"request_id":"e%dq' % i)
                .replace(b'"round_id":"R"', b'"round_id":"R%d"' % i)
               for i, e in enumerate(entries)]  # fmt: skip
    # The format 2 entries as the sequencer numbers them: three of each (client, table) chain.
    for i in range(3 * half, 6 * half):
        r = (i - 3 * half) // half  # which repetition: seq r + 1, after entry i - half
        chain = b'"table_prev":%s,"table_seq":%d' % (
            b"null" if r == 0 else b"%d" % (i - half),
            r + 1,
        )
        entries[i] = re.sub(rb'"table_prev":(?:null|[0-9]+),"table_seq":[0-9]+', chain,
                            entries[i])  # fmt: skip
    assert all(_reference(e) == i for i, e in enumerate(entries))
    leaves = [merkle.leaf_hash(e) for e in entries]
    size = len(entries)

    def export(data: list[bytes]) -> list[str]:
        out = io.StringIO()
        root = merkle.root_from_leaf_hashes([merkle.leaf_hash(e) for e in data])
        note = sign_note(Checkpoint(ORIGIN, size, root).body(), [SIGNER]).decode()
        write_export(
            out, origin=ORIGIN, checkpoints=[(note, 1)],
            entries=[(i, merkle.leaf_hash(e), e) for i, e in enumerate(data)], tree_size=size,
        )  # fmt: skip
        return out.getvalue().splitlines(keepends=True)

    assert verify_export(export(entries), KEYS).root_hash == merkle.root_from_leaf_hashes(leaves)
    # Signed and hashed correctly, but not canonical: only the entry check catches it (fast
    # path tried first: its shape's template was learned from entry 2).
    bad = list(entries)
    bad[14] = bad[14].replace(b"\\b", b"\\u0008")
    with pytest.raises(VerificationFailure, match=r"entry 14 .*not a canonical entry") as info:
        verify_export(export(bad), KEYS)
    assert info.value.index == 14
    verify_export(export(bad), KEYS, check_entries=False)


def _export_of(data: list[bytes], *, form: str = EXPORT_FORMAT) -> list[str]:
    out = io.StringIO()
    leaves = [merkle.leaf_hash(d) for d in data]
    root = merkle.root_from_leaf_hashes(leaves)
    note = sign_note(Checkpoint(ORIGIN, len(data), root).body(), [SIGNER]).decode()
    write_export(
        out, origin=ORIGIN, checkpoints=[(note, 1)],
        entries=[(i, leaves[i], d) for i, d in enumerate(data)], tree_size=len(data),
    )  # fmt: skip
    lines = out.getvalue().splitlines(keepends=True)
    lines[0] = lines[0].replace(EXPORT_FORMAT, form)
    return lines


def test_a_log_upgraded_to_format_2_says_where_the_chains_start() -> None:
    old = _entries(5, version=1)
    mixed = old + _entries(6, start=5)
    report = verify_export(_export_of(mixed), KEYS)
    assert report.first_format_2 == 5
    assert verify_export(_export_of(old), KEYS).first_format_2 is None
    assert verify_export(_export_of(DATA), KEYS).first_format_2 == 0
    # Without the entry check nothing is said about formats.
    assert verify_export(_export_of(mixed), KEYS, check_entries=False).first_format_2 is None
    # A version 1 export (written before format 2) still reads.
    v1 = _export_of(old, form="rng-audit-export/v1")
    assert json.loads(v1[0])["format"] == "rng-audit-export/v1"
    assert verify_export(v1, KEYS).tree_size == 5


def test_a_format_1_entry_after_format_2_is_refused() -> None:
    # Signed and hashed correctly, but a format 1 entry after the upgrade was inserted: the
    # release that writes format 2 never writes format 1 again.
    data = _entries(4, version=1) + _entries(3, start=4)
    data[6] = _entries(1, version=1, start=6)[0]
    with pytest.raises(VerificationFailure, match=r"entry 6 .*format 1 entry after the format 2 "
                       r"entry 4.*never goes back") as info:  # fmt: skip
        verify_export(_export_of(data), KEYS)
    assert info.value.index == 6


def test_a_version_1_export_holds_format_1_entries_only() -> None:
    with pytest.raises(ExportFormatError, match=r"line \d+: entry: a format 2 entry in an "
                       "rng-audit-export/v1 file"):  # fmt: skip
        verify_export(_export_of(DATA[:3], form="rng-audit-export/v1"), KEYS)
    with pytest.raises(ExportFormatError, match="format: 'rng-audit-export/v3' is not one of"):
        verify_export(_export_of(DATA[:3], form="rng-audit-export/v3"), KEYS)


# -- every table chain of a full export (docs/log-format.md, "Slots and chains") --------------


def _signed_export(data: list[bytes]) -> list[str]:
    """An export of ``data`` whose one checkpoint the log's key signed over exactly these
    entries: what a sequencer that numbered the chains wrongly would publish."""
    out = io.StringIO()
    root = merkle.root_from_leaf_hashes([merkle.leaf_hash(d) for d in data])
    note = sign_note(Checkpoint(ORIGIN, len(data), root).body(), [SIGNER]).decode()
    write_export(
        out, origin=ORIGIN, checkpoints=[(note, 1)],
        entries=[(i, merkle.leaf_hash(d), d) for i, d in enumerate(data)], tree_size=len(data),
    )  # fmt: skip
    return out.getvalue().splitlines(keepends=True)


def _rechained(data: list[bytes], index: int, seq: int, prev: int | None) -> list[bytes]:
    changed = list(data)
    fields = b'"table_prev":%s,"table_seq":%d' % (b"null" if prev is None else b"%d" % prev, seq)
    changed[index] = re.sub(rb'"table_prev":(?:null|[0-9]+),"table_seq":[0-9]+', fields,
                            data[index])  # fmt: skip
    return changed


def test_every_table_chain_of_an_export_is_followed() -> None:
    report = verify_export(_signed_export(DATA), KEYS)
    assert report.chains == 3
    assert verify_export(_signed_export(DATA), KEYS, check_entries=False).chains is None


@pytest.mark.parametrize(
    ("index", "seq", "prev", "message"),
    [
        # T1's entry 22 (seq 8 after entry 19) numbered seq 9: seq 8 left out
        (
            22,
            9,
            19,
            r"entry 22 \(line 25\) is seq 9 of the chain of table 'T1' of client "
            r"'default' and names entry 19 as its predecessor, but the chain's previous entry is "
            r"entry 19 \(seq 7\): the chain is broken",
        ),
        # right number, wrong predecessor (entry 16 is T1's seq 6)
        (
            22,
            8,
            16,
            r"entry 22 \(line 25\) is seq 8 .* names entry 16 as its predecessor, but the "
            r"chain's previous entry is entry 19 \(seq 7\)",
        ),
        # the chain of T1 started again
        (
            22,
            1,
            None,
            r"entry 22 \(line 25\) starts the chain of table 'T1' of client 'default' "
            r"again \(seq 1\), but it already has seq 7 at entry 19",
        ),
        # a chain whose first entry in the log is not seq 1
        (
            1,
            2,
            0,
            r"entry 1 \(line 4\) is seq 2 of the chain of table 'T1' of client 'default' "
            r"\(its predecessor: entry 0\), but the log has no earlier entry of that chain: "
            r"seq 1 is missing",
        ),
    ],
)
def test_a_broken_chain_fails_even_when_signed(
    index: int, seq: int, prev: int | None, message: str
) -> None:
    lines = _signed_export(_rechained(DATA, index, seq, prev))
    with pytest.raises(VerificationFailure, match=message) as info:
        verify_export(lines, KEYS)
    assert info.value.index == index
    verify_export(lines, KEYS, check_entries=False)  # only the entry check follows chains


def test_the_fast_path_reads_the_same_chains_as_the_reference() -> None:
    checker = _taught()
    fresh = EntryChecker()
    for data in _VARIED:
        fast, reference = checker.inspect(data), fresh.inspect(data)
        assert fast == reference
        if fast.version == 2:
            assert fast.chain is not None
            client, table = (json.loads(part) for part in fast.chain)
            record = json.loads(data)
            assert (client, table) == (record["client"], record["table_id"])
    assert checker.hits > 0
    assert fresh.hits == 0
