"""Approximate entropy test, SP 800-22 Rev.1a section 2.12.

Compares the frequencies of overlapping m-bit and (m+1)-bit words (the sequence wrapped around
at the end) with those of a random sequence. Default m = 10.
"""

from __future__ import annotations

import math

import numpy as np

from certification.sp800_22._result import Bits, TestResult
from certification.sp800_22._special import igamc

__all__ = [
    "DEFAULT_M",
    "NAME",
    "Counts",
    "approximate_entropy",
    "cyclic_word_counts",
    "drop_last_bit",
]

NAME = "approximate_entropy"
DEFAULT_M = 10


Counts = np.ndarray[tuple[int], np.dtype[np.int64]]


def cyclic_word_counts(bits: Bits, m: int) -> Counts:
    """Counts of each m-bit word (index = the word, first bit most significant) over the n
    overlapping windows of the sequence wrapped round at the end."""
    n = int(bits.size)
    extended = bits[np.arange(n + m - 1) % n] if m > 1 else bits
    values = np.zeros(n, dtype=np.intp)
    for k in range(m):
        values <<= 1
        values |= extended[k : k + n]
    counts: Counts = np.bincount(values, minlength=2**m)
    return counts


def drop_last_bit(counts: Counts) -> Counts:
    """Counts of the (m-1)-bit words from those of the m-bit words: with wrap-around, the
    window of m - 1 bits at each position is the prefix of the m-bit window there."""
    shorter: Counts = counts.reshape(-1, 2).sum(axis=1)
    return shorter


def _phi(counts: Counts, n: int) -> float:
    present = counts[counts > 0].astype(np.float64)
    return float(np.sum(present * np.log(present / n))) / n


def approximate_entropy(bits: Bits, *, m: int = DEFAULT_M) -> TestResult:
    """ApEn = phi_m - phi_(m+1); chi^2 = 2n(ln 2 - ApEn); P = igamc(2^(m-1), chi^2/2)."""
    n = int(bits.size)
    if n == 0 or m < 0:
        return TestResult.single(NAME, None)
    longer = cyclic_word_counts(bits, m + 1)
    phi_m = _phi(drop_last_bit(longer), n) if m > 0 else 0.0
    apen = phi_m - _phi(longer, n)
    chi_squared = 2.0 * n * (math.log(2) - apen)
    return TestResult.single(NAME, igamc(2.0 ** (m - 1), chi_squared / 2.0))
