"""Card shuffle tests: card by position, adjacent pairs, rising sequences, repeated shuffles.

A shuffle is an array of card codes, top of the shoe first. A fair shuffle of a shoe of N
cards whose L labels appear c_1 .. c_L times (one deck: every c = 1; a shoe of D decks: every
c = D) is a uniformly random arrangement of that multiset, and:

* ``card_by_position_max_cell`` - the single-cell test
  (:func:`certification.outcomes._stats.max_cell`) of the same table: each (position, label)
  count is exactly binomial(n, c_j / N), Bonferroni over the N x L cells (a card that never
  lands in one position, or lands there twice as often, is one cell).
* ``top_card`` - the top card's label has the exact distribution ``cards.position_distribution``
  (c_j / N).
* ``card_by_position`` - the N x L table of (position, label) counts over n shuffles is a sum
  of n independent random tables with row sums 1 and column sums c_j. One table's covariance is
  N/(N-1) times (I - J/N) (x) (diag(pi) - pi pi^T), pi_j = c_j / N (derived in the docstring
  of :func:`card_by_position`), so Pearson's X^2 with expected n pi_j per cell satisfies
  (N-1)/N X^2 ~ chi^2((N-1)(L-1)) asymptotically; for one deck that is (N-1)^2 df. Needs an
  expected count of at least 5 per cell.
* ``adjacent_pairs`` - shuffle number s looks at positions j = s mod (N-1) and j+1 (one pair
  per shuffle keeps the cells multinomial and independent between shuffles). Distinct cards:
  the difference (c[j+1] - c[j]) mod N is uniform on 1..N-1, exactly. A shoe with repeated
  labels: the label pair (a, b) has probability c_a (c_b - [a = b]) / (N (N - 1)), exactly.
* ``rising_sequences`` (distinct cards only) - the number of rising sequences (Bayer and
  Diaconis 1992, "Trailing the dovetail shuffle to its lair") of a uniform permutation is k
  with probability A(N, k-1) / N!, A the Eulerian numbers; it is 1 + the descents of the
  inverse permutation. A riffle that is not mixed enough, or a biased swap, moves it.
* ``repeats`` - the repeat detector (:func:`certification.outcomes._stats.repeats`) over whole
  shuffles: two fair shuffles are equal with probability prod(c_j!) / N! (1 / 52! for a
  deck), so any repeated shuffle is decisive.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from fractions import Fraction

import numpy as np
import numpy.typing as npt
from scipy import stats

from certification.outcomes._buffered import BufferedStream, SampledHashes
from certification.outcomes._stats import (
    MIN_EXPECTED,
    TestResult,
    chi_square_gof,
    markov_p,
    max_cell,
    repeats,
)

__all__ = [
    "ShuffleStream",
    "adjacent_pairs",
    "card_by_position",
    "card_by_position_max_cell",
    "eulerian_row",
    "position_table",
    "rising_sequences",
    "run_shuffle_tests",
    "shoe_group",
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


def _ranks(shuffles: IntArray) -> tuple[IntArray, IntArray]:
    """Codes replaced by their rank among the shoe's distinct codes (0 .. L-1), and the
    multiplicity c_j of each (from the first shuffle)."""
    codes, copies = np.unique(shuffles[0], return_counts=True)
    return np.searchsorted(codes, shuffles).astype(np.int64), copies.astype(np.int64)


def card_by_position(shuffles: IntArray, group: str) -> TestResult:
    """(N-1)/N X^2 of the position x label table against chi^2((N-1)(L-1)).

    One shuffle's indicator A_pj = [label j at position p] has P(A_pj = 1) = pi_j = c_j / N and,
    for p != q, P(A_pj = 1, A_qk = 1) = c_j (c_k - delta_jk) / (N (N-1)), so
    Cov(A_pj, A_qk) = (delta_pq - (1 - delta_pq)/(N-1)) (delta_jk pi_j - pi_j pi_k)
    = N/(N-1) (delta_pq - 1/N) (delta_jk pi_j - pi_j pi_k). Standardising by sqrt(n pi_j) per
    cell leaves N/(N-1) times the product of two projections, of ranks N-1 and L-1. For one
    deck (pi_j = 1/N) this is the permutation-matrix case, (N-1)^2 df.
    """
    table, copies = position_table(shuffles)
    return card_by_position_from_table(table, copies, int(shuffles.shape[0]), group)


def card_by_position_from_table(
    table: IntArray, copies: IntArray, n: int, group: str
) -> TestResult:
    """:func:`card_by_position` from the N x L table of ``n`` shuffles."""
    size = int(table.shape[0])
    name = "card_by_position"
    labels = int(copies.size)
    need = math.ceil(MIN_EXPECTED * size / int(copies.min()))
    if n < need or labels < 2:
        return TestResult(
            name, group, None, None, None, "chi-square (position x label table)", n,
            note=f"needs at least {need} shuffles", min_sample=need,
        )  # fmt: skip
    e = n * copies.astype(np.float64) / size  # expected count per cell of each label column
    x2 = float(np.sum((table - e) ** 2 / e))
    statistic = x2 * (size - 1) / size
    df = (size - 1) * (labels - 1)
    p = float(stats.chi2.sf(statistic, df))
    residual = np.abs(table - e) / np.sqrt(e)
    worst = np.unravel_index(int(np.argmax(residual)), table.shape)
    return TestResult(
        name, group, statistic, df, p,
        "chi-square (position x label table, scaled (N-1)/N)", n,
        details={
            "worst_position": int(worst[0]),
            "worst_card_rank": int(worst[1]),
            "worst_count": int(table[worst]),
            "expected_per_cell": float(e[worst[1]]),
        },
    )  # fmt: skip


def position_table(shuffles: IntArray) -> tuple[IntArray, IntArray]:
    """The N x L table of (position, label rank) counts and the multiplicity of each label."""
    size = shuffles.shape[1]
    ranks, copies = _ranks(shuffles)
    table = np.zeros((size, int(copies.size)), dtype=np.int64)
    positions = np.broadcast_to(np.arange(size), ranks.shape)
    np.add.at(table, (positions.ravel(), ranks.ravel()), 1)
    return table, copies


def card_by_position_max_cell(shuffles: IntArray, group: str) -> TestResult:
    """The single-cell test of the position x label table (module docstring)."""
    table, copies = position_table(shuffles)
    codes = np.unique(shuffles[0])
    return max_cell_from_table(table, copies, codes, int(shuffles.shape[0]), group)


def max_cell_from_table(
    table: IntArray, copies: IntArray, codes: IntArray, n: int, group: str
) -> TestResult:
    """:func:`card_by_position_max_cell` from the table (``codes``: the card of each rank)."""
    size, labels = int(table.shape[0]), int(copies.size)
    p = np.broadcast_to(copies.astype(np.float64) / size, table.shape)

    def label(cell: int) -> str:
        position, rank = divmod(cell, labels)
        return f"position {position}, card {int(codes[rank])}"

    return max_cell("card_by_position_max_cell", group, table, p, n, label=label)


def adjacent_counts(ranks: IntArray, labels: int, first_index: int = 0) -> IntArray:
    """Shuffle s (numbered from ``first_index``) at positions j = s mod (N-1) and j+1: for
    distinct cards the counts of the difference mod N, else of the label pair a L + b."""
    n, size = ranks.shape
    j = (first_index + np.arange(n)) % (size - 1)
    rows = np.arange(n)
    first, second = ranks[rows, j], ranks[rows, j + 1]
    if labels == size:
        return np.bincount((second - first) % size, minlength=size)
    return np.bincount(first * labels + second, minlength=labels * labels)


def adjacent_pairs(shuffles: IntArray, group: str) -> TestResult:
    ranks, copies = _ranks(shuffles)
    counts = adjacent_counts(ranks, int(copies.size))
    return adjacent_pairs_from_counts(counts, copies, int(shuffles.shape[1]), group)


def adjacent_pairs_from_counts(
    counts: IntArray, copies: IntArray, size: int, group: str
) -> TestResult:
    """:func:`adjacent_pairs` from :func:`adjacent_counts`."""
    labels = int(copies.size)
    if labels == size:  # distinct cards: the difference mod N, uniform on 1..N-1
        observed = {k: int(counts[k]) for k in range(size)}
        expected = {k: Fraction(1, size - 1) for k in range(1, size)}
        return chi_square_gof("adjacent_pairs", group, observed, expected)
    pair_counts = counts
    c = [int(x) for x in copies]
    pairs = {
        (a, b): Fraction(c[a] * (c[b] - (a == b)), size * (size - 1))
        for a in range(labels)
        for b in range(labels)
        if c[a] * (c[b] - (a == b))
    }
    observed_pairs = {(a, b): int(pair_counts[a * labels + b]) for a in range(labels)
                      for b in range(labels) if pair_counts[a * labels + b]}  # fmt: skip
    return chi_square_gof("adjacent_pairs", group, observed_pairs, pairs)


def rising_counts(ranks: IntArray) -> IntArray:
    """How many of the shuffles have k rising sequences, k = 0..N."""
    inverse = np.argsort(ranks, axis=1)  # position of card rank r
    rising = 1 + np.count_nonzero(np.diff(inverse, axis=1) < 0, axis=1)
    return np.bincount(rising, minlength=ranks.shape[1] + 1)


def rising_sequences(shuffles: IntArray, group: str) -> TestResult:
    ranks, _ = _ranks(shuffles)
    return rising_from_counts(rising_counts(ranks), int(shuffles.shape[1]), group)


def rising_from_counts(counts: IntArray, size: int, group: str) -> TestResult:
    """:func:`rising_sequences` from :func:`rising_counts`."""
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


def repeated_shuffles(shuffles: IntArray, group: str) -> TestResult:
    """Whole shuffles repeated: two fair shuffles agree with probability prod(c_j!) / N!."""
    size = shuffles.shape[1]
    _, copies = _ranks(shuffles)
    collision = Fraction(math.prod(math.factorial(int(c)) for c in copies), math.factorial(size))
    symbols = [row.tobytes() for row in np.ascontiguousarray(shuffles)]
    return repeats("repeats", group, symbols, collision)


def run_shuffle_tests(
    shuffles: IntArray, top_expected: Mapping[int, Fraction], *, distinct: bool, group: str
) -> list[TestResult]:
    """The shuffle tests: all of them for distinct cards; for a shoe with repeated labels all
    but ``rising_sequences``."""
    results = [
        top_card(shuffles, top_expected, group),
        card_by_position(shuffles, group),
        card_by_position_max_cell(shuffles, group),
        adjacent_pairs(shuffles, group),
    ]
    if distinct:
        results.append(rising_sequences(shuffles, group))
    results.append(repeated_shuffles(shuffles, group))
    return results


def shoe_group(decks: int, jokers: int) -> str:
    """The group name of a shoe's shuffles in the battery's results."""
    return f"shuffle/{decks}deck{'s' if decks > 1 else ''}+{jokers}j"


#: Shuffles kept and tested exactly before a :class:`ShuffleStream` switches to tallies.
BUFFER_SHUFFLES = 1 << 16
#: Hashes of whole shuffles the streamed repeat check holds at most (sampled beyond).
REPEAT_KEPT_SHUFFLES = 1 << 20


class ShuffleStream(BufferedStream):
    """The shuffle tests of one shoe accumulated in one pass (docs/certification.md,
    "Streaming"; the switch is :class:`certification.outcomes._buffered.BufferedStream`'s). Up
    to :data:`BUFFER_SHUFFLES` shuffles are kept and tested by :func:`run_shuffle_tests`;
    beyond that the stream keeps the top-card counts, the position x label table, the
    adjacent-pair counts, the rising-sequence counts and, for the repeat check, a 64-bit hash
    of each shuffle whose hash falls in a sampled share 2^-s of the hash space (s raised
    whenever more than :data:`REPEAT_KEPT_SHUFFLES` are held; equal shuffles have equal
    hashes, so a repeat is kept whole or not at all, and Markov's bound with the full
    expectation stays valid)."""

    EMPTY_SHAPE = (0, 0)

    def __init__(self, top_expected: Mapping[int, Fraction], *, distinct: bool, group: str,
                 buffer_shuffles: int = BUFFER_SHUFFLES) -> None:  # fmt: skip
        super().__init__(buffer_shuffles)
        self.top_expected = top_expected
        self.distinct = distinct
        self.group = group

    def _count(self, chunk: IntArray) -> int:
        return int(chunk.shape[0])

    def _batch(self, outcomes: IntArray) -> list[TestResult]:
        return run_shuffle_tests(outcomes, self.top_expected, distinct=self.distinct,
                                 group=self.group)  # fmt: skip

    def _start(self, chunk: IntArray) -> None:
        buffered = self._take_buffer()
        first = buffered[0] if buffered else chunk
        self._codes, self._copies = np.unique(first[0], return_counts=True)
        size, labels = int(first.shape[1]), int(self._codes.size)
        self._table = np.zeros((size, labels), dtype=np.int64)
        self._adjacent = np.zeros(size if labels == size else labels * labels, np.int64)
        self._rising = np.zeros(size + 1, dtype=np.int64)
        self._top: dict[int, int] = {}
        self._sampled = SampledHashes(REPEAT_KEPT_SHUFFLES)
        for shuffles in buffered:
            self._feed(shuffles)

    def _stream(self, chunk: IntArray) -> None:
        self._feed(chunk)

    def _feed(self, shuffles: IntArray) -> None:
        ranks = np.searchsorted(self._codes, shuffles).astype(np.int64)
        size = int(shuffles.shape[1])
        positions = np.broadcast_to(np.arange(size), ranks.shape)
        np.add.at(self._table, (positions.ravel(), ranks.ravel()), 1)
        self._adjacent += adjacent_counts(ranks, int(self._codes.size), self.n)
        if self.distinct:
            self._rising += rising_counts(ranks)
        for code in shuffles[:, 0].tolist():
            self._top[code] = self._top.get(code, 0) + 1
        digests = np.array(
            [int.from_bytes(hashlib.blake2b(row.tobytes(), digest_size=8).digest(), "big")
             for row in np.ascontiguousarray(shuffles)], dtype=np.uint64,
        )  # fmt: skip
        self._sampled.add(digests)
        self.n += int(shuffles.shape[0])

    def _streamed(self) -> list[TestResult]:
        g, n, size = self.group, self.n, int(self._table.shape[0])
        results = [
            chi_square_gof("top_card", g, self._top, self.top_expected),
            card_by_position_from_table(self._table, self._copies, n, g),
            max_cell_from_table(self._table, self._copies, self._codes, n, g),
            adjacent_pairs_from_counts(self._adjacent, self._copies, size, g),
        ]
        if self.distinct:
            results.append(rising_from_counts(self._rising, size, g))
        results.append(self._repeats())
        return results

    def _repeats(self) -> TestResult:
        size = int(self._table.shape[0])
        collision = Fraction(math.prod(math.factorial(int(c)) for c in self._copies),
                             math.factorial(size))  # fmt: skip
        hashes = np.sort(self._sampled.kept()[0])
        equal = int(np.count_nonzero(hashes[1:] == hashes[:-1]))
        pairs = self.n * (self.n - 1) // 2
        expected = pairs * float(collision) + self._sampled.collisions()
        p = markov_p(equal, expected)
        return TestResult(
            "repeats", self.group, float(equal), None, p,
            "repeated shuffles, sampled by hash (Markov bound)", self.n, second_level=False,
            details={"expected_pairs": expected, "pairs": equal,
                     "sampled_share": f"2^-{self._sampled.bits}", "kept": int(hashes.size)},
        )  # fmt: skip
