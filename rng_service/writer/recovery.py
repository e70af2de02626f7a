"""The log writer's recovery: a lost or diverged store, and commits whose outcome is unknown.

When the store's connection is lost (``StoreConnectionLost``: a server restart, a failover to
a promoted standby), or the store turns out not to hold the tree this process has seen
(``StoreDiverged``), the writer stops taking groups and recovers without a restart
(:meth:`Recovery.recover`): requests waiting and arriving get UNAVAILABLE at once (nothing
drawn), and it polls the store until it can read it again, checks that the store still
begins with the tree it has seen (never shorter, the same RFC 6962 nodes: a standby that
lacked acknowledged entries is refused loudly, it would fork the log), adopts what other
writers appended, and resolves a group whose COMMIT was in flight (``CommitUnknown``) by
reading its request ids back: if its entries are there, their callers get their outcomes and
receipts; if not, UNAVAILABLE with nothing logged, and a retry draws once. Before each group
it also checks that the store still holds this tree (:meth:`Recovery.catch_up`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Protocol

from rng_service.errors import IntegrityError, RngServiceError, StorageUnavailable
from rng_service.storage.base import (
    CommitUnknown,
    EntryRecord,
    LogStorage,
    ServerEpochs,
    StoreConnectionLost,
)
from rng_service.writer.committer import Committer
from rng_service.writer.queue import Pending, WriterQueue, wake_waiters
from rng_service.writer.sequencer import Plan, conflict
from rng_service.writer.tree import MerkleTree, StoreDiverged
from rng_service.writer.values import AppendObserver

__all__ = [
    "DIVERGED_RETRY_SECONDS",
    "RECONNECT_MAX_DELAY_SECONDS",
    "RESOLUTIONS",
    "Recovery",
    "Settler",
]

_log = logging.getLogger("rng_service.log.appender")  # the JSON log's logger field, unchanged

#: Resolutions of an ambiguous commit (the ``resolution`` label of its metric).
RESOLUTIONS = ("stored", "not_stored", "unresolved")
#: Seconds between checks of a store found diverged (an operator must act; it is polled so
#: that the writer resumes by itself once the right store is back).
DIVERGED_RETRY_SECONDS = 5.0
#: The longest wait between two attempts to reach a lost store.
RECONNECT_MAX_DELAY_SECONDS = 0.25


class Settler(Protocol):
    """What recovery needs of the writer to settle a held group (``Appender``)."""

    def finish(self, plan: Plan, started: float) -> None: ...
    def fail_group(self, group: Sequence[Pending], plan: Plan | None, err: Exception) -> None: ...
    def resolve_replays(self, replays: Sequence[tuple[Pending, EntryRecord]]) -> None: ...


class Recovery:
    """Watches the store under the writer (its server, its tree) and brings the writer back
    after a loss. Runs on the writer thread."""

    def __init__(
        self,
        *,
        storage: LogStorage,
        tree: MerkleTree,
        committer: Committer,
        queue: WriterQueue,
        settler: Settler,
        observer: AppendObserver | None,
    ) -> None:
        self._storage = storage
        self._tree = tree
        self._committer = committer
        self._queue = queue
        self._settler = settler
        self._observer = observer
        # A store that reconnects by itself (PostgreSQL) says when its server changed; the
        # tree is checked against the store before the next group then (``_check_server``).
        self._epochs = storage if isinstance(storage, ServerEpochs) else None
        self._epoch = 0 if self._epochs is None else self._epochs.server_epoch

    def catch_up(self, size: int) -> None:
        """Checks that the store still holds every entry this writer has seen, and continues
        the tree with what another writer (a replica sharing the store, or a commit whose
        outcome was unknown) appended since this one last did."""
        tree_size = self._tree.size
        if size < tree_size:
            raise StoreDiverged(
                f"the log store holds {size} entries but this service has seen {tree_size}: "
                "stored entries were lost; refusing to append"
            )
        self._check_server()
        self._tree.advance(size)

    def recover(
        self,
        group: Sequence[Pending],
        plan: Plan | None,
        error: StoreConnectionLost | StoreDiverged,
        started: float,
    ) -> None:
        """Runs on the writer thread from the loss of the store until it takes groups again.

        A group whose COMMIT was in flight (``CommitUnknown`` after its batch was built) is
        held until the store can be read, then resolved (:meth:`_resolve`); any other group
        failed before anything could be stored and fails now. Meanwhile every request waiting
        or arriving gets UNAVAILABLE (nothing drawn); the store is polled (at once, then with
        a growing delay up to ``RECONNECT_MAX_DELAY_SECONDS``) and checked (:meth:`_verify`).
        A diverged store is refused, said loudly, and checked again every
        ``DIVERGED_RETRY_SECONDS``. ``stop()`` ends the wait: a group still held then gets
        UNAVAILABLE (its outcome unknown; a retry with the same request id returns it if it
        was stored).
        """
        lost_at = time.monotonic()
        held = (
            plan
            if isinstance(error, CommitUnknown) and plan is not None and plan.batch is not None
            else None
        )
        if held is None:
            self._settler.fail_group(
                group, plan, StorageUnavailable(f"{error}; nothing was logged")
            )
            wake_waiters(group)
        self._enter_down(error, held)
        delay = 0.0
        diverged_logged: tuple[str, float] = ("", 0.0)
        while True:
            if delay and not self._queue.stopped:
                self._queue.wake.wait(delay)
            self._queue.fail_queued()
            if self._queue.stopped:
                break
            try:
                self._verify()
                if held is not None:
                    self._resolve(group, held, started)
                    held = None
                break
            except IntegrityError as e:  # diverged: refuse loudly, look again later
                if held is not None:
                    self._unresolved(group, held, e)
                    wake_waiters(group)
                    held = None
                diverged_logged = self._refuse_diverged(e, diverged_logged)
                delay = DIVERGED_RETRY_SECONDS
            except RngServiceError as e:  # still unreachable (or busy): try again soon
                _log.debug("store still unavailable: %s", e)
                delay = min(max(2 * delay, 0.05), RECONNECT_MAX_DELAY_SECONDS)
        if held is not None:  # stopped before the store could be read
            self._unresolved(group, held, StorageUnavailable("the service is stopping"))
        self._queue.down = ""
        if not self._queue.stopped:
            self._recovered(time.monotonic() - lost_at)

    def _refuse_diverged(
        self, error: IntegrityError, logged: tuple[str, float]
    ) -> tuple[str, float]:
        """The store diverged: says so (critical, at most once a minute for the same reason;
        ``logged`` is the last reason said and when) and refuses groups meanwhile."""
        reason = f"the log store diverged: {error}"
        if reason != logged[0] or time.monotonic() - logged[1] > 60:
            _log.critical(
                {
                    "event": "store_diverged",
                    "reason": str(error),
                    "message": "refusing to append or sign checkpoints: the store does not "
                    "hold the log this service acknowledged (docs/operations/postgresql.md, "
                    "'Failover'); an operator must act",
                }
            )
            logged = (reason, time.monotonic())
        self._set_down(reason)
        return logged

    def _recovered(self, seconds: float) -> None:
        if self._observer is not None:
            self._observer.store_recovered(seconds=seconds)
        _log.warning(
            {
                "event": "store_recovered",
                "seconds": round(seconds, 3),
                "tree_size": self._tree.size,
                "message": "the log writer takes groups again (the store was checked)",
            }
        )

    def _enter_down(self, error: Exception, held: Plan | None) -> None:
        if isinstance(error, StoreDiverged):
            reason = f"the log store diverged: {error}"
        else:
            reason = f"the log store connection was lost ({error}); reconnecting"
        self._set_down(reason)
        _log.error(
            {
                "event": "store_lost",
                "reason": str(error),
                "ambiguous_entries": 0 if held is None else len(held.new),
                "message": "the log writer stopped taking groups: it reconnects, checks the "
                "store and resolves a commit that was in flight; outcome calls get "
                "UNAVAILABLE meanwhile",
            }
        )
        self._queue.fail_queued()

    def _set_down(self, reason: str) -> None:
        changed = reason != self._queue.down
        self._queue.down = reason
        if changed and self._observer is not None:
            self._observer.store_lost(reason=reason)

    def _check_server(self) -> None:
        """Checks the tree against the store if the store's connections reached another
        server (or a restarted one) since the last check: a call that the driver retried on a
        new connection (a standby promoted while this writer was idle) fails nothing, so
        without this check a writer would append to a store it never looked at.
        :class:`StoreDiverged` if the store does not hold this tree."""
        if self._epochs is None:
            return
        epoch = self._epochs.server_epoch
        if epoch != self._epoch:
            self._tree.verify_stored()
            self._epoch = epoch
            _log.warning(
                {
                    "event": "store_server_changed",
                    "tree_size": self._tree.size,
                    "message": "the log store's connections reached another server, or the "
                    "same one started again (a failover, a restart); it holds the tree this "
                    "service has seen",
                }
            )

    def _verify(self) -> None:
        """Reads the store and checks it still begins with the tree this process has seen
        (:class:`StoreDiverged` if it is shorter, holds other nodes, or lacks a published
        checkpoint's tree); then adopts what other writers appended. Checked again if the
        store's connections reached another server meanwhile (the first reads after a loss
        make the new connections), up to three times; a later change is checked before the
        next group (``_check_server``)."""
        for _ in range(3):
            epoch = 0 if self._epochs is None else self._epochs.server_epoch
            size = self._storage.tree_size()
            seen = self._tree.size
            if size < seen:
                raise StoreDiverged(
                    f"the log store holds {size} entries but this service has seen {seen} "
                    f"(entries {size} to {seen - 1} acknowledged or read, now missing: a failover "
                    "to a server that did not have them?); refusing to sign a fork"
                )
            self._tree.verify_stored()
            self._tree.advance(size)
            self._committer.check_extends_published()
            self._epoch = epoch
            if self._epochs is None or self._epochs.server_epoch == epoch:
                return

    def _resolve(self, group: Sequence[Pending], plan: Plan, started: float) -> None:
        """Settles a group whose COMMIT's outcome was unknown, from what the store holds now:
        its entries (found by their request ids, the very bytes this process built) are all
        there or none are (one transaction)."""
        records = plan.records
        logged = self._storage.group_state(
            [(r.client_id, r.request_id) for r in records], (), ()
        ).logged
        ours = [r for r in records if _same(logged.get((r.client_id, r.request_id)), r)]
        if ours and len(ours) != len(records):
            raise StoreDiverged(
                f"{len(ours)} of the {len(records)} entries of one commit are stored: a "
                "transaction was split; the store is not the log this service wrote"
            )
        if ours:
            _log.warning(
                {
                    "event": "ambiguous_commit_resolved",
                    "resolution": "stored",
                    "entries": len(records),
                    "indices": [records[0].index, records[-1].index],
                }
            )
            self._settler.finish(plan, started)
            self._count_ambiguous("stored", len(records))
            return
        # Not stored. A request id logged meanwhile by another writer (a retry that reached
        # another replica) is answered with that entry.
        replays: list[tuple[Pending, EntryRecord]] = []
        for p, _ in plan.new:
            found = logged.get((p.request.client_id, p.request.request_id))
            if found is None:
                continue
            if found.request_digest == p.request.digest:
                replays.append((p, found))
            else:
                p.set_exception(conflict(p.request))
        self._settler.resolve_replays(replays)
        _log.warning(
            {
                "event": "ambiguous_commit_resolved",
                "resolution": "not_stored",
                "entries": len(records),
                "logged_elsewhere": len(replays),
            }
        )
        self._settler.fail_group(
            group,
            plan,
            StorageUnavailable(
                "the log store was lost during the commit of this outcome, and the store "
                "reached since does not hold it: nothing was logged; retry with the same "
                "request id (it is drawn once)"
            ),
        )
        self._count_ambiguous("not_stored", len(records))

    def _unresolved(self, group: Sequence[Pending], plan: Plan, why: Exception) -> None:
        self._settler.fail_group(
            group,
            plan,
            StorageUnavailable(
                f"the log store was lost during the commit of this outcome and it could not be "
                f"read back ({why}): it may or may not be logged; retry with the same request "
                "id (a logged outcome is returned, never drawn again)"
            ),
        )
        self._count_ambiguous("unresolved", len(plan.records))

    def _count_ambiguous(self, resolution: str, entries: int) -> None:
        if self._observer is not None:
            self._observer.ambiguous_commit(resolution=resolution, entries=entries)


def _same(found: EntryRecord | None, ours: EntryRecord) -> bool:
    """Whether the store holds exactly the entry this process built (same index and bytes)."""
    return found is not None and found.index == ours.index and found.data == ours.data
