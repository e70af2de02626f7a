"""Dice: ``n`` fair dice of ``s`` sides; Sic Bo's three six-sided dice (58 Pa. Code ch. 625a,
625a.1(d) and the paytables of 625a.6 as amended by 49 Pa.B. 4956).

Owns: one roll and the exact distributions of a single die, of the total and of the sorted
combination (what Sic Bo wagers are settled on).

Draw mapping (docs/outcomes.md): die ``i`` (in order) is ``1 + src.randbelow(sides)``.

Must not: use floats, ``%`` on random values, I/O, or a generator other than ``src``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations_with_replacement
from math import factorial, prod
from typing import TYPE_CHECKING

from rng_service.outcomes._common import JsonValue, require_int

if TYPE_CHECKING:
    from rng_service.sampling import RandomSource

__all__ = [
    "MAX_DICE",
    "MAX_SIDES",
    "SIC_BO",
    "DiceOutcome",
    "DiceParams",
    "combination_distribution",
    "draw",
    "face_distribution",
    "total_distribution",
]

MAX_DICE = 100
MAX_SIDES = 1000


@dataclass(frozen=True, slots=True)
class DiceParams:
    """``count`` dice (1..100) of ``sides`` sides (2..1000)."""

    count: int
    sides: int

    def __post_init__(self) -> None:
        require_int(self.count, "count", 1, MAX_DICE)
        require_int(self.sides, "sides", 2, MAX_SIDES)

    @classmethod
    def parse(cls, data: Mapping[str, object]) -> DiceParams:
        return cls(count=data.get("count"), sides=data.get("sides"))  # type: ignore[arg-type]

    def to_record(self) -> dict[str, JsonValue]:
        return {"count": self.count, "sides": self.sides}


#: Sic Bo: three six-sided dice (625a.1(d)).
SIC_BO = DiceParams(count=3, sides=6)


@dataclass(frozen=True, slots=True)
class DiceOutcome:
    """Faces in roll order, and their total."""

    faces: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.faces)

    def to_record(self) -> dict[str, JsonValue]:
        return {"faces": list(self.faces), "total": self.total}


def draw(src: RandomSource, params: DiceParams) -> DiceOutcome:
    return DiceOutcome(faces=tuple(1 + src.randbelow(params.sides) for _ in range(params.count)))


def face_distribution(params: DiceParams) -> dict[int, Fraction]:
    """Each die: P(face) = 1 / sides."""
    return {f: Fraction(1, params.sides) for f in range(1, params.sides + 1)}


def total_distribution(params: DiceParams) -> dict[int, Fraction]:
    """Distribution of the sum: the ``count``-fold convolution of a uniform die."""
    ways: dict[int, int] = {0: 1}
    for _ in range(params.count):
        nxt: dict[int, int] = {}
        for t, w in ways.items():
            for f in range(1, params.sides + 1):
                nxt[t + f] = nxt.get(t + f, 0) + w
        ways = nxt
    denominator = params.sides**params.count
    return {t: Fraction(w, denominator) for t, w in sorted(ways.items())}


def combination_distribution(params: DiceParams) -> dict[tuple[int, ...], Fraction]:
    """Distribution of the sorted faces (a multiset): count! / prod(m_f!) / sides**count.

    Enumerates every multiset, so it is meant for small rolls such as Sic Bo (56 combinations).
    """
    denominator = params.sides**params.count
    out: dict[tuple[int, ...], Fraction] = {}
    for combo in combinations_with_replacement(range(1, params.sides + 1), params.count):
        mult = prod(factorial(m) for m in Counter(combo).values())
        out[combo] = Fraction(factorial(params.count) // mult, denominator)
    return out
