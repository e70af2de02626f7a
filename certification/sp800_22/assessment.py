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
out; the reference does this by leaving out P-values equal to 0). These are the decisions sts
prints ("flags"); with 188 sub-tests, an ideal generator has a flagged sub-test about half the
time at 100 sequences (:func:`ideal_flag_probability`,
:attr:`SuiteAssessment.expected_false_flags`), so the suite's verdict does not count flags.
It is made by :func:`suite_verdict`:

* **The family.** Each sub-test s over its m_s applicable sequences contributes up to three
  P-values, each valid under any dependence between sub-tests:
  - *extreme*: 1 - (1 - p_min)^m_s, p_min its smallest first-level P-value (the chance that
    the least of m_s independent valid P-values is that small); any m_s;
  - *proportion* (section 4.2.1 as an exact test): P(Binomial(m_s, alpha) >= k_s), k_s the
    sequences with P < alpha (too many failing sequences); any m_s;
  - *uniformity* (section 4.2.2's question, is the distribution of the m_s P-values uniform?):
    the Kolmogorov-Smirnov test of the P-values against U(0, 1) with its exact distribution
    (``scipy.stats.kstest(method="exact")``), from m_s >= :data:`MIN_SEQUENCES` only. Not
    P-value_T itself: its chi-square approximation (10 bins of m/10 expected) is
    anti-conservative in the far tail where the rule decides (for threshold 1.8e-5 it
    rejects uniform P-values 2.1 times as often as nominal at m = 55, 1.75 times at 100, 1.35
    times at 200: 2 x 10^7 simulated multinomial samples). The exact KS distribution holds for
    any m, and P-values with ties (discrete tests) only make it conservative.
* **The rule.** A weighted Bonferroni over the whole family at :data:`SUITE_ALPHA`: the
  extreme members share :data:`EXTREME_ALPHA` (10^-6), each rejecting at or below
  EXTREME_ALPHA / (their number); the proportion and uniformity members share the rest,
  each rejecting at or below (SUITE_ALPHA - EXTREME_ALPHA) / (their number). By the union
  bound an ideal generator is rejected with probability at most SUITE_ALPHA, however the
  sub-tests depend on each other (the measured rate is in docs/certification.md). The
  extreme check is there for input whose P-values no approximation explains (0, 10^-20: an
  all-zero or stuck-bit sequence); the first-level P-values come from asymptotic
  approximations whose far tails are the least accurate (at 20,000 bits, 9 of 222,000
  non-overlapping template P-values of a good generator fell below 10^-6, 40 times the
  nominal 0.22), so it gets a tiny share of the budget.
* **Verdict.** FAIL when some member rejects, at any number of sequences (an all-zero or
  stuck-bit sequence gives first-level P-values near 0: one sequence is enough). Otherwise
  INCONCLUSIVE below :data:`MIN_SEQUENCES` sequences, PASS from there on.

**Minimum sample** (:data:`MIN_SEQUENCES` = 55), from section 4.2: the proportion interval of
4.2.1 truncates to a lower limit of 0 passing sequences at m = 1 (no outcome can be flagged),
so it needs m >= 2; the uniformity chi-square of 4.2.2 has 10 equiprobable bins, and the
chi-square approximation wants an expected count of at least 5 in every bin, m / 10 >= 5,
m >= 50; section 4.2.2 asks for at least 55 sequences, the larger figure. Below it the verdict
is never PASS. This module does no I/O.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from scipy import stats

from certification.sp800_22._result import TestResult
from certification.sp800_22._special import igamc
from certification.sp800_22.table import PValueTable
from certification.verdict import Verdict

__all__ = [
    "ALPHA",
    "EXTREME_ALPHA",
    "MIN_SEQUENCES",
    "SUITE_ALPHA",
    "UNIFORMITY_THRESHOLD",
    "Decision",
    "SuiteAssessment",
    "SuiteCheck",
    "SuiteVerdict",
    "assess",
    "assess_sub_test",
    "ideal_flag_probability",
    "proportion_bounds",
    "suite_verdict",
]

ALPHA = 0.01
UNIFORMITY_THRESHOLD = 0.0001
BINS = 10
#: Fewest sequences at which the section 4.2 second-level decisions mean something (module
#: docstring); below it a run is INCONCLUSIVE unless it FAILs decisively.
MIN_SEQUENCES = 55
#: Family-wise level of the suite verdict: an ideal generator FAILs at most this often.
SUITE_ALPHA = 0.01
#: The part of SUITE_ALPHA the extreme members share (module docstring).
EXTREME_ALPHA = 1e-6


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
    min_p_value: float | None = None
    uniformity_ks_p_value: float | None = None

    @property
    def failing(self) -> int:
        """Sequences with P < alpha."""
        return self.sample_size - self.passed

    @property
    def extreme_p_value(self) -> float | None:
        """1 - (1 - p_min)^m: how unlikely the smallest first-level P-value is."""
        if self.min_p_value is None or self.sample_size == 0:
            return None
        if self.min_p_value >= 1.0:
            return 1.0
        return -math.expm1(self.sample_size * math.log1p(-self.min_p_value))

    @property
    def proportion_p_value(self) -> float | None:
        """P(Binomial(m, alpha) >= failing sequences): the proportion decision as an exact
        one-sided test."""
        if self.sample_size == 0:
            return None
        return float(stats.binom.sf(self.failing - 1, self.sample_size, ALPHA))

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
            "min_p_value": self.min_p_value,
            "extreme_p_value": self.extreme_p_value,
            "proportion_p_value": self.proportion_p_value,
            "uniformity_ks_p_value": self.uniformity_ks_p_value,
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


@functools.lru_cache(maxsize=256)
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
        min_p_value=float(applicable.min()) if sample_size else None,
        uniformity_ks_p_value=(
            float(stats.kstest(applicable, "uniform", method="exact").pvalue)
            if sample_size >= MIN_SEQUENCES
            else None
        ),
    )


def assess(results: Sequence[Mapping[str, TestResult]] | PValueTable) -> SuiteAssessment:
    """Section 4.2 decisions for every sub-test in ``results`` (one mapping per sequence, or
    a :class:`~certification.sp800_22.table.PValueTable`)."""
    table = results if isinstance(results, PValueTable) else PValueTable.from_results(results)
    if table.sequences == 0:
        raise ValueError("no sequences to assess")
    decisions: dict[str, tuple[Decision, ...]] = {}
    for name, labels in table.labels.items():
        decisions[name] = tuple(
            assess_sub_test(name, label, table.column(name, i)) for i, label in enumerate(labels)
        )
    return SuiteAssessment(sequences=table.sequences, decisions=MappingProxyType(decisions))


@dataclass(frozen=True)
class SuiteCheck:
    """One member of the suite verdict's family: a sub-test's extreme, proportion or
    uniformity P-value."""

    test: str
    sub_test: str
    check: str
    p_value: float
    sample_size: int

    @property
    def name(self) -> str:
        sub = self.test if self.sub_test == self.test else f"{self.test}/{self.sub_test}"
        return f"{sub} ({self.check})"

    def as_dict(self) -> dict[str, object]:
        return {
            "test": self.test,
            "sub_test": self.sub_test,
            "check": self.check,
            "p_value": self.p_value,
            "sample_size": self.sample_size,
        }


@dataclass(frozen=True)
class SuiteVerdict:
    """The suite's verdict under :func:`suite_verdict`'s rule, with what it rests on."""

    verdict: Verdict
    reason: str
    sequences: int
    minimum_sequences: int
    family_size: int
    threshold: float
    extreme_threshold: float
    rejected: tuple[SuiteCheck, ...]
    smallest: SuiteCheck | None
    uniformity_not_assessed: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        return {
            "verdict": self.verdict.value,
            "reason": self.reason,
            "sequences": self.sequences,
            "minimum_sequences": self.minimum_sequences,
            "family_size": self.family_size,
            "threshold": self.threshold,
            "extreme_threshold": self.extreme_threshold,
            "rejected": [c.as_dict() for c in self.rejected],
            "smallest": None if self.smallest is None else self.smallest.as_dict(),
            "uniformity_not_assessed": list(self.uniformity_not_assessed),
        }


def _family(assessment: SuiteAssessment) -> tuple[list[SuiteCheck], list[str]]:
    family: list[SuiteCheck] = []
    not_assessed: list[str] = []
    for ds in assessment.decisions.values():
        for d in ds:
            if d.sample_size == 0:
                continue
            extreme, proportion = d.extreme_p_value, d.proportion_p_value
            if extreme is None or proportion is None:  # set whenever a sequence applied
                raise ValueError(f"{d.test}/{d.sub_test}: a decision without its P-values")
            family.append(SuiteCheck(d.test, d.sub_test, "extreme", extreme, d.sample_size))
            family.append(SuiteCheck(d.test, d.sub_test, "proportion", proportion, d.sample_size))
            if d.sample_size >= MIN_SEQUENCES and d.uniformity_ks_p_value is not None:
                uniformity = d.uniformity_ks_p_value
                family.append(
                    SuiteCheck(d.test, d.sub_test, "uniformity", uniformity, d.sample_size)
                )
            else:
                sub = d.test if d.sub_test == d.test else f"{d.test}/{d.sub_test}"
                not_assessed.append(sub)
    return family, not_assessed


def suite_verdict(
    assessment: SuiteAssessment, *, bits_per_sequence: int | None = None
) -> SuiteVerdict:
    """PASS, FAIL or INCONCLUSIVE for the whole run (rule in the module docstring)."""
    family, not_assessed = _family(assessment)
    m = assessment.sequences
    size = len(family)
    extremes = sum(1 for c in family if c.check == "extreme")
    others = size - extremes
    extreme_threshold = EXTREME_ALPHA / extremes if extremes else 0.0
    threshold = (SUITE_ALPHA - EXTREME_ALPHA) / others if others else 0.0

    def limit(check: SuiteCheck) -> float:
        return extreme_threshold if check.check == "extreme" else threshold

    rejected = sorted((c for c in family if c.p_value <= limit(c)), key=lambda c: c.p_value)
    smallest = min(family, key=lambda c: c.p_value / limit(c), default=None)
    rule = (
        f"weighted Bonferroni: extreme checks at {extreme_threshold:.3g} "
        f"({EXTREME_ALPHA:g} / {extremes}), proportion and uniformity checks at "
        f"{threshold:.3g} ({SUITE_ALPHA - EXTREME_ALPHA:g} / {others})"
    )
    if rejected:
        shown = ", ".join(f"{c.name} P = {c.p_value:.3g}" for c in rejected[:5])
        more = f" and {len(rejected) - 5} more" if len(rejected) > 5 else ""
        verdict = Verdict.FAIL
        reason = f"{len(rejected)} of {size} checks reject ({rule}): {shown}{more}"
    elif m < MIN_SEQUENCES:
        verdict = Verdict.INCONCLUSIVE
        need = ""
        if bits_per_sequence is not None:
            total = MIN_SEQUENCES * bits_per_sequence
            need = f" ({MIN_SEQUENCES} x {bits_per_sequence} bits = {-(-total // 8):,} bytes)"
        reason = (
            f"{m} sequence{'s' if m != 1 else ''} tested: nothing is decisive, but the section "
            f"4.2 second-level decisions need at least {MIN_SEQUENCES} sequences{need}; test "
            f"at least {MIN_SEQUENCES} sequences"
        )
    elif not family:
        verdict = Verdict.INCONCLUSIVE
        reason = "no sub-test applied to any sequence"
    else:
        verdict = Verdict.PASS
        low = (
            f"; closest to its threshold: {smallest.name} P = {smallest.p_value:.3g}"
            if smallest
            else ""
        )
        reason = f"{m} sequences, no check of {size} rejects ({rule}){low}"
    return SuiteVerdict(
        verdict=verdict,
        reason=reason,
        sequences=m,
        minimum_sequences=MIN_SEQUENCES,
        family_size=size,
        threshold=threshold,
        extreme_threshold=extreme_threshold,
        rejected=tuple(rejected),
        smallest=smallest,
        uniformity_not_assessed=tuple(not_assessed) if m >= MIN_SEQUENCES else (),
    )
