"""SP 800-90B section 5: testing the IID assumption, and the IID track's estimate.

* Section 5.1, permutation tests: 19 statistics (excursion 5.1.1, number and longest
  directional runs 5.1.2-5.1.3, number of increases and decreases 5.1.4, number and longest runs
  about the median 5.1.5-5.1.6, average and maximum collision 5.1.7-5.1.8, periodicity and
  covariance at lags 1, 2, 8, 16, 32 5.1.9-5.1.10, bzip2 compression 5.1.11) on the samples and
  on up to 10,000 random permutations of them. A statistic rejects when the original's rank is
  among the extreme 0.05% either way (fewer than 6 permutations at or above it, or at or below
  it). For binary samples the statistics read the samples in bytes (5.1: sums of 8 bits for
  runs, periodicity and covariance; 8 bits packed for collisions), as the specification directs.
* Shortcuts that keep the verdict of 10,000 permutations (section 5.1 steps 2-3 only compare
  each permutation's statistic with the original's, and counters only grow): a statistic is
  computed and counted only until 6 permutations have fallen on each side of it, and
  permuting stops when all 19 are settled (NIST's tool does the same); a permutation's bzip2
  compression stops as soon as its output already exceeds the original's length. The
  statistics of many permutations are computed at once (one row each), compressions in threads.
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
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
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
    "compression_length",
    "iid_estimate",
    "iid_tests",
    "lrs_test",
    "permutation_statistics",
]

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
PERMUTATIONS = 10_000
_DECIDED = 5
_PIECE = 1 << 18  # text bytes fed to bzip2 at a time (its blocks hold 500,000 at level 5)
_BATCH_ELEMENTS = 1 << 21  # samples per batch of permutations, all rows together
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


def _byte_sums(rows: U8) -> U8:
    """Section 5.1 conversion I, row by row: the number of ones in each 8 bits (last padded)."""
    b, n = rows.shape
    pad = (-n) % 8
    full = np.concatenate([rows, np.zeros((b, pad), dtype=np.uint8)], axis=1) if pad else rows
    sums: U8 = full.reshape(b, -1, 8).sum(axis=2, dtype=np.uint8)
    return sums


def _runs(rows: npt.NDArray[np.bool_]) -> tuple[I64, I64]:
    """Per row: the number of runs of equal values and the longest run."""
    b, n = rows.shape
    if n == 0:
        return np.zeros(b, dtype=np.int64), np.zeros(b, dtype=np.int64)
    # A run starts at column 0 and wherever the value changes; column n closes the last one.
    starts = np.ones((b, n + 1), dtype=bool)
    np.not_equal(rows[:, 1:], rows[:, :-1], out=starts[:, 1:n])
    at = np.flatnonzero(starts)
    per_row = np.count_nonzero(starts, axis=1)
    first = np.concatenate([[0], np.cumsum(per_row)[:-1]])
    # Differences between successive starts are run lengths (plus a 1 across each row's end).
    longest = np.maximum.reduceat(np.diff(at, append=at[-1] + 1), first)
    return per_row - 1, longest.astype(np.int64)


def _collisions(x: U8) -> tuple[float, int]:
    """Sections 5.1.7-5.1.8: mean and longest of the segments ending at their first repeat.

    From sample i, the segment ends at the first sample equal to an earlier one of the segment,
    which is the least "next occurrence" of any sample from i on; the next segment starts after
    it (NIST's ``find_collisions``).
    """
    n = int(x.size)
    order = np.argsort(x, kind="stable")  # a radix sort for 8-bit values
    nxt = np.empty(n, dtype=np.int64)
    nxt[order[:-1]] = np.where(x[order[1:]] == x[order[:-1]], order[1:], n)
    nxt[order[-1]] = n
    ends = np.ascontiguousarray(np.minimum.accumulate(nxt[::-1])[::-1]).data
    found: list[int] = []  # the sample that ends each segment
    i = 0
    while i < n and (e := ends[i]) < n:
        found.append(e)
        i = e + 1
    if not found:
        return math.nan, 0
    last = np.asarray(found, dtype=np.int64)
    lengths = last - np.concatenate([[-1], last[:-1]])
    return float(lengths.sum()) / lengths.size, int(lengths.max())


_DIGITS = np.zeros((256, 4), dtype=np.uint8)
for _v in range(256):
    _DIGITS[_v, : len(str(_v)) + 1] = np.frombuffer(f"{_v} ".encode(), dtype=np.uint8)
_WIDTH = np.array([len(str(v)) + 1 for v in range(256)], dtype=np.int64)


def compression_length(raw: U8, *, above: int | None = None) -> int:
    """Section 5.1.11: the bzip2 length (level 5, NIST's setting) of the samples written in
    decimal, separated by single spaces.

    A permutation's length matters only by how it compares with the original's (section 5.1
    step 2's counters), and bzip2 writes each finished block as it goes, so its output so far
    is a prefix of the result: once more than ``above`` bytes are out, ``above + 1`` is
    returned without compressing the rest (it compares with ``above`` as the length would).
    """
    chars = _DIGITS[raw]
    text = memoryview(chars[np.arange(4) < _WIDTH[raw][:, None]].tobytes()[:-1])
    squeezer = bz2.BZ2Compressor(5)
    length = 0
    for start in range(0, len(text), _PIECE):
        length += len(squeezer.compress(text[start : start + _PIECE]))
        if above is not None and length > above:
            return above + 1
    return length + len(squeezer.flush())


@dataclass(frozen=True, slots=True)
class _Setting:
    """What every ordering shares: the alphabet, the symbol of each raw value, mean, median."""

    k: int
    table: U8
    mean: float
    median: float

    @property
    def binary(self) -> bool:
        return self.k == 2


def _statistics(
    rows: U8, setting: _Setting, open_: npt.NDArray[np.bool_]
) -> npt.NDArray[np.float64]:
    """The section 5.1 statistics of each row of raw samples (rows x 19); NaN where not open."""
    b, n = rows.shape
    out = np.full((b, len(STATISTICS)), np.nan, dtype=np.float64)
    data = setting.table[rows]
    binary = setting.binary
    if open_[0]:
        # 5.1.1: the running sum's largest distance from i x mean, in double as the tool does.
        walk = np.cumsum(rows, axis=1, dtype=np.int64) - np.arange(1, n + 1) * setting.mean
        out[:, 0] = np.abs(walk).max(axis=1)
    x = _byte_sums(data) if binary else data  # 5.1 conversion I for binary samples
    if open_[1:4].any():
        down = x[:, :-1] > x[:, 1:]  # 5.1.2-5.1.4: -1 where a value exceeds the next
        out[:, 1], out[:, 2] = _runs(down)
        ups = down.shape[1] - np.count_nonzero(down, axis=1)
        out[:, 3] = np.maximum(ups, down.shape[1] - ups)
    if open_[4:6].any():
        out[:, 4], out[:, 5] = _runs(data < setting.median)  # 5.1.5-5.1.6
    if open_[6:8].any():
        for r in range(b):  # 5.1.7-5.1.8, binary samples packed 8 to a byte (conversion II)
            out[r, 6], out[r, 7] = _collisions(np.packbits(data[r]) if binary else data[r])
    for j, p in enumerate(_LAGS):  # 5.1.9
        if open_[8 + j]:
            out[:, 8 + j] = np.count_nonzero(x[:, :-p] == x[:, p:], axis=1) if x.shape[1] > p else 0
    y = (x if binary else rows).astype(np.int64) if open_[13:18].any() else x
    for j, p in enumerate(_LAGS):  # 5.1.10, on the raw values of non-binary samples
        if open_[13 + j]:
            out[:, 13 + j] = (y[:, :-p] * y[:, p:]).sum(axis=1) if y.shape[1] > p else 0
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


def _proportions(data: U8, k: int) -> npt.NDArray[np.float64]:
    """Each symbol's share, as NIST's tool sums it: 1/n added once per occurrence.

    Section 5.2.1 sorts the cells by expectation; cells whose exact expectations are equal
    (c_i c_j = c_k c_l) are ordered by the rounding of these sums, then by cell, so the same
    sums put the same cells in each bin as the reference does.
    """
    counts = np.bincount(data, minlength=k)
    steps = np.cumsum(np.full(int(counts.max()), 1.0 / data.size))  # sequential, as the loop
    shares: npt.NDArray[np.float64] = np.where(counts > 0, steps[np.maximum(counts - 1, 0)], 0.0)
    return shares


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
    share = _proportions(data, k)
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


def permutation_statistics(raw: U8, symbols: U8, k: int) -> npt.NDArray[np.float64]:
    """The 19 section 5.1 statistics of the samples in their own order."""
    setting = _setting(raw, symbols, k)
    stats: npt.NDArray[np.float64] = _statistics(
        raw[None, :], setting, np.ones(len(STATISTICS), dtype=bool)
    )[0]
    stats[18] = compression_length(raw)
    return stats


def _setting(raw: U8, symbols: U8, k: int) -> _Setting:
    table = np.zeros(256, dtype=np.uint8)
    table[raw] = symbols
    return _Setting(k, table, float(raw.sum(dtype=np.int64)) / raw.size, _median(symbols, k))


def _decided(counts: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Section 5.1's counters settle a statistic once more than 5 permutations fall on each side
    of it (counting ties on both): it cannot be among the extreme 0.05% any more."""
    decided: npt.NDArray[np.bool_] = (counts[:, 0] + counts[:, 1] > _DECIDED) & (
        counts[:, 1] + counts[:, 2] > _DECIDED
    )
    return decided


def iid_tests(
    samples: Samples,
    rng: np.random.Generator,
    *,
    permutations: int = PERMUTATIONS,
    progress: Callable[[str], None] | None = None,
) -> IidResult:
    """Sections 5.1 and 5.2 on ``samples``, with at most ``permutations`` shufflings.

    As NIST's tool does, a statistic is computed and counted only while it is undecided (its
    counters cannot pass any more once decided: they only grow), and permuting stops when all
    19 are decided. The verdict is the one 10,000 permutations would give. Permutations are
    drawn in batches (rows shuffled by ``rng.permuted``) and counted one at a time in order;
    bzip2 compressions run in threads (the bz2 module releases the GIL), one per batch row.
    """
    data, raw, k = samples.symbols, samples.raw, samples.alphabet
    setting = _setting(raw, data, k)
    original = permutation_statistics(raw, data, k)
    counts = np.zeros((len(STATISTICS), 3), dtype=np.int64)
    open_ = np.ones(len(STATISTICS), dtype=bool)
    workers = os.cpu_count() or 1
    batch = max(workers, min(_BATCH_ELEMENTS // raw.size, 256))
    run = 0
    with ThreadPoolExecutor(max_workers=workers) as pool:
        while run < permutations and open_.any():
            rows = np.tile(raw, (min(batch, permutations - run), 1))
            rng.permuted(rows, axis=1, out=rows)
            limit = int(original[18])
            squeezes = (
                [pool.submit(compression_length, row, above=limit) for row in rows]
                if open_[18]
                else []
            )
            stats = _statistics(rows, setting, open_)
            for r, squeezed in enumerate(squeezes):
                stats[r, 18] = squeezed.result()
            for r in range(rows.shape[0]):
                if not open_.any():
                    break
                run += 1
                tp, t = stats[r, open_], original[open_]
                counts[open_, 0] += tp > t
                counts[open_, 1] += tp == t
                counts[open_, 2] += tp < t
                open_ &= ~_decided(counts)
            if progress is not None:
                progress(f"permutation {run}: {int((~open_).sum())} of 19 statistics decided")
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
