"""Cumulative sums (cusum) test, SP 800-22 Rev.1a section 2.13.

Checks that the maximal excursion of the random walk S_k = sum (2e_i - 1) from zero is what a
random sequence gives. Two P-values in the reference order: forward (mode 0), then reverse
(mode 1, the walk of the reversed sequence). The summation bounds use C integer division
(truncation towards zero) exactly as sts-2.1.2's ``cusum.c``. For very short walks the series
can leave [0, 1] (the reference then warns and prints it); it is clipped to [0, 1] here.
"""

from __future__ import annotations

import math

import numpy as np

from certification.sp800_22._result import Bits, TestResult
from certification.sp800_22._special import normal_cdf

__all__ = ["LABELS", "NAME", "cumulative_sums", "cusum_p_value"]

NAME = "cumulative_sums"
LABELS = ("forward", "reverse")


def _c_div(a: int, b: int) -> int:
    """Integer division truncating towards zero, as C's ``/`` on ints."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def cusum_p_value(z: int, n: int) -> float:
    """P-value for a maximal excursion z of a walk of n steps (section 2.13.4 step 4)."""
    if z == 0:
        return 1.0
    root_n = math.sqrt(n)
    q = n // z  # both positive: C and Python division agree
    k1 = np.arange(_c_div(-q + 1, 4), _c_div(q - 1, 4) + 1, dtype=np.float64)
    k2 = np.arange(_c_div(-q - 3, 4), _c_div(q - 1, 4) + 1, dtype=np.float64)
    scale = z / root_n
    sum_1 = float(np.sum(normal_cdf((4 * k1 + 1) * scale) - normal_cdf((4 * k1 - 1) * scale)))
    sum_2 = float(np.sum(normal_cdf((4 * k2 + 3) * scale) - normal_cdf((4 * k2 + 1) * scale)))
    # The series can leave [0, 1] for very short walks (n well below the recommended 100),
    # where sts-2.1.2 prints "P_VALUE IS OUT OF RANGE"; report the nearest valid P-value.
    return min(max(1.0 - sum_1 + sum_2, 0.0), 1.0)


def cumulative_sums(bits: Bits) -> TestResult:
    """z = max_k |S_k| (forward) or max_k |S_n - S_k| (reverse); P from section 2.13.4."""
    n = int(bits.size)
    if n == 0:
        return TestResult(name=NAME, labels=LABELS, p_values=(None, None))
    walk = np.cumsum(2 * bits.astype(np.int64) - 1)
    top = max(int(walk.max()), 0)
    bottom = min(int(walk.min()), 0)
    z_forward = max(top, -bottom)
    final = int(walk[-1])
    z_reverse = max(top - final, final - bottom)
    return TestResult(
        name=NAME,
        labels=LABELS,
        p_values=(cusum_p_value(z_forward, n), cusum_p_value(z_reverse, n)),
    )
