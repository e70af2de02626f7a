"""The record one estimator returns: its figure, its section and the statistics behind it."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Estimate"]


@dataclass(frozen=True, slots=True)
class Estimate:
    """One estimator's min-entropy (bits per sample, or per bit on the bitstring).

    ``min_entropy`` is ``None`` when the estimator cannot run on so short an input (NIST's tool
    then leaves it out of the minimum, as here); ``details`` are the intermediate statistics
    the reference tool prints with ``-vv``.
    """

    name: str
    section: str
    bitstring: bool
    min_entropy: float | None
    details: dict[str, float | int | None] = field(default_factory=dict)
