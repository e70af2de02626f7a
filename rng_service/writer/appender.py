"""The log writer, wired: draws outcomes, makes them durable in groups, signs, issues receipts.

One writer thread owns the log's write path. Callers (the gRPC servicers, on the event loop)
submit validated :class:`DrawRequest` objects and get a future. The writer takes every request
waiting (:mod:`~rng_service.writer.queue`) and, for the whole group, in one pass:

1. decides it against the stored log (:mod:`~rng_service.writer.sequencer`): ONE query for
   the group's logged request ids, its rounds' filled slots and its tables' chain heads, each
   row it relies on checked against its signed bytes (DATA_LOSS if edited); idempotency (a
   request id already logged, or earlier in the group, is answered with that entry); the round
   rules (:mod:`rng_service.log.rounds`); then draws each new outcome and encodes its entry
   (:mod:`rng_service.log.entry`, format 3, each with the table map's root after it:
   :mod:`~rng_service.writer.heads`);
2. appends the entries, the new RFC 6962 nodes (:mod:`~rng_service.writer.integrator`) and the
   table map rows the entries move in ONE durable storage transaction, with the group's C2SP
   checkpoint when the publication interval has passed (:mod:`~rng_service.writer.committer`);
3. signs one checkpoint for the group and computes each entry's inclusion proof;
4. only then resolves the futures. Nothing is returned that is not durable: if the transaction
   fails, every new outcome of the group fails with StorageUnavailable and is never shown.

Steps 1 and 2 run under the store's writers' lock (``LogStorage.sequence``), so the round rules
and the chains hold between service replicas sharing one store. A lost or diverged store, and
a commit whose outcome is unknown, are :mod:`~rng_service.writer.recovery`'s. Signing and
committing on this thread rather than on the event loop keeps the loop free and lets groups
form while a commit is in flight (docs/performance.md). This module only wires those jobs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Sequence

from rng_service.clock import Clock
from rng_service.errors import RngServiceError, StorageUnavailable, Unavailable
from rng_service.log.entry import LogEntry
from rng_service.log.note import NoteSigner
from rng_service.log.receipt import Receipt
from rng_service.storage.base import (
    AppendBatch,
    CheckpointRecord,
    EntryRecord,
    LogStorage,
    StoreConnectionLost,
)
from rng_service.writer.columns import LookupIntegrityError, check_nodes, check_record
from rng_service.writer.committer import Committer, settle_new
from rng_service.writer.heads import TableMapMismatch
from rng_service.writer.queue import STOP, Pending, Waiter, WriterQueue, gather_group, wake_waiters
from rng_service.writer.recovery import (
    DIVERGED_RETRY_SECONDS,
    RECONNECT_MAX_DELAY_SECONDS,
    RESOLUTIONS,
    Recovery,
)
from rng_service.writer.sequencer import Plan, Sequencer, edited
from rng_service.writer.tree import MerkleTree, StoreDiverged
from rng_service.writer.values import (
    AppendObserver,
    AppendResult,
    DrawFn,
    DrawRequest,
    GeneratorLike,
    LinkFn,
    draw_request,
)

__all__ = [
    "DIVERGED_RETRY_SECONDS",
    "RECONNECT_MAX_DELAY_SECONDS",
    "RESOLUTIONS",
    "AppendObserver",
    "AppendResult",
    "Appender",
    "DrawFn",
    "DrawRequest",
    "GeneratorLike",
    "LinkFn",
    "Waiter",
    "draw_request",
    "gather_group",
]

_log = logging.getLogger("rng_service.log.appender")  # the JSON log's logger field, unchanged


class Appender:
    """Owns the writer thread. Construct, ``start()``, ``submit()`` from any thread, ``stop()``."""

    def __init__(
        self,
        *,
        storage: LogStorage,
        tree: MerkleTree,
        generator: GeneratorLike,
        signer: NoteSigner,
        cosigners: Sequence[NoteSigner] = (),
        origin: str,
        clock: Clock,
        publish_interval_seconds: float = 10.0,
        max_group_size: int = 512,
        max_queue: int = 10_000,
        group_wait_seconds: float = 0.002,
        group_lull_seconds: float = 0.0003,
        observer: AppendObserver | None = None,
    ) -> None:
        self._storage = storage
        self._tree = tree
        self._observer = observer
        self._max_group = max_group_size
        self._group_wait = group_wait_seconds
        self._group_lull = group_lull_seconds
        self._last_group = 0
        self._thread: threading.Thread | None = None
        self._queue = WriterQueue(max_queue)
        self._sequencer = Sequencer(
            storage=storage, tree=tree, generator=generator, clock=clock, observer=observer
        )
        self._committer = Committer(
            storage=storage,
            tree=tree,
            signers=[signer, *cosigners],
            origin=origin,
            clock=clock,
            publish_interval_seconds=publish_interval_seconds,
        )
        self._recovery = Recovery(
            storage=storage,
            tree=tree,
            committer=self._committer,
            queue=self._queue,
            settler=self,
            observer=observer,
        )

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("appender already started")
        self._committer.check_extends_published()
        self._load_map()
        self._queue.stopped = False
        self._queue.wake.clear()
        self._thread = threading.Thread(target=self._run, name="log-writer", daemon=True)
        self._thread.start()

    def _load_map(self) -> None:
        """The table map from the store's rows, checked against the root signed in the newest
        entry: IntegrityError (a refused start) if they differ. A store that is not at this
        tree's size (another replica appending, or entries lost) is left to the first group,
        which loads the map under the writers' lock (or refuses the lost entries)."""
        if self._storage.tree_size() != self._tree.size:
            return
        try:
            self._sequencer.load_map()
        except TableMapMismatch:
            if self._storage.tree_size() == self._tree.size:
                raise
            self._sequencer.map = None  # a replica appended meanwhile: the first group loads it

    def stop(self, *, publish: bool = True) -> None:
        """Finishes every request already submitted, then publishes a final checkpoint."""
        if self._thread is None:
            return
        self._queue.stopped = True
        self._queue.wake.set()
        self._queue.items.put(STOP)
        self._thread.join()
        self._thread = None
        if publish:
            try:
                self.publish_checkpoint()
            except RngServiceError as e:
                _log.error("final checkpoint not published: %s", e)

    @property
    def tree_size(self) -> int:
        return self._tree.size

    @property
    def recovering(self) -> str:
        """Why the writer takes no groups now (recovering from a lost or diverged store), or
        "" while it takes them."""
        return self._queue.down

    def sync(self) -> int:
        """Catches the tree up with the store, which other service replicas may share (their
        appends are in the store, not in this process's tree); returns the tree size."""
        return self._committer.sync()

    # --- submission ----------------------------------------------------------------------

    def submit(self, request: DrawRequest) -> concurrent.futures.Future[AppendResult]:
        """Queues a request (before ``start()`` too); its future resolves once it is durable."""
        future: concurrent.futures.Future[AppendResult] = concurrent.futures.Future()
        future.set_running_or_notify_cancel()  # an accepted request cannot be cancelled
        self._queue.put(Pending(request, None, future))
        return future

    def submit_async(self, request: DrawRequest) -> asyncio.Future[AppendResult]:
        """:meth:`submit` for a caller on an event loop: returns that loop's future.

        The writer settles all of a group's futures on one loop with one
        ``call_soon_threadsafe`` (one wake-up of the loop per group, not one per request).
        Cancelling the returned future does not withdraw the request: it is logged anyway.
        """
        waiter: asyncio.Future[AppendResult] = asyncio.get_running_loop().create_future()
        self._queue.put(Pending(request, waiter, None))
        return waiter

    def submit_waiter(self, request: DrawRequest, waiter: Waiter) -> None:
        """:meth:`submit_async` with the caller's own ``waiter`` (settled on its event loop,
        once, as ``submit_async``'s future is): the log writer process's channel answers
        through one without an asyncio future and callback per request
        (``rng_service.process.ipc``)."""
        self._queue.put(Pending(request, waiter, None))

    # --- checkpoints ---------------------------------------------------------------------

    def checkpoint_note(self, size: int) -> str:
        """The signed checkpoint of the tree at ``size`` (deterministic for a given key)."""
        return self._committer.checkpoint_note(size)

    def publish_checkpoint(self) -> CheckpointRecord:
        """Stores the checkpoint of the current tree as a published checkpoint (on demand).

        Returns the latest published checkpoint instead if it is already as recent (the writer
        may publish concurrently); checks first that the tree extends it.
        """
        return self._committer.publish_checkpoint()

    # --- the writer ----------------------------------------------------------------------

    def _run(self) -> None:
        waiting = self._queue
        waiting.stopping = False
        while not waiting.stopping:
            item = waiting.items.get()
            if item is STOP:
                break
            group, waiting.stopping = gather_group(
                item,  # type: ignore[arg-type]
                waiting.items,
                max_group=self._max_group,
                last=self._last_group,
                wait=self._group_wait,
                lull=self._group_lull,
            )
            self._last_group = len(group)
            try:
                self._process(group)
            except Exception as e:  # never leave a caller waiting forever
                _log.exception("log writer failed on a group of %d", len(group))
                for p in group:
                    if not p.done:
                        p.set_exception(Unavailable(f"internal error in the log writer: {e}"))
            wake_waiters(group)

    def _process(self, group: list[Pending]) -> None:
        started = time.perf_counter()
        plans: list[Plan] = []

        def build(size: int) -> AppendBatch | None:
            # Runs under the store's writers' lock, perhaps more than once (a retried
            # transaction): every call plans the group afresh from what is stored now.
            self._queue.top_up(group, self._max_group)
            self._recovery.catch_up(size)
            plan = self._sequencer.plan(group, size)
            self._committer.seal(plan)
            plans.append(plan)
            return plan.batch

        try:
            self._storage.sequence(build)
        except (StoreConnectionLost, StoreDiverged) as e:
            if self._observer is not None:
                self._observer.append_failed()
            self._recovery.recover(group, plans[-1] if plans else None, e, started)
            return
        except RngServiceError as e:
            if self._observer is not None:
                self._observer.append_failed()
            err = e if isinstance(e, Unavailable) else StorageUnavailable(str(e))
            _log.error("group commit of %d requests failed: %s", len(group), e)
            self.fail_group(group, plans[-1] if plans else None, err)
            return
        self.finish(plans[-1], started)

    def fail_group(self, group: Sequence[Pending], plan: Plan | None, err: Exception) -> None:
        """A group that was not stored: conflicts, failed draws and replays of stored entries
        stand on their own; every other request fails with ``err``."""
        if plan is not None:
            for p, error in plan.failed:
                p.set_exception(error)
            self.resolve_replays(plan.replays)
        for p in group:
            if not p.done:
                p.set_exception(err)

    def finish(self, plan: Plan, started: float) -> None:
        """Settles a group whose batch is stored: its receipts, then the observer. What may
        fail (a node the proofs need read from the store) runs before anything is settled, so
        that a recovery may call this again."""
        published = False
        if plan.pending is not None:
            size, note_text, proofs, published = self._committer.commit_tree(plan, plan.pending)
        for p, error in [*plan.failed, *plan.deferred]:
            p.set_exception(error)
        self._sequencer.committed(plan)
        if plan.pending is not None:
            settle_new(plan, size, note_text, proofs)
        self.resolve_replays(plan.replays)
        self._report(plan, started, published)

    def _report(self, plan: Plan, started: float, published: bool) -> None:
        """The committed group for the observer (metrics, the store's health)."""
        if self._observer is None:
            return
        kinds: dict[tuple[str, str], int] = {}
        for _, entry in plan.new:
            key = (entry.kind, entry.client)
            kinds[key] = kinds.get(key, 0) + 1
        replay_kinds: dict[str, int] = {}
        for p in [*(p for p, _ in plan.followers), *(p for p, _ in plan.replays)]:
            replay_kinds[p.request.kind] = replay_kinds.get(p.request.kind, 0) + 1
        self._observer.committed(
            entries=len(plan.new),
            replays_by_kind=replay_kinds,
            kinds=kinds,
            seconds=time.perf_counter() - started,
            tree_size=self._tree.size,
            published=published,
        )

    # --- recovery from a lost or diverged store --------------------------------------------

    def resolve_replays(self, replays: Sequence[tuple[Pending, EntryRecord]]) -> None:
        for p, rec in replays:
            try:
                p.set_result(self.replay(rec))
            except RngServiceError as e:
                p.set_exception(e)

    def replay(self, rec: EntryRecord) -> AppendResult:
        """The original answer for a logged entry: same entry, same proof, same checkpoint.

        The row is checked first against its signed bytes and against the tree's leaf node
        of its index (:func:`rng_service.writer.columns.check_nodes`): bytes changed in the store
        together with their leaf-hash column are not the outcome the log committed to, and are
        refused (DATA_LOSS, counted as ``rng_log_integrity_errors_total{method="sequencer",
        check="node"}``) instead of replayed."""
        size = rec.commit_size
        leaf, proof = self._tree.leaf_and_inclusion_proof(rec.index, size)
        try:
            check_record(rec)
            check_nodes([rec], [leaf])
        except LookupIntegrityError as e:
            raise edited(e, "this request's replay", self._observer) from e
        return AppendResult(
            entry=LogEntry.decode(rec.data),
            receipt=Receipt(
                index=rec.index,
                entry=rec.data,
                leaf_hash=rec.leaf_hash,
                inclusion_proof=tuple(proof),
                tree_size=size,
                checkpoint=self._committer.checkpoint_note(size),
                replayed=True,
            ),
        )
