"""Outcome-level tests: the statistics against scipy, their null distributions by simulation
(fixed seeds), and the battery on lab-mode outcomes and on tampered ones."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from certification import sources, tallies
from certification.outcomes import OutcomeSample, WheelGroup, run_battery
from certification.outcomes._stats import (
    MIN_EXPECTED,
    chi_square_gof,
    holm,
    holm_adjusted,
    inclusion_test,
    pool_cells,
)
from certification.outcomes.battery import render_json, render_summary
from certification.outcomes.sequence import (
    coupon_collector,
    jittered_uniforms,
    lag_correlation,
    run_sequence_tests,
    runs_up,
    stirling2,
)
from certification.outcomes.shuffles import card_by_position, eulerian_row, run_shuffle_tests


def test_pool_cells_reaches_minimum_and_keeps_totals() -> None:
    expected = [0.5, 1.0, 2.0, 6.0, 3.0, 1.0, 2.0, 0.5]
    observed = [1, 0, 3, 5, 4, 2, 0, 1]
    cells = pool_cells(observed, expected, [str(i) for i in range(8)])
    assert all(c.expected >= MIN_EXPECTED for c in cells)
    assert sum(c.observed for c in cells) == sum(observed)
    assert math.isclose(sum(c.expected for c in cells), sum(expected))
    assert [c.label for c in cells] == ["0..3", "4..7"]  # the sparse tail joins the last cell


def test_chi_square_matches_scipy() -> None:
    observed = {"a": 30, "b": 50, "c": 20}
    expected = {"a": Fraction(1, 4), "b": Fraction(1, 2), "c": Fraction(1, 4)}
    r = chi_square_gof("t", "g", observed, expected)
    ref = stats.chisquare([30, 50, 20], [25, 50, 25])
    assert r.statistic == pytest.approx(ref.statistic)
    assert r.p_value == pytest.approx(ref.pvalue)
    assert r.df == 2


def test_chi_square_impossible_outcome_fails() -> None:
    r = chi_square_gof("t", "g", {"0": 10, "00": 1}, {"0": Fraction(1)})
    assert r.p_value == 0.0
    assert "outside" in r.note


def test_chi_square_refuses_a_distribution_that_does_not_sum_to_one() -> None:
    with pytest.raises(ValueError, match="sum to"):
        chi_square_gof("t", "g", {1: 3}, {1: Fraction(1, 2)})


def test_holm() -> None:
    p = [0.001, 0.04, 0.03, 0.5]
    assert holm(p, 0.05) == [False, True, True, True]
    assert holm_adjusted(p) == pytest.approx([0.004, 0.09, 0.09, 0.5])


def test_combinatorial_tables() -> None:
    assert [stirling2(5, k) for k in range(1, 6)] == [1, 15, 25, 10, 1]
    row = eulerian_row(6)
    assert row == [1, 57, 302, 302, 57, 1]
    assert sum(eulerian_row(52)) == math.factorial(52)


def _uniform_p_values(p_values: list[float]) -> float:
    return float(stats.kstest(p_values, "uniform").pvalue)


def test_sequence_tests_have_their_null_distribution() -> None:
    """Across 60 fair sequences each test's P-values must look U(0, 1): this checks the exact
    run-length, gap, poker and coupon probabilities and the normal approximations."""
    rng = np.random.default_rng(7)
    by_test: dict[str, list[float]] = {}
    for _ in range(60):
        values = rng.integers(0, 37, 4000)
        for r in run_sequence_tests(values, 37, "g"):
            assert r.p_value is not None, r
            by_test.setdefault(r.name, []).append(r.p_value)
    assert by_test.pop("repeats") == [1.0] * 60  # a fair stream repeats no window
    for name in ("values_max_cell", "pairs_max_cell", "triples_max_cell", "gap_per_value"):
        del by_test[name]  # Bonferroni bounds, conservative: test_single_cell.py
    for name, ps in by_test.items():
        assert _uniform_p_values(ps) > 0.001, name


def test_inclusion_scaling_keeps_the_null_distribution() -> None:
    """Without the 1/f scaling the statistic of 3-of-37 draws would be inflated by 36/34."""
    rng = np.random.default_rng(11)
    layout = [str(i) for i in range(37)]
    ps = []
    for _ in range(200):
        draws = [tuple(layout[i] for i in rng.choice(37, 3, replace=False)) for _ in range(300)]
        r = inclusion_test("inclusion", "g", draws, layout)
        assert r.p_value is not None
        ps.append(r.p_value)
    assert _uniform_p_values(ps) > 0.001


def test_card_by_position_scaling_keeps_the_null_distribution() -> None:
    rng = np.random.default_rng(13)
    ps = []
    for _ in range(200):
        shuffles = np.array([rng.permutation(10) for _ in range(100)], dtype=np.int64)
        r = card_by_position(shuffles, "g")
        assert r.p_value is not None
        ps.append(r.p_value)
    assert _uniform_p_values(ps) > 0.001


def test_sequence_tests_catch_structure() -> None:
    alternating = np.tile(np.array([3, 30], dtype=np.int64), 2000)
    u = jittered_uniforms(alternating, 37)
    lag = lag_correlation(u, "g")
    assert lag.p_value == pytest.approx(0.0, abs=1e-12)
    assert lag.details["worst_lag"] in (1, 2)
    up = runs_up(u, "g")
    assert up.p_value is not None
    assert up.p_value < 1e-6
    rising = np.arange(8000, dtype=np.int64) % 37
    assert coupon_collector(jittered_uniforms(rising, 37), "g").p_value == pytest.approx(
        0.0, abs=1e-9
    )


def test_shuffle_tests_catch_an_unshuffled_deck() -> None:
    identity = np.tile(np.arange(52, dtype=np.int64), (300, 1))
    top = {c: Fraction(1, 52) for c in range(52)}
    results = run_shuffle_tests(identity, top, distinct=True, group="g")
    assert [r.name for r in results] == [
        "top_card",
        "card_by_position",
        "card_by_position_max_cell",
        "adjacent_pairs",
        "rising_sequences",
        "repeats",
    ]
    assert all(r.p_value is not None and r.p_value < 1e-9 for r in results)


@pytest.fixture(scope="module")
def lab_records() -> list[sources.Record]:
    plan = {
        "roulette_double_zero": 5000,
        "roulette_double_zero_as_single_zero": 2000,
        "sic_bo": 2000,
        "fire_numbers": 2000,
        "jackpot_tier": 500,
        "multiball_3": 1000,
        "card_shuffle": 300,
    }
    return sources.generate_records(sources.lab_generator("test-outcome-battery"), plan)


def test_battery_on_small_lab_mode_outcomes_is_inconclusive(
    lab_records: list[sources.Record],
) -> None:
    """No test rejects, but 5,000 spins and 300 shuffles are below their power sizes (Sic Bo's
    2,000 rolls are above): INCONCLUSIVE, never PASS."""
    result = run_battery(tallies.build_sample(lab_records))
    assert result.failed == (), render_summary(result)
    assert result.verdict.value == "INCONCLUSIVE"
    short = {g.group for g in result.power if not g.enough}
    assert short == {"wheel/double_zero", "wheel/double_zero_as_single_zero", "shuffle/1deck+0j"}
    assert {g.group for g in result.power if g.enough} == {"dice/3d6"}
    groups = {d.result.group.split("/")[0] for d in result.decisions}
    assert groups == {"wheel", "dice", "fire_numbers", "jackpot", "multiball", "shuffle"}
    assert result.second_level is not None
    document = render_json(result, input_info={"path": "lab"})
    assert json.loads(json.dumps(document))["suite"]["passed"] is False


def test_battery_fails_a_biased_wheel(lab_records: list[sources.Record]) -> None:
    records = [dict(r) for r in lab_records if r["kind"] == "roulette_spin"]
    for r in records[:300]:
        r["outcome"] = {**r["outcome"], "final": {**r["outcome"]["final"], "number": "17"}}
    result = run_battery(tallies.build_sample(records))
    assert not result.passed
    assert any(key.endswith("/numbers") for key in result.failed)


def test_battery_fails_an_impossible_number() -> None:
    expected = {str(n): Fraction(1, 37) for n in range(37)}
    group = WheelGroup(
        wheel="single_zero",
        numbers=(*tuple(str(i % 37) for i in range(2000)), "00"),
        expected=expected,
        sequence=tuple(i % 37 for i in range(2001)),
        alphabet=37,
    )
    result = run_battery(OutcomeSample(wheels=(group,)))
    assert "wheel/single_zero/numbers" in result.failed


def test_an_empty_sample_does_not_pass() -> None:
    result = run_battery(OutcomeSample())
    assert not result.passed
    assert result.verdict.value == "INCONCLUSIVE"
