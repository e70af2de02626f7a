"""A table's history, proven complete offline: entries with inclusion proofs against one signed
checkpoint, and the (client, table) chain they form (docs/log-format.md, "Slots and chains";
docs/auditing.md, "4b. Table histories and disputes").

Owns :func:`prove_entries` (leaf hashes, canonical entries at their indices, inclusion proofs
against a verified checkpoint: RFC 9162 section 2.1.3.2), :func:`check_history` (the chain
from seq A to seq B without a break), the ``rng-audit-table-history/v1`` file
(:func:`write_history`, :func:`read_history`) and :func:`describe` (an outcome in one line).
Pure: bytes and text in, reports or
:class:`~rng_service.audit.results.VerificationFailure` out; ``rng-audit`` does the I/O.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any

from rng_service.audit.verify import VerificationFailure, VerifiedHead
from rng_service.errors import InvalidArgument
from rng_service.log.entry import EntryFormatError, LogEntry
from rng_service.log.merkle import LEAF_PREFIX, ProofError, verify_inclusion

__all__ = [
    "HISTORY_FORMAT",
    "ChainBreak",
    "HistoryFile",
    "HistoryFormatError",
    "HistoryReport",
    "ProvenItem",
    "check_history",
    "describe",
    "hex_hash",
    "item_json",
    "json_field",
    "json_objects",
    "prove_entries",
    "proven_item",
    "read_history",
    "write_history",
]

HISTORY_FORMAT = "rng-audit-table-history/v1"


class ChainBreak(VerificationFailure):
    """The entries are not an unbroken stretch of the asked table's chain; ``index``: the log
    index at fault (the missing entry's, when the entry after it names it)."""


class HistoryFormatError(InvalidArgument):
    """A line of a table-history file is not what the format says (``line`` is 1-based)."""

    def __init__(self, line: int, field: str, message: str) -> None:
        self.line = line
        super().__init__(field, message)
        self.args = (f"line {line}: {field}: {message}",)


@dataclass(frozen=True, slots=True)
class ProvenItem:
    """An entry as a log read returned it: its index, bytes, leaf hash and inclusion proof."""

    index: int
    data: bytes
    leaf_hash: bytes
    proof: tuple[bytes, ...]


def prove_entries(
    items: Iterable[ProvenItem], head: VerifiedHead, *, what: str = "the log's answer"
) -> list[LogEntry]:
    """The decoded entries of ``items`` after checking each one's leaf hash, canonical form,
    index and inclusion proof in ``head`` (a checkpoint whose signature was verified)."""
    size, root = head.checkpoint.size, head.checkpoint.root_hash
    out: list[LogEntry] = []
    for item in items:
        where = f"{what}: log index {item.index}"
        leaf = hashlib.sha256(LEAF_PREFIX + item.data).digest()
        if leaf != item.leaf_hash:
            raise VerificationFailure(
                f"{where}: its leaf hash {item.leaf_hash.hex()} is not SHA-256(0x00 || entry) "
                f"= {leaf.hex()}: the entry bytes were changed",
                index=item.index,
            )
        try:
            entry = LogEntry.decode(item.data)
        except EntryFormatError as e:
            raise VerificationFailure(
                f"{where}: not a canonical entry ({e})", index=item.index
            ) from e
        if entry.index != item.index:
            raise VerificationFailure(
                f"{where}: the entry's own index field says {entry.index}: it was moved or forged",
                index=item.index,
            )
        if item.index >= size:
            raise VerificationFailure(
                f"{where} is beyond the checkpoint's tree of {size} entries: no signature "
                f"covers it",
                index=item.index,
            )
        try:
            verify_inclusion(leaf, item.index, size, list(item.proof), root)
        except ProofError as e:
            raise VerificationFailure(
                f"{where} is not in {head.source} (tree size {size}): its inclusion proof "
                f"does not verify ({e})",
                index=item.index,
            ) from e
        out.append(entry)
    return out


@dataclass(frozen=True, slots=True)
class HistoryReport:
    """An unbroken stretch of a (client, table) chain, every entry proven."""

    client: str
    table_id: str
    entries: tuple[LogEntry, ...]
    """The chain's entries, seq ``first_seq`` to ``last_seq``; empty if it has none there."""

    @property
    def first_seq(self) -> int | None:
        return self.entries[0].table_seq if self.entries else None

    @property
    def last_seq(self) -> int | None:
        return self.entries[-1].table_seq if self.entries else None

    @property
    def starts_chain(self) -> bool:
        """The stretch begins at the chain's first entry (seq 1, no predecessor)."""
        return bool(self.entries) and self.entries[0].table_prev is None


def _name(client: str, table_id: str) -> str:
    return f"table {table_id!r} of client {client!r}"


def _missing(first: int, last: int) -> str:
    if first == last:
        return f"seq {first} is missing"
    return f"seq {first} to {last} are missing"


def check_history(
    entries: Sequence[LogEntry],
    *,
    client: str,
    table_id: str,
    first_seq: int = 1,
    last_seq: int | None = None,
) -> HistoryReport:
    """Checks that ``entries`` are the chain of (``client``, ``table_id``) from ``first_seq``
    to ``last_seq`` (None: to its last entry given), one after the other without a gap, each
    naming the one before as its predecessor; raises :class:`ChainBreak` at the first break."""
    name = _name(client, table_id)
    previous: LogEntry | None = None
    for entry in entries:
        where = f"log index {entry.index}"
        if entry.version < 2 or entry.table_seq is None:
            raise ChainBreak(
                f"{where} is a format {entry.version} entry: it is in no table chain "
                "(chains start at each table's first format 2 entry)",
                index=entry.index,
            )
        if (entry.client, entry.table_id) != (client, table_id):
            raise ChainBreak(
                f"{where} is of {_name(entry.client, entry.table_id)}, not of the {name}",
                index=entry.index,
            )
        seq, prev = entry.table_seq, entry.table_prev
        if previous is None:
            if seq != first_seq:
                raise ChainBreak(
                    f"the history of {name} starts at seq {seq} ({where}), not at seq "
                    f"{first_seq}: "
                    + (_missing(first_seq, seq - 1) if seq > first_seq else "it goes back"),
                    index=entry.index if prev is None else prev,
                )
        else:
            _check_link(entry, previous, name)
        previous = entry
    _check_end(previous, name, first_seq=first_seq, last_seq=last_seq)
    return HistoryReport(client=client, table_id=table_id, entries=tuple(entries))


def _check_link(entry: LogEntry, previous: LogEntry, name: str) -> None:
    """``entry`` follows ``previous`` in the chain: the next seq, naming it as predecessor."""
    where = f"log index {entry.index}"
    seq, prev = entry.table_seq, entry.table_prev
    if seq is None:  # not reached: the caller checked it
        raise RuntimeError(f"log index {entry.index} has no table_seq")
    if previous.table_seq is None:  # not reached: checked when it was the entry
        raise RuntimeError(f"log index {previous.index} has no table_seq")
    expected = previous.table_seq + 1
    after = f"after seq {previous.table_seq} (log index {previous.index})"
    if seq > expected:
        named = "" if prev is None else f", whose predecessor is log index {prev}"
        raise ChainBreak(
            f"the history of {name} is broken {after}: the next entry it holds is seq "
            f"{seq} ({where}{named}): {_missing(expected, seq - 1)}",
            index=entry.index if prev is None else prev,
        )
    if seq < expected:
        raise ChainBreak(
            f"the history of {name} is broken {after}: the next entry it holds is seq "
            f"{seq} ({where}): the numbers go back (an entry repeated or out of order)",
            index=entry.index,
        )
    if prev != previous.index:
        raise ChainBreak(
            f"the history of {name} is broken {after}: seq {seq} ({where}) names log "
            f"index {prev} as its predecessor, not {previous.index}: two entries claim "
            "one place in the chain",
            index=entry.index,
        )


def _check_end(
    previous: LogEntry | None, name: str, *, first_seq: int, last_seq: int | None
) -> None:
    """The chain's last entry given (``previous``) is at ``last_seq``, if one is asked for."""
    if last_seq is not None and previous is not None and previous.table_seq != last_seq:
        if previous.table_seq is None:  # not reached: every entry was checked above
            raise RuntimeError(f"log index {previous.index} has no table_seq")
        if previous.table_seq < last_seq:
            raise ChainBreak(
                f"the history of {name} ends at seq {previous.table_seq} (log index "
                f"{previous.index}), but should reach seq {last_seq}: "
                f"{_missing(previous.table_seq + 1, last_seq)}",
                index=previous.index,
            )
        raise ChainBreak(
            f"the history of {name} goes on past seq {last_seq} to seq {previous.table_seq}",
            index=previous.index,
        )
    if last_seq is not None and previous is None:
        raise ChainBreak(
            f"the history of {name} should reach seq {last_seq} but holds no entry: "
            f"{_missing(first_seq, last_seq)}",
            index=0,
        )


# -- outcomes in one line ------------------------------------------------------------------


def _spin(spin: Any) -> str:
    if not isinstance(spin, dict):
        return "?"
    return f"{spin.get('number')} {spin.get('colour', '')}".strip()


def describe(entry: LogEntry) -> str:
    """An entry's outcome in one line (for listings; the entry itself is the record)."""
    outcome, params = dict(entry.outcome), dict(entry.params)
    if entry.kind == "roulette_spin":
        spins = outcome.get("spins") or []
        voided = [_spin(s) for s in spins if isinstance(s, dict) and s.get("voided")]
        final = _spin(outcome.get("final"))
        wheel = outcome.get("wheel", params.get("wheel", ""))
        text = f"{final} ({wheel} wheel)"
        if voided:
            text += f" after voided spin(s) {', '.join(voided)}"
        return text
    if entry.kind == "round_void":
        return f"ROUND VOIDED by {params.get('operator')!s}: {params.get('reason')!s}"
    if entry.kind == "fire_numbers":
        return f"Fire Numbers {', '.join(map(str, outcome.get('numbers') or []))}"
    if entry.kind == "dice_roll":
        return f"dice {outcome.get('faces')} total {outcome.get('total')}"
    text = json.dumps(outcome, separators=(",", ":"), sort_keys=True)
    return text if len(text) <= 100 else text[:97] + "..."


# -- the table-history file ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HistoryFile:
    """What ``rng-audit table-history --out`` saved: the asked chain, the stretch fetched
    (``first_seq`` to ``last_seq``, both 0 when the chain had no entry there), the signed
    checkpoint of the tree its proofs are for, and the entries."""

    origin: str
    client: str
    table_id: str
    first_seq: int
    last_seq: int
    tree_size: int
    checkpoint: str
    items: tuple[ProvenItem, ...]


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n"


def write_history(out: IO[str], history: HistoryFile) -> None:
    """Writes ``history`` as an ``rng-audit-table-history/v1`` file: a header line, then one
    line per entry (JSON Lines)."""
    out.write(
        _line(
            {
                "format": HISTORY_FORMAT,
                "origin": history.origin,
                "client": history.client,
                "table_id": history.table_id,
                "first_seq": history.first_seq,
                "last_seq": history.last_seq,
                "tree_size": history.tree_size,
                "checkpoint": history.checkpoint,
            }
        )
    )
    for item in history.items:
        out.write(_line({"type": "entry", **item_json(item)}))


def item_json(item: ProvenItem) -> dict[str, Any]:
    """A proven entry as a saved file's line holds it (without its ``type``)."""
    return {
        "index": item.index,
        "leaf_hash": item.leaf_hash.hex(),
        "entry": base64.b64encode(item.data).decode("ascii"),
        "proof": [h.hex() for h in item.proof],
    }


def proven_item(obj: dict[str, Any], line: int) -> ProvenItem:
    """The proven entry a saved file's line ``obj`` holds (:func:`item_json`'s form), else
    :class:`HistoryFormatError` naming the line and field. Judges nothing."""
    index = json_field(obj, "index", int, line)
    try:
        data = base64.b64decode(json_field(obj, "entry", str, line), validate=True)
    except binascii.Error as e:
        raise HistoryFormatError(line, "entry", f"is not base64: {e}") from e
    proof = json_field(obj, "proof", list, line)
    return ProvenItem(
        index=index,
        data=data,
        leaf_hash=hex_hash(obj.get("leaf_hash"), line, "leaf_hash"),
        proof=tuple(hex_hash(h, line, "proof") for h in proof),
    )


def json_objects(lines: Iterable[str], file_format: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """The lines of a saved JSON Lines file as objects, with their line numbers; the first
    must be the header of ``file_format``. Anything else is :class:`HistoryFormatError`."""
    for number, text in enumerate(lines, 1):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise HistoryFormatError(number, "line", f"not JSON ({e.msg})") from e
        if type(obj) is not dict:
            raise HistoryFormatError(number, "line", "not a JSON object")
        if number == 1 and obj.get("format") != file_format:
            raise HistoryFormatError(
                number, "format", f"{obj.get('format')!r} is not {file_format!r}"
            )
        yield number, obj


def json_field(obj: dict[str, Any], key: str, kind: type, line: int) -> Any:
    """``obj[key]`` of exactly type ``kind`` (an int not negative), else
    :class:`HistoryFormatError` naming the line and field (saved history and proof files)."""
    value = obj.get(key)
    if type(value) is not kind or (isinstance(value, int) and value < 0):
        expected = "a non-negative integer" if kind is int else f"a {kind.__name__}"
        raise HistoryFormatError(line, key, f"{value!r} is not {expected}")
    return value


def hex_hash(text: Any, line: int, field: str) -> bytes:
    """A 32-byte hash written in hex, else :class:`HistoryFormatError` naming the field."""
    try:
        value = bytes.fromhex(text) if isinstance(text, str) else None
    except ValueError:
        value = None
    if value is None or len(value) != 32:
        raise HistoryFormatError(line, field, "is not a 32-byte hash in hex")
    return value


def read_history(lines: Iterable[str]) -> HistoryFile:
    """Reads an ``rng-audit-table-history/v1`` file; syntax errors are
    :class:`HistoryFormatError` naming the line and field. Judges nothing."""
    header: dict[str, Any] | None = None
    items: list[ProvenItem] = []
    for number, obj in json_objects(lines, HISTORY_FORMAT):
        if header is None:
            header = obj
            for key, kind in (
                ("origin", str), ("client", str), ("table_id", str), ("checkpoint", str),
                ("first_seq", int), ("last_seq", int), ("tree_size", int),
            ):  # fmt: skip
                json_field(obj, key, kind, number)
            continue
        if obj.get("type") != "entry":
            raise HistoryFormatError(number, "type", f"{obj.get('type')!r} is not 'entry'")
        items.append(proven_item(obj, number))
    if header is None:
        raise HistoryFormatError(1, "line", "the file is empty (no header line)")
    return HistoryFile(
        origin=header["origin"],
        client=header["client"],
        table_id=header["table_id"],
        first_seq=header["first_seq"],
        last_seq=header["last_seq"],
        tree_size=header["tree_size"],
        checkpoint=header["checkpoint"],
        items=tuple(items),
    )
