"""A table's chain proven complete from a signed checkpoint and a map proof of its head.

Owns :func:`prove_head` and :func:`walk_back` (docs/auditing.md, "Table histories and
disputes"; docs/log-format.md, "Table map"): the checkpoint's newest entry (index tree size - 1,
proven in the checkpoint by its inclusion proof) carries the map root in its signed
``table_map`` field (entry format 3); the map proof of a (client, table) chain against that
root gives the chain's head (log index and table_seq of its newest entry) or proves that the
chain has no entry. Walking back from the head by each entry's signed ``table_prev`` to a
first seq gives every entry of the chain in between, whatever a store's index says: so a
history or a dispute answered this way is complete as of that checkpoint. Pure: proven items in,
entries or a :class:`~rng_service.audit.results.VerificationFailure` out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from rng_service.audit.history import (
    ChainBreak,
    HistoryFormatError,
    ProvenItem,
    hex_hash,
    item_json,
    json_field,
    json_objects,
    prove_entries,
    proven_item,
)
from rng_service.audit.results import VerificationFailure, VerifiedHead
from rng_service.log.entry import LogEntry
from rng_service.log.table_map import MapHead, MapProof, MapProofError, verify_map_proof

__all__ = [
    "PROOF_FORMAT",
    "ProvenHead",
    "TableProofFile",
    "prove_head",
    "read_table_proof",
    "walk_back",
    "write_table_proof",
]


@dataclass(frozen=True, slots=True)
class ProvenHead:
    """What a verified map proof established in the tree of ``tree_size`` entries: the
    chain's ``head`` (None: it has no entry), from the root in ``root_entry``."""

    client: str
    table_id: str
    tree_size: int
    root: bytes
    root_entry: LogEntry
    head: MapHead | None


def _name(client: str, table_id: str) -> str:
    return f"table {table_id!r} of client {client!r}"


def prove_head(
    root_item: ProvenItem,
    proof: MapProof,
    head: VerifiedHead,
    *,
    client: str,
    table_id: str,
    what: str = "the map proof",
) -> ProvenHead:
    """Checks ``root_item`` (the tree's newest entry, proven in ``head``, a checkpoint whose
    signature was verified) and the map proof of (``client``, ``table_id``) against the
    ``table_map`` root it signed; raises :class:`VerificationFailure` naming what failed."""
    size = head.checkpoint.size
    if root_item.index != size - 1:
        raise VerificationFailure(
            f"{what}: its root entry is log index {root_item.index}, not the newest entry of "
            f"the checkpoint's tree ({size - 1}): the root it carries is not the checkpoint's",
            index=root_item.index,
        )
    (entry,) = prove_entries([root_item], head, what=f"{what}: the root entry")
    if entry.table_map is None:
        raise VerificationFailure(
            f"{what}: entry {entry.index} is of format {entry.version}, which carries no map "
            "root: the service sent a map proof for a log without a committed map",
            index=entry.index,
        )
    if proof.head is not None and (proof.head.client_id, proof.head.table_id) != (
        client,
        table_id,
    ):
        raise VerificationFailure(
            f"{what}: it is about another chain than the {_name(client, table_id)}"
        )
    try:
        proven = verify_map_proof(entry.table_map, client, table_id, proof)
    except MapProofError as e:
        raise VerificationFailure(
            f"{what} of the {_name(client, table_id)} does not verify against the map root "
            f"{entry.table_map.hex()} signed in entry {entry.index} (tree size {size}): {e}",
            index=entry.index,
        ) from e
    return ProvenHead(client, table_id, size, entry.table_map, entry, proven)


def walk_back(entries: Sequence[LogEntry], proven: ProvenHead, first_seq: int) -> list[LogEntry]:
    """The chain from ``first_seq`` to the proven head, in seq order, walked back from the head
    by ``table_prev`` through ``entries`` (proven entries as the log gave them). Raises
    :class:`ChainBreak` when an entry of the walk was not given, or when an entry given for the
    chain is not on the walk (a second signed entry claiming a place in it)."""
    name = _name(proven.client, proven.table_id)
    head = proven.head
    if head is None:
        if entries:
            raise ChainBreak(
                f"log index {entries[0].index} was given as of the {name}, which the committed "
                f"map proves has no entry as of tree size {proven.tree_size}",
                index=entries[0].index,
            )
        return []
    by_index = {e.index: e for e in entries}
    walked: list[LogEntry] = []
    index: int | None = head.index
    seq = head.seq
    while seq >= first_seq:
        entry = by_index.get(index) if index is not None else None
        if index is None or entry is None:
            raise ChainBreak(
                f"the {name} walked back from its committed head (log index {head.index}, seq "
                f"{head.seq}) needs seq {seq}"
                + ("" if index is None else f" (log index {index})")
                + ", which the log did not give: the history is not complete",
                index=index if index is not None else head.index,
            )
        if (entry.client, entry.table_id, entry.table_seq) != (
            proven.client,
            proven.table_id,
            seq,
        ):
            raise ChainBreak(
                f"log index {entry.index} is on the walk back of the {name} at seq {seq}, but "
                f"its signed bytes say seq {entry.table_seq} of table {entry.table_id!r} of "
                f"client {entry.client!r}",
                index=entry.index,
            )
        walked.append(entry)
        index, seq = entry.table_prev, seq - 1
        if index is None and seq >= first_seq:
            raise ChainBreak(
                f"log index {entry.index} (seq {entry.table_seq} of the {name}) names no "
                "predecessor, yet is not the chain's first entry",
                index=entry.index,
            )
    _no_other(entries, walked, proven, first_seq)
    walked.reverse()
    return walked


def _no_other(
    entries: Sequence[LogEntry], walked: Sequence[LogEntry], proven: ProvenHead, first_seq: int
) -> None:
    """No entry given for the chain from ``first_seq`` on is off the walk (a fork)."""
    on_walk = {e.index for e in walked}
    for entry in entries:
        if entry.index in on_walk or entry.table_seq is None or entry.table_seq < first_seq:
            continue
        if (entry.client, entry.table_id) == (proven.client, proven.table_id) and proven.head:
            raise ChainBreak(
                f"log index {entry.index} claims seq {entry.table_seq} of the "
                f"{_name(proven.client, proven.table_id)}, but is not on the chain walked back "
                f"from its committed head (log index {proven.head.index}, seq "
                f"{proven.head.seq}): two signed entries claim one place in it",
                index=entry.index,
            )


# -- the proof file (rng-audit dispute --out, table-history --out) ---------------------------

PROOF_FORMAT = "rng-audit-table-proof/v1"

_TERMINALS = ("present", "absent_empty", "absent_other")


@dataclass(frozen=True, slots=True)
class TableProofFile:
    """What ``rng-audit dispute --out`` (or ``table-history --out`` on a log with a committed
    map) saved: the chain asked about, the signed checkpoint (with any witness cosignatures),
    the root entry and the map proof of the chain's head, the disputed rounds and sessions,
    and the chain's entries from ``first_seq`` to its head with their inclusion proofs."""

    origin: str
    client: str
    table_id: str
    first_seq: int
    tree_size: int
    checkpoint: str
    root: ProvenItem
    proof: MapProof
    items: tuple[ProvenItem, ...]
    rounds: tuple[str, ...] = ()
    sessions: tuple[str, ...] = ()
    extra: tuple[ProvenItem, ...] = ()
    """Entries found by the disputed rounds' lookups outside the chain (format 1)."""


def write_table_proof(out: IO[str], saved: TableProofFile) -> None:
    """Writes ``saved`` as an ``rng-audit-table-proof/v1`` file (JSON Lines: a header, then
    one line per entry; docs/log-format.md, "Table proof files")."""
    proof = saved.proof
    terminal: dict[str, Any] = {"terminal": proof.kind}
    if proof.head is not None:
        terminal.update(head_index=proof.head.index, head_seq=proof.head.seq)
    elif proof.other_key is not None:
        terminal.update(
            other_key=proof.other_key.hex(),
            other_index=proof.other_index,
            other_seq=proof.other_seq,
        )
    header = {
        "format": PROOF_FORMAT,
        "origin": saved.origin,
        "client": saved.client,
        "table_id": saved.table_id,
        "first_seq": saved.first_seq,
        "tree_size": saved.tree_size,
        "checkpoint": saved.checkpoint,
        "rounds": list(saved.rounds),
        "sessions": list(saved.sessions),
        "map": {
            "root_entry": item_json(saved.root),
            "siblings": [h.hex() for h in proof.siblings],
            **terminal,
        },
    }
    dump = json.dumps
    out.write(dump(header, separators=(",", ":"), ensure_ascii=False) + "\n")
    for kind, items in (("entry", saved.items), ("found", saved.extra)):
        for item in items:
            line = {"type": kind, **item_json(item)}
            out.write(dump(line, separators=(",", ":"), ensure_ascii=False) + "\n")


def _strings(obj: dict[str, Any], key: str, line: int) -> tuple[str, ...]:
    values = json_field(obj, key, list, line)
    if not all(type(v) is str for v in values):
        raise HistoryFormatError(line, key, "is not a list of strings")
    return tuple(values)


def _map_proof(obj: dict[str, Any], client: str, table_id: str, line: int) -> MapProof:
    siblings = tuple(
        hex_hash(h, line, "map.siblings") for h in json_field(obj, "siblings", list, line)
    )
    terminal = obj.get("terminal")
    if terminal == "present":
        head = MapHead(
            client,
            table_id,
            json_field(obj, "head_index", int, line),
            json_field(obj, "head_seq", int, line),
        )
        return MapProof(siblings, head=head)
    if terminal == "absent_other":
        return MapProof(
            siblings,
            other_key=hex_hash(obj.get("other_key"), line, "map.other_key"),
            other_index=json_field(obj, "other_index", int, line),
            other_seq=json_field(obj, "other_seq", int, line),
        )
    if terminal == "absent_empty":
        return MapProof(siblings)
    raise HistoryFormatError(
        line, "map.terminal", f"{terminal!r} is not one of {', '.join(_TERMINALS)}"
    )


def read_table_proof(lines: Iterable[str]) -> TableProofFile:
    """Reads an ``rng-audit-table-proof/v1`` file; syntax errors are
    :class:`HistoryFormatError` naming the line and field. Judges nothing."""
    header: dict[str, Any] | None = None
    items: list[ProvenItem] = []
    extra: list[ProvenItem] = []
    for number, obj in json_objects(lines, PROOF_FORMAT):
        if header is None:
            for key, kind in (
                ("origin", str), ("client", str), ("table_id", str), ("checkpoint", str),
                ("first_seq", int), ("tree_size", int), ("map", dict),
            ):  # fmt: skip
                json_field(obj, key, kind, number)
            json_field(obj["map"], "root_entry", dict, number)
            header = obj
            continue
        line_type = obj.get("type")
        if line_type not in ("entry", "found"):
            raise HistoryFormatError(number, "type", f"{line_type!r} is not 'entry' or 'found'")
        (items if line_type == "entry" else extra).append(proven_item(obj, number))
    if header is None:
        raise HistoryFormatError(1, "line", "the file is empty (no header line)")
    client, table_id = header["client"], header["table_id"]
    return TableProofFile(
        origin=header["origin"],
        client=client,
        table_id=table_id,
        first_seq=header["first_seq"],
        tree_size=header["tree_size"],
        checkpoint=header["checkpoint"],
        root=proven_item(header["map"]["root_entry"], 1),
        proof=_map_proof(header["map"], client, table_id, 1),
        items=tuple(items),
        rounds=_strings(header, "rounds", 1),
        sessions=_strings(header, "sessions", 1),
        extra=tuple(extra),
    )
