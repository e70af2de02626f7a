"""Frequency test within a block, SP 800-22 Rev.1a section 2.2.

Checks that the proportion of ones in each M-bit block is about M/2. Bits past the last whole
block are discarded, as in sts-2.1.2.
"""

from __future__ import annotations

import numpy as np

from certification.sp800_22._result import Bits, TestResult
from certification.sp800_22._special import igamc

__all__ = ["DEFAULT_M", "NAME", "block_frequency"]

NAME = "block_frequency"
DEFAULT_M = 128


def block_frequency(bits: Bits, *, M: int = DEFAULT_M) -> TestResult:
    """chi^2 = 4M sum (pi_i - 1/2)^2 over N = n // M blocks; P = igamc(N/2, chi^2/2)."""
    if M < 1:
        raise ValueError(f"block length M must be positive, got {M}")
    n_blocks = int(bits.size) // M
    if n_blocks == 0:
        return TestResult.single(NAME, None)
    ones = bits[: n_blocks * M].reshape(n_blocks, M).sum(axis=1, dtype=np.int64)
    v = ones / M - 0.5
    chi_squared = 4.0 * M * float(np.sum(v * v))
    return TestResult.single(NAME, igamc(n_blocks / 2.0, chi_squared / 2.0))
