"""Serial test, SP 800-22 Rev.1a section 2.11.

Checks that all 2^m overlapping m-bit words (the sequence wrapped around) are about equally
common, through the statistics del psi^2_m and del^2 psi^2_m. Two P-values, in the reference
order: the first (del psi^2) then the second (del^2 psi^2). Default m = 16.
"""

from __future__ import annotations

import numpy as np

from certification.sp800_22._result import Bits, TestResult
from certification.sp800_22._special import igamc
from certification.sp800_22.approximate_entropy import Counts, cyclic_word_counts, drop_last_bit

__all__ = ["DEFAULT_M", "LABELS", "NAME", "serial"]

NAME = "serial"
DEFAULT_M = 16
LABELS = ("first", "second")


def _psi_squared(counts: Counts, m: int, n: int) -> float:
    if m <= 0:
        return 0.0
    frequencies = counts.astype(np.float64)
    return float(np.sum(frequencies * frequencies)) * 2.0**m / n - n


def serial(bits: Bits, *, m: int = DEFAULT_M) -> TestResult:
    """P1 = igamc(2^(m-2), del psi^2 / 2); P2 = igamc(2^(m-3), del^2 psi^2 / 2)."""
    n = int(bits.size)
    if n == 0 or m < 2:
        return TestResult(name=NAME, labels=LABELS, p_values=(None, None))
    counts_m = cyclic_word_counts(bits, m)
    counts_m1 = drop_last_bit(counts_m)
    psi_m = _psi_squared(counts_m, m, n)
    psi_m1 = _psi_squared(counts_m1, m - 1, n)
    psi_m2 = _psi_squared(drop_last_bit(counts_m1), m - 2, n)
    del_1 = psi_m - psi_m1
    del_2 = psi_m - 2.0 * psi_m1 + psi_m2
    p_1 = igamc(2.0 ** (m - 1) / 2.0, del_1 / 2.0)
    p_2 = igamc(2.0 ** (m - 2) / 2.0, del_2 / 2.0)
    return TestResult(name=NAME, labels=LABELS, p_values=(p_1, p_2))
