"""The battery: every SP 800-22 test under its JSON name, with the sts-2.1.2 default parameters.

The order of :data:`REGISTRY` is the order of the reference's test numbering
(``assess`` test 1 to 15), which is the order of the JSON report and the summary table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from certification.sp800_22._result import Bits, TestResult
from certification.sp800_22.approximate_entropy import approximate_entropy
from certification.sp800_22.block_frequency import block_frequency
from certification.sp800_22.cumulative_sums import cumulative_sums
from certification.sp800_22.fft import fft
from certification.sp800_22.frequency import frequency
from certification.sp800_22.linear_complexity import linear_complexity
from certification.sp800_22.longest_run import longest_run
from certification.sp800_22.non_overlapping_template import non_overlapping_template
from certification.sp800_22.overlapping_template import overlapping_template
from certification.sp800_22.random_excursions import random_excursions
from certification.sp800_22.random_excursions_variant import random_excursions_variant
from certification.sp800_22.rank import rank
from certification.sp800_22.runs import runs
from certification.sp800_22.serial import serial
from certification.sp800_22.universal import universal

__all__ = ["REGISTRY", "TEST_NAMES", "TestFunction", "run_tests"]

TestFunction = Callable[[Bits], TestResult]

REGISTRY: Mapping[str, TestFunction] = MappingProxyType(
    {
        "frequency": frequency,
        "block_frequency": block_frequency,
        "cumulative_sums": cumulative_sums,
        "runs": runs,
        "longest_run": longest_run,
        "rank": rank,
        "fft": fft,
        "non_overlapping_template": non_overlapping_template,
        "overlapping_template": overlapping_template,
        "universal": universal,
        "approximate_entropy": approximate_entropy,
        "random_excursions": random_excursions,
        "random_excursions_variant": random_excursions_variant,
        "serial": serial,
        "linear_complexity": linear_complexity,
    }
)

TEST_NAMES: tuple[str, ...] = tuple(REGISTRY)


def run_tests(bits: Bits, names: tuple[str, ...] = TEST_NAMES) -> dict[str, TestResult]:
    """Runs the named tests (default: all 15) on one sequence."""
    unknown = [name for name in names if name not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown test(s) {unknown}; known: {list(TEST_NAMES)}")
    return {name: REGISTRY[name](bits) for name in names}
