"""Sequence tests on a stream of uniform integers (wheel spins, dice faces): the empirical tests
of Knuth, TAOCP vol. 2 (3rd ed.), section 3.3.2, with exact expected distributions.

Input: ``values``, integers uniform on ``[0, d)`` under the null hypothesis, in draw order (a
wheel's compartment positions, dice faces minus one, generic integers minus ``low``).

* ``overlapping_pairs``, ``overlapping_triples`` - the overlapping serial test on k = 2, 3
  consecutive values (Good 1953, "The serial test for sampling numbers and other tests for
  randomness", Proc. Cambridge Philos. Soc. 49; the statistic of SP 800-22 section 2.11 and
  Knuth 3.3.2 B's remark on overlapping tuples): overlapping k-tuples are not independent, so
  Pearson's psi^2_k = (d^k / n) sum_w c_w^2 - n over the n circular k-windows is not
  chi-square; the first difference del psi^2_k = psi^2_k - psi^2_(k-1) is, with
  d^k - d^(k-1) degrees of freedom. **Pooling rule**: the full alphabet when the n windows
  expect at least :data:`TUPLE_MIN_EXPECTED` per k-cell; otherwise the alphabet is coarsened to
  the largest d' with n / d'^k >= 2, symbol floor(d' U_i) of the continuous values U_i below
  (exactly uniform on d' symbols under the null hypothesis; neighbouring values, in the
  alphabet's order, share a symbol); fewer than 2 x 2^k values: not applicable. With 2 or more
  per cell and thousands of cells the chi-square tail matched simulation (docs/certification.md).
* ``lag_correlation`` - serial correlation (3.3.2 K) at every lag 1 .. :data:`MAX_LAG`:
  Knuth's circular coefficient C_k of the U_i, z_k = (C_k + 1/(n-1)) / sigma_n with
  sigma_n^2 = n^2 / ((n-1)^2 (n-2)); the z_k are asymptotically independent N(0, 1), so the
  test's P-value is Sidak's 1 - (1 - p_min)^K over the two-sided p_k (the worst lag is
  reported). Needs n >= 10 K.
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
* ``uniformity_ks`` - Kolmogorov-Smirnov test (3.3.1 C) of the continuous values below.
* ``repeats`` - the repeat (period) detector of :func:`certification.outcomes._stats.repeats`
  on the values themselves.
* ``values_max_cell``, ``pairs_max_cell``, ``triples_max_cell`` - the single-cell test
  :func:`certification.outcomes._stats.max_cell` on the values and on *disjoint* pairs and
  triples (x_1 x_2, x_3 x_4, ...: independent draws, so each cell is exactly binomial, which
  overlapping windows are not), tables of at most :data:`MAX_CELL_TABLE` cells. One ordered
  pair that never occurs (everything else fair) is a dead cell: caught once
  2 (1 - 1/d^2)^(n/2) x d^2 x m <= alpha (m the tests Holm divides alpha among).
* ``gap_per_value`` - Knuth's gap test (3.3.2 C) once for each value v of an alphabet of at
  most :data:`MAX_GAP_VALUES` (wheels, dice): the gaps between successive occurrences of v
  (the values strictly between them) are i.i.d. geometric, P(r) = p (1 - p)^r, p = 1/d, with
  the tail r >= t lumped, t the least with (1 - p)^t <= 1/100; each value's chi-square
  (pooled as every chi-square here; a value with too few gaps for two cells is left out), the
  smallest P-value times d (Bonferroni over all d values, so leaving some out keeps it valid).
  A value that never repeats at once, or comes back too regularly, moves its own gap
  distribution.

Runs and order statistics assume a continuous distribution (no ties), and a wheel's 37 values
tie often. The continuous tests therefore use U_i = (X_i + V_i) / d with V_i independent
U(0, 1) from a fixed-seed numpy generator (a randomised continuity correction): under the null
hypothesis U_i is exactly i.i.d. U(0, 1), so every test keeps its exact null distribution,
and any structure of the X_i at resolution 1/d survives. The coupon collector's test takes
floor(8 U_i) for its alphabet of 8. The seed is part of the report, so a run is reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from fractions import Fraction

import numpy as np
import numpy.typing as npt
from scipy import stats

from certification.outcomes._stats import (
    TestResult,
    chi_square_gof,
    ks_uniform,
    max_cell,
    repeats,
)

__all__ = [
    "COUPON_ALPHABET",
    "JITTER_SEED",
    "MAX_CELL_TABLE",
    "MAX_GAP_VALUES",
    "MAX_LAG",
    "POKER_HAND",
    "TUPLE_MIN_EXPECTED",
    "coupon_collector",
    "discrete_stream_tests",
    "gap",
    "gap_per_value",
    "jittered_uniforms",
    "lag_correlation",
    "max_cell_tuples",
    "overlapping_tuples",
    "poker",
    "randomized_pit",
    "run_sequence_tests",
    "run_stream_tests",
    "runs_up",
    "runs_up_and_down",
    "stirling2",
    "tuple_alphabet",
]

JITTER_SEED = 20261129
#: Least expected count per k-cell of the overlapping tuple tests (their pooling rule).
TUPLE_MIN_EXPECTED = 2.0
#: Lags 1 .. MAX_LAG of the lag correlation test.
MAX_LAG = 32
TUPLE_NAMES = {2: "overlapping_pairs", 3: "overlapping_triples"}
CELL_NAMES = {1: "values_max_cell", 2: "pairs_max_cell", 3: "triples_max_cell"}
#: Largest table (d^k cells) of the single-cell tests of values, pairs and triples.
MAX_CELL_TABLE = 100_000
#: Largest alphabet that gets a gap test per value (wheels and dice).
MAX_GAP_VALUES = 64
#: Each value's gap distribution lumps the gaps whose tail probability is below this.
GAP_TAIL_MASS = Fraction(1, 100)
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


def tuple_alphabet(n: int, d: int, k: int) -> int:
    """The alphabet the overlapping k-tuple test uses for n values on d symbols: d itself when
    n / d^k >= TUPLE_MIN_EXPECTED, else the largest d' with n / d'^k >= TUPLE_MIN_EXPECTED
    (0 when even d' = 2 is too many). d = 0: the values are not uniform symbols, always
    coarsen the continuous values."""
    if d >= 2 and n >= TUPLE_MIN_EXPECTED * d**k:
        return d
    cap = d - 1 if d >= 2 else n
    coarse = int((n / TUPLE_MIN_EXPECTED) ** (1.0 / k))
    while coarse > 1 and n < TUPLE_MIN_EXPECTED * coarse**k:
        coarse -= 1
    while coarse + 1 <= cap and n >= TUPLE_MIN_EXPECTED * (coarse + 1) ** k:
        coarse += 1
    coarse = min(coarse, cap)
    return coarse if coarse >= 2 else 0


def _psi_squared(symbols: IntArray, d: int, k: int) -> float:
    """Good's psi^2_k over the n circular k-windows of ``symbols`` (psi^2_0 = 0)."""
    n = int(symbols.size)
    if k == 0:
        return 0.0
    extended = np.concatenate((symbols, symbols[: k - 1]))
    codes = np.zeros(n, dtype=np.int64)
    for j in range(k):
        codes = codes * d + extended[j : j + n]
    counts = np.bincount(codes, minlength=d**k).astype(np.float64)
    return float(d**k / n * np.dot(counts, counts) - n)


def overlapping_tuples(
    values: IntArray, d: int, uniforms: FloatArray, k: int, group: str, *, name: str | None = None
) -> TestResult:
    """The overlapping serial test del psi^2_k (module docstring) with its pooling rule.
    ``d`` = 0 when ``values`` are not uniform on their alphabet (weighted draws): the tuples are
    then always formed from the coarsened ``uniforms``."""
    name = name or TUPLE_NAMES.get(k, f"overlapping_{k}_tuples")
    n = int(values.size)
    alphabet = tuple_alphabet(n, d, k)
    method = "overlapping serial del psi^2 (Good 1953), chi-square"
    if alphabet < 2:
        need = math.ceil(TUPLE_MIN_EXPECTED * 2**k)
        return TestResult(name, group, None, None, None, method, n,
                          note=f"needs at least {need} values", min_sample=need)  # fmt: skip
    if alphabet == d:
        symbols = values.astype(np.int64)
    else:
        symbols = np.minimum((uniforms * alphabet).astype(np.int64), alphabet - 1)
    statistic = _psi_squared(symbols, alphabet, k) - _psi_squared(symbols, alphabet, k - 1)
    df = alphabet**k - alphabet ** (k - 1)
    p = float(stats.chi2.sf(statistic, df))
    details: dict[str, float | int | str] = {
        "k": k,
        "alphabet": alphabet,
        "coarsened": "no" if alphabet == d else f"{d} values -> {alphabet} symbols",
        "expected_per_cell": n / alphabet**k,
    }
    return TestResult(name, group, statistic, df, p, method, n, details=details)


def lag_correlation(uniforms: FloatArray, group: str, *, max_lag: int = MAX_LAG) -> TestResult:
    """Knuth's circular serial correlation at lags 1 .. max_lag, Sidak-combined."""
    n = int(uniforms.size)
    name = "lag_correlation"
    method = f"serial correlation at lags 1..{max_lag} (normal z, Sidak)"
    need = 10 * max_lag
    if n < need:
        return TestResult(name, group, None, None, None, method, n,
                          note=f"needs at least {need} values", min_sample=need)  # fmt: skip
    u = uniforms - float(np.mean(uniforms))
    denominator = float(np.dot(u, u))
    mu = -1.0 / (n - 1)
    sigma = math.sqrt(n * n / ((n - 1) ** 2 * (n - 2)))
    coefficients = np.array([float(np.dot(u, np.roll(u, -k))) / denominator
                             for k in range(1, max_lag + 1)])  # fmt: skip
    z = (coefficients - mu) / sigma
    p_each = 2 * stats.norm.sf(np.abs(z))
    worst = int(np.argmin(p_each))
    p_min = float(p_each[worst])
    p = 1.0 if p_min >= 1 else -math.expm1(max_lag * math.log1p(-p_min))
    return TestResult(
        name, group, float(z[worst]), None, p, method, n,
        details={"worst_lag": worst + 1, "C": float(coefficients[worst]), "lags": max_lag},
    )  # fmt: skip


def gap(values: IntArray, d: int, group: str) -> TestResult:
    marked = np.flatnonzero(values < d // 2)
    p = Fraction(d // 2, d)
    if marked.size == 0:
        return chi_square_gof("gap", group, {}, _gap_probabilities(p))
    gaps = np.diff(np.concatenate(([-1], marked))) - 1
    counts = np.bincount(np.minimum(gaps, _GAP_TAIL), minlength=_GAP_TAIL + 1)
    observed = {r: int(counts[r]) for r in range(_GAP_TAIL + 1)}
    return chi_square_gof("gap", group, observed, _gap_probabilities(p), details={"p": str(p)})


def tuple_label(d: int, k: int, symbols: Sequence[str] = ()) -> Callable[[int], str]:
    """The label of cell ``code`` of a table of k-tuples over d symbols (first symbol most
    significant), each symbol by its name in ``symbols`` (default: its index)."""

    def label(code: int) -> str:
        parts = []
        for _ in range(k):
            code, x = divmod(code, d)
            parts.append(symbols[x] if symbols else str(x))
        return ",".join(reversed(parts))

    return label


def max_cell_tuples(
    values: IntArray, d: int, k: int, group: str, symbols: Sequence[str] = ()
) -> TestResult | None:
    """:func:`max_cell` on the disjoint k-tuples of ``values`` (None: more than
    :data:`MAX_CELL_TABLE` cells)."""
    cells = d**k
    if d < 2 or cells > MAX_CELL_TABLE:
        return None
    m = int(values.size) // k
    codes = values[: m * k].reshape(m, k) @ (d ** np.arange(k - 1, -1, -1, dtype=np.int64))
    counts = np.bincount(codes, minlength=cells)
    return max_cell(CELL_NAMES[k], group, counts, 1.0 / cells, m,
                    label=tuple_label(d, k, symbols))  # fmt: skip


def gap_tail(d: int) -> int:
    """t of :func:`gap_per_value`: the least t with (1 - 1/d)^t <= GAP_TAIL_MASS."""
    q = 1 - Fraction(1, d)
    t = 1
    while q**t > GAP_TAIL_MASS:
        t += 1
    return t


def gap_value_probabilities(d: int) -> dict[int, Fraction]:
    """P(gap = r) for r < t and P(gap >= t) (the last cell) between occurrences of a value."""
    p = Fraction(1, d)
    t = gap_tail(d)
    probs = {r: p * (1 - p) ** r for r in range(t)}
    probs[t] = (1 - p) ** t
    return probs


def gap_per_value_from_table(
    table: IntArray, d: int, group: str, symbols: Sequence[str] = ()
) -> TestResult:
    """The gap test per value from its d x (t + 1) table of gap counts (row v: gaps of value
    v, column r: gaps of r values, the last column r >= t)."""
    expected = gap_value_probabilities(d)
    name = "gap_per_value"
    method = "gap test per value (chi-square each), Bonferroni over the values"
    results = [
        chi_square_gof(name, group, {r: int(c) for r, c in enumerate(row)}, expected)
        for row in table
    ]
    applied = [(v, r) for v, r in enumerate(results) if r.p_value is not None]
    gaps = int(table.sum())
    if not applied:
        need = max((r.min_sample or 0) for r in results) * d
        return TestResult(name, group, None, None, None, method, gaps,
                          note=f"no value has gaps enough for two cells; about {need} values",
                          min_sample=need or None, second_level=False)  # fmt: skip
    worst_v, worst = min(applied, key=lambda vr: vr[1].p_value or 0.0)
    p_value = min(1.0, d * float(worst.p_value or 0.0))
    return TestResult(
        name, group, worst.statistic, worst.df, p_value, method, gaps, worst.cells,
        details={"worst_value": symbols[worst_v] if symbols else str(worst_v),
                 "worst_value_p_value": float(worst.p_value or 0.0), "tail": gap_tail(d),
                 "values_tested": len(applied), "correction": "Bonferroni over all d values"},
        second_level=False,
    )  # fmt: skip


def gap_table(values: IntArray, d: int) -> IntArray:
    """The d x (t + 1) table of gaps between successive occurrences of each value."""
    t = gap_tail(d)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    same = ordered[1:] == ordered[:-1]
    gaps = np.diff(order)[same] - 1
    rows = ordered[1:][same]
    flat = np.bincount(rows * (t + 1) + np.minimum(gaps, t), minlength=d * (t + 1))
    return flat.reshape(d, t + 1).astype(np.int64)


def gap_per_value(values: IntArray, d: int, group: str, symbols: Sequence[str] = ()) -> TestResult:
    """The gap test per value (module docstring)."""
    return gap_per_value_from_table(gap_table(values, d), d, group, symbols)


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


def randomized_pit(
    indices: IntArray, probabilities: FloatArray, seed: int = JITTER_SEED
) -> FloatArray:
    """U_i = F(x_i - 1) + V_i p(x_i) for draws x_i of a discrete distribution p on 0..L-1 (the
    randomised probability integral transform): exactly i.i.d. U(0, 1) under the null
    hypothesis, so the continuous tests apply to any outcome distribution."""
    below = np.concatenate(([0.0], np.cumsum(probabilities)[:-1]))
    v = np.random.default_rng(seed).random(indices.size)
    return np.minimum(below[indices] + v * probabilities[indices], np.nextafter(1.0, 0.0))


def discrete_stream_tests(
    indices: IntArray, probabilities: Sequence[Fraction], group: str
) -> list[TestResult]:
    """Serial tests of a stream of draws from an exact discrete distribution (weighted choices,
    jackpot tiers) in log order: runs, overlapping pairs and triples and lag correlation on the
    randomised PIT, and the repeat detector (two draws agree with probability sum p^2)."""
    indices = np.asarray(indices, dtype=np.int64)
    p = np.array([float(x) for x in probabilities], dtype=np.float64)
    u = randomized_pit(indices, p)
    collision = sum((x * x for x in probabilities), Fraction(0))
    return [
        runs_up_and_down(u, group),
        runs_up(u, group),
        runs_up(u, group, down=True),
        *run_stream_tests(indices, 0, u, group),
        repeats("repeats", group, indices, collision),
    ]


def run_stream_tests(
    values: IntArray, d: int, uniforms: FloatArray, group: str
) -> list[TestResult]:
    """The tests of serial structure that need only U_i (and, for the tuples, the values when
    the full alphabet is dense enough): overlapping pairs and triples, lag correlation."""
    return [
        overlapping_tuples(values, d, uniforms, 2, group),
        overlapping_tuples(values, d, uniforms, 3, group),
        lag_correlation(uniforms, group),
    ]


def _in_values(result: TestResult, values_per_observation: float) -> TestResult:
    """A not-applicable result's ``min_sample`` restated in values of the stream (the poker
    test counts hands of 5, the coupon collector's test segments of about 21.7 values ...)."""
    if result.p_value is not None or result.min_sample is None:
        return result
    need = math.ceil(result.min_sample * values_per_observation)
    return replace(result, min_sample=need, note=f"{result.note} (about {need} values)")


def cell_tests(
    values: IntArray, d: int, group: str, symbols: Sequence[str] = ()
) -> list[TestResult]:
    """The single-cell tests of values, disjoint pairs and triples (tables of at most
    :data:`MAX_CELL_TABLE` cells) and, for alphabets of at most :data:`MAX_GAP_VALUES`, the
    gap test per value."""
    results = [r for k in (1, 2, 3) if (r := max_cell_tuples(values, d, k, group, symbols))]
    if 2 <= d <= MAX_GAP_VALUES:
        results.append(gap_per_value(values, d, group, symbols))
    return results


def run_sequence_tests(
    values: IntArray, d: int, group: str, symbols: Sequence[str] = ()
) -> list[TestResult]:
    """Every sequence test on ``values`` (uniform on [0, d) under the null hypothesis), and
    the single-cell tests (:func:`cell_tests`; ``symbols`` name the d values in their labels).
    ``min_sample`` of a test that does not apply counts values of the stream."""
    values = np.asarray(values, dtype=np.int64)
    u = jittered_uniforms(values, d)
    coupon_mean = COUPON_ALPHABET * sum(1 / i for i in range(1, COUPON_ALPHABET + 1))
    return [
        runs_up_and_down(u, group),
        _in_values(runs_up(u, group), math.e),  # a run and the value after it: e on average
        _in_values(runs_up(u, group, down=True), math.e),
        *run_stream_tests(values, d, u, group),
        _in_values(gap(values, d, group), d / max(d // 2, 1)),
        _in_values(poker(values, d, group), POKER_HAND),
        _in_values(coupon_collector(u, group), coupon_mean),
        ks_uniform("uniformity_ks", group, u),
        repeats("repeats", group, values, Fraction(1, d)),
        *cell_tests(values, d, group, symbols),
    ]
