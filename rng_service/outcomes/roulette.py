"""Roulette spins on the wheels of 58 Pa. Code 617a.1 and 617a.4.

Owns: the three wheel types (single zero; double zero; double zero wheel used as a single zero
wheel, 617a.1 and 617a.4(c) as amended by 49 Pa.B. 4956), the physical compartment order of
each wheel, the standard red/black layout, one spin outcome, wheel-neighbour lookups for the
Five Adjacent Number wager (617a.3(e)(1)(i)-(iii)), the compartment colour and value that move
the football in Touchdown Roulette (617a.3(f)), the Roulette Up ordering in which 00 ranks
between 0 and 1 (617b.4(g)(1)(ii)), and the exact distribution of a spin.

Draw mapping (see docs/outcomes.md): one spin is ``src.randbelow(size)``, the index of the
compartment in the wheel's physical order (``WHEEL_ORDER[wheel]``); size is 37 for a single
zero wheel and 38 for either use of a double zero wheel. On a double zero wheel used as a single
zero wheel a 00 result is announced "no spin" and voided, and the wheel is respun
(617a.4(c)(2)); every voided spin and the final spin are kept in order. After
``MAX_VOIDED_SPINS`` consecutive voids (probability 38**-64) the draw fails closed with
:class:`RespinLimitExceeded` rather than loop on a broken generator.

Must not: use floats, ``%`` on random values, I/O, or any generator other than the given
:class:`rng_service.sampling.RandomSource`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from rng_service.errors import InvalidArgument
from rng_service.outcomes._common import JsonValue, RespinLimitExceeded, allowed_list

if TYPE_CHECKING:
    from rng_service.sampling import RandomSource

__all__ = [
    "BLACK_NUMBERS",
    "MAX_VOIDED_SPINS",
    "RED_NUMBERS",
    "WHEEL_ORDER",
    "RespinLimitExceeded",
    "RouletteOutcome",
    "Spin",
    "SpinParams",
    "WheelType",
    "colour_of",
    "distribution",
    "draw",
    "neighbours",
    "parse_wheel",
    "pocket_value",
    "roulette_up_rank",
    "spin_at",
    "void_count_distribution",
    "wheel_name",
    "wheel_numbers",
]


class WheelType(enum.Enum):
    """Wheel types of 617a.1(d) and 617a.4(c)."""

    SINGLE_ZERO = "single_zero"
    DOUBLE_ZERO = "double_zero"
    DOUBLE_ZERO_AS_SINGLE_ZERO = "double_zero_as_single_zero"


# Verified against the published number sequences (wizardofodds.com "Number Sequence in
# Roulette"); tests/unit/outcomes/test_roulette.py checks each is a permutation of the layout.
# fmt: off
_EUROPEAN = (
    "0", "32", "15", "19", "4", "21", "2", "25", "17", "34", "6", "27", "13", "36", "11", "30",
    "8", "23", "10", "5", "24", "16", "33", "1", "20", "14", "31", "9", "22", "18", "29", "7",
    "28", "12", "35", "3", "26",
)
_AMERICAN = (
    "0", "28", "9", "26", "30", "11", "7", "20", "32", "17", "5", "22", "34", "15", "3", "24",
    "36", "13", "1", "00", "27", "10", "25", "29", "12", "8", "19", "31", "18", "6", "21", "33",
    "16", "4", "23", "35", "14", "2",
)
# fmt: on

#: Physical compartment order, clockwise from 0, of each wheel type. Position ``i`` in a
#: spin record is an index into this tuple. Double zero wheels have the American order
#: whichever way they are used.
WHEEL_ORDER: Mapping[WheelType, tuple[str, ...]] = {
    WheelType.SINGLE_ZERO: _EUROPEAN,
    WheelType.DOUBLE_ZERO: _AMERICAN,
    WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO: _AMERICAN,
}

#: The standard layout's red numbers; 1-36 not red are black; 0 and 00 are green.
RED_NUMBERS: frozenset[str] = frozenset(
    str(n) for n in (1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36)
)
BLACK_NUMBERS: frozenset[str] = frozenset(str(n) for n in range(1, 37)) - RED_NUMBERS

#: Consecutive voided spins after which a double-zero-as-single-zero draw fails closed.
MAX_VOIDED_SPINS = 64

_POSITION: Mapping[WheelType, Mapping[str, int]] = {
    w: {label: i for i, label in enumerate(order)} for w, order in WHEEL_ORDER.items()
}


def parse_wheel(value: object, field: str = "wheel") -> WheelType:
    """Return the :class:`WheelType` named by ``value`` (a member or its string value)."""
    if isinstance(value, WheelType):
        return value
    for member in WheelType:
        if value == member.value:
            return member
    raise InvalidArgument(
        field, f"unknown wheel type {value!r}", allowed=allowed_list(w.value for w in WheelType)
    )


def wheel_name(wheel: object) -> str:
    """A wheel as messages name it: a :class:`WheelType`'s value (``double_zero``, the name the
    API and the log use), never the enum's repr; anything else as its repr."""
    return wheel.value if isinstance(wheel, WheelType) else repr(wheel)


def wheel_numbers(wheel: WheelType) -> tuple[str, ...]:
    """Compartment labels of ``wheel`` in physical order (00 included on double zero wheels)."""
    return WHEEL_ORDER[wheel]


def colour_of(number: str) -> str:
    """``"green"`` for 0 and 00, else ``"red"`` or ``"black"`` per the standard layout."""
    if number in RED_NUMBERS:
        return "red"
    if number in BLACK_NUMBERS:
        return "black"
    if number in ("0", "00"):
        return "green"
    raise InvalidArgument("number", f"unknown roulette number {number!r}", allowed="0, 00, 1..36")


def pocket_value(number: str) -> int:
    """The compartment's value: 0 for 0 and 00, else the number (Touchdown Roulette yards)."""
    colour_of(number)
    return 0 if number == "00" else int(number)


def roulette_up_rank(number: str) -> int:
    """Order used by Roulette Up (617b.4(g)(1)(ii)): 0 < 00 < 1 < ... < 36."""
    colour_of(number)
    if number == "0":
        return 0
    if number == "00":
        return 1
    return int(number) + 1


def _layout_order(wheel: WheelType) -> list[str]:
    labels: list[str] = sorted(WHEEL_ORDER[wheel], key=roulette_up_rank)
    return labels


def _position_of(wheel: WheelType, number: str) -> int:
    try:
        return _POSITION[wheel][number]
    except KeyError:
        raise InvalidArgument(
            "number",
            f"{number!r} is not a compartment of a {wheel.value} wheel",
            allowed=allowed_list(_layout_order(wheel)),
        ) from None


def neighbours(wheel: WheelType, number: str, k: int) -> tuple[str, ...]:
    """The ``2k + 1`` compartments centred on ``number``, clockwise in physical order.

    ``neighbours(w, n, 2)`` is the Five Adjacent Number wager centred on ``n``
    (617a.3(e)(1)(ii)). Neighbours are physical: on a double zero wheel used as a single zero
    wheel the 00 compartment still sits between 1 and 27.
    """
    wheel = parse_wheel(wheel)
    order = WHEEL_ORDER[wheel]
    size = len(order)
    max_k = (size - 1) // 2
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= max_k:
        raise InvalidArgument("k", f"bad neighbour count {k!r}", allowed=f"0..{max_k}")
    centre = _position_of(wheel, number)
    # Index arithmetic on a known position, not on a random value.
    return tuple(order[(centre + offset) % size] for offset in range(-k, k + 1))


@dataclass(frozen=True, slots=True)
class Spin:
    """One ball result: label, colour, index in the wheel's physical order, voided flag."""

    number: str
    colour: str
    position: int
    voided: bool = False

    def to_record(self) -> dict[str, JsonValue]:
        return {
            "number": self.number,
            "colour": self.colour,
            "position": self.position,
            "voided": self.voided,
        }


#: The (not voided) spin of each compartment, by wheel, in the wheel's order: a spin is
#: immutable, so a draw returns one of these instead of building it (the log writer draws
#: every outcome on one thread; docs/performance.md).
_SPINS: Mapping[WheelType, tuple[Spin, ...]] = {
    w: tuple(
        Spin(number=label, colour=colour_of(label), position=i) for i, label in enumerate(order)
    )
    for w, order in WHEEL_ORDER.items()
}


def spin_at(wheel: WheelType, position: int) -> Spin:
    """The (not voided) spin landing in compartment ``position`` of ``wheel``'s order
    (0 to the wheel's size less one)."""
    spins = _SPINS[wheel]
    if not 0 <= position < len(spins):
        raise ValueError(
            f"position {position} is not a compartment of {wheel.value} (0-{len(spins) - 1})"
        )
    return spins[position]


@dataclass(frozen=True, slots=True)
class SpinParams:
    """Parameters of one roulette spin: the wheel type in use at the table."""

    wheel: WheelType

    def __post_init__(self) -> None:
        if not isinstance(self.wheel, WheelType):
            raise InvalidArgument(
                "wheel",
                f"unknown wheel type {wheel_name(self.wheel)}",
                allowed=allowed_list(w.value for w in WheelType),
            )

    @classmethod
    def parse(cls, data: Mapping[str, object]) -> SpinParams:
        """Build from a record such as ``{"wheel": "double_zero"}``."""
        return cls(wheel=parse_wheel(data.get("wheel")))

    def to_record(self) -> dict[str, JsonValue]:
        return {"wheel": self.wheel.value}


@dataclass(frozen=True, slots=True)
class RouletteOutcome:
    """Every spin in draw order (voided ones flagged) and the final, deciding spin."""

    wheel: WheelType
    spins: tuple[Spin, ...]
    final: Spin

    def to_record(self) -> dict[str, JsonValue]:
        return {
            "wheel": self.wheel.value,
            "spins": [s.to_record() for s in self.spins],
            "final": self.final.to_record(),
        }


def draw(src: RandomSource, params: SpinParams) -> RouletteOutcome:
    """Spin once (respinning voided 00 results on a double-zero-as-single-zero wheel)."""
    wheel = params.wheel
    compartments = _SPINS[wheel]
    size = len(compartments)
    spins: list[Spin] = []
    while True:
        spin = compartments[src.randbelow(size)]
        if wheel is WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO and spin.number == "00":
            spins.append(Spin(spin.number, spin.colour, spin.position, voided=True))
            if len(spins) >= MAX_VOIDED_SPINS:
                raise RespinLimitExceeded(
                    f"{MAX_VOIDED_SPINS} consecutive 00 results voided; generator suspect"
                )
            continue
        spins.append(spin)
        return RouletteOutcome(wheel=wheel, spins=tuple(spins), final=spin)


def distribution(params: SpinParams) -> dict[str, Fraction]:
    """Exact distribution of the final number: uniform over the wheel's compartments, 00
    excluded when a double zero wheel is used as a single zero wheel (1/37 each), since the
    respin makes the final spin uniform on the 37 remaining compartments."""
    order = WHEEL_ORDER[params.wheel]
    numbers = [
        n for n in order if not (params.wheel is WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO and n == "00")
    ]
    return {n: Fraction(1, len(numbers)) for n in numbers}


def void_count_distribution(params: SpinParams) -> dict[int, Fraction]:
    """Exact distribution of the number of voided spins before the final one.

    Geometric: P(v) = (1/38)**v * 37/38 for v < MAX_VOIDED_SPINS on a double zero wheel used
    as a single zero wheel; the missing mass (1/38)**MAX_VOIDED_SPINS is the fail-closed case.
    Other wheels never void.
    """
    if params.wheel is not WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO:
        return {0: Fraction(1)}
    return {v: Fraction(1, 38) ** v * Fraction(37, 38) for v in range(MAX_VOIDED_SPINS)}
