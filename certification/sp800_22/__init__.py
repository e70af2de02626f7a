"""NIST SP 800-22 Rev.1a statistical test suite, agreeing with the reference sts-2.1.2.

One module per test (section 2.1 to 2.15), each a pure function from a numpy ``uint8`` array of
0/1 bits to a :class:`TestResult`; :data:`REGISTRY` maps the JSON test names to them with the
reference defaults, and :mod:`certification.sp800_22.assessment` makes the section 4.2
decisions over many sequences. Nothing here reads files, clocks or generators.
"""

from certification.sp800_22._result import Bits, TestResult, as_bits
from certification.sp800_22.assessment import (
    ALPHA,
    Decision,
    SuiteAssessment,
    assess,
    assess_sub_test,
)
from certification.sp800_22.registry import REGISTRY, TEST_NAMES, TestFunction, run_tests

__all__ = [
    "ALPHA",
    "REGISTRY",
    "TEST_NAMES",
    "Bits",
    "Decision",
    "SuiteAssessment",
    "TestFunction",
    "TestResult",
    "as_bits",
    "assess",
    "assess_sub_test",
    "run_tests",
]
