"""Typed wrappers over the scipy special functions the tests use in place of sts-2.1.2's cephes.

Owns nothing statistical of its own: ``igamc`` is ``scipy.special.gammaincc`` with cephes's
convention for a non-positive argument, ``erfc`` and ``normal_cdf`` are scipy's ``erfc`` and
``ndtr``. No hand-written special functions anywhere in the battery.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy import special

__all__ = ["erfc", "igamc", "normal_cdf"]


def igamc(a: float, x: float) -> float:
    """Upper regularised incomplete gamma Q(a, x); 1.0 for x <= 0 as cephes ``igamc`` returns."""
    if x <= 0.0 or a <= 0.0:
        return 1.0
    return float(special.gammaincc(a, x))


def erfc(x: float) -> float:
    """Complementary error function."""
    return float(special.erfc(x))


def normal_cdf(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Standard normal distribution function, elementwise (cephes ``normal``)."""
    result: npt.NDArray[np.float64] = special.ndtr(x)
    return result
