"""Goodness-of-fit primitives shared by the outcome-level tests: chi-square with pooled cells,
Kolmogorov-Smirnov, and the corrections applied when many tests run at once.

* Chi-square goodness of fit (Knuth, TAOCP vol. 2, 3rd ed., section 3.3.1 B): cells whose
  expected count is below :data:`MIN_EXPECTED` (5, Knuth's rule of thumb) are pooled, smallest
  first, until every pooled cell expects at least 5; the degrees of freedom are the pooled
  cells minus one. The P-value is ``scipy.stats.chi2.sf``.
* Kolmogorov-Smirnov (Knuth section 3.3.1 C) through ``scipy.stats.kstest``.
* Holm's step-down procedure (Holm 1979, "A simple sequentially rejective multiple test
  procedure") controls the family-wise error rate of the whole battery at alpha; the second-
  level test (SP 800-22 section 4.2.2 in spirit, here a Kolmogorov-Smirnov test of the P-values
  against U(0, 1)) looks for P-values that are individually fine but not uniform together.
* The single-cell test :func:`max_cell`: the largest standardized residual over the cells of a
  multinomial table (values, disjoint pairs or triples, a deck's positions), each cell's count
  judged by its exact binomial tails and the worst cell's P-value multiplied by the number of
  cells (Bonferroni, valid whatever the dependence between cells). An omnibus chi-square over
  thousands of cells dilutes one dead or doubled cell among its degrees of freedom; this test
  does not.
* The repeat (period) detector :func:`repeats`: windows of L consecutive symbols, L the
  shortest for which a fair stream expects at most :data:`REPEAT_EXPECTATION` pairs of equal
  windows at distance >= L (disjoint windows: each pair is equal with probability exactly
  q^L, q the chance that two symbols are equal); a stream that repeats itself with period
  T >= L gives about n - T such pairs once it holds more than T + L symbols. Its P-value is
  Markov's bound min(1, expected / observed) (exact validity, no approximation); it is 1 when
  no pair is seen, so the test takes no part in the second-level uniformity check.

Expected probabilities arrive as exact :class:`fractions.Fraction` values (the outcome modules'
distribution functions) and are converted to floats only to form the statistic. Nothing here
reads files, clocks or generators.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TypeVar

import numpy as np
import numpy.typing as npt
from scipy import stats

__all__ = [
    "MIN_EXPECTED",
    "REPEAT_EXPECTATION",
    "Cell",
    "TestResult",
    "chi_square_gof",
    "holm",
    "holm_adjusted",
    "inclusion_test",
    "ks_uniform",
    "markov_p",
    "max_cell",
    "min_observations",
    "pool_cells",
    "repeats",
    "second_level",
]

K = TypeVar("K", bound=Hashable)

#: The least expected count a chi-square cell may have (Knuth 3.3.1 B); sparser cells are pooled.
MIN_EXPECTED = 5.0
#: Expected number of equal window pairs in a fair stream that sets the repeat detector's window.
REPEAT_EXPECTATION = 1e-6


@dataclass(frozen=True)
class Cell:
    """One (possibly pooled) chi-square cell: its label, observed and expected counts."""

    label: str
    observed: int
    expected: float


@dataclass(frozen=True)
class TestResult:
    """One outcome-level test: the statistic, its reference distribution and the P-value.

    ``cells`` are the (pooled) observed and expected counts the statistic was formed from, for
    the report's frequency charts; ``df`` is ``None`` for tests without degrees of freedom
    (Kolmogorov-Smirnov, normal z). ``p_value`` is ``None`` when the test does not apply (too
    few data: ``note`` says why, ``min_sample`` how many it needs where known); such a test
    makes no decision. ``second_level`` is False for tests whose P-values are not continuous
    under the null hypothesis (the repeat detector), which the second-level check leaves out.
    """

    name: str
    group: str
    statistic: float | None
    df: int | None
    p_value: float | None
    method: str
    sample_size: int
    cells: tuple[Cell, ...] = ()
    note: str = ""
    details: Mapping[str, float | int | str] = field(default_factory=dict)
    min_sample: int | None = None
    second_level: bool = True

    @property
    def applicable(self) -> bool:
        return self.p_value is not None


def _label(key: Hashable) -> str:
    if isinstance(key, tuple):
        return ",".join(str(k) for k in key)
    return str(key)


def pool_cells(
    observed: Sequence[int], expected: Sequence[float], labels: Sequence[str]
) -> list[Cell]:
    """Pools cells until each expects at least :data:`MIN_EXPECTED`.

    Cells are visited in their given order (so neighbouring values, such as the tail of a
    length distribution, merge together); a run of sparse cells is merged until it reaches the
    minimum, and a sparse remainder at the end joins the last pooled cell.
    """
    pooled: list[Cell] = []
    obs = 0
    exp = 0.0
    names: list[str] = []
    for o, e, name in zip(observed, expected, labels, strict=True):
        obs += int(o)
        exp += float(e)
        names.append(name)
        if exp >= MIN_EXPECTED:
            pooled.append(Cell(_join(names), obs, exp))
            obs, exp, names = 0, 0.0, []
    if names:
        if pooled:
            last = pooled.pop()
            label = _join([last.label, *names])
            pooled.append(Cell(label, last.observed + obs, last.expected + exp))
        else:
            pooled.append(Cell(_join(names), obs, exp))
    return pooled


def min_observations(probabilities: Sequence[float]) -> int | None:
    """The fewest observations for which :func:`pool_cells` forms at least two cells from
    cells of these probabilities (None: never, a single cell)."""
    cumulative = np.cumsum(np.asarray(probabilities, dtype=np.float64))
    if cumulative.size < 2:
        return None

    def two_cells(n: int) -> bool:
        first = int(np.searchsorted(cumulative, MIN_EXPECTED / n - 1e-12))
        return first < cumulative.size - 1 and n * (cumulative[-1] - cumulative[first]) >= (
            MIN_EXPECTED - 1e-9
        )

    high = 1
    while not two_cells(high):
        high *= 2
        if high > 1 << 50:
            return None
    low = high // 2
    while high - low > 1:
        mid = (low + high) // 2
        if two_cells(mid):
            high = mid
        else:
            low = mid
    return high


def _join(names: Sequence[str]) -> str:
    if len(names) == 1:
        return names[0]
    return f"{names[0].split('..')[0]}..{names[-1].split('..')[-1]}"


def chi_square_gof(
    name: str,
    group: str,
    observed: Mapping[K, int],
    expected: Mapping[K, Fraction],
    *,
    order: Sequence[K] | None = None,
    details: Mapping[str, float | int | str] | None = None,
) -> TestResult:
    """Chi-square goodness of fit of ``observed`` counts to the exact ``expected`` distribution.

    Keys of ``observed`` outside ``expected`` have probability 0: any such count is an
    impossible outcome, and the test returns P = 0 (with a note) rather than a statistic.
    ``order`` gives the cell order for pooling (default: the order of ``expected``).
    """
    keys = list(order) if order is not None else list(expected)
    impossible = sum(c for k, c in observed.items() if k not in expected and c)
    n = sum(observed.values())
    extra = dict(details or {})
    if impossible:
        return TestResult(
            name, group, None, None, 0.0, "chi-square", n,
            note=f"{impossible} observation(s) outside the distribution's support",
            details=extra,
        )  # fmt: skip
    total_p = sum((expected[k] for k in keys), Fraction(0))
    if total_p != 1:
        raise ValueError(f"{name}: expected probabilities sum to {total_p}, not 1")
    counts = [int(observed.get(k, 0)) for k in keys]
    exp = [float(expected[k]) * n for k in keys]
    cells = pool_cells(counts, exp, [_label(k) for k in keys])
    if n == 0 or len(cells) < 2:
        need = min_observations([float(expected[k]) for k in keys])
        return TestResult(
            name, group, None, None, None, "chi-square", n, tuple(cells),
            note=f"too few observations ({n}) for two cells expecting >= {MIN_EXPECTED:g}"
            + (f"; needs {need}" if need else ""),
            details=extra, min_sample=need,
        )  # fmt: skip
    o = np.array([c.observed for c in cells], dtype=np.float64)
    e = np.array([c.expected for c in cells], dtype=np.float64)
    statistic = float(np.sum((o - e) ** 2 / e))
    df = len(cells) - 1
    p = float(stats.chi2.sf(statistic, df))
    return TestResult(name, group, statistic, df, p, "chi-square", n, tuple(cells), details=extra)


def inclusion_test(
    name: str, group: str, draws: Sequence[Sequence[str]], layout: Sequence[str]
) -> TestResult:
    """Per-number inclusion counts of draws without replacement (Fire Numbers, multi-ball).

    A draw of c distinct numbers out of L, uniform over c-subsets, includes each number with
    probability c/L; its indicator vector has covariance c (L - c) / (L (L - 1)) times the
    projection I - J/L. Pearson's X^2 with expected sum(c)/L per number is therefore
    f chi^2(L - 1) with f = sum c (L - c) / ((L - 1) sum c) (f = 1 for single draws); the
    statistic reported is X^2 / f.
    """
    size = len(layout)
    index = {x: i for i, x in enumerate(layout)}
    counts = np.zeros(size, dtype=np.int64)
    total = 0
    spread = 0
    for draw in draws:
        c = len(draw)
        total += c
        spread += c * (size - c)
        for x in draw:
            if x not in index:
                return TestResult(
                    name, group, None, None, 0.0, "chi-square (inclusion)", len(draws),
                    note=f"number {x!r} is not on the layout",
                )  # fmt: skip
            counts[index[x]] += 1
    e = total / size
    if e < MIN_EXPECTED or spread == 0:
        return TestResult(
            name, group, None, None, None, "chi-square (inclusion)", len(draws),
            note=f"needs an expected {MIN_EXPECTED:g} inclusions per number",
        )  # fmt: skip
    f = spread / ((size - 1) * total)
    statistic = float(np.sum((counts - e) ** 2) / e) / f
    df = size - 1
    cells = tuple(Cell(x, int(counts[i]), e) for i, x in enumerate(layout))
    return TestResult(
        name, group, statistic, df, float(stats.chi2.sf(statistic, df)),
        "chi-square (inclusion, scaled by 1/f)", len(draws), cells,
        details={"f": f},
    )  # fmt: skip


def ks_uniform(
    name: str, group: str, values: npt.NDArray[np.float64], *, method: str = "Kolmogorov-Smirnov"
) -> TestResult:
    """Kolmogorov-Smirnov test of ``values`` against U(0, 1) (exact distribution where scipy
    computes it, else its asymptotic one)."""
    n = int(values.size)
    if n < 2:
        return TestResult(name, group, None, None, None, method, n, note="fewer than 2 values")
    result = stats.kstest(values, "uniform")
    return TestResult(name, group, float(result.statistic), None, float(result.pvalue), method, n)


def holm(p_values: Sequence[float], alpha: float) -> list[bool]:
    """Holm's step-down decisions: ``True`` where the null hypothesis is kept.

    The i-th smallest P-value (0-based) is compared with alpha / (m - i); from the first one
    above its bound on, every hypothesis is kept.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    keep = [True] * m
    for rank, i in enumerate(order):
        if p_values[i] <= alpha / (m - rank):
            keep[i] = False
        else:
            break
    return keep


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted P-values (monotone; compare each with alpha)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def second_level(p_values: Sequence[float]) -> TestResult:
    """Kolmogorov-Smirnov test of the battery's P-values against U(0, 1).

    Only meaningful for continuous test statistics; discrete ones make P-values slightly
    conservative, which this test tolerates at the sample sizes of a battery (tens of tests).
    """
    return ks_uniform(
        "p_value_uniformity",
        "second_level",
        np.asarray(p_values, dtype=np.float64),
        method="Kolmogorov-Smirnov of the P-values against U(0, 1)",
    )


def _codes(symbols: npt.NDArray[np.integer] | Sequence[Hashable]) -> npt.NDArray[np.int64]:
    """Integer codes of ``symbols``: an integer array as it is, anything else by first
    appearance."""
    if isinstance(symbols, np.ndarray):
        if symbols.ndim == 1 and np.issubdtype(symbols.dtype, np.integer):
            return symbols.astype(np.int64, copy=False)
        raise ValueError("an array of symbols must be one-dimensional integers")
    index: dict[Hashable, int] = {}
    return np.fromiter((index.setdefault(x, len(index)) for x in symbols), dtype=np.int64)


def _window_pairs(n_windows: int, window: int) -> int:
    """Pairs of windows (i < j) at distance j - i >= window among ``n_windows``."""
    far = n_windows - window
    return far * (far + 1) // 2 if far > 0 else 0


def markov_p(observed: int, expected: float) -> float:
    """Markov's bound on P(at least ``observed`` equal pairs) given their ``expected`` number
    under the null hypothesis: 1 when none is seen."""
    return 1.0 if observed == 0 else min(1.0, expected / observed)


def repeats(
    name: str,
    group: str,
    symbols: npt.NDArray[np.integer] | Sequence[Hashable],
    collision: Fraction | float,
    *,
    expectation: float = REPEAT_EXPECTATION,
) -> TestResult:
    """The repeat (period) detector (module docstring): equal windows of L consecutive symbols
    at distance >= L, against what a fair stream expects (``collision``: the probability
    that two independent symbols are equal, sum of p^2)."""
    codes = _codes(symbols)
    n = int(codes.size)
    q = float(collision)
    method = "repeated windows (Markov bound)"
    window = 0
    expected = 0.0
    if 0 <= q < 1:
        for length in range(1, n // 2 + 1):
            pairs = _window_pairs(n - length + 1, length)
            if pairs == 0:
                break
            expected = pairs * q**length
            if expected <= expectation:
                window = length
                break
    if window == 0:
        return TestResult(
            name, group, None, None, None, method, n, second_level=False,
            note="too few values for a window a fair stream would not repeat",
        )  # fmt: skip
    n_windows = n - window + 1
    width = max(1, (int(codes.max()).bit_length() + 7) // 8) if n else 1
    small = codes.astype({1: np.uint8, 2: np.uint16}.get(width, np.int64))
    windows = np.ascontiguousarray(np.lib.stride_tricks.sliding_window_view(small, window))
    keys = windows.view(np.dtype((np.void, windows.dtype.itemsize * window))).ravel()
    _, ids = np.unique(keys, return_inverse=True)
    positions = np.arange(n_windows, dtype=np.int64)
    order = np.lexsort((positions, ids))
    sorted_ids = ids[order].astype(np.int64)
    sorted_pos = positions[order]
    combined = sorted_ids * (n_windows + window + 1) + sorted_pos
    group_end = np.searchsorted(sorted_ids, sorted_ids, side="right")
    first_far = np.searchsorted(combined, combined + window, side="left")
    observed = int(np.sum(np.maximum(group_end - first_far, 0)))
    details: dict[str, float | int | str] = {
        "window": window,
        "expected_pairs": expected,
        "pairs": observed,
    }
    if observed:
        same = sorted_ids[1:] == sorted_ids[:-1]
        gaps = np.diff(sorted_pos)[same]
        gaps = gaps[gaps >= window]
        if gaps.size:
            details["period"] = int(np.bincount(gaps).argmax())
        repeated = sorted_pos[1:][same][np.diff(sorted_pos)[same] >= window]
        details["first_repeat_at"] = int(repeated.min()) if repeated.size else -1
    p = markov_p(observed, expected)
    return TestResult(name, group, float(observed), None, p, method, n, details=details,
                      second_level=False)  # fmt: skip


def max_cell(
    name: str,
    group: str,
    counts: npt.NDArray[np.integer],
    probabilities: npt.NDArray[np.float64] | float,
    trials: int,
    *,
    label: Callable[[int], str] = str,
) -> TestResult:
    """The maximum standardized residual over multinomial cells with a Bonferroni bound.

    ``counts`` (any shape) are the cells of ``trials`` independent draws, cell i having
    probability ``probabilities[i]`` (or one probability for every cell). Each count X_i is
    binomial(trials, p_i) exactly; its two-sided P-value is min(1, 2 min(P(X <= x), P(X >= x)))
    and the test's P-value min(1, cells x the smallest of them). The statistic is the worst
    cell's standardized residual (x - N p) / sqrt(N p (1 - p)); ``label`` names a cell by its
    flat index. The P-value is discrete and conservative, so the test takes no part in the
    second-level uniformity check.
    """
    shape = np.shape(counts)
    x = np.asarray(counts, dtype=np.int64).ravel()
    cells = int(x.size)
    p = np.broadcast_to(np.asarray(probabilities, dtype=np.float64), shape).ravel()
    method = "largest standardized residual, exact binomial tails, Bonferroni over the cells"
    if trials < 1 or cells < 2:
        return TestResult(name, group, None, None, None, method, trials, second_level=False,
                          note="needs at least one draw over two or more cells",
                          min_sample=1)  # fmt: skip
    lower = stats.binom.cdf(x, trials, p)
    upper = stats.binom.sf(x - 1, trials, p)
    each = np.minimum(1.0, 2.0 * np.minimum(lower, upper))
    worst = int(np.argmin(each))
    p_value = min(1.0, cells * float(each[worst]))
    expected = trials * float(p[worst])
    sd = math.sqrt(expected * (1.0 - float(p[worst])))
    z = (int(x[worst]) - expected) / sd if sd > 0 else 0.0
    return TestResult(
        name, group, z, None, p_value, method, trials, second_level=False,
        details={"cells": cells, "worst_cell": label(worst), "worst_count": int(x[worst]),
                 "worst_expected": expected, "worst_cell_p_value": float(each[worst]),
                 "correction": "Bonferroni"},
    )  # fmt: skip
