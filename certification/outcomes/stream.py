"""One-pass accumulation of the sequence tests, so that any number of outcomes is tested in
memory bounded by the cells, not by the outcomes (docs/certification.md, "Streaming").

:class:`IntegerStream` takes the values of one group (integers uniform on ``[0, d)`` under the
null hypothesis, in log order) in chunks. Up to :data:`BUFFER_VALUES` values it keeps them and
runs :func:`certification.outcomes.sequence.run_sequence_tests` on them, so a sample of that
size gets exactly the batch results. Beyond that it switches, once, to running tallies from
which every test of ``run_sequence_tests`` is formed at the end (the switch, shared with the
shuffles, is :class:`certification.outcomes._buffered.BufferedStream`'s):

* counts of the values and of disjoint pairs and triples (single-cell tests), the gap table
  per value, the gap, poker and coupon collector's counts, run lengths up and down, the runs
  up and down, and the sums of Knuth's circular serial correlation at lags 1..32 (the first
  and last 32 values kept for the wrap-around), all exactly as in the batch tests;
* the overlapping pairs and triples on the alphabet the pooling rule chooses for
  :data:`BUFFER_VALUES` values (fixed at the switch: the full alphabet whenever it was
  already dense enough, as for a wheel or a die; for a larger alphabet the coarse one, which
  stays valid as n grows, with fewer cells than the largest n would allow);
* ``uniformity_ks`` on a histogram of U of :data:`KS_BINS` bins: the Kolmogorov-Smirnov
  distance is taken at the bin edges, a lower bound of the exact one (by at most one bin's
  share of the values), so the P-value is conservative;
* ``repeats`` on sampled windows: the window length is the one a fair stream of
  :data:`REPEAT_MAX_VALUES` values would not repeat; each window is hashed (64 bits) and kept
  when its hash falls in a sampled fraction 2^-s of the hash space (s raised, and the kept
  windows thinned, whenever more than :data:`REPEAT_KEPT` are held:
  :class:`certification.outcomes._buffered.SampledHashes`). Equal windows have equal
  hashes, so a repeat is kept whole or not at all; the equal pairs counted are a subset of all
  equal pairs (plus hash collisions, whose expectation is added), so Markov's bound with the
  full expectation stays valid. A stream repeating with period T is caught once about 2^s x
  a few of its windows repeat.

Nothing here reads files or imports ``rng_service``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Hashable
from dataclasses import replace
from fractions import Fraction

import numpy as np
import numpy.typing as npt
from scipy import stats

from certification.outcomes._buffered import BufferedStream, SampledHashes
from certification.outcomes._stats import (
    MIN_EXPECTED,
    REPEAT_EXPECTATION,
    Cell,
    TestResult,
    chi_square_gof,
    markov_p,
    max_cell,
    repeats,
)
from certification.outcomes.sequence import (
    _COUPON_TAIL,
    _GAP_TAIL,
    _RUN_TAIL,
    CELL_NAMES,
    COUPON_ALPHABET,
    JITTER_SEED,
    MAX_CELL_TABLE,
    MAX_GAP_VALUES,
    MAX_LAG,
    POKER_HAND,
    TUPLE_MIN_EXPECTED,
    TUPLE_NAMES,
    _gap_probabilities,
    discrete_stream_tests,
    gap_per_value_from_table,
    gap_tail,
    run_sequence_tests,
    stirling2,
    tuple_alphabet,
    tuple_label,
)

__all__ = [
    "BUFFER_RECORDS",
    "BUFFER_VALUES",
    "KS_BINS",
    "REPEAT_KEPT",
    "REPEAT_MAX_VALUES",
    "DiscreteStream",
    "InclusionTally",
    "IntegerStream",
    "RepeatStream",
]

#: Values kept and tested exactly before the stream switches to tallies.
BUFFER_VALUES = 1 << 20
#: Whole records (draws, fill orders) kept for the exact repeat detector before
#: :class:`RepeatStream` switches to hashed windows.
BUFFER_RECORDS = 1 << 16
#: Values handled at once by the tallies (their working arrays are this long).
FEED_CHUNK = 1 << 16
#: Bins of the streamed Kolmogorov-Smirnov histogram.
KS_BINS = 1 << 20
#: The repeat detector's window is chosen for a stream of this many values.
REPEAT_MAX_VALUES = 10**12
#: Sampled windows held at most by the streamed repeat detector.
REPEAT_KEPT = 1 << 20

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
_MASK64 = (1 << 64) - 1


def _mix(h: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """splitmix64's finaliser: spreads a polynomial hash over all 64 bits."""
    with np.errstate(over="ignore"):
        h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return h ^ (h >> np.uint64(31))


class _Tuples:
    """Counts of the circular k- and (k-1)-windows over ``alphabet`` symbols."""

    def __init__(self, k: int, alphabet: int) -> None:
        self.k = k
        self.a = alphabet
        self.counts = [np.zeros(alphabet**j, dtype=np.int64) for j in range(k + 1)]
        self.head: IntArray = np.zeros(0, dtype=np.int64)
        self.tail: IntArray = np.zeros(0, dtype=np.int64)

    def add(self, symbols: IntArray) -> None:
        if self.head.size < self.k - 1:
            self.head = np.concatenate((self.head, symbols[: self.k - 1 - self.head.size]))
        joined = np.concatenate((self.tail, symbols))
        for j in range(1, self.k + 1):
            start = self.tail.size - (j - 1)  # windows that end in the new symbols
            self._count(joined, j, max(start, 0))
        self.tail = joined[-(self.k - 1) :] if self.k > 1 else joined[:0]

    def _count(self, joined: IntArray, j: int, start: int) -> None:
        m = joined.size - j + 1 - start
        if m <= 0:
            return
        codes = np.zeros(m, dtype=np.int64)
        for t in range(j):
            codes = codes * self.a + joined[start + t : start + t + m]
        self.counts[j] += np.bincount(codes, minlength=self.a**j)

    def result(self, n: int, d: int, group: str) -> TestResult:
        # the wrap-around windows: the last k-1 symbols followed by the first ones
        wrap = np.concatenate((self.tail, self.head))
        counts = [c.copy() for c in self.counts]
        for j in range(2, self.k + 1):
            start = self.tail.size - (j - 1)
            m = (j - 1) if start >= 0 else 0
            codes = np.zeros(m, dtype=np.int64)
            for t in range(j):
                codes = codes * self.a + wrap[start + t : start + t + m]
            counts[j] += np.bincount(codes, minlength=self.a**j)

        def psi(j: int) -> float:
            if j == 0:
                return 0.0
            c = counts[j].astype(np.float64)
            return float(self.a**j / n * np.dot(c, c) - n)

        statistic = psi(self.k) - psi(self.k - 1)
        df = self.a**self.k - self.a ** (self.k - 1)
        return TestResult(
            TUPLE_NAMES[self.k], group, statistic, df, float(stats.chi2.sf(statistic, df)),
            "overlapping serial del psi^2 (Good 1953), chi-square", n,
            details={"k": self.k, "alphabet": self.a,
                     "coarsened": "no" if self.a == d else f"{d} values -> {self.a} symbols",
                     "expected_per_cell": n / self.a**self.k, "streamed": "yes"},
        )  # fmt: skip


class _Runs:
    """Knuth's run lengths (the element after each run thrown away), across chunks."""

    def __init__(self) -> None:
        self.counts = np.zeros(_RUN_TAIL + 1, dtype=np.int64)
        self.length = 0  # of the run in progress (0: the next element starts one)
        self.last = 0.0

    def add(self, u: FloatArray) -> None:
        length, last = self.length, self.last
        counts = self.counts
        for x in u.tolist():
            if length == 0 or x > last:
                length += 1
                last = x
            else:  # x ends the run and is thrown away; the next element starts a new run
                counts[min(length, _RUN_TAIL)] += 1
                length = 0
        self.length, self.last = length, last


class IntegerStream(BufferedStream):
    """The sequence tests of one group's values, accumulated in one pass (module docstring;
    the switch is :class:`certification.outcomes._buffered.BufferedStream`'s)."""

    def __init__(self, d: int, group: str, symbols: tuple[str, ...] = (), *,
                 buffer_values: int = BUFFER_VALUES) -> None:  # fmt: skip
        super().__init__(buffer_values)
        self.d = d
        self.group = group
        self.symbols = symbols

    def _count(self, chunk: IntArray) -> int:
        return int(chunk.size)

    def _batch(self, outcomes: IntArray) -> list[TestResult]:
        return run_sequence_tests(outcomes, self.d, self.group, self.symbols)

    def _stream(self, chunk: IntArray) -> None:
        for begin in range(0, chunk.size, FEED_CHUNK):  # bounded working arrays
            self._feed(chunk[begin : begin + FEED_CHUNK])

    # --- the tallies ------------------------------------------------------------------------

    def _start(self, chunk: IntArray) -> None:
        buffered = self._joined(self._take_buffer())
        d = self.d
        self._jitter = np.random.default_rng(JITTER_SEED)
        self._values = np.zeros(d, dtype=np.int64)
        self._disjoint = {k: np.zeros(d**k, dtype=np.int64) for k in (2, 3)
                          if d**k <= MAX_CELL_TABLE}  # fmt: skip
        #: values of an unfinished disjoint tuple, per k
        self._carry = {k: np.zeros(0, dtype=np.int64) for k in self._disjoint}
        self._gap_values = 2 <= d <= MAX_GAP_VALUES
        t = gap_tail(d) if self._gap_values else 0
        self._gap_table = np.zeros((d, t + 1), dtype=np.int64)
        self._last_seen = np.full(d, -1, dtype=np.int64)
        self._gap_counts = np.zeros(_GAP_TAIL + 1, dtype=np.int64)
        self._since_marked = 0
        self._hand: IntArray = np.zeros(0, dtype=np.int64)
        self._poker = np.zeros(POKER_HAND + 1, dtype=np.int64)
        self._coupon = np.zeros(_COUPON_TAIL + 1, dtype=np.int64)
        self._coupon_seen = 0
        self._coupon_length = 0
        self._up, self._down = _Runs(), _Runs()
        self._turns = 0
        self._last_u: float | None = None
        self._last_sign = 0.0
        self._signs = 0
        self._sum = 0.0
        self._sum2 = 0.0
        self._lags = np.zeros(MAX_LAG, dtype=np.float64)
        self._u_head: FloatArray = np.zeros(0, dtype=np.float64)
        self._u_tail: FloatArray = np.zeros(0, dtype=np.float64)
        self._ks = np.zeros(KS_BINS, dtype=np.int64)
        self._tuples = {k: _Tuples(k, self._tuple_alphabet(k)) for k in (2, 3)}
        q = self._collision()
        window = 1
        while (REPEAT_MAX_VALUES**2 / 2) * q**window > REPEAT_EXPECTATION:
            window += 1
        self._window = window
        self._window_tail: IntArray = np.zeros(0, dtype=np.int64)
        self._sampled = SampledHashes(REPEAT_KEPT)
        self._stream(buffered)

    def _tuple_alphabet(self, k: int) -> int:
        """The overlapping k-tuples' alphabet, fixed at the switch (module docstring)."""
        return tuple_alphabet(self.limit, self.d, k)

    def _collision(self) -> float:
        """P(two values are equal) under the null hypothesis."""
        return 1.0 / self.d

    def _feed(self, values: IntArray) -> None:
        if values.size == 0:
            return
        d = self.d
        start = self.n
        n_new = int(values.size)
        u = (values.astype(np.float64) + self._jitter.random(n_new)) / d
        self._values += np.bincount(values, minlength=d)
        for k, table in self._disjoint.items():
            joined = np.concatenate((self._carry[k], values))  # tuples from a multiple of k
            m = joined.size // k
            if m:
                codes = joined[: m * k].reshape(m, k) @ (d ** np.arange(k - 1, -1, -1))
                table += np.bincount(codes, minlength=d**k)
            self._carry[k] = joined[m * k :]
        if self._gap_values:
            self._add_gaps_per_value(values, start)
        self._add_gap(values)
        self._add_poker(values)
        self._add_coupon(u)
        self._up.add(u)
        self._down.add(-u)
        self._add_turns(u)
        self._add_lags(u)
        bins = np.minimum((u * KS_BINS).astype(np.int64), KS_BINS - 1)
        self._ks += np.bincount(bins, minlength=KS_BINS)
        for tuples in self._tuples.values():
            a = tuples.a
            if a >= 2:
                tuples.add(values if a == d else np.minimum((u * a).astype(np.int64), a - 1))
        self._add_windows(values, start)
        self.n += n_new

    def _add_gaps_per_value(self, values: IntArray, start: int) -> None:
        t = self._gap_table.shape[1] - 1
        positions = np.arange(start, start + values.size, dtype=np.int64)
        order = np.argsort(values, kind="stable")
        ordered, pos = values[order], positions[order]
        previous = np.empty_like(pos)
        first = np.ones(ordered.size, dtype=bool)
        first[1:] = ordered[1:] != ordered[:-1]
        previous[~first] = pos[:-1][~first[1:]]
        previous[first] = self._last_seen[ordered[first]]
        seen = previous >= 0
        gaps = pos[seen] - previous[seen] - 1
        flat = np.bincount(ordered[seen] * (t + 1) + np.minimum(gaps, t),
                           minlength=self.d * (t + 1))  # fmt: skip
        self._gap_table += flat.reshape(self.d, t + 1)
        last = np.ones(ordered.size, dtype=bool)
        last[:-1] = ordered[1:] != ordered[:-1]
        self._last_seen[ordered[last]] = pos[last]

    def _add_gap(self, values: IntArray) -> None:
        marked = np.flatnonzero(values < self.d // 2)
        if marked.size == 0:
            self._since_marked += int(values.size)
            return
        gaps = np.diff(marked, prepend=-1) - 1
        gaps[0] += self._since_marked
        self._gap_counts += np.bincount(np.minimum(gaps, _GAP_TAIL), minlength=_GAP_TAIL + 1)
        self._since_marked = int(values.size - 1 - marked[-1])

    def _add_poker(self, values: IntArray) -> None:
        joined = np.concatenate((self._hand, values))
        m = joined.size // POKER_HAND
        hands = np.sort(joined[: m * POKER_HAND].reshape(m, POKER_HAND), axis=1)
        distinct = 1 + np.count_nonzero(np.diff(hands, axis=1), axis=1)
        self._poker += np.bincount(distinct, minlength=POKER_HAND + 1)
        self._hand = joined[m * POKER_HAND :]

    def _add_coupon(self, u: FloatArray) -> None:
        d = COUPON_ALPHABET
        symbols = np.minimum((u * d).astype(np.int64), d - 1)
        seen, length, full = self._coupon_seen, self._coupon_length, (1 << d) - 1
        counts = self._coupon
        for s in symbols.tolist():
            seen |= 1 << s
            length += 1
            if seen == full:
                counts[min(length, _COUPON_TAIL)] += 1
                seen = 0
                length = 0
        self._coupon_seen, self._coupon_length = seen, length

    def _add_turns(self, u: FloatArray) -> None:
        joined = u if self._last_u is None else np.concatenate(([self._last_u], u))
        signs = np.sign(np.diff(joined))
        if signs.size:
            if self._signs:
                self._turns += int(signs[0] != self._last_sign)
            self._turns += int(np.count_nonzero(signs[1:] != signs[:-1]))
            self._last_sign = float(signs[-1])
            self._signs += int(signs.size)
        self._last_u = float(u[-1])

    def _add_lags(self, u: FloatArray) -> None:
        if self._u_head.size < MAX_LAG:
            self._u_head = np.concatenate((self._u_head, u[: MAX_LAG - self._u_head.size]))
        self._sum += float(np.sum(u))
        self._sum2 += float(np.dot(u, u))
        joined = np.concatenate((self._u_tail, u))
        offset = self._u_tail.size
        for k in range(1, MAX_LAG + 1):
            # products u_i u_(i+k) whose second factor is new
            lo = max(offset - k, 0)
            a = joined[lo : joined.size - k]
            b = joined[lo + k :]
            self._lags[k - 1] += float(np.dot(a, b))
        self._u_tail = joined[-MAX_LAG:]

    def _add_windows(self, values: IntArray, start: int) -> None:
        w = self._window
        joined = np.concatenate((self._window_tail, values))
        m = joined.size - w + 1
        if m > 0:
            h = np.zeros(m, dtype=np.uint64)
            with np.errstate(over="ignore"):
                for t in range(w):
                    h = h * np.uint64(1_000_003) + joined[t : t + m].astype(np.uint64)
            self._sampled.add(_mix(h), start - self._window_tail.size)
        self._window_tail = joined[-(w - 1) :] if w > 1 else joined[:0]

    # --- the results -------------------------------------------------------------------------

    def _streamed(self) -> list[TestResult]:
        d, g, n = self.d, self.group, self.n
        out: list[TestResult] = [self._runs_up_and_down()]
        for name, runs in (("runs_up", self._up), ("runs_down", self._down)):
            expected = {r: Fraction(1, math.factorial(r)) - Fraction(1, math.factorial(r + 1))
                        for r in range(1, _RUN_TAIL)}  # fmt: skip
            expected[_RUN_TAIL] = Fraction(1, math.factorial(_RUN_TAIL))
            observed = {r: int(runs.counts[r]) for r in range(1, _RUN_TAIL + 1)}
            out.append(chi_square_gof(name, g, observed, expected))
        for k in (2, 3):
            tuples = self._tuples[k]
            if tuples.a >= 2 and n >= TUPLE_MIN_EXPECTED * tuples.a**k:
                out.append(tuples.result(n, d, g))
        out.append(self._lag_correlation())
        p = Fraction(d // 2, d)
        out.append(chi_square_gof("gap", g, {r: int(c) for r, c in enumerate(self._gap_counts)},
                                  _gap_probabilities(p), details={"p": str(p)}))  # fmt: skip
        expected_poker = {
            r: Fraction(math.perm(d, r) * stirling2(POKER_HAND, r), d**POKER_HAND)
            for r in range(1, min(POKER_HAND, d) + 1)
        }
        out.append(chi_square_gof("poker", g, {r: int(self._poker[r])
                                               for r in range(1, POKER_HAND + 1)},
                                  expected_poker))  # fmt: skip
        out.append(self._coupon_result())
        out.append(self._ks_result())
        out.append(self._repeats_result())
        out.append(max_cell(CELL_NAMES[1], g, self._values, 1.0 / d, n,
                            label=tuple_label(d, 1, self.symbols)))  # fmt: skip
        for k, table in self._disjoint.items():
            out.append(max_cell(CELL_NAMES[k], g, table, 1.0 / d**k, n // k,
                                label=tuple_label(d, k, self.symbols)))  # fmt: skip
        if self._gap_values:
            out.append(gap_per_value_from_table(self._gap_table, d, g, self.symbols))
        return out

    def _runs_up_and_down(self) -> TestResult:
        n = self.n
        runs = 1 + self._turns
        mean = (2 * n - 1) / 3
        sd = math.sqrt((16 * n - 29) / 90)
        z = (runs - mean) / sd
        return TestResult("runs_up_and_down", self.group, z, None,
                          float(2 * stats.norm.sf(abs(z))), "normal (z)", n,
                          details={"runs": runs, "expected": mean})  # fmt: skip

    def _lag_correlation(self) -> TestResult:
        n = self.n
        # wrap-around products u_(n-k+i) u_i, i < k
        tail, head = self._u_tail, self._u_head
        lags = self._lags.copy()
        for k in range(1, MAX_LAG + 1):
            lags[k - 1] += float(np.dot(tail[tail.size - k :], head[:k]))
        mean = self._sum / n
        denominator = self._sum2 - n * mean * mean
        coefficients = (lags - n * mean * mean) / denominator
        mu = -1.0 / (n - 1)
        sigma = math.sqrt(n * n / ((n - 1) ** 2 * (n - 2)))
        z = (coefficients - mu) / sigma
        p_each = 2 * stats.norm.sf(np.abs(z))
        worst = int(np.argmin(p_each))
        p_min = float(p_each[worst])
        p = 1.0 if p_min >= 1 else -math.expm1(MAX_LAG * math.log1p(-p_min))
        return TestResult(
            "lag_correlation", self.group, float(z[worst]), None, p,
            f"serial correlation at lags 1..{MAX_LAG} (normal z, Sidak)", n,
            details={"worst_lag": worst + 1, "C": float(coefficients[worst]), "lags": MAX_LAG},
        )  # fmt: skip

    def _coupon_result(self) -> TestResult:
        d = COUPON_ALPHABET
        fact = math.factorial(d)
        expected = {r: Fraction(fact * stirling2(r - 1, d - 1), d**r)
                    for r in range(d, _COUPON_TAIL)}  # fmt: skip
        covered = Fraction(fact * stirling2(_COUPON_TAIL - 1, d), d ** (_COUPON_TAIL - 1))
        expected[_COUPON_TAIL] = 1 - covered
        observed = {r: int(self._coupon[r]) for r in range(d, _COUPON_TAIL + 1)}
        return chi_square_gof("coupon_collector", self.group, observed, expected,
                              details={"alphabet": d})  # fmt: skip

    def _ks_result(self) -> TestResult:
        n = self.n
        cdf = np.cumsum(self._ks) / n
        edges = np.arange(1, KS_BINS + 1, dtype=np.float64) / KS_BINS
        below = np.concatenate(([0.0], cdf[:-1]))
        lower_edges = edges - 1.0 / KS_BINS
        distance = float(max(np.max(np.abs(cdf - edges)), np.max(np.abs(below - lower_edges))))
        p = float(stats.kstwo.sf(distance, n))
        return TestResult("uniformity_ks", self.group, distance, None, p,
                          f"Kolmogorov-Smirnov on a histogram of {KS_BINS} bins (conservative)",
                          n, details={"bins": KS_BINS})  # fmt: skip

    def _repeats_result(self) -> TestResult:
        n, w = self.n, self._window
        method = "repeated windows, sampled by hash (Markov bound)"
        hashes, positions = self._sampled.kept()
        order = np.lexsort((positions, hashes))
        hashes, positions = hashes[order], positions[order]
        observed = 0
        period: dict[int, int] = {}
        starts = np.flatnonzero(np.concatenate(([True], hashes[1:] != hashes[:-1])))
        ends = np.concatenate((starts[1:], [hashes.size]))
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            if b - a < 2:
                continue
            pos = positions[a:b]
            for i in range(pos.size - 1):
                far = pos[i + 1 :] - pos[i]
                observed += int(np.count_nonzero(far >= w))
                if far.size and far[0] >= w:
                    period[int(far[0])] = period.get(int(far[0]), 0) + 1
        windows = n - w + 1
        far_pairs = max(windows - w, 0) * (max(windows - w, 0) + 1) // 2
        expected = far_pairs * self._collision() ** w + self._sampled.collisions()
        details: dict[str, float | int | str] = {
            "window": w, "expected_pairs": expected, "pairs": observed,
            "sampled_share": f"2^-{self._sampled.bits}", "kept_windows": int(hashes.size),
        }  # fmt: skip
        if period:
            details["period"] = max(period, key=period.__getitem__)
        p = markov_p(observed, expected)
        return TestResult("repeats", self.group, float(observed), None, p, method, n,
                          details=details, second_level=False)  # fmt: skip


class DiscreteStream(IntegerStream):
    """The serial tests of draws from an exact discrete distribution (weighted choices,
    jackpot tiers) accumulated in one pass: exactly
    :func:`certification.outcomes.sequence.discrete_stream_tests` up to ``buffer_values``
    draws, then the tallies of :class:`IntegerStream` that those tests need (runs, runs up and
    down, overlapping pairs and triples on the coarsened randomised PIT, lag correlation,
    repeated windows with the collision probability sum p^2)."""

    def __init__(self, probabilities: tuple[Fraction, ...], group: str, *,
                 buffer_values: int = BUFFER_VALUES) -> None:  # fmt: skip
        super().__init__(len(probabilities), group, buffer_values=buffer_values)
        self.probabilities = probabilities
        self._p = np.array([float(x) for x in probabilities], dtype=np.float64)
        self._below = np.concatenate(([0.0], np.cumsum(self._p)[:-1]))
        self._q = float(sum((x * x for x in probabilities), Fraction(0)))

    def _batch(self, outcomes: IntArray) -> list[TestResult]:
        return discrete_stream_tests(outcomes, self.probabilities, self.group)

    def _streamed(self) -> list[TestResult]:
        out = [self._runs_up_and_down()]
        for name, runs in (("runs_up", self._up), ("runs_down", self._down)):
            expected = {r: Fraction(1, math.factorial(r)) - Fraction(1, math.factorial(r + 1))
                        for r in range(1, _RUN_TAIL)}  # fmt: skip
            expected[_RUN_TAIL] = Fraction(1, math.factorial(_RUN_TAIL))
            observed = {r: int(runs.counts[r]) for r in range(1, _RUN_TAIL + 1)}
            out.append(chi_square_gof(name, self.group, observed, expected))
        for k in (2, 3):
            tuples = self._tuples[k]
            if tuples.a >= 2:
                out.append(tuples.result(self.n, 0, self.group))
        out.append(self._lag_correlation())
        out.append(self._repeats_result())
        return out

    def _tuple_alphabet(self, k: int) -> int:
        return tuple_alphabet(self.limit, 0, k)

    def _collision(self) -> float:
        return self._q

    def _feed(self, values: IntArray) -> None:
        if values.size == 0:
            return
        v = self._jitter.random(values.size)
        u = np.minimum(self._below[values] + v * self._p[values], np.nextafter(1.0, 0.0))
        self._up.add(u)
        self._down.add(-u)
        self._add_turns(u)
        self._add_lags(u)
        for tuples in self._tuples.values():
            a = tuples.a
            if a >= 2:
                tuples.add(np.minimum((u * a).astype(np.int64), a - 1))
        self._add_windows(values, self.n)
        self.n += int(values.size)


def _record_hash(record: Hashable) -> int:
    """A 63-bit hash of a record's ``repr`` (the same on every run, unlike ``hash``)."""
    digest = hashlib.blake2b(repr(record).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


class RepeatStream:
    """The repeat (period) detector over whole records (Fire Number draws, multi-ball sets,
    draws without replacement, bonus fill orders) in one pass: up to ``buffer_records``
    records kept and tested exactly by :func:`certification.outcomes._stats.repeats`; beyond,
    each record is reduced to a 63-bit hash and the windows of those hashes are sampled as
    :class:`IntegerStream` samples its windows (module docstring), the window being the one a
    fair stream of :data:`REPEAT_MAX_VALUES` records would not repeat, with ``collision`` the
    probability that two records are equal."""

    def __init__(self, group: str, collision: Fraction | float, *, name: str = "repeats",
                 buffer_records: int = BUFFER_RECORDS) -> None:  # fmt: skip
        self.group = group
        self.name = name
        self.collision = collision
        self.buffer_records = buffer_records
        self.n = 0
        self._buffer: list[Hashable] = []
        self._codes: list[int] = []
        self._windows: _HashWindows | None = None

    @property
    def streaming(self) -> bool:
        return self._windows is not None

    def add(self, record: Hashable) -> None:
        self.n += 1
        if self._windows is None:
            self._buffer.append(record)
            if len(self._buffer) > self.buffer_records:
                self._windows = _HashWindows(float(self.collision), self.group)
                self._codes = [_record_hash(r) for r in self._buffer]
                self._buffer = []
            return
        self._codes.append(_record_hash(record))
        if len(self._codes) >= FEED_CHUNK:
            self._flush()

    def _flush(self) -> None:
        if self._windows is not None and self._codes:
            self._windows.feed(np.asarray(self._codes, dtype=np.int64))
            self._codes = []

    def result(self) -> TestResult:
        if self._windows is None:
            return repeats(self.name, self.group, self._buffer, self.collision)
        self._flush()
        self._windows._q = float(self.collision)  # the final one (uniform draws: c_min)
        return replace(self._windows.repeats_result(), name=self.name)


class _HashWindows(IntegerStream):
    """Only the sampled repeated windows of :class:`IntegerStream`, over record hashes."""

    def __init__(self, collision: float, group: str) -> None:
        super().__init__(2, group, buffer_values=0)
        self._q = collision
        self._streaming = True
        w = 1
        while 0 < collision < 1 and (REPEAT_MAX_VALUES**2 / 2) * collision**w > REPEAT_EXPECTATION:
            w += 1
        self._window = w
        self._window_tail = np.zeros(0, dtype=np.int64)
        self._sampled = SampledHashes(REPEAT_KEPT)

    def _collision(self) -> float:
        return self._q

    def feed(self, codes: IntArray) -> None:
        for begin in range(0, codes.size, FEED_CHUNK):
            part = codes[begin : begin + FEED_CHUNK]
            self._add_windows(part, self.n)
            self.n += int(part.size)

    def repeats_result(self) -> TestResult:
        return self._repeats_result()


class InclusionTally:
    """The counts :func:`certification.outcomes._stats.inclusion_test` forms, accumulated
    draw by draw (per-number inclusions, the draws' sizes), with the same result."""

    def __init__(self, layout: tuple[str, ...]) -> None:
        self.layout = layout
        self._index = {x: i for i, x in enumerate(layout)}
        self.counts = np.zeros(len(layout), dtype=np.int64)
        self.total = 0
        self.spread = 0
        self.n = 0
        self.unknown: str | None = None

    def add(self, draw: tuple[str, ...]) -> None:
        self.n += 1
        if self.unknown is not None:
            return
        size, c = len(self.layout), len(draw)
        self.total += c
        self.spread += c * (size - c)
        for x in draw:
            i = self._index.get(x)
            if i is None:
                self.unknown = x
                return
            self.counts[i] += 1

    def result(self, name: str, group: str) -> TestResult:
        method = "chi-square (inclusion)"
        if self.unknown is not None:
            return TestResult(name, group, None, None, 0.0, method, self.n,
                              note=f"number {self.unknown!r} is not on the layout")  # fmt: skip
        size = len(self.layout)
        e = self.total / size
        if e < MIN_EXPECTED or self.spread == 0:
            note = f"needs an expected {MIN_EXPECTED:g} inclusions per number"
            return TestResult(name, group, None, None, None, method, self.n, note=note)
        f = self.spread / ((size - 1) * self.total)
        statistic = float(np.sum((self.counts - e) ** 2) / e) / f
        df = size - 1
        cells = tuple(Cell(x, int(self.counts[i]), e) for i, x in enumerate(self.layout))
        return TestResult(
            name, group, statistic, df, float(stats.chi2.sf(statistic, df)),
            "chi-square (inclusion, scaled by 1/f)", self.n, cells, details={"f": f},
        )  # fmt: skip
