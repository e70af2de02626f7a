"""Overlapping template matching test, SP 800-22 Rev.1a section 2.8.

Checks the number of (possibly overlapping) occurrences of the all-ones m-bit template in
N = n // 1032 blocks of M = 1032 bits against K + 1 = 6 classes (0..4, >= 5 occurrences).
The class probabilities are computed, as in sts-2.1.2 (``overlappingTemplateMatchings.c``,
function ``Pr``), from the compound Poisson formula with eta = (M - m + 1) / 2^(m+1); they differ
from the rounded values printed in the paper's section 2.8 and 3.8, and the reference code's are
used. Default m = 9.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from certification.sp800_22._result import Bits, TestResult
from certification.sp800_22._special import igamc

__all__ = ["DEFAULT_M", "NAME", "class_probabilities", "overlapping_template"]

NAME = "overlapping_template"
DEFAULT_M = 9
BLOCK_BITS = 1032
K = 5


def _pr(u: int, eta: float) -> float:
    """The reference's Pr(u, eta): probability of u overlapping occurrences in a block."""
    if u == 0:
        return math.exp(-eta)
    total = 0.0
    for ell in range(1, u + 1):
        total += math.exp(
            -eta
            - u * math.log(2)
            + ell * math.log(eta)
            - float(special.gammaln(ell + 1))
            + float(special.gammaln(u))
            - float(special.gammaln(ell))
            - float(special.gammaln(u - ell + 1))
        )
    return total


def class_probabilities(m: int = DEFAULT_M, M: int = BLOCK_BITS) -> tuple[float, ...]:
    """pi_0 .. pi_5 as the reference computes them."""
    eta = (M - m + 1) / 2.0**m / 2.0
    pi = [_pr(u, eta) for u in range(K)]
    return (*pi, 1.0 - sum(pi))


def overlapping_template(bits: Bits, *, m: int = DEFAULT_M) -> TestResult:
    """chi^2 over the 6 occurrence classes; P = igamc(K/2, chi^2/2)."""
    n_blocks = int(bits.size) // BLOCK_BITS
    if n_blocks == 0 or m > BLOCK_BITS:
        return TestResult.single(NAME, None)
    blocks = bits[: n_blocks * BLOCK_BITS].reshape(n_blocks, BLOCK_BITS)
    # windows[j, k]: the m bits from offset k of block j are all ones
    windows = np.ones((n_blocks, BLOCK_BITS - m + 1), dtype=bool)
    for k in range(m):
        windows &= blocks[:, k : BLOCK_BITS - m + 1 + k].astype(bool)
    occurrences = np.count_nonzero(windows, axis=1)
    nu = np.bincount(np.minimum(occurrences, K), minlength=K + 1).astype(np.float64)
    expected = n_blocks * np.asarray(class_probabilities(m))
    chi_squared = float(np.sum((nu - expected) ** 2 / expected))
    return TestResult.single(NAME, igamc(K / 2.0, chi_squared / 2.0))
