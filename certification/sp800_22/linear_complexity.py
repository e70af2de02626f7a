"""Linear complexity test, SP 800-22 Rev.1a section 2.10.

Checks the length of the shortest LFSR generating each M-bit block (Berlekamp-Massey) against
its distribution for random blocks, in K + 1 = 7 classes of T = (-1)^M (L - mu) + 2/9. As in
sts-2.1.2 (``linearComplexity.c``) the class probabilities are
(0.01047, 0.03125, 0.125, 0.5, 0.25, 0.0625, 0.020833): the reference's first value is a typo
of the paper's 0.010417, and the reference's value is kept. Bits past the last whole block are
discarded. Default M = 500.

Berlekamp-Massey runs on all N blocks at once, bit-parallel: coefficient i of every block's
connection polynomial is one bit of a row of 64-bit words (block b in bit b % 64 of word b // 64),
so each step of the algorithm is a few array operations whatever the number of blocks.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from certification.sp800_22._result import Bits, TestResult
from certification.sp800_22._special import igamc

__all__ = ["DEFAULT_M", "NAME", "PI", "linear_complexities", "linear_complexity"]

NAME = "linear_complexity"
DEFAULT_M = 500
K = 6
PI = (0.01047, 0.03125, 0.12500, 0.50000, 0.25000, 0.06250, 0.020833)

Words = npt.NDArray[np.uint64]


def _pack_blocks(flags: npt.NDArray[np.bool_], words: int) -> Words:
    """Packs a boolean per block into ``words`` uint64 words, block b at bit b % 64."""
    padded = np.zeros(words * 64, dtype=bool)
    padded[: flags.size] = flags
    return np.packbits(padded, bitorder="little").view(np.uint64)


def _unpack_blocks(packed: Words, count: int) -> npt.NDArray[np.bool_]:
    return np.unpackbits(packed.view(np.uint8), bitorder="little")[:count].astype(bool)


def linear_complexities(blocks: Bits) -> npt.NDArray[np.int64]:
    """Linear complexity of each row of a (N, M) bit array, by Berlekamp-Massey over GF(2).

    The form used keeps the correction polynomial B already multiplied by x^(n - m) (m the step
    of the last length change), so that every block shifts B by one place at every step and the
    shift is the same across blocks:
    d = s_n + sum_(i=1..L) C_i s_(n-i); if d = 1: C <- C + x B, and if 2L <= n also
    L <- n + 1 - L and B <- old C, else B <- x B; if d = 0: B <- x B.
    """
    count, M = blocks.shape
    words = (count + 63) // 64
    # sequence[t]: bit t of every block, packed across blocks
    transposed = np.zeros((M, words * 64), dtype=np.uint8)
    transposed[:, :count] = blocks.T
    sequence = np.packbits(transposed, axis=1, bitorder="little").view(np.uint64)
    C = np.zeros((M + 1, words), dtype=np.uint64)
    B = np.zeros((M + 1, words), dtype=np.uint64)
    C[0] = ~np.uint64(0)
    B[0] = ~np.uint64(0)
    L = np.zeros(count, dtype=np.int64)
    for n in range(M):
        span = int(L.max())
        d = sequence[n].copy()
        if span:
            d ^= np.bitwise_xor.reduce(C[1 : span + 1] & sequence[n - 1 :: -1][:span], axis=0)
        shifted_B = np.zeros_like(B)
        shifted_B[1:] = B[:-1]
        change = _unpack_blocks(d, count) & (n >= 2 * L)
        change_mask = _pack_blocks(change, words)
        new_C = C ^ (shifted_B & d)
        B = (C & change_mask) | (shifted_B & ~change_mask)
        C = new_C
        L = np.where(change, n + 1 - L, L)
    return L


def linear_complexity(bits: Bits, *, M: int = DEFAULT_M) -> TestResult:
    """chi^2 over the 7 classes of T_i; P = igamc(K/2, chi^2/2)."""
    if M < 1:
        raise ValueError(f"block length M must be positive, got {M}")
    n_blocks = int(bits.size) // M
    if n_blocks == 0:
        return TestResult.single(NAME, None)
    L = linear_complexities(bits[: n_blocks * M].reshape(n_blocks, M))
    sign = -1.0 if (M + 1) % 2 == 0 else 1.0
    mean = M / 2.0 + (9.0 + sign) / 36.0 - 2.0 ** (-M) * (M / 3.0 + 2.0 / 9.0)
    sign = 1.0 if M % 2 == 0 else -1.0
    T = sign * (L - mean) + 2.0 / 9.0
    # classes: T <= -2.5, (-2.5, -1.5], ..., (1.5, 2.5], > 2.5
    classes = np.searchsorted(np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]), T, side="left")
    nu = np.bincount(classes, minlength=K + 1).astype(np.float64)
    expected = n_blocks * np.asarray(PI)
    chi_squared = float(np.sum((nu - expected) ** 2 / expected))
    return TestResult.single(NAME, igamc(K / 2.0, chi_squared / 2.0))
