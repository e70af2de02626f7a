"""The tests of serial structure added to the outcome battery: overlapping tuples (Good's
del psi^2 and its pooling rule), lag correlation, the repeat detector, the randomised PIT, and
the multi-deck shuffle tables. Known answers come from SP 800-22's worked example and from
simulation with fixed seeds; every null distribution is checked by a Kolmogorov-Smirnov test of
the P-values of fair samples."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from certification.outcomes._stats import repeats
from certification.outcomes.sequence import (
    _psi_squared,
    discrete_stream_tests,
    jittered_uniforms,
    lag_correlation,
    overlapping_tuples,
    randomized_pit,
    tuple_alphabet,
)
from certification.outcomes.shuffles import adjacent_pairs, card_by_position, repeated_shuffles
from tests.unit.certification.support import load_vectors, text_bits


def _ks(p_values: list[float]) -> float:
    return float(stats.kstest(p_values, "uniform").pvalue)


def test_psi_squared_reproduces_the_sp800_22_serial_example() -> None:
    """Section 2.11.4: epsilon = 0011011101, m = 3 gives del psi^2_3 = 1.6 and P = 0.808792
    with 2^(m-1) = 4 degrees of freedom (= d^k - d^(k-1) for d = 2, k = 3)."""
    (example,) = [e for e in load_vectors()["examples"] if e["test"] == "serial"]
    bits = text_bits(example["input"]).astype(np.int64)
    assert _psi_squared(bits, 2, 3) == pytest.approx(2.8)
    assert _psi_squared(bits, 2, 2) == pytest.approx(1.2)
    assert _psi_squared(bits, 2, 1) == pytest.approx(0.4)
    delta = _psi_squared(bits, 2, 3) - _psi_squared(bits, 2, 2)
    assert float(stats.chi2.sf(delta, 4)) == pytest.approx(example["p_values"][0], abs=1e-6)


@pytest.mark.parametrize(
    ("n", "d", "k", "alphabet"),
    [
        (20_000, 37, 2, 37),  # 14.6 per cell: the full alphabet
        (20_000, 37, 3, 21),  # 2 x 21^3 = 18,522 <= 20,000 < 2 x 22^3
        (200_000, 38, 3, 38),  # 3.6 per cell: full alphabet
        (100_000, 38, 3, 36),  # 1.8 per cell: 2 x 36^3 = 93,312 <= 100,000 < 2 x 37^3
        (110_000, 37, 3, 37),  # 2.17 per cell: full alphabet
        (15, 37, 3, 0),  # fewer than 2 x 2^3 values: not applicable
        (16, 37, 3, 2),
        (5_000, 0, 2, 50),  # a non-uniform stream is always coarsened
    ],
)
def test_tuple_pooling_rule(n: int, d: int, k: int, alphabet: int) -> None:
    assert tuple_alphabet(n, d, k) == alphabet


@pytest.mark.parametrize(
    ("n", "d", "k"),
    [(4_000, 37, 2), (20_000, 37, 3), (3_000, 6, 3), (600, 37, 3)],
    ids=["pairs-dense", "triples-coarsened", "dice-triples", "triples-small"],
)
def test_overlapping_tuples_have_their_null_distribution(n: int, d: int, k: int) -> None:
    rng = np.random.default_rng(1000 + n + d + k)
    p_values = []
    for _ in range(150):
        values = rng.integers(0, d, n)
        u = jittered_uniforms(values, d, seed=int(rng.integers(1 << 30)))
        r = overlapping_tuples(values, d, u, k, "g")
        assert r.p_value is not None
        p_values.append(r.p_value)
    assert _ks(p_values) > 0.001
    assert np.mean(np.array(p_values) < 0.01) < 0.05


def test_lag_correlation_has_its_null_distribution() -> None:
    rng = np.random.default_rng(21)
    p_values = [lag_correlation(rng.random(2_000), "g").p_value for _ in range(200)]
    assert all(p is not None for p in p_values)
    assert _ks([p for p in p_values if p is not None]) > 0.001


def test_lag_correlation_names_the_lag() -> None:
    rng = np.random.default_rng(5)
    u = rng.random(20_000)
    copy = rng.random(u.size) < 0.2
    u[17:][copy[17:]] = u[:-17][copy[17:]]  # 20 % of values repeat the one 17 before
    r = lag_correlation(u, "g")
    assert r.p_value is not None
    assert r.p_value < 1e-12
    assert r.details["worst_lag"] == 17
    short = lag_correlation(rng.random(319), "g")
    assert short.p_value is None
    assert short.min_sample == 320


def test_repeats_catches_a_period_and_names_it() -> None:
    rng = np.random.default_rng(3)
    block = rng.integers(0, 37, 5_000)
    fair = rng.integers(0, 37, 12_000)
    periodic = np.tile(block, 3)[:12_000]
    assert repeats("r", "g", fair, Fraction(1, 37)).p_value == 1.0
    r = repeats("r", "g", periodic, Fraction(1, 37))
    window = int(r.details["window"])
    assert r.details["period"] == 5_000
    # every window from position 5,000 on repeats the one a period earlier (and two back)
    n_windows = 12_000 - window + 1
    once = n_windows - 5_000
    twice = n_windows - 10_000
    assert r.details["pairs"] == once + twice
    assert r.p_value is not None
    assert r.p_value <= 1e-6 / (once + twice) * 1.0000001
    # a sample shorter than one period plus a window sees nothing
    assert repeats("r", "g", periodic[: 5_000 + window - 1], Fraction(1, 37)).p_value == 1.0


def test_repeats_expectation_is_exact_for_non_uniform_symbols() -> None:
    """Pairs of disjoint windows are equal with probability exactly q^L: the mean count over
    many fair streams matches the expectation the P-value divides (with a loose target, so
    that pairs are common). Counting overlapping windows too would inflate it for skewed
    symbols (P(x = y = z) > q^2)."""
    p = np.array([0.7, 0.2, 0.1])
    q = float(np.sum(p * p))
    rng = np.random.default_rng(8)
    observed = []
    expected = None
    for _ in range(400):
        stream = rng.choice(3, size=60, p=p)
        r = repeats("r", "g", stream, q, expectation=3.0)
        observed.append(r.details["pairs"])
        expected = r.details["expected_pairs"]
    assert expected is not None
    assert np.mean(observed) == pytest.approx(expected, rel=0.15)


def test_randomized_pit_is_uniform_and_discrete_streams_pass() -> None:
    weights = [1, 2, 3, 4, 10]
    total = sum(weights)
    probs = np.array(weights) / total
    rng = np.random.default_rng(4)
    draws = rng.choice(len(weights), size=20_000, p=probs)
    u = randomized_pit(draws, probs)
    assert float(stats.kstest(u, "uniform").pvalue) > 0.001
    results = discrete_stream_tests(draws, [Fraction(w, total) for w in weights], "g")
    assert [r.name for r in results] == [
        "runs_up_and_down", "runs_up", "runs_down", "overlapping_pairs",
        "overlapping_triples", "lag_correlation", "repeats",
    ]  # fmt: skip
    assert all(r.p_value is not None and r.p_value > 1e-4 for r in results), results


def _multiset_shuffles(rng: np.random.Generator, shoe: np.ndarray, n: int) -> np.ndarray:
    return np.array([rng.permutation(shoe) for _ in range(n)], dtype=np.int64)


def test_card_by_position_for_a_shoe_has_its_null_distribution() -> None:
    """Three labels, three copies each (a miniature multi-deck shoe): (N-1)/N X^2 is
    chi-square with (N-1)(L-1) degrees of freedom."""
    rng = np.random.default_rng(17)
    shoe = np.repeat(np.arange(3), 3)
    p_values = []
    for _ in range(200):
        r = card_by_position(_multiset_shuffles(rng, shoe, 60), "g")
        assert r.df == (9 - 1) * (3 - 1)
        assert r.p_value is not None
        p_values.append(r.p_value)
    assert _ks(p_values) > 0.001


def test_adjacent_pairs_for_a_shoe_has_its_null_distribution() -> None:
    rng = np.random.default_rng(19)
    shoe = np.repeat(np.arange(4), 2)
    p_values = []
    for _ in range(200):
        r = adjacent_pairs(_multiset_shuffles(rng, shoe, 400), "g")
        assert r.p_value is not None
        p_values.append(r.p_value)
    assert _ks(p_values) > 0.001


def test_shoe_tests_catch_a_poorly_mixed_shoe() -> None:
    """A six-deck shoe whose last deck is never mixed in (the five others shuffled, the sixth
    left in order below them): the position x label table sees it."""
    rng = np.random.default_rng(23)
    ordered = np.arange(52)
    poor = np.array(
        [np.concatenate([rng.permutation(np.tile(ordered, 5)), ordered]) for _ in range(400)],
        dtype=np.int64,
    )
    r = card_by_position(poor, "g")
    assert r.p_value is not None
    assert r.p_value < 1e-9
    assert r.df == (312 - 1) * (52 - 1)
    fair = np.array([rng.permutation(np.tile(ordered, 6)) for _ in range(400)], dtype=np.int64)
    assert (card_by_position(fair, "g").p_value or 0) > 1e-4


def test_repeated_shuffles_are_decisive() -> None:
    rng = np.random.default_rng(29)
    shuffles = np.array([rng.permutation(52) for _ in range(100)], dtype=np.int64)
    assert repeated_shuffles(shuffles, "g").p_value == 1.0
    shuffles[70] = shuffles[10]
    r = repeated_shuffles(shuffles, "g")
    assert r.p_value is not None
    assert r.p_value < 1e-60
    assert math.isclose(float(r.details["pairs"]), 1.0)


def test_pairwise_windows_helper_matches_brute_force() -> None:
    """The vectorised pair count equals a direct count of equal windows at distance >= L; the
    alternating stretch has equal windows at distance 2 < L as well, which must not count."""
    rng = np.random.default_rng(31)
    stream = np.concatenate((rng.integers(0, 3, 300), np.tile([0, 1], 15), rng.integers(0, 3, 50)))
    r = repeats("r", "g", stream, Fraction(1, 3), expectation=50.0)
    window = int(r.details["window"])
    windows = [tuple(stream[i : i + window]) for i in range(stream.size - window + 1)]
    brute = sum(
        1 for i, a in enumerate(windows) for j in range(i + window, len(windows)) if windows[j] == a
    )
    assert r.details["pairs"] == brute
    close = sum(
        1 for i, a in enumerate(windows) for j in range(i + 1, i + window) if j < len(windows)
        and windows[j] == a
    )  # fmt: skip
    assert close > 0  # the alternating stretch is there to be left out
