"""Witness cosignatures as auditors check them: ``--witness KEY ... --min-witnesses K``.

Pure: signed notes and keys in, a :class:`WitnessReport` out. A C2SP tlog-cosignature
``cosignature/v1`` is "a statement that, as of the specified time, the consistent tree head with
the largest size the cosigner has observed for the log identified by the origin line has the
specified root hash", and a C2SP tlog-witness witness never cosigns a checkpoint smaller than, or
inconsistent with, one it cosigned before. So a checkpoint cosigned by a witness at time T shows
that, as far as that witness saw until T, the log was no longer than that checkpoint. That is
what an export or a receipt cannot show by itself (docs/auditing.md, "Witnesses").

The rule (:func:`check_witnesses`), with K = ``min_witnesses``:

- every cosignature line of a given witness key on any checkpoint checked must verify over that
  checkpoint (C2SP signed-note: a known key's bad signature rejects the note), and carry a time
  no later than ``now`` plus :data:`MAX_CLOCK_SKEW_SECONDS` ("verifiers MAY reject cosignatures
  with timestamps in the future"); lines of other keys are ignored;
- a checkpoint is **witnessed** when it carries valid cosignatures of at least K distinct given
  witness keys; its time is the K-th newest of their timestamps (each of K witnesses vouched for
  it at that time or later);
- of the witnessed checkpoints, the one with the latest such time is the report's ``best``: the
  log was no longer than its size, as far as K witnesses saw until that time. No witnessed
  checkpoint with K >= 1 is a :class:`~rng_service.audit.verify.VerificationFailure`.
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


def check_witnesses(
    notes: Iterable[tuple[str, bytes]],
    witnesses: Sequence[CosignatureVerifier],
    *,
    min_witnesses: int,
    now: int,
) -> WitnessReport:
    """Applies the module's rule to (source, signed checkpoint note) pairs whose log signature
    the caller has verified. Raises :class:`WitnessFailure` for a bad or future cosignature, or
    when no checkpoint has ``min_witnesses`` (>= 1) cosignatures."""
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
    best: WitnessedCheckpoint | None = None
    as_of: int | None = None
    for c in found:
        t = c.time_for(min_witnesses)
        if t is not None and (as_of is None or (t, c.size) > (as_of, best.size if best else 0)):
            best, as_of = c, t
    if min_witnesses >= 1 and best is None:
        most = max((len(c.cosignatures) for c in found), default=0)
        names = ", ".join(f"{w.name}+{w.key_id:08x}" for w in witnesses)
        raise WitnessFailure(
            f"no checkpoint carries cosignatures of {min_witnesses} of the given witnesses "
            f"({names}); the most any has is {most}. Without them nothing shows that the log "
            f'was not cut back or forked (docs/auditing.md, "Witnesses")'
        )
    return WitnessReport(min_witnesses, tuple(found), best, as_of)
