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
* shuffles, per shoe: :mod:`certification.outcomes.shuffles`.

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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from certification.outcomes._stats import (
    K,
    TestResult,
    chi_square_gof,
    holm_adjusted,
    inclusion_test,
    second_level,
)
from certification.outcomes.sample import (
    DiceGroup,
    FireNumberGroup,
    JackpotGroup,
    MultiBallGroup,
    OutcomeSample,
    ShuffleGroup,
    WheelGroup,
)
from certification.outcomes.sequence import run_sequence_tests
from certification.outcomes.shuffles import run_shuffle_tests

__all__ = [
    "DEFAULT_CONFIDENCE",
    "MAX_TUPLE_CELLS",
    "SECOND_LEVEL_ALPHA",
    "BatteryResult",
    "Decision",
    "all_tests",
    "decide",
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
class BatteryResult:
    confidence: float
    decisions: tuple[Decision, ...]
    second_level: TestResult | None
    second_level_passed: bool | None
    passed: bool
    failed: tuple[str, ...]
    outcome_count: int
    untested: Mapping[str, int]

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence


def _counts(values: Sequence[K]) -> dict[K, int]:
    return dict(Counter(values))


def _wheel_tests(g: WheelGroup) -> list[TestResult]:
    group = f"wheel/{g.wheel}"
    results = [
        chi_square_gof("numbers", group, _counts(g.numbers), g.expected, details={"wheel": g.wheel})
    ]
    if g.void_expected is not None:
        results.append(chi_square_gof("void_count", group, _counts(g.voids), g.void_expected))
    results += run_sequence_tests(np.asarray(g.sequence, dtype=np.int64), g.alphabet, group)
    return results


def _dice_tests(g: DiceGroup) -> list[TestResult]:
    group = f"dice/{g.count}d{g.sides}"
    faces = [f for roll in g.rolls for f in roll]
    results = [chi_square_gof("faces", group, _counts(faces), g.face_expected)]
    cells = g.sides**g.count
    if g.count > 1 and cells <= MAX_TUPLE_CELLS:
        tuples = [tuple(r) for r in g.rolls]
        uniform = Fraction(1, cells)
        expected: dict[tuple[int, ...], Fraction] = {}
        for code in range(cells):
            key: list[int] = []
            for _ in range(g.count):
                code, face = divmod(code, g.sides)
                key.append(face + 1)
            expected[tuple(reversed(key))] = uniform
        results.append(chi_square_gof("ordered_tuples", group, _counts(tuples), expected))
    if g.count > 1:
        totals = [sum(r) for r in g.rolls]
        results.append(chi_square_gof("totals", group, _counts(totals), g.total_expected))
        if len(g.combination_expected) <= MAX_TUPLE_CELLS:
            combos = [tuple(sorted(r)) for r in g.rolls]
            results.append(
                chi_square_gof("combinations", group, _counts(combos), g.combination_expected)
            )
    values = np.asarray(faces, dtype=np.int64) - 1
    results += run_sequence_tests(values, g.sides, group)
    return results


def _fire_tests(g: FireNumberGroup) -> list[TestResult]:
    group = f"fire_numbers/{g.profile}"
    uniform = {x: Fraction(1, len(g.layout)) for x in g.layout}
    return [
        chi_square_gof("count", group, _counts([len(d) for d in g.draws]), g.count_expected),
        inclusion_test("inclusion", group, g.draws, g.layout),
        chi_square_gof("first_number", group, _counts([d[0] for d in g.draws if d]), uniform),
    ]


def _jackpot_tests(g: JackpotGroup) -> list[TestResult]:
    return [chi_square_gof("tiers", f"jackpot/{g.profile}", _counts(g.tiers), g.expected)]


def _multiball_tests(g: MultiBallGroup) -> list[TestResult]:
    group = f"multiball/{g.wheel}/{g.balls}"
    targets = set(g.targets)
    hits = [sum(1 for x in d if x in targets) for d in g.draws]
    uniform = {x: Fraction(1, len(g.layout)) for x in g.layout}
    return [
        inclusion_test("inclusion", group, g.draws, g.layout),
        chi_square_gof("target_hits", group, _counts(hits), g.hit_expected),
        chi_square_gof("first_ball", group, _counts([d[0] for d in g.draws]), uniform),
    ]


def _shuffle_tests(g: ShuffleGroup) -> list[TestResult]:
    group = f"shuffle/{g.decks}deck{'s' if g.decks > 1 else ''}+{g.jokers}j"
    array = np.asarray(g.shuffles, dtype=np.int64)
    return run_shuffle_tests(array, g.top_expected, distinct=g.distinct, group=group)


def all_tests(sample: OutcomeSample) -> list[TestResult]:
    """Every test result for ``sample``, in group order."""
    results: list[TestResult] = []
    for w in sample.wheels:
        results += _wheel_tests(w)
    for d in sample.dice:
        results += _dice_tests(d)
    for f in sample.fire_numbers:
        results += _fire_tests(f)
    for j in sample.jackpots:
        results += _jackpot_tests(j)
    for m in sample.multiball:
        results += _multiball_tests(m)
    for s in sample.shuffles:
        results += _shuffle_tests(s)
    return results


def decide(
    results: list[TestResult],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    outcome_count: int = 0,
    untested: Mapping[str, int] | None = None,
) -> BatteryResult:
    """Holm-adjusted decisions and the second-level uniformity check over ``results``."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    alpha = 1.0 - confidence
    applicable = [r for r in results if r.p_value is not None]
    adjusted = holm_adjusted([r.p_value for r in applicable if r.p_value is not None])
    by_id = {id(r): a for r, a in zip(applicable, adjusted, strict=True)}
    decisions = []
    for r in results:
        a = by_id.get(id(r))
        decisions.append(Decision(r, a, None if a is None else a >= alpha))
    level2: TestResult | None = None
    level2_ok: bool | None = None
    if len(applicable) >= _SECOND_LEVEL_MIN:
        level2 = second_level([r.p_value for r in applicable if r.p_value is not None])
        threshold = min(SECOND_LEVEL_ALPHA, alpha)
        level2_ok = level2.p_value is not None and level2.p_value >= threshold
    failed = [d.key for d in decisions if d.passed is False]
    if level2_ok is False:
        failed.append("second_level/p_value_uniformity")
    return BatteryResult(
        confidence=confidence,
        decisions=tuple(decisions),
        second_level=level2,
        second_level_passed=level2_ok,
        passed=not failed and bool(applicable),
        failed=tuple(failed),
        outcome_count=outcome_count,
        untested=dict(untested or {}),
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
        "details": dict(r.details),
        "cells": [
            {"label": c.label, "observed": c.observed, "expected": c.expected} for c in r.cells
        ],
    }


def render_json(result: BatteryResult, *, input_info: Mapping[str, Any]) -> dict[str, Any]:
    """The outcome battery's JSON document (docs/certification.md, "Outcome-level tests")."""
    level2 = result.second_level
    return {
        "standard": "outcome-level battery",
        "references": [
            "Knuth, TAOCP vol. 2, 3rd ed., sections 3.3.1-3.3.2",
            "58 Pa. Code 810a.5(c)",
        ],
        "confidence": result.confidence,
        "alpha": result.alpha,
        "correction": "Holm step-down over all applicable tests",
        "second_level_alpha": SECOND_LEVEL_ALPHA,
        "input": dict(input_info),
        "outcome_count": result.outcome_count,
        "untested_kinds": dict(result.untested),
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
        "suite": {"passed": result.passed, "failed": list(result.failed)},
    }


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
    for kind, n in sorted(result.untested.items()):
        lines.append(f"(not tested: {n} {kind} record(s))")
    failed = ", ".join(result.failed) or "no test applied"
    lines.append("PASSED" if result.passed else f"FAILED: {failed}")
    return "\n".join(lines) + "\n"
