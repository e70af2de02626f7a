"""Random excursions variant test, SP 800-22 Rev.1a section 2.15.

For each state x in -9..-1, +1..+9 (the reference order), checks the total number of visits of
the random walk to x against the number of cycles J. Applicable only when
J >= max(0.005 sqrt(n), 500) (sts-2.1.2 ``randomExcursionsVariant.c`` truncates that bound to an
integer); otherwise every P-value is ``None``.
"""

from __future__ import annotations

import math

import numpy as np

from certification.sp800_22._result import Bits, TestResult
from certification.sp800_22._special import erfc
from certification.sp800_22._walk import APPLICABILITY_MIN_CYCLES, cycle_count, walk

__all__ = ["LABELS", "NAME", "STATES", "random_excursions_variant"]

NAME = "random_excursions_variant"
STATES = (-9, -8, -7, -6, -5, -4, -3, -2, -1, 1, 2, 3, 4, 5, 6, 7, 8, 9)
LABELS = tuple(f"x={x:+d}" for x in STATES)


def random_excursions_variant(bits: Bits, *, min_cycles: int | None = None) -> TestResult:
    """P(x) = erfc(|xi(x) - J| / sqrt(2 J (4|x| - 2))).

    ``min_cycles`` overrides the applicability bound; only the paper's worked example in
    section 2.15.4 (ten bits, J = 4) needs it.
    """
    n = int(bits.size)
    steps = walk(bits)
    J = cycle_count(steps)
    bound = min_cycles
    if bound is None:
        bound = int(max(0.005 * math.sqrt(n), APPLICABILITY_MIN_CYCLES))
    if n == 0 or J == 0 or bound > J:
        return TestResult(name=NAME, labels=LABELS, p_values=(None,) * len(STATES))
    visits = np.bincount(steps[np.abs(steps) <= 9] + 9, minlength=19)
    p_values = tuple(
        erfc(abs(int(visits[x + 9]) - J) / math.sqrt(2.0 * J * (4.0 * abs(x) - 2.0)))
        for x in STATES
    )
    return TestResult(name=NAME, labels=LABELS, p_values=p_values)
