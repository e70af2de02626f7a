"""Multi-ball draws on one wheel: the Blazing 7's bonus round (58 Pa. Code 617c.2(f)-(i)).

Owns: ``k`` balls (1 to the wheel size) coming to rest in ``k`` distinct compartments of one
wheel, and the exact distributions the certification suite checks.

Equivalence with the table procedure: 617c.2(h)-(i) leave one ball in a shared compartment and
relaunch the others until every ball rests alone. Each relaunch lands uniformly and the process
treats all compartments alike, so the final set of occupied compartments has a distribution
invariant under every permutation of the compartments; the only such distribution on k-subsets
is the uniform one, P = 1 / C(n, k). Sampling k compartments without replacement gives exactly
that distribution, with no relaunch loop to bound.

Draw mapping (docs/outcomes.md): ``src.sample(range(n), k)`` over compartment positions in the
wheel's physical order (``roulette.WHEEL_ORDER``); ball ``i`` of the outcome is the ``i``-th
position drawn. A double zero wheel used as a single zero wheel is refused: its voided 00
compartment has no defined meaning for a multi-ball round.

Must not: use floats, ``%`` on random values, I/O, or a generator other than ``src``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from math import comb
from typing import TYPE_CHECKING

from rng_service.errors import InvalidArgument
from rng_service.outcomes._common import JsonValue, allowed_list, require_int
from rng_service.outcomes.roulette import (
    WHEEL_ORDER,
    Spin,
    WheelType,
    colour_of,
    parse_wheel,
    spin_at,
    wheel_name,
)

if TYPE_CHECKING:
    from rng_service.sampling import RandomSource

__all__ = [
    "BLAZING_7S_NUMBERS",
    "MultiBallOutcome",
    "MultiBallParams",
    "all_one_colour_probability",
    "draw",
    "hit_count_distribution",
    "number_inclusion_probability",
    "set_probability",
]

#: 617c.2(a), (e): the numbers that trigger and score the Blazing 7's bonus round.
BLAZING_7S_NUMBERS: tuple[str, ...] = ("7", "17", "27")

_WHEELS = (WheelType.SINGLE_ZERO, WheelType.DOUBLE_ZERO)


@dataclass(frozen=True, slots=True)
class MultiBallParams:
    """``balls`` balls released together on ``wheel`` (617c.2(f)-(g) uses three)."""

    wheel: WheelType
    balls: int

    def __post_init__(self) -> None:
        if self.wheel not in _WHEELS:
            raise InvalidArgument(
                "wheel",
                f"unsupported wheel {wheel_name(self.wheel)} for a multi-ball draw",
                allowed=allowed_list(w.value for w in _WHEELS),
            )
        require_int(self.balls, "balls", 1, len(WHEEL_ORDER[self.wheel]))

    @classmethod
    def parse(cls, data: Mapping[str, object]) -> MultiBallParams:
        wheel = parse_wheel(data.get("wheel"))
        balls = data.get("balls")
        return cls(wheel=wheel, balls=balls)  # type: ignore[arg-type]

    @property
    def size(self) -> int:
        return len(WHEEL_ORDER[self.wheel])

    def to_record(self) -> dict[str, JsonValue]:
        return {"wheel": self.wheel.value, "balls": self.balls}


@dataclass(frozen=True, slots=True)
class MultiBallOutcome:
    """Final resting compartments, one per ball, all distinct, in draw order."""

    wheel: WheelType
    balls: tuple[Spin, ...]

    def numbers(self) -> tuple[str, ...]:
        return tuple(b.number for b in self.balls)

    def to_record(self) -> dict[str, JsonValue]:
        return {"wheel": self.wheel.value, "balls": [b.to_record() for b in self.balls]}


def draw(src: RandomSource, params: MultiBallParams) -> MultiBallOutcome:
    """Draw the final compartments of ``params.balls`` balls."""
    positions = src.sample(range(params.size), params.balls)
    return MultiBallOutcome(
        wheel=params.wheel, balls=tuple(spin_at(params.wheel, p) for p in positions)
    )


def set_probability(params: MultiBallParams) -> Fraction:
    """Probability of any one set of occupied compartments: 1 / C(n, k)."""
    return Fraction(1, comb(params.size, params.balls))


def number_inclusion_probability(params: MultiBallParams) -> dict[str, Fraction]:
    """P(a ball rests in compartment x) = k / n for every compartment."""
    return {n: Fraction(params.balls, params.size) for n in WHEEL_ORDER[params.wheel]}


def hit_count_distribution(
    params: MultiBallParams, targets: Iterable[str] = BLAZING_7S_NUMBERS
) -> dict[int, Fraction]:
    """Hypergeometric distribution of how many balls rest on ``targets`` (default 7, 17, 27:
    the rows of the 617c.2(j) paytables): P(j) = C(t, j) C(n - t, k - j) / C(n, k)."""
    wanted = set(targets)
    unknown = wanted - set(WHEEL_ORDER[params.wheel])
    if unknown:
        raise InvalidArgument(
            "targets",
            f"not compartments of a {params.wheel.value} wheel: {sorted(unknown)}",
            allowed=allowed_list(WHEEL_ORDER[params.wheel]),
        )
    n, k, t = params.size, params.balls, len(wanted)
    total = comb(n, k)
    return {j: Fraction(comb(t, j) * comb(n - t, k - j), total) for j in range(min(t, k) + 1)}


def all_one_colour_probability(params: MultiBallParams) -> dict[str, Fraction]:
    """P(every ball rests on ``colour``) = C(m_colour, k) / C(n, k), for the "three balls in
    one color" row of 617c.2(j) paytables 3 and 4 (18 red, 18 black, 1 or 2 green)."""
    counts: dict[str, int] = {}
    for number in WHEEL_ORDER[params.wheel]:
        colour = colour_of(number)
        counts[colour] = counts.get(colour, 0) + 1
    total = comb(params.size, params.balls)
    return {c: Fraction(comb(m, params.balls), total) for c, m in sorted(counts.items())}
