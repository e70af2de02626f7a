"""What the offline verifier establishes or rejects, shared by its modules.

:class:`VerificationFailure` (an integrity error: the signed bytes do not prove what they
claim, at an entry index where one is at fault) and :class:`VerifiedHead` (a C2SP
tlog-checkpoint whose signed-note signature verified). Pure data; see docs/auditing.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from rng_service.errors import IntegrityError
from rng_service.log.note import Checkpoint

__all__ = ["VerificationFailure", "VerifiedHead", "at"]


class VerificationFailure(IntegrityError):
    """The export, a checkpoint or a receipt does not verify. ``index``: the entry at fault."""

    def __init__(self, message: str, *, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


@dataclass(frozen=True, slots=True)
class VerifiedHead:
    """A checkpoint whose signature verified: where it came from, its content, its signers."""

    source: str
    checkpoint: Checkpoint
    key_names: tuple[str, ...]


def at(position: int, line: int) -> str:
    """Where an entry is, for messages: its index and its line in the export."""
    return f"entry {position} (line {line})"
