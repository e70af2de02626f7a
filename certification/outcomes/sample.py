"""The data the outcome-level battery tests: observed outcomes grouped by kind and parameters,
each group with its exact expected distributions.

These are plain frozen dataclasses. The expected distributions are the ``fractions.Fraction``
values of ``rng_service.outcomes`` (``roulette.distribution``, ``dice.total_distribution`` ...),
filled in by :mod:`certification.sources`, the package's only bridge to ``rng_service``; this
module imports nothing from it, so the statistics can be reviewed (and reused) on their own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from certification.outcomes.shuffles import ShuffleStream
from certification.outcomes.stream import (
    DiscreteStream,
    InclusionTally,
    IntegerStream,
    RepeatStream,
)

__all__ = [
    "BonusGroup",
    "DiceGroup",
    "FireNumberGroup",
    "JackpotGroup",
    "MultiBallGroup",
    "OutcomeSample",
    "ShuffleGroup",
    "UniformGroup",
    "WeightedGroup",
    "WheelGroup",
    "WheelTally",
    "fire_collision",
    "weighted_expected",
]


@dataclass(frozen=True)
class WheelGroup:
    """Final numbers of roulette spins on one wheel type, in draw order.

    ``sequence`` holds each final spin as an integer uniform on ``[0, alphabet)`` under the null
    hypothesis (the compartment index, counting only compartments the final spin can show), for
    the sequence tests, ``symbols`` the number of each index (for the reports); ``voids`` the
    voided spins before each final one, with their exact distribution when the wheel voids
    (double zero used as single zero, 617a.4(c)).
    """

    wheel: str
    numbers: tuple[str, ...]
    expected: Mapping[str, Fraction]
    sequence: tuple[int, ...]
    alphabet: int
    voids: tuple[int, ...] = ()
    void_expected: Mapping[int, Fraction] | None = None
    symbols: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class WheelTally:
    """Final spins of one wheel type accumulated in one pass (what :func:`certification.sources.
    build_sample` gives for a log of any size): the count of each final number and of each
    number of voided spins, and the compartment stream's tallies (``stream``, an
    :class:`certification.outcomes.stream.IntegerStream`, exact below its buffer size)."""

    wheel: str
    outcomes: int
    counts: Mapping[str, int]
    expected: Mapping[str, Fraction]
    stream: IntegerStream
    void_counts: Mapping[int, int] = field(default_factory=dict)
    void_expected: Mapping[int, Fraction] | None = None


@dataclass(frozen=True, eq=False)
class DiceGroup:
    """Rolls of ``count`` dice of ``sides`` sides, accumulated in one pass: the counts of the
    faces, of the ordered tuples (faces in die order), of the totals and of the sorted
    combinations, and the faces' stream (``stream``, an
    :class:`certification.outcomes.stream.IntegerStream` of face - 1, in roll order)."""

    count: int
    sides: int
    outcomes: int
    face_counts: Mapping[int, int]
    tuple_counts: Mapping[tuple[int, ...], int]
    total_counts: Mapping[int, int]
    combination_counts: Mapping[tuple[int, ...], int]
    stream: IntegerStream
    face_expected: Mapping[int, Fraction]
    total_expected: Mapping[int, Fraction]
    combination_expected: Mapping[tuple[int, ...], Fraction]


@dataclass(frozen=True, eq=False)
class FireNumberGroup:
    """Fire Number draws under one profile, accumulated in one pass: the counts of the number
    of Fire Numbers and of the first number drawn, the per-number inclusions, and the whole
    draws' repeat detector."""

    profile: str
    outcomes: int
    count_counts: Mapping[int, int]
    first_counts: Mapping[str, int]
    inclusion: InclusionTally
    repeats: RepeatStream
    count_expected: Mapping[int, Fraction]
    layout: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class JackpotGroup:
    """Jackpot tiers drawn under one profile, accumulated in one pass: the count of each tier
    and, when the profile has two tiers or more, the serial tests of the tier indices
    (``stream``; ``unknown`` when a tier outside the profile was read, which fails the tiers'
    chi-square and leaves the serial tests out)."""

    profile: str
    outcomes: int
    counts: Mapping[str, int]
    expected: Mapping[str, Fraction]
    stream: DiscreteStream | None
    unknown: bool = False


@dataclass(frozen=True, eq=False)
class MultiBallGroup:
    """Multi-ball draws (``balls`` distinct compartments of a wheel), accumulated in one pass:
    the per-number inclusions, the counts of balls on ``targets`` and of the first ball, and
    the whole draws' repeat detector.

    ``hit_expected`` is the exact distribution of the number of balls on ``targets``
    (``multiball.hit_count_distribution``, the 617c.2(j) paytable rows).
    """

    wheel: str
    balls: int
    outcomes: int
    layout: tuple[str, ...]
    targets: tuple[str, ...]
    hit_counts: Mapping[int, int]
    hit_expected: Mapping[int, Fraction]
    first_counts: Mapping[str, int]
    inclusion: InclusionTally
    repeats: RepeatStream


@dataclass(frozen=True, eq=False)
class ShuffleGroup:
    """Shuffles of one shoe (``size`` cards), accumulated in one pass by ``stream`` (card codes
    top first); ``top_expected`` maps a code to P(top card has that code's label);
    ``distinct`` when no two cards share a label."""

    decks: int
    jokers: int
    outcomes: int
    size: int
    stream: ShuffleStream
    top_expected: Mapping[int, Fraction]
    distinct: bool


@dataclass(frozen=True, eq=False)
class UniformGroup:
    """Generic uniform integers on ``[low, high]`` (``uniform_int``, ``uniform_int_batch``),
    ``outcomes`` records accumulated in one pass; ``distinct`` draws are without replacement.

    With replacement: ``value_counts`` (value - low; ranges of at most ``MAX_VALUE_CELLS``
    values) and the values' sequence tests, streamed (``stream``) for ranges of at most
    ``MAX_STREAM_SPAN`` values, else on the values kept in ``held``. Without replacement:
    the inclusions (``inclusion``, small ranges), the first values' stream (``stream`` or
    ``held`` as above) and the whole draws' repeat detector (``repeats``)."""

    low: int
    high: int
    distinct: bool
    outcomes: int
    value_counts: Mapping[int, int]
    stream: IntegerStream | None
    held: tuple[int, ...]
    inclusion: InclusionTally | None = None
    repeats: RepeatStream | None = None

    @property
    def span(self) -> int:
        return self.high - self.low + 1


@dataclass(frozen=True, eq=False)
class WeightedGroup:
    """Generic weighted choices (``weighted_choice``) under one weight vector, accumulated in
    one pass: the count of each index and the indices' serial tests (``stream``, None for a
    single weight; ``unknown`` when an index outside the weights was read, which fails the
    indices' chi-square and leaves the serial tests out); P(i) = weights[i] / sum(weights)."""

    weights: tuple[int, ...]
    outcomes: int
    counts: Mapping[int, int]
    stream: DiscreteStream | None
    unknown: bool = False

    @property
    def expected(self) -> dict[int, Fraction]:
        return weighted_expected(self.weights)


def weighted_expected(weights: tuple[int, ...]) -> dict[int, Fraction]:
    total = sum(weights)
    return {i: Fraction(w, total) for i, w in enumerate(weights)}


@dataclass(frozen=True, eq=False)
class BonusGroup:
    """Mega Fire Blaze bonus games (617b.7(g)) under one profile and Fire Number count,
    accumulated in one pass, with the exact distributions of every random part of the grid:
    the filled cells (a uniform ``fire_number_count``-subset of the 36 cells, in fill order:
    their inclusions ``cells``, the first cell's counts and the fill orders' repeat detector),
    each filled cell's multiplier (the profile's multiplier weights), the segment
    designations (``independent``: each by the designation weights, counted;
    ``shuffled``: a uniform arrangement of ``layout``, its position x label table
    ``designation_table`` over the sorted designation names; ``fixed``: always ``layout``;
    ``designation_problem`` names an arrangement the profile cannot give), the jackpot tier of
    each complete jackpot segment (the tier weights), and the total
    (``mega_fire_blaze.total_distribution``)."""

    profile: str
    fire_number_count: int
    outcomes: int
    total_counts: Mapping[int, int]
    total_expected: Mapping[int, Fraction]
    cells: InclusionTally
    first_counts: Mapping[int, int]
    repeats: RepeatStream
    multiplier_counts: Mapping[int, int]
    multiplier_expected: Mapping[int, Fraction]
    designation_mode: str
    designation_expected: Mapping[str, Fraction] | None
    designation_counts: Mapping[str, int]
    designation_table: npt.NDArray[np.int64] | None
    designation_problem: str
    layout: tuple[str, ...]
    jackpot_tier_counts: Mapping[str, int]
    jackpot_expected: Mapping[str, Fraction]


@dataclass(frozen=True)
class OutcomeSample:
    """Everything a battery run tests, plus what it read but could not test (by kind)."""

    wheels: tuple[WheelGroup, ...] = ()
    wheel_tallies: tuple[WheelTally, ...] = ()
    dice: tuple[DiceGroup, ...] = ()
    fire_numbers: tuple[FireNumberGroup, ...] = ()
    jackpots: tuple[JackpotGroup, ...] = ()
    multiball: tuple[MultiBallGroup, ...] = ()
    shuffles: tuple[ShuffleGroup, ...] = ()
    uniform: tuple[UniformGroup, ...] = ()
    weighted: tuple[WeightedGroup, ...] = ()
    bonus: tuple[BonusGroup, ...] = ()
    untested: Mapping[str, int] = field(default_factory=dict)
    not_outcomes: Mapping[str, int] = field(default_factory=dict)

    @property
    def outcome_count(self) -> int:
        return (
            sum(len(g.numbers) for g in self.wheels)
            + sum(g.outcomes for g in self.wheel_tallies)
            + sum(g.outcomes for g in self.dice)
            + sum(g.outcomes for g in self.fire_numbers)
            + sum(g.outcomes for g in self.jackpots)
            + sum(g.outcomes for g in self.multiball)
            + sum(g.outcomes for g in self.shuffles)
            + sum(g.outcomes for g in self.uniform)
            + sum(g.outcomes for g in self.weighted)
            + sum(g.outcomes for g in self.bonus)
        )


def fire_collision(count_expected: Mapping[int, Fraction], size: int) -> Fraction:
    """P(two Fire Number draws are equal, as ordered tuples) = sum_c P(c)^2 (L - c)! / L!."""
    return sum(
        (p * p * Fraction(math.factorial(size - c), math.factorial(size))
         for c, p in count_expected.items()),
        Fraction(0),
    )  # fmt: skip
