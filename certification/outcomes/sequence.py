"""Sequence tests on a stream of uniform integers (wheel spins, dice faces): the empirical tests
of Knuth, TAOCP vol. 2 (3rd ed.), section 3.3.2, with exact expected distributions.

Input: ``values``, integers uniform on ``[0, d)`` under the null hypothesis, in draw order (a
wheel's compartment positions, dice faces minus one).

* ``serial_pairs`` - serial test (3.3.2 B): non-overlapping pairs over d^2 cells.
* ``gap`` - gap test (3.3.2 C): gaps between values in ``[0, d // 2)``; P(gap = r) =
  p (1 - p)^r, the tail (1 - p)^t lumped, p = (d // 2) / d.
* ``poker`` - poker test (3.3.2 D, the "count distinct values" form): groups of 5;
  P(r distinct) = d (d-1) ... (d-r+1) / d^5 * S(5, r) (Stirling numbers of the second kind).
* ``coupon_collector`` - coupon collector's test (3.3.2 E) on an alphabet of 8 (see below):
  P(segment length r) = 8! / 8^r * S(r-1, 7) for 8 <= r < t, tail 1 - 8! / 8^(t-1) S(t-1, 8).
* ``runs_up`` / ``runs_down`` - run test (3.3.2 G) with the element after each run thrown away,
  which makes run lengths independent with P(r) = 1/r! - 1/(r+1)! (Knuth's remark in
  3.3.2 G); lengths 6 and above lumped (1/720).
* ``runs_up_and_down`` - the total number of runs up and down (Levene and Wolfowitz 1944,
  Ann. Math. Statist. 15): mean (2n - 1)/3, variance (16n - 29)/90, normal approximation.
* ``serial_correlation`` - serial correlation test (3.3.2 K): Knuth's circular lag-1
  coefficient C against mu_n = -1/(n-1), sigma_n^2 = n^2 / ((n-1)^2 (n-2)), normal.
* ``uniformity_ks`` - Kolmogorov-Smirnov test (3.3.1 C) of the continuous values below.

Runs and order statistics assume a continuous distribution (no ties), and a wheel's 37 values
tie often. The continuous tests therefore use U_i = (X_i + V_i) / d with V_i independent
U(0, 1) from a fixed-seed numpy generator (a randomised continuity correction): under the null
hypothesis U_i is exactly i.i.d. U(0, 1), so every test keeps its exact null distribution,
and any structure of the X_i at resolution 1/d survives. The coupon collector's test takes
floor(8 U_i) for its alphabet of 8. The seed is part of the report, so a run is reproducible.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt
from scipy import stats

from certification.outcomes._stats import TestResult, chi_square_gof, ks_uniform

__all__ = [
    "COUPON_ALPHABET",
    "JITTER_SEED",
    "POKER_HAND",
    "coupon_collector",
    "gap",
    "jittered_uniforms",
    "poker",
    "run_sequence_tests",
    "runs_up",
    "runs_up_and_down",
    "serial_correlation",
    "serial_pairs",
    "stirling2",
]

JITTER_SEED = 20261129
POKER_HAND = 5
COUPON_ALPHABET = 8
_COUPON_TAIL = 40
_GAP_TAIL = 40
_RUN_TAIL = 6

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def stirling2(n: int, k: int) -> int:
    """Stirling number of the second kind S(n, k), exact."""
    if n == k:
        return 1
    if k == 0 or k > n:
        return 0
    row = [1] + [0] * k  # S(0, j)
    for i in range(1, n + 1):
        new = [0] * (k + 1)
        for j in range(1, min(i, k) + 1):
            new[j] = j * row[j] + row[j - 1]
        row = new
    return row[k]


def jittered_uniforms(values: IntArray, d: int, seed: int = JITTER_SEED) -> FloatArray:
    """U_i = (X_i + V_i) / d, V_i ~ U(0, 1) i.i.d. from a fixed-seed generator."""
    v = np.random.default_rng(seed).random(values.size)
    return (values.astype(np.float64) + v) / d


def serial_pairs(values: IntArray, d: int, group: str) -> TestResult:
    pairs = values[: values.size // 2 * 2].reshape(-1, 2)
    codes = pairs[:, 0] * d + pairs[:, 1]
    counts = np.bincount(codes, minlength=d * d)
    observed = {(a, b): int(counts[a * d + b]) for a in range(d) for b in range(d)}
    expected = {(a, b): Fraction(1, d * d) for a in range(d) for b in range(d)}
    return chi_square_gof("serial_pairs", group, observed, expected)


def gap(values: IntArray, d: int, group: str) -> TestResult:
    marked = np.flatnonzero(values < d // 2)
    p = Fraction(d // 2, d)
    if marked.size == 0:
        return chi_square_gof("gap", group, {}, _gap_probabilities(p))
    gaps = np.diff(np.concatenate(([-1], marked))) - 1
    counts = np.bincount(np.minimum(gaps, _GAP_TAIL), minlength=_GAP_TAIL + 1)
    observed = {r: int(counts[r]) for r in range(_GAP_TAIL + 1)}
    return chi_square_gof("gap", group, observed, _gap_probabilities(p), details={"p": str(p)})


def _gap_probabilities(p: Fraction) -> dict[int, Fraction]:
    probs = {r: p * (1 - p) ** r for r in range(_GAP_TAIL)}
    probs[_GAP_TAIL] = (1 - p) ** _GAP_TAIL
    return probs


def poker(values: IntArray, d: int, group: str) -> TestResult:
    hands = values[: values.size // POKER_HAND * POKER_HAND].reshape(-1, POKER_HAND)
    hands = np.sort(hands, axis=1)
    distinct = 1 + np.count_nonzero(np.diff(hands, axis=1), axis=1)
    counts = np.bincount(distinct, minlength=POKER_HAND + 1)
    top = min(POKER_HAND, d)
    expected = {
        r: Fraction(math.perm(d, r) * stirling2(POKER_HAND, r), d**POKER_HAND)
        for r in range(1, top + 1)
    }
    observed = {r: int(counts[r]) for r in range(1, POKER_HAND + 1)}
    return chi_square_gof("poker", group, observed, expected)


def coupon_collector(uniforms: FloatArray, group: str) -> TestResult:
    d = COUPON_ALPHABET
    symbols = np.minimum((uniforms * d).astype(np.int64), d - 1)
    lengths: list[int] = []
    seen = 0
    length = 0
    full = (1 << d) - 1
    for s in symbols.tolist():
        seen |= 1 << s
        length += 1
        if seen == full:
            lengths.append(min(length, _COUPON_TAIL))
            seen = 0
            length = 0
    fact = math.factorial(d)
    expected = {r: Fraction(fact * stirling2(r - 1, d - 1), d**r) for r in range(d, _COUPON_TAIL)}
    covered = Fraction(fact * stirling2(_COUPON_TAIL - 1, d), d ** (_COUPON_TAIL - 1))
    expected[_COUPON_TAIL] = 1 - covered
    counts = np.bincount(np.asarray(lengths, dtype=np.int64), minlength=_COUPON_TAIL + 1)
    observed = {r: int(counts[r]) for r in range(d, _COUPON_TAIL + 1)}
    return chi_square_gof("coupon_collector", group, observed, expected, details={"alphabet": d})


def _run_lengths(u: FloatArray) -> list[int]:
    """Lengths of ascending runs, skipping the element that follows each run (Knuth 3.3.2 G)."""
    lengths: list[int] = []
    xs = u.tolist()
    i = 0
    n = len(xs)
    while i < n:
        length = 1
        while i + length < n and xs[i + length] > xs[i + length - 1]:
            length += 1
        if i + length >= n:
            break  # an unfinished run at the end is not counted
        lengths.append(min(length, _RUN_TAIL))
        i += length + 1
    return lengths


def runs_up(uniforms: FloatArray, group: str, *, down: bool = False) -> TestResult:
    lengths = _run_lengths(-uniforms if down else uniforms)
    expected = {
        r: Fraction(1, math.factorial(r)) - Fraction(1, math.factorial(r + 1))
        for r in range(1, _RUN_TAIL)
    }
    expected[_RUN_TAIL] = Fraction(1, math.factorial(_RUN_TAIL))
    counts = np.bincount(np.asarray(lengths, dtype=np.int64), minlength=_RUN_TAIL + 1)
    observed = {r: int(counts[r]) for r in range(1, _RUN_TAIL + 1)}
    return chi_square_gof("runs_down" if down else "runs_up", group, observed, expected)


def runs_up_and_down(uniforms: FloatArray, group: str) -> TestResult:
    n = int(uniforms.size)
    name = "runs_up_and_down"
    if n < 20:
        return TestResult(name, group, None, None, None, "normal", n, note="fewer than 20 values")
    signs = np.sign(np.diff(uniforms))
    runs = 1 + int(np.count_nonzero(signs[1:] != signs[:-1]))
    mean = (2 * n - 1) / 3
    sd = math.sqrt((16 * n - 29) / 90)
    z = (runs - mean) / sd
    p = float(2 * stats.norm.sf(abs(z)))
    return TestResult(
        name, group, z, None, p, "normal (z)", n, details={"runs": runs, "expected": mean}
    )


def serial_correlation(values: IntArray, group: str) -> TestResult:
    n = int(values.size)
    name = "serial_correlation"
    if n < 20:
        return TestResult(name, group, None, None, None, "normal", n, note="fewer than 20 values")
    u = values.astype(np.float64)
    nxt = np.roll(u, -1)
    s = float(np.sum(u))
    num = n * float(np.dot(u, nxt)) - s * s
    den = n * float(np.dot(u, u)) - s * s
    if den == 0:
        return TestResult(name, group, None, None, 0.0, "normal (z)", n, note="constant sequence")
    c = num / den
    mu = -1 / (n - 1)
    sigma = math.sqrt(n * n / ((n - 1) ** 2 * (n - 2)))
    z = (c - mu) / sigma
    p = float(2 * stats.norm.sf(abs(z)))
    return TestResult(name, group, z, None, p, "normal (z)", n, details={"C": c})


def run_sequence_tests(values: IntArray, d: int, group: str) -> list[TestResult]:
    """Every sequence test on ``values`` (uniform on [0, d) under the null hypothesis)."""
    values = np.asarray(values, dtype=np.int64)
    u = jittered_uniforms(values, d)
    return [
        runs_up_and_down(u, group),
        runs_up(u, group),
        runs_up(u, group, down=True),
        serial_correlation(values, group),
        serial_pairs(values, d, group),
        gap(values, d, group),
        poker(values, d, group),
        coupon_collector(u, group),
        ks_uniform("uniformity_ks", group, u),
    ]
