"""Answering a dispute about game rounds from signed bytes: every outcome of the rounds, and
nothing of their table missing between the round before and the round after.

Owns :func:`judge_dispute` (docs/auditing.md, "4b. Table histories and disputes"): given the
proven entries a lookup found for each disputed round (58 Pa. Code 641a.11(d), 643a.11(h): a
round can be rebuilt) and the proven stretch of the table's chain around them
(docs/log-format.md, "Slots and chains"), the stretch is unbroken, every entry of a disputed
round or session in it was found, each slot filled once, lab entries named apart. What a
lookup cannot show (an entry far outside the stretch) an export does (``--against``). Pure:
entries in, a :class:`DisputeReport` or a
:class:`~rng_service.audit.results.VerificationFailure` out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rng_service.audit.history import check_history
from rng_service.audit.verify import VerificationFailure
from rng_service.log import rounds as round_rules
from rng_service.log.entry import LogEntry

__all__ = ["DisputeReport", "RoundFinding", "judge_dispute", "span_of"]


@dataclass(frozen=True, slots=True)
class RoundFinding:
    """One disputed round: its entries in log order (each fills one slot of the round), and the
    lab entries (batch, stream: slots ``lab/<request id>`` of their own) that name its table and
    round id, which are none of its outcomes."""

    round_id: str
    entries: tuple[LogEntry, ...]
    lab: tuple[LogEntry, ...] = ()

    @property
    def voids(self) -> tuple[LogEntry, ...]:
        return tuple(e for e in self.entries if e.kind == "round_void")

    @property
    def chained(self) -> tuple[LogEntry, ...]:
        """Its entries and lab entries that are in the table's chain (format 2), in log order."""
        both = sorted((*self.entries, *self.lab), key=lambda e: e.index)
        return tuple(e for e in both if e.table_seq is not None)


def _is_lab(entry: LogEntry) -> bool:
    if entry.slot is None:  # format 1: a lab kind filled no slot
        return entry.kind in round_rules.LAB_KINDS
    return round_rules.is_lab_slot(entry.slot)


@dataclass(frozen=True, slots=True)
class DisputeReport:
    """What :func:`judge_dispute` established."""

    client: str
    table_id: str
    rounds: tuple[RoundFinding, ...]
    span: tuple[LogEntry, ...]
    """The table's chain from ``previous`` (or the rounds' first entry) to ``following`` (or
    the rounds' last entry), unbroken."""
    previous: LogEntry | None
    """The table's entry just before the rounds' first one; None when that is the chain's first
    entry (seq 1)."""
    following: LogEntry | None
    """The table's entry just after the rounds' last one; None when the log gave none (the
    rounds hold the table's latest entries as of the checkpoint)."""
    others: tuple[LogEntry, ...]
    """Entries of the table between the rounds' first and last entry that are of other rounds."""
    sessions: tuple[str, ...] = ()
    """The disputed session ids (their rounds are among ``rounds``)."""


def span_of(found: Mapping[str, Sequence[LogEntry]]) -> tuple[int, int] | None:
    """The (first, last) table_seq to fetch for the rounds' entries ``found``: one before the
    first and one after the last; None when no found entry is in a chain (format 1 only)."""
    seqs = [e.table_seq for entries in found.values() for e in entries if e.table_seq]
    if not seqs:
        return None
    return max(1, min(seqs) - 1), max(seqs) + 1


def _check_slots_once(
    client: str, table_id: str, round_id: str, entries: Sequence[LogEntry]
) -> None:
    """Every outcome fills one slot of its round at most once (docs/outcomes-api.md, "Rounds
    and slots"): a slot filled twice is a game event drawn twice, whatever the chain says."""
    first: dict[str, LogEntry] = {}
    for entry in entries:
        if entry.slot is None:  # format 1: no slot was recorded
            continue
        earlier = first.setdefault(entry.slot, entry)
        if earlier is not entry:
            raise VerificationFailure(
                f"round {round_id!r} of table {table_id!r} (client {client!r}) has its slot "
                f"{entry.slot!r} filled twice: log index {earlier.index} and log index "
                f"{entry.index}. A game event is drawn once: the later entry is a second draw "
                "that the service should have refused (its store was edited or written around "
                "it); the first one is the round's outcome",
                index=entry.index,
            )


def judge_dispute(
    *,
    client: str,
    table_id: str,
    found: Mapping[str, Sequence[LogEntry]],
    span: Sequence[LogEntry],
    sessions: Sequence[str] = (),
) -> DisputeReport:
    """Checks the found entries of the disputed rounds (round id -> entries) against the
    table's chain ``span`` (fetched from :func:`span_of`'s first seq on); see the module
    docstring. ``sessions``: disputed session ids whose rounds are among ``found``; an entry
    of one of them in the chain that was not found is hidden too. Raises
    :class:`VerificationFailure` naming the entry at fault."""
    rounds = [
        _round_finding(client, table_id, round_id, entries) for round_id, entries in found.items()
    ]
    bounds = span_of(found)
    if bounds is None:  # format 1 only: in no chain
        return DisputeReport(
            client, table_id, tuple(rounds), (), None, None, (), tuple(dict.fromkeys(sessions))
        )
    first, _ = bounds
    report = check_history(span, client=client, table_id=table_id, first_seq=first)
    chain = report.entries
    by_seq = {e.table_seq: e for e in chain}
    _check_against_chain(rounds, chain, by_seq, sessions)
    lo = min(e.table_seq for r in rounds for e in r.chained if e.table_seq is not None)
    hi = max(e.table_seq for r in rounds for e in r.chained if e.table_seq is not None)
    previous = by_seq.get(lo - 1) if lo > 1 else None
    following = by_seq.get(hi + 1)
    if lo > 1 and previous is None:
        raise VerificationFailure(
            f"the table's chain was to start at seq {first} (before the rounds' first entry, "
            f"seq {lo}) but does not hold it",
            index=0,
        )
    asked = {r.round_id for r in rounds}
    others = tuple(
        e for e in chain if e.table_seq is not None and lo < e.table_seq < hi
        and e.round_id not in asked
    )  # fmt: skip
    span_entries = tuple(
        e for e in chain if e.table_seq is not None and lo - 1 <= e.table_seq <= hi + 1
    )
    return DisputeReport(
        client=client,
        table_id=table_id,
        rounds=tuple(rounds),
        span=span_entries,
        previous=previous,
        following=following,
        others=others,
        sessions=tuple(dict.fromkeys(sessions)),
    )


def _round_finding(
    client: str, table_id: str, round_id: str, entries: Sequence[LogEntry]
) -> RoundFinding:
    """The found entries of one disputed round: each of that round, at least one that is no
    lab entry, each slot once; else :class:`VerificationFailure`."""
    for entry in entries:
        if (entry.client, entry.table_id, entry.round_id) != (client, table_id, round_id):
            raise VerificationFailure(
                f"log index {entry.index} was returned for round {round_id!r} of table "
                f"{table_id!r} (client {client!r}), but its signed bytes are of round "
                f"{entry.round_id!r} of table {entry.table_id!r} (client {entry.client!r})",
                index=entry.index,
            )
    if not entries:
        raise VerificationFailure(
            f"round {round_id!r} of table {table_id!r} (client {client!r}) has no entry in "
            "the log: nothing of it can be answered. Check the client, table and round "
            "ids; a round whose stored lookup columns were changed is not found either "
            "(rng-service check-store names such rows; a dispute --against a full export "
            "finds entries by their signed bytes)"
        )
    ordered = tuple(sorted(entries, key=lambda e: e.index))
    own = tuple(e for e in ordered if not _is_lab(e))
    if not own:
        raise VerificationFailure(
            f"round {round_id!r} of table {table_id!r} (client {client!r}) has no outcome "
            "in the log: the only entries naming it are lab entries (log index "
            f"{', '.join(str(e.index) for e in ordered)}: batch or stream draws in slots of "
            "their own), which are no round's outcomes"
        )
    _check_slots_once(client, table_id, round_id, own)
    return RoundFinding(round_id, own, tuple(e for e in ordered if _is_lab(e)))


def _check_against_chain(
    rounds: Sequence[RoundFinding],
    chain: Sequence[LogEntry],
    by_seq: Mapping[int | None, LogEntry],
    sessions: Sequence[str],
) -> None:
    """Every found entry is the chain's entry at its seq, and the chain holds no entry of a
    disputed round or session that the lookups did not return (the store hid it)."""
    found_at = {e.index: e for r in rounds for e in (*r.entries, *r.lab)}
    asked = {r.round_id for r in rounds}
    for finding in rounds:
        for entry in finding.chained:
            held = by_seq.get(entry.table_seq)
            if held is None or held.index != entry.index:
                raise VerificationFailure(
                    f"log index {entry.index} (seq {entry.table_seq} of round "
                    f"{finding.round_id!r}) was found, but the table's chain holds "
                    + ("no such seq" if held is None else f"log index {held.index} at that seq"),
                    index=entry.index,
                )
    for entry in chain:
        if entry.round_id in asked and entry.index not in found_at:
            raise VerificationFailure(
                f"log index {entry.index} (seq {entry.table_seq} of the table's chain) is of "
                f"round {entry.round_id!r}, but the lookup of that round did not return it: "
                "the store hid it (its lookup columns were changed)",
                index=entry.index,
            )
        if entry.session_id and entry.session_id in sessions and entry.index not in found_at:
            raise VerificationFailure(
                f"log index {entry.index} (seq {entry.table_seq} of the table's chain, round "
                f"{entry.round_id!r}) is of session {entry.session_id!r}, but the lookup of "
                "that session did not return it: the store hid it (its lookup columns were "
                "changed)",
                index=entry.index,
            )
