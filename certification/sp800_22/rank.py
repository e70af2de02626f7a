"""Binary matrix rank test, SP 800-22 Rev.1a section 2.5.

Checks for linear dependence among fixed-length substrings: the sequence is cut into disjoint
32x32 matrices (rows filled first, as ``def_matrix`` in sts-2.1.2) whose ranks over GF(2) are
compared with the distribution for random matrices (full rank, rank 31, lower). Bits past the
last whole matrix are discarded. Not applicable without at least one whole matrix (sts-2.1.2
prints an error and a P-value of 0 there).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from certification.sp800_22._result import Bits, TestResult

__all__ = ["NAME", "gf2_ranks", "rank", "rank_probabilities"]

NAME = "rank"
ROWS = 32
COLS = 32


def rank_probabilities(rows: int = ROWS, cols: int = COLS) -> tuple[float, float, float]:
    """P(rank = full), P(rank = full - 1), and the rest, by the reference's product formula."""

    def p_rank(r: int) -> float:
        product = 1.0
        for i in range(r):
            numerator = (1.0 - 2.0 ** (i - rows)) * (1.0 - 2.0 ** (i - cols))
            product *= numerator / (1.0 - 2.0 ** (i - r))
        return float(2.0 ** (r * (rows + cols - r) - rows * cols) * product)

    full = min(rows, cols)
    p_full = p_rank(full)
    p_minus_one = p_rank(full - 1)
    return p_full, p_minus_one, 1.0 - (p_full + p_minus_one)


def gf2_ranks(matrices: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
    """Ranks over GF(2) of a stack of 0/1 matrices of shape (count, rows, cols), cols <= 64.

    Gaussian elimination runs on all matrices at once: each row is packed into one integer and
    every column step is a handful of array operations over the whole stack.
    """
    count, rows, cols = matrices.shape
    if cols > 64:
        raise ValueError("at most 64 columns")
    weights = np.left_shift(np.uint64(1), np.arange(cols - 1, -1, -1, dtype=np.uint64))
    packed = (matrices.astype(np.uint64) * weights).sum(axis=2, dtype=np.uint64)
    available = np.ones((count, rows), dtype=bool)
    ranks = np.zeros(count, dtype=np.int64)
    which = np.arange(count)
    for column in range(cols):
        bit = np.uint64(1) << np.uint64(cols - 1 - column)
        has_bit = (packed & bit) != 0
        candidates = has_bit & available
        found = candidates.any(axis=1)
        pivot_index = candidates.argmax(axis=1)
        pivot = packed[which, pivot_index]
        eliminate = has_bit & found[:, None]
        eliminate[which, pivot_index] = False
        packed ^= np.where(eliminate, pivot[:, None], np.uint64(0))
        available[which[found], pivot_index[found]] = False
        ranks += found
    return ranks


def rank(bits: Bits) -> TestResult:
    """chi^2 over ranks {32, 31, <= 30} of N = n // 1024 matrices; P = exp(-chi^2 / 2)."""
    n_matrices = int(bits.size) // (ROWS * COLS)
    if n_matrices == 0:
        return TestResult.single(NAME, None)
    matrices = bits[: n_matrices * ROWS * COLS].reshape(n_matrices, ROWS, COLS)
    ranks = gf2_ranks(matrices)
    f_full = int(np.count_nonzero(ranks == ROWS))
    f_minus_one = int(np.count_nonzero(ranks == ROWS - 1))
    f_rest = n_matrices - f_full - f_minus_one
    p_full, p_minus_one, p_rest = rank_probabilities()
    chi_squared = (
        (f_full - n_matrices * p_full) ** 2 / (n_matrices * p_full)
        + (f_minus_one - n_matrices * p_minus_one) ** 2 / (n_matrices * p_minus_one)
        + (f_rest - n_matrices * p_rest) ** 2 / (n_matrices * p_rest)
    )
    return TestResult.single(NAME, math.exp(-chi_squared / 2.0))
