"""Maurer's "universal statistical" test, SP 800-22 Rev.1a section 2.9.

Checks whether the sequence can be significantly compressed: the mean log2 distance between
repeated L-bit words is compared with its expectation. L is chosen by n exactly as sts-2.1.2
(``universal.c``) does, from 6 at n >= 387,840 to 16 at n >= 1,059,061,760, with Q = 10 * 2^L
initialisation blocks and K = n // L - Q test blocks. Below 387,840 bits the reference does not
run the test (its L would be 5, outside its tables): not applicable.
"""

from __future__ import annotations

import math

import numpy as np

from certification.sp800_22._result import Bits, TestResult
from certification.sp800_22._special import erfc

__all__ = ["NAME", "block_length_for", "universal"]

NAME = "universal"

# (minimum n, L), from universal.c
_L_BY_LENGTH = (
    (1_059_061_760, 16),
    (496_435_200, 15),
    (231_669_760, 14),
    (107_560_960, 13),
    (49_643_520, 12),
    (22_753_280, 11),
    (10_342_400, 10),
    (4_654_080, 9),
    (2_068_480, 8),
    (904_960, 7),
    (387_840, 6),
)
_EXPECTED_VALUE = {
    6: 5.2177052,
    7: 6.1962507,
    8: 7.1836656,
    9: 8.1764248,
    10: 9.1723243,
    11: 10.170032,
    12: 11.168765,
    13: 12.168070,
    14: 13.167693,
    15: 14.167488,
    16: 15.167379,
}
_VARIANCE = {
    6: 2.954,
    7: 3.125,
    8: 3.238,
    9: 3.311,
    10: 3.356,
    11: 3.384,
    12: 3.401,
    13: 3.410,
    14: 3.416,
    15: 3.419,
    16: 3.421,
}


def block_length_for(n: int) -> int | None:
    """The reference's L for n bits, or None where it does not run the test."""
    for minimum, length in _L_BY_LENGTH:
        if n >= minimum:
            return length
    return None


def universal(bits: Bits) -> TestResult:
    """f_n = (1/K) sum log2(i - T[word_i]); P = erfc(|f_n - E[L]| / (sqrt 2 sigma))."""
    n = int(bits.size)
    L = block_length_for(n)
    if L is None:
        return TestResult.single(NAME, None)
    Q = 10 * 2**L
    K = n // L - Q
    total = Q + K
    words = bits[: total * L].reshape(total, L).astype(np.int64)
    values = (words << np.arange(L - 1, -1, -1, dtype=np.int64)).sum(axis=1)
    # For block i (1-based), the index of the previous block with the same word, or 0.
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    previous_sorted = np.zeros(total, dtype=np.int64)
    same = sorted_values[1:] == sorted_values[:-1]
    previous_sorted[1:] = np.where(same, order[:-1] + 1, 0)
    previous = np.empty(total, dtype=np.int64)
    previous[order] = previous_sorted
    index = np.arange(1, total + 1, dtype=np.int64)
    distances = (index - previous)[Q:]
    phi = float(np.sum(np.log(distances) / math.log(2))) / K
    c = 0.7 - 0.8 / L + (4 + 32 / L) * K ** (-3 / L) / 15
    sigma = c * math.sqrt(_VARIANCE[L] / K)
    arg = abs(phi - _EXPECTED_VALUE[L]) / (math.sqrt(2) * sigma)
    return TestResult.single(NAME, erfc(arg))
