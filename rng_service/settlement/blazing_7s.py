"""Blazing 7's (58 Pa. Code 617c.2): what the wager returns for a spin and its bonus round.

Owns: the trigger (the ball rests on 7, 17 or 27, 617c.2(a), (e)), the bonus round's category
from the compartments of its three balls (617c.2(f)-(j)), the settlement by a 617c.2(j)
paytable, and the exact distribution of the return.

Rows: ``all_three``, ``two_of_three``, ``one_of_three`` count the balls on 7, 17 and 27;
``one_colour`` (paytables 3 and 4) is three balls on red or three on black; ``other`` is
anything else. A round that fits two rows (two balls on 7 and 27, both red, and a third red
ball) is paid by the higher row, which is the first in the regulation's order and the larger
payout in every paytable (as 639a.12(d)(2) and 641a.12(d)(2) say outright for their hands:
only the highest ranking hand is paid); so "one colour" pays only when no ball rests on 7, 17
or 27. 617c.2 names no wheel: the wager is offered with a 617a.3 Roulette wager, so on a single
zero or a double zero wheel. The service draws the three balls on either
(``DrawMultiBall``); a double zero wheel used as a single zero wheel is refused there (a
voided 00 has no meaning with three balls), so it is not a Blazing 7's wheel here.

Exact distribution on a wheel of n compartments: the base spin wins with probability 3/n; the
three balls rest on a uniform 3-subset of the compartments (docs/outcomes.md, "Multi-ball
draw"), so each row's probability is its number of 3-subsets over C(n, 3); the code counts
them by enumerating all C(n, 3) subsets.

Must not: draw random values, perform I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from itertools import combinations
from math import comb

from rng_service.errors import InvalidArgument
from rng_service.outcomes._common import allowed_list
from rng_service.outcomes.multiball import BLAZING_7S_NUMBERS
from rng_service.outcomes.roulette import WheelType, colour_of, wheel_numbers
from rng_service.settlement.paytables import Paytable
from rng_service.settlement.returns import ReturnDistribution

__all__ = [
    "BALLS",
    "TRIGGER",
    "WHEELS",
    "bonus_category",
    "category_distribution",
    "return_distribution",
    "settle",
    "triggers",
]

TRIGGER: frozenset[str] = frozenset(BLAZING_7S_NUMBERS)
BALLS = 3
WHEELS = (WheelType.SINGLE_ZERO, WheelType.DOUBLE_ZERO)
_BY_HITS = {3: "all_three", 2: "two_of_three", 1: "one_of_three"}


def _check_paytable(paytable: Paytable) -> None:
    if paytable.game != "blazing_7s":
        raise InvalidArgument("paytable", f"a {paytable.game} paytable", allowed="blazing_7s")


def triggers(number: str) -> bool:
    """Does the base spin win and trigger the bonus round (617c.2(e))?"""
    return number in TRIGGER


def bonus_category(balls: Sequence[str], paytable: Paytable) -> str:
    """The paytable row of a bonus round's three compartments (distinct, any order)."""
    _check_paytable(paytable)
    if len(balls) != BALLS or len(set(balls)) != BALLS:
        raise InvalidArgument("balls", f"{list(balls)!r}", allowed="three distinct compartments")
    hits = sum(1 for b in balls if b in TRIGGER)
    if hits:
        return _BY_HITS[hits]
    colours = {colour_of(b) for b in balls}
    if "one_colour" in paytable.pays and len(colours) == 1 and colours <= {"red", "black"}:
        return "one_colour"
    return "other"


def settle(paytable: Paytable, base_number: str, balls: Sequence[str] | None) -> Fraction:
    """What one unit staked returns: 0 unless the base spin triggers; then the bonus row's
    payout. ``balls`` (the bonus round's compartments) is needed only when it triggers."""
    _check_paytable(paytable)
    if not triggers(base_number):
        return Fraction(0)
    if balls is None:
        raise InvalidArgument(
            "balls", "the base spin triggered the bonus round", allowed="three compartments"
        )
    return paytable.returns(bonus_category(balls, paytable))


def category_distribution(paytable: Paytable, wheel: WheelType) -> dict[str, Fraction]:
    """Exact P(row) of the bonus round, by enumerating every 3-subset of the compartments."""
    if wheel not in WHEELS:
        raise InvalidArgument(
            "wheel", f"{wheel.value}", allowed=allowed_list(w.value for w in WHEELS)
        )
    numbers = wheel_numbers(wheel)
    counts: dict[str, int] = dict.fromkeys(paytable.pays, 0)
    for balls in combinations(numbers, BALLS):
        counts[bonus_category(balls, paytable)] += 1
    total = comb(len(numbers), BALLS)
    return {row: Fraction(k, total) for row, k in counts.items()}


def return_distribution(paytable: Paytable, wheel: WheelType) -> ReturnDistribution:
    """Exact distribution of what one unit staked returns on ``wheel``."""
    trigger = Fraction(len(TRIGGER), len(wheel_numbers(wheel)))
    rows = category_distribution(paytable, wheel)
    return ReturnDistribution.of(
        [(Fraction(0), 1 - trigger), *((paytable.returns(r), trigger * p) for r, p in rows.items())]
    )
