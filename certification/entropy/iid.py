"""SP 800-90B section 5: testing the IID assumption, and the IID track's estimate.

* Section 5.1, permutation tests: 19 statistics (excursion 5.1.1, number and longest
  directional runs 5.1.2-5.1.3, number of increases and decreases 5.1.4, number and longest runs
  about the median 5.1.5-5.1.6, average and maximum collision 5.1.7-5.1.8, periodicity and
  covariance at lags 1, 2, 8, 16, 32 5.1.9-5.1.10, bzip2 compression 5.1.11) on the samples and
  on up to 10,000 random permutations of them. A statistic rejects when the original's rank is
  among the extreme 0.05% either way (fewer than 6 permutations at or above it, or at or below
  it); permuting stops for a statistic once 6 have fallen on each side, as in NIST's tool. For
  binary samples the statistics read the samples in bytes (5.1: sums of 8 bits for runs,
  periodicity and covariance; 8 bits packed for collisions), as the specification directs.
* Section 5.2, chi-square tests (5.2.1-5.2.4, at the 0.001 level) and the longest repeated
  substring test (5.2.5).
* Section 6.1's IID estimate: the most common value estimate on the samples and, when more than
  two symbols occur, on the bitstring, combined as in section 3.1.3.

The permutations are random (the generator is injected); their counts differ from run to run and
from NIST's tool, the statistics of the unpermuted samples do not.
"""

from __future__ import annotations

import bz2
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

from certification.entropy import statistics
from certification.entropy._estimate import Estimate
from certification.entropy._samples import Samples
from certification.entropy.tuples import tuple_counts

__all__ = [
    "STATISTICS",
    "ChiSquare",
    "IidResult",
    "Permutation",
    "chi_square_tests",
    "iid_estimate",
    "iid_tests",
    "lrs_test",
    "permutation_statistics",
]

U8 = npt.NDArray[np.uint8]
PERMUTATIONS = 10_000
_DECIDED = 5
_LAGS = (1, 2, 8, 16, 32)
STATISTICS = (
    "excursion", "numDirectionalRuns", "lenDirectionalRuns", "numIncreasesDecreases",
    "numRunsMedian", "lenRunsMedian", "avgCollision", "maxCollision",
    *(f"periodicity{p}" for p in _LAGS), *(f"covariance{p}" for p in _LAGS), "compression",
)  # fmt: skip
_SECTION = {
    "excursion": "5.1.1", "numDirectionalRuns": "5.1.2", "lenDirectionalRuns": "5.1.3",
    "numIncreasesDecreases": "5.1.4", "numRunsMedian": "5.1.5", "lenRunsMedian": "5.1.6",
    "avgCollision": "5.1.7", "maxCollision": "5.1.8", "compression": "5.1.11",
}  # fmt: skip


def _section(name: str) -> str:
    return _SECTION.get(name, "5.1.9" if name.startswith("periodicity") else "5.1.10")


def _byte_sums(bits: U8) -> npt.NDArray[np.int64]:
    pad = (-bits.size) % 8
    full = np.concatenate([bits, np.zeros(pad, dtype=np.uint8)]) if pad else bits
    sums: npt.NDArray[np.int64] = full.reshape(-1, 8).sum(axis=1, dtype=np.int64)
    return sums


def _runs(signs: npt.NDArray[np.int8]) -> tuple[int, int]:
    """Number of runs and the longest run of equal values."""
    if signs.size == 0:
        return 0, 0
    change = np.flatnonzero(signs[1:] != signs[:-1])
    edges = np.concatenate([[-1], change, [signs.size - 1]])
    return int(change.size + 1), int(np.diff(edges).max())


def _collisions(x: npt.NDArray[np.int64]) -> list[int]:
    """Lengths of the successive segments that each end at the first repeated value."""
    n = x.size
    order = np.argsort(x, kind="stable")
    nxt = np.full(n, n, dtype=np.int64)
    same = x[order[1:]] == x[order[:-1]]
    nxt[order[:-1][same]] = order[1:][same]
    end = np.minimum.accumulate(nxt[::-1])[::-1]
    found: list[int] = []
    i = 0
    ends = end.tolist()
    while i < n and ends[i] < n:
        e = ends[i]
        found.append(e - i + 1)
        i = e + 1
    return found


def permutation_statistics(
    data: U8, raw: U8, k: int, mean: float, median: float
) -> npt.NDArray[np.float64]:
    """The 19 section 5.1 statistics of one ordering of the samples."""
    out = np.empty(len(STATISTICS), dtype=np.float64)
    r = raw.astype(np.int64)
    out[0] = float(np.abs(np.cumsum(r) - np.arange(1, r.size + 1) * mean).max())
    binary = k == 2
    x = _byte_sums(data) if binary else data.astype(np.int64)
    signs = np.where(x[:-1] > x[1:], -1, 1).astype(np.int8)
    out[1], out[2] = _runs(signs)
    pos = int(np.count_nonzero(signs == 1))
    out[3] = max(pos, signs.size - pos)
    around = np.where(data < median, -1, 1).astype(np.int8)
    out[4], out[5] = _runs(around)
    packed = np.packbits(data).astype(np.int64) if binary else data.astype(np.int64)
    lengths = _collisions(packed)
    out[6] = sum(lengths) / len(lengths) if lengths else math.nan
    out[7] = max(lengths) if lengths else 0
    for j, p in enumerate(_LAGS):
        out[8 + j] = int(np.count_nonzero(x[:-p] == x[p:])) if x.size > p else 0
    y = x if binary else r
    for j, p in enumerate(_LAGS):
        out[13 + j] = int(np.dot(y[:-p], y[p:])) if y.size > p else 0
    text = " ".join(map(str, raw.tolist())).encode()
    out[18] = len(bz2.compress(text, 5))
    return out


@dataclass(frozen=True, slots=True)
class Permutation:
    name: str
    section: str
    statistic: float
    greater: int
    equal: int
    less: int

    @property
    def passed(self) -> bool:
        return self.greater + self.equal > _DECIDED and self.equal + self.less > _DECIDED


@dataclass(frozen=True, slots=True)
class ChiSquare:
    name: str
    section: str
    statistic: float
    degrees_of_freedom: int
    p_value: float

    @property
    def passed(self) -> bool:
        return self.p_value >= 0.001


@dataclass(frozen=True, slots=True)
class IidResult:
    permutations: tuple[Permutation, ...]
    permutations_run: int
    chi_square: tuple[ChiSquare, ...]
    lrs_length: int
    lrs_collision_probability: float
    lrs_passed: bool

    @property
    def passed(self) -> bool:
        return (
            all(p.passed for p in self.permutations)
            and all(c.passed for c in self.chi_square)
            and self.lrs_passed
        )


def _median(symbols: U8, k: int) -> float:
    if k == 2:
        return 0.5
    ordered = np.sort(symbols)
    half = symbols.size // 2
    if symbols.size % 2:
        return float(ordered[half])
    return (int(ordered[half]) + int(ordered[half - 1])) / 2.0


def _bins(expected: list[tuple[float, int]]) -> tuple[list[float], dict[int, int]]:
    """Pool cells, smallest expectation first, into bins expecting at least 5 (section 5.2.1)."""
    ordered = sorted(expected)
    sums: list[float] = []
    where: dict[int, int] = {}
    current, b = 0.0, 0
    for e, cell in ordered:
        if current >= 5.0:
            sums.append(current)
            b += 1
            current = 0.0
        where[cell] = b
        current += e
    if b != 0 and current < 5.0:
        for cell, bb in where.items():
            if bb == b:
                where[cell] = b - 1
        sums[b - 1] += current
    else:
        sums.append(current)
    return sums, where


def _chi(observed: npt.NDArray[np.int64], expected: list[float]) -> float:
    e = np.asarray(expected)
    return float(((observed - e) ** 2 / e).sum())


def chi_square_tests(data: U8, k: int) -> tuple[ChiSquare, ChiSquare]:
    """Sections 5.2.1-5.2.4: independence and goodness of fit."""
    n = int(data.size)
    if k == 2:
        p1 = float(data.sum()) / n
        p0 = 1.0 - p1
        m = 11
        while m > 1 and not (min(p0, p1) ** m * (n // m) >= 5):
            m -= 1
        if m < 2:
            independence = ChiSquare("independence (binary)", "5.2.3", 0.0, 0, 1.0)
        else:
            blocks = n // m
            weights = 1 << np.arange(m - 1, -1, -1)
            values = (data[: blocks * m].reshape(blocks, m).astype(np.int64) * weights).sum(1)
            occ = np.bincount(values, minlength=1 << m)
            ones = np.array([bin(i).count("1") for i in range(1 << m)])
            e = p1**ones * p0 ** (m - ones) * blocks
            t = float(((occ - e) ** 2 / e).sum())
            df = (1 << m) - 2
            independence = ChiSquare("independence (binary)", "5.2.3", t, df, _sf(t, df))
        sub = n // 10
        p = float(data.sum()) / n
        e0, e1 = (1.0 - p) * sub, p * sub
        o1 = data[: 10 * sub].reshape(10, sub).sum(axis=1, dtype=np.int64)
        o0 = sub - o1
        t = float((((o0 - e0) ** 2) / e0 + ((o1 - e1) ** 2) / e1).sum())
        fit = ChiSquare("goodness of fit (binary)", "5.2.4", t, 9, _sf(t, 9))
        return independence, fit
    share = np.bincount(data, minlength=k) / n
    pairs = [
        (float(share[i] * share[j] * math.floor(n * 0.5)), i * k + j)
        for i in range(k)
        for j in range(k)
    ]
    sums, where = _bins(pairs)
    pair_values = data[: (n // 2) * 2].reshape(-1, 2).astype(np.int64)
    cells = pair_values[:, 0] * k + pair_values[:, 1]
    lookup = np.array([where[c] for c in range(k * k)])
    observed = np.bincount(lookup[cells], minlength=len(sums))
    t = _chi(observed, sums)
    df = len(sums) - k
    independence = ChiSquare("independence", "5.2.1", t, df, _sf(t, df))
    singles = [(float(share[j] * math.floor(n / 10.0)), j) for j in range(k)]
    sums, where = _bins(singles)
    lookup = np.array([where[c] for c in range(k)])
    block = n // 10
    t = 0.0
    for j in range(10):
        part = data[j * block : (j + 1) * block]
        t += _chi(np.bincount(lookup[part], minlength=len(sums)), sums)
    df = 9 * (len(sums) - 1)
    fit = ChiSquare("goodness of fit", "5.2.2", t, df, _sf(t, df))
    return independence, fit


def _sf(t: float, df: int) -> float:
    return float(sps.chi2.sf(t, df)) if df > 0 else 1.0


def lrs_test(data: U8, k: int) -> tuple[int, float, bool]:
    """Section 5.2.5: is a repeat as long as the longest one likely (P >= 1/1000) if IID?"""
    n = int(data.size)
    p = np.bincount(data, minlength=k) / n
    p_col = float((p * p).sum())
    if p_col > 1.0 - 1e-15:
        return n - 1, p_col, True
    w = tuple_counts(data, k).v
    pairs = (n - w + 1) * (n - w) // 2
    return w, p_col, math.log(0.999) >= pairs * math.log1p(-(p_col**w))


def iid_tests(
    samples: Samples,
    rng: np.random.Generator,
    *,
    permutations: int = PERMUTATIONS,
    progress: Callable[[str], None] | None = None,
) -> IidResult:
    data, raw, k = samples.symbols, samples.raw, samples.alphabet
    mean = float(raw.sum(dtype=np.int64)) / raw.size
    median = _median(data, k)
    original = permutation_statistics(data, raw, k, mean, median)
    counts = np.zeros((len(STATISTICS), 3), dtype=np.int64)
    index = np.arange(data.size)
    run = 0
    for run in range(1, permutations + 1):
        order = rng.permutation(index)
        shuffled = permutation_statistics(data[order], raw[order], k, mean, median)
        open_ = ~(
            (counts[:, 0] + counts[:, 1] > _DECIDED) & (counts[:, 1] + counts[:, 2] > _DECIDED)
        )
        counts[open_, 0] += shuffled[open_] > original[open_]
        counts[open_, 1] += shuffled[open_] == original[open_]
        counts[open_, 2] += shuffled[open_] < original[open_]
        decided = (counts[:, 0] + counts[:, 1] > _DECIDED) & (
            counts[:, 1] + counts[:, 2] > _DECIDED
        )
        if progress is not None and run % 100 == 0:
            progress(f"permutation {run}: {int(decided.sum())} of 19 statistics decided")
        if decided.all():
            break
    results = tuple(
        Permutation(name, _section(name), float(original[i]), *map(int, counts[i]))
        for i, name in enumerate(STATISTICS)
    )
    chi = chi_square_tests(data, k)
    w, p_col, lrs_ok = lrs_test(data, k)
    return IidResult(results, run, chi, w, p_col, lrs_ok)


def iid_estimate(samples: Samples) -> tuple[list[Estimate], float, float | None, float]:
    """Section 6.1 with 3.1.3: estimates, H_original, H_bitstring and the assessed entropy."""
    literal = statistics.most_common_value(samples.symbols, samples.alphabet, bitstring=False)
    h_original = min(float(samples.bits_per_symbol), literal.min_entropy or 0.0)
    found = [literal]
    h_bitstring: float | None = None
    final = h_original
    if samples.alphabet > 2 and samples.bits is not None:
        bits = statistics.most_common_value(samples.bits, 2, bitstring=True)
        h_bitstring = min(1.0, bits.min_entropy or 0.0)
        found.insert(0, bits)
        final = min(h_original, samples.bits_per_symbol * h_bitstring)
    return found, h_original, h_bitstring, final
