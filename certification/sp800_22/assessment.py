"""Decisions over many sequences, SP 800-22 Rev.1a section 4.2, as sts-2.1.2's ``assess`` does.

For every sub-test (each P-value stream: a test, or one template, excursion state, cusum mode or
serial statistic) over the m sequences where it applies:

* proportion (section 4.2.1): the number of sequences with P >= alpha must lie within
  m (p_hat +- 3 sqrt(p_hat (1 - p_hat) / m)), p_hat = 1 - alpha; both bounds are truncated to
  integers as the reference's ``computeMetrics`` does;
* uniformity (section 4.2.2): the P-values in 10 equal bins give a chi-square whose P-value_T
  must be >= 0.0001. As in the reference, it is computed only from 10 sequences on. The expected
  count per bin is m / 10 as in the paper, not the reference's integer m // 10: the two agree when
  m is a multiple of 10, and otherwise the reference's inflates the chi-square (for m = 19 an
  ideal generator fails about 12 % of the time instead of 0.03 %), which matters for the random
  excursion tests, whose m is whatever number of sequences they applied to.

The random excursion tests count only the sequences where they apply (``None`` P-values are left
out; the reference does this by leaving out P-values equal to 0). The suite passes when no
sub-test fails either decision.

With 188 sub-tests, even an ideal generator often has a flagged sub-test (about half the time
for 100 sequences): :func:`ideal_flag_probability` gives the chance for one sub-test, and
:attr:`SuiteAssessment.expected_false_flags` the expected count for the whole run, so that a
report can set the observed flags beside it. This module does no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from scipy import stats

from certification.sp800_22._result import TestResult
from certification.sp800_22._special import igamc

__all__ = [
    "ALPHA",
    "UNIFORMITY_THRESHOLD",
    "Decision",
    "SuiteAssessment",
    "assess",
    "assess_sub_test",
    "ideal_flag_probability",
    "proportion_bounds",
]

ALPHA = 0.01
UNIFORMITY_THRESHOLD = 0.0001
BINS = 10


@dataclass(frozen=True)
class Decision:
    """Section 4.2 decisions for one sub-test over the sequences where it applies."""

    test: str
    sub_test: str
    sample_size: int
    passed: int
    proportion_min: int
    proportion_max: int
    histogram: tuple[int, ...]
    uniformity_p_value: float | None

    @property
    def proportion_ok(self) -> bool | None:
        """None when the sub-test applied to no sequence."""
        if self.sample_size == 0:
            return None
        return self.proportion_min <= self.passed <= self.proportion_max

    @property
    def uniformity_ok(self) -> bool | None:
        """None when there are too few sequences for the uniformity assessment."""
        if self.uniformity_p_value is None:
            return None
        return self.uniformity_p_value >= UNIFORMITY_THRESHOLD

    @property
    def ok(self) -> bool:
        return self.proportion_ok is not False and self.uniformity_ok is not False

    def as_dict(self) -> dict[str, object]:
        return {
            "sub_test": self.sub_test,
            "sample_size": self.sample_size,
            "passed": self.passed,
            "proportion_min": self.proportion_min,
            "proportion_max": self.proportion_max,
            "proportion_ok": self.proportion_ok,
            "histogram": list(self.histogram),
            "uniformity_p_value": self.uniformity_p_value,
            "uniformity_ok": self.uniformity_ok,
            "ok": self.ok,
        }


@dataclass(frozen=True)
class SuiteAssessment:
    """Every sub-test's decisions, by test name in battery order."""

    sequences: int
    decisions: Mapping[str, tuple[Decision, ...]]

    @property
    def failures(self) -> tuple[Decision, ...]:
        return tuple(d for ds in self.decisions.values() for d in ds if not d.ok)

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def expected_false_flags(self) -> float:
        """Expected number of failed sub-tests for an ideal generator with these sample sizes."""
        return math.fsum(
            ideal_flag_probability(d.sample_size) for ds in self.decisions.values() for d in ds
        )


def proportion_bounds(sample_size: int, alpha: float = ALPHA) -> tuple[int, int]:
    """The reference's acceptable range of passing sequences, truncated to integers."""
    if sample_size == 0:
        return 0, 0
    p_hat = 1.0 - alpha
    half_width = 3.0 * math.sqrt(p_hat * alpha / sample_size)
    return int((p_hat - half_width) * sample_size), int((p_hat + half_width) * sample_size)


def ideal_flag_probability(sample_size: int, alpha: float = ALPHA) -> float:
    """Chance that one sub-test of an ideal generator fails a decision over ``sample_size``
    sequences: exact for the proportion (binomial), plus the nominal 0.0001 of the uniformity
    check where it is made (treating the two as exclusive, a close upper bound)."""
    if sample_size == 0:
        return 0.0
    low, high = proportion_bounds(sample_size, alpha)
    passing = stats.binom(sample_size, 1.0 - alpha)
    proportion = float(passing.cdf(low - 1) + passing.sf(high))
    uniformity = UNIFORMITY_THRESHOLD if sample_size >= BINS else 0.0
    return min(proportion + uniformity, 1.0)


def assess_sub_test(test: str, sub_test: str, p_values: Sequence[float | None]) -> Decision:
    """Proportion and uniformity decisions for one stream of P-values (``None`` left out)."""
    applicable = np.array([p for p in p_values if p is not None], dtype=np.float64)
    sample_size = int(applicable.size)
    passed = int(np.count_nonzero(applicable >= ALPHA))
    low, high = proportion_bounds(sample_size)
    bins = np.minimum(np.floor(applicable * BINS).astype(np.int64), BINS - 1)
    histogram = np.bincount(bins, minlength=BINS)
    uniformity: float | None = None
    if sample_size >= BINS:
        expected = sample_size / BINS
        chi_squared = float(np.sum((histogram - expected) ** 2 / expected))
        uniformity = igamc((BINS - 1) / 2.0, chi_squared / 2.0)
    return Decision(
        test=test,
        sub_test=sub_test,
        sample_size=sample_size,
        passed=passed,
        proportion_min=low,
        proportion_max=high,
        histogram=tuple(int(c) for c in histogram),
        uniformity_p_value=uniformity,
    )


def assess(results: Sequence[Mapping[str, TestResult]]) -> SuiteAssessment:
    """Section 4.2 decisions for every sub-test in ``results`` (one mapping per sequence)."""
    if not results:
        raise ValueError("no sequences to assess")
    names = tuple(results[0])
    decisions: dict[str, tuple[Decision, ...]] = {}
    for name in names:
        labels = results[0][name].labels
        for sequence_results in results:
            if sequence_results[name].labels != labels:
                raise ValueError(f"{name}: sub-tests differ between sequences")
        decisions[name] = tuple(
            assess_sub_test(name, label, [r[name].p_values[i] for r in results])
            for i, label in enumerate(labels)
        )
    return SuiteAssessment(sequences=len(results), decisions=MappingProxyType(decisions))
