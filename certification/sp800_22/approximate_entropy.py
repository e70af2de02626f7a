"""Approximate entropy test, SP 800-22 Rev.1a section 2.12.

Compares the frequencies of overlapping m-bit and (m+1)-bit words (the sequence wrapped around
at the end) with those of a random sequence. Default m = 10.
"""

from __future__ import annotations

import math

import numpy as np

from certification.sp800_22._result import Bits, TestResult
from certification.sp800_22._special import igamc

__all__ = ["DEFAULT_M", "NAME", "approximate_entropy", "cyclic_word_counts"]

NAME = "approximate_entropy"
DEFAULT_M = 10


def cyclic_word_counts(bits: Bits, m: int) -> np.ndarray[tuple[int], np.dtype[np.int64]]:
    """Counts of each m-bit word over the n overlapping windows of the sequence wrapped round."""
    n = int(bits.size)
    extended = bits[np.arange(n + m - 1) % n]
    values = np.zeros(n, dtype=np.int64)
    for k in range(m):
        values = (values << 1) | extended[k : k + n]
    counts: np.ndarray[tuple[int], np.dtype[np.int64]] = np.bincount(values, minlength=2**m)
    return counts


def _phi(bits: Bits, m: int) -> float:
    if m == 0:
        return 0.0
    n = int(bits.size)
    counts = cyclic_word_counts(bits, m)
    counts = counts[counts > 0].astype(np.float64)
    return float(np.sum(counts * np.log(counts / n))) / n


def approximate_entropy(bits: Bits, *, m: int = DEFAULT_M) -> TestResult:
    """ApEn = phi_m - phi_(m+1); chi^2 = 2n(ln 2 - ApEn); P = igamc(2^(m-1), chi^2/2)."""
    n = int(bits.size)
    if n == 0 or m < 0:
        return TestResult.single(NAME, None)
    apen = _phi(bits, m) - _phi(bits, m + 1)
    chi_squared = 2.0 * n * (math.log(2) - apen)
    return TestResult.single(NAME, igamc(2.0 ** (m - 1), chi_squared / 2.0))
