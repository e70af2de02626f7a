"""The log writer's committer: a decided group made durable, and the signed checkpoint.

Owns the storage batch of a group (its records, the new RFC 6962 nodes from
:mod:`rng_service.writer.integrator`, and the published checkpoint when the publication
interval has passed), the tree's adoption of a stored group, and the C2SP tlog-checkpoint
signed note (:mod:`rng_service.log.note`): Ed25519 signatures are deterministic, so the same
tree size always gives the same note, with the active key and any co-signing key of a key
rotation's overlap window. It never signs a checkpoint the published one does not extend
(RFC 9162 section 2.1.4).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from rng_service.clock import Clock
from rng_service.errors import IntegrityError
from rng_service.log.note import Checkpoint, NoteSigner, parse_note, sign_note
from rng_service.storage.base import AppendBatch, CheckpointRecord, LogStorage, MapRow
from rng_service.writer.integrator import PendingAppend, inclusion_proofs
from rng_service.writer.sequencer import Plan
from rng_service.writer.tree import MerkleTree, StoreDiverged
from rng_service.writer.values import (
    AppendResult,
    new_receipt,
    new_result,
    record_of,
    replayed,
)

__all__ = ["Committer", "settle_new"]


class Committer:
    """Seals decided groups into storage batches, adopts stored ones into the tree, and signs
    and publishes checkpoints."""

    def __init__(
        self,
        *,
        storage: LogStorage,
        tree: MerkleTree,
        signers: Sequence[NoteSigner],
        origin: str,
        clock: Clock,
        publish_interval_seconds: float,
    ) -> None:
        self._storage = storage
        self._tree = tree
        # The active key first, then keys co-signing during a rotation overlap (C2SP signed
        # notes carry several signatures; verifiers need to know only one of the keys).
        self._signers = list(signers)
        self._origin = origin
        self._clock = clock
        self._publish_interval = publish_interval_seconds
        self._last_publish = -float("inf")
        self._note_cache: tuple[int, str] | None = None
        self._sign_lock = threading.Lock()

    def sync(self) -> int:
        """Catches the tree up with the store, which other service replicas may share (their
        appends are in the store, not in this process's tree); returns the tree size."""
        self._tree.advance(self._storage.tree_size())
        return self._tree.size

    def checkpoint_note(self, size: int) -> str:
        """The signed checkpoint of the tree at ``size`` (deterministic for a given key)."""
        cached = self._note_cache
        if cached is not None and cached[0] == size:
            return cached[1]
        root = self._tree.root(size)
        body = Checkpoint(origin=self._origin, size=size, root_hash=root).body()
        with self._sign_lock:
            note = sign_note(body, self._signers).decode("utf-8")
        self._note_cache = (size, note)
        return note

    def check_extends_published(self) -> CheckpointRecord | None:
        """The latest published checkpoint, after checking that the tree extends it.

        The log must never sign a checkpoint inconsistent with one it signed before: the tree
        (restored from stored nodes) must reproduce the published root at the published size
        (RFC 9162 section 2.1.4: then every later root is consistent with it). Costs O(log n)
        node reads; raises :class:`IntegrityError` if the store no longer matches.
        """
        latest = self._storage.latest_checkpoint()
        if latest is None:
            return None
        try:
            published = Checkpoint.parse(parse_note(latest.note).text)
        except IntegrityError as e:
            raise IntegrityError(f"the latest published checkpoint is unreadable: {e}") from e
        size = self._tree.size
        if published.size > size:
            # Another writer sharing the store (a replica) may have appended and published
            # since this tree was loaded or last synced. The store's size, read after the
            # checkpoint, covers it unless entries were lost.
            size = self.sync()
        if published.size > size:
            raise StoreDiverged(
                f"published checkpoint of size {published.size} is beyond the stored tree of "
                f"size {size}: entries were lost; refusing to sign a fork"
            )
        if self._tree.root(published.size) != published.root_hash:
            raise StoreDiverged(
                f"the stored tree at size {published.size} does not match the published "
                f"checkpoint's root: the store was altered; refusing to sign a fork"
            )
        return latest

    def publish_checkpoint(self) -> CheckpointRecord:
        """Stores the checkpoint of the current tree as a published checkpoint (on demand).

        Returns the latest published checkpoint instead if it is already as recent (the writer
        may publish concurrently); checks first that the tree extends it.
        """
        size = self.sync()
        latest = self.check_extends_published()
        if latest is not None and latest.size >= size:
            return latest
        record = CheckpointRecord(
            size=size,
            timestamp_ns=self._clock.now_ns(),
            note=self.checkpoint_note(size).encode("utf-8"),
        )
        self._storage.add_checkpoint(record)
        self._last_publish = self._clock.monotonic()
        return record

    def seal(self, plan: Plan) -> None:
        """The group's storage batch: its records, the new Merkle nodes, the table map rows
        its entries move, and the signed checkpoint when the publication interval has passed.
        Nothing to seal without new entries."""
        draft = plan.draft
        if draft is None or not plan.new:
            return
        plan.records = [
            record_of(p.request, entry, data, draft.next_index)
            for (p, entry), data in zip(plan.new, draft.encoded, strict=True)
        ]
        pending = self._tree.prepare([r.leaf_hash for r in plan.records])
        checkpoint: CheckpointRecord | None = None
        if self._clock.monotonic() - self._last_publish >= self._publish_interval:
            body = Checkpoint(origin=self._origin, size=pending.size, root_hash=pending.root).body()
            with self._sign_lock:
                note = sign_note(body, self._signers).decode("utf-8")
            checkpoint = CheckpointRecord(
                size=pending.size, timestamp_ns=self._clock.now_ns(), note=note.encode("utf-8")
            )
        plan.pending = pending
        heads = [MapRow(c, t, index, seq) for (c, t), (index, seq) in draft.moved.items()]
        plan.batch = AppendBatch(plan.records, pending.nodes, checkpoint, heads)

    def commit_tree(
        self, plan: Plan, pending: PendingAppend
    ) -> tuple[int, str, list[list[bytes]], bool]:
        """Adds the stored group to the tree: its size, the signed note of that size (the
        one stored with the group when it was published), the entries' inclusion proofs, and
        whether the group published its checkpoint."""
        size = pending.size
        self._tree.commit(pending)
        checkpoint = plan.batch.checkpoint if plan.batch is not None else None
        note_text = (
            checkpoint.note.decode("utf-8")
            if checkpoint is not None
            else self.checkpoint_note(size)
        )
        proofs = inclusion_proofs(pending, [rec.index for rec in plan.records])
        if checkpoint is not None:
            self._last_publish = self._clock.monotonic()
            self._note_cache = (size, note_text)
        return size, note_text, proofs, checkpoint is not None


def settle_new(plan: Plan, size: int, note_text: str, proofs: list[list[bytes]]) -> None:
    """Each new entry's caller gets its entry and receipt; a caller that sent the same
    request id later in the group gets that answer, marked replayed."""
    results: list[AppendResult] = []
    for (p, entry), rec, proof in zip(plan.new, plan.records, proofs, strict=True):
        receipt = new_receipt(
            rec.index, rec.data, rec.leaf_hash, tuple(proof), size, note_text, False
        )
        result = new_result(entry, receipt)
        results.append(result)
        p.set_result(result)
    for p, slot in plan.followers:
        first = results[slot]
        p.set_result(AppendResult(entry=first.entry, receipt=replayed(first.receipt)))
