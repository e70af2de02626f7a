"""Log entries and their canonical byte encoding (format versions 1, 2 and 3).

Owns the entry's fields (docs/log-format.md, "Entries"), their encoding and strict decoding:
RFC 8785 canonical JSON restricted to what it represents exactly everywhere (ASCII keys, no
floats, integers below 2^53; :mod:`rng_service.canonical`), assembled member by member in
sorted key order. Format 2 adds ``slot``, ``table_seq`` and ``table_prev`` inside the signed
bytes; format 3 adds ``table_map``, the root of the map of table heads after the entry
(:mod:`rng_service.log.table_map`; docs/log-format.md, "Table map"); older formats keep
decoding. The leaf hash is SHA-256(0x00 || entry bytes) (RFC 6962
section 2.1, :mod:`rng_service.log.merkle`). It draws nothing and stores nothing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rng_service import canonical
from rng_service.canonical import MAX_SAFE_INTEGER as _MAX_SAFE_INT
from rng_service.canonical import JsonValue
from rng_service.errors import IntegrityError

__all__ = [
    "FORMAT_VERSION",
    "KNOWN_VERSIONS",
    "WRITE_VERSION",
    "EntryFormatError",
    "GeneratorRef",
    "JsonValue",
    "LogEntry",
    "canonical_json",
    "format_time",
    "request_digest",
]

FORMAT_VERSION = 3
"""The newest entry format (the one with every field this build knows)."""
KNOWN_VERSIONS = (1, 2, 3)
"""The formats :meth:`LogEntry.decode` reads."""
WRITE_VERSION = FORMAT_VERSION
"""The format the log writer writes: 3, each entry carrying the table map's root after it
(:mod:`rng_service.writer.heads`)."""
_DEFAULT_VERSION = 2
"""A :class:`LogEntry`'s default ``version``: one built without a ``table_map`` is format 2."""


class EntryFormatError(IntegrityError):
    """Bytes that are not a valid canonical entry of a known format version."""


_STR = canonical.string
_text = canonical.checked_text


def _check(value: JsonValue, path: str) -> None:
    """Rejects what an entry's canonical JSON cannot carry (the encoder catches bad Unicode)."""
    canonical.check(value, path, ascii_keys=True)


def canonical_json(value: JsonValue) -> bytes:
    """RFC 8785 canonical JSON of ``value``, object keys ASCII (:mod:`rng_service.canonical`)."""
    return canonical.dumps(value, ascii_keys=True)


def _safe_int(value: object) -> bool:
    return type(value) is int and -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT


def format_time(timestamp_ns: int) -> str:
    """RFC 3339 UTC time with exactly six fractional digits, e.g. 2026-11-29T14:55:00.123456Z."""
    seconds, ns = divmod(timestamp_ns, 10**9)
    base = dt.datetime.fromtimestamp(seconds, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{ns // 1000:06d}Z"


def request_digest(
    *,
    kind: str,
    params: JsonValue,
    table_id: str,
    round_id: str,
    session_id: str,
    slot: str = "",
) -> bytes:
    """SHA-256 of what makes two requests "the same" for idempotency (request id aside).

    ``slot`` is the slot the client named (generic draws); "" (a slot the service derives from
    the kind or the request id) leaves it out, so requests without one digest as before format 2.
    """
    fast = _digest_text(kind, params, table_id, round_id, session_id, slot)
    if fast is not None:
        return hashlib.sha256(fast).digest()
    record = {
        "kind": kind,
        "params": params,
        "table_id": table_id,
        "round_id": round_id,
        "session_id": session_id,
    }
    if slot:
        record["slot"] = slot
    return hashlib.sha256(canonical_json(record)).digest()


def _digest_text(
    kind: object,
    params: object,
    table_id: object,
    round_id: object,
    session_id: object,
    slot: object,
) -> bytes | None:
    """``canonical_json`` of the digest's record, assembled from its members (keys in their
    sorted order); None whenever the general path might not succeed, which then decides."""
    if not (
        type(kind) is str
        and type(table_id) is str
        and type(round_id) is str
        and type(session_id) is str
        and type(slot) is str
        and type(params) is dict
    ):
        return None
    try:
        _check(params, "$.params")
        named = f'"slot":{_STR(slot)},' if slot else ""
        text = (
            f'{{"kind":{_STR(kind)},"params":{_text(params)},"round_id":{_STR(round_id)},'
            f'"session_id":{_STR(session_id)},{named}"table_id":{_STR(table_id)}}}'
        )
        return text.encode("utf-8")
    except (ValueError, TypeError):  # UnicodeEncodeError is a ValueError
        return None


@dataclass(frozen=True, slots=True)
class GeneratorRef:
    """Which generator state produced an outcome: never secret material, only identifiers."""

    instance: str
    epoch: int
    lab_mode: bool

    def to_record(self) -> dict[str, JsonValue]:
        return {"instance": self.instance, "epoch": self.epoch, "lab_mode": self.lab_mode}


#: The members of an entry's ``generator`` object (docs/log-format.md), no more, no fewer.
_GENERATOR_KEYS = frozenset({"instance", "epoch", "lab_mode"})

_FIELDS_V1 = frozenset(
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
_FIELDS_V2 = _FIELDS_V1 | {"slot", "table_seq", "table_prev"}
_FIELDS_V3 = _FIELDS_V2 | {"table_map"}
_FIELDS = {1: _FIELDS_V1, 2: _FIELDS_V2, 3: _FIELDS_V3}
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One log entry: an outcome with everything needed to audit it.

    ``slot``, ``table_seq`` and ``table_prev`` are format 2's (None in a format 1 entry):
    the round's slot the entry fills, its number in the (client, table) chain, and the log
    index of the chain's previous entry (None for the chain's first, whose ``table_seq`` is 1).
    ``table_map`` is format 3's (None before): the 32-byte root of the map of table heads
    with this entry's own head applied, written as 64 lowercase hex characters.
    """

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
    slot: str | None = None
    table_seq: int | None = None
    table_prev: int | None = None
    table_map: bytes | None = None
    version: int = field(default=_DEFAULT_VERSION)
    #: ``format_time(timestamp_ns)``, when the caller has it already (one per commit group).
    time_text: str = field(default="", compare=False, repr=False)

    def to_record(self) -> dict[str, JsonValue]:
        record: dict[str, JsonValue] = {
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
        if self.version >= 2:
            record["slot"] = self.slot
            record["table_seq"] = self.table_seq
            record["table_prev"] = self.table_prev
        if self.version >= 3:
            record["table_map"] = self.table_map.hex() if type(self.table_map) is bytes else None
        return record

    def encode(self) -> bytes:
        fast = self._encode_fast()
        if fast is not None:
            return fast
        self._check_chain()
        return canonical_json(self.to_record())

    def _check_chain(self) -> None:
        """The format-2 and format-3 fields must be those of the entry's version (ValueError
        otherwise)."""
        if self.version not in KNOWN_VERSIONS or type(self.version) is not int:
            raise ValueError(f"unknown entry format version {self.version!r}")
        if self.version == 1:
            if self.slot is not None or self.table_seq is not None or self.table_prev is not None:
                raise ValueError("a format 1 entry has no slot, table_seq or table_prev")
        else:
            _check_v2(self.index, self.slot, self.table_seq, self.table_prev, ValueError)
        if self.version == 3:
            if type(self.table_map) is not bytes or len(self.table_map) != 32:
                raise ValueError("a format 3 entry's table_map must be 32 bytes")
        elif self.table_map is not None:
            raise ValueError(f"a format {self.version} entry has no table_map")

    def _encode_fast(self) -> bytes | None:
        """``canonical_json(self.to_record())`` assembled member by member (keys in their
        sorted order), without sorting or walking the record itself; None whenever the
        general path might not succeed (it then raises its own error)."""
        time_text = self.time_text or format_time(self.timestamp_ns)
        if not self._chain_fits_fast():
            return None  # encode() then says what is wrong with the format-2 fields
        if not self._scalars_fit_fast(time_text):
            return None
        try:
            return self._assemble(time_text)
        except (ValueError, TypeError):  # UnicodeEncodeError is a ValueError
            return None

    def _chain_fits_fast(self) -> bool:
        """The format-2 and format-3 fields are those of the entry's version, and valid."""
        seq, prev, root = self.table_seq, self.table_prev, self.table_map
        if self.version == 1:
            return self.slot is None and seq is None and prev is None and root is None
        return (
            (
                (self.version == 2 and root is None)
                or (self.version == 3 and type(root) is bytes and len(root) == 32)
            )
            and type(self.slot) is str
            and bool(self.slot)
            and type(seq) is int
            and type(self.index) is int
            and (
                (prev is None and seq == 1)
                or (type(prev) is int and 1 < seq <= _MAX_SAFE_INT and 0 <= prev < self.index)
            )
        )

    def _scalars_fit_fast(self, time_text: str) -> bool:
        """Every member but params and outcome has the exact type the format names."""
        gen = self.generator
        return (
            _safe_int(self.version)
            and _safe_int(self.index)
            and type(gen) is GeneratorRef
            and _safe_int(gen.epoch)
            and type(gen.lab_mode) is bool
            and type(gen.instance) is str
            and type(time_text) is str
            and type(self.kind) is str
            and type(self.client) is str
            and type(self.table_id) is str
            and type(self.round_id) is str
            and type(self.session_id) is str
            and type(self.request_id) is str
            and type(self.profile_sha256) is str
        )

    def _assemble(self, time_text: str) -> bytes:
        """The canonical text, members in sorted key order (ValueError or TypeError where
        params or outcome hold what canonical JSON does not)."""
        gen = self.generator
        v2 = self.version >= 2
        params = dict(self.params)
        outcome = dict(self.outcome)
        _check(params, "$.params")
        _check(outcome, "$.outcome")
        text = (
            f'{{"client":{_STR(self.client)},'
            f'"generator":{{"epoch":{gen.epoch},"instance":{_STR(gen.instance)},'
            f'"lab_mode":{"true" if gen.lab_mode else "false"}}},'
            f'"index":{self.index},"kind":{_STR(self.kind)},'
            f'"outcome":{_text(outcome)},"params":{_text(params)},'
            f'"profile_sha256":{_STR(self.profile_sha256)},'
            f'"request_id":{_STR(self.request_id)},"round_id":{_STR(self.round_id)},'
            f'"session_id":{_STR(self.session_id)},'
            + (f'"slot":{_STR(self.slot or "")},' if v2 else "")
            + f'"table_id":{_STR(self.table_id)},'
            + (f'"table_map":"{self.table_map.hex()}",' if self.table_map is not None else "")
            + (
                f'"table_prev":{"null" if self.table_prev is None else self.table_prev},'
                f'"table_seq":{self.table_seq},'
                if v2
                else ""
            )
            + f'"time":{_STR(time_text)},"v":{self.version}}}'
        )
        return text.encode("utf-8")

    @classmethod
    def decode(cls, data: bytes) -> LogEntry:
        """Strictly decodes canonical entry bytes; anything else raises EntryFormatError."""
        record, version = _parse_record(data)
        try:
            if canonical.reencode(record, ascii_keys=True) != data:
                raise EntryFormatError("entry bytes are not in canonical form")
            return cls._from_record(record, version)
        except (ValueError, TypeError, KeyError) as e:
            raise EntryFormatError(f"malformed entry: {e}") from e

    @classmethod
    def _from_record(cls, record: dict[str, Any], version: int) -> LogEntry:
        """The entry of a record with the fields of its ``version``, each of its type."""
        gen = _typed(record, "generator", dict)
        if gen.keys() != _GENERATOR_KEYS:
            raise EntryFormatError(
                f"entry field 'generator' must hold exactly {sorted(_GENERATOR_KEYS)}, not "
                f"{sorted(gen)}"
            )
        index = _typed(record, "index", int)
        chain: dict[str, Any] = {}
        if version >= 2:
            prev = record["table_prev"]
            chain = {
                "slot": _typed(record, "slot", str),
                "table_seq": _typed(record, "table_seq", int),
                "table_prev": None if prev is None else _typed(record, "table_prev", int),
            }
            _check_v2(index, **chain, error=EntryFormatError)
        if version >= 3:
            chain["table_map"] = _root_of(_typed(record, "table_map", str))
        return cls(
            index=index,
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
            version=version,
            **chain,
        )


def _parse_record(data: bytes) -> tuple[dict[str, Any], int]:
    """Restricted canonical JSON holding an object with the fields of a known format
    version: the object and its version; else :class:`EntryFormatError`."""
    try:
        record = canonical.parse(data, ascii_keys=True)
    except canonical.CanonicalJsonError as e:
        raise EntryFormatError(f"entry is not restricted canonical JSON: {e}") from e
    if not isinstance(record, dict):
        raise EntryFormatError("entry is not a JSON object")
    version = record.get("v")
    if type(version) is not int or version not in _FIELDS:
        raise EntryFormatError(
            f"unknown entry format version {version!r} (known: "
            f"{', '.join(map(str, KNOWN_VERSIONS))})"
        )
    fields = _FIELDS[version]
    if set(record) != fields:
        missing = sorted(fields - set(record))
        extra = sorted(set(record) - fields)
        raise EntryFormatError(
            f"format {version} entry fields wrong: missing {missing}, unexpected {extra}"
        )
    return record, version


def _check_v2(
    index: int,
    slot: object,
    table_seq: object,
    table_prev: object,
    error: type[Exception],
) -> None:
    """The format-2 fields' rules (docs/log-format.md): a non-empty slot; ``table_seq`` from 1;
    ``table_prev`` null exactly for ``table_seq`` 1, else an earlier index."""
    if type(slot) is not str or not slot:
        raise error("entry field 'slot' must be a non-empty string")
    if type(table_seq) is not int or table_seq < 1:
        raise error("entry field 'table_seq' must be an integer from 1")
    if table_prev is None:
        if table_seq != 1:
            raise error(f"entry field 'table_prev' is null but table_seq is {table_seq}, not 1")
        return
    if type(table_prev) is not int or not 0 <= table_prev < index:
        raise error(f"entry field 'table_prev' must be null or an index below {index}")
    if table_seq == 1:
        raise error("entry field 'table_prev' must be null when table_seq is 1")


def _root_of(text: str) -> bytes:
    """The 32 bytes of a format 3 entry's ``table_map``: exactly 64 lowercase hex characters."""
    if len(text) != 64 or not _HEX.issuperset(text):
        raise EntryFormatError(
            "entry field 'table_map' must be 64 lowercase hex characters (a SHA-256 map root)"
        )
    return bytes.fromhex(text)


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
