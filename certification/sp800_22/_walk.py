"""The random walk and its cycles, shared by the two random excursion tests (section 2.14, 2.15).

A cycle is a stretch of the walk S_k = sum_(i<=k) (2e_i - 1) between zeros: J counts the zeros of
S_1..S_n, plus one when S_n != 0 (the final, unfinished cycle), as sts-2.1.2 counts it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from certification.sp800_22._result import Bits

__all__ = ["APPLICABILITY_MIN_CYCLES", "cycle_count", "walk"]

APPLICABILITY_MIN_CYCLES = 500


def walk(bits: Bits) -> npt.NDArray[np.int64]:
    """S_1 .. S_n."""
    return np.cumsum(2 * bits.astype(np.int64) - 1)


def cycle_count(steps: npt.NDArray[np.int64]) -> int:
    """J for the walk ``steps``."""
    zeros = int(np.count_nonzero(steps == 0))
    return zeros + (1 if steps.size and steps[-1] != 0 else 0)
