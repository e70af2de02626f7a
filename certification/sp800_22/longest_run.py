"""Test for the longest run of ones in a block, SP 800-22 Rev.1a section 2.4.

Checks that the longest run of ones within M-bit blocks has the length distribution of a random
sequence. M, K, the class boundaries V and the class probabilities pi are chosen by n exactly as
in sts-2.1.2 (``longestRunOfOnes.c``): the reference uses exact probabilities for M = 8 and
M = 128, where the paper's section 3.4 prints them rounded, and the paper's 4-decimal values for
M = 10^4. The test needs n >= 128 (not applicable below).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from certification.sp800_22._result import Bits, TestResult
from certification.sp800_22._special import igamc

__all__ = ["NAME", "LongestRunParameters", "longest_run", "parameters_for"]

NAME = "longest_run"
MIN_BITS = 128


@dataclass(frozen=True)
class LongestRunParameters:
    """Block length M, number of degrees of freedom K, class values V_0..V_K, probabilities."""

    M: int
    K: int
    V: tuple[int, ...]
    pi: tuple[float, ...]


_SMALL = LongestRunParameters(
    M=8, K=3, V=(1, 2, 3, 4), pi=(0.21484375, 0.3671875, 0.23046875, 0.1875)
)
_MEDIUM = LongestRunParameters(
    M=128,
    K=5,
    V=(4, 5, 6, 7, 8, 9),
    pi=(0.1174035788, 0.242955959, 0.249363483, 0.17517706, 0.102701071, 0.112398847),
)
_LARGE = LongestRunParameters(
    M=10000,
    K=6,
    V=(10, 11, 12, 13, 14, 15, 16),
    pi=(0.0882, 0.2092, 0.2483, 0.1933, 0.1208, 0.0675, 0.0727),
)


def parameters_for(n: int) -> LongestRunParameters:
    """The reference's choice: M = 8 below 6272 bits, 128 below 750,000, else 10^4."""
    if n < 6272:
        return _SMALL
    if n < 750_000:
        return _MEDIUM
    return _LARGE


def longest_run_lengths(blocks: Bits) -> np.ndarray[tuple[int], np.dtype[np.int64]]:
    """The longest run of ones in each row of a 2-D bit array."""
    rows, width = blocks.shape
    if width == 0:
        return np.zeros(rows, dtype=np.int64)
    index = np.broadcast_to(np.arange(width, dtype=np.int64), (rows, width))
    last_zero = np.maximum.accumulate(np.where(blocks == 0, index, -1), axis=1)
    longest: np.ndarray[tuple[int], np.dtype[np.int64]] = (index - last_zero).max(axis=1)
    return longest


def longest_run(bits: Bits, *, params: LongestRunParameters | None = None) -> TestResult:
    """chi^2 over the K+1 classes of the longest run per block; P = igamc(K/2, chi^2/2)."""
    n = int(bits.size)
    if params is None:
        if n < MIN_BITS:
            return TestResult.single(NAME, None)
        params = parameters_for(n)
    n_blocks = n // params.M
    if n_blocks == 0:
        return TestResult.single(NAME, None)
    longest = longest_run_lengths(bits[: n_blocks * params.M].reshape(n_blocks, params.M))
    classes = np.clip(longest, params.V[0], params.V[-1]) - params.V[0]
    nu = np.bincount(classes, minlength=params.K + 1).astype(np.float64)
    expected = n_blocks * np.asarray(params.pi)
    chi_squared = float(np.sum((nu - expected) ** 2 / expected))
    return TestResult.single(NAME, igamc(params.K / 2.0, chi_squared / 2.0))
