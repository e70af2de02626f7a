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
limits (MultiMMC: 100,000 (context, next) pairs per order; LZ78Y: 65,536 contexts in all) admit
the first entries in order of appearance, as the sample-at-a-time dictionaries do.
"""

from __future__ import annotations

from collections.abc import Callable

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


def _estimate(name: str, section: str, bitstring: bool, c: int, n: int, run: int, k: int) -> Estimate:
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
        self.scores = np.zeros(levels, dtype=np.int64)
        self.winner = 0

    def winners(self, correct: B) -> I64:
        """The winner before each step of the block (levels x steps), then advances."""
        levels, steps = correct.shape
        scores = self.scores[:, None] + np.cumsum(correct, axis=1, dtype=np.int64)
        top = scores.max(axis=0)
        candidate = correct & (scores == top[None, :])
        changed = candidate.any(axis=0)
        last = levels - 1 - np.argmax(candidate[::-1, :], axis=0)
        index = np.where(changed, np.arange(steps), -1)
        np.maximum.accumulate(index, out=index)
        after = np.where(index >= 0, last[np.maximum(index, 0)], self.winner)
        before = np.empty(steps, dtype=np.int64)
        before[0] = self.winner
        before[1:] = after[:-1]
        self.scores = scores[:, -1].copy()
        self.winner = int(after[-1])
        return before


def _replay(
    levels: int, steps: int, block: Callable[[int, int], tuple[B, B]]
) -> tuple[B, B]:
    """The winner's correctness and whether it predicted, for each step."""
    board = _Scoreboard(levels)
    right = np.empty(steps, dtype=bool)
    made = np.empty(steps, dtype=bool)
    size = max(1, _BLOCK * 16 // levels)
    for a in range(0, steps, size):
        b = min(steps, a + size)
        correct, found = block(a, b)
        winner = board.winners(correct)
        cols = np.arange(b - a)
        right[a:b] = correct[winner, cols]
        made[a:b] = found[winner, cols]
    return right, made


# -- 6.3.7 MultiMCW ------------------------------------------------------------------------

_WINDOWS = (63, 255, 1023, 4095)


def _window_modes(s: U8, k: int, w: int, first: int) -> I64:
    """For i in ``first .. n-1``: the most common symbol of ``s[i-w .. i-1]``, ties to the latest."""
    n = int(s.size)
    out = np.empty(n - first, dtype=np.int64)
    step = max(1024, (1 << 22) // max(k, 2) - w)
    symbols = np.arange(k, dtype=np.int64)[:, None]
    for a in range(first, n, step):
        b = min(n, a + step)
        lo = a - w
        seg = s[lo : b - 1].astype(np.int64)
        hot = seg[None, :] == symbols
        cum = np.zeros((k, seg.size + 1), dtype=np.int32)
        np.cumsum(hot, axis=1, dtype=np.int32, out=cum[:, 1:])
        idx = np.arange(seg.size, dtype=np.int64)
        last = np.where(hot, idx[None, :], -1)
        np.maximum.accumulate(last, axis=1, out=last)
        # Window for position i (offset t = i - a): seg[t .. t+w-1].
        t = np.arange(b - a)
        counts = cum[:, t + w].astype(np.int64) - cum[:, t]
        score = counts * (seg.size + 1) + last[:, t + w - 1]
        out[a - first : b - first] = np.argmax(score, axis=0)
    return out


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
        return part, np.ones_like(part)

    right, _ = _replay(len(_WINDOWS), steps, block)
    run = _longest_run(right, ~right)
    return _estimate("MultiMCW Prediction", "6.3.7", bitstring, int(right.sum()), steps, run, k)


# -- 6.3.8 Lag ---------------------------------------------------------------------------

_LAGS = 128


def lag(s: U8, k: int, *, bitstring: bool) -> Estimate:
    """Section 6.3.8: 128 lag predictors (the sample ``d`` places back, d = 1 .. 128)."""
    n = int(s.size)
    steps = n - 1
    x = s.astype(np.int16)
    lags = np.arange(1, _LAGS + 1)[:, None]

    def block(a: int, b: int) -> tuple[B, B]:
        i = np.arange(a + 1, b + 1)
        back = i[None, :] - lags
        ok = back >= 0
        correct = ok & (x[np.maximum(back, 0)] == x[i][None, :])
        return correct, np.ones_like(correct)

    right, _ = _replay(_LAGS, steps, block)
    run = _longest_run(right, ~right)
    return _estimate("Lag Prediction", "6.3.8", bitstring, int(right.sum()), steps, run, k)


# -- 6.3.9 MultiMMC ------------------------------------------------------------------------

_ORDERS = 16
_MMC_ENTRIES = 100_000


def _admitted_first(first: I64, limit: int) -> B:
    """Events whose key was among the first ``limit`` distinct keys to appear."""
    distinct = np.unique(first)
    if distinct.size <= limit:
        return np.ones(first.size, dtype=bool)
    return first <= distinct[limit - 1]


def _order_predictions(
    windows: Windows, s: I64, k: int, m: int, admitted: B | None
) -> tuple[I64, I64]:
    """Running (count, prediction) of each context of length ``m`` before each target ``i >= m``.

    Returns ``best`` (count * k + symbol of the context's most common successor so far, -1 when
    the context has not been counted) indexed by ``i - m``. ``admitted`` marks the events that
    are counted (dictionary limits); ``None``: all.
    """
    n = s.size
    ctx = windows.key(m)[: n - m]
    pair = windows.key(m + 1)
    y = s[m:]
    after = earlier_count(pair) + 1
    value = after * k + y
    if admitted is not None:
        value = np.where(admitted, value, -1)
    return earlier_max(ctx, value), pair


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
    for d in range(_ORDERS):
        m = d + 1
        if m + 1 > n - 1:
            break
        pair = win.key(m + 1)
        admitted = _admitted_first(first_event(pair), _MMC_ENTRIES)
        best, _ = _order_predictions(win, x, k, m, admitted)
        # Target i = m + e; predictions are scored from i = m + 1 (= d + 2).
        has = best[1:] >= 0
        hit = has & (best[1:] % k == x[m + 1 :])
        correct[d, m - 1 :] = hit
        found[d, m - 1 :] = has

    def block(a: int, b: int) -> tuple[B, B]:
        return correct[:, a:b], found[:, a:b]

    right, made = _replay(_ORDERS, steps, block)
    run = _longest_run(right, made & ~right)
    return _estimate("MultiMMC Prediction", "6.3.9", bitstring, int(right.sum()), steps, run, k)


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
    ctx_first: list[I64] = []
    orders: list[I64] = []
    for j in range(1, big + 1):
        ctx = win.key(j)[big - j : n - j]  # contexts of targets big .. n-1
        first = first_event(ctx)
        ctx_first.append(first)
        orders.append(first * (big + 1) + (big - j))
    distinct = np.unique(np.concatenate([np.unique(o) for o in orders]))
    limit = distinct[_LZ_ENTRIES - 1] if distinct.size > _LZ_ENTRIES else distinct[-1]
    steps = n - big - 1
    counts = np.full((big, steps), -1, dtype=np.int64)
    guesses = np.zeros((big, steps), dtype=np.int64)
    for j in range(1, big + 1):
        ctx = win.key(j)[big - j : n - j]
        pair = win.key(j + 1)[big - j : n - j]
        y = x[big:]
        admitted = orders[j - 1] <= limit
        value = np.where(admitted, (earlier_count(pair) + 1) * k + y, -1)
        best = earlier_max(ctx, value)[1:]
        row = big - j  # row 0 = longest context, so that argmax prefers it on ties
        counts[row] = np.where(best >= 0, best // k, -1)
        guesses[row] = best % k
    choice = np.argmax(counts, axis=0)
    cols = np.arange(steps)
    have = counts[choice, cols] > 0
    right = have & (guesses[choice, cols] == x[big + 1 :])
    run = _longest_run(right, ~right)
    return _estimate("LZ78Y Prediction", "6.3.10", bitstring, int(right.sum()), steps, run, k)
