"""The verifier's fast path (:mod:`rng_service.audit.fast_check`: entry shape templates)
against the reference check it falls back on (:func:`rng_service.audit.verify.canonical_entry`:
decode and re-encode): differential tests on named and random edits of awkward entries, the
templates' bounds, the plain form of a template, and the fast path inside ``verify_export``.
The property-based test is beside this file (``test_fast_check_properties.py``).
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import re
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.audit import VerificationFailure, verify_export, write_export
from rng_service.audit.fast_check import _T_ESCAPES, _T_STRING, EntryChecker
from rng_service.audit.verify import canonical_entry, canonical_entry_index
from rng_service.log import merkle
from rng_service.log.entry import EntryFormatError, GeneratorRef, LogEntry
from rng_service.log.note import Checkpoint, Ed25519NoteSigner, sign_note
from tests.format3 import with_root

ORIGIN = "audit.test/log"
SIGNER = Ed25519NoteSigner("audit-test", Ed25519PrivateKey.from_private_bytes(b"\x01" * 32))
KEYS = [SIGNER.verifier()]


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
    checker = EntryChecker(canonical_entry)
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
    small = EntryChecker(canonical_entry)
    small.COMPILED = 2
    for data in _VARIED * 2:  # twelve shapes, two templates: the rest by the reference check
        assert small.index(data) == _reference(data)
    assert (small.hits, small.misses) == (2, 2 * len(_VARIED) - 2)


def test_entry_checker_gives_up_on_a_log_without_repeated_shapes() -> None:
    checker = EntryChecker(canonical_entry)
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


def test_the_fast_path_reads_the_same_chains_as_the_reference() -> None:
    checker = _taught()
    fresh = EntryChecker(canonical_entry)
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


# A template's plain form (_T_ESCAPES): entries without a backslash are proven by a template
# with no escape alternatives, faster; entries with escapes still by the full template. Which
# form is tried changes only the speed, never the answer (the plain form accepts a subset of
# what the template accepts: the property test holds the answers to the reference check), so
# what is checked here is that both kinds of entry are proven by a template.


def _entry(index: int, round_id: str) -> bytes:
    return LogEntry(
        index=index, timestamp_ns=1_767_225_600_000_000_000, kind="dice_roll",
        params={}, outcome={"dice": [1, 2, 3]}, client="default", table_id="T1",
        round_id=round_id, session_id="", request_id=f"q{index}",
        generator=GeneratorRef("ab12", 0, False), slot="dice", table_seq=1, table_prev=None,
    ).encode()  # fmt: skip


def test_entries_with_and_without_escapes_are_proven_by_their_template() -> None:
    checker = EntryChecker(canonical_entry)
    checker.index(_entry(0, "R0"))  # taught by the reference check
    plain, escaped = _entry(1, "R1"), _entry(2, 'R"2\\\n')
    assert b"\\" not in plain
    assert b'R\\"2\\\\\\n' in escaped
    assert checker.index(plain) == canonical_entry_index(plain) == 1
    assert checker.index(escaped) == canonical_entry_index(escaped) == 2
    assert (checker.hits, checker.misses) == (2, 1)


def test_the_plain_form_removes_only_the_escapes() -> None:
    assert _T_STRING == b'"[^"\\\\\\x00-\\x1f]*+' + _T_ESCAPES + b'"'
    assert _T_ESCAPES.startswith(b"(?:\\\\")  # each alternative starts with a backslash


# Format 3: the format 2 entries above with a table_map (the root after the entry), each
# taught, then every named change above and these around the new field tried against its
# template before the reference check.

_V3 = [with_root(e, hashlib.sha256(e).digest()) for e in _VARIED[len(_AWKWARD) :]]
_MAP_CHANGES: list[tuple[bytes, bytes]] = [
    (b'"table_map":"', b'"table_map":"0'), (b'"table_map":"', b'"table_map":" '),
    (b'"table_map":"', b'"table_map":"A'), (b'"table_map":"', b'"table_map":"\\u0030'),
    (b'","table_prev"', b'0","table_prev"'), (b'","table_prev"', b'A","table_prev"'),
    (b'"table_map":"', b'"table_map":"g'), (b'"table_map":"', b'"table_map":"x'),
    (b'"table_map":"', b'"table_map":null,"x":"'), (b'"table_map":"', b'"Table_map":"'),
    (b'"table_map":', b'"table_map":"00","table_map":'), (b'"v":3}', b'"v":2}'),
    (b'"v":3}', b'"v":4}'), (b'"v":3}', b'"v":1}'),
]  # fmt: skip


def _map_edits(base: bytes) -> list[bytes]:
    """Named edits of the root itself: uppercase, short, long, moved after table_prev,
    removed, a number, null."""
    root = base.split(b'"table_map":"')[1][:64]
    member = b',"table_map":"' + root + b'"'
    out = [base.replace(root, root.upper()), base.replace(root, root[:63]),
           base.replace(root, root + b"0"), base.replace(root, bytes(64).hex()[:64].encode()),
           base.replace(member, b""), base.replace(member, b',"table_map":7'),
           base.replace(member, b',"table_map":null'),
           base.replace(member, b"").replace(b',"time"', member + b',"time"')]  # fmt: skip
    return out


def test_format_3_entries_are_proven_exactly_as_the_reference_decides() -> None:
    checker = EntryChecker(canonical_entry)
    checker.ACTIVE = len(_V3)
    for i, data in enumerate(_V3):
        assert checker.check(data) == (i + 13, 3)
    for data in _V3:
        assert checker.check(data)[1] == 3
    assert checker.hits == len(_V3) - 1  # one has a 16-digit integer (2^53 - 1)
    checker.COMPILED = 0
    tried = accepted = 0
    for base in _V3:
        edits = [base.replace(old, new, 1) for old, new in _NAMED_CHANGES + _MAP_CHANGES
                 if old in base]  # fmt: skip
        for data in edits + _map_edits(base):
            tried += 1
            expected = _reference(data)
            assert _fast(checker, data) == expected, data
            accepted += expected is not None
    assert tried > 400
    assert 20 < accepted < tried - 200
    # The shape read by the fast path is the reference's, the root included.
    fresh = EntryChecker(canonical_entry)
    for data in _V3:
        shape = checker.inspect(data)
        assert shape == fresh.inspect(data)
        assert shape.table_map == LogEntry.decode(data).table_map
        assert shape.table_map is not None
