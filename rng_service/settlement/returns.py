"""The return of a wager as an exact distribution, and its moments.

Owns: :class:`ReturnDistribution` (what one unit staked returns, stake included, mapped to its
exact probability), its mean (the return to player, RTP), house edge (1 - RTP), variance and
standard deviation per unit staked. Everything is a :class:`fractions.Fraction` except the
standard deviation, the square root of an exact variance, which is irrational in general and is
given as a :class:`decimal.Decimal` to 30 significant digits.

Must not: draw random values or perform I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from fractions import Fraction
from types import MappingProxyType

from rng_service.errors import InvalidArgument

__all__ = ["ReturnDistribution", "decimal_of"]

_DIGITS = 30


def decimal_of(value: Fraction, digits: int = _DIGITS) -> Decimal:
    """``value`` rounded to ``digits`` significant digits (exact rational division)."""
    with localcontext() as ctx:
        ctx.prec = digits
        return Decimal(value.numerator) / Decimal(value.denominator)


@dataclass(frozen=True, slots=True)
class ReturnDistribution:
    """Return per unit staked -> exact probability; the probabilities sum to 1."""

    probabilities: Mapping[Fraction, Fraction]
    #: Return to player: the expected return per unit staked.
    rtp: Fraction = field(init=False)
    variance: Fraction = field(init=False)

    def __post_init__(self) -> None:
        mean = sum((v * p for v, p in self.probabilities.items()), Fraction(0))
        var = sum(((v - mean) ** 2 * p for v, p in self.probabilities.items()), Fraction(0))
        object.__setattr__(self, "rtp", mean)
        object.__setattr__(self, "variance", var)

    @classmethod
    def of(cls, pairs: Iterable[tuple[Fraction, Fraction]]) -> ReturnDistribution:
        """Merges (return, probability) pairs; they must be non-negative and sum to 1."""
        merged: dict[Fraction, Fraction] = {}
        for value, p in pairs:
            value, p = Fraction(value), Fraction(p)
            if value < 0 or p < 0:
                raise InvalidArgument("returns", f"negative return or probability ({value}, {p})")
            if p:
                merged[value] = merged.get(value, Fraction(0)) + p
        total = sum(merged.values(), Fraction(0))
        if total != 1:
            raise InvalidArgument("returns", f"probabilities sum to {total}, not 1")
        return cls(MappingProxyType(dict(sorted(merged.items()))))

    @property
    def house_edge(self) -> Fraction:
        return 1 - self.rtp

    @property
    def standard_deviation(self) -> Decimal:
        with localcontext() as ctx:
            ctx.prec = _DIGITS + 5
            root = decimal_of(self.variance, _DIGITS + 5).sqrt()
            ctx.prec = _DIGITS
            return +root

    @property
    def win_probability(self) -> Fraction:
        """P(the wager returns more than its stake)."""
        return sum((p for v, p in self.probabilities.items() if v > 1), Fraction(0))
