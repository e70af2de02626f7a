"""Single-cell and gap tests of the outcome battery: the largest standardized residual over a
table's cells (exact binomial tails, Bonferroni over the cells) beside each omnibus test, and
the gap test per value. Known answers are computed here from binomial coefficients and by
hand; the bad generators (one ordered pair suppressed, no immediate repeat, a card barred
from a position) are written here."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from certification.cli import main
from certification.outcomes._stats import max_cell
from certification.outcomes.sequence import (
    cell_tests,
    gap_table,
    gap_tail,
    gap_value_probabilities,
    max_cell_tuples,
)
from certification.outcomes.shuffles import card_by_position_max_cell
from rng_service.outcomes.roulette import WHEEL_ORDER, WheelType


def _binomial_two_sided(x: int, n: int, p: Fraction) -> Fraction:
    pmf = [math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)]
    return min(Fraction(1), 2 * min(sum(pmf[: x + 1]), sum(pmf[x:])))


def test_max_cell_known_answer() -> None:
    """Counts (0, 4, 6) of 10 draws over three cells of 1/3: cell 0 has
    P(X <= 0) = (2/3)^10, two-sided 2 (2/3)^10, times 3 cells."""
    r = max_cell("t", "g", np.array([0, 4, 6]), 1 / 3, 10)
    expected = 3 * _binomial_two_sided(0, 10, Fraction(1, 3))
    assert r.p_value == pytest.approx(float(expected), rel=1e-9)
    assert r.details["worst_cell"] == "0"
    assert r.statistic == pytest.approx((0 - 10 / 3) / math.sqrt(10 * (1 / 3) * (2 / 3)))
    # unequal cells: (5, 1) of 6 draws at (1/2, 1/2) vs (3/4, 1/4)
    r = max_cell("t", "g", np.array([1, 5]), np.array([0.75, 0.25]), 6)
    worst = min(
        _binomial_two_sided(1, 6, Fraction(3, 4)), _binomial_two_sided(5, 6, Fraction(1, 4))
    )
    assert r.p_value == pytest.approx(float(2 * worst), rel=1e-9)


def test_disjoint_tuples_and_labels() -> None:
    values = np.array([0, 1, 0, 1, 2, 2, 1], dtype=np.int64)  # pairs (0,1), (0,1), (2,2)
    r = max_cell_tuples(values, 3, 2, "g", ("a", "b", "c"))
    assert r is not None
    assert r.sample_size == 3
    assert r.details["worst_cell"] in {"a,b", "c,c"} or r.details["worst_count"] == 0
    assert max_cell_tuples(values, 400, 2, "g") is None  # 160,000 cells: too large a table


def test_gap_table_by_hand() -> None:
    # value 0 at 0, 2, 3: gaps 1, 0; value 1 at 1, 5: gap 3; value 2 at 4: none
    values = np.array([0, 1, 0, 0, 2, 1], dtype=np.int64)
    table = gap_table(values, 3)
    t = gap_tail(3)
    assert t == 12  # (2/3)^11 = 0.0116 > 1/100 >= (2/3)^12 = 0.0077
    assert table.shape == (3, t + 1)
    assert table[0, 0] == 1
    assert table[0, 1] == 1
    assert table[1, 3] == 1
    assert table.sum() == 3
    probs = gap_value_probabilities(3)
    assert sum(probs.values()) == 1
    assert probs[0] == Fraction(1, 3)
    assert probs[t] == Fraction(2, 3) ** t


def test_fair_streams_reject_no_more_than_alpha() -> None:
    """The Bonferroni bounds are conservative: over 200 fair streams, each single-cell test and
    the gap test per value reject at most about 5 % of the time at alpha = 0.05."""
    rng = np.random.default_rng(37)
    rejections: dict[str, int] = {}
    for _ in range(200):
        values = rng.integers(0, 38, 6000)
        for r in cell_tests(values, 38, "g"):
            assert r.p_value is not None, r
            rejections[r.name] = rejections.get(r.name, 0) + (r.p_value <= 0.05)
    assert set(rejections) == {"values_max_cell", "pairs_max_cell", "triples_max_cell",
                               "gap_per_value"}  # fmt: skip
    for name, count in rejections.items():
        assert count <= 10 + 3 * math.sqrt(200 * 0.05), (name, count)  # 5 % plus 3 sd


def suppressed_pair(n: int, first: int, second: int, seed: int) -> list[int]:
    """Fair double zero compartments, except that ``second`` never follows ``first`` (redrawn)."""
    rng = random.Random(seed)
    out: list[int] = []
    while len(out) < n:
        x = rng.randrange(38)
        if out and out[-1] == first and x == second:
            continue
        out.append(x)
    return out


def no_repeat(n: int, seed: int) -> list[int]:
    """Fair double zero compartments, except that no compartment comes up twice in a row."""
    rng = random.Random(seed)
    out = [rng.randrange(38)]
    while len(out) < n:
        x = rng.randrange(38)
        if x != out[-1]:
            out.append(x)
    return out


def _records(path: Path, compartments: list[int]) -> Path:
    order = WHEEL_ORDER[WheelType.DOUBLE_ZERO]
    with path.open("w") as out:
        for start in range(0, len(compartments), 10_000):
            numbers = [order[k] for k in compartments[start : start + 10_000]]
            record = {"kind": "roulette_spin_batch", "params": {"wheel": "double_zero"},
                      "outcome": {"numbers": numbers}}  # fmt: skip
            out.write(json.dumps(record) + "\n")
    return path


def test_one_suppressed_pair_fails_at_50000_spins(tmp_path: Path) -> None:
    """The issue's stream: one ordered pair never occurs, everything else fair. The pairs
    chi-square over 1,406 degrees of freedom cannot see it; the single-cell test can."""
    records = _records(tmp_path / "r.jsonl", suppressed_pair(50_000, 5, 17, seed=3))
    out = tmp_path / "o.json"
    assert main(["outcomes", "--input", str(records), "--json", str(out)]) == 1
    report = json.loads(out.read_text())
    assert report["verdict"] == "FAIL"
    assert "wheel/double_zero/pairs_max_cell" in report["suite"]["failed"]
    (test,) = [t for t in report["tests"] if t["name"] == "pairs_max_cell"]
    order = WHEEL_ORDER[WheelType.DOUBLE_ZERO]
    assert test["details"]["worst_cell"] == f"{order[5]},{order[17]}"
    assert test["details"]["worst_count"] == 0


def test_no_immediate_repeat_fails() -> None:
    """A wheel that never repeats a number at once: the per-value gap test sees gap 0 missing."""
    values = np.asarray(no_repeat(50_000, seed=4), dtype=np.int64)
    results = {r.name: r for r in cell_tests(values, 38, "g")}
    assert (results["gap_per_value"].p_value or 1) < 1e-3
    assert (results["pairs_max_cell"].p_value or 1) < 1e-3


def test_a_card_barred_from_one_position_is_one_cell() -> None:
    """Fisher-Yates shuffles redrawn whenever card 0 lands on top: the omnibus position table
    dilutes that one cell among 2,601 degrees of freedom; the single-cell test does not."""
    rng = np.random.default_rng(52)
    rows = []
    while len(rows) < 1000:
        deck = rng.permutation(52)
        if deck[0] != 0:
            rows.append(deck)
    r = card_by_position_max_cell(np.asarray(rows, dtype=np.int64), "g")
    assert r.details["worst_cell"] == "position 0, card 0"
    # exact: 2 (51/52)^1000 x 2704 cells
    assert r.p_value == pytest.approx(2 * (51 / 52) ** 1000 * 2704, rel=1e-6)
