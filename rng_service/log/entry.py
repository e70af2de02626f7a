"""Log entries and their canonical byte encoding (format version 1).

An entry is encoded as RFC 8785 (JSON Canonicalization Scheme) canonical JSON restricted to the
types JCS represents exactly in every language: objects with ASCII keys, arrays, strings,
booleans, null and integers of magnitude below 2^53. No floats ever appear. Under that
restriction JCS is: object members sorted by key, no insignificant white space, strings with
only the mandatory escapes (RFC 8785 section 3.2.2.2), integers in shortest decimal form. The
leaf hash of an entry is SHA-256(0x00 || entry bytes) (RFC 6962 section 2.1, see
``rng_service.log.merkle``). The fields are listed in docs/log-format.md.

This module owns the encoding and strict decoding; it draws nothing and stores nothing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rng_service.errors import IntegrityError

__all__ = [
    "FORMAT_VERSION",
    "EntryFormatError",
    "GeneratorRef",
    "JsonValue",
    "LogEntry",
    "canonical_json",
    "format_time",
    "request_digest",
]

FORMAT_VERSION = 1
_MAX_SAFE_INT = 2**53 - 1

JsonValue = Any  # str | int | bool | None | list[JsonValue] | dict[str, JsonValue]


class EntryFormatError(IntegrityError):
    """Bytes that are not a valid canonical entry of a known format version."""


def _check(value: JsonValue, path: str) -> None:
    """Rejects what canonical JSON cannot carry exactly (the encoder catches bad Unicode).

    Iterative, since it runs on every entry on the log's write path; a child's path text is
    only built when the child is a container or fails.
    """
    stack: list[tuple[Any, str, object]] = [(value, path, None)]
    pop, push = stack.pop, stack.append
    while stack:
        item, parent, key = pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        where = (
            parent if key is None else f"{parent}[{key}]" if type(key) is int else f"{parent}.{key}"
        )
        if kind is int:
            if not -_MAX_SAFE_INT <= item <= _MAX_SAFE_INT:
                raise ValueError(f"{where}: integer {item} outside +-(2^53-1)")
        elif kind is dict:
            for k, sub in item.items():
                if type(k) is not str or not k.isascii():
                    raise ValueError(f"{where}: object key {k!r} is not an ASCII string")
                if type(sub) is not str:
                    push((sub, where, k))
        elif kind is list or kind is tuple:
            for i, sub in enumerate(item):
                if type(sub) is not str:
                    push((sub, where, i))
        elif isinstance(item, Mapping):
            push((dict(item), where, None))
        else:
            raise ValueError(f"{where}: {kind.__name__} is not allowed in a canonical entry")


_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical_json(value: JsonValue) -> bytes:
    """RFC 8785 canonical JSON of ``value`` (restricted types; see the module docstring)."""
    _check(value, "$")
    try:
        return _ENCODER.encode(value).encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"string is not valid Unicode: {e}") from e


def format_time(timestamp_ns: int) -> str:
    """RFC 3339 UTC time with exactly six fractional digits, e.g. 2026-11-29T14:55:00.123456Z."""
    seconds, ns = divmod(timestamp_ns, 10**9)
    base = dt.datetime.fromtimestamp(seconds, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{ns // 1000:06d}Z"


def request_digest(
    *, kind: str, params: JsonValue, table_id: str, round_id: str, session_id: str
) -> bytes:
    """SHA-256 of what makes two requests "the same" for idempotency (request id aside)."""
    return hashlib.sha256(
        canonical_json(
            {
                "kind": kind,
                "params": params,
                "table_id": table_id,
                "round_id": round_id,
                "session_id": session_id,
            }
        )
    ).digest()


@dataclass(frozen=True, slots=True)
class GeneratorRef:
    """Which generator state produced an outcome: never secret material, only identifiers."""

    instance: str
    epoch: int
    lab_mode: bool

    def to_record(self) -> dict[str, JsonValue]:
        return {"instance": self.instance, "epoch": self.epoch, "lab_mode": self.lab_mode}


_FIELDS = frozenset(
    {
        "v",
        "index",
        "time",
        "kind",
        "params",
        "outcome",
        "client",
        "table_id",
        "round_id",
        "session_id",
        "request_id",
        "profile_sha256",
        "generator",
    }
)


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One log entry: an outcome with everything needed to audit it."""

    index: int
    timestamp_ns: int
    kind: str
    params: Mapping[str, JsonValue]
    outcome: Mapping[str, JsonValue]
    client: str
    table_id: str
    round_id: str
    session_id: str
    request_id: str
    generator: GeneratorRef
    profile_sha256: str = ""
    version: int = field(default=FORMAT_VERSION)
    #: ``format_time(timestamp_ns)``, when the caller has it already (one per commit group).
    time_text: str = field(default="", compare=False, repr=False)

    def to_record(self) -> dict[str, JsonValue]:
        return {
            "v": self.version,
            "index": self.index,
            "time": self.time_text or format_time(self.timestamp_ns),
            "kind": self.kind,
            "params": dict(self.params),
            "outcome": dict(self.outcome),
            "client": self.client,
            "table_id": self.table_id,
            "round_id": self.round_id,
            "session_id": self.session_id,
            "request_id": self.request_id,
            "profile_sha256": self.profile_sha256,
            "generator": self.generator.to_record(),
        }

    def encode(self) -> bytes:
        return canonical_json(self.to_record())

    @classmethod
    def decode(cls, data: bytes) -> LogEntry:
        """Strictly decodes canonical entry bytes; anything else raises EntryFormatError."""
        try:
            record = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise EntryFormatError(f"entry is not UTF-8 JSON: {e}") from e
        if not isinstance(record, dict):
            raise EntryFormatError("entry is not a JSON object")
        if record.get("v") != FORMAT_VERSION:
            raise EntryFormatError(
                f"unknown entry format version {record.get('v')!r} (known: {FORMAT_VERSION})"
            )
        if set(record) != _FIELDS:
            missing = sorted(_FIELDS - set(record))
            extra = sorted(set(record) - _FIELDS)
            raise EntryFormatError(f"entry fields wrong: missing {missing}, unexpected {extra}")
        try:
            if canonical_json(record) != data:
                raise EntryFormatError("entry bytes are not in canonical form")
            gen = record["generator"]
            entry = cls(
                index=_typed(record, "index", int),
                timestamp_ns=_parse_time(_typed(record, "time", str)),
                kind=_typed(record, "kind", str),
                params=_typed(record, "params", dict),
                outcome=_typed(record, "outcome", dict),
                client=_typed(record, "client", str),
                table_id=_typed(record, "table_id", str),
                round_id=_typed(record, "round_id", str),
                session_id=_typed(record, "session_id", str),
                request_id=_typed(record, "request_id", str),
                profile_sha256=_typed(record, "profile_sha256", str),
                generator=GeneratorRef(
                    instance=_typed(gen, "instance", str),
                    epoch=_typed(gen, "epoch", int),
                    lab_mode=_typed(gen, "lab_mode", bool),
                ),
            )
        except (ValueError, TypeError, KeyError) as e:
            raise EntryFormatError(f"malformed entry: {e}") from e
        return entry


def _typed(record: Any, key: str, kind: type) -> Any:
    if not isinstance(record, dict) or key not in record:
        raise EntryFormatError(f"entry field {key!r} missing")
    value = record[key]
    if kind is int and isinstance(value, bool):
        raise EntryFormatError(f"entry field {key!r} must be an integer")
    if not isinstance(value, kind):
        raise EntryFormatError(f"entry field {key!r} must be {kind.__name__}")
    return value


def _parse_time(text: str) -> int:
    try:
        if len(text) != 27 or not text.endswith("Z") or text[19] != ".":
            raise ValueError(text)
        if not (text[20:26].isascii() and text[20:26].isdigit()):
            raise ValueError(text)
        whole = dt.datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.UTC)
        micros = int(text[20:26])
    except ValueError as e:
        raise EntryFormatError(f"entry time {text!r} is not RFC 3339 with 6 digits") from e
    return int(whole.timestamp()) * 10**9 + micros * 1000
