"""The sequencer: draws outcomes, makes them durable in groups, signs, and issues receipts.

One writer thread owns the log's write path. Callers (the gRPC servicers, on the event loop)
submit validated :class:`DrawRequest` objects and get a future. The writer takes every request
waiting, and for the whole group, in one pass:

1. looks up, in ONE query for the group (``LogStorage.group_state``), its request ids already
   logged, the filled slots of its rounds (from an index) and the last entry of each of its
   tables' chains; checks the rows it relies on against their signed bytes
   (:meth:`Appender._checked_rows`: a row of a filled slot is read by its index, a round with
   nothing in it reads nothing; an edited row refuses the requests relying on it with
   DATA_LOSS); resolves idempotency: a (client, request id) already in the log, or earlier in
   the same group, is answered with that entry (ALREADY_EXISTS if the parameters differ) and
   draws nothing;
2. checks each new request against its round (``rng_service.log.rounds``: a slot is filled
   once, the game's order rules, voided rounds), from those filled slots and the ones filled
   earlier in the group; a refusal draws nothing;
3. draws each new outcome from the generator (the outcome functions are pure), and encodes the
   entry (``rng_service.log.entry``, format 2) with its index, time, slot and its place in its
   (client, table) chain;
4. appends entries and the new Merkle nodes in ONE durable storage transaction (RFC 6962
   section 2.1 tree, ``rng_service.log.tree``), storing the group's checkpoint as a published
   checkpoint when the publication interval has passed;
5. signs one C2SP checkpoint for the group (Ed25519 signatures are deterministic, so the same
   tree size always yields the same note), with the active key and any co-signing key of a
   key rotation's overlap window, and computes each entry's inclusion proof;
6. only then resolves the futures. Nothing is returned that is not durable: if the transaction
   fails, every new outcome of the group fails with StorageUnavailable and is never shown.

Steps 1 to 4 run under the store's writers' lock (``LogStorage.sequence``), so the round rules
and the chains hold between service replicas sharing one store, not only within this process.

When the store's connection is lost (``StoreConnectionLost``: a server restart, a failover to
a promoted standby), or the store turns out not to hold the tree this process has seen
(``StoreDiverged``), the writer stops taking groups and recovers without a restart
(:meth:`Appender._recover`): requests waiting and arriving get UNAVAILABLE at once (nothing
drawn), and it polls the store until it can read it again, checks that the store still
begins with the tree it has seen (never shorter, the same nodes: a standby that lacked
acknowledged entries is refused loudly, it would fork the log), adopts what other writers
appended, and resolves a group whose COMMIT was in flight (``CommitUnknown``) by reading its
request ids back: if its entries are there, their callers get their outcomes and receipts (the
checkpoint signed again gives the very note: Ed25519 is deterministic); if not, UNAVAILABLE
with nothing logged, and a retry draws once. The observer hears of the loss, of each
ambiguous commit's resolution, and of the recovery (health and metrics).
Signing and committing on this thread rather than on the event loop keeps the loop free and lets
groups form while a commit is in flight (see docs/performance.md).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import queue
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from rng_service.clock import Clock
from rng_service.errors import (
    AlreadyExists,
    IntegrityError,
    Overloaded,
    RngServiceError,
    RoundRefused,
    ShuttingDown,
    StorageUnavailable,
    Unavailable,
)
from rng_service.log import rounds
from rng_service.log.columns import (
    LookupIntegrityError,
    check_nodes,
    check_range,
    check_record,
)
from rng_service.log.entry import (
    FORMAT_VERSION,
    GeneratorRef,
    JsonValue,
    LogEntry,
    format_time,
    request_digest,
)
from rng_service.log.frozen_setters import slot_setters as _setters
from rng_service.log.merkle import leaf_hash
from rng_service.log.note import Checkpoint, NoteSigner, parse_note, sign_note
from rng_service.log.receipt import Receipt
from rng_service.log.tree import MerkleTree, PendingAppend, StoreDiverged
from rng_service.sampling import RandomSource
from rng_service.storage.base import (
    AppendBatch,
    CheckpointRecord,
    CommitUnknown,
    EntryRecord,
    GroupState,
    LogStorage,
    ServerEpochs,
    SlotRecord,
    StoreConnectionLost,
)

__all__ = [
    "DIVERGED_RETRY_SECONDS",
    "RECONNECT_MAX_DELAY_SECONDS",
    "RESOLUTIONS",
    "AppendObserver",
    "AppendResult",
    "Appender",
    "DrawRequest",
    "GeneratorLike",
    "Waiter",
    "draw_request",
]

_log = logging.getLogger(__name__)


_new = object.__new__
_ENTRY = _setters(
    LogEntry,
    "index timestamp_ns kind params outcome client table_id round_id session_id request_id "
    "generator profile_sha256 slot table_seq table_prev version time_text",
)


def _new_entry(
    index: int, timestamp_ns: int, kind: str, params: Mapping[str, JsonValue],
    outcome: Mapping[str, JsonValue], client: str, table_id: str, round_id: str,
    session_id: str, request_id: str, generator: GeneratorRef, profile_sha256: str,
    slot: str | None, table_seq: int | None, table_prev: int | None, version: int,
    time_text: str,
) -> LogEntry:  # fmt: skip
    """``LogEntry(...)`` with every field, in field order (``_setters``)."""
    s = _ENTRY
    self: LogEntry = _new(LogEntry)
    s[0](self, index)
    s[1](self, timestamp_ns)
    s[2](self, kind)
    s[3](self, params)
    s[4](self, outcome)
    s[5](self, client)
    s[6](self, table_id)
    s[7](self, round_id)
    s[8](self, session_id)
    s[9](self, request_id)
    s[10](self, generator)
    s[11](self, profile_sha256)
    s[12](self, slot)
    s[13](self, table_seq)
    s[14](self, table_prev)
    s[15](self, version)
    s[16](self, time_text)
    return self


_RECORD = _setters(
    EntryRecord,
    "index data leaf_hash client_id request_id request_digest kind table_id round_id "
    "session_id timestamp_ns commit_size slot table_seq",
)


def _new_record(
    index: int, data: bytes, leaf_hash: bytes, client_id: str, request_id: str,
    request_digest: bytes, kind: str, table_id: str, round_id: str, session_id: str,
    timestamp_ns: int, commit_size: int, slot: str | None, table_seq: int | None,
) -> EntryRecord:  # fmt: skip
    """``EntryRecord(...)`` with every field, in field order (``_setters``)."""
    s = _RECORD
    self: EntryRecord = _new(EntryRecord)
    s[0](self, index)
    s[1](self, data)
    s[2](self, leaf_hash)
    s[3](self, client_id)
    s[4](self, request_id)
    s[5](self, request_digest)
    s[6](self, kind)
    s[7](self, table_id)
    s[8](self, round_id)
    s[9](self, session_id)
    s[10](self, timestamp_ns)
    s[11](self, commit_size)
    s[12](self, slot)
    s[13](self, table_seq)
    return self


_RECEIPT = _setters(Receipt, "index entry leaf_hash inclusion_proof tree_size checkpoint replayed")


def _new_receipt(
    index: int, entry: bytes, leaf_hash: bytes, inclusion_proof: tuple[bytes, ...],
    tree_size: int, checkpoint: str, replayed: bool,
) -> Receipt:  # fmt: skip
    """``Receipt(...)`` with every field, in field order (``_setters``)."""
    s = _RECEIPT
    self: Receipt = _new(Receipt)
    s[0](self, index)
    s[1](self, entry)
    s[2](self, leaf_hash)
    s[3](self, inclusion_proof)
    s[4](self, tree_size)
    s[5](self, checkpoint)
    s[6](self, replayed)
    return self


class GeneratorLike(Protocol):
    """What the appender needs of a generator (production or deterministic lab mode)."""

    @property
    def instance_id(self) -> str: ...
    @property
    def epoch(self) -> int: ...
    @property
    def lab_mode(self) -> bool: ...
    def random_bytes(self, n: int) -> bytes: ...


class AppendObserver(Protocol):
    def committed(
        self,
        *,
        entries: int,
        replays_by_kind: dict[str, int],
        kinds: dict[tuple[str, str], int],
        seconds: float,
        tree_size: int,
        published: bool,
    ) -> None: ...

    def append_failed(self) -> None: ...

    def store_lost(self, *, reason: str) -> None:
        """The writer lost its store (or found it diverged) and stopped taking groups."""
        ...

    def ambiguous_commit(self, *, resolution: str, entries: int) -> None:
        """A group whose COMMIT was in flight when the store was lost was resolved:
        ``stored``, ``not_stored``, or ``unresolved`` (the service stopped, or the store
        diverged, first)."""
        ...

    def store_recovered(self, *, seconds: float) -> None:
        """The writer takes groups again, ``seconds`` after the loss."""
        ...

    def integrity_error(self, method: str, check: str) -> None:
        """A stored row the sequencer relies on failed its ``check`` against its signed bytes
        (``method`` is "sequencer"): its requests were refused with DATA_LOSS."""
        ...


#: Resolutions of an ambiguous commit (the ``resolution`` label of its metric).
RESOLUTIONS = ("stored", "not_stored", "unresolved")
#: Seconds between checks of a store found diverged (an operator must act; it is polled so
#: that the writer resumes by itself once the right store is back).
DIVERGED_RETRY_SECONDS = 5.0
#: The longest wait between two attempts to reach a lost store.
RECONNECT_MAX_DELAY_SECONDS = 0.25


DrawFn = Callable[[RandomSource], Mapping[str, JsonValue]]
"""Draws an outcome record from a random source (a pure outcome function)."""
LinkFn = Callable[[Mapping[str, JsonValue]], tuple[Mapping[str, JsonValue], DrawFn]]
"""Completes a request from the links its round gives (``rounds.check``): params and draw."""


@dataclass(frozen=True, slots=True)
class DrawRequest:
    """A validated outcome request. ``draw`` is a pure function of the random source.

    ``slot``: the slot of its round the client named (generic draws; see
    ``rng_service.log.rounds.named_slot``), "" for the one the service derives. ``link``: for
    a kind whose round rules give it links (the bonus game's Fire Number draw and spin), the
    function that turns them into the entry's params and draw; without it the links are added
    to ``params``. ``params`` (with the named slot) are what idempotency compares.
    ``game_server``: the caller holds the ``game_server`` role, so the round rules for game
    servers apply (``rng_service.log.rounds``: the Blazing 7's bonus round after a spin on 7,
    17 or 27); a lab's draws have no such rule.
    """

    client_id: str
    request_id: str
    table_id: str
    round_id: str
    session_id: str
    kind: str
    params: Mapping[str, JsonValue]
    draw: DrawFn
    profile_sha256: str = ""
    slot: str = ""
    link: LinkFn | None = field(default=None, compare=False)
    digest: bytes = field(default=b"", compare=False)
    game_server: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        if not self.digest:
            digest = _digest(
                self.kind, self.params, self.table_id, self.round_id, self.session_id, self.slot
            )
            object.__setattr__(self, "digest", digest)


def _digest(
    kind: str,
    params: Mapping[str, JsonValue],
    table_id: str,
    round_id: str,
    session_id: str,
    slot: str,
) -> bytes:
    """A request's digest: what idempotency compares (``rng_service.log.entry``)."""
    return request_digest(
        kind=kind,
        params=dict(params),
        table_id=table_id,
        round_id=round_id,
        session_id=session_id,
        slot=slot,
    )


_REQUEST = _setters(
    DrawRequest,
    "client_id request_id table_id round_id session_id kind params draw profile_sha256 slot "
    "link digest game_server",
    post_init=False,
)


def draw_request(
    *,
    client_id: str,
    request_id: str,
    table_id: str,
    round_id: str,
    session_id: str,
    kind: str,
    params: Mapping[str, JsonValue],
    draw: DrawFn,
    profile_sha256: str = "",
    slot: str = "",
    link: LinkFn | None = None,
    game_server: bool = False,
) -> DrawRequest:
    """``DrawRequest(...)`` (its digest computed from these fields, as its ``__post_init__``
    does), built for about half the cost: the servicers make one for every outcome call."""
    digest = _digest(kind, params, table_id, round_id, session_id, slot)
    s = _REQUEST
    self: DrawRequest = _new(DrawRequest)
    s[0](self, client_id)
    s[1](self, request_id)
    s[2](self, table_id)
    s[3](self, round_id)
    s[4](self, session_id)
    s[5](self, kind)
    s[6](self, params)
    s[7](self, draw)
    s[8](self, profile_sha256)
    s[9](self, slot)
    s[10](self, link)
    s[11](self, digest)
    s[12](self, game_server)
    return self


@dataclass(frozen=True, slots=True)
class AppendResult:
    entry: LogEntry
    receipt: Receipt


_RESULT = _setters(AppendResult, "entry receipt")


def _new_result(entry: LogEntry, receipt: Receipt) -> AppendResult:
    """``AppendResult(entry, receipt)`` (``_setters``)."""
    self: AppendResult = _new(AppendResult)
    _RESULT[0](self, entry)
    _RESULT[1](self, receipt)
    return self


class Waiter(Protocol):
    """What the writer settles a request's outcome into, on the waiter's event loop (an
    ``asyncio.Future`` is one): ``done()`` once settled or cancelled."""

    def get_loop(self) -> asyncio.AbstractEventLoop: ...
    def done(self) -> bool: ...
    def set_result(self, result: AppendResult, /) -> None: ...
    def set_exception(self, error: BaseException, /) -> None: ...


class _Pending:
    """One submitted request and the slots its outcome goes into.

    The writer settles it exactly once (:meth:`set_result` or :meth:`set_exception`; a second
    attempt raises ``InvalidStateError``, as a ``concurrent.futures.Future`` would). Only the
    synchronous :meth:`Appender.submit` has a ``concurrent.futures.Future`` (``future``), which
    is settled along with the slots; :meth:`Appender.submit_async` has only the event loop's
    ``waiter``, which ``_settle`` settles from the slots once per group: a lock-based future per
    call would cost the event loop a few microseconds for nothing.
    """

    __slots__ = ("done", "error", "future", "request", "result", "waiter")

    def __init__(
        self,
        request: DrawRequest,
        waiter: Waiter | None,
        future: concurrent.futures.Future[AppendResult] | None,
    ) -> None:
        self.request = request
        self.waiter = waiter
        """The event loop's future of :meth:`Appender.submit_async`, settled once per group."""
        self.future = future
        self.result: AppendResult | None = None
        self.error: BaseException | None = None
        self.done = False

    def set_result(self, result: AppendResult) -> None:
        if self.done:
            raise concurrent.futures.InvalidStateError(f"request {self.request.request_id!r}")
        self.done = True
        self.result = result
        if self.future is not None:
            self.future.set_result(result)

    def set_exception(self, error: BaseException) -> None:
        if self.done:
            raise concurrent.futures.InvalidStateError(f"request {self.request.request_id!r}")
        self.done = True
        self.error = error
        if self.future is not None:
            self.future.set_exception(error)


@dataclass(slots=True)
class _Plan:
    """One group decided against the stored log (see ``Appender._plan``)."""

    new: list[tuple[_Pending, LogEntry]] = field(default_factory=list)
    records: list[EntryRecord] = field(default_factory=list)
    followers: list[tuple[_Pending, int]] = field(default_factory=list)  # same id earlier
    replays: list[tuple[_Pending, EntryRecord]] = field(default_factory=list)
    failed: list[tuple[_Pending, RngServiceError]] = field(default_factory=list)
    # Round refusals caused by an entry of this group: they stand only if it commits.
    deferred: list[tuple[_Pending, RngServiceError]] = field(default_factory=list)
    pending: PendingAppend | None = None
    batch: AppendBatch | None = None


class _Draft:
    """What ``Appender._plan`` works from while it decides one group: the stored log at
    ``size`` entries (``Appender._group_state``) and what the group has added so far."""

    __slots__ = (
        "chains",
        "encoded",
        "logged",
        "next_index",
        "now",
        "repeated",
        "seen",
        "size",
        "state",
        "tainted",
        "time_text",
    )

    def __init__(
        self,
        size: int,
        now: int,
        time_text: str,
        logged: dict[tuple[str, str], EntryRecord],
        state: dict[tuple[str, str, str], dict[str, rounds.Filled]],
        chains: dict[tuple[str, str], tuple[int, int]],
        repeated: set[tuple[str, str, str]],
        tainted: dict[tuple[str, ...], IntegrityError],
    ) -> None:
        self.size = size
        self.now = now  # the group's one sequencing time (microseconds, in nanoseconds)
        self.time_text = time_text
        self.logged = logged  # request ids already in the log
        self.state = state  # the filled slots of the group's rounds
        self.chains = chains  # (client, table) -> (table_seq, index) of the chain's last entry
        self.repeated = repeated  # rounds that more than one request of the group is for
        #: requests, rounds and tables whose stored rows failed their check (_checked_rows)
        self.tainted = tainted
        self.next_index = size
        #: (client, request id) -> (digest, its place in the plan's new entries)
        self.seen: dict[tuple[str, str], tuple[bytes, int]] = {}
        self.encoded: list[bytes] = []  # the canonical bytes of the plan's new entries


_STOP = object()


class _Takes(Protocol):
    def get(self, block: bool = True, timeout: float | None = None) -> object: ...
    def get_nowait(self) -> object: ...


def gather_group(
    first: _Pending, waiting: _Takes, *, max_group: int, company: bool, wait: float
) -> tuple[list[_Pending], bool]:
    """A commit group: ``first`` and the requests after it on ``waiting``, and whether the
    stop marker was taken.

    Every group costs one transaction, one fsync and one signature, and each of those hands
    the GIL back and forth with the event loop, so under concurrent load a few bigger groups
    beat many small ones: when the last group had ``company`` (more than one request), the
    writer waits up to ``wait`` seconds for the requests that are on their way (up to
    ``max_group``). A lone request after a lone request never waits; whatever is already
    queued joins the group either way. (Closing the group early, once as many requests as the
    last group held are in, halves the wait of a few callers in a loop but makes the groups
    of 32 callers smaller and each spin dearer: docs/performance.md.)"""
    group = [first]
    deadline = time.monotonic() + wait if company else 0.0
    while len(group) < max_group:
        try:
            remaining = deadline - time.monotonic()
            nxt = waiting.get(timeout=remaining) if remaining > 0 else waiting.get_nowait()
        except queue.Empty:
            break
        if nxt is _STOP:
            return group, True
        group.append(nxt)  # type: ignore[arg-type]
    return group, False


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
        observer: AppendObserver | None = None,
    ) -> None:
        self._storage = storage
        self._tree = tree
        self._generator = generator
        # The active key first, then keys co-signing during a rotation overlap (C2SP signed
        # notes carry several signatures; verifiers need to know only one of the keys).
        self._signers = [signer, *cosigners]
        self._origin = origin
        self._clock = clock
        self._publish_interval = publish_interval_seconds
        self._max_group = max_group_size
        # A C queue without a bound of its own (cheaper by a few microseconds a call than
        # ``queue.Queue``); ``_enqueue`` enforces ``max_queue`` under ``_put_lock``.
        self._queue: queue.SimpleQueue[_Pending | object] = queue.SimpleQueue()
        self._max_queue = max_queue if max_queue > 0 else sys.maxsize
        self._put_lock = threading.Lock()
        self._observer = observer
        self._thread: threading.Thread | None = None
        self._group_wait = group_wait_seconds
        self._last_group = 0
        self._stopped = False
        self._last_publish = -float("inf")
        self._note_cache: tuple[int, str] | None = None
        self._gen_ref: GeneratorRef | None = None  # see _generator_ref
        self._sign_lock = threading.Lock()
        self._stopping = False  # the writer has taken the stop marker off the queue
        # Non-empty while the writer recovers from a lost or diverged store: why. Submissions
        # are refused meanwhile (read without a lock: a str reference is replaced atomically).
        self._down_reason = ""
        self._wake = threading.Event()  # set by stop(): ends a recovery's waits
        # A store that reconnects by itself (PostgreSQL) says when its server changed; the
        # tree is checked against the store before the next group then (``_check_server``).
        self._epochs = storage if isinstance(storage, ServerEpochs) else None
        self._epoch = 0 if self._epochs is None else self._epochs.server_epoch
        # The head (table_seq, index) of each (client, table) chain as this writer appended
        # it or last checked its row against its signed bytes (_checked_heads).
        self._known_heads: dict[tuple[str, str], tuple[int, int]] = {}

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("appender already started")
        self._check_extends_published()
        self._stopped = False
        self._wake.clear()
        self._thread = threading.Thread(target=self._run, name="log-writer", daemon=True)
        self._thread.start()

    def stop(self, *, publish: bool = True) -> None:
        """Finishes every request already submitted, then publishes a final checkpoint."""
        if self._thread is None:
            return
        self._stopped = True
        self._wake.set()
        self._queue.put(_STOP)
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
        return self._down_reason

    def sync(self) -> int:
        """Catches the tree up with the store, which other service replicas may share (their
        appends are in the store, not in this process's tree); returns the tree size."""
        self._tree.advance(self._storage.tree_size())
        return self._tree.size

    # --- submission ----------------------------------------------------------------------

    def submit(self, request: DrawRequest) -> concurrent.futures.Future[AppendResult]:
        """Queues a request (before ``start()`` too); its future resolves once it is durable."""
        future: concurrent.futures.Future[AppendResult] = concurrent.futures.Future()
        future.set_running_or_notify_cancel()  # an accepted request cannot be cancelled
        self._enqueue(_Pending(request, None, future))
        return future

    def submit_async(self, request: DrawRequest) -> asyncio.Future[AppendResult]:
        """:meth:`submit` for a caller on an event loop: returns that loop's future.

        The writer settles all of a group's futures on one loop with one
        ``call_soon_threadsafe`` (one wake-up of the loop per group, not one per request).
        Cancelling the returned future does not withdraw the request: it is logged anyway.
        """
        waiter: asyncio.Future[AppendResult] = asyncio.get_running_loop().create_future()
        self._enqueue(_Pending(request, waiter, None))
        return waiter

    def submit_waiter(self, request: DrawRequest, waiter: Waiter) -> None:
        """:meth:`submit_async` with the caller's own ``waiter`` (settled on its event loop,
        once, as ``submit_async``'s future is): the log writer process's channel answers
        through one without an asyncio future and callback per request
        (``rng_service.process.ipc``)."""
        self._enqueue(_Pending(request, waiter, None))

    def _enqueue(self, pending: _Pending) -> None:
        if self._stopped:
            raise ShuttingDown("the log writer has stopped")
        down = self._down_reason
        if down:
            raise _refused(down)
        with self._put_lock:  # the bound is exact with submitters on several threads too
            if self._queue.qsize() >= self._max_queue:
                raise Overloaded("too many requests waiting for the log; retry later")
            self._queue.put(pending)

    # --- checkpoints ---------------------------------------------------------------------

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

    def _check_extends_published(self) -> CheckpointRecord | None:
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
        latest = self._check_extends_published()
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

    # --- the writer ----------------------------------------------------------------------

    def _run(self) -> None:
        self._stopping = False
        while not self._stopping:
            item = self._queue.get()
            if item is _STOP:
                break
            group, self._stopping = gather_group(
                item,  # type: ignore[arg-type]
                self._queue,
                max_group=self._max_group,
                company=self._last_group > 1,
                wait=self._group_wait,
            )
            self._last_group = len(group)
            try:
                self._process(group)
            except Exception as e:  # never leave a caller waiting forever
                _log.exception("log writer failed on a group of %d", len(group))
                for p in group:
                    if not p.done:
                        p.set_exception(Unavailable(f"internal error in the log writer: {e}"))
            _wake_waiters(group)

    def _top_up(self, group: list[_Pending]) -> None:
        """Adds the requests that queued meanwhile (while this writer waited for the store's
        lock, which other replicas hold) to ``group``: they cost no extra transaction."""
        while not self._stopping and len(group) < self._max_group:
            try:
                nxt = self._queue.get_nowait()
            except queue.Empty:
                return
            if nxt is _STOP:
                self._stopping = True
                return
            group.append(nxt)  # type: ignore[arg-type]

    def _process(self, group: list[_Pending]) -> None:
        started = time.perf_counter()
        plans: list[_Plan] = []

        def build(size: int) -> AppendBatch | None:
            # Runs under the store's writers' lock, perhaps more than once (a retried
            # transaction): every call plans the group afresh from what is stored now.
            self._top_up(group)
            plan = self._plan(group, size)
            plans.append(plan)
            return plan.batch

        try:
            self._storage.sequence(build)
        except (StoreConnectionLost, StoreDiverged) as e:
            if self._observer is not None:
                self._observer.append_failed()
            self._recover(group, plans[-1] if plans else None, e, started)
            return
        except RngServiceError as e:
            if self._observer is not None:
                self._observer.append_failed()
            err = e if isinstance(e, Unavailable) else StorageUnavailable(str(e))
            _log.error("group commit of %d requests failed: %s", len(group), e)
            self._fail_group(group, plans[-1] if plans else None, err)
            return
        self._finish(plans[-1], started)

    def _fail_group(self, group: Sequence[_Pending], plan: _Plan | None, err: Exception) -> None:
        """A group that was not stored: conflicts, failed draws and replays of stored entries
        stand on their own; every other request fails with ``err``."""
        if plan is not None:
            for p, error in plan.failed:
                p.set_exception(error)
            self._resolve_replays(plan.replays)
        for p in group:
            if not p.done:
                p.set_exception(err)

    def _finish(self, plan: _Plan, started: float) -> None:
        """Settles a group whose batch is stored: its receipts, then the observer. What may
        fail (a node the proofs need read from the store) runs before anything is settled, so
        that a recovery may call this again."""
        published = False
        if plan.pending is not None:
            size, note_text, proofs, published = self._commit_tree(plan, plan.pending)
        for p, error in [*plan.failed, *plan.deferred]:
            p.set_exception(error)
        for _, entry in plan.new:
            self._known_heads[(entry.client, entry.table_id)] = (entry.table_seq or 1, entry.index)
        if plan.pending is not None:
            self._settle_new(plan, size, note_text, proofs)
        self._resolve_replays(plan.replays)
        self._report(plan, started, published)

    def _commit_tree(
        self, plan: _Plan, pending: PendingAppend
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
        proofs = self._tree.inclusion_proofs([rec.index for rec in plan.records], size)
        if checkpoint is not None:
            self._last_publish = self._clock.monotonic()
            self._note_cache = (size, note_text)
        return size, note_text, proofs, checkpoint is not None

    def _settle_new(
        self, plan: _Plan, size: int, note_text: str, proofs: list[list[bytes]]
    ) -> None:
        """Each new entry's caller gets its entry and receipt; a caller that sent the same
        request id later in the group gets that answer, marked replayed."""
        results: list[AppendResult] = []
        for (p, entry), rec, proof in zip(plan.new, plan.records, proofs, strict=True):
            receipt = _new_receipt(
                rec.index, rec.data, rec.leaf_hash, tuple(proof), size, note_text, False
            )
            result = _new_result(entry, receipt)
            results.append(result)
            p.set_result(result)
        for p, slot in plan.followers:
            first = results[slot]
            p.set_result(AppendResult(entry=first.entry, receipt=_replayed(first.receipt)))

    def _report(self, plan: _Plan, started: float, published: bool) -> None:
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

    def _recover(
        self,
        group: Sequence[_Pending],
        plan: _Plan | None,
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
            self._fail_group(group, plan, StorageUnavailable(f"{error}; nothing was logged"))
            _wake_waiters(group)
        self._enter_down(error, held)
        delay = 0.0
        diverged_logged: tuple[str, float] = ("", 0.0)
        while True:
            if delay and not self._stopped:
                self._wake.wait(delay)
            self._fail_queued()
            if self._stopped:
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
                    _wake_waiters(group)
                    held = None
                diverged_logged = self._refuse_diverged(e, diverged_logged)
                delay = DIVERGED_RETRY_SECONDS
            except RngServiceError as e:  # still unreachable (or busy): try again soon
                _log.debug("store still unavailable: %s", e)
                delay = min(max(2 * delay, 0.05), RECONNECT_MAX_DELAY_SECONDS)
        if held is not None:  # stopped before the store could be read
            self._unresolved(group, held, StorageUnavailable("the service is stopping"))
        self._down_reason = ""
        if not self._stopped:
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
                    "hold the log this service acknowledged (docs/operations.md, 'Failover'); "
                    "an operator must act",
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

    def _enter_down(self, error: Exception, held: _Plan | None) -> None:
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
        self._fail_queued()

    def _set_down(self, reason: str) -> None:
        changed = reason != self._down_reason
        self._down_reason = reason
        if changed and self._observer is not None:
            self._observer.store_lost(reason=reason)

    def _fail_queued(self) -> None:
        """Fails every request waiting in the queue (nothing drawn): the writer takes no groups
        while it recovers. A stop marker found on the way is kept as a stop."""
        refused = _refused(self._down_reason or "the log store is unavailable")
        waiting: list[_Pending] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                self._stopping = True
                self._stopped = True
                continue
            p: _Pending = item  # type: ignore[assignment]
            p.set_exception(refused)
            waiting.append(p)
        _wake_waiters(waiting)

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
            self._check_extends_published()
            self._epoch = epoch
            if self._epochs is None or self._epochs.server_epoch == epoch:
                return

    def _resolve(self, group: Sequence[_Pending], plan: _Plan, started: float) -> None:
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
            self._finish(plan, started)
            self._count_ambiguous("stored", len(records))
            return
        # Not stored. A request id logged meanwhile by another writer (a retry that reached
        # another replica) is answered with that entry.
        replays: list[tuple[_Pending, EntryRecord]] = []
        for p, _ in plan.new:
            found = logged.get((p.request.client_id, p.request.request_id))
            if found is None:
                continue
            if found.request_digest == p.request.digest:
                replays.append((p, found))
            else:
                p.set_exception(_conflict(p.request))
        self._resolve_replays(replays)
        _log.warning(
            {
                "event": "ambiguous_commit_resolved",
                "resolution": "not_stored",
                "entries": len(records),
                "logged_elsewhere": len(replays),
            }
        )
        self._fail_group(
            group,
            plan,
            StorageUnavailable(
                "the log store was lost during the commit of this outcome, and the store "
                "reached since does not hold it: nothing was logged; retry with the same "
                "request id (it is drawn once)"
            ),
        )
        self._count_ambiguous("not_stored", len(records))

    def _unresolved(self, group: Sequence[_Pending], plan: _Plan, why: Exception) -> None:
        self._fail_group(
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

    def _plan(self, group: Sequence[_Pending], size: int) -> _Plan:
        """Decides the group against the log as stored at ``size`` entries, drawing the new
        outcomes: nothing is resolved here, because the transaction may still fail."""
        self._catch_up(size)
        plan = _Plan()
        # One sequencing time per group, and one lookup of the store per group (_group_state).
        now = self._clock.now_ns() // 1000 * 1000  # entries carry microseconds
        draft = _Draft(size, now, format_time(now), *self._group_state(group))
        for p in group:
            if self._answered(plan, draft, p):
                continue
            checked = self._check_round(plan, draft, p)
            if checked is None:
                continue
            drawn = self._draw(plan, p, checked[1])
            if drawn is not None:
                self._add_entry(plan, draft, p, checked[0], *drawn)
        if plan.new:
            self._seal(plan, draft)
        return plan

    def _catch_up(self, size: int) -> None:
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

    def _answered(self, plan: _Plan, draft: _Draft, p: _Pending) -> bool:
        """Idempotency: a request id earlier in the group (a follower) or already logged (a
        replay) is answered with that entry, or ALREADY_EXISTS if its parameters differ; it
        draws nothing. A request relying on a stored row that failed its check against its
        signed bytes is refused (DATA_LOSS). Whether ``p`` was settled so."""
        req = p.request
        key = (req.client_id, req.request_id)
        earlier = draft.seen.get(key)
        if earlier is not None:
            digest, slot = earlier
            if digest != req.digest:
                plan.failed.append((p, _conflict(req)))
            else:
                plan.followers.append((p, slot))
            return True
        if draft.tainted:
            error = _tainted(draft.tainted, req)
            if error is not None:  # a row it relies on disagrees with its signed bytes
                plan.failed.append((p, error))
                return True
        existing = draft.logged.get(key)
        if existing is None:
            return False
        if existing.request_digest != req.digest:
            plan.failed.append((p, _conflict(req)))
        else:
            plan.replays.append((p, existing))
        return True

    def _check_round(
        self, plan: _Plan, draft: _Draft, p: _Pending
    ) -> tuple[str, Mapping[str, JsonValue]] | None:
        """The request's slot and the links its round gives it (``rounds.check``), or None if
        its round refuses it (recorded in ``plan``; nothing drawn)."""
        req = p.request
        slot_name = rounds.effective_slot(req.kind, req.slot, req.request_id)
        filled = draft.state.get((req.client_id, req.table_id, req.round_id), _NOTHING_FILLED)
        if not filled and not (
            req.kind in rounds.NEED_A_FILLED_ROUND
            or (req.game_server and req.kind in rounds.NEED_A_SPIN_FOR_GAME_SERVERS)
        ):
            return slot_name, _NO_LINKS
        try:
            links = rounds.check(
                kind=req.kind,
                slot=slot_name,
                table_id=req.table_id,
                round_id=req.round_id,
                params=req.params,
                profile_sha256=req.profile_sha256,
                filled=filled,
                game_server=req.game_server,
            )
        except RoundRefused as e:
            # A refusal that an entry of this group caused stands only if the group commits.
            in_group = any(f.index >= draft.size for f in filled.values())
            (plan.deferred if in_group else plan.failed).append((p, e))
            return None
        return slot_name, links

    def _draw(
        self, plan: _Plan, p: _Pending, links: Mapping[str, JsonValue]
    ) -> tuple[Mapping[str, JsonValue], Mapping[str, JsonValue], GeneratorRef] | None:
        """The entry's params, the outcome drawn now and the generator that drew it; None if
        the draw failed (that request only, recorded in ``plan``; never its group)."""
        req = p.request
        params, draw = req.params, req.draw
        try:
            if links:
                if req.link is not None:
                    params, draw = req.link(links)
                else:
                    params = {**req.params, **links}
            # A fresh RandomSource per outcome: its bytes come from the generator now, so
            # the epoch recorded below is the one that produced them.
            outcome = draw(RandomSource(self._generator))
            gen = self._generator_ref()
        except RngServiceError as e:
            plan.failed.append((p, e))
            return None
        return params, outcome, gen

    def _generator_ref(self) -> GeneratorRef:
        """The generator's identifiers now (after the draw): the same object while they stay
        the same (a new epoch at each reseed), not a new one per outcome."""
        g = self._generator
        instance, epoch, lab_mode = g.instance_id, g.epoch, g.lab_mode
        ref = self._gen_ref
        if (
            ref is None
            or ref.epoch != epoch
            or ref.instance != instance
            or ref.lab_mode is not lab_mode
        ):
            ref = self._gen_ref = GeneratorRef(instance=instance, epoch=epoch, lab_mode=lab_mode)
        return ref

    def _add_entry(
        self,
        plan: _Plan,
        draft: _Draft,
        p: _Pending,
        slot_name: str,
        params: Mapping[str, JsonValue],
        outcome: Mapping[str, JsonValue],
        gen: GeneratorRef,
    ) -> None:
        """The request's log entry at the next index: its place in its table's chain, the
        slot it fills for later requests of the group, and its canonical bytes."""
        req = p.request
        index = draft.next_index
        chain = (req.client_id, req.table_id)
        head = draft.chains.get(chain)
        table_seq = 1 if head is None else head[0] + 1
        entry = _new_entry(
            index, draft.now, req.kind, params, outcome, req.client_id, req.table_id,
            req.round_id, req.session_id, req.request_id, gen, req.profile_sha256, slot_name,
            table_seq, None if head is None else head[1], FORMAT_VERSION, draft.time_text,
        )  # fmt: skip
        draft.chains[chain] = (table_seq, index)
        round_key = (req.client_id, req.table_id, req.round_id)
        if round_key in draft.repeated and not rounds.is_lab_slot(slot_name):
            # Another request of this group is for the same round: it must see this one.
            draft.state.setdefault(round_key, {})[slot_name] = rounds.Filled(
                index, _loaded(entry), entry
            )
        draft.seen[(req.client_id, req.request_id)] = (req.digest, len(plan.new))
        plan.new.append((p, entry))
        draft.encoded.append(entry.encode())
        draft.next_index = index + 1

    def _seal(self, plan: _Plan, draft: _Draft) -> None:
        """The group's storage batch: its records, the new Merkle nodes, and the signed
        checkpoint when the publication interval has passed."""
        plan.records = [
            _record(p.request, entry, data, draft.next_index)
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
        plan.batch = AppendBatch(plan.records, pending.nodes, checkpoint)

    def _group_state(
        self, group: Sequence[_Pending]
    ) -> tuple[
        dict[tuple[str, str], EntryRecord],
        dict[tuple[str, str, str], dict[str, rounds.Filled]],
        dict[tuple[str, str], tuple[int, int]],
        set[tuple[str, str, str]],
        dict[tuple[str, ...], IntegrityError],
    ]:
        """What the group needs of the stored log, in ONE query (``LogStorage.group_state``):
        the entries of its request ids already logged (by any replica), the filled slots of its
        rounds, and the last entry (table_seq, index) of its tables' chains. Also the rounds
        that more than one request of the group is for, and the requests, rounds and tables
        whose rows fail their check against their signed bytes (:meth:`_checked_rows`)."""
        requests: dict[tuple[str, str], None] = {}
        wanted: dict[tuple[str, str, str], int] = {}
        tables: dict[tuple[str, str], None] = {}
        for p in group:
            req = p.request
            requests[(req.client_id, req.request_id)] = None
            if req.kind not in rounds.LAB_KINDS:
                key = (req.client_id, req.table_id, req.round_id)
                wanted[key] = wanted.get(key, 0) + 1
            tables[(req.client_id, req.table_id)] = None
        stored = self._storage.group_state(list(requests), list(wanted), list(tables))
        tainted, rows = self._checked_rows(stored, tables)
        state: dict[tuple[str, str, str], dict[str, rounds.Filled]] = {}
        for rec in stored.slots:
            data = rows.get(rec.index)
            if data is None:  # its round is tainted, or a lab entry: nothing of it is relied on
                continue
            load = functools.partial(LogEntry.decode, data)
            slot = rec.slot
            if slot is None:  # written before slots existed: the slot of its kind
                slot = rounds.slot_of_legacy(load().kind)
                if slot is None:
                    continue
            # By index: a slot's first entry (a format-1 round may hold several of one kind).
            state.setdefault((rec.client_id, rec.table_id, rec.round_id), {}).setdefault(
                slot, rounds.Filled(rec.index, load)
            )
        chains = {table: (head.table_seq, head.index) for table, head in stored.heads.items()}
        repeated = {key for key, n in wanted.items() if n > 1}
        return stored.logged, state, chains, repeated, tainted

    def _checked_rows(
        self, stored: GroupState, tables: Mapping[tuple[str, str], None]
    ) -> tuple[dict[tuple[str, ...], IntegrityError], dict[int, bytes]]:
        """The stored rows the group relies on, checked against their signed bytes
        (:func:`rng_service.log.columns.check_record`), so that an edit of the live database's
        columns cannot make the sequencer draw a game event again (docs/security.md, "An
        edited database"): every logged entry of its request ids (its bytes are in the row), every
        row of its rounds' filled slots (read by index: a round with nothing in it, the common
        case, reads nothing), and each table's head unless it is the head this writer appended
        or checked (:meth:`_checked_heads`). Returns the failures by ``("request", client,
        request_id)``, ``("round", client, table, round)`` and ``("table", client, table)``,
        and the checked rows' bytes by index. What this cannot see is a row whose columns were
        changed so that the query does not return it at all: the start-up check, check-store
        and rng-audit verify catch that."""
        tainted: dict[tuple[str, ...], IntegrityError] = {}
        for (client, request_id), rec in stored.logged.items():
            try:
                check_record(rec)
            except LookupIntegrityError as e:
                tainted[("request", client, request_id)] = self._edited(
                    e, "a retry of this request"
                )
        rows: dict[int, bytes] = {}
        for slot in stored.slots:
            key = ("round", slot.client_id, slot.table_id, slot.round_id)
            if key in tainted or (slot.slot is not None and rounds.is_lab_slot(slot.slot)):
                continue  # a lab entry (batch, stream) is no slot of a round: never relied on
            try:
                rows[slot.index] = self._checked_slot(slot)
            except LookupIntegrityError as e:
                tainted[key] = self._edited(e, "this round")
        self._checked_heads(stored, tables, tainted)
        return tainted, rows

    def _edited(self, e: LookupIntegrityError, what: str) -> IntegrityError:
        """The error of a request that relies on a row failing its check; logged and counted
        (``rng_log_integrity_errors_total{method="sequencer"}``) once here."""
        _log.error(
            {
                "event": "log_integrity_error",
                "method": "sequencer",
                "check": e.check,
                "index": e.index,
                "message": str(e),
            }
        )
        if self._observer is not None:
            self._observer.integrity_error("sequencer", e.check)
        return IntegrityError(
            f"{e}. The sequencer relies on that row for {what}, so nothing was drawn: the log "
            "store was edited under the running service (rng-service check-store names every "
            "such row); stop and investigate"
        )

    def _checked_slot(self, slot: SlotRecord) -> bytes:
        """The bytes of a filled slot's row, after checking that they are of that round and
        slot."""
        found = self._storage.entries(slot.index, slot.index + 1)
        check_range(found, slot.index, slot.index + 1)
        signed = check_record(found[0])
        if (signed.client, signed.table_id, signed.round_id, signed.slot) != (
            slot.client_id, slot.table_id, slot.round_id, slot.slot
        ):  # fmt: skip
            raise LookupIntegrityError(
                f"entry {slot.index} was found in slot {slot.slot!r} of round "
                f"{slot.round_id!r} of table {slot.table_id!r}, but its signed bytes say slot "
                f"{signed.slot!r} of round {signed.round_id!r} of table {signed.table_id!r}",
                check="columns",
                index=slot.index,
            )
        return found[0].data

    def _checked_heads(
        self,
        stored: GroupState,
        tables: Mapping[tuple[str, str], None],
        tainted: dict[tuple[str, ...], IntegrityError],
    ) -> None:
        """Each table's head against the one this writer knows: the same, nothing to read;
        further on (another replica appended), its row is checked once; further back, or gone,
        the chain lost its newest entries in the store."""
        known_heads = self._known_heads
        for table in tables:
            head = stored.heads.get(table)
            known = known_heads.get(table)
            now = None if head is None else (head.table_seq, head.index)
            if now == known:
                continue
            try:
                if now is None or (known is not None and now[0] < known[0]):
                    raise LookupIntegrityError(
                        f"the chain of table {table[1]!r} of client {table[0]!r} ends in the "
                        f"store at {'no entry' if now is None else f'seq {now[0]}'}, but this "
                        f"writer appended or checked its seq {known and known[0]} at entry "
                        f"{known and known[1]}: rows of the chain were deleted or their columns "
                        f"changed",
                        check="chain",
                        index=known[1] if known is not None else 0,
                    )
                found = self._storage.entries(now[1], now[1] + 1)
                check_range(found, now[1], now[1] + 1)
                signed = check_record(found[0])
                if (signed.client, signed.table_id, signed.table_seq) != (*table, now[0]):
                    raise LookupIntegrityError(
                        f"entry {now[1]} was found as seq {now[0]} of table {table[1]!r} of "
                        f"client {table[0]!r}, but its signed bytes say seq {signed.table_seq} "
                        f"of table {signed.table_id!r} of client {signed.client!r}",
                        check="chain",
                        index=now[1],
                    )
            except LookupIntegrityError as e:
                tainted[("table", *table)] = self._edited(e, "this table's next entry")
                continue
            if len(known_heads) >= _KNOWN_HEADS:
                known_heads.clear()
            known_heads[table] = now

    def _resolve_replays(self, replays: Sequence[tuple[_Pending, EntryRecord]]) -> None:
        for p, rec in replays:
            try:
                p.set_result(self.replay(rec))
            except RngServiceError as e:
                p.set_exception(e)

    def replay(self, rec: EntryRecord) -> AppendResult:
        """The original answer for a logged entry: same entry, same proof, same checkpoint.

        The row is checked first against its signed bytes and against the tree's leaf node
        of its index (:func:`rng_service.log.columns.check_nodes`): bytes changed in the store
        together with their leaf-hash column are not the outcome the log committed to, and are
        refused (DATA_LOSS, counted as ``rng_log_integrity_errors_total{method="sequencer",
        check="node"}``) instead of replayed."""
        size = rec.commit_size
        leaf, proof = self._tree.leaf_and_inclusion_proof(rec.index, size)
        try:
            check_record(rec)
            check_nodes([rec], [leaf])
        except LookupIntegrityError as e:
            raise self._edited(e, "this request's replay") from e
        return AppendResult(
            entry=LogEntry.decode(rec.data),
            receipt=Receipt(
                index=rec.index,
                entry=rec.data,
                leaf_hash=rec.leaf_hash,
                inclusion_proof=tuple(proof),
                tree_size=size,
                checkpoint=self.checkpoint_note(size),
                replayed=True,
            ),
        )


_NO_LINKS: Mapping[str, JsonValue] = MappingProxyType({})
#: Table heads kept by :meth:`Appender._checked_heads` (forgotten all at once beyond it).
_KNOWN_HEADS = 100_000


def _tainted(
    tainted: Mapping[tuple[str, ...], IntegrityError], req: DrawRequest
) -> IntegrityError | None:
    """The error of a request relying on a row that failed its check, if any."""
    return (
        tainted.get(("request", req.client_id, req.request_id))
        or tainted.get(("round", req.client_id, req.table_id, req.round_id))
        or tainted.get(("table", req.client_id, req.table_id))
    )


#: The filled slots of a round that has none (shared: never written to).
_NOTHING_FILLED: Mapping[str, rounds.Filled] = MappingProxyType({})


def _loaded(entry: LogEntry) -> Callable[[], LogEntry]:
    return lambda: entry


def _wake_waiters(group: Sequence[_Pending]) -> None:
    """Hands the group's settled futures to their event loops: one call per loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[_Pending]] = {}
    for p in group:
        if p.waiter is not None:
            by_loop.setdefault(p.waiter.get_loop(), []).append(p)
    for loop, pendings in by_loop.items():
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            loop.call_soon_threadsafe(_settle, pendings)


def _settle(pendings: Sequence[_Pending]) -> None:
    """On the event loop: copies each request's outcome to its loop future."""
    for p in pendings:
        waiter = p.waiter
        if waiter is None or waiter.done():  # cancelled: the caller went away
            continue
        error = p.error
        if error is not None:
            waiter.set_exception(error)
        else:
            waiter.set_result(p.result)  # type: ignore[arg-type]  # settled before the wake-up


def _refused(reason: str) -> StorageUnavailable:
    return StorageUnavailable(
        f"{reason}; nothing was drawn or logged: retry with the same request id"
    )


def _same(found: EntryRecord | None, ours: EntryRecord) -> bool:
    """Whether the store holds exactly the entry this process built (same index and bytes)."""
    return found is not None and found.index == ours.index and found.data == ours.data


def _conflict(req: DrawRequest) -> AlreadyExists:
    return AlreadyExists(
        f"request_id {req.request_id!r} was already used with different parameters "
        "(kind, table_id, round_id, session_id or outcome parameters); the first outcome stands"
    )


def _replayed(receipt: Receipt) -> Receipt:
    return Receipt(
        index=receipt.index,
        entry=receipt.entry,
        leaf_hash=receipt.leaf_hash,
        inclusion_proof=receipt.inclusion_proof,
        tree_size=receipt.tree_size,
        checkpoint=receipt.checkpoint,
        replayed=True,
    )


def _record(req: DrawRequest, entry: LogEntry, data: bytes, commit_size: int) -> EntryRecord:
    return _new_record(
        entry.index, data, leaf_hash(data), req.client_id, req.request_id, req.digest,
        req.kind, req.table_id, req.round_id, req.session_id, entry.timestamp_ns, commit_size,
        entry.slot, entry.table_seq,
    )  # fmt: skip
