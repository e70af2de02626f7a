"""The log writer's sequencer: it decides a commit group against the stored log.

For each request, in order: idempotency (a request id already logged, or earlier in the group,
is answered with that entry, or ALREADY_EXISTS if its parameters differ), the round rules
(:mod:`rng_service.log.rounds`: a slot is filled once, the game's order, voided rounds), then
the draw from the generator and the entry at the next index (:mod:`rng_service.log.entry`,
format 2, with its place in its table's chain). The decisions (:func:`answered`,
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
from rng_service.sampling import RandomSource
from rng_service.storage.base import AppendBatch, EntryRecord, GroupState, LogStorage, SlotRecord
from rng_service.writer.columns import LookupIntegrityError, check_range, check_record
from rng_service.writer.integrator import PendingAppend
from rng_service.writer.queue import Pending
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
        #: requests, rounds and tables whose stored rows failed their check (RowChecks.checked)
        self.tainted = tainted
        self.next_index = size
        #: (client, request id) -> (digest, its place in the plan's new entries)
        self.seen: dict[tuple[str, str], tuple[bytes, int]] = {}
        self.encoded: list[bytes] = []  # the canonical bytes of the plan's new entries


class Sequencer:
    """Decides each group: reads what it needs of the store (one query), checks those rows
    (:class:`RowChecks`), and draws the new outcomes from ``generator``."""

    def __init__(
        self,
        *,
        storage: LogStorage,
        generator: GeneratorLike,
        clock: Clock,
        observer: AppendObserver | None,
    ) -> None:
        self._storage = storage
        self._generator = generator
        self._clock = clock
        self._gen_ref: GeneratorRef | None = None  # see _generator_ref
        self.rows = RowChecks(storage, observer)

    def plan(self, group: Sequence[Pending], size: int) -> Plan:
        """Decides the group against the log as stored at ``size`` entries, drawing the new
        outcomes: nothing is resolved here, because the transaction may still fail. The
        caller has caught the tree up to ``size`` and seals the plan (``Committer.seal``)."""
        plan = Plan()
        # One sequencing time per group, and one lookup of the store per group (group_state).
        now = self._clock.now_ns() // 1000 * 1000  # entries carry microseconds
        draft = Draft(size, now, format_time(now), *self.group_state(group))
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
        self, group: Sequence[Pending]
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
        whose rows fail their check against their signed bytes (:meth:`RowChecks.checked`)."""
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
        tainted, rows = self.rows.checked(stored, tables)
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


class RowChecks:
    """The stored rows a group relies on, checked against their signed bytes; remembers the
    head of each table's chain as this writer appended or checked it."""

    def __init__(self, storage: LogStorage, observer: AppendObserver | None) -> None:
        self._storage = storage
        self._observer = observer
        # The head (table_seq, index) of each (client, table) chain as this writer appended
        # it or last checked its row against its signed bytes (_checked_heads).
        self.known_heads: dict[tuple[str, str], tuple[int, int]] = {}

    def appended(self, plan: Plan) -> None:
        """The chains' heads after a stored group: its new entries."""
        for _, entry in plan.new:
            self.known_heads[(entry.client, entry.table_id)] = (entry.table_seq or 1, entry.index)

    def checked(
        self, stored: GroupState, tables: Mapping[tuple[str, str], None]
    ) -> tuple[dict[tuple[str, ...], IntegrityError], dict[int, bytes]]:
        """The stored rows the group relies on, checked against their signed bytes
        (:func:`rng_service.writer.columns.check_record`), so that an edit of the live database's
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
                tainted[("request", client, request_id)] = edited(
                    e, "a retry of this request", self._observer
                )
        rows: dict[int, bytes] = {}
        for slot in stored.slots:
            key = ("round", slot.client_id, slot.table_id, slot.round_id)
            if key in tainted or (slot.slot is not None and rounds.is_lab_slot(slot.slot)):
                continue  # a lab entry (batch, stream) is no slot of a round: never relied on
            try:
                rows[slot.index] = self._checked_slot(slot)
            except LookupIntegrityError as e:
                tainted[key] = edited(e, "this round", self._observer)
        self._checked_heads(stored, tables, tainted)
        return tainted, rows

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
        known_heads = self.known_heads
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
                tainted[("table", *table)] = edited(e, "this table's next entry", self._observer)
                continue
            if len(known_heads) >= _KNOWN_HEADS:
                known_heads.clear()
            known_heads[table] = now


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
    """The request's log entry at the next index: its place in its table's chain, the
    slot it fills for later requests of the group, and its canonical bytes."""
    req = p.request
    index = draft.next_index
    chain = (req.client_id, req.table_id)
    head = draft.chains.get(chain)
    table_seq = 1 if head is None else head[0] + 1
    entry = new_entry(
        index, draft.now, req.kind, params, outcome, req.client_id, req.table_id,
        req.round_id, req.session_id, req.request_id, gen, req.profile_sha256, slot_name,
        table_seq, None if head is None else head[1], WRITE_VERSION, draft.time_text,
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
#: Table heads kept by :meth:`RowChecks._checked_heads` (forgotten all at once beyond it).
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
