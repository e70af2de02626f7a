"""Generic draws: uniform integers in ``[low, high]`` with or without replacement, and
weighted choice, for table games whose rules need a plain random number (58 Pa. Code ch. 617b,
e.g. the random number generators of 617b.7(b)) and for certification.

Owns: the two draw kinds, their parameter limits and exact distributions.

``draw(src, params)`` dispatches on the parameter type. Draw mapping (docs/outcomes.md):
uniform with replacement: ``count`` calls ``src.randint(low, high)``; without replacement:
``src.sample(range(low, high + 1), count)`` (values in draw order); weighted: ``count`` calls
``src.weighted_index(weights)``.

Must not: use floats, ``%`` on random values, I/O, or a generator other than ``src``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from rng_service.errors import InvalidArgument
from rng_service.outcomes._common import JsonValue, require_bool, require_int

if TYPE_CHECKING:
    from rng_service.sampling import RandomSource

__all__ = [
    "MAX_BOUND",
    "MAX_COUNT",
    "MAX_DISTINCT_SPAN",
    "MAX_WEIGHTS",
    "UniformOutcome",
    "UniformParams",
    "WeightedOutcome",
    "WeightedParams",
    "draw",
    "draw_uniform",
    "draw_weighted",
    "uniform_distribution",
    "weighted_distribution",
]

#: Bounds are signed 64-bit integers (the API carries int64).
MAX_BOUND = 2**63 - 1
MAX_COUNT = 10_000
#: Without replacement the whole range is materialised, so its size is limited.
MAX_DISTINCT_SPAN = 1 << 20
MAX_WEIGHTS = 10_000
_MAX_WEIGHT = 2**53 - 1


@dataclass(frozen=True, slots=True)
class UniformParams:
    """``count`` integers uniform on ``[low, high]``; pairwise distinct when ``distinct``."""

    low: int
    high: int
    count: int = 1
    distinct: bool = False

    def __post_init__(self) -> None:
        require_int(self.low, "low", -MAX_BOUND - 1, MAX_BOUND)
        require_int(self.high, "high", self.low, MAX_BOUND)
        require_bool(self.distinct, "distinct")
        span = self.high - self.low + 1
        if self.distinct:
            if span > MAX_DISTINCT_SPAN:
                raise InvalidArgument(
                    "high",
                    f"range of {span} values too large for a draw without replacement",
                    allowed=f"high - low + 1 <= {MAX_DISTINCT_SPAN}",
                )
            require_int(self.count, "count", 1, min(MAX_COUNT, span))
        else:
            require_int(self.count, "count", 1, MAX_COUNT)

    @classmethod
    def parse(cls, data: Mapping[str, object]) -> UniformParams:
        return cls(
            low=data.get("low"),  # type: ignore[arg-type]
            high=data.get("high"),  # type: ignore[arg-type]
            count=data.get("count", 1),  # type: ignore[arg-type]
            distinct=data.get("distinct", False),  # type: ignore[arg-type]
        )

    def to_record(self) -> dict[str, JsonValue]:
        return {"low": self.low, "high": self.high, "count": self.count, "distinct": self.distinct}


@dataclass(frozen=True, slots=True)
class UniformOutcome:
    values: tuple[int, ...]

    def to_record(self) -> dict[str, JsonValue]:
        return {"values": list(self.values)}


def draw_uniform(src: RandomSource, params: UniformParams) -> UniformOutcome:
    if params.distinct:
        values = src.sample(range(params.low, params.high + 1), params.count)
    else:
        values = [src.randint(params.low, params.high) for _ in range(params.count)]
    return UniformOutcome(values=tuple(values))


def uniform_distribution(params: UniformParams) -> Fraction:
    """Each value's probability at each draw position: 1 / (high - low + 1). Without
    replacement every ordered tuple of distinct values has probability (N - count)! / N!."""
    return Fraction(1, params.high - params.low + 1)


@dataclass(frozen=True, slots=True)
class WeightedParams:
    """``count`` independent choices of an index ``i`` with P(i) = weights[i] / sum(weights)."""

    weights: tuple[int, ...]
    count: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.weights, tuple) or not 1 <= len(self.weights) <= MAX_WEIGHTS:
            raise InvalidArgument(
                "weights", "need a tuple of 1 to 10000 weights", allowed=f"1..{MAX_WEIGHTS} weights"
            )
        for i, w in enumerate(self.weights):
            require_int(w, f"weights[{i}]", 1, _MAX_WEIGHT)
        require_int(self.count, "count", 1, MAX_COUNT)

    @classmethod
    def parse(cls, data: Mapping[str, object]) -> WeightedParams:
        weights = data.get("weights")
        if not isinstance(weights, Sequence) or isinstance(weights, str):
            raise InvalidArgument("weights", "must be a list of positive integers")
        return cls(weights=tuple(weights), count=data.get("count", 1))  # type: ignore[arg-type]

    def to_record(self) -> dict[str, JsonValue]:
        return {"weights": list(self.weights), "count": self.count}


@dataclass(frozen=True, slots=True)
class WeightedOutcome:
    indices: tuple[int, ...]

    def to_record(self) -> dict[str, JsonValue]:
        return {"indices": list(self.indices)}


def draw_weighted(src: RandomSource, params: WeightedParams) -> WeightedOutcome:
    return WeightedOutcome(
        indices=tuple(src.weighted_index(params.weights) for _ in range(params.count))
    )


def weighted_distribution(params: WeightedParams) -> dict[int, Fraction]:
    total = sum(params.weights)
    return {i: Fraction(w, total) for i, w in enumerate(params.weights)}


def draw(
    src: RandomSource, params: UniformParams | WeightedParams
) -> UniformOutcome | WeightedOutcome:
    """The outcomes-contract entry point: dispatches on the parameter type."""
    if isinstance(params, UniformParams):
        return draw_uniform(src, params)
    return draw_weighted(src, params)
