"""The outcome-level battery: every test that applies to an :class:`OutcomeSample`, with one
decision for the whole run.

Per group (docs/certification.md, "Outcome-level tests"):

* wheel spins, per wheel type: final numbers against ``roulette.distribution``; voided spins
  against ``roulette.void_count_distribution`` (double zero wheel used as single zero,
  58 Pa. Code 617a.4(c)); and the sequence tests of :mod:`certification.outcomes.sequence`
  (Knuth, TAOCP vol. 2, section 3.3.2) on the compartment stream;
* dice, per (count, sides): faces, ordered tuples (when s^count <= 10^5 cells), totals and
  sorted combinations against ``dice.*_distribution``; sequence tests on the faces;
* Fire Numbers, per profile: count against ``fire_numbers.count_distribution`` (617b.7(e)),
  per-number inclusion, first number drawn;
* jackpot tiers, per profile: against ``jackpot.distribution`` (617b.7(g)(5)(ii));
* multi-ball, per (wheel, balls): per-number inclusion, balls on 7/17/27 against
  ``multiball.hit_count_distribution`` (617c.2(j)), first ball;
* shuffles, per shoe (one deck or a multi-deck shoe): :mod:`certification.outcomes.shuffles`;
* generic uniform integers, per (low, high, with or without replacement): the values against
  1 / (high - low + 1) and the sequence tests; without replacement: inclusion, first value and
  whole draws repeated;
* weighted choices, per weight vector: the indices against weights / sum, and the serial tests
  of :func:`certification.outcomes.sequence.discrete_stream_tests`;
* Mega Fire Blaze bonus games, per (profile, Fire Number count): the total against
  ``mega_fire_blaze.total_distribution``, the filled cells (inclusion, first cell), the cell
  multipliers, the segment designations and the jackpot tiers against the profile's tables,
  repeated fill orders (617b.7(g)).

Every repeat (period) detector and serial test runs on each group's stream in log order.

Decision (the project cites 58 Pa. Code 810a.5(c) for its random number generator
requirements, outcomes statistically independent and uniform over their possible values,
shown to a stated confidence; that text is not among ../shared/regulations, so the section
number is the project's. The confidence is 99 % by default): with many tests in one run,
each P-value is Holm-adjusted so that the chance that a fair generator fails *any* test is at
most alpha; and, from 10 applicable tests on, a second-level Kolmogorov-Smirnov test checks
that the P-values together are uniform, at SP 800-22 section 4.2.2's threshold 0.0001, or
alpha if smaller (:data:`SECOND_LEVEL_ALPHA`: the tests share data, so their P-values are not
independent). The run passes when no adjusted P-value is below alpha and the second-level
one is not below its threshold.

Verdict (:class:`certification.verdict.Verdict`): FAIL when a test fails either way; otherwise
INCONCLUSIVE when a group of wheel spins, dice or shuffles holds fewer outcomes than its
reference defects need to be seen with 99 % power (:mod:`certification.outcomes.power_sizes`,
the size needed is named), when some test did not apply for lack of data (its ``min_sample``
says how many outcomes it needs), or when no test applied; PASS otherwise. A test that cannot
apply whatever the sample (no jackpot segment can be completed with fewer than six Fire
Numbers) does not make a run inconclusive.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from certification.outcomes._stats import (
    MIN_EXPECTED,
    REPEAT_EXPECTATION,
    K,
    TestResult,
    chi_square_gof,
    holm_adjusted,
    ks_uniform,
    max_cell,
    repeats,
    second_level,
)
from certification.outcomes.power_sizes import (
    MEASURED_CONFIDENCE,
    POWER,
    GroupSpec,
    RequiredSize,
    required_sizes,
)
from certification.outcomes.sample import (
    BonusGroup,
    DiceGroup,
    FireNumberGroup,
    JackpotGroup,
    MultiBallGroup,
    OutcomeSample,
    ShuffleGroup,
    UniformGroup,
    WeightedGroup,
    WheelGroup,
    WheelTally,
)
from certification.outcomes.sequence import (
    MAX_LAG,
    TUPLE_MIN_EXPECTED,
    jittered_uniforms,
    run_sequence_tests,
    run_stream_tests,
    runs_up,
    runs_up_and_down,
    tuple_label,
)
from certification.outcomes.shuffles import card_by_position_from_table, shoe_group
from certification.verdict import Verdict

__all__ = [
    "CRITERIA",
    "DEFAULT_CONFIDENCE",
    "MAX_TUPLE_CELLS",
    "SECOND_LEVEL_ALPHA",
    "BatteryResult",
    "Decision",
    "GroupPower",
    "all_tests",
    "decide",
    "group_specs",
    "render_json",
    "render_summary",
    "run_battery",
]

DEFAULT_CONFIDENCE = 0.99
MAX_TUPLE_CELLS = 100_000
_SECOND_LEVEL_MIN = 10
#: Threshold of the second-level test: SP 800-22 section 4.2.2's 0.0001 for the uniformity of
#: P-values. The battery's tests are not independent (several read the same spins), which
#: makes a Kolmogorov-Smirnov test of their P-values reject a fair generator more often than
#: its nominal level: about 5 % of lab-mode runs at 0.01, 1 % at 0.001, 0.3 % at 0.0001
#: (300 runs measured).
SECOND_LEVEL_ALPHA = 0.0001
#: Largest range of generic integers whose values get a chi-square cell each.
MAX_VALUE_CELLS = 10_000
#: Largest range of generic integers on which the integer sequence tests run (gap, poker need
#: the alphabet); larger ranges get the tests of the continuous values only.
MAX_SEQUENCE_ALPHABET = 1 << 31
#: Largest range of generic integers whose sequence tests are streamed (their tallies hold a
#: count per value); larger ranges keep their values until the tests run.
MAX_STREAM_SPAN = 1 << 20
BONUS_CELLS = 36


@dataclass(frozen=True)
class Decision:
    """A test with its Holm-adjusted P-value and verdict (``None``: not applicable)."""

    result: TestResult
    adjusted_p_value: float | None
    passed: bool | None

    @property
    def key(self) -> str:
        return f"{self.result.group}/{self.result.name}"


@dataclass(frozen=True)
class GroupPower:
    """A group's outcomes against the sizes its reference defects need (``needed``: the
    largest; ``enough``: outcomes >= needed)."""

    group: str
    outcomes: int
    sizes: tuple[RequiredSize, ...]

    @property
    def deciding(self) -> RequiredSize:
        return max(self.sizes, key=lambda s: s.size)

    @property
    def needed(self) -> int:
        return self.deciding.size

    @property
    def enough(self) -> bool:
        return self.outcomes >= self.needed

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.group, "outcomes": self.outcomes, "needed": self.needed,
                "enough": self.enough, "deciding_defect": self.deciding.defect,
                "sizes": [s.as_dict() for s in self.sizes]}  # fmt: skip


@dataclass(frozen=True)
class BatteryResult:
    confidence: float
    decisions: tuple[Decision, ...]
    second_level: TestResult | None
    second_level_passed: bool | None
    verdict: Verdict
    verdict_reason: str
    failed: tuple[str, ...]
    outcome_count: int
    untested: Mapping[str, int]
    not_outcomes: Mapping[str, int] | None = None
    power: tuple[GroupPower, ...] = ()

    @property
    def alpha(self) -> float:
        """1 - confidence as the user gave it (0.01, not 1 - 0.99 = 0.010000000000000009)."""
        return round(1.0 - self.confidence, 12)

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASS


def _counts(values: Sequence[K]) -> dict[K, int]:
    return dict(Counter(values))


def _wheel_tests(g: WheelGroup) -> list[TestResult]:
    group = f"wheel/{g.wheel}"
    results = [
        chi_square_gof("numbers", group, _counts(g.numbers), g.expected, details={"wheel": g.wheel})
    ]
    if g.void_expected is not None:
        results.append(chi_square_gof("void_count", group, _counts(g.voids), g.void_expected))
    sequence = np.asarray(g.sequence, dtype=np.int64)
    results += run_sequence_tests(sequence, g.alphabet, group, g.symbols)
    return results


def _tally_tests(g: WheelTally) -> list[TestResult]:
    group = f"wheel/{g.wheel}"
    results = [chi_square_gof("numbers", group, g.counts, g.expected, details={"wheel": g.wheel})]
    if g.void_expected is not None:
        results.append(chi_square_gof("void_count", group, g.void_counts, g.void_expected))
    return results + g.stream.results()


def _dice_tests(g: DiceGroup) -> list[TestResult]:
    group = f"dice/{g.count}d{g.sides}"
    results = [chi_square_gof("faces", group, g.face_counts, g.face_expected)]
    cells = g.sides**g.count
    if g.count > 1 and cells <= MAX_TUPLE_CELLS:
        uniform = Fraction(1, cells)
        expected: dict[tuple[int, ...], Fraction] = {}
        for code in range(cells):
            key: list[int] = []
            for _ in range(g.count):
                code, face = divmod(code, g.sides)
                key.append(face + 1)
            expected[tuple(reversed(key))] = uniform
        results.append(chi_square_gof("ordered_tuples", group, g.tuple_counts, expected))
        table = np.array([g.tuple_counts.get(k, 0) for k in expected], dtype=np.int64)
        results.append(
            max_cell("ordered_tuples_max_cell", group, table, 1.0 / cells, g.outcomes,
                     label=tuple_label(g.sides, g.count, _faces(g.sides)))
        )  # fmt: skip
    if g.count > 1:
        results.append(chi_square_gof("totals", group, g.total_counts, g.total_expected))
        if len(g.combination_expected) <= MAX_TUPLE_CELLS:
            results.append(chi_square_gof("combinations", group, g.combination_counts,
                                          g.combination_expected))  # fmt: skip
    return results + g.stream.results()


def _faces(sides: int) -> tuple[str, ...]:
    return tuple(str(f) for f in range(1, sides + 1))


def _fire_tests(g: FireNumberGroup) -> list[TestResult]:
    group = f"fire_numbers/{g.profile}"
    uniform = {x: Fraction(1, len(g.layout)) for x in g.layout}
    return [
        chi_square_gof("count", group, g.count_counts, g.count_expected),
        g.inclusion.result("inclusion", group),
        chi_square_gof("first_number", group, g.first_counts, uniform),
        g.repeats.result(),
    ]


def _jackpot_tests(g: JackpotGroup) -> list[TestResult]:
    group = f"jackpot/{g.profile}"
    results = [chi_square_gof("tiers", group, g.counts, g.expected)]
    if g.stream is not None and not g.unknown:  # an unknown tier already fails `tiers`
        results += g.stream.results()
    return results


def _multiball_tests(g: MultiBallGroup) -> list[TestResult]:
    group = f"multiball/{g.wheel}/{g.balls}"
    uniform = {x: Fraction(1, len(g.layout)) for x in g.layout}
    return [
        g.inclusion.result("inclusion", group),
        chi_square_gof("target_hits", group, g.hit_counts, g.hit_expected),
        chi_square_gof("first_ball", group, g.first_counts, uniform),
        g.repeats.result(),
    ]


def _shuffle_tests(g: ShuffleGroup) -> list[TestResult]:
    return g.stream.results()


def uniform_group_name(low: int, high: int, distinct: bool) -> str:
    return f"uniform/{low}..{high}" + ("/distinct" if distinct else "")


def _uniform_tests(g: UniformGroup) -> list[TestResult]:
    group = uniform_group_name(g.low, g.high, g.distinct)
    prefix = "first_value" if g.distinct else ""
    results: list[TestResult] = []
    if g.distinct:
        if g.inclusion is not None:
            results.append(g.inclusion.result("inclusion", group))
    elif g.span <= MAX_VALUE_CELLS:
        expected = {v: Fraction(1, g.span) for v in range(g.span)}
        results.append(chi_square_gof("values", group, g.value_counts, expected))
    if g.stream is not None:
        streamed = g.stream.results()
        results += [replace(r, name=f"{prefix}_{r.name}") for r in streamed] if prefix else streamed
    else:
        results += _integer_stream(list(g.held), g.span, group, prefix=prefix)
    if g.repeats is not None:
        results.append(g.repeats.result())
    return results


def _integer_stream(
    values: list[int], span: int, group: str, *, prefix: str = ""
) -> list[TestResult]:
    """Sequence tests on integers uniform on [0, span): Knuth's tests when the alphabet is not
    too large, else the tests of the continuous values U = (X + V) / span."""
    if span <= MAX_SEQUENCE_ALPHABET:
        results = run_sequence_tests(np.asarray(values, dtype=np.int64), span, group)
    else:
        jitter = jittered_uniforms(np.zeros(len(values), dtype=np.int64), 1)
        u = np.minimum(
            np.array([x / span for x in values], dtype=np.float64) + jitter / span,
            np.nextafter(1.0, 0.0),
        )
        ints = np.zeros(len(values), dtype=np.int64)
        results = [
            runs_up_and_down(u, group),
            runs_up(u, group),
            runs_up(u, group, down=True),
            *run_stream_tests(ints, 0, u, group),
            ks_uniform("uniformity_ks", group, u),
            repeats("repeats", group, values, Fraction(1, span)),
        ]
    if prefix:
        results = [replace(r, name=f"{prefix}_{r.name}") for r in results]
    return results


def _weighted_label(weights: tuple[int, ...]) -> str:
    if len(weights) <= 8:
        return ",".join(str(w) for w in weights)
    digest = hashlib.sha256(",".join(map(str, weights)).encode()).hexdigest()[:12]
    return f"{len(weights)}-weights-{digest}"


def weighted_group_name(weights: tuple[int, ...]) -> str:
    return f"weighted/{_weighted_label(weights)}"


def _weighted_tests(g: WeightedGroup) -> list[TestResult]:
    group = weighted_group_name(g.weights)
    results = [chi_square_gof("indices", group, g.counts, g.expected)]
    if g.stream is not None and not g.unknown:
        results += g.stream.results()
    return results


def _bonus_tests(g: BonusGroup) -> list[TestResult]:
    group = f"bonus/{g.profile}/{g.fire_number_count}"
    uniform = {i: Fraction(1, BONUS_CELLS) for i in range(BONUS_CELLS)}
    results = [
        chi_square_gof("total", group, g.total_counts, g.total_expected),
        g.cells.result("cells", group),
        chi_square_gof("first_cell", group, g.first_counts, uniform),
        chi_square_gof("multipliers", group, g.multiplier_counts, g.multiplier_expected),
    ]
    if g.designation_mode == "independent" and g.designation_expected is not None:
        results.append(chi_square_gof("designations", group, g.designation_counts,
                                      g.designation_expected))  # fmt: skip
    elif g.designation_problem:
        results.append(TestResult("designations", group, None, None, 0.0,
                                  f"{g.designation_mode} layout", g.outcomes,
                                  note=g.designation_problem))  # fmt: skip
    elif g.designation_mode == "shuffled" and g.designation_table is not None and g.outcomes:
        names = sorted(set(g.layout))
        copies = np.array([g.layout.count(x) for x in names], dtype=np.int64)
        table = card_by_position_from_table(g.designation_table, copies, g.outcomes, group)
        results.append(replace(table, name="designations"))
    tiers_n = sum(g.jackpot_tier_counts.values())
    tiers = chi_square_gof("jackpot_tiers", group, g.jackpot_tier_counts, g.jackpot_expected)
    if tiers.p_value is None:  # completed jackpot segments are rare: never a reason to wait
        tiers = replace(tiers, min_sample=None, note=f"{tiers_n} completed jackpot "
                        "segment(s): too few to test the tiers")  # fmt: skip
    results.append(tiers)
    results.append(g.repeats.result())
    return results


def bonus_collision(fire_number_count: int) -> Fraction:
    """P(two fill orders of ``fire_number_count`` of the 36 cells are equal)."""
    c = fire_number_count
    return Fraction(math.factorial(BONUS_CELLS - c), math.factorial(BONUS_CELLS))


def all_tests(sample: OutcomeSample) -> list[TestResult]:
    """Every test result for ``sample``, in group order."""
    kinds: list[tuple[Sequence[Any], Callable[[Any], list[TestResult]]]] = [
        (sample.wheels, _wheel_tests),
        (sample.wheel_tallies, _tally_tests),
        (sample.dice, _dice_tests),
        (sample.fire_numbers, _fire_tests),
        (sample.jackpots, _jackpot_tests),
        (sample.multiball, _multiball_tests),
        (sample.shuffles, _shuffle_tests),
        (sample.uniform, _uniform_tests),
        (sample.weighted, _weighted_tests),
        (sample.bonus, _bonus_tests),
    ]
    return [result for groups, tests in kinds for group in groups for result in tests(group)]


def _wheel_spec(g: WheelGroup) -> GroupSpec:
    return GroupSpec(f"wheel/{g.wheel}", "wheel", len(g.numbers), g.alphabet)


def group_specs(sample: OutcomeSample) -> list[GroupSpec]:
    """The groups of ``sample`` whose kinds have reference defects (wheels, dice, shuffles of
    shoes without jokers), named as their tests' groups."""
    specs = [_wheel_spec(g) for g in sample.wheels]
    specs += [GroupSpec(f"wheel/{g.wheel}", "wheel", g.outcomes, g.stream.d)
              for g in sample.wheel_tallies]  # fmt: skip
    specs += [GroupSpec(f"dice/{g.count}d{g.sides}", "dice", g.outcomes, g.sides, g.count)
              for g in sample.dice]  # fmt: skip
    for g in sample.shuffles:
        if g.jokers == 0 and g.outcomes:
            specs.append(GroupSpec(shoe_group(g.decks, g.jokers), "shuffle", g.outcomes,
                                   g.size, copies=g.decks))  # fmt: skip
    return specs


def _power(specs: Sequence[GroupSpec], alpha: float, m: int) -> tuple[GroupPower, ...]:
    out = []
    for spec in specs:
        sizes = required_sizes(spec, alpha=alpha, m=m)
        if sizes:
            out.append(GroupPower(spec.group, spec.outcomes, sizes))
    return tuple(out)


def decide(
    results: list[TestResult],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    outcome_count: int = 0,
    untested: Mapping[str, int] | None = None,
    not_outcomes: Mapping[str, int] | None = None,
    specs: Sequence[GroupSpec] = (),
) -> BatteryResult:
    """Holm-adjusted decisions, the second-level uniformity check over ``results``, the
    groups' sizes against their reference defects (``specs``), and the verdict (module
    docstring)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    alpha = round(1.0 - confidence, 12)
    applicable = [r for r in results if r.p_value is not None]
    power = _power(specs, alpha, len(results))
    short = [g for g in power if not g.enough]
    adjusted = holm_adjusted([r.p_value for r in applicable if r.p_value is not None])
    by_id = {id(r): a for r, a in zip(applicable, adjusted, strict=True)}
    decisions = []
    for r in results:
        a = by_id.get(id(r))
        decisions.append(Decision(r, a, None if a is None else a >= alpha))
    level2: TestResult | None = None
    level2_ok: bool | None = None
    continuous = [r.p_value for r in applicable if r.second_level and r.p_value is not None]
    if len(continuous) >= _SECOND_LEVEL_MIN:
        level2 = second_level(continuous)
        threshold = min(SECOND_LEVEL_ALPHA, alpha)
        level2_ok = level2.p_value is not None and level2.p_value >= threshold
    failed = [d.key for d in decisions if d.passed is False]
    if level2_ok is False:
        failed.append("second_level/p_value_uniformity")
    waiting = [r for r in results if r.p_value is None and r.min_sample is not None]
    if failed:
        verdict = Verdict.FAIL
        reason = (
            f"{len(failed)} test(s) reject at confidence {confidence:g}: "
            + ", ".join(failed[:6])
            + (f" and {len(failed) - 6} more" if len(failed) > 6 else "")
        )
    elif not applicable:
        verdict = Verdict.INCONCLUSIVE
        reason = "no test applied to these records"
    elif short:
        shown = "; ".join(
            f"{g.group} has {g.outcomes:,} outcomes, needs {g.needed:,} to see "
            f"{g.deciding.defect} ({g.deciding.test}) with {POWER:.0%} power"
            for g in short[:4]
        )
        verdict = Verdict.INCONCLUSIVE
        reason = (
            f"no test rejects, but {len(short)} group(s) are below the size their reference "
            f"defects need: {shown}" + (f" and {len(short) - 4} more" if len(short) > 4 else "")
        )
    elif waiting:
        shown = ", ".join(f"{r.group}/{r.name} needs {r.min_sample}" for r in waiting[:6])
        verdict = Verdict.INCONCLUSIVE
        reason = (
            f"no test rejects, but {len(waiting)} test(s) had too little data to apply (outcomes "
            f"of the group needed): {shown}"
            + (f" and {len(waiting) - 6} more" if len(waiting) > 6 else "")
        )
    else:
        verdict = Verdict.PASS
        reason = (
            f"{len(applicable)} tests applied, none rejects at confidence {confidence:g} "
            "(Holm-adjusted) and the second-level check passes"
            if level2 is not None
            else f"{len(applicable)} tests applied, none rejects at confidence {confidence:g} "
            "(Holm-adjusted)"
        )
    return BatteryResult(
        confidence=confidence,
        decisions=tuple(decisions),
        second_level=level2,
        second_level_passed=level2_ok,
        verdict=verdict,
        verdict_reason=reason,
        failed=tuple(failed),
        outcome_count=outcome_count,
        untested=dict(untested or {}),
        not_outcomes=dict(not_outcomes or {}),
        power=power,
    )


def run_battery(sample: OutcomeSample, *, confidence: float = DEFAULT_CONFIDENCE) -> BatteryResult:
    """Runs every applicable test on ``sample`` and decides at ``confidence``.

    A run with no applicable test does not pass (nothing was shown).
    """
    return decide(
        all_tests(sample),
        confidence=confidence,
        outcome_count=sample.outcome_count,
        untested=sample.untested,
        not_outcomes=sample.not_outcomes,
        specs=group_specs(sample),
    )


def _number(x: float | None) -> float | None:
    if x is None or x != x:  # NaN has no JSON spelling
        return None
    return float(x)


def _test_json(d: Decision) -> dict[str, Any]:
    r = d.result
    return {
        "group": r.group,
        "name": r.name,
        "method": r.method,
        "statistic": _number(r.statistic),
        "df": r.df,
        "p_value": _number(r.p_value),
        "adjusted_p_value": _number(d.adjusted_p_value),
        "passed": d.passed,
        "sample_size": r.sample_size,
        "note": r.note,
        "min_sample": r.min_sample,
        "second_level": r.second_level,
        "details": dict(r.details),
        "cells": [
            {"label": c.label, "observed": c.observed, "expected": c.expected} for c in r.cells
        ],
    }


#: Every criterion the outcome battery's verdict uses, as its reports state them.
CRITERIA: dict[str, Any] = {
    "tests": "docs/certification.md, 'Outcome-level tests': each kind against its exact "
    "distribution (fractions.Fraction values of rng_service.outcomes), and serial tests of "
    "each group's stream in log order",
    "chi_square_pooling": f"cells pooled in their natural order until each expects at least "
    f"{MIN_EXPECTED:g} (Knuth 3.3.1 B); df = pooled cells - 1; fewer than two cells: the test "
    "does not apply and names the sample it needs",
    "tuple_pooling": "overlapping k-tuples (k = 2, 3), Good's del psi^2_k with d^k - d^(k-1) "
    f"df: the full alphabet when n / d^k >= {TUPLE_MIN_EXPECTED:g}, else the largest coarser "
    f"alphabet d' with n / d'^k >= {TUPLE_MIN_EXPECTED:g} (symbol floor(d' U))",
    "lag_correlation": f"Knuth's circular serial correlation at lags 1..{MAX_LAG}, Sidak over "
    "the lags; needs 10 values per lag",
    "repeats": f"windows a fair stream repeats with expectation <= {REPEAT_EXPECTATION:g} "
    "(pairs at distance >= the window); P-value = min(1, expected / observed) (Markov)",
    "multiple_testing": "Holm step-down over all applicable tests at alpha: an ideal "
    "generator fails some test with probability at most alpha",
    "second_level": "Kolmogorov-Smirnov of the continuous tests' P-values against U(0, 1), "
    f"from {_SECOND_LEVEL_MIN} tests, threshold min({SECOND_LEVEL_ALPHA:g}, alpha)",
    "verdict_by_power": f"a group of wheel spins, dice or shuffles below the size at which "
    f"its reference defects are detected with {POWER:.0%} power at alpha / m (m the run's "
    "tests) is INCONCLUSIVE, with the size it needs (docs/certification.md, 'Verdict by "
    "power'): exact for dead cells and the modulo bias, measured by the power study at "
    f"confidence {MEASURED_CONFIDENCE:g} otherwise (lower bounds at a higher confidence)",
    "minimum_sample": "every test that applies to the records' kinds must have the data it "
    "needs (min_sample per test); below that the run is INCONCLUSIVE unless some test fails",
    "verdicts": {
        "FAIL": "a Holm-adjusted P-value below alpha, or the second-level check fails",
        "INCONCLUSIVE": "nothing fails but a group is below its power size, a test lacked "
        "data (min_sample) or none applied",
        "PASS": "nothing fails, every group holds its power size and every test had its data",
    },
}


def render_json(
    result: BatteryResult,
    *,
    input_info: Mapping[str, Any],
    evidence: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The outcome battery's JSON document (docs/certification.md, "Outcome-level tests")."""
    level2 = result.second_level
    document: dict[str, Any] = {
        "standard": "outcome-level battery",
        "references": [
            "Knuth, TAOCP vol. 2, 3rd ed., sections 3.3.1-3.3.2",
            "Good 1953, the serial test for sampling numbers (overlapping tuples)",
            "58 Pa. Code 810a.5(c)",
        ],
        "verdict": result.verdict.value,
        "verdict_reason": result.verdict_reason,
        "confidence": result.confidence,
        "alpha": result.alpha,
        "correction": "Holm step-down over all applicable tests",
        "second_level_alpha": SECOND_LEVEL_ALPHA,
        "criteria": {**CRITERIA, "alpha": result.alpha},
        "input": dict(input_info),
        "outcome_count": result.outcome_count,
        "untested_kinds": dict(result.untested),
        "power": [g.as_dict() for g in result.power],
        "not_outcome_kinds": dict(result.not_outcomes or {}),
        "tests": [_test_json(d) for d in result.decisions],
        "second_level": None
        if level2 is None
        else {
            "name": level2.name,
            "method": level2.method,
            "statistic": _number(level2.statistic),
            "p_value": _number(level2.p_value),
            "sample_size": level2.sample_size,
            "passed": result.second_level_passed,
        },
        "suite": {
            "verdict": result.verdict.value,
            "passed": result.passed,
            "failed": list(result.failed),
        },
    }
    if evidence is not None:
        document["evidence"] = dict(evidence)
    return document


def render_summary(result: BatteryResult) -> str:
    """A plain-text table of the decisions, failures marked ``*``."""
    lines = [
        f"Outcome-level battery: {result.outcome_count} outcomes, confidence "
        f"{result.confidence:g} (Holm-adjusted P-values)",
        f"{'test':58} {'statistic':>12} {'df':>6} {'P-value':>10} {'adj. P':>10}",
    ]
    for d in result.decisions:
        r = d.result
        stat = "-" if r.statistic is None else f"{r.statistic:.4f}"
        df = "-" if r.df is None else str(r.df)
        p = "----" if r.p_value is None else f"{r.p_value:.6f}"
        a = "----" if d.adjusted_p_value is None else f"{d.adjusted_p_value:.6f}"
        mark = " *" if d.passed is False else ""
        lines.append(f"{d.key:58} {stat:>12} {df:>6} {p:>10} {a:>10}{mark}")
    if result.second_level is not None and result.second_level.p_value is not None:
        mark = " *" if result.second_level_passed is False else ""
        lines.append(
            f"{'second_level/p_value_uniformity':58} {result.second_level.statistic or 0:12.4f}"
            f" {'-':>6} {result.second_level.p_value:10.6f} {'':>10}{mark}"
        )
    for g in result.power:
        mark = "" if g.enough else "  (below: INCONCLUSIVE)"
        lines.append(
            f"power: {g.group}: {g.outcomes:,} outcomes; {g.needed:,} needed to see "
            f"{g.deciding.defect} ({g.deciding.test}) with {POWER:.0%} power{mark}"
        )
    for kind, n in sorted(result.untested.items()):
        lines.append(f"(not tested: {n} {kind} record(s))")
    for kind, n in sorted((result.not_outcomes or {}).items()):
        lines.append(f"(not outcomes: {n} {kind} entr{'y' if n == 1 else 'ies'})")
    applied = sum(1 for d in result.decisions if d.adjusted_p_value is not None)
    lines.append(
        f"Criteria: alpha = {result.alpha:g}, Holm over {applied} applicable tests; second "
        f"level from {_SECOND_LEVEL_MIN} tests at min({SECOND_LEVEL_ALPHA:g}, alpha); "
        f"chi-square cells expect >= {MIN_EXPECTED:g}"
    )
    lines.append(f"RESULT: {result.verdict.value} ({result.verdict_reason})")
    return "\n".join(lines) + "\n"
