"""The verifier's fast path for entries: shape templates that prove an entry canonical.

:class:`EntryChecker` gives the answers of the reference check
(:func:`rng_service.audit.verify.canonical_entry_index`, decode and re-encode; docs/auditing.md
points reviewers there) several times faster on the entry shapes a log repeats: the first
entry of each shape goes to the reference check, which it is given, and teaches a regular
expression (a "template", grammar below) that accepts exactly the canonical entries of that
shape (docs/log-format.md, "Entries": RFC 8785 canonical JSON). It never rejects on its own:
whatever no template matches goes to the reference check, which accepts it or says what is
wrong. tests/unit/audit/test_fast_check.py holds the two together (differential and property
tests).
"""

from __future__ import annotations

import datetime
import re
from binascii import unhexlify
from collections.abc import Callable
from typing import Any, NamedTuple

from rng_service import canonical

__all__ = ["EntryChecker", "EntryShape", "ReferenceCheck", "json_bytes"]

ReferenceCheck = Callable[[bytes], dict[str, Any]]
"""The reference check: canonical entry bytes to the decoded entry, else EntryFormatError."""

# Entry shape templates. A template is a regular expression made from an entry that passed
# the reference check (verify.canonical_entry): the entry's keys, punctuation, literals
# (true, false, null) and "v":1 are literal; each other string value is _T_STRING, each other
# integer _T_INT, a non-empty array whose elements all have one shape P is "[P(,P)*]", the
# index is captured and the time is _T_TIME. In a format 2 entry the table_seq and table_prev
# are captured too (their rules against the index are checked apart) and the slot must be a
# non-empty string; in a format 3 entry also the table_map, exactly 64 lowercase hex digits
# (_T_MAP_ROOT). So bytes that fully match a template are
# - canonical RFC 8785 JSON: no white space; in every object the checked entry's own keys
#   (ASCII, sorted, unique) in its order; every string in its one canonical spelling
#   (_T_STRING admits exactly what the encoder writes: any character raw except '"', '\' and
#   U+0000..U+001F, which are written \" \\ \b \t \n \f \r or \u00xx with lowercase hex; the
#   bytes are separately checked to be UTF-8); every integer in shortest form with at most 15
#   digits (so below 2^53); no floats;
# - of the format: the fields of the entry's version with their JSON types, "v" that version,
#   the time RFC 3339 UTC with six fractional digits and a valid time of day (the date is
#   checked apart).
# That is everything the reference check checks but the index (the caller's), the date and
# format 2's chain rules (EntryChecker checks them on the captured values).
_T_ESCAPES = rb'(?:\\(?:["\\bfnrt]|u00(?:0[0-7bef]|1[0-9a-f]))[^"\\\x00-\x1f]*+)*+'
"""The escapes of a string and what follows each. Each starts with a backslash, so on bytes
without one (most entries) they match nothing, and a template without them (its "plain" form,
:meth:`EntryChecker._learn`) accepts exactly what the template accepts there, faster. The
text cannot occur elsewhere in a template: ``re.escape`` writes every ``(`` and ``?`` of a
literal with a backslash before it, so ``(?:`` never comes from a literal."""
_T_STRING = rb'"[^"\\\x00-\x1f]*+' + _T_ESCAPES + b'"'
_T_INT = rb"(?:0|-?[1-9][0-9]{0,14}+)"
_T_TIME = (
    rb'"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})'  # checked apart (EntryChecker._real_date)
    rb'T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{6}Z"'
)
_T_KEYS: dict[str, bytes] = {}


def _t_key(key: str) -> bytes:
    literal = _T_KEYS.get(key)
    if literal is None:
        literal = re.escape(canonical.string(key).encode("ascii")) + b":"
        if len(_T_KEYS) < 10_000:
            _T_KEYS[key] = literal
    return literal


def _t_shape(value: Any) -> bytes:
    """The template of a value of an entry that passed the reference check."""
    kind = type(value)
    if kind is str:
        return _T_STRING
    if kind is int:
        return _T_INT
    if kind is bool:
        return b"true" if value else b"false"
    if value is None:
        return b"null"
    if kind is dict:
        return rb"\{" + b",".join(_t_key(k) + _t_shape(v) for k, v in value.items()) + rb"\}"
    if kind is list:
        if not value:
            return rb"\[\]"
        shapes = [_t_shape(v) for v in value]
        first = shapes[0]
        if shapes.count(first) == len(shapes):
            return rb"\[" + first + rb"(?:," + first + rb")*+\]"
        return rb"\[" + b",".join(shapes) + rb"\]"
    raise TypeError(f"{kind.__name__} in a checked entry")  # pragma: no cover


_T_NONEMPTY_STRING = rb'"(?=[^"])' + _T_STRING[1:]
_T_MAP_ROOT = rb'"(?P<map>[0-9a-f]{64})"'


#: String fields a template captures (group names): what the chains and rounds are read from.
_T_CAPTURED = {
    "client": b"client", "table_id": b"table", "round_id": b"round", "kind": b"kind",
    "request_id": b"request",
}  # fmt: skip


#: The groups of an entry's template in their order (the entry's keys are sorted), by format
#: version: what EntryChecker.inspect unpacks from one ``Match.groups()``.
_T_GROUPS = {
    1: ("client", "index", "kind", "request", "round", "table", "date"),
    2: ("client", "index", "kind", "request", "round", "slot", "table", "prev", "seq", "date"),
    3: ("client", "index", "kind", "request", "round", "slot", "table", "map", "prev", "seq",
        "date"),
}  # fmt: skip
_FullMatch = Callable[[bytes], "re.Match[bytes] | None"]
_Template = tuple[tuple[_FullMatch, _FullMatch], int]
"""A compiled template's ``fullmatch``, its plain form's (for bytes without a backslash: see
_T_ESCAPES) and the format version of the entries it matches."""


def _t_entry(record: dict[str, Any]) -> bytes:
    """The template of an entry that passed the reference check: group ``index`` its index,
    ``date`` its date, ``client``, ``table``, ``round``, ``kind`` and ``request`` the JSON
    strings of those fields (:data:`_T_CAPTURED`), in format 2 and 3 ``slot`` its slot's JSON
    string and ``seq`` and ``prev`` its table_seq and table_prev, and in format 3 ``map`` the
    hex digits of its table_map."""
    parts = []
    for key, value in record.items():  # in the entry's (sorted) order: index before time
        if key == "index":
            shape = b"(?P<index>" + _T_INT + b")"
        elif key == "time":
            shape = _T_TIME
        elif key == "v":
            shape = str(value).encode("ascii")  # a literal: the template's version
        elif key == "slot":
            shape = b"(?P<slot>" + _T_NONEMPTY_STRING + b")"
        elif key == "table_seq":
            shape = b"(?P<seq>" + _T_INT + b")"
        elif key == "table_prev":
            shape = b"(?P<prev>null|" + _T_INT + b")"
        elif key == "table_map":
            shape = _T_MAP_ROOT
        elif key in _T_CAPTURED:
            shape = b"(?P<" + _T_CAPTURED[key] + b">" + _T_STRING + b")"
        else:
            shape = _t_shape(value)
        parts.append(_t_key(key) + shape)
    return rb"\{" + b",".join(parts) + rb"\}"


class EntryChecker:
    """The reference check it is given (``reference``: the verifier's
    :func:`~rng_service.audit.verify.canonical_entry`) for the entries of one log: the same
    answers (tests hold them together), several times faster on the entry shapes a log repeats
    (1.9 against 15 microseconds for an entry of 470 bytes).

    Each entry that the reference check accepts teaches the checker its shape as a template
    (see the comment above ``_T_STRING``); an entry that fully matches a known template is
    canonical and of the format by that match alone, so only its date and UTF-8 are left to
    check. Anything else (an entry of a new shape, a changed entry, an integer of 16 digits,
    ...) goes to the reference check, which accepts it or raises ``EntryFormatError``.
    The fast path never rejects: it only accepts what the reference check would.

    Memory is bounded: at most ``COMPILED`` templates and the dates seen. A log with no
    repeated shapes costs a little more than the reference check alone, and after ``GIVE_UP``
    more misses than hits the checker stops learning and uses the reference check only.
    """

    ACTIVE = 8
    """Templates tried for each entry, the most recently matched first."""
    COMPILED = 64
    GIVE_UP = 10_000

    def __init__(self, reference: ReferenceCheck) -> None:
        self._check_record = reference
        self._active: list[_Template] = []
        self._compiled: dict[bytes, _Template] = {}
        self._dates: set[bytes] = set()
        self._hits = 0
        self._misses = 0

    @property
    def hits(self) -> int:
        """Entries proven by a template."""
        return self._hits

    @property
    def misses(self) -> int:
        """Entries that went to the reference check."""
        return self._misses

    def index(self, data: bytes) -> int:
        """The entry's ``index`` (as ``canonical_entry_index``); raises ``EntryFormatError``."""
        return self.inspect(data)[0]

    def check(self, data: bytes) -> tuple[int, int]:
        """The entry's (``index``, ``v``) (as ``canonical_entry_index`` and
        ``canonical_entry_version``); raises ``EntryFormatError``."""
        found = self.inspect(data)
        return found[0], found[1]

    def inspect(self, data: bytes) -> EntryShape:
        """The checks of :meth:`check`, and the entry's chain: raises ``EntryFormatError``."""
        # The verifier's hot path (once per entry): one fullmatch, one groups() (the template's
        # groups in the order of _T_GROUPS, checked when it was learnt), the EntryShape built
        # by tuple.__new__ (no Python frame).
        active = self._active
        # A template's plain form (see _T_ESCAPES). find, not "in": bytes.__contains__ first
        # tries its argument as an integer, and raises and clears a TypeError (about 1,800
        # instructions).
        plain = 1 if data.find(b"\\") < 0 else 0
        for template in active:
            match = template[0][plain](data)
            if match is not None:
                break
        else:
            return self._reference(data)
        version = template[1]
        shape: tuple[Any, ...]
        if version < 2:
            client, index, kind, request, round_id, table, date = match.groups()
            position = int(index)
            shape = (position, version, None, None, None, client, table, round_id, kind,
                     request, None, None)  # fmt: skip
        else:
            found = match.groups()
            if version == 2:
                client, index, kind, request, round_id, slot, table, prev, seq, date = found
                table_map = None
            else:
                client, index, kind, request, round_id, slot, table, hex_map, prev, seq, date = (
                    found
                )
                table_map = unhexlify(hex_map)
            position, table_seq = int(index), int(seq)
            if prev == b"null":
                if table_seq != 1:
                    return self._reference(data)  # it says what is wrong with the chain
                table_prev = None
            else:
                table_prev = int(prev)
                if table_seq < 2 or not 0 <= table_prev < position:
                    return self._reference(data)  # it says what is wrong with the chain
            shape = (position, version, (client, table), table_seq, table_prev, client, table,
                     round_id, kind, request, slot, table_map)  # fmt: skip
        if date not in self._dates and not self._real_date(date):
            return self._reference(data)  # it says what is wrong with the date
        if not data.isascii() and not _is_utf8(data):
            return self._reference(data)  # it says that the entry is not UTF-8
        self._hits += 1
        if template is not active[0]:
            active.remove(template)
            active.insert(0, template)
        return _new_shape(EntryShape, shape)

    def _reference(self, data: bytes) -> EntryShape:
        record = self._check_record(data)
        self._misses += 1
        if self._misses <= self._hits + self.GIVE_UP:
            self._learn(record)
        elif self._active:
            self._active.clear()
        fields = tuple(json_bytes(record[key]) for key in _T_CAPTURED)
        client, table, round_id, kind, request = fields
        if record["v"] < 2:
            return EntryShape(
                record["index"], record["v"], None, None, None, client, table, round_id, kind,
                request, None, None,
            )  # fmt: skip
        table_map = bytes.fromhex(record["table_map"]) if record["v"] >= 3 else None
        return EntryShape(
            record["index"], record["v"], (client, table), record["table_seq"],
            record["table_prev"], client, table, round_id, kind, request,
            json_bytes(record["slot"]), table_map,
        )  # fmt: skip

    def _real_date(self, date: bytes) -> bool:
        try:
            datetime.date(int(date[0:4]), int(date[5:7]), int(date[8:10]))
        except ValueError:
            return False
        if len(self._dates) >= 100_000:
            self._dates.clear()
        self._dates.add(date)
        return True

    def _learn(self, record: dict[str, Any]) -> None:
        pattern = _t_entry(record)
        template = self._compiled.get(pattern)
        if template is None:
            if len(self._compiled) >= self.COMPILED:
                return
            compiled = re.compile(pattern)
            groups = tuple(sorted(compiled.groupindex, key=compiled.groupindex.__getitem__))
            if groups != _T_GROUPS.get(record["v"]):
                return  # not an entry's template: the reference check keeps deciding
            plain = re.compile(pattern.replace(_T_ESCAPES, b""))
            template = ((compiled.fullmatch, plain.fullmatch), record["v"])
            self._compiled[pattern] = template
        elif template in self._active:
            self._active.remove(template)
        self._active.insert(0, template)
        del self._active[self.ACTIVE :]


class EntryShape(NamedTuple):
    """What :meth:`EntryChecker.inspect` reads from a checked entry: its index and format
    version; for formats 2 and 3 its chain: (client, table id), table_seq, table_prev; for
    format 3 the table map root it commits to; and the fields its round is read from.
    Strings are their canonical JSON strings (the bytes in the entry, quotes included: one
    spelling per value, so equal bytes are equal values, and the concatenation of several is
    unambiguous)."""

    entry_index: int
    version: int
    chain: tuple[bytes, bytes] | None
    seq: int | None
    prev: int | None
    client: bytes
    table_id: bytes
    round_id: bytes
    kind: bytes
    request_id: bytes
    slot: bytes | None
    """The slot (formats 2 and 3); None for format 1."""
    table_map: bytes | None
    """Format 3's ``table_map``: the 32-byte root of the table map after this entry; None for
    formats 1 and 2."""


_new_shape = tuple.__new__


def json_bytes(value: str) -> bytes:
    """The canonical JSON string of ``value`` (quotes included), as an entry holds it."""
    return canonical.string(value).encode("utf-8")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
