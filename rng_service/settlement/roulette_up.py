"""Roulette Up (58 Pa. Code 617b.4): the streak a run of spins makes, and what it returns.

Owns: the streak rules of 617b.4(f)-(g), the settlement of the non-progressive wager by a
617b.4(h)(1) paytable, and the exact distribution of the streak length.

The streak: the first spin after the wager is placed is the starting number and the streak's
length is 1 (617b.4(f)). Each later spin continues the streak while it is greater than the
spin before it, in the order 0 < 00 < 1 < ... < 36 (617b.4(g)(1)), and the length grows by one.
The streak ends (617b.4(g)(2)) when a spin is less than or equal to the one before it (that
spin does not count), when 36 is spun, or when the longest streak (the paytable's longest
length, 8 for paytables A-E) is reached.

**The 36 question.** 617b.4(g)(1)(i) moves the lammer whenever a number is greater than the one
before it, and (g)(2)(ii) ends the streak when 36 is spun. A 36 that follows a lower number
is both. :data:`COUNTS` (the default) reads the two rules together: the 36 moves the lammer,
then ends the streak (so a run 5, 20, 36 is a streak of 3); :data:`ENDS` reads (g)(2)(ii) as
overriding (g)(1)(i): the 36 ends the streak where it stood (length 2). A starting number of
36 is a streak of 1 under both. docs/games.md gives the reasoning and both readings' RTP.

Exact distribution on a wheel of n results (37, or 38 for a double zero wheel; a double zero
wheel used as a single zero wheel voids 00, so its results are the 37 of a single zero wheel):
the streak reaches length k >= 2 exactly when the first k results strictly increase, and under
:data:`ENDS` also the k-th is not 36, so P(L >= k) = C(n, k) / n^k (:data:`COUNTS`) or
C(n - 1, k) / n^k (:data:`ENDS`); P(L = k) = P(L >= k) - P(L >= k + 1) below the longest
length, whose probability is P(L >= longest).

Must not: draw random values, perform I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from math import comb

from rng_service.errors import InvalidArgument
from rng_service.outcomes._common import allowed_list
from rng_service.outcomes.roulette import WheelType, roulette_up_rank, wheel_name, wheel_numbers
from rng_service.settlement.paytables import Paytable
from rng_service.settlement.returns import ReturnDistribution

__all__ = [
    "COUNTS",
    "ENDS",
    "READINGS",
    "WHEELS",
    "Streak",
    "length_distribution",
    "result_count",
    "return_distribution",
    "settle",
    "streak",
]

#: A 36 that extends the streak counts in its length, then ends it (the default reading).
COUNTS = "counts"
#: A 36 ends the streak without counting.
ENDS = "ends"
READINGS = (COUNTS, ENDS)
#: 617b.4(a): a single zero or double zero wheel, including a double zero wheel used as a
#: single zero wheel (617a.1(d)).
WHEELS = (WheelType.SINGLE_ZERO, WheelType.DOUBLE_ZERO, WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO)

_TOP = "36"


@dataclass(frozen=True, slots=True)
class Streak:
    """A finished streak: its length, how many spins it took (the ending spin included) and
    why it ended (``lower_or_equal``, ``thirty_six`` or ``longest``)."""

    length: int
    spins_used: int
    ended_by: str


def _check_reading(reading: str) -> None:
    if reading not in READINGS:
        raise InvalidArgument(
            "reading", f"unknown reading {reading!r}", allowed=allowed_list(READINGS)
        )


def result_count(wheel: WheelType) -> int:
    """How many results a spin can have: 38 on a double zero wheel, else 37."""
    return 38 if wheel is WheelType.DOUBLE_ZERO else 37


def _results(wheel: WheelType) -> frozenset[str]:
    numbers = set(wheel_numbers(wheel))
    if wheel is WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO:
        numbers.discard("00")  # voided and respun (617a.4(c)(2)): never a result
    return frozenset(numbers)


def streak(
    numbers: Iterable[str], *, wheel: WheelType, longest: int, reading: str = COUNTS
) -> Streak | None:
    """The streak made by ``numbers`` (the spins' results from the starting number on), or
    None when they run out before it ends. Spins after the end are not read."""
    _check_reading(reading)
    if longest < 2:
        raise InvalidArgument("longest", f"{longest} is too short", allowed="2 or more")
    allowed = _results(wheel)
    length = 0
    previous = -1
    for used, number in enumerate(numbers, 1):
        if number not in allowed:
            ordered: list[str] = sorted(allowed, key=roulette_up_rank)
            raise InvalidArgument(
                "numbers", f"{number!r} is not a result of a {wheel.value} wheel",
                allowed=allowed_list(ordered),
            )  # fmt: skip
        rank = roulette_up_rank(number)
        if used == 1:
            length = 1
            if number == _TOP:
                return Streak(1, 1, "thirty_six")
        elif rank <= previous:
            return Streak(length, used, "lower_or_equal")
        elif number == _TOP:
            return Streak(length + (reading == COUNTS), used, "thirty_six")
        else:
            length += 1
            if length == longest:
                return Streak(length, used, "longest")
        previous = rank
    return None


def settle(paytable: Paytable, finished: Streak) -> Fraction:
    """What one unit staked on Roulette Up returns for a finished streak (617b.4(h))."""
    if paytable.game != "roulette_up":
        raise InvalidArgument("paytable", f"a {paytable.game} paytable", allowed="roulette_up")
    return paytable.returns(str(finished.length))


def length_distribution(
    wheel: WheelType, longest: int, reading: str = COUNTS
) -> dict[int, Fraction]:
    """Exact P(streak length = k) for k = 1..longest (closed form, module docstring)."""
    _check_reading(reading)
    if wheel not in WHEELS:
        raise InvalidArgument(
            "wheel",
            wheel_name(wheel),
            allowed=allowed_list(w.value for w in WHEELS),
        )
    n = result_count(wheel)
    below_top = n - 1 if reading == ENDS else n

    def at_least(k: int) -> Fraction:
        return Fraction(1) if k == 1 else Fraction(comb(below_top, k), n**k)

    dist = {k: at_least(k) - at_least(k + 1) for k in range(1, longest)}
    dist[longest] = at_least(longest)
    return dist


def return_distribution(
    paytable: Paytable, wheel: WheelType, reading: str = COUNTS
) -> ReturnDistribution:
    """Exact distribution of what one unit staked returns."""
    dist = length_distribution(wheel, paytable.longest_streak, reading)
    return ReturnDistribution.of((paytable.returns(str(k)), p) for k, p in dist.items())
