"""The log writer's sequencer: it decides a commit group against the stored log.

For each request, in order: idempotency (a request id already logged, or earlier in the group,
is answered with that entry, or ALREADY_EXISTS if its parameters differ), the round rules
(:mod:`rng_service.log.rounds`: a slot is filled once, the game's order, voided rounds), then
the draw from the generator and the entry at the next index (:mod:`rng_service.log.entry`,
format 3, with its place in its table's chain and the root of the table map after it, from the
writer's committed map: :mod:`rng_service.writer.heads`). The decisions (:func:`answered`,
:func:`check_round`, :func:`add_entry`) are pure functions of the group's :class:`Draft`;
:class:`Sequencer` adds the one read of the store per group and the generator.
:class:`RowChecks` checks every stored row the group relies on against its signed bytes
(:mod:`rng_service.writer.columns`), so that an edited database cannot make it draw a game
event twice. Nothing here is stored or answered: the committer and the appender do that.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from rng_service.clock import Clock
from rng_service.errors import AlreadyExists, IntegrityError, RngServiceError, RoundRefused
from rng_service.log import rounds
from rng_service.log.entry import WRITE_VERSION, GeneratorRef, JsonValue, LogEntry, format_time
from rng_service.log.table_map import TableMap
from rng_service.sampling import RandomSource
from rng_service.storage.base import AppendBatch, EntryRecord, GroupState, LogStorage, SlotRecord
from rng_service.writer.columns import LookupIntegrityError, check_range, check_record
from rng_service.writer.heads import WriterMap, load_map
from rng_service.writer.integrator import PendingAppend
from rng_service.writer.queue import Pending
from rng_service.writer.tree import MerkleTree
from rng_service.writer.values import AppendObserver, DrawRequest, GeneratorLike, new_entry

__all__ = [
    "Draft",
    "Plan",
    "RowChecks",
    "Sequencer",
    "add_entry",
    "answered",
    "check_round",
    "conflict",
    "edited",
]

_log = logging.getLogger("rng_service.log.appender")  # the JSON log's logger field, unchanged


@dataclass(slots=True)
class Plan:
    """One group decided against the stored log (see ``Sequencer.plan``)."""

    new: list[tuple[Pending, LogEntry]] = field(default_factory=list)
    records: list[EntryRecord] = field(default_factory=list)
    followers: list[tuple[Pending, int]] = field(default_factory=list)  # same id earlier
    replays: list[tuple[Pending, EntryRecord]] = field(default_factory=list)
    failed: list[tuple[Pending, RngServiceError]] = field(default_factory=list)
    # Round refusals caused by an entry of this group: they stand only if it commits.
    deferred: list[tuple[Pending, RngServiceError]] = field(default_factory=list)
    draft: Draft | None = None  # what the plan was decided from (Committer.seal)
    pending: PendingAppend | None = None
    batch: AppendBatch | None = None


class Draft:
    """What ``Sequencer.plan`` works from while it decides one group: the stored log at
    ``size`` entries (``Sequencer.group_state``) and what the group has added so far."""

    __slots__ = (
        "chains",
        "encoded",
        "logged",
        "moved",
        "next_index",
        "now",
        "repeated",
        "seen",
        "size",
        "state",
        "table_map",
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
        table_map: TableMap,
    ) -> None:
        self.size = size
        self.now = now  # the group's one sequencing time (microseconds, in nanoseconds)
        self.time_text = time_text
        self.logged = logged  # request ids already in the log
        self.state = state  # the filled slots of the group's rounds
        # (client, table) -> (table_seq, index) of the chain's last entry: the committed map's
        self.chains = chains
        self.repeated = repeated  # rounds that more than one request of the group is for
        #: requests, rounds and tables whose stored rows failed their check (RowChecks.checked)
        self.tainted = tainted
        self.next_index = size
        #: (client, request id) -> (digest, its place in the plan's new entries)
        self.seen: dict[tuple[str, str], tuple[bytes, int]] = {}
        self.encoded: list[bytes] = []  # the canonical bytes of the plan's new entries
        #: The committed table map (a copy, O(1)) with the group's heads set: each new entry
        #: carries its root after its own head (entry format 3).
        self.table_map = table_map
        self.moved: dict[tuple[str, str], tuple[int, int]] = {}  # chain -> (index, seq)


class Sequencer:
    """Decides each group: reads what it needs of the store (one query), checks those rows
    (:class:`RowChecks`), and draws the new outcomes from ``generator``."""

    def __init__(
        self,
        *,
        storage: LogStorage,
        tree: MerkleTree,
        generator: GeneratorLike,
        clock: Clock,
        observer: AppendObserver | None,
    ) -> None:
        self._storage = storage
        self._tree = tree
        self._generator = generator
        self._clock = clock
        self._gen_ref: GeneratorRef | None = None  # see _generator_ref
        self.rows = RowChecks(storage, observer)
        #: The committed table map (``rng_service.writer.heads``), loaded by :meth:`load_map`.
        self.map: WriterMap | None = None

    def load_map(self) -> WriterMap:
        """The writer's table map from the store, checked against the root signed in the
        newest entry (``rng_service.writer.heads.load_map``): IntegrityError if it is not."""
        self.map = load_map(self._storage, self._tree)
        return self.map

    def committed(self, plan: Plan) -> None:
        """A stored group: its draft map becomes the committed one."""
        draft = plan.draft
        if draft is not None and plan.new and self.map is not None:
            self.map.adopt(draft.size, draft.table_map, plan.records)

    def plan(self, group: Sequence[Pending], size: int) -> Plan:
        """Decides the group against the log as stored at ``size`` entries, drawing the new
        outcomes: nothing is resolved here, because the transaction may still fail. The
        caller has caught the tree up to ``size`` and seals the plan (``Committer.seal``)."""
        plan = Plan()
        writer_map = self.map if self.map is not None else self.load_map()
        writer_map.catch_up(size)  # another writer's entries (the tree is caught up already)
        # One sequencing time per group, and one lookup of the store per group (group_state).
        now = self._clock.now_ns() // 1000 * 1000  # entries carry microseconds
        draft = Draft(
            size, now, format_time(now), *self.group_state(group, writer_map),
            writer_map.map.copy(),
        )  # fmt: skip
        for p in group:
            if answered(plan, draft, p):
                continue
            checked = check_round(plan, draft, p)
            if checked is None:
                continue
            drawn = self._draw(plan, p, checked[1])
            if drawn is not None:
                add_entry(plan, draft, p, checked[0], *drawn)
        plan.draft = draft
        return plan

    def _draw(
        self, plan: Plan, p: Pending, links: Mapping[str, JsonValue]
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

    def group_state(
        self, group: Sequence[Pending], writer_map: WriterMap
    ) -> tuple[
        dict[tuple[str, str], EntryRecord],
        dict[tuple[str, str, str], dict[str, rounds.Filled]],
        dict[tuple[str, str], tuple[int, int]],
        set[tuple[str, str, str]],
        dict[tuple[str, ...], IntegrityError],
    ]:
        """What the group needs of the stored log, in ONE query (``LogStorage.group_state``):
        the entries of its request ids already logged (by any replica) and the filled slots of
        its rounds; the last entry (table_seq, index) of its tables' chains comes from the
        committed table map, not from the columns. Also the rounds that more than one request
        of the group is for, and the requests, rounds and tables whose rows fail their check
        against their signed bytes or against the committed chains (:meth:`RowChecks.checked`)."""
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
        stored = self._storage.group_state(list(requests), list(wanted), ())
        tainted, rows = self.rows.checked(stored, wanted, writer_map)
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
        heads = writer_map.heads
        chains = {t: (heads[t][1], heads[t][0]) for t in tables if t in heads}
        repeated = {key for key, n in wanted.items() if n > 1}
        return stored.logged, state, chains, repeated, tainted


class RowChecks:
    """The stored rows a group relies on, checked against their signed bytes and against the
    committed table chains (the writer's table map)."""

    def __init__(self, storage: LogStorage, observer: AppendObserver | None) -> None:
        self._storage = storage
        self._observer = observer

    def checked(
        self,
        stored: GroupState,
        rounds_wanted: Mapping[tuple[str, str, str], int],
        writer_map: WriterMap,
    ) -> tuple[dict[tuple[str, ...], IntegrityError], dict[int, bytes]]:
        """The stored rows the group relies on, checked (docs/security.md, "An edited
        database"), so that an edit of the live database's columns cannot make the sequencer
        draw a game event again:

        - every logged entry of its request ids against its signed bytes
          (:func:`rng_service.writer.columns.check_record`; its bytes are in the row);
        - every row of its rounds' filled slots (read by index: a round with nothing in it,
          the common case, reads nothing) against its signed bytes (so it is of its table's
          committed chain);
        - each round's answer against its table's committed chain: the chain's newest entries
          that are of this round (its tail, walked back from the committed head by the signed
          ``table_prev``) must all be in it. A round edited out of the lookup while it is the
          newest of its table is refused; one that is not (later rounds on the table follow
          it) is not seen here: the live dispute walks the whole chain.

        Returns the failures by ``("request", client, request_id)``, ``("round", client,
        table, round)`` and ``("table", client, table)``, and the checked rows' bytes by
        index."""
        tainted: dict[tuple[str, ...], IntegrityError] = {}
        for (client, request_id), rec in stored.logged.items():
            try:
                check_record(rec)
            except LookupIntegrityError as e:
                tainted[("request", client, request_id)] = edited(
                    e, "a retry of this request", self._observer
                )
        rows, answered = self._checked_slots(stored, tainted)
        for round_key in rounds_wanted:
            if ("round", *round_key) not in tainted:
                self._check_tail(round_key, answered.get(round_key, set()), writer_map, tainted)
        return tainted, rows

    def _checked_slots(
        self, stored: GroupState, tainted: dict[tuple[str, ...], IntegrityError]
    ) -> tuple[dict[int, bytes], dict[tuple[str, str, str], set[int]]]:
        """The bytes of the rounds' filled slots by index (each checked; a failure goes into
        ``tainted``), and the indexes the round lookup answered for each round."""
        rows: dict[int, bytes] = {}
        answered: dict[tuple[str, str, str], set[int]] = {}
        for slot in stored.slots:
            key = ("round", slot.client_id, slot.table_id, slot.round_id)
            answered.setdefault((slot.client_id, slot.table_id, slot.round_id), set()).add(
                slot.index
            )
            if key in tainted or (slot.slot is not None and rounds.is_lab_slot(slot.slot)):
                continue  # a lab entry (batch, stream) is no slot of a round: never relied on
            try:
                rows[slot.index] = self._checked_slot(slot)
            except LookupIntegrityError as e:
                tainted[key] = edited(e, "this round", self._observer)
        return rows, answered

    def _check_tail(
        self,
        round_key: tuple[str, str, str],
        found: set[int],
        writer_map: WriterMap,
        tainted: dict[tuple[str, ...], IntegrityError],
    ) -> None:
        """The round's answer (``found``) against its table's committed chain: the chain's
        newest entries of this round must all be in it; a failure goes into ``tainted``."""
        chain = (round_key[0], round_key[1])
        try:
            tail = writer_map.tail(chain)
        except IntegrityError as e:
            tainted[("table", *chain)] = edited(
                _as_lookup(e, writer_map, chain), "this table's next entry", self._observer
            )
            return
        if tail is None or tail.round_id != round_key[2]:
            return
        missing = [i for i in tail.indexes if i not in found]
        if missing:
            tainted[("round", *round_key)] = edited(
                LookupIntegrityError(
                    f"round {round_key[2]!r} of table {round_key[1]!r} of client "
                    f"{round_key[0]!r}: the table's committed chain ends with entries "
                    f"{sorted(tail.indexes)} of this round, but the store's round lookup "
                    f"does not return entry {missing[-1]}: its columns were changed",
                    check="chain",
                    index=missing[-1],
                ),
                "this round",
                self._observer,
            )

    def _checked_slot(self, slot: SlotRecord) -> bytes:
        """The bytes of a filled slot's row, after checking that they are of that round and
        slot. Its signed client and table make it a member of that table's committed chain:
        the row is read by an index the tree covers (a row beyond it would make the store
        larger than the tree, which the writer refuses before planning)."""
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


def _as_lookup(
    e: IntegrityError, writer_map: WriterMap, chain: tuple[str, str]
) -> LookupIntegrityError:
    """``e`` (a failure reading a chain's committed entries) as a LookupIntegrityError."""
    if isinstance(e, LookupIntegrityError):
        return e
    head = writer_map.heads.get(chain)
    return LookupIntegrityError(str(e), check="node", index=head[0] if head else 0)


def answered(plan: Plan, draft: Draft, p: Pending) -> bool:
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
            plan.failed.append((p, conflict(req)))
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
        plan.failed.append((p, conflict(req)))
    else:
        plan.replays.append((p, existing))
    return True


def check_round(plan: Plan, draft: Draft, p: Pending) -> tuple[str, Mapping[str, JsonValue]] | None:
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


def add_entry(
    plan: Plan,
    draft: Draft,
    p: Pending,
    slot_name: str,
    params: Mapping[str, JsonValue],
    outcome: Mapping[str, JsonValue],
    gen: GeneratorRef,
) -> None:
    """The request's log entry at the next index: its place in its table's chain, the root
    of the table map with its head (format 3), the slot it fills for later requests of the
    group, and its canonical bytes."""
    req = p.request
    index = draft.next_index
    chain = (req.client_id, req.table_id)
    head = draft.chains.get(chain)
    table_seq = 1 if head is None else head[0] + 1
    table_map = draft.table_map
    table_map.set(req.client_id, req.table_id, index, table_seq)
    entry = new_entry(
        index, draft.now, req.kind, params, outcome, req.client_id, req.table_id,
        req.round_id, req.session_id, req.request_id, gen, req.profile_sha256, slot_name,
        table_seq, None if head is None else head[1], WRITE_VERSION, draft.time_text,
        table_map.root() if WRITE_VERSION >= 3 else None,  # (a test writes format 2 as before)
    )  # fmt: skip
    draft.chains[chain] = (table_seq, index)
    draft.moved[chain] = (index, table_seq)
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


def edited(e: LookupIntegrityError, what: str, observer: AppendObserver | None) -> IntegrityError:
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
    if observer is not None:
        observer.integrity_error("sequencer", e.check)
    return IntegrityError(
        f"{e}. The sequencer relies on that row for {what}, so nothing was drawn: the log "
        "store was edited under the running service (rng-service check-store names every "
        "such row); stop and investigate"
    )


def conflict(req: DrawRequest) -> AlreadyExists:
    return AlreadyExists(
        f"request_id {req.request_id!r} was already used with different parameters "
        "(kind, table_id, round_id, session_id or outcome parameters); the first outcome stands"
    )


_NO_LINKS: Mapping[str, JsonValue] = MappingProxyType({})


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
