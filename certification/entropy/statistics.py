"""SP 800-90B section 6.3.1-6.3.4: most common value, collision, Markov and compression.

The most common value estimate (6.3.1) runs on any alphabet; the collision (6.3.2), Markov
(6.3.3) and compression (6.3.4) estimates run on binary sequences only: the bitstring of
section 3.1.3, or the samples themselves when they are one bit wide. Each function returns an
:class:`Estimate` with the figures NIST's ``ea_non_iid -vv`` prints.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from certification.entropy._bounds import Z_ALPHA, bisect_decreasing, upper_bound
from certification.entropy._estimate import Estimate
from certification.entropy._groups import earlier_max

__all__ = ["collision", "compression", "markov", "most_common_value"]

U8 = npt.NDArray[np.uint8]


def most_common_value(s: U8, k: int, *, bitstring: bool) -> Estimate:
    """Section 6.3.1: ``-log2`` of the upper bound on the most common value's probability."""
    n = int(s.size)
    mode = int(np.bincount(s, minlength=k).max())
    p_hat = mode / n
    p_u = upper_bound(p_hat, n)
    details: dict[str, float | int | None] = {"mode": mode, "p_hat": p_hat, "p_u": p_u}
    return Estimate("Most Common Value", "6.3.1", bitstring, -math.log2(p_u), details)


def collision(s: U8, *, bitstring: bool) -> Estimate:
    """Section 6.3.2 (with the closed form of the expectation in Appendix G.1.1).

    Collision times are 2 (two equal bits) or 3; the mean's lower bound ``X'`` solves
    ``X' = -2p^2 + 2p + 2`` for ``p >= 1/2``.
    """
    n = int(s.size)
    data = s.tobytes()
    i = 0
    v = 0
    squares = 0
    while i < n - 1:
        if data[i] == data[i + 1]:
            t = 2
        elif i < n - 2:
            t = 3
        else:
            break
        v += 1
        squares += t * t
        i += t
    mean = i / v
    sigma = math.sqrt((squares - i * mean) / (v - 1))
    bound = max(2.0, mean - Z_ALPHA * sigma / math.sqrt(v))
    if bound < 2.5:
        p = 0.5 + math.sqrt(1.25 - 0.5 * bound)
        h = -math.log2(p)
    else:
        p, h = 0.5, 1.0
    details: dict[str, float | int | None] = {
        "v": v,
        "sum_t": i,
        "X_bar": mean,
        "sigma_hat": sigma,
        "X_bar_prime": bound,
        "p": p,
    }
    return Estimate("Collision", "6.3.2", bitstring, h, details)


def markov(s: U8, *, bitstring: bool) -> Estimate:
    """Section 6.3.3: the most likely 128-bit sequence under the fitted first-order chain."""
    n = int(s.size)
    head = s[:-1]
    tail = s[1:]
    c0 = int(np.count_nonzero(head == 0))
    c00 = int(np.count_nonzero((head == 0) & (tail == 0)))
    c10 = int(np.count_nonzero((head == 1) & (tail == 0)))
    c1 = n - 1 - c0
    p00, p01 = (c00 / c0, 1.0 - c00 / c0) if c0 > 0 else (0.0, 0.0)
    p10, p11 = (c10 / c1, 1.0 - c10 / c1) if c1 > 0 else (0.0, 0.0)
    if s[-1] == 0:
        c0 += 1
    p0 = c0 / n
    p1 = 1.0 - p0
    lg = math.log2
    best = 128.0
    if p00 > 0:
        best = min(best, -lg(p0) - 127 * lg(p00))
    if p01 > 0 and p10 > 0:
        best = min(best, -lg(p0) - 64 * lg(p01) - 63 * lg(p10))
    if p01 > 0 and p11 > 0:
        best = min(best, -lg(p0) - lg(p01) - 126 * lg(p11))
    if p10 > 0 and p00 > 0:
        best = min(best, -lg(p1) - lg(p10) - 126 * lg(p00))
    if p10 > 0 and p01 > 0:
        best = min(best, -lg(p1) - 64 * lg(p10) - 63 * lg(p01))
    if p11 > 0:
        best = min(best, -lg(p1) - 127 * lg(p11))
    details: dict[str, float | int | None] = {
        "P_0": p0,
        "P_1": p1,
        "P_00": p00,
        "P_01": p01,
        "P_10": p10,
        "P_11": p11,
        "p_hat_max": 2.0**-best,
    }
    return Estimate("Markov", "6.3.3", bitstring, min(best / 128.0, 1.0), details)


_BLOCK = 6
_DICTIONARY = 1000


def _g(z: float, d: int, blocks: int) -> float:
    """G(z) of section 6.3.4 step 8, summed in closed form over the test blocks.

    Terms whose weight ``(1 - z)^(i - 1)`` underflows a double are left out, as NIST's tool
    stops at the first term that underflows.
    """
    v = blocks - d
    decay = -math.log1p(-z)
    last = blocks if decay <= 0 else min(blocks, 2 + math.ceil(750.0 / decay))
    i = np.arange(2, last + 1, dtype=np.float64)
    with np.errstate(under="ignore"):
        weights = np.log2(i) * np.exp(-(i - 1.0) * decay)
    head = float(weights[: d - 1].sum())
    tail = weights[d - 1 : blocks - 2]
    scale = blocks - np.arange(d + 1, d + 1 + tail.size, dtype=np.float64)
    first = float((scale * tail).sum()) + (blocks - d) * head
    end = float(weights[blocks - 2]) if last == blocks else 0.0
    total = head + float(tail.sum()) + end
    return 1.0 / v * z * (z * first + (total - head))


def _expected(p: float, d: int, blocks: int) -> float:
    q = (1.0 - p) / ((1 << _BLOCK) - 1.0)
    return _g(p, d, blocks) + ((1 << _BLOCK) - 1.0) * _g(q, d, blocks)


def compression(s: U8, *, bitstring: bool) -> Estimate:
    """Section 6.3.4: Maurer-style compression of 6-bit blocks against a 1000-block dictionary."""
    blocks = int(s.size) // _BLOCK
    d = _DICTIONARY
    if blocks <= d:
        return Estimate("Compression", "6.3.4", bitstring, None, {})
    weights = (1 << np.arange(_BLOCK - 1, -1, -1)).astype(np.int64)
    values = (s[: blocks * _BLOCK].reshape(blocks, _BLOCK).astype(np.int64) * weights).sum(1)
    index = np.arange(blocks, dtype=np.int64)
    previous = earlier_max(values, index)
    distance = (index - previous)[d:]
    logs = np.log2(distance.astype(np.float64))
    v = blocks - d
    mean = float(logs.sum()) / v
    sigma = 0.5907 * math.sqrt(float((logs * logs).sum()) / (v - 1.0) - mean * mean)
    bound = mean - Z_ALPHA * sigma / math.sqrt(v)
    alphabet = 1 << _BLOCK
    floor = 1.0 / alphabet
    p = -1.0
    if _expected(floor, d, blocks) > bound:
        p = bisect_decreasing(lambda x: _expected(x, d, blocks), bound, floor, 1.0, fail=floor)
    if p > floor:
        h = -math.log2(p) / _BLOCK
    else:
        p, h = floor, 1.0
    details: dict[str, float | int | None] = {
        "X_bar": mean,
        "sigma_hat": sigma,
        "X_bar_prime": bound,
        "p": p,
    }
    return Estimate("Compression", "6.3.4", bitstring, h, details)
