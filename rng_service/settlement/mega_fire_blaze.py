"""Mega Fire Blaze Roulette (58 Pa. Code 617b.7): what a wager returns for a round.

Owns: the thirteen wagers of 617b.7(d) on the single zero layout (617b.7(a); the numbers each
covers per 617a.3(e)), their settlement by the 617b.7(h) paytable and the bonus odds of the
round's bonus game (617b.7(f), (g)), and the exact distribution of each wager's return.

A round: the Fire Numbers are drawn (617b.7(e)), the ball comes to rest on a number, and, if
that number is a Fire Number covered by a winning straight up, split, street, corner or
basket, or line wager, the bonus game is played (617b.7(f)); its ``odds`` record gives the
payout "to 1" for each of those bet types (617b.7(g)(9), from the game profile). A winning
wager not subject to the bonus (an outside bet, or an inside bet whose number is not a Fire
Number) is paid by the 617b.7(h) paytable. A losing wager returns 0; the zero loses every
outside bet.

Exact distribution of an inside bet covering m numbers (base odds B, the profile's Fire Number
count weights P(c) and bonus odds distribution O_c): the spin is one of the m covered numbers
with probability m/37 (each 1/37); given c Fire Numbers, a uniform c-subset independent of the
spin, that number is a Fire Number with probability c/37; so the return is B + 1 with
probability (m/37) sum_c P(c) (1 - c/37) and o + 1 with probability
(m/37) sum_c P(c) (c/37) P(O_c = o). The code builds this by going through the covered numbers
and the counts; its mean is ``rng_service.outcomes.mega_fire_blaze.return_to_player``.

Must not: draw random values, perform I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from fractions import Fraction

from rng_service.errors import InvalidArgument
from rng_service.outcomes._common import allowed_list
from rng_service.outcomes.mega_fire_blaze import odds_distribution
from rng_service.outcomes.profiles import BET_TYPES, MegaFireBlazeProfile
from rng_service.outcomes.roulette import colour_of
from rng_service.settlement.paytables import Paytable
from rng_service.settlement.returns import ReturnDistribution

__all__ = [
    "BETS",
    "INSIDE_BETS",
    "NUMBERS",
    "OUTSIDE_BETS",
    "Wager",
    "representative_wagers",
    "return_distribution",
    "settle",
    "valid_selections",
]

#: The single zero layout's numbers (617b.7(a)).
NUMBERS: tuple[str, ...] = tuple(str(n) for n in range(37))
#: Inside bets, which take part in the bonus (617b.7(f)).
INSIDE_BETS: tuple[str, ...] = BET_TYPES
#: Outside bets (617b.7(d)(v)-(xii)).
OUTSIDE_BETS = ("dozen", "column", "red", "black", "odd", "even", "low", "high")
BETS = (*INSIDE_BETS, *OUTSIDE_BETS)


def _row(r: int) -> tuple[int, ...]:
    return (3 * r + 1, 3 * r + 2, 3 * r + 3)


def _inside_sets() -> dict[str, list[tuple[int, ...]]]:
    """Every inside bet's possible number sets on the single zero layout (617a.3(e)(1)-(6))."""
    splits: list[tuple[int, ...]] = [(0, 1), (0, 2), (0, 3)]
    splits += [(n, n + 1) for n in range(1, 36) if n % 3]
    splits += [(n, n + 3) for n in range(1, 34)]
    streets: list[tuple[int, ...]] = [_row(r) for r in range(12)]
    streets += [(0, 1, 2), (0, 2, 3)]
    corners: list[tuple[int, ...]] = [(0, 1, 2, 3)]
    corners += [(n, n + 1, n + 3, n + 4) for n in range(1, 33) if n % 3]
    lines = [_row(r) + _row(r + 1) for r in range(11)]
    return {
        "straight_up": [(n,) for n in range(37)],
        "split": splits,
        "street": streets,
        "corner": corners,
        "line": lines,
    }


_INSIDE = _inside_sets()
_OUTSIDE_FIXED: Mapping[str, tuple[int, ...]] = {
    "red": tuple(n for n in range(1, 37) if colour_of(str(n)) == "red"),
    "black": tuple(n for n in range(1, 37) if colour_of(str(n)) == "black"),
    "odd": tuple(range(1, 37, 2)),
    "even": tuple(range(2, 37, 2)),
    "low": tuple(range(1, 19)),
    "high": tuple(range(19, 37)),
}


def valid_selections(bet: str) -> list[tuple[int, ...]]:
    """The number sets a bet may cover (for dozen and column: the three choices)."""
    if bet in _INSIDE:
        return list(_INSIDE[bet])
    if bet == "dozen":
        return [tuple(range(12 * d + 1, 12 * d + 13)) for d in range(3)]
    if bet == "column":
        return [tuple(range(c, 37, 3)) for c in (1, 2, 3)]
    if bet in _OUTSIDE_FIXED:
        return [_OUTSIDE_FIXED[bet]]
    raise InvalidArgument("bet", f"unknown bet {bet!r}", allowed=allowed_list(BETS))


@dataclass(frozen=True, slots=True)
class Wager:
    """A 617b.7(d) wager: the bet type and the numbers it covers (sorted)."""

    bet: str
    numbers: tuple[int, ...]

    def __post_init__(self) -> None:
        if tuple(sorted(self.numbers)) not in {
            tuple(sorted(s)) for s in valid_selections(self.bet)
        }:
            raise InvalidArgument(
                "wager", f"{self.bet} cannot cover {list(self.numbers)}",
                allowed="the numbers of one layout position (617a.3(e))",
            )  # fmt: skip

    @property
    def inside(self) -> bool:
        return self.bet in INSIDE_BETS

    @property
    def name(self) -> str:
        if self.bet in _OUTSIDE_FIXED:
            return self.bet
        if self.bet == "dozen":
            return f"dozen:{self.numbers[0] // 12 + 1}"
        if self.bet == "column":
            return f"column:{min(self.numbers)}"
        return f"{self.bet}:" + "-".join(str(n) for n in sorted(self.numbers))

    @classmethod
    def parse(cls, name: str) -> Wager:
        """``straight_up:17``, ``split:17-20``, ``corner:0-1-2-3``, ``dozen:2``, ``column:1``,
        ``red`` ... (the form :attr:`name` writes)."""
        bet, _, rest = name.partition(":")
        try:
            if bet in _OUTSIDE_FIXED and not rest:
                return cls(bet, _OUTSIDE_FIXED[bet])
            if bet == "dozen":
                return cls(bet, valid_selections(bet)[int(rest) - 1])
            if bet == "column":
                return cls(bet, valid_selections(bet)[int(rest) - 1])
            if bet in _INSIDE:
                return cls(bet, tuple(sorted(int(x) for x in rest.split("-"))))
        except (ValueError, IndexError):
            pass
        raise InvalidArgument(
            "wager", f"bad Mega Fire Blaze wager {name!r}",
            allowed="straight_up:N, split:A-B, street:A-B-C, corner:A-B-C-D, line:A-..-F, "
            "dozen:1-3, column:1-3, red, black, odd, even, low, high",
        )  # fmt: skip


def representative_wagers() -> list[Wager]:
    """One wager per bet type (every selection of a bet type has the same return
    distribution: the Fire Numbers and the spin treat all numbers alike)."""
    names = ("straight_up:17", "split:17-20", "street:16-17-18", "corner:17-18-20-21",
             "line:16-17-18-19-20-21", "dozen:2", "column:2", *_OUTSIDE_FIXED)  # fmt: skip
    return [Wager.parse(name) for name in names]


def settle(
    paytable: Paytable,
    wager: Wager,
    number: str,
    fire_numbers: Collection[str],
    bonus_odds: Mapping[str, int] | None = None,
) -> Fraction:
    """What one unit staked on ``wager`` returns when the ball rests on ``number``, with the
    round's ``fire_numbers`` and, when the bonus game was played, its ``odds`` record (bet
    type -> odds "to 1"). An inside bet that wins on a Fire Number needs ``bonus_odds``."""
    if paytable.game != "mega_fire_blaze":
        raise InvalidArgument("paytable", f"a {paytable.game} paytable", allowed="mega_fire_blaze")
    if number not in NUMBERS:
        raise InvalidArgument("number", f"{number!r}", allowed="0-36 (single zero wheel)")
    if int(number) not in wager.numbers:
        return Fraction(0)
    if wager.inside and number in fire_numbers:
        if bonus_odds is None or wager.bet not in bonus_odds:
            raise InvalidArgument(
                "bonus_odds", "the wager won on a Fire Number: the bonus game's odds are needed",
                allowed=allowed_list(INSIDE_BETS),
            )  # fmt: skip
        return 1 + Fraction(bonus_odds[wager.bet])
    return paytable.returns(wager.bet)


def return_distribution(
    paytable: Paytable, profile: MegaFireBlazeProfile, wager: Wager
) -> ReturnDistribution:
    """Exact distribution of what one unit staked on ``wager`` returns (module docstring)."""
    spin = Fraction(1, len(NUMBERS))
    pairs: list[tuple[Fraction, Fraction]] = [(Fraction(0), 1 - spin * len(wager.numbers))]
    counts = profile.fire_counts.distribution()
    for _ in wager.numbers:
        if not wager.inside:
            pairs.append((paytable.returns(wager.bet), spin))
            continue
        for c, pc in counts.items():
            fire = Fraction(c, len(NUMBERS))
            pairs.append((paytable.returns(wager.bet), spin * pc * (1 - fire)))
            for odds, po in odds_distribution(profile, c, wager.bet).items():
                pairs.append((1 + Fraction(odds), spin * pc * fire * po))
    return ReturnDistribution.of(pairs)
