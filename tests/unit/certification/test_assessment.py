"""Section 4.2 decisions: proportion bounds, uniformity, applicability, suite verdict."""

from __future__ import annotations

import math

import pytest
from scipy.special import gammaincc
from scipy.stats import binom

from certification.sp800_22 import TestResult, assess, assess_sub_test
from certification.sp800_22.assessment import ideal_flag_probability, proportion_bounds


@pytest.mark.parametrize(
    ("size", "bounds"),
    [(1, (0, 1)), (10, (8, 10)), (12, (10, 12)), (100, (96, 101)), (1000, (980, 999))],
)
def test_proportion_bounds_truncate_like_the_reference(size: int, bounds: tuple[int, int]) -> None:
    assert proportion_bounds(size) == bounds


def test_proportion_decision() -> None:
    good = assess_sub_test("t", "t", [0.5] * 96 + [0.001] * 4)
    assert (good.passed, good.proportion_ok) == (96, True)
    bad = assess_sub_test("t", "t", [0.5] * 95 + [0.001] * 5)
    assert (bad.passed, bad.proportion_ok, bad.ok) == (95, False, False)


def test_p_value_equal_to_alpha_passes() -> None:
    assert assess_sub_test("t", "t", [0.01]).passed == 1


def test_uniformity_matches_the_chi_square_of_the_histogram() -> None:
    p_values = [(i % 10) / 10 + 0.05 for i in range(97)] + [1.0, 0.0, 0.999]
    decision = assess_sub_test("t", "t", p_values)
    assert decision.histogram == (11, 10, 10, 10, 10, 10, 10, 9, 9, 11)
    chi2 = sum((c - 10) ** 2 / 10 for c in decision.histogram)
    assert decision.uniformity_p_value == pytest.approx(float(gammaincc(4.5, chi2 / 2)))
    assert decision.uniformity_ok is True


def test_non_uniform_p_values_fail() -> None:
    decision = assess_sub_test("t", "t", [0.95] * 100)
    assert decision.proportion_ok is True
    assert decision.uniformity_ok is False
    assert not decision.ok


def test_uniformity_needs_ten_sequences_and_expects_a_tenth_in_each_bin() -> None:
    assert assess_sub_test("t", "t", [0.5] * 9).uniformity_p_value is None
    decision = assess_sub_test("t", "t", [i / 19 for i in range(19)])
    assert sum(decision.histogram) == 19
    chi2 = sum((c - 1.9) ** 2 / 1.9 for c in decision.histogram)  # the paper's s / 10
    assert decision.uniformity_p_value == pytest.approx(float(gammaincc(4.5, chi2 / 2)))
    assert decision.uniformity_p_value is not None
    assert decision.uniformity_p_value > 0.99  # evenly spread; the integer expectation gives 0.44


def test_not_applicable_p_values_are_left_out() -> None:
    decision = assess_sub_test("random_excursions", "x=+1", [None, 0.5, None, 0.2])
    assert (decision.sample_size, decision.passed) == (2, 2)
    nothing = assess_sub_test("random_excursions", "x=+1", [None, None])
    assert nothing.sample_size == 0
    assert nothing.proportion_ok is None
    assert nothing.ok


def _result(name: str, *p: float | None) -> TestResult:
    labels = (name,) if len(p) == 1 else tuple(f"s{i}" for i in range(len(p)))
    return TestResult(name=name, labels=labels, p_values=p)


def test_assess_decides_every_sub_test_and_the_suite() -> None:
    spread = [(i + 0.5) / 20 for i in range(20)]
    results = [{"a": _result("a", p), "b": _result("b", 1 - p, None)} for p in spread]
    assessment = assess(results)
    assert [d.sub_test for d in assessment.decisions["b"]] == ["s0", "s1"]
    assert assessment.passed
    bad = {"a": _result("a", 0.0), "b": _result("b", 0.3, None)}
    failing = [*results[:-3], bad, bad, bad]
    assert [d.test for d in assess(failing).failures] == ["a"]
    assert not assess(failing).passed


def test_assess_refuses_mismatched_or_empty_input() -> None:
    with pytest.raises(ValueError, match="no sequences"):
        assess([])
    with pytest.raises(ValueError, match="differ"):
        assess([{"b": _result("b", 0.3, 0.2)}, {"b": _result("b", 0.3, 0.2, 0.1)}])


def test_ideal_flag_probability_is_the_binomial_tail() -> None:
    # 100 sequences: flagged below 96 passes; P(Binomial(100, 0.99) <= 95) + 0.0001
    expected = float(binom.cdf(95, 100, 0.99)) + 1e-4
    assert ideal_flag_probability(100) == pytest.approx(expected)
    assert ideal_flag_probability(0) == 0.0
    assert ideal_flag_probability(5) == pytest.approx(1 - 0.99**5 - 5 * 0.01 * 0.99**4)


def test_expected_false_flags_sum_over_sub_tests() -> None:
    results = [{"a": _result("a", 0.5), "b": _result("b", 0.3, 0.2)} for _ in range(100)]
    assert assess(results).expected_false_flags == pytest.approx(3 * ideal_flag_probability(100))
    assert math.isfinite(assess(results).expected_false_flags)
