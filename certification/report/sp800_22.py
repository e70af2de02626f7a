"""The SP 800-22 report: the JSON document and the text summary table of a battery run.

Owns the report layout only; it computes no statistics (those come from
:mod:`certification.sp800_22`) and writes nothing (the CLI does).

JSON layout::

    {"standard", "reference", "alpha",
     "input": {"path", "format", "bits_per_sequence", "sequences", "bits_discarded"},
     "tests": {name: {"sub_tests": [label, ...], "p_values": [[P per sub-test] per sequence]}},
     "decisions": {name: [{"sub_test", "sample_size", "passed", "proportion_min",
                           "proportion_max", "proportion_ok", "histogram",
                           "uniformity_p_value", "uniformity_ok", "ok"}, ...]},
     "suite": {"passed", "failed_sub_tests": ["name/label", ...], "expected_false_flags"}}

Sub-tests are in the reference order; a P-value that does not apply is ``null``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from certification.sp800_22 import SuiteAssessment, TestResult
from certification.sp800_22.assessment import ALPHA, Decision, proportion_bounds

__all__ = ["render_json", "render_summary"]

STANDARD = "NIST SP 800-22 Rev.1a"
REFERENCE = "sts-2.1.2"


def _sub_test_id(decision: Decision) -> str:
    if decision.sub_test == decision.test:
        return decision.test
    return f"{decision.test}/{decision.sub_test}"


def render_json(
    results: Sequence[Mapping[str, TestResult]],
    assessment: SuiteAssessment,
    *,
    input_info: Mapping[str, object],
) -> dict[str, object]:
    """The report document for per-sequence ``results`` and their ``assessment``."""
    tests: dict[str, object] = {}
    for name in assessment.decisions:
        tests[name] = {
            "sub_tests": list(results[0][name].labels),
            "p_values": [list(r[name].p_values) for r in results],
        }
    return {
        "standard": STANDARD,
        "reference": REFERENCE,
        "alpha": ALPHA,
        "input": dict(input_info),
        "tests": tests,
        "decisions": {
            name: [d.as_dict() for d in decisions]
            for name, decisions in assessment.decisions.items()
        },
        "suite": {
            "passed": assessment.passed,
            "failed_sub_tests": [_sub_test_id(d) for d in assessment.failures],
            "expected_false_flags": assessment.expected_false_flags,
        },
    }


def render_summary(assessment: SuiteAssessment) -> str:
    """A table in the manner of sts-2.1.2's ``finalAnalysisReport.txt``; '*' marks a failure."""
    lines = [
        " C1  C2  C3  C4  C5  C6  C7  C8  C9 C10  P-VALUE   PROPORTION  STATISTICAL TEST",
        "-" * 80,
    ]
    for decisions in assessment.decisions.values():
        for d in decisions:
            bins = "".join(f"{count:3d} " for count in d.histogram)
            if d.uniformity_p_value is None:
                uniformity = "    ----   "
            else:
                mark = "*" if d.uniformity_ok is False else " "
                uniformity = f" {d.uniformity_p_value:8.6f} {mark}"
            if d.sample_size == 0:
                proportion = "   ------    "
            else:
                mark = "*" if d.proportion_ok is False else " "
                proportion = f" {d.passed:4d}/{d.sample_size:<4d} {mark} "
            lines.append(f"{bins}{uniformity}{proportion} {_sub_test_id(d)}")
    lines.append("-" * 80)
    sizes = sorted({d.sample_size for ds in assessment.decisions.values() for d in ds})
    for size in sizes:
        if size:
            low, _ = proportion_bounds(size)
            lines.append(
                f"Minimum pass count for a sample of {size} sequences: {low} (alpha = {ALPHA})"
            )
    failures = assessment.failures
    lines.append(
        f"Failed sub-tests: {len(failures)}; an ideal generator would fail "
        f"{assessment.expected_false_flags:.2f} on average with these sample sizes"
    )
    if failures:
        lines.append(f"RESULT: FAIL ({len(failures)} sub-test(s) outside the section 4.2 limits)")
    else:
        lines.append("RESULT: PASS (every sub-test within the section 4.2 limits)")
    return "\n".join(lines) + "\n"
