"""Card shuffle tests: card by position, adjacent pairs and rising sequences.

A shuffle is an array of card codes, top of the shoe first. For a shoe of N distinct cards
(one deck, with or without jokers) a fair shuffle is a uniform random permutation, and:

* ``card_by_position`` - the N x N table of (position, card) counts over n shuffles is a sum of
  n independent uniform permutation matrices. Its covariance is N/(N-1) times the projection
  on the (N-1)^2-dimensional space of tables with zero row and column sums, so Pearson's
  statistic X^2 with expected n/N per cell satisfies (N-1)/N X^2 ~ chi^2((N-1)^2)
  asymptotically (a contingency table with both margins fixed; derived in the docstring of
  :func:`card_by_position`). Needs n >= 5N.
* ``adjacent_pairs`` - shuffle number s looks at positions j = s mod (N-1) and j+1: the
  difference (c[j+1] - c[j]) mod N of two distinct cards is uniform on 1..N-1, exactly, and
  independent between shuffles (one pair per shuffle keeps the cells multinomial).
* ``rising_sequences`` - the number of rising sequences (Bayer and Diaconis 1992, "Trailing
  the dovetail shuffle to its lair") of a uniform permutation is k with probability
  A(N, k-1) / N!, A the Eulerian numbers; it is 1 + the descents of the inverse permutation.
  A riffle that is not mixed enough, or a biased swap, moves this distribution.

For shoes with repeated labels (several decks) only ``top_card`` applies: the top card's label
has the exact distribution ``cards.position_distribution`` (copies / N).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

import numpy as np
import numpy.typing as npt
from scipy import stats

from certification.outcomes._stats import MIN_EXPECTED, TestResult, chi_square_gof

__all__ = [
    "adjacent_pairs",
    "card_by_position",
    "eulerian_row",
    "rising_sequences",
    "run_shuffle_tests",
    "top_card",
]

IntArray = npt.NDArray[np.int64]


def eulerian_row(n: int) -> list[int]:
    """A(n, m) for m = 0 .. n-1: permutations of n with m descents."""
    row = [1]
    for k in range(2, n + 1):
        new = [0] * k
        for m in range(k):
            left = (m + 1) * row[m] if m < len(row) else 0
            right = (k - m) * row[m - 1] if 0 <= m - 1 < len(row) else 0
            new[m] = left + right
        row = new
    return row


def _ranks(shuffles: IntArray) -> IntArray:
    """Codes replaced by their rank among the shoe's codes (0 .. N-1)."""
    codes = np.unique(shuffles[0])
    return np.searchsorted(codes, shuffles).astype(np.int64)


def card_by_position(shuffles: IntArray, group: str) -> TestResult:
    """(N-1)/N X^2 of the position x card table against chi^2((N-1)^2).

    For one uniform permutation matrix P, Cov(P_ij, P_kl) = (delta_ik - 1/N)(delta_jl - 1/N)
    / (N - 1) (check: Var = (1/N)(1 - 1/N), same row -1/N^2, elsewhere 1/(N^2 (N-1))), that
    is 1/(N-1) times a projection of rank (N-1)^2; dividing by E = n/N per cell gives the
    factor N/(N-1).
    """
    n, size = shuffles.shape
    name = "card_by_position"
    if n < MIN_EXPECTED * size:
        return TestResult(
            name, group, None, None, None, "chi-square (permutation table)", n,
            note=f"needs at least {int(MIN_EXPECTED * size)} shuffles",
        )  # fmt: skip
    ranks = _ranks(shuffles)
    table = np.zeros((size, size), dtype=np.int64)
    positions = np.broadcast_to(np.arange(size), ranks.shape)
    np.add.at(table, (positions.ravel(), ranks.ravel()), 1)
    e = n / size
    x2 = float(np.sum((table - e) ** 2) / e)
    statistic = x2 * (size - 1) / size
    df = (size - 1) ** 2
    p = float(stats.chi2.sf(statistic, df))
    worst = np.unravel_index(int(np.argmax(np.abs(table - e))), table.shape)
    return TestResult(
        name, group, statistic, df, p, "chi-square (permutation table, scaled (N-1)/N)", n,
        details={
            "worst_position": int(worst[0]),
            "worst_card_rank": int(worst[1]),
            "worst_count": int(table[worst]),
            "expected_per_cell": e,
        },
    )  # fmt: skip


def adjacent_pairs(shuffles: IntArray, group: str) -> TestResult:
    n, size = shuffles.shape
    ranks = _ranks(shuffles)
    j = np.arange(n) % (size - 1)
    rows = np.arange(n)
    diff = (ranks[rows, j + 1] - ranks[rows, j]) % size
    counts = np.bincount(diff, minlength=size)
    observed = {k: int(counts[k]) for k in range(size)}
    expected = {k: Fraction(1, size - 1) for k in range(1, size)}
    return chi_square_gof("adjacent_pairs", group, observed, expected)


def rising_sequences(shuffles: IntArray, group: str) -> TestResult:
    size = shuffles.shape[1]
    ranks = _ranks(shuffles)
    inverse = np.argsort(ranks, axis=1)  # position of card rank r
    rising = 1 + np.count_nonzero(np.diff(inverse, axis=1) < 0, axis=1)
    counts = np.bincount(rising, minlength=size + 1)
    eulerian = eulerian_row(size)
    total = math.factorial(size)
    expected = {k: Fraction(eulerian[k - 1], total) for k in range(1, size + 1)}
    observed = {k: int(counts[k]) for k in range(1, size + 1)}
    return chi_square_gof("rising_sequences", group, observed, expected)


def top_card(shuffles: IntArray, expected: Mapping[int, Fraction], group: str) -> TestResult:
    counts: dict[int, int] = {}
    for code in shuffles[:, 0].tolist():
        counts[code] = counts.get(code, 0) + 1
    return chi_square_gof("top_card", group, counts, expected)


def run_shuffle_tests(
    shuffles: IntArray, top_expected: Mapping[int, Fraction], *, distinct: bool, group: str
) -> list[TestResult]:
    """The shuffle tests that apply: all of them for distinct cards, ``top_card`` otherwise."""
    results = [top_card(shuffles, top_expected, group)]
    if distinct:
        results += [
            card_by_position(shuffles, group),
            adjacent_pairs(shuffles, group),
            rising_sequences(shuffles, group),
        ]
    return results
