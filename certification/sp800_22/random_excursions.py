"""Random excursions test, SP 800-22 Rev.1a section 2.14.

For each state x in -4..-1, +1..+4 (the reference order), checks how many cycles of the random
walk visit x exactly 0, 1, .., 4 and >= 5 times. Applicable only when the walk has at least
max(0.005 sqrt(n), 500) cycles, as in sts-2.1.2 (``randomExcursions.c``); otherwise every
P-value is ``None``. The class probabilities are the reference's table.

sts-2.1.2 also gives up when J exceeds max(1000, n/100), the size of a work array; that is a
memory limit of the C code, not a rule of the test, and is not reproduced here.
"""

from __future__ import annotations

import math

import numpy as np

from certification.sp800_22._result import Bits, TestResult
from certification.sp800_22._special import igamc
from certification.sp800_22._walk import APPLICABILITY_MIN_CYCLES, cycle_count, walk

__all__ = ["LABELS", "NAME", "STATES", "random_excursions"]

NAME = "random_excursions"
STATES = (-4, -3, -2, -1, 1, 2, 3, 4)
LABELS = tuple(f"x={x:+d}" for x in STATES)

# pi[|x|][k], from randomExcursions.c
_PI = np.array(
    [
        [0.5000000000, 0.25000000000, 0.12500000000, 0.06250000000, 0.03125000000, 0.0312500000],
        [0.7500000000, 0.06250000000, 0.04687500000, 0.03515625000, 0.02636718750, 0.0791015625],
        [0.8333333333, 0.02777777778, 0.02314814815, 0.01929012346, 0.01607510288, 0.0803755143],
        [0.8750000000, 0.01562500000, 0.01367187500, 0.01196289063, 0.01046752930, 0.0732727051],
    ]
)


def random_excursions(bits: Bits) -> TestResult:
    """chi^2(x) = sum_k (nu_k(x) - J pi_k(x))^2 / (J pi_k(x)); P = igamc(5/2, chi^2/2)."""
    n = int(bits.size)
    steps = walk(bits)
    J = cycle_count(steps)
    if n == 0 or max(0.005 * math.sqrt(n), APPLICABILITY_MIN_CYCLES) > J:
        return TestResult(name=NAME, labels=LABELS, p_values=(None,) * len(STATES))
    # cycle of step k: the number of zeros strictly before k
    is_zero = steps == 0
    cycle = np.cumsum(is_zero) - is_zero
    in_range = (np.abs(steps) <= 4) & ~is_zero
    state_index = np.where(steps > 0, steps + 3, steps + 4)[in_range]
    visits = np.zeros((J, len(STATES)), dtype=np.int64)
    np.add.at(visits, (cycle[in_range], state_index), 1)
    p_values: list[float | None] = []
    for column, x in enumerate(STATES):
        nu = np.bincount(np.minimum(visits[:, column], 5), minlength=6).astype(np.float64)
        expected = J * _PI[abs(x) - 1]
        chi_squared = float(np.sum((nu - expected) ** 2 / expected))
        p_values.append(igamc(2.5, chi_squared / 2.0))
    return TestResult(name=NAME, labels=LABELS, p_values=tuple(p_values))
