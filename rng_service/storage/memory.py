"""In-memory :class:`~rng_service.storage.base.LogStorage`: the fake used by tests and lab runs.

Owns nothing durable: everything lives in this process and is lost on exit. It follows the same
contract as the SQLite driver (the storage conformance suite runs against both), is thread-safe
behind one lock, and makes ``append`` atomic by validating the whole batch before changing
anything. ``sequence`` holds a separate writers' lock while its ``build`` runs, so that
``build`` can read the store (one process only: this store is not shared).
``fail_next_append`` lets tests simulate a failed commit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence

from rng_service.errors import StorageUnavailable
from rng_service.storage.base import (
    AppendBatch,
    CheckpointRecord,
    CosignatureRecord,
    DuplicateRequest,
    EntryRecord,
    GroupState,
    MapRow,
    NodeRecord,
    SequenceConflict,
    SlotRecord,
    TableHead,
    check_append_batch,
    check_entry_range,
    check_limit,
    check_meta_key,
    newest_cosignatures,
)

__all__ = ["MemoryStorage"]


class MemoryStorage:
    """A thread-safe in-memory log store."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()  # held by sequence() while build() runs
        self._entries: list[EntryRecord] = []
        self._by_request: dict[tuple[str, str], int] = {}
        self._by_leaf: dict[bytes, int] = {}
        self._by_slot: dict[tuple[str, str, str, str], int] = {}
        self._by_round: dict[tuple[str, str, str], list[int]] = {}
        self._heads: dict[tuple[str, str], TableHead] = {}
        self.map: dict[tuple[str, str], MapRow] = {}
        """The table map's rows (public: tests edit them as an attacker edits a database)."""
        self._seqs: set[tuple[str, str, int]] = set()
        self._nodes: dict[tuple[int, int], bytes] = {}
        self._checkpoints: list[CheckpointRecord] = []
        self._meta: dict[str, bytes] = {}
        self._fail_next: str | None = None
        self._closed = False
        self._cosignatures: list[CosignatureRecord] = []

    def __repr__(self) -> str:
        return f"MemoryStorage(size={len(self._entries)})"

    def fail_next_append(self, reason: str = "simulated commit failure") -> None:
        """Makes the next :meth:`append` raise StorageUnavailable and store nothing."""
        with self._lock:
            self._fail_next = reason

    def _check_open(self) -> None:
        if self._closed:
            raise StorageUnavailable("in-memory log store is closed")

    def tree_size(self) -> int:
        with self._lock:
            self._check_open()
            return len(self._entries)

    def sequence(self, build: Callable[[int], AppendBatch | None]) -> None:
        with self._write_lock:
            batch = build(self.tree_size())
            if batch is not None:
                self._store(batch.entries, batch.nodes, batch.checkpoint, batch.heads)

    def append(
        self,
        entries: Sequence[EntryRecord],
        nodes: Sequence[NodeRecord],
        checkpoint: CheckpointRecord | None = None,
    ) -> None:
        with self._write_lock:
            self._store(entries, nodes, checkpoint)

    def _store(
        self,
        entries: Sequence[EntryRecord],
        nodes: Sequence[NodeRecord],
        checkpoint: CheckpointRecord | None,
        heads: Sequence[MapRow] = (),
    ) -> None:
        with self._lock:
            self._check_open()
            check_append_batch(len(self._entries), entries, heads)
            for entry in entries:
                if (entry.client_id, entry.request_id) in self._by_request:
                    raise DuplicateRequest(entry.client_id, entry.request_id)
            for entry in entries:
                slot = (entry.client_id, entry.table_id, entry.round_id, entry.slot or "")
                if slot in self._by_slot:
                    raise SequenceConflict(f"entry {entry.index}: slot {slot} is already stored")
                if (entry.client_id, entry.table_id, entry.table_seq) in self._seqs:
                    raise SequenceConflict(
                        f"entry {entry.index}: table_seq {entry.table_seq} of "
                        f"{(entry.client_id, entry.table_id)} is already stored"
                    )
            coords: set[tuple[int, int]] = set()
            for node in nodes:
                coord = (node.level, node.index)
                if coord in self._nodes or coord in coords:
                    raise SequenceConflict(f"Merkle node {coord} is already stored")
                coords.add(coord)
            if self._fail_next is not None:
                reason, self._fail_next = self._fail_next, None
                raise StorageUnavailable(f"log append failed: {reason}")
            for entry in entries:
                self._entries.append(entry)
                self._by_request[(entry.client_id, entry.request_id)] = entry.index
                self._by_leaf.setdefault(entry.leaf_hash, entry.index)
                if entry.slot is None or entry.table_seq is None:  # check_append_batch did
                    raise SequenceConflict(f"entry {entry.index} has no slot or table_seq")
                self._by_slot[(entry.client_id, entry.table_id, entry.round_id, entry.slot)] = (
                    entry.index
                )
                self._by_round.setdefault(
                    (entry.client_id, entry.table_id, entry.round_id), []
                ).append(entry.index)
                self._seqs.add((entry.client_id, entry.table_id, entry.table_seq))
                head = self._heads.get((entry.client_id, entry.table_id))
                if head is None or entry.table_seq > head.table_seq:
                    self._heads[(entry.client_id, entry.table_id)] = TableHead(
                        index=entry.index, table_seq=entry.table_seq
                    )
            for node in nodes:
                self._nodes[(node.level, node.index)] = node.hash
            if checkpoint is not None:
                self._checkpoints.append(checkpoint)
            for row in heads:
                self.map[(row.client_id, row.table_id)] = row

    def entries(self, start: int, end: int) -> list[EntryRecord]:
        check_entry_range(start, end)
        with self._lock:
            self._check_open()
            return self._entries[start:end]

    def entries_by_requests(
        self, client_id: str, request_ids: Sequence[str]
    ) -> dict[str, EntryRecord]:
        with self._lock:
            self._check_open()
            found = {}
            for request_id in request_ids:
                index = self._by_request.get((client_id, request_id))
                if index is not None:
                    found[request_id] = self._entries[index]
            return found

    def entry_by_request(self, client_id: str, request_id: str) -> EntryRecord | None:
        with self._lock:
            self._check_open()
            index = self._by_request.get((client_id, request_id))
            return None if index is None else self._entries[index]

    def round_slots(self, rounds: Sequence[tuple[str, str, str]]) -> list[SlotRecord]:
        with self._lock:
            self._check_open()
            found = {
                i: (c, t, r)
                for (c, t, r) in dict.fromkeys(rounds)
                for i in self._by_round.get((c, t, r), ())
            }
            return [
                SlotRecord(*found[i], index=i, slot=self._entries[i].slot) for i in sorted(found)
            ]

    def table_heads(self, tables: Sequence[tuple[str, str]]) -> dict[tuple[str, str], TableHead]:
        with self._lock:
            self._check_open()
            return {t: self._heads[t] for t in tables if t in self._heads}

    def group_state(
        self,
        requests: Sequence[tuple[str, str]],
        rounds: Sequence[tuple[str, str, str]],
        tables: Sequence[tuple[str, str]],
    ) -> GroupState:
        with self._lock:
            self._check_open()
            logged = {
                key: self._entries[i]
                for key in requests
                if (i := self._by_request.get(key)) is not None
            }
        return GroupState(logged, self.round_slots(rounds), self.table_heads(tables))

    def entry_by_leaf_hash(self, leaf_hash: bytes) -> EntryRecord | None:
        with self._lock:
            self._check_open()
            index = self._by_leaf.get(leaf_hash)
            return None if index is None else self._entries[index]

    def find_entries(
        self,
        *,
        client_id: str | None = None,
        table_id: str | None = None,
        round_id: str | None = None,
        session_id: str | None = None,
        request_id: str | None = None,
        since_ns: int | None = None,
        until_ns: int | None = None,
        limit: int = 1000,
    ) -> list[EntryRecord]:
        check_limit(limit)
        found: list[EntryRecord] = []
        with self._lock:
            self._check_open()
            for e in self._entries:
                if (
                    (client_id is None or e.client_id == client_id)
                    and (table_id is None or e.table_id == table_id)
                    and (round_id is None or e.round_id == round_id)
                    and (session_id is None or e.session_id == session_id)
                    and (request_id is None or e.request_id == request_id)
                    and (since_ns is None or e.timestamp_ns >= since_ns)
                    and (until_ns is None or e.timestamp_ns < until_ns)
                ):
                    found.append(e)
                    if len(found) >= limit:
                        break
        return found

    def table_history(
        self,
        client_id: str,
        table_id: str,
        *,
        first_seq: int = 1,
        last_seq: int | None = None,
        limit: int = 1000,
    ) -> list[EntryRecord]:
        check_limit(limit)
        with self._lock:
            self._check_open()
            found = [
                e
                for e in self._entries
                if e.client_id == client_id
                and e.table_id == table_id
                and e.table_seq is not None
                and e.table_seq >= first_seq
                and (last_seq is None or e.table_seq <= last_seq)
            ]
        found.sort(key=lambda e: (e.table_seq, e.index))
        return found[:limit]

    def nodes(self, coords: Iterable[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        with self._lock:
            self._check_open()
            return {c: self._nodes[c] for c in coords if c in self._nodes}

    def map_rows(self) -> list[MapRow]:
        with self._lock:
            self._check_open()
            return [self.map[k] for k in sorted(self.map)]

    def map_heads_at(self, size: int) -> list[MapRow]:
        with self._lock:
            self._check_open()
            found: list[MapRow] = []
            for key in sorted(self.map):
                row = self.map[key]
                if row.head_index < size:
                    found.append(row)
                    continue
                newest: EntryRecord | None = None  # by the columns, as the SQL drivers do
                for e in self._entries[: max(0, size)]:
                    if (
                        (e.client_id, e.table_id) == key
                        and e.table_seq is not None
                        and (newest is None or e.table_seq > (newest.table_seq or 0))
                    ):
                        newest = e
                if newest is not None and newest.table_seq is not None:
                    found.append(MapRow(key[0], key[1], newest.index, newest.table_seq))
            return found

    def add_checkpoint(self, checkpoint: CheckpointRecord) -> None:
        with self._lock:
            self._check_open()
            self._checkpoints.append(checkpoint)

    def _ordered_checkpoints(self) -> list[CheckpointRecord]:
        order = sorted(
            range(len(self._checkpoints)),
            key=lambda i: (self._checkpoints[i].size, self._checkpoints[i].timestamp_ns, i),
        )
        return [self._checkpoints[i] for i in order]

    def latest_checkpoint(self) -> CheckpointRecord | None:
        with self._lock:
            self._check_open()
            ordered = self._ordered_checkpoints()
            return ordered[-1] if ordered else None

    def checkpoints(
        self,
        *,
        min_size: int | None = None,
        max_size: int | None = None,
        since_ns: int | None = None,
        until_ns: int | None = None,
    ) -> list[CheckpointRecord]:
        with self._lock:
            self._check_open()
            return [
                c
                for c in self._ordered_checkpoints()
                if (min_size is None or c.size >= min_size)
                and (max_size is None or c.size <= max_size)
                and (since_ns is None or c.timestamp_ns >= since_ns)
                and (until_ns is None or c.timestamp_ns < until_ns)
            ]

    def get_meta(self, key: str) -> bytes | None:
        with self._lock:
            self._check_open()
            return self._meta.get(key)

    def set_meta(self, key: str, value: bytes) -> None:
        check_meta_key(key)
        with self._lock:
            self._check_open()
            self._meta[key] = bytes(value)

    def add_cosignatures(self, records: Sequence[CosignatureRecord]) -> None:
        with self._lock:
            self._check_open()
            self._cosignatures = newest_cosignatures([*self._cosignatures, *records])

    def cosignatures(
        self, *, min_size: int | None = None, max_size: int | None = None
    ) -> list[CosignatureRecord]:
        with self._lock:
            self._check_open()
            found = [
                c
                for c in self._cosignatures
                if (min_size is None or c.size >= min_size)
                and (max_size is None or c.size <= max_size)
            ]
        return sorted(found, key=lambda c: (c.size, c.witness, c.key_id, c.body_sha256))

    def latest_cosignatures(self) -> list[CosignatureRecord]:
        with self._lock:
            self._check_open()
            best: dict[tuple[str, int], CosignatureRecord] = {}
            for c in self._cosignatures:
                old = best.get((c.witness, c.key_id))
                if old is None or (c.size, c.timestamp) > (old.size, old.timestamp):
                    best[(c.witness, c.key_id)] = c
        return [best[k] for k in sorted(best)]

    def close(self) -> None:
        with self._lock:
            self._closed = True
