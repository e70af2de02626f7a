"""SP 800-90B section 6.3.7-6.3.10: the prediction estimates.

MultiMCW (6.3.7), lag (6.3.8), MultiMMC (6.3.9) and LZ78Y (6.3.10) each predict every sample
from the ones before it and turn the count of correct predictions and the longest run of them
into an upper bound on the predictability (section 6.3.7 steps 4-6, :mod:`._bounds`).

The specification describes one sample at a time. Here each sub-predictor's predictions are
computed for the whole sequence at once (running counts per context by a stable sort, see
:mod:`._groups`), and the scoreboard that picks the sub-predictor to trust is replayed in blocks:
after each sample the winner is the highest-numbered sub-predictor that was just right and now
holds the top score, or the previous winner when none was (the order in which section 6.3.7
step 3c, 6.3.8 step 3c and 6.3.9 step 3c compare scores). Tie rules follow NIST's reference
tool: a mode's ties go to the most recently seen symbol (MultiMCW) or to the larger symbol
(MultiMMC, LZ78Y); LZ78Y's ties between context lengths go to the longer context. Dictionary
limits are kept as the tool keeps them: LZ78Y (65,536 contexts in all) admits the first contexts
in order of appearance; MultiMMC (100,000 (context, next) entries per model) also stops looking
at longer models once a shorter one misses its context (:func:`_mmc_order`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from certification.entropy._bounds import prediction_bound
from certification.entropy._estimate import Estimate
from certification.entropy._groups import Windows, earlier_count, earlier_max, first_event

__all__ = ["lag", "lz78y", "multi_mcw", "multi_mmc"]

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]
_BLOCK = 1 << 16


def _estimate(
    name: str, section: str, bitstring: bool, c: int, n: int, run: int, k: int
) -> Estimate:
    bound = prediction_bound(c, n, run, k)
    return Estimate(name, section, bitstring, bound.min_entropy, bound.details())


def _longest_run(correct: B, reset: B) -> int:
    """Longest count of correct predictions between resets (a reset ends a run)."""
    segment = np.cumsum(reset)
    counts = np.bincount(segment[correct]) if correct.any() else np.zeros(1, dtype=np.int64)
    return int(counts.max())


class _Scoreboard:
    """Replays the scoreboard of ``levels`` sub-predictors over blocks of steps."""

    def __init__(self, levels: int) -> None:
        self.scores = np.zeros(levels, dtype=np.int32)
        self.winner = 0
        self._rank = np.arange(1, levels + 1, dtype=np.int16)[:, None]

    def winners(self, correct: B) -> I64:
        """The winner before each step of the block (levels x steps), then advances."""
        steps = correct.shape[1]
        scores = np.cumsum(correct, axis=1, dtype=np.int32)
        scores += self.scores[:, None]
        top = scores.max(axis=0)
        candidate = correct & (scores == top)
        # The highest-numbered sub-predictor just right and now on top (0: none).
        rank = (candidate * self._rank).max(axis=0).astype(np.int64)
        index = np.where(rank > 0, np.arange(steps), -1)
        np.maximum.accumulate(index, out=index)
        after = np.where(index >= 0, rank[np.maximum(index, 0)] - 1, self.winner)
        before = np.empty(steps, dtype=np.int64)
        before[0] = self.winner
        before[1:] = after[:-1]
        self.scores = scores[:, -1].copy()
        self.winner = int(after[-1])
        return before


def _replay(levels: int, steps: int, block: Callable[[int, int], tuple[B, B]]) -> tuple[B, B]:
    """The winner's correctness and whether it predicted, for each step."""
    board = _Scoreboard(levels)
    right = np.empty(steps, dtype=bool)
    made = np.empty(steps, dtype=bool)
    size = max(1, _BLOCK * 64 // levels)
    for a in range(0, steps, size):
        b = min(steps, a + size)
        correct, found = block(a, b)
        winner = board.winners(correct)
        cols = np.arange(b - a)
        right[a:b] = correct[winner, cols]
        made[a:b] = True if found is correct else found[winner, cols]
    return right, made


@dataclass(frozen=True, slots=True)
class _Level:
    """One context length of a binary sequence, events sorted by (context, target).

    ``order``: the targets (indexes of the predicted bits) in that order; ``group``: the
    context's number (0, 1, ... in sorted order); ``starts``: where each group begins; ``y``: the
    predicted bits; ``zeros``/``ones``: earlier events of the same context followed by 0/1.
    """

    order: I64
    group: I64
    starts: I64
    y: U8
    zeros: I64
    ones: I64

    def first_with(self, bit: int) -> I64:
        """Per group, the first target whose context is followed by ``bit`` (max int: none)."""
        counts = self.ones if bit else self.zeros
        out = np.full(self.starts.size, np.iinfo(np.int64).max, dtype=np.int64)
        hit = np.flatnonzero((self.y == bit) & (counts == 0))
        out[self.group[hit]] = self.order[hit]
        return out


def _binary_levels(s: U8, first_target: Callable[[int], int], levels: int) -> Iterator[_Level]:
    """Context lengths 1 .. ``levels`` of a bit sequence, each sorted by context then target.

    Sorting by a context one bit longer is a stable partition by the bit that is added (the
    least significant digit first, as in a radix sort), so no comparison sort is needed.
    """
    n = int(s.size)
    order = np.arange(first_target(1), n, dtype=np.int64)
    key = np.zeros(order.size, dtype=np.int64)
    for m in range(1, levels + 1):
        keep = order >= first_target(m)
        if not keep.all():
            order, key = order[keep], key[keep]
        bit = s[order - m].astype(bool)
        order = np.concatenate([order[~bit], order[bit]])
        key = np.concatenate([key[~bit], key[bit] + (1 << (m - 1))])
        new = np.empty(order.size, dtype=bool)
        new[:1] = True
        new[1:] = key[1:] != key[:-1]
        group = np.cumsum(new, dtype=np.int64) - 1
        starts = np.flatnonzero(new)
        y = s[order]
        ones = np.cumsum(y, dtype=np.int64) - y
        ones -= ones[starts][group]
        zeros = np.arange(order.size, dtype=np.int64) - starts[group] - ones
        yield _Level(order, group, starts, y, zeros, ones)


# -- 6.3.7 MultiMCW ------------------------------------------------------------------------

_WINDOWS = (63, 255, 1023, 4095)


def _window_modes(s: U8, k: int, w: int, first: int) -> I64:
    """For i in ``first .. n-1``: the commonest symbol of ``s[i-w .. i-1]``, ties to the latest."""
    n = int(s.size)
    if k == 2:
        # Two symbols and an odd window: the majority, never a tie.
        ones = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(s, out=ones[1:])
        at = np.arange(first, n)
        return (2 * (ones[at] - ones[at - w]) > w).astype(np.int64)
    # A wider alphabet: slide the window one sample at a time (NIST's bookkeeping); a numpy
    # version costs k x n per window however it is blocked.
    data = s.tolist()
    counts = [0] * k
    last = [-1] * k
    for j in range(first - w, first):
        counts[data[j]] += 1
        last[data[j]] = j
    symbols = range(k)

    def rank(x: int) -> tuple[int, int]:
        return counts[x], last[x]

    mode = max(symbols, key=rank)
    top = counts[mode]
    modes = [0] * (n - first)
    for i in range(first, n):
        modes[i - first] = mode
        gone = data[i - w]
        come = data[i]
        counts[gone] -= 1
        counts[come] += 1
        last[come] = i
        if gone != mode:
            if counts[come] >= top:
                mode = come
                top = counts[come]
        else:
            mode = max(symbols, key=rank)
            top = counts[mode]
    return np.asarray(modes, dtype=np.int64)


def multi_mcw(s: U8, k: int, *, bitstring: bool) -> Estimate:
    """Section 6.3.7: four most-common-in-window predictors (windows 63, 255, 1023, 4095)."""
    n = int(s.size)
    first = _WINDOWS[0]
    if n < _WINDOWS[-1] + 1:
        return Estimate("MultiMCW Prediction", "6.3.7", bitstring, None, {})
    steps = n - first
    target = s[first:].astype(np.int64)
    correct = np.zeros((len(_WINDOWS), steps), dtype=bool)
    for j, w in enumerate(_WINDOWS):
        modes = _window_modes(s, k, w, w)
        correct[j, w - first :] = modes == target[w - first :]

    def block(a: int, b: int) -> tuple[B, B]:
        part = correct[:, a:b]
        return part, part

    right, _ = _replay(len(_WINDOWS), steps, block)
    run = _longest_run(right, ~right)
    return _estimate("MultiMCW Prediction", "6.3.7", bitstring, int(right.sum()), steps, run, k)


# -- 6.3.8 Lag ---------------------------------------------------------------------------

_LAGS = 128


def lag(s: U8, k: int, *, bitstring: bool) -> Estimate:
    """Section 6.3.8: 128 lag predictors (the sample ``d`` places back, d = 1 .. 128)."""
    n = int(s.size)
    steps = n - 1
    x = s

    def block(a: int, b: int) -> tuple[B, B]:
        # Steps a .. b-1 predict samples i = a+1 .. b.
        size = b - a
        now = x[a + 1 : b + 1]
        correct = np.zeros((_LAGS, size), dtype=bool)
        for d in range(1, _LAGS + 1):
            lo = a + 1 - d
            if lo >= 0:
                np.equal(now, x[lo : lo + size], out=correct[d - 1])
            elif lo + size > 0:
                np.equal(now[-lo:], x[: lo + size], out=correct[d - 1, -lo:])
        return correct, correct

    right, _ = _replay(_LAGS, steps, block)
    run = _longest_run(right, ~right)
    return _estimate("Lag Prediction", "6.3.8", bitstring, int(right.sum()), steps, run, k)


# -- 6.3.9 MultiMMC ------------------------------------------------------------------------

_ORDERS = 16
_MMC_ENTRIES = 100_000


def _mmc_order(win: Windows, x: I64, k: int, m: int, chain: B) -> tuple[B, B]:
    """One Markov model (context length ``m``) of MultiMMC over a wide alphabet.

    Events ``e = 0 .. n-m-1``: the context ``x[e .. e+m-1]`` followed by ``x[e+m]``; event 0 is
    the dictionary's first entry (section 6.3.9 step 2), event ``e >= 1`` the step predicting
    ``x[e+m]``. ``chain`` (per event): every shorter model found its context at that step.
    Returns (found, correct) for events ``e >= 1``.

    The dictionary is kept as NIST's tool keeps it (``multi_mmc_test.h``, version 1.1.7), which
    matters once it is full (100,000 (context, next) entries, section 6.3.9): a model looks its
    context up only when every shorter one found its own (section 6.3.9 step 3: a context not
    seen means no prediction, and the tool stops looking at longer ones); a model that did not
    look adds or counts the pair while there is room and counts an entry whether or not the pair
    was already there; once full, nothing is added and a pair that did not look is not counted.
    Before any model is full, this is the plain reading of section 6.3.9.
    """
    n = x.size
    ctx = win.key(m)[: n - m]
    pair = win.key(m + 1)[: n - m]
    y = x[m:]
    first = first_event(pair)
    new_pair = first == np.arange(first.size)
    grows = new_pair | ~chain  # steps that add a dictionary entry while there is room
    room = (np.cumsum(grows) - grows) < _MMC_ENTRIES
    counted = room[first] & (chain | room)  # the pair got in at its first event
    value = np.where(counted, (earlier_count(pair, counted) + 1) * k + y, -1)
    best = earlier_max(ctx, value)[1:]
    found: B = (best >= 0) & chain[1:]
    correct: B = found & (best % k == y[1:])
    return found, correct


def multi_mmc(s: U8, k: int, *, bitstring: bool, windows: Windows | None = None) -> Estimate:
    """Section 6.3.9: Markov models of order 1 to 16, each predicting the likeliest successor."""
    n = int(s.size)
    if n < 3:
        return Estimate("MultiMMC Prediction", "6.3.9", bitstring, None, {})
    win = windows if windows is not None else Windows(s, k)
    x = s.astype(np.int64)
    steps = n - 2
    correct = np.zeros((_ORDERS, steps), dtype=bool)
    found = np.zeros((_ORDERS, steps), dtype=bool)
    if k == 2:
        # Order d + 1 predicts targets i >= d + 2 from the d + 1 bits before (columns i - 2).
        # Only the 16-bit model can fill (2^17 pairs); the shorter ones keep every context, so
        # a context they miss is new to the longer model too: admission in order of appearance
        # is then all of the tool's bookkeeping.
        for d, level in enumerate(_binary_levels(s, lambda m: m, min(_ORDERS, n - 2))):
            firsts = [level.first_with(0), level.first_with(1)]
            appear = np.concatenate(firsts)
            appear = appear[appear < n]
            limit = (
                np.partition(appear, _MMC_ENTRIES - 1)[_MMC_ENTRIES - 1]
                if appear.size > _MMC_ENTRIES
                else n
            )
            c0 = np.where(firsts[0][level.group] <= limit, level.zeros, 0)
            c1 = np.where(firsts[1][level.group] <= limit, level.ones, 0)
            has = (c0 + c1) > 0
            hit = has & ((c1 >= c0) == (level.y == 1))
            cols = level.order - 2
            use = cols >= 0
            found[d, cols[use]] = has[use]
            correct[d, cols[use]] = hit[use]
    else:
        chain = np.ones(steps, dtype=bool)  # every shorter model found its context
        for d in range(_ORDERS):
            m = d + 1
            if m + 1 > n - 1:
                break
            # Target i = m + e; predictions are scored from i = m + 1 (= d + 2), column i - 2.
            events = np.concatenate([[True], chain[m - 1 :]])
            found[d, m - 1 :], correct[d, m - 1 :] = _mmc_order(win, x, k, m, events)
            chain &= found[d]

    def block(a: int, b: int) -> tuple[B, B]:
        return correct[:, a:b], found[:, a:b]

    right, made = _replay(_ORDERS, steps, block)
    run = _longest_run(right, made & ~right)
    return _estimate("MultiMMC Prediction", "6.3.9", bitstring, int(right.sum()), steps, run, k)


def _admission_limit(orders: list[I64]) -> int:
    """The order value of the last context admitted to LZ78Y's dictionary."""
    distinct = np.concatenate(orders)
    if distinct.size <= _LZ_ENTRIES:
        return int(distinct.max())
    return int(np.partition(distinct, _LZ_ENTRIES - 1)[_LZ_ENTRIES - 1])


# -- 6.3.10 LZ78Y --------------------------------------------------------------------------

_LZ_LENGTH = 16
_LZ_ENTRIES = 65_536


def lz78y(s: U8, k: int, *, bitstring: bool, windows: Windows | None = None) -> Estimate:
    """Section 6.3.10: a dictionary of contexts up to 16 samples long, the longest-counted wins."""
    n = int(s.size)
    big = _LZ_LENGTH
    if n < big + 2:
        return Estimate("LZ78Y Prediction", "6.3.10", bitstring, None, {})
    win = windows if windows is not None else Windows(s, k)
    x = s.astype(np.int64)

    # Admission of contexts: the first 65,536 distinct (length, context) in order of appearance,
    # by target position and, at one position, longest context first.
    def contexts(j: int) -> I64:
        return win.key(j)[big - j : n - j]  # the contexts of targets big .. n-1

    steps = n - big - 1
    best_count = np.zeros(steps, dtype=np.int64)
    best_guess = np.zeros(steps, dtype=np.int64)
    if k == 2:
        orders = [
            level.order[level.starts] * (big + 1) + (big - j)
            for j, level in enumerate(_binary_levels(s, lambda m: big, big), start=1)
        ]
        limit = _admission_limit(orders)
        for j, level in enumerate(_binary_levels(s, lambda m: big, big), start=1):
            admitted = (level.order[level.starts] * (big + 1) + (big - j) <= limit)[level.group]
            count = np.where(admitted, np.maximum(level.zeros, level.ones), 0)
            guess = (level.ones >= level.zeros).astype(np.int64)
            use = level.order > big
            cols = level.order[use] - big - 1
            # Ascending lengths: a longer context takes ties.
            better = (count[use] > 0) & (count[use] >= best_count[cols])
            best_count[cols[better]] = count[use][better]
            best_guess[cols[better]] = guess[use][better]
    else:
        orders = [
            np.unique(first_event(contexts(j))) * (big + 1) + (big - j) for j in range(1, big + 1)
        ]
        limit = _admission_limit(orders)
        for j in range(big, 0, -1):  # longest first: a shorter context must count more to win
            ctx = contexts(j)
            pair = win.key(j + 1)[big - j : n - j]
            admitted_all = first_event(ctx) * (big + 1) + (big - j) <= limit
            value = np.where(admitted_all, (earlier_count(pair) + 1) * k + x[big:], -1)
            best = earlier_max(ctx, value)[1:]
            count = np.where(best >= 0, best // k, 0)
            better = count > best_count
            best_count[better] = count[better]
            best_guess[better] = (best % k)[better]
    right = (best_count > 0) & (best_guess == x[big + 1 :])
    run = _longest_run(right, ~right)
    return _estimate("LZ78Y Prediction", "6.3.10", bitstring, int(right.sum()), steps, run, k)
