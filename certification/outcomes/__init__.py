"""Outcome-level statistical tests: game outcomes against their exact distributions.

Where part 1 (:mod:`certification.sp800_22`) tests the generator's bits, this package tests
what players see: wheel numbers, dice, Fire Numbers, jackpot tiers, multi-ball sets and card
shuffles, each against the exact ``fractions.Fraction`` distribution its outcome module gives,
plus Knuth's sequence tests (TAOCP vol. 2, section 3.3.2) on spin streams. Statistics come from
scipy (``scipy.stats.chi2``, ``kstest``, ``norm``). Nothing here imports ``rng_service``, reads
files, clocks or generators; :mod:`certification.sources` builds the :class:`OutcomeSample`.
"""

from certification.outcomes._stats import MIN_EXPECTED, Cell, TestResult
from certification.outcomes.battery import (
    DEFAULT_CONFIDENCE,
    BatteryResult,
    Decision,
    all_tests,
    decide,
    run_battery,
)
from certification.outcomes.sample import (
    DiceGroup,
    FireNumberGroup,
    JackpotGroup,
    MultiBallGroup,
    OutcomeSample,
    ShuffleGroup,
    WheelGroup,
)

__all__ = [
    "DEFAULT_CONFIDENCE",
    "MIN_EXPECTED",
    "BatteryResult",
    "Cell",
    "Decision",
    "DiceGroup",
    "FireNumberGroup",
    "JackpotGroup",
    "MultiBallGroup",
    "OutcomeSample",
    "ShuffleGroup",
    "TestResult",
    "WheelGroup",
    "all_tests",
    "decide",
    "run_battery",
]
