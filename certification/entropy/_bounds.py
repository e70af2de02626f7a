"""Confidence bounds and root searches shared by the SP 800-90B estimators.

Owns the 99% upper confidence bound of a proportion (SP 800-90B section 6.3.1 step 3 and its
reuse in 6.3.5, 6.3.6 and 6.3.7-6.3.10), the prediction estimators' global and local bounds
(section 6.3.7 steps 4-6, with the run-length equation of 6.3.7 step 5) and the bisection the
compression estimate and P_local share. The bisection follows the stopping rules of NIST's
reference tool (SP800-90B_EntropyAssessment, ``calc_p_local``) so that both land on the same
root to well within the 1e-6 relative agreement tests/vectors/sp800_90b checks.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "Z_ALPHA",
    "PredictionBound",
    "bisect_decreasing",
    "prediction_bound",
    "upper_bound",
]

# Z_(1 - 0.005): the two-sided 99% normal quantile SP 800-90B uses throughout section 6.3.
Z_ALPHA = 2.5758293035489008
_ITERATIONS = 1076
_DBL_MIN = 2.2250738585072014e-308
_DBL_EPS = 2.220446049250313e-16


def upper_bound(p_hat: float, n: int) -> float:
    """``min(1, p + Z sqrt(p (1 - p) / (n - 1)))``: section 6.3.1 step 3."""
    return min(1.0, p_hat + Z_ALPHA * math.sqrt(p_hat * (1.0 - p_hat) / (n - 1.0)))


def _ordered(x: float) -> int:
    bits: int = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF)


def _close(a: float, b: float) -> bool:
    """Equal within an absolute DBL_MIN, a relative DBL_EPSILON, or 4 units in the last place."""
    if math.isnan(a) or math.isnan(b):
        return False
    if a == b:
        return True
    if math.isinf(a) or math.isinf(b):
        return False
    diff = abs(a - b)
    if diff <= _DBL_MIN or diff <= _DBL_EPS * max(abs(a), abs(b)):
        return True
    return abs(_ordered(a) - _ordered(b)) <= 4


def _inside(x: float, a: float, b: float) -> bool:
    low, high = (b, a) if a > b else (a, b)
    return low <= x <= high


def _inside_open(x: float, a: float, b: float) -> bool:
    low, high = (b, a) if a > b else (a, b)
    return low < x < high


def bisect_decreasing(
    f: Callable[[float], float], target: float, low: float, high: float, *, fail: float
) -> float:
    """The ``p`` in ``[low, high]`` with ``f(p) = target`` for a decreasing ``f``.

    Returns ``fail`` when the search leaves its domain or the target is outside the values seen
    (the estimators' "no solution" cases); a cycle or a stalled interval returns the high bound.
    """
    lbound, hbound = low, high
    lvalue, hvalue = math.inf, -math.inf
    p = (lbound + hbound) / 2.0
    value = f(p)
    for _ in range(_ITERATIONS):
        if _close(value, target):
            break
        if target < value:
            lbound, lvalue = p, value
        else:
            hbound, hvalue = p, value
        if lbound >= hbound:
            return min(max(lbound, hbound), high)
        if not (_inside(lbound, low, high) and _inside(hbound, low, high)):
            return fail
        if not _inside(target, lvalue, hvalue):
            return fail
        last = p
        p = (lbound + hbound) / 2.0
        if not _inside_open(p, lbound, hbound) or last == p:
            return hbound
        value = f(p)
        if not _inside(value, lvalue, hvalue):
            return hbound
    return p


def _run_log_probability(p: float, r: int, n: int) -> float:
    """log of the probability of no run of ``r`` successes in ``n`` trials (section 6.3.7 step 5).

    The root ``x`` of ``1 - x + q p^r x^(r+1) = 0`` is found by fixed-point iteration from 1.
    """
    q = 1.0 - p
    x, last = 1.0, 0.0
    pr = p**r
    for _ in range(66):
        if x - last <= _DBL_EPS * x:
            break
        last = x
        x = 1.0 + q * pr * x ** (r + 1.0)
    return math.log(1.0 - p * x) - math.log((r + 1.0 - r * x) * q) - (n + 1.0) * math.log(x)


@dataclass(frozen=True, slots=True)
class PredictionBound:
    """The figures of a prediction estimate (section 6.3.7 steps 4-7)."""

    correct: int
    predictions: int
    longest_run: int
    p_global: float
    p_global_upper: float
    p_local: float | None
    min_entropy: float

    def details(self) -> dict[str, float | int | None]:
        return {
            "C": self.correct,
            "N": self.predictions,
            "r": self.longest_run + 1,
            "P_global": self.p_global,
            "P_global_prime": self.p_global_upper,
            "P_local": self.p_local,
        }


def prediction_bound(correct: int, predictions: int, longest_run: int, k: int) -> PredictionBound:
    """Min-entropy from ``correct`` of ``predictions`` and the longest run of correct ones."""
    n = predictions
    p_global = correct / n
    if p_global > 0:
        p_prime = min(1.0, p_global + Z_ALPHA * math.sqrt(p_global * (1.0 - p_global) / (n - 1.0)))
    else:
        p_prime = 1.0 - 0.01 ** (1.0 / n)
    cur = max(1.0 / k, p_prime)
    p_local: float | None = None
    r = longest_run + 1
    log_alpha = math.log(0.99)
    if cur < 1.0 and _run_log_probability(cur, r, n) > log_alpha:
        p_local = bisect_decreasing(
            lambda p: _run_log_probability(p, r, n), log_alpha, cur, 1.0, fail=1.0
        )
        cur = max(cur, p_local)
    return PredictionBound(correct, n, longest_run, p_global, p_prime, p_local, -math.log2(cur))
