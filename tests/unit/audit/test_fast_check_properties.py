"""The verifier's shortcut (``EntryChecker``: entry shape templates) against its reference check
(``canonical_entry_index``: strict decode and re-encode), and the reference check against the
``rfc8785`` package, on random entries (hypothesis) and adversarial spellings of them.

Each example draws a few entries, teaches a fresh checker their shapes (after which the same
entries are proven by their templates alone), and then spells each entry again with odd tokens
(``tests/jcs_oracle.spell``: reordered, duplicated or extra members, escaped characters in
either case, surrogate pairs and lone surrogates, raw control characters, CESU-8 bytes, integers
with leading zeros, a sign, an exponent or a fraction, ``-0``, white space inside and outside,
misspelled literals, trailing commas, a byte-order mark). Every spelling is tried against the
entry's own template before the reference check, so a template that accepts one non-canonical
spelling makes the two disagree.
"""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rng_service.audit.fast_check import EntryChecker
from rng_service.audit.verify import canonical_entry, canonical_entry_index, canonical_entry_version
from rng_service.log.entry import EntryFormatError, GeneratorRef, LogEntry
from tests.jcs_oracle import EDGE_CHARS, EDGE_INTS, oracle, spell

MAX = 2**53 - 1
_TEXT = st.text(st.one_of(st.sampled_from(EDGE_CHARS), st.characters(codec="utf-8")), max_size=8)
_KEY = st.text(st.characters(codec="ascii"), max_size=6)
_INT = st.one_of(st.integers(-MAX, MAX), st.integers(-999, 999), st.sampled_from(EDGE_INTS))
_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), _INT, _TEXT),
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(_KEY, kids, max_size=4)),
    max_leaves=12,
)
#: 1970-01-01 to 9999-12-31, whole microseconds (the entry's time has six digits).
_TIME_NS = st.integers(0, 253_402_300_799_999_999).map(lambda us: us * 1000)


@st.composite
def _entries(draw: st.DrawFn) -> LogEntry:
    index = draw(st.one_of(st.integers(0, 10**6), st.integers(0, MAX)))
    chain: dict[str, Any] = {"version": 1}
    if draw(st.booleans()):
        first = index == 0 or draw(st.booleans())
        chain = {
            "slot": draw(_TEXT.filter(bool)),
            "table_seq": 1 if first else draw(st.integers(2, MAX)),
            "table_prev": None if first else draw(st.integers(0, index - 1)),
        }
        if draw(st.booleans()):  # format 3: and the table map's root
            chain.update(version=3, table_map=draw(st.binary(min_size=32, max_size=32)))
    return LogEntry(
        index=index,
        timestamp_ns=draw(_TIME_NS),
        kind=draw(_TEXT),
        params=draw(st.dictionaries(_KEY, _VALUE, max_size=3)),
        outcome=draw(st.dictionaries(_KEY, _VALUE, max_size=4)),
        client=draw(_TEXT),
        table_id=draw(_TEXT),
        round_id=draw(_TEXT),
        session_id=draw(_TEXT),
        request_id=draw(_TEXT),
        profile_sha256=draw(_TEXT),
        generator=GeneratorRef(draw(_TEXT), draw(_INT), draw(st.booleans())),
        **chain,
    )


def _perturb(value: Any, rnd: random.Random) -> Any:
    """``value`` with some scalars replaced by others of their type (so an entry keeps its
    shape), among them edge values; a format 2 entry's chain fields and the time may become
    invalid, which the checks must then refuse alike."""
    if isinstance(value, dict):
        return {k: _perturb(v, rnd) for k, v in value.items()}
    if isinstance(value, list):
        return [_perturb(v, rnd) for v in value]
    if rnd.random() > 0.2:
        return value
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return rnd.choice([value + 1, value - 1, -value, rnd.choice(EDGE_INTS), 10**15, 2**53])
    if isinstance(value, str):
        cut = rnd.randrange(len(value) + 1)
        extra = "".join(
            rnd.choice((*EDGE_CHARS, "a", "0", "T", ":")) for _ in range(rnd.randrange(3))
        )
        return value[:cut] + extra + value[cut + rnd.randrange(2) :]
    return value


def _perturb_entry(record: dict[str, Any], rnd: random.Random) -> dict[str, Any]:
    """:func:`_perturb`, and sometimes a format 2 chain that breaks (or keeps) its rules:
    table_seq 1 with a table_prev, a later table_seq with null, table_prev at or beyond the
    index, negative numbers; or an empty slot; or a format 3 table_map that is not (or is) 64
    lowercase hex digits."""
    out: dict[str, Any] = _perturb(record, rnd)
    if "table_seq" in out and rnd.random() < 0.3:
        index = out["index"]
        out["table_seq"], out["table_prev"] = rnd.choice(
            [(1, None), (1, 0), (1, index - 1), (2, None), (2, index - 1), (2, index),
             (2, index + 1), (2, -1), (0, None), (-1, None), (0, 0), (3, 0)]
        )  # fmt: skip
    if "slot" in out and rnd.random() < 0.2:
        out["slot"] = ""
    if "table_map" in out and rnd.random() < 0.3:  # format 3's root misspelled, or not
        root = out["table_map"]
        out["table_map"] = rnd.choice(
            [root.upper(), root[:63], root + "0", "0x" + root[2:], root[:-1] + "g", " " + root[1:],
             root[::-1], "0" * 64, "f" * 64, None, 1, ""]
        )  # fmt: skip
    return out


def _reference(data: bytes) -> tuple[int, int] | None:
    try:
        return canonical_entry_index(data), canonical_entry_version(data)
    except EntryFormatError:
        return None


def _shortcut(checker: EntryChecker, data: bytes) -> tuple[int, int] | None:
    try:
        return checker.check(data)
    except EntryFormatError:
        return None


def _decodes(data: bytes) -> bool:
    try:
        LogEntry.decode(data)
    except EntryFormatError:
        return False
    return True


def test_the_shortcut_accepts_exactly_what_the_reference_accepts() -> None:
    stats = {"spellings": 0, "accepted": 0, "changed": 0, "by_template": 0, "taught": 0}

    @settings(
        max_examples=200,
        deadline=None,
        derandomize=True,  # the same examples on every run: CI stays reproducible
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(entries=st.lists(_entries(), min_size=1, max_size=3), seed=st.integers(0, 2**32))
    def check(entries: list[LogEntry], seed: int) -> None:
        rnd = random.Random(seed)
        bases = [e.encode() for e in entries]
        checker = EntryChecker(canonical_entry)
        for data in bases:
            assert checker.check(data) == _reference(data)
        misses = checker.misses
        for data in bases:  # taught: each is now proven by its own template ...
            assert checker.check(data) == _reference(data)
        # ... unless it holds an integer of 16 digits, which only the reference check takes.
        stats["taught"] += len(bases) - (checker.misses - misses)
        checker.COMPILED = 0  # no new templates: the spellings meet the bases' templates
        for data in bases:
            record = json.loads(data)
            for odd in (0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3):
                # Canonical spellings of other values of the shape (odd 0), or with odd tokens
                # (of the taught entry itself half the time, so that its template is met).
                value = record if odd and rnd.random() < 0.5 else _perturb_entry(record, rnd)
                spelled = spell(value, rnd, odd=odd)
                hits = checker.hits
                got = _shortcut(checker, spelled)
                expected = _reference(spelled)
                assert got == expected, spelled
                # The reference is RFC 8785 (the rfc8785 package) plus the entry's fields.
                canonical = oracle(spelled, ascii_keys=True)
                assert (expected is not None) == (canonical and _decodes(spelled)), spelled
                stats["spellings"] += 1
                stats["accepted"] += expected is not None
                stats["changed"] += expected is not None and spelled not in bases
                stats["by_template"] += checker.hits - hits

    check()
    # Both answers were exercised, and templates proved many of the accepted spellings.
    assert stats["spellings"] > 1500, stats
    assert 0.05 < stats["accepted"] / stats["spellings"] < 0.9, stats
    assert stats["changed"] > 250, stats  # accepted, and not one of the taught entries
    # (a flipped boolean or a 16-digit integer makes another shape: the reference decides)
    assert stats["by_template"] > stats["accepted"] / 3, stats
    assert stats["taught"] > 150, stats
