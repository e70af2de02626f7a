"""A template's plain form (``_T_ESCAPES`` in ``rng_service.audit.verify``): entries without a
backslash are proven by a template with no escape alternatives, faster; entries with escapes
still by the full template. Which form is tried changes only the speed, never the answer (the
plain form accepts a subset of what the template accepts: the hypothesis test in
``test_audit_entry_checker`` holds the answers to the reference check), so what is checked
here is that both kinds of entry are proven by a template, not sent to the reference check.
"""

from __future__ import annotations

from rng_service.audit import EntryChecker
from rng_service.audit.verify import _T_ESCAPES, _T_STRING, canonical_entry_index
from rng_service.log.entry import GeneratorRef, LogEntry


def _entry(index: int, round_id: str) -> bytes:
    return LogEntry(
        index=index, timestamp_ns=1_767_225_600_000_000_000, kind="dice_roll",
        params={}, outcome={"dice": [1, 2, 3]}, client="default", table_id="T1",
        round_id=round_id, session_id="", request_id=f"q{index}",
        generator=GeneratorRef("ab12", 0, False), slot="dice", table_seq=1, table_prev=None,
    ).encode()  # fmt: skip


def test_entries_with_and_without_escapes_are_proven_by_their_template() -> None:
    checker = EntryChecker()
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
