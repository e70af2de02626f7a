"""Runs test, SP 800-22 Rev.1a section 2.3.

Checks that the number of runs (maximal blocks of identical bits) is what a random sequence
gives. As in sts-2.1.2 the frequency pre-test comes first: when the proportion of ones pi
is further than 2/sqrt(n) from 1/2 the test is not run and the P-value is 0.0 (a failure).
"""

from __future__ import annotations

import math

import numpy as np

from certification.sp800_22._result import Bits, TestResult
from certification.sp800_22._special import erfc

__all__ = ["NAME", "runs"]

NAME = "runs"


def runs(bits: Bits) -> TestResult:
    """V_n(obs) = 1 + #{k : e_k != e_(k+1)}; P = erfc(|V - 2n pi(1-pi)| / (2 sqrt(2n) pi(1-pi)))."""
    n = int(bits.size)
    if n == 0:
        return TestResult.single(NAME, None)
    pi = int(np.count_nonzero(bits)) / n
    if abs(pi - 0.5) > 2.0 / math.sqrt(n):
        return TestResult.single(NAME, 0.0)
    if pi in (0.0, 1.0):
        # Only reachable for n <= 16, where the pre-test cannot reject a constant sequence;
        # the statistic's denominator is zero and the limit of the P-value is 0.
        return TestResult.single(NAME, 0.0)
    v_obs = 1 + int(np.count_nonzero(bits[1:] != bits[:-1]))
    arg = abs(v_obs - 2.0 * n * pi * (1 - pi)) / (2.0 * pi * (1 - pi) * math.sqrt(2 * n))
    return TestResult.single(NAME, erfc(arg))
