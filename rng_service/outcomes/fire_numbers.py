"""Fire Number selection for Mega Fire Blaze Roulette (58 Pa. Code 617b.7(e)).

Owns: choosing how many Fire Numbers a round has (1, 2, 3, 4, 5 or 10, weighted by the game
profile; the client never chooses the count) and which numbers of the single zero layout
(0-36; Mega Fire Blaze is played on a single zero wheel, 617b.7(a)) they are, all distinct;
the exact distributions of the count and of each number's inclusion.

Draw mapping (docs/outcomes.md): ``src.weighted_index(profile fire count weights)`` gives the
count ``c``; then ``src.sample(LAYOUT, c)`` with ``LAYOUT = ("0", "1", ..., "36")`` in that
numeric order gives the numbers in draw order.

Must not: use floats, ``%`` on random values, I/O, or a generator other than ``src``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from rng_service.errors import InvalidArgument
from rng_service.outcomes._common import JsonValue
from rng_service.outcomes.profiles import MegaFireBlazeProfile

if TYPE_CHECKING:
    from rng_service.sampling import RandomSource

__all__ = [
    "LAYOUT",
    "FireNumberOutcome",
    "FireNumberParams",
    "count_distribution",
    "draw",
    "number_inclusion_probability",
]

#: The numbers of the single zero layout, in the order ``sample`` draws positions from.
LAYOUT: tuple[str, ...] = tuple(str(n) for n in range(37))


@dataclass(frozen=True, slots=True)
class FireNumberParams:
    """Fire Number selection under a validated game profile."""

    profile: MegaFireBlazeProfile

    def __post_init__(self) -> None:
        if not isinstance(self.profile, MegaFireBlazeProfile):
            raise InvalidArgument("profile", "must be a loaded Mega Fire Blaze profile")

    def to_record(self) -> dict[str, JsonValue]:
        return {"profile": self.profile.id.to_record()}


@dataclass(frozen=True, slots=True)
class FireNumberOutcome:
    """The Fire Numbers in draw order (``count == len(numbers)``)."""

    count: int
    numbers: tuple[str, ...]

    def to_record(self) -> dict[str, JsonValue]:
        return {"count": self.count, "numbers": list(self.numbers)}


def draw(src: RandomSource, params: FireNumberParams) -> FireNumberOutcome:
    """Draw the count, then that many distinct numbers of the layout."""
    count = params.profile.fire_counts.draw(src)
    numbers = tuple(src.sample(LAYOUT, count))
    return FireNumberOutcome(count=count, numbers=numbers)


def count_distribution(params: FireNumberParams) -> dict[int, Fraction]:
    """P(count = c) = weight(c) / sum of weights."""
    return params.profile.fire_counts.distribution()


def number_inclusion_probability(params: FireNumberParams) -> dict[str, Fraction]:
    """P(x is a Fire Number) = E[count] / 37 for each number x of the layout."""
    mean = sum((c * p for c, p in count_distribution(params).items()), Fraction(0))
    return {n: mean / len(LAYOUT) for n in LAYOUT}
