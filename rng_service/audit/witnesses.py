"""Witness cosignatures as auditors check them: ``--witness KEY ... --min-witnesses K``.

Owns :func:`check_witnesses` (docs/auditing.md, "6. Witnesses"; C2SP tlog-cosignature and
tlog-witness): every cosignature line of a given witness key must verify and not be from the
future (beyond :data:`MAX_CLOCK_SKEW_SECONDS`); a checkpoint is witnessed by K distinct keys
at the K-th newest of their times; with ``cover`` a witnessed checkpoint must cover that tree
size (an export's newest entry), and with ``max_age_seconds`` be that fresh. What it proves:
as far as K witnesses saw until then, the log was no longer. Pure: notes and keys in, a
:class:`WitnessReport` or a :class:`WitnessFailure` (an integrity error) out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rng_service.errors import IntegrityError
from rng_service.log.cosignature import (
    CosignatureVerifier,
    VerifiedCosignature,
    verify_cosignatures,
)
from rng_service.log.note import Checkpoint, parse_note

__all__ = [
    "MAX_CLOCK_SKEW_SECONDS",
    "WitnessFailure",
    "WitnessReport",
    "WitnessedCheckpoint",
    "check_witnesses",
]

#: A cosignature time further in the future than this (by the verifier's clock) is refused.
MAX_CLOCK_SKEW_SECONDS = 300


class WitnessFailure(IntegrityError):
    """A witness cosignature does not verify, or the witness policy is not met."""


@dataclass(frozen=True, slots=True)
class WitnessedCheckpoint:
    """A checkpoint with its valid cosignatures (newest first, one per witness key)."""

    source: str
    size: int
    cosignatures: tuple[VerifiedCosignature, ...]

    def time_for(self, k: int) -> int | None:
        """The K-th newest cosignature time, or None with fewer than ``k`` witnesses."""
        if k < 1 or len(self.cosignatures) < k:
            return None
        return sorted((c.timestamp for c in self.cosignatures), reverse=True)[k - 1]


@dataclass(frozen=True, slots=True)
class WitnessReport:
    required: int
    checkpoints: tuple[WitnessedCheckpoint, ...]
    """Every checked checkpoint that carries at least one valid cosignature."""
    best: WitnessedCheckpoint | None
    """The witnessed checkpoint (>= ``required`` witnesses) with the latest K-th time."""
    as_of: int | None
    """That K-th newest cosignature time of ``best`` (POSIX seconds)."""

    def covering(self, size: int) -> WitnessedCheckpoint | None:
        """Of the checkpoints with ``required`` (>= 1) witnesses and tree size >= ``size``, the
        one with the latest ``required``-th cosignature time; None if there is none."""
        best: WitnessedCheckpoint | None = None
        best_key: tuple[int, int] | None = None
        for c in self.checkpoints:
            t = c.time_for(self.required)
            if t is not None and c.size >= size and (best_key is None or (t, c.size) > best_key):
                best, best_key = c, (t, c.size)
        return best

    @property
    def lines(self) -> list[str]:
        """Each cosignature, for the command's output."""
        out = []
        for c in self.checkpoints:
            for v in c.cosignatures:
                out.append(
                    f"cosigned: {c.source} (tree size {c.size}) by {v.witness.name}"
                    f"+{v.witness.key_id:08x} at {_utc(v.timestamp)} (time {v.timestamp})"
                )
        return out


def _utc(timestamp: int) -> str:
    import datetime

    try:
        return datetime.datetime.fromtimestamp(timestamp, tz=datetime.UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
    except (OverflowError, OSError, ValueError):
        return "(out of range)"


def _age(seconds: int) -> str:
    seconds = abs(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def _ordinal(k: int) -> str:
    return f"{k}{'st' if k == 1 else 'nd' if k == 2 else 'rd' if k == 3 else 'th'}"


def _uncovered(
    found: Sequence[WitnessedCheckpoint],
    witnesses: Sequence[CosignatureVerifier],
    k: int,
    cover: int,
    newest_entry_time: int | None,
) -> str:
    """What no checkpoint with ``k`` witnesses covers: the entries, how many witnesses the
    checkpoints covering them carry, and the newest witnessed checkpoint against the newest
    entry."""
    witnessed = [c for c in found if c.time_for(k) is not None]
    newest = max(witnessed, key=lambda c: (c.size, c.time_for(k) or 0), default=None)
    start = newest.size if newest is not None else 0
    last = cover - 1
    span = f"entry {last}" if start >= last else f"entries {start}-{last}"
    most = max((len(c.cosignatures) for c in found if c.size >= cover), default=0)
    keys = f"{len(witnesses)} key{'s' if len(witnesses) != 1 else ''}"
    by = f"none of the {keys}" if most == 0 else f"only {most} of the {keys} ({k} needed)"
    if newest is None:
        most_any = max((len(c.cosignatures) for c in found), default=0)
        names = ", ".join(f"{w.name}+{w.key_id:08x}" for w in witnesses)
        tail = (
            f"no checkpoint carries cosignatures of {k} of the given witnesses ({names}); the "
            f"most any has is {most_any}"
        )
    else:
        t = newest.time_for(k) or 0
        tail = f"the newest witnessed checkpoint is of size {newest.size}, "
        if newest_entry_time is None:
            tail += f"its {_ordinal(k)} newest cosignature of {_utc(t)}"
        elif newest_entry_time >= t:
            tail += f"{_age(newest_entry_time - t)} older than the newest entry"
        else:
            tail += f"cosigned {_age(t - newest_entry_time)} after the newest entry was logged"
    return f"{span}: witnessed by {by}; {tail}"


def check_witnesses(
    notes: Iterable[tuple[str, bytes]],
    witnesses: Sequence[CosignatureVerifier],
    *,
    min_witnesses: int,
    now: int,
    cover: int | None = None,
    cover_what: str | None = None,
    newest_entry_time: int | None = None,
    max_age_seconds: int | None = None,
) -> WitnessReport:
    """Applies the module's rule to (source, signed checkpoint note) pairs whose log signature
    the caller has verified. Raises :class:`WitnessFailure` for a bad or future cosignature, or
    when no checkpoint of at least ``cover`` entries (any size if None) has ``min_witnesses``
    (>= 1) cosignatures (the message names the uncovered entries; ``cover_what`` says what had
    to be covered, ``newest_entry_time`` the newest entry's time in POSIX seconds, if known),
    or when that checkpoint's time is more than ``max_age_seconds`` before ``now``."""
    found: list[WitnessedCheckpoint] = []
    for source, note in notes:
        parsed = parse_note(note)
        size = Checkpoint.parse(parsed.text).size
        try:
            valid = verify_cosignatures(parsed, witnesses)
        except IntegrityError as e:
            raise WitnessFailure(f"{source}: {e}") from e
        for v in valid:
            if v.timestamp > now + MAX_CLOCK_SKEW_SECONDS:
                raise WitnessFailure(
                    f"{source}: the cosignature of witness {v.witness.name} is dated "
                    f"{_utc(v.timestamp)}, in the future (more than "
                    f"{MAX_CLOCK_SKEW_SECONDS} s after this machine's clock)"
                )
        if valid:
            found.append(WitnessedCheckpoint(source, size, tuple(valid)))
    report = WitnessReport(min_witnesses, tuple(found), None, None)
    best = report.covering(0 if cover is None else cover)
    if min_witnesses >= 1 and best is None:
        what = "" if cover_what is None else f"{cover_what} is not witnessed yet: "
        raise WitnessFailure(
            what
            + _uncovered(found, witnesses, min_witnesses, max(cover or 0, 1), newest_entry_time)
            + ". Without them nothing shows that the log was not cut back or forked there "
            '(docs/auditing.md, "Witnesses"); an export to verify with witnesses ends at a '
            "witnessed checkpoint: rng-audit export --witnessed"
        )
    as_of = None if best is None else best.time_for(min_witnesses)
    too_old = max_age_seconds is not None and as_of is not None and now - as_of > max_age_seconds
    if best is not None and as_of is not None and max_age_seconds is not None and too_old:
        raise WitnessFailure(
            f"{best.source} (tree size {best.size}) is witnessed as of {_utc(as_of)} (its "
            f"{_ordinal(min_witnesses)} newest cosignature), {_age(now - as_of)} ago "
            f"({now - as_of} s): older than --max-witness-age allows ({max_age_seconds} s). "
            f"The witnesses have not "
            f"vouched for this log since; a fresher export or a later witnessed checkpoint "
            f"is needed"
        )
    return WitnessReport(min_witnesses, tuple(found), best, as_of)
