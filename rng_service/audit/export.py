"""The log export file format ``rng-audit-export/v3``: writing and strict line-by-line reading.

Owns the syntax of the JSON Lines file docs/log-format.md ("Export format") specifies: a
header (format, origin, tree size, number of checkpoints), the checkpoint lines (C2SP signed
notes, by tree size), then one line per entry (index, RFC 6962 leaf hash, base64 canonical
bytes). Version 3 may hold entries of formats 1 to 3; versions 1 (format 1 only) and 2
(formats 1 and 2) are read too.
It reads no database, calls no service and judges nothing (:mod:`rng_service.audit.verify`
does); syntax errors are :class:`ExportFormatError` naming the line and the field.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from rng_service.errors import IntegrityError, InvalidArgument

__all__ = [
    "ENTRY_FORMATS_HELD",
    "EXPORT_FORMAT",
    "READ_FORMATS",
    "ExportCheckpoint",
    "ExportEntry",
    "ExportFormatError",
    "ExportHeader",
    "ExportReader",
    "MissingEntries",
    "write_export",
]

_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().raw_decode
"""json.loads's decoder (a default ``JSONDecoder``) without json.loads's wrapper:
``raw_decode(text, 0)`` is (value, end) of the JSON value that starts the line, and a
``json.JSONDecodeError`` (a ValueError) if there is none or it is broken."""

EXPORT_FORMAT = "rng-audit-export/v3"
"""The value of the header's ``format`` field in the exports this build writes."""
READ_FORMATS = ("rng-audit-export/v1", "rng-audit-export/v2", EXPORT_FORMAT)
"""The header formats this build reads."""
ENTRY_FORMATS_HELD = dict(zip(READ_FORMATS, (1, 2, 3), strict=True))
"""The newest entry format each export version may hold: each version was introduced with an
entry format, so that a verifier that does not know that format stops at the header ("not one
of" its formats) instead of reporting the new entries as changed."""


class MissingEntries(IntegrityError):
    """The log being exported did not give every entry of its signed size: an integrity
    failure of the log (``index``: the first one missing), not a format error."""

    def __init__(self, message: str, *, index: int) -> None:
        super().__init__(message)
        self.index = index


class ExportFormatError(InvalidArgument):
    """A line of an export is not what the format says (bad JSON, a missing or mistyped field).

    ``line`` is 1-based; ``field`` names the JSON field at fault ("line" for the whole line).
    """

    def __init__(self, line: int, field: str, message: str) -> None:
        self.line = line
        super().__init__(field, message)
        self.args = (f"line {line}: {field}: {message}",)


@dataclass(frozen=True, slots=True)
class ExportHeader:
    origin: str
    tree_size: int
    checkpoints: int
    format: str = EXPORT_FORMAT


@dataclass(frozen=True, slots=True)
class ExportCheckpoint:
    line: int
    published_at_ns: int
    note: str


@dataclass(frozen=True, slots=True)
class ExportEntry:
    line: int
    index: int
    leaf_hash: bytes
    data: bytes


def _dumps(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n"


def write_export(
    out: IO[str],
    *,
    origin: str,
    checkpoints: Iterable[tuple[str, int]],
    entries: Iterable[tuple[int, bytes, bytes]],
    tree_size: int,
) -> int:
    """Writes an export: ``checkpoints`` as (note text, published_at_ns) in size order, then
    ``entries`` as (index, leaf hash, entry bytes) for indices 0 .. tree_size-1. Returns the
    number of entries written; raises :class:`MissingEntries` if an index is missing or they
    do not number tree_size (the log lacks entries its checkpoint covers).
    """
    notes = list(checkpoints)
    out.write(
        _dumps(
            {
                "format": EXPORT_FORMAT,
                "origin": origin,
                "tree_size": tree_size,
                "checkpoints": len(notes),
            }
        )
    )
    for note, published_at_ns in notes:
        out.write(_dumps({"type": "checkpoint", "published_at_ns": published_at_ns, "note": note}))
    written = 0
    for index, leaf, data in entries:
        if index != written:
            raise MissingEntries(
                f"the log has no entry {written} (the next one it gave is {index}), though its "
                f"checkpoint of tree size {tree_size} covers it: an entry is missing from the "
                f"log (deleted, or the store is damaged); no export was written",
                index=written,
            )
        out.write(
            _dumps(
                {
                    "type": "entry",
                    "index": index,
                    "leaf_hash": leaf.hex(),
                    "entry": base64.b64encode(data).decode("ascii"),
                }
            )
        )
        written += 1
    if written != tree_size:
        raise MissingEntries(
            f"the log gave {written} entries, but its checkpoint covers {tree_size}: entries "
            f"[{written}, {tree_size}) are missing from the log; no export was written",
            index=written,
        )
    return written


def _int(obj: dict[str, Any], key: str, line: int) -> int:
    value = obj.get(key)
    if type(value) is not int or value < 0:
        raise ExportFormatError(line, key, f"{value!r} is not a non-negative integer")
    return value


def _str(obj: dict[str, Any], key: str, line: int) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise ExportFormatError(line, key, f"{value!r} is not a string")
    return value


class ExportReader:
    """Reads an export from an iterable of text lines, checking the syntax as it goes.

    ``header`` is read on construction; :meth:`checkpoints` then :meth:`entries` each must be
    consumed in that order, once. Trailing lines after the declared entries are an error.
    """

    def __init__(self, lines: Iterable[str]) -> None:
        self._lines = iter(lines)
        self._line = 0
        first = self._next("the header")
        if first is None:
            raise ExportFormatError(1, "line", "the export is empty (no header line)")
        form = first.get("format")
        if form not in READ_FORMATS:
            raise ExportFormatError(
                1, "format", f"{form!r} is not one of {', '.join(map(repr, READ_FORMATS))}"
            )
        origin = _str(first, "origin", 1)
        if not origin:
            raise ExportFormatError(1, "origin", "is empty")
        self.header = ExportHeader(
            origin=origin,
            tree_size=_int(first, "tree_size", 1),
            checkpoints=_int(first, "checkpoints", 1),
            format=str(form),
        )
        self.entries_read = 0

    @property
    def line(self) -> int:
        """The number of the last line read (1-based)."""
        return self._line

    def _next(self, what: str) -> dict[str, Any] | None:
        try:
            text = next(self._lines)
        except StopIteration:
            return None
        self._line += 1
        return self._parse(text, what)

    def _parse(self, text: str, what: str) -> dict[str, Any]:
        """The JSON object on line ``self._line``."""
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise ExportFormatError(
                self._line, "line", f"not JSON ({e.msg}); expected {what}"
            ) from e
        if not isinstance(obj, dict):
            raise ExportFormatError(self._line, "line", f"not a JSON object; expected {what}")
        return obj

    def _typed(self, expected: str, text: str | None = None) -> dict[str, Any] | None:
        """The next line (or ``text``, the line just read) as a line of type ``expected``."""
        what = f"a {expected} line"
        obj = self._next(what) if text is None else self._parse(text, what)
        if obj is not None and obj.get("type") != expected:
            raise ExportFormatError(
                self._line, "type", f"{obj.get('type')!r} where a {expected} line was expected"
            )
        return obj

    def checkpoints(self) -> Iterator[ExportCheckpoint]:
        for _ in range(self.header.checkpoints):
            obj = self._typed("checkpoint")
            if obj is None:
                raise ExportFormatError(
                    self._line + 1, "line", "the export ends before its declared checkpoints"
                )
            yield ExportCheckpoint(
                line=self._line,
                published_at_ns=_int(obj, "published_at_ns", self._line),
                note=_str(obj, "note", self._line),
            )

    def entries(self) -> Iterator[ExportEntry]:
        """The entry lines; stops early (without error) if the file ends: the verifier decides
        what a short export means."""
        for line, index, leaf, data in self.entry_rows():
            yield ExportEntry(line=line, index=index, leaf_hash=leaf, data=data)

    def entry_rows(self) -> Iterator[tuple[int, int, bytes, bytes]]:
        """:meth:`entries` as plain (line, index, leaf hash, entry bytes) tuples: the verifier's
        hot loop (building a frozen dataclass costs as much as hashing the entry)."""
        # One JSON parse per line, checks inlined; anything unusual is re-read by _slow_entry
        # for a precise error. The parse is json.loads's own decoder (its documented
        # raw_decode) without json.loads's wrapper (its type and BOM checks and two white-space
        # matches, about 1 microsecond a line): a line that is one JSON value from its first
        # character to its end or its "\n" gives what json.loads gives; any other line (white
        # space around the value, "\r\n", no JSON) goes to _slow_entry, which parses it with
        # json.loads.
        scan, b64decode, fromhex = _SCAN, binascii.a2b_base64, bytes.fromhex
        line = self._line
        for text in self._lines:
            line += 1
            self._line = line
            try:
                obj, end = scan(text, 0)
                if end != len(text) and (end + 1 != len(text) or text[end] != "\n"):
                    raise ValueError(text)
                index, leaf_hex, data64 = obj["index"], obj["leaf_hash"], obj["entry"]
            except (ValueError, KeyError, TypeError):
                yield from self._slow_entry(text)
                line = self._line
                continue
            if (
                obj.get("type") != "entry"
                or type(index) is not int
                or index < 0
                or type(leaf_hex) is not str
                or type(data64) is not str
                or len(leaf_hex) != 64
            ):
                yield from self._slow_entry(text)
                line = self._line
                continue
            try:
                leaf = fromhex(leaf_hex)
                data = b64decode(data64, strict_mode=True)
            except (ValueError, binascii.Error):
                yield from self._slow_entry(text)
                line = self._line
                continue
            self.entries_read += 1
            yield line, index, leaf, data

    def _slow_entry(self, text: str) -> Iterator[tuple[int, int, bytes, bytes]]:
        """Re-reads the entry line ``text`` (the last line read) with a precise error for
        whatever is wrong with it (or the entry, if it is only written unusually)."""
        obj = self._typed("entry", text)
        if obj is None:  # not reached: ``text`` is a line, never the end of the file
            raise ExportFormatError(self._line, "line", "an entry line was expected")
        line = self._line
        index = _int(obj, "index", line)
        try:
            leaf = bytes.fromhex(_str(obj, "leaf_hash", line))
        except ValueError as e:
            raise ExportFormatError(line, "leaf_hash", "is not hex") from e
        if len(leaf) != 32:
            raise ExportFormatError(line, "leaf_hash", f"is {len(leaf)} bytes, expected 32")
        try:
            data = base64.b64decode(_str(obj, "entry", line), validate=True)
        except binascii.Error as e:
            raise ExportFormatError(line, "entry", f"is not base64: {e}") from e
        self.entries_read += 1
        yield line, index, leaf, data
