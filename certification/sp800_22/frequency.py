"""Frequency (monobit) test, SP 800-22 Rev.1a section 2.1.

Checks that ones and zeros are about equally common over the whole sequence.
"""

from __future__ import annotations

import math

import numpy as np

from certification.sp800_22._result import Bits, TestResult
from certification.sp800_22._special import erfc

__all__ = ["NAME", "frequency"]

NAME = "frequency"


def frequency(bits: Bits) -> TestResult:
    """S_n = sum(2e - 1); P = erfc(|S_n| / sqrt(2n)) (section 2.1.4)."""
    n = int(bits.size)
    if n == 0:
        return TestResult.single(NAME, None)
    s_n = 2 * int(np.count_nonzero(bits)) - n
    s_obs = abs(s_n) / math.sqrt(n)
    return TestResult.single(NAME, erfc(s_obs / math.sqrt(2.0)))
