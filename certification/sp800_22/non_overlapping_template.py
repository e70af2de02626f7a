"""Non-overlapping template matching test, SP 800-22 Rev.1a section 2.7.

Checks for too many or too few occurrences of each aperiodic m-bit template in N = 8 blocks of
M = n // 8 bits; after a match the window moves past it. Because the templates are aperiodic,
occurrences never overlap, so counting every match position gives the same counts as the
reference's skipping scan. Defaults: m = 9 and all 148 templates, in the reference order.
"""

from __future__ import annotations

import numpy as np

from certification.sp800_22._result import Bits, TestResult
from certification.sp800_22._special import igamc
from certification.sp800_22.templates import aperiodic_templates, is_aperiodic

__all__ = ["DEFAULT_M", "DEFAULT_N", "NAME", "non_overlapping_template"]

NAME = "non_overlapping_template"
DEFAULT_M = 9
DEFAULT_N = 8


def window_values(bits: Bits, m: int) -> np.ndarray[tuple[int], np.dtype[np.int64]]:
    """The m-bit word starting at each position 0 .. n - m, first bit most significant."""
    n = int(bits.size)
    values = np.zeros(max(n - m + 1, 0), dtype=np.int64)
    for k in range(m):
        values = (values << 1) | bits[k : n - m + 1 + k]
    return values


def non_overlapping_template(
    bits: Bits,
    *,
    m: int = DEFAULT_M,
    templates: tuple[str, ...] | None = None,
    N: int = DEFAULT_N,
) -> TestResult:
    """chi^2 = sum_j (W_j - mu)^2 / sigma^2 over N blocks per template; P = igamc(N/2, chi^2/2)."""
    if templates is None:
        templates = aperiodic_templates(m)
    for template in templates:
        if len(template) != m or set(template) - {"0", "1"} or not is_aperiodic(template):
            raise ValueError(f"{template!r} is not an aperiodic {m}-bit template")
    M = int(bits.size) // N
    if m > M:
        return TestResult(name=NAME, labels=templates, p_values=(None,) * len(templates))
    mu = (M - m + 1) / 2.0**m
    variance = M * (1.0 / 2.0**m - (2.0 * m - 1.0) / 2.0 ** (2.0 * m))
    blocks = bits[: N * M].reshape(N, M)
    # counts[j, w]: occurrences of word w wholly inside block j
    counts = np.stack([np.bincount(window_values(block, m), minlength=2**m) for block in blocks])
    chosen = counts[:, [int(t, 2) for t in templates]].astype(np.float64)
    chi_squared = np.sum((chosen - mu) ** 2 / variance, axis=0)
    p_values = tuple(igamc(N / 2.0, float(c) / 2.0) for c in chi_squared)
    return TestResult(name=NAME, labels=templates, p_values=p_values)
