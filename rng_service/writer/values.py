"""What the log writer takes and gives: a :class:`DrawRequest` in, an :class:`AppendResult`
(the log entry and its receipt) out, and the constructors of the frozen objects it makes for
every outcome (the entry, its stored record, its receipt, the result).

The constructors set the slots directly (:mod:`rng_service.writer.frozen_setters`): the same
objects as the classes' own ``__init__`` for about half the cost (docs/performance.md, row
"log writer's per-outcome constructors"). Entry bytes are the format of
:mod:`rng_service.log.entry`; receipts are :mod:`rng_service.log.receipt`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from rng_service.log.entry import GeneratorRef, JsonValue, LogEntry, request_digest
from rng_service.log.merkle import leaf_hash
from rng_service.log.receipt import Receipt
from rng_service.sampling import RandomSource
from rng_service.storage.base import EntryRecord
from rng_service.writer.frozen_setters import slot_setters as _setters

__all__ = [
    "AppendObserver",
    "AppendResult",
    "DrawFn",
    "DrawRequest",
    "GeneratorLike",
    "LinkFn",
    "draw_request",
    "new_entry",
    "new_receipt",
    "new_record",
    "new_result",
    "record_of",
    "replayed",
]

_new = object.__new__
_ENTRY = _setters(
    LogEntry,
    "index timestamp_ns kind params outcome client table_id round_id session_id request_id "
    "generator profile_sha256 slot table_seq table_prev table_map version time_text",
)


def new_entry(
    index: int, timestamp_ns: int, kind: str, params: Mapping[str, JsonValue],
    outcome: Mapping[str, JsonValue], client: str, table_id: str, round_id: str,
    session_id: str, request_id: str, generator: GeneratorRef, profile_sha256: str,
    slot: str | None, table_seq: int | None, table_prev: int | None, version: int,
    time_text: str, table_map: bytes | None = None,
) -> LogEntry:  # fmt: skip
    """``LogEntry(...)`` with every field (``_setters``; ``table_map`` last here, format 3's)."""
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
    s[15](self, table_map)
    s[16](self, version)
    s[17](self, time_text)
    return self


_RECORD = _setters(
    EntryRecord,
    "index data leaf_hash client_id request_id request_digest kind table_id round_id "
    "session_id timestamp_ns commit_size slot table_seq",
)


def new_record(
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


def new_receipt(
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


def new_result(entry: LogEntry, receipt: Receipt) -> AppendResult:
    """``AppendResult(entry, receipt)`` (``_setters``)."""
    self: AppendResult = _new(AppendResult)
    _RESULT[0](self, entry)
    _RESULT[1](self, receipt)
    return self


def replayed(receipt: Receipt) -> Receipt:
    return Receipt(
        index=receipt.index,
        entry=receipt.entry,
        leaf_hash=receipt.leaf_hash,
        inclusion_proof=receipt.inclusion_proof,
        tree_size=receipt.tree_size,
        checkpoint=receipt.checkpoint,
        replayed=True,
    )


def record_of(req: DrawRequest, entry: LogEntry, data: bytes, commit_size: int) -> EntryRecord:
    return new_record(
        entry.index, data, leaf_hash(data), req.client_id, req.request_id, req.digest,
        req.kind, req.table_id, req.round_id, req.session_id, entry.timestamp_ns, commit_size,
        entry.slot, entry.table_seq,
    )  # fmt: skip


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
