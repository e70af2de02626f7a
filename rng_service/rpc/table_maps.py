"""The committed map of table heads at a tree size, as the front end proves it to auditors.

Owns :class:`CommittedMaps` (docs/log-format.md, "Table map"; issue 40 item 5). For a tree of
``N`` entries the map of (client, table) chain heads is rebuilt from the store, and it is
served only when its root equals the root that entry ``N - 1`` carries in its signed
``table_map`` field (entry format 3), that entry's bytes being the tree's level-0 node of its
index (the leaf every checkpoint of the tree commits to). Otherwise nothing is proven from it:
a store whose map rows, entries or columns were edited is :class:`LookupIntegrityError`
(``check="map"``: DATA_LOSS at the RPC boundary, counted in
``rng_log_integrity_errors_total``). When entry ``N - 1`` is of format 1 or 2 (a log not yet
upgraded) there is no committed map at ``N``: :meth:`CommittedMaps.at` returns None.

How the map of ``N`` is built: from a cached map of a smaller size ``M`` by the heads of
entries ``[M, N)`` read by index (their signed bytes, not their columns) when there are few of
them, else from the store's heads as of ``N`` (``LogStorage.map_heads_at``: its map rows, and
for rows moved at or after ``N`` the chain's newest entry below ``N`` by the columns; one
query). Whatever is built is unsigned until its root is compared. Maps are cached per tree
size (the newest few), and shared between threads read-only (:meth:`TableMap.copy` is O(1)).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rng_service._proto.rng.v1 import log_pb2
from rng_service.log.entry import EntryFormatError, LogEntry
from rng_service.log.merkle import LEAF_PREFIX
from rng_service.log.table_map import MapHead, MapProof, TableMap
from rng_service.storage.base import EntryRecord, LogStorage
from rng_service.writer.columns import LookupIntegrityError, check_range

__all__ = [
    "MAP_CHECK",
    "CommittedMap",
    "CommittedMaps",
    "HeadsAt",
    "WireMapProof",
    "proof_from_proto",
    "proof_to_proto",
    "walk_chain",
]

MAP_CHECK = "map"
"""The ``check`` label of a map that does not reproduce the signed root."""

HeadsAt = Callable[[int], Iterable[MapHead]]
"""Chain heads as of tree size N, unsigned until the root is compared (default: the store's
``map_heads_at``)."""

_PAGE = 1000


class LeafReader(Protocol):
    """What is read of the service's Merkle tree: level-0 nodes by index, and inclusion
    proofs."""

    def leaf_hash(self, index: int) -> bytes: ...

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]: ...


@dataclass(frozen=True, slots=True)
class CommittedMap:
    """The map of table heads in the tree of ``size`` entries, its root proven equal to the
    signed ``table_map`` of entry ``size - 1`` (``root_record``, checked against its leaf)."""

    size: int
    root: bytes
    root_record: EntryRecord
    table_map: TableMap
    root_proof: tuple[bytes, ...]
    """The root entry's inclusion proof in the tree of ``size`` (computed once per size)."""


class CommittedMaps:
    """Builds, checks and caches the committed table map per tree size (module docstring).

    ``extend_limit``: the most entries read to extend a cached map of a smaller size; beyond
    it (or with no cached map below) the map is rebuilt from ``heads_at`` (default: the
    store's heads as of the size). ``keep``: how many sizes stay cached."""

    def __init__(
        self,
        storage: LogStorage,
        tree: LeafReader,
        *,
        heads_at: HeadsAt | None = None,
        keep: int = 4,
        extend_limit: int = 20_000,
    ) -> None:
        self._storage = storage
        self._tree = tree
        self._heads_at = heads_at if heads_at is not None else self._store_heads
        self._keep = keep
        self._extend_limit = extend_limit
        self._cache: OrderedDict[int, CommittedMap] = OrderedDict()
        self._lock = threading.Lock()
        self.builds = 0
        """Maps built (not served from the cache), for tests and benchmarks."""

    def at(self, size: int) -> CommittedMap | None:
        """The committed map at ``size``; None when the log has none there (``size`` 0, or
        entry ``size - 1`` of format 1 or 2). Raises :class:`LookupIntegrityError` when the
        map rebuilt from the store does not reproduce the signed root, or the root entry's
        bytes are not the tree's leaf."""
        if size <= 0:
            return None
        with self._lock:
            cached = self._cache.get(size)
            if cached is not None:
                self._cache.move_to_end(size)
                return cached
            record, root = self._root_entry(size)
            if root is None:
                return None
            table_map = self._build(size)
            self.builds += 1
            if table_map.root() != root:
                raise LookupIntegrityError(
                    f"the map of table heads rebuilt from the store at tree size {size} has "
                    f"root {table_map.root().hex()}, but entry {size - 1} signed "
                    f"{root.hex()}: the store's map rows, entries or lookup columns were "
                    "changed; no table's completeness is proven from it",
                    check=MAP_CHECK,
                    index=size - 1,
                )
            proof = tuple(self._tree.inclusion_proof(size - 1, size))
            committed = CommittedMap(size, root, record, table_map, proof)
            self._cache[size] = committed
            while len(self._cache) > self._keep:
                self._cache.popitem(last=False)
            return committed

    def _store_heads(self, size: int) -> list[MapHead]:
        return [
            MapHead(r.client_id, r.table_id, r.head_index, r.head_seq)
            for r in self._storage.map_heads_at(size)
        ]

    def _root_entry(self, size: int) -> tuple[EntryRecord, bytes | None]:
        """Entry ``size - 1`` (checked against the tree's leaf) and its signed map root."""
        index = size - 1
        records = self._storage.entries(index, size)
        check_range(records, index, size)
        (record,) = records
        leaf = hashlib.sha256(LEAF_PREFIX + record.data).digest()
        node = self._tree.leaf_hash(index)
        if leaf != node:
            raise LookupIntegrityError(
                f"entry {index}: its bytes hash to {leaf.hex()}, but the tree's leaf node "
                f"(level 0, index {index}), which the signed checkpoints commit to, is "
                f"{node.hex()}: the entry's bytes were changed in the store",
                check="node",
                index=index,
            )
        try:
            entry = LogEntry.decode(record.data)
        except EntryFormatError as e:
            raise LookupIntegrityError(
                f"entry {index}: its stored bytes are not a log entry ({e}); they hash to "
                "its leaf, so the log signed them: report this",
                check="entry",
                index=index,
            ) from e
        return record, entry.table_map

    def _build(self, size: int) -> TableMap:
        below = [s for s in self._cache if s < size]
        if below and size - max(below) <= self._extend_limit:
            start = max(below)
            table_map = self._cache[start].table_map.copy()
            self._apply(table_map, start, size)
            return table_map
        return TableMap(self._heads_at(size))

    def _apply(self, table_map: TableMap, start: int, end: int) -> None:
        """Sets the heads of entries ``[start, end)``, read by index, from their signed
        bytes (format 1 entries are in no chain)."""
        for page in range(start, end, _PAGE):
            stop = min(page + _PAGE, end)
            records = self._storage.entries(page, stop)
            check_range(records, page, stop)
            _set_heads(table_map, records)


def _set_heads(table_map: TableMap, records: Sequence[EntryRecord]) -> None:
    """Each entry's head from its bytes (JSON only: whatever is wrong with them shows as a
    root that differs from the signed one)."""
    for record in records:
        try:
            fields: Any = json.loads(record.data)
        except ValueError:
            fields = None
        if type(fields) is not dict:
            raise LookupIntegrityError(
                f"entry {record.index}: its stored bytes are not a log entry (not a JSON object)",
                check="entry",
                index=record.index,
            )
        client, table, seq = fields.get("client"), fields.get("table_id"), fields.get("table_seq")
        if type(seq) is int and type(client) is str and type(table) is str:
            table_map.set(client, table, record.index, seq)


def walk_chain(
    storage: LogStorage,
    committed: CommittedMap,
    client_id: str,
    table_id: str,
    *,
    first_seq: int,
    last_seq: int | None,
    limit: int,
) -> list[EntryRecord]:
    """The chain of (client, table) from ``first_seq`` to ``last_seq`` (None: its head) in
    the tree of ``committed``, read by index from the head the map proves, each entry's
    signed ``table_prev`` naming the next one to read: the store's lookup columns are not
    used. At most ``limit + 1`` rows, by seq. Raises :class:`LookupIntegrityError` when the
    walk meets bytes that are not the chain's (``leaf_hash``, ``chain``) or a missing row
    (``gap``)."""
    head = committed.table_map.head(client_id, table_id)
    out: list[EntryRecord] = []
    if head is None:
        return out
    stop = head.seq if last_seq is None else min(head.seq, last_seq)
    index: int | None = head.index
    seq = head.seq
    while seq >= first_seq and index is not None:
        records = storage.entries(index, index + 1)
        check_range(records, index, index + 1)
        record = records[0]
        if hashlib.sha256(LEAF_PREFIX + record.data).digest() != record.leaf_hash:
            raise LookupIntegrityError(
                f"entry {index}: its bytes do not hash to its stored leaf hash",
                check="leaf_hash",
                index=index,
            )
        try:
            fields: Any = json.loads(record.data)
        except ValueError:
            fields = None
        if type(fields) is not dict:
            raise LookupIntegrityError(
                f"entry {index}: its stored bytes are not a log entry", check="entry", index=index
            )
        if (fields.get("client"), fields.get("table_id"), fields.get("table_seq")) != (
            client_id,
            table_id,
            seq,
        ):
            raise LookupIntegrityError(
                f"entry {index}, on the chain of table {table_id!r} of client {client_id!r} "
                f"walked back from its committed head (entry {head.index}, seq {head.seq}), "
                f"is not its seq {seq}",
                check="chain",
                index=index,
            )
        if seq <= stop:
            out.append(record)
        prev = fields.get("table_prev")
        index, seq = (prev if type(prev) is int else None), seq - 1
    if seq >= first_seq:
        raise LookupIntegrityError(
            f"the chain of table {table_id!r} of client {client_id!r} walked back from its "
            f"committed head ends before seq {first_seq}",
            check="chain",
            index=head.index,
        )
    out.reverse()
    return out[: limit + 1]


# -- proofs on the wire (rng.v1.TableMapProof) ----------------------------------------------


def proof_to_proto(committed: CommittedMap, client_id: str, table_id: str) -> log_pb2.TableMapProof:
    """The proof of (client, table)'s head in ``committed``, with its root entry and that
    entry's inclusion proof in the tree of ``committed.size``."""
    record = committed.root_record
    proof = committed.table_map.prove(client_id, table_id)
    message = log_pb2.TableMapProof(
        root_entry=log_pb2.LogEntry(
            index=record.index,
            entry=record.data,
            leaf_hash=record.leaf_hash,
            commit_size=record.commit_size,
            inclusion_proof=committed.root_proof,
        ),
        siblings=proof.siblings,
    )
    if proof.head is not None:
        message.terminal = log_pb2.TableMapProof.TERMINAL_PRESENT
        message.head_index, message.head_seq = proof.head.index, proof.head.seq
    elif proof.other_key is not None:
        message.terminal = log_pb2.TableMapProof.TERMINAL_ABSENT_OTHER
        message.other_key = proof.other_key
        message.other_index = proof.other_index or 0
        message.other_seq = proof.other_seq or 0
    else:
        message.terminal = log_pb2.TableMapProof.TERMINAL_ABSENT_EMPTY
    return message


@dataclass(frozen=True, slots=True)
class WireMapProof:
    """A ``TableMapProof`` as received (nothing checked): the root entry as (index, bytes,
    leaf hash, inclusion proof) and the map proof for (``client_id``, ``table_id``)."""

    root_index: int
    root_data: bytes
    root_leaf_hash: bytes
    root_proof: tuple[bytes, ...]
    proof: MapProof


def proof_from_proto(
    message: log_pb2.TableMapProof, client_id: str, table_id: str
) -> WireMapProof | None:
    """The received proof about (client, table); None for an unknown terminal (the caller
    then has no proof, and says so)."""
    siblings = tuple(bytes(s) for s in message.siblings)
    terminal = message.terminal
    if terminal == log_pb2.TableMapProof.TERMINAL_PRESENT:
        proof = MapProof(
            siblings,
            head=MapHead(client_id, table_id, int(message.head_index), int(message.head_seq)),
        )
    elif terminal == log_pb2.TableMapProof.TERMINAL_ABSENT_OTHER:
        proof = MapProof(
            siblings,
            other_key=bytes(message.other_key),
            other_index=int(message.other_index),
            other_seq=int(message.other_seq),
        )
    elif terminal == log_pb2.TableMapProof.TERMINAL_ABSENT_EMPTY:
        proof = MapProof(siblings)
    else:
        return None
    root = message.root_entry
    return WireMapProof(
        int(root.index),
        bytes(root.entry),
        bytes(root.leaf_hash),
        tuple(bytes(h) for h in root.inclusion_proof),
        proof,
    )
