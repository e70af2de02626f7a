"""Discrete Fourier transform (spectral) test, SP 800-22 Rev.1a section 2.6.

Checks for periodic features: the share of DFT moduli (of X = 2e - 1) below the 95 % threshold
T = sqrt(ln(1/0.05) n) should be 95 %. As sts-2.1.2 (``discreteFourierTransform.c``) does, the
moduli counted are those of frequencies 0 .. floor(n/2) - 1 (the zero frequency included), the
threshold uses the constant 2.995732274 and N_0 = 0.95 n / 2. The paper's worked example in
section 2.6.8 prints numbers that the reference code does not reproduce; this module follows the
code.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import fft as scipy_fft

from certification.sp800_22._result import Bits, TestResult
from certification.sp800_22._special import erfc

__all__ = ["NAME", "fft"]

NAME = "fft"
_LOG_20 = 2.995732274  # ln(1/0.05), to the digits sts-2.1.2 uses


def fft(bits: Bits) -> TestResult:
    """d = (N_1 - N_0) / sqrt(n 0.95 0.05 / 4); P = erfc(|d| / sqrt 2)."""
    n = int(bits.size)
    half = n // 2
    if half == 0:
        return TestResult.single(NAME, None)
    x = 2.0 * bits.astype(np.float64) - 1.0
    moduli = np.abs(scipy_fft.rfft(x)[:half])
    upper_bound = math.sqrt(_LOG_20 * n)
    n_1 = float(np.count_nonzero(moduli < upper_bound))
    n_0 = 0.95 * n / 2.0
    d = (n_1 - n_0) / math.sqrt(n / 4.0 * 0.95 * 0.05)
    return TestResult.single(NAME, erfc(abs(d) / math.sqrt(2.0)))
