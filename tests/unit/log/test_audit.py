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
                 "rng_service.storage", "rng_service.rpc", "rng_service.process.app")  # fmt: skip
    loaded = json.loads(out.stdout)
    assert "rng_service.audit.verify" in loaded
    bad = [m for m in loaded for f in forbidden if m == f or m.startswith(f + ".")]
    assert not bad


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
    with pytest.raises(ExportFormatError, match="format: 'rng-audit-export/v4' is not one of"):
        verify_export(_export_of(DATA[:3], form="rng-audit-export/v4"), KEYS)


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
