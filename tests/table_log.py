"""A small format-3 log built in memory for the table map's proof tests: entries with their
table chains and the map root each carries, computed here by the reference ``map_root`` of
``rng_service.log.table_map`` (from the definition, not the incremental map the service uses),
the RFC 6962 tree by ``rng_service.log.merkle``'s reference functions, and a checkpoint head
(unsigned: ``prove_entries`` reads the size and root of a head whose signature was checked)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.audit.history import ProvenItem
from rng_service.audit.results import VerifiedHead
from rng_service.log.entry import GeneratorRef, LogEntry
from rng_service.log.merkle import inclusion_proof, leaf_hash, root_from_leaf_hashes
from rng_service.log.note import Checkpoint, Ed25519NoteSigner, sign_note
from rng_service.log.table_map import MapHead, map_root
from rng_service.storage.base import AppendBatch, CheckpointRecord, EntryRecord, MapRow
from rng_service.storage.sqlite import SqliteStorage
from rng_service.writer.tree import MerkleTree

ORIGIN = "example.invalid/table-log"


@dataclass
class TableLog:
    entries: list[LogEntry] = field(default_factory=list)
    data: list[bytes] = field(default_factory=list)
    heads: dict[tuple[str, str], MapHead] = field(default_factory=dict)

    def add(
        self,
        client: str,
        table: str,
        round_id: str,
        *,
        version: int = 3,
        slot: str = "spin",
        seq: int | None = None,
        prev: int | None = -1,
    ) -> LogEntry:
        """Appends an entry of (client, table)'s chain; ``seq``/``prev`` override the chain
        (a fork); the map root is the reference root of every head after this entry."""
        index = len(self.entries)
        head = self.heads.get((client, table))
        table_seq = seq if seq is not None else (1 if head is None else head.seq + 1)
        table_prev = prev if prev != -1 else (None if head is None else head.index)
        self.heads[(client, table)] = MapHead(client, table, index, table_seq)
        root = map_root(self.heads.values()) if version >= 3 else None
        entry = LogEntry(
            index=index, timestamp_ns=1_700_000_000_000_000_000 + index * 1000,
            kind="roulette_spin", params={"wheel": "double_zero"}, outcome={"n": index},
            client=client, table_id=table, round_id=round_id, session_id="",
            request_id=f"q{index}", generator=GeneratorRef("g", 1, False), slot=slot,
            table_seq=table_seq, table_prev=table_prev, table_map=root, version=version,
        )  # fmt: skip
        self.entries.append(entry)
        self.data.append(entry.encode())
        return entry

    def leaves(self, size: int | None = None) -> list[bytes]:
        return [leaf_hash(d) for d in self.data[: size or len(self.data)]]

    def head(self, size: int | None = None) -> VerifiedHead:
        size = size or len(self.data)
        checkpoint = Checkpoint(ORIGIN, size, root_from_leaf_hashes(self.leaves(size)))
        return VerifiedHead("the test checkpoint", checkpoint, ("test-key",))

    def item(self, index: int, size: int | None = None) -> ProvenItem:
        leaves = self.leaves(size)
        return ProvenItem(index, self.data[index], leaves[index],
                          tuple(inclusion_proof(leaves, index)))  # fmt: skip

    def records(self) -> list[EntryRecord]:
        return [
            EntryRecord(
                index=e.index,
                data=d,
                leaf_hash=leaf_hash(d),
                client_id=e.client,
                request_id=e.request_id,
                request_digest=b"\0" * 32,
                kind=e.kind,
                table_id=e.table_id,
                round_id=e.round_id,
                session_id=e.session_id,
                timestamp_ns=e.timestamp_ns,
                commit_size=e.index + 1,
                slot=e.slot,
                table_seq=e.table_seq,
            )
            for e, d in zip(self.entries, self.data, strict=True)
        ]


SIGNER = Ed25519NoteSigner(ORIGIN, Ed25519PrivateKey.from_private_bytes(b"\x40" * 32))


def to_sqlite(log: TableLog, path: Path, *, group: int = 4) -> dict[int, str]:
    """Stores ``log`` in a new SQLite store as the writer does (entries, nodes, the map's rows,
    a signed checkpoint per group of ``group``); returns the signed notes by tree size."""
    store = SqliteStorage(path)
    tree = MerkleTree(size=0, get_nodes=store.nodes, cache_min_level=64, recent_nodes=0)
    notes: dict[int, str] = {}
    records = log.records()
    try:
        for start in range(0, len(records), group):
            batch = records[start : start + group]
            end = start + len(batch)
            batch = [dataclasses.replace(r, commit_size=end) for r in batch]
            heads: dict[tuple[str, str], MapRow] = {}
            for r in batch:
                if r.table_seq is not None:
                    heads[(r.client_id, r.table_id)] = MapRow(r.client_id, r.table_id, r.index,
                                                              r.table_seq)  # fmt: skip
            pending = tree.prepare([r.leaf_hash for r in batch])
            note = sign_note(Checkpoint(ORIGIN, end, pending.root).body(), [SIGNER])
            notes[end] = note.decode()
            appended = AppendBatch(batch, pending.nodes, CheckpointRecord(end, end, note),
                                   tuple(heads.values()))  # fmt: skip
            store.sequence(lambda _size, b=appended: b)  # type: ignore[misc]
            tree.commit(pending)
    finally:
        store.close()
    return notes
