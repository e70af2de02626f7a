"""The SP 800-22 report: the JSON document and the text summary table of a battery run.

Owns the report layout and the wording of the criteria it states; it computes no statistics
(those come from :mod:`certification.sp800_22`) and writes nothing (the CLI does).

JSON layout::

    {"standard", "reference", "alpha", "verdict", "verdict_reason",
     "criteria": {"alpha", "proportion", "uniformity", "minimum_sequences", "suite_rule",
                  "verdicts"},
     "input": {"path" | "live", "format", "bits_per_sequence", "sequences", "bits_discarded",
               "size_bytes", "sha256", ["raw_output_sessions"]},
     "tests": {name: {"sub_tests": [label, ...], "p_values": [[P per sub-test] per sequence]}},
     "decisions": {name: [{"sub_test", "sample_size", "passed", "proportion_min",
                           "proportion_max", "proportion_ok", "histogram",
                           "uniformity_p_value", "uniformity_ok", "ok", "min_p_value",
                           "extreme_p_value", "proportion_p_value",
                           "uniformity_ks_p_value"}, ...]},
     "suite": {"verdict", "passed", "failed_sub_tests": ["name/label", ...],
               "expected_false_flags", "rule": {...the SuiteVerdict...}},
     "evidence": {"software", "command_line", "generated_at", "inputs"}}

Sub-tests are in the reference order; a P-value that does not apply is ``null``.
``failed_sub_tests`` are the section 4.2 flags (what sts stars); the verdict is the suite
rule's (``suite.rule``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from certification.sp800_22 import SuiteAssessment, TestResult
from certification.sp800_22.assessment import (
    ALPHA,
    BINS,
    EXTREME_ALPHA,
    MIN_SEQUENCES,
    SUITE_ALPHA,
    UNIFORMITY_THRESHOLD,
    Decision,
    SuiteVerdict,
    proportion_bounds,
)
from certification.sp800_22.table import PValueTable

__all__ = ["CRITERIA", "render_json", "render_summary", "write_json"]

STANDARD = "NIST SP 800-22 Rev.1a"
REFERENCE = "sts-2.1.2"

#: Every criterion the verdict uses, as the report states it (docs/certification.md,
#: "Verdicts and exit codes").
CRITERIA: dict[str, Any] = {
    "alpha": ALPHA,
    "proportion": {
        "section": "SP 800-22 Rev.1a 4.2.1",
        "rule": "sequences with P >= alpha must number within m (p_hat +- 3 sqrt(p_hat (1 - "
        "p_hat) / m)), p_hat = 1 - alpha, both ends truncated to integers as sts-2.1.2 does; "
        "shown per sub-test (the flags). For the verdict the same count is tested exactly: "
        "P(Binomial(m, alpha) >= sequences with P < alpha)",
        "p_hat": 1 - ALPHA,
    },
    "uniformity": {
        "section": "SP 800-22 Rev.1a 4.2.2",
        "rule": "P-values in 10 equal bins, chi-square against m/10 per bin, P-value_T = "
        "igamc(9/2, chi^2/2) must be >= the threshold; shown from 10 sequences (as sts). The "
        "verdict asks the same question with the exact Kolmogorov-Smirnov test of the "
        f"P-values against U(0, 1), from {MIN_SEQUENCES} applicable sequences (the chi-square "
        "approximation is anti-conservative in the far tail the verdict uses)",
        "bins": BINS,
        "threshold": UNIFORMITY_THRESHOLD,
    },
    "minimum_sequences": MIN_SEQUENCES,
    "minimum_sequences_derivation": "4.2.1: the proportion interval's lower limit truncates to "
    "0 at m = 1 (nothing can be flagged), so m >= 2; 4.2.2: 10 equiprobable bins need an "
    "expected count of at least 5 each for the chi-square approximation, m >= 50, and the "
    "section asks for at least 55; the larger, 55, is the minimum",
    "suite_rule": {
        "family": "per sub-test with m applicable sequences: extreme = 1 - (1 - smallest "
        "P-value)^m (any m); proportion = P(Binomial(m, alpha) >= failing sequences) (any m); "
        f"uniformity = exact Kolmogorov-Smirnov P-value of the P-values (m >= {MIN_SEQUENCES})",
        "method": "weighted Bonferroni over the family: each extreme member rejects at or below "
        "extreme_alpha / (extreme members), each proportion or uniformity member at or below "
        "(suite_alpha - extreme_alpha) / (those members)",
        "suite_alpha": SUITE_ALPHA,
        "extreme_alpha": EXTREME_ALPHA,
        "ideal_false_fail_rate_bound": SUITE_ALPHA,
        "ideal_false_fail_rate_note": "at most suite_alpha for an ideal generator whatever the "
        "dependence between sub-tests (union bound); measured in docs/certification.md",
    },
    "verdicts": {
        "FAIL": "some member of the family rejects, at any number of sequences",
        "INCONCLUSIVE": f"nothing rejects but fewer than {MIN_SEQUENCES} sequences",
        "PASS": f"nothing rejects and at least {MIN_SEQUENCES} sequences",
    },
}


def _sub_test_id(decision: Decision) -> str:
    if decision.sub_test == decision.test:
        return decision.test
    return f"{decision.test}/{decision.sub_test}"


_ROWS = "@@per-sequence P-values@@"


def render_json(
    results: Sequence[Mapping[str, TestResult]] | PValueTable,
    assessment: SuiteAssessment,
    verdict: SuiteVerdict,
    *,
    input_info: Mapping[str, object],
    evidence: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """The report document for per-sequence ``results``, their ``assessment`` and the suite
    ``verdict``."""
    table = results if isinstance(results, PValueTable) else PValueTable.from_results(results)
    document = _skeleton(assessment, verdict, input_info=input_info, evidence=evidence)
    document["tests"] = {
        name: {"sub_tests": list(table.labels[name]), "p_values": list(table.test_rows(name))}
        for name in assessment.decisions
    }
    return document


def write_json(
    handle: TextIO,
    table: PValueTable,
    assessment: SuiteAssessment,
    verdict: SuiteVerdict,
    *,
    input_info: Mapping[str, object],
    evidence: Mapping[str, object] | None = None,
) -> None:
    """Writes the document :func:`render_json` gives, streaming the per-sequence P-values one
    row (one sequence of one test) per line, so that no copy of the whole report is built in
    memory."""
    document = _skeleton(assessment, verdict, input_info=input_info, evidence=evidence)
    document["tests"] = _ROWS
    head, tail = json.dumps(document, indent=1).split(json.dumps(_ROWS), 1)
    handle.write(head + "{")
    for i, name in enumerate(assessment.decisions):
        labels = json.dumps(list(table.labels[name]))
        handle.write(f'{"," if i else ""}\n  {json.dumps(name)}: {{"sub_tests": {labels}, ')
        handle.write('"p_values": [')
        for j, row in enumerate(table.test_rows(name)):
            handle.write(("," if j else "") + "\n   " + json.dumps(row))
        handle.write("]}")
    handle.write("\n }" + tail + "\n")


def _skeleton(
    assessment: SuiteAssessment,
    verdict: SuiteVerdict,
    *,
    input_info: Mapping[str, object],
    evidence: Mapping[str, object] | None,
) -> dict[str, object]:
    """Every member of the document but the per-sequence P-values."""
    tests: dict[str, object] = {}
    document: dict[str, object] = {
        "standard": STANDARD,
        "reference": REFERENCE,
        "alpha": ALPHA,
        "verdict": verdict.verdict.value,
        "verdict_reason": verdict.reason,
        "criteria": CRITERIA,
        "input": dict(input_info),
        "tests": tests,
        "decisions": {
            name: [d.as_dict() for d in decisions]
            for name, decisions in assessment.decisions.items()
        },
        "suite": {
            "verdict": verdict.verdict.value,
            "passed": verdict.verdict.value == "PASS",
            "failed_sub_tests": [_sub_test_id(d) for d in assessment.failures],
            "expected_false_flags": assessment.expected_false_flags,
            "rule": verdict.as_dict(),
        },
    }
    if evidence is not None:
        document["evidence"] = dict(evidence)
    return document


def render_summary(assessment: SuiteAssessment, verdict: SuiteVerdict) -> str:
    """A table in the manner of sts-2.1.2's ``finalAnalysisReport.txt`` ('*' marks a section
    4.2 flag), then the criteria and the suite verdict."""
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
            low, high = proportion_bounds(size)
            lines.append(
                f"Passing range for a sample of {size} sequences: {low} to {high} "
                f"(alpha = {ALPHA}, section 4.2.1)"
            )
    failures = assessment.failures
    lines.append(
        f"Section 4.2 flags: {len(failures)}; an ideal generator shows "
        f"{assessment.expected_false_flags:.2f} on average with these sample sizes"
    )
    lines.append(
        f"Suite rule: weighted Bonferroni at {SUITE_ALPHA:g} over {verdict.family_size} checks: "
        f"extreme P <= {verdict.extreme_threshold:.3g}, proportion/uniformity (uniformity "
        f"from {MIN_SEQUENCES} sequences) P <= {verdict.threshold:.3g}; minimum sample "
        f"{MIN_SEQUENCES} sequences"
    )
    if verdict.uniformity_not_assessed:
        shown = ", ".join(verdict.uniformity_not_assessed[:4])
        more = len(verdict.uniformity_not_assessed) - 4
        lines.append(
            f"Uniformity not assessed (fewer than {MIN_SEQUENCES} applicable sequences): "
            f"{shown}{f' and {more} more' if more > 0 else ''}"
        )
    lines.append(f"RESULT: {verdict.verdict.value} ({verdict.reason})")
    return "\n".join(lines) + "\n"
