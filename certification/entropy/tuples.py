"""SP 800-90B section 6.3.5 (t-tuple) and 6.3.6 (longest repeated substring, LRS).

Both read the counts of repeated substrings: ``Q[w]``, the count of the most common ``w``-tuple,
and ``S[w]``, the number of equal pairs among the ``w``-tuples (the sum of ``C(c, 2)`` over the
distinct tuples). Short tuples are counted with a histogram of packed keys; longer ones by
refining the groups of equal tuples one symbol at a time, dropping tuples seen once (they cannot
repeat longer), until no tuple repeats: the last length that repeats is the LRS length ``v``.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from certification.entropy._bounds import upper_bound
from certification.entropy._estimate import Estimate

__all__ = ["TupleCounts", "lrs", "t_tuple", "tuple_counts"]

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
_HISTOGRAM = 1 << 24
_CUTOFF = 35


class TupleCounts:
    """``Q[w]`` and ``S[w]`` for ``w = 1 .. v``; ``v`` is the LRS length."""

    def __init__(self, n: int, q: list[int], s: list[int]) -> None:
        self.n = n
        self.q = q  # q[w - 1]
        self.s = s

    @property
    def v(self) -> int:
        return len(self.q)


def _pairs(counts: I64) -> int:
    return int((counts * (counts - 1) // 2).sum())


def tuple_counts(sym: U8, k: int) -> TupleCounts:
    n = int(sym.size)
    s = sym.astype(np.int64)
    k = max(k, 2)
    q: list[int] = []
    pairs: list[int] = []
    w = 1
    key = s.copy()
    # Histogram while k**w bins are few.
    while True:
        counts = np.bincount(key, minlength=1)
        top = int(counts.max())
        if top < 2:
            return TupleCounts(n, q, pairs)
        q.append(top)
        pairs.append(_pairs(counts[counts > 1]))
        if k ** (w + 1) > _HISTOGRAM or w + 1 > n:
            break
        key = key[:-1] * k + s[w:]
        w += 1
    # Refine sorted groups of repeated w-tuples one symbol at a time.
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    starts = np.empty(ordered.size, dtype=bool)
    starts[:1] = True
    starts[1:] = ordered[1:] != ordered[:-1]
    group = np.cumsum(starts) - 1
    pos = order.astype(np.int64)
    while True:
        sizes = np.bincount(group)
        keep = sizes[group] > 1
        pos = pos[keep]
        group = group[keep]
        nxt = pos + w
        alive = nxt < n
        pos = pos[alive]
        group = group[alive]
        if pos.size < 2:
            break
        combined = group * k + s[pos + w]
        order = np.argsort(combined, kind="stable")
        combined = combined[order]
        pos = pos[order]
        starts = np.empty(combined.size, dtype=bool)
        starts[:1] = True
        starts[1:] = combined[1:] != combined[:-1]
        group = np.cumsum(starts) - 1
        sizes = np.bincount(group)
        top = int(sizes.max())
        if top < 2:
            break
        w += 1
        q.append(top)
        pairs.append(_pairs(sizes[sizes > 1]))
    return TupleCounts(n, q, pairs)


def t_tuple(counts: TupleCounts, *, bitstring: bool) -> tuple[Estimate, int]:
    """Section 6.3.5; also returns ``u`` (the shortest length whose top count is under 35)."""
    n = counts.n
    u = 1
    while u <= counts.v and counts.q[u - 1] >= _CUTOFF:
        u += 1
    if u == 1:
        return Estimate("t-Tuple", "6.3.5", bitstring, None, {"t": 0}), u
    p_max = max((counts.q[i - 1] / (n - i + 1)) ** (1.0 / i) for i in range(1, u))
    p_u = upper_bound(p_max, n)
    details: dict[str, float | int | None] = {"t": u - 1, "p_hat_max": p_max, "p_u": p_u}
    return Estimate("t-Tuple", "6.3.5", bitstring, -math.log2(p_u), details), u


def lrs(counts: TupleCounts, u: int, *, bitstring: bool) -> Estimate:
    """Section 6.3.6: collision probability of the ``w``-tuples for ``u <= w <= v``."""
    n = counts.n
    v = counts.v
    if v < u:
        return Estimate("LRS", "6.3.6", bitstring, None, {"u": u, "v": v})
    p_max = max(
        (counts.s[w - 1] / ((n - w) * (n - w + 1) // 2)) ** (1.0 / w) for w in range(u, v + 1)
    )
    p_u = upper_bound(p_max, n)
    details: dict[str, float | int | None] = {"u": u, "v": v, "p_hat": p_max, "p_u": p_u}
    return Estimate("LRS", "6.3.6", bitstring, -math.log2(p_u), details)
