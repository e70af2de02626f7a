"""``rng-certify entropy``: SP 800-90B entropy assessment of a noise source's sample file.

Usage::

    rng-certify entropy FILE --bits-per-symbol N [--claim H] [--iid] [--restart FILE]
                        [--seed S] [--json OUT] [--html OUT]

Reads FILE (``-``: standard input) once, one sample per byte in its low N bits, hashing it while
reading; runs the section 6.3 non-IID estimators on the samples and on the section 3.1.3
bitstring (or, with ``--iid``, the section 5 IID tests and the IID track's estimate) and
combines them as section 3.1.3 does. With ``--restart``, the section 3.1.4 restart tests on a
1000 x 1000 restart matrix. Verdict (:mod:`certification.verdict`): PASS when the assessed
min-entropy per sample is at least the claim, the sample has the 1,000,000 samples section 3.1
asks for, and every test run passed; FAIL when the assessment is below the claim, the IID tests
reject the IID claim, or the restart tests fail; INCONCLUSIVE when no claim is given or the
sample is short. Exit status 0 PASS, 1 FAIL, 3 INCONCLUSIVE, 2 usage or input error.

This module only registers the command; the estimators load when it runs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["FORMAT", "MIN_SAMPLES", "add_entropy_parser", "run_entropy"]

FORMAT = "rng-certify-entropy/v1"
MIN_SAMPLES = 1_000_000


def _bits(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: bits per symbol is an integer 1 to 8"
        ) from None
    if not 1 <= value <= 8:
        raise argparse.ArgumentTypeError(f"{text!r}: bits per symbol is 1 to 8")
    return value


def _bits_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a number of permutations") from None
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"{text!r}: permutations are 1 to 10,000")
    return value


def _claim(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: the claim is a number of bits") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r}: the claim is a positive number of bits")
    return value


def add_entropy_parser(commands: Any) -> None:
    """Register ``entropy`` on the ``rng-certify`` sub-command registry."""
    p = commands.add_parser(
        "entropy",
        help="SP 800-90B min-entropy assessment of a noise source's samples",
        description="SP 800-90B entropy assessment (docs/certification.md, 'Entropy "
        "assessment'): the section 6.3 non-IID estimators, or with --iid the section 5 IID "
        "tests, the section 3.1.3 combination, a verdict against --claim.",
    )
    p.add_argument("file", metavar="FILE", help="samples, one per byte ('-': standard input)")
    p.add_argument(
        "--bits-per-symbol", type=_bits, required=True, metavar="N",
        help="bits per sample (1-8); the low N bits of each byte",
    )  # fmt: skip
    p.add_argument(
        "--claim", type=_claim, metavar="H",
        help="claimed min-entropy per sample (bits); without it there is no verdict",
    )  # fmt: skip
    p.add_argument("--iid", action="store_true", help="the IID track (section 5 tests)")
    p.add_argument(
        "--restart", metavar="FILE",
        help="section 3.1.4 restart matrix: 1000 restarts x 1000 samples, restart by restart",
    )  # fmt: skip
    p.add_argument("--seed", type=int, metavar="S", help="seed of the IID permutations")
    p.add_argument(
        "--permutations", type=_bits_count, default=10_000, metavar="P",
        help="most permutations of the section 5.1 tests (default and SP 800-90B: 10,000)",
    )  # fmt: skip
    p.add_argument("--json", type=Path, metavar="OUT", help="JSON report path")
    p.add_argument("--html", type=Path, metavar="OUT", help="HTML report path")
    p.set_defaults(handler=run_entropy)


def _estimate_json(e: Any) -> dict[str, Any]:
    return {
        "name": e.name,
        "section": e.section,
        "track": "bitstring" if e.bitstring else "literal",
        "min_entropy": e.min_entropy,
        "details": e.details,
    }


def build_document(args: argparse.Namespace, progress: Any = None) -> dict[str, Any]:
    """Run the assessment ``args`` describe and return the JSON document."""
    import numpy as np

    from certification.entropy._samples import Samples, read_input
    from certification.evidence import evidence_record

    source = read_input(args.file)
    samples = Samples.from_bytes(source.data, args.bits_per_symbol, what=args.file)
    if samples.alphabet < 2:
        from certification.errors import InputError

        raise InputError(f"{args.file}: only one symbol occurs; no entropy to assess")
    inputs = [source.facts()]
    iid_doc: dict[str, Any] | None = None
    reasons: list[str] = []
    failed = False
    if args.iid:
        from certification.entropy import iid

        estimates, h_original, h_bitstring, assessed = iid.iid_estimate(samples)
        seed = (
            args.seed
            if args.seed is not None
            else int(np.random.SeedSequence().generate_state(1)[0])
        )
        result = iid.iid_tests(
            samples, np.random.default_rng(seed), permutations=args.permutations, progress=progress
        )
        iid_doc = {
            "passed": result.passed,
            "seed": seed,
            "permutations_allowed": args.permutations,
            "permutations_run": result.permutations_run,
            "permutation_tests": [
                {"name": p.name, "section": p.section, "statistic": p.statistic,
                 "greater": p.greater, "equal": p.equal, "less": p.less, "passed": p.passed}
                for p in result.permutations
            ],
            "chi_square_tests": [
                {"name": c.name, "section": c.section, "statistic": c.statistic,
                 "degrees_of_freedom": c.degrees_of_freedom, "p_value": c.p_value,
                 "passed": c.passed}
                for c in result.chi_square
            ],
            "lrs_test": {"section": "5.2.5", "W": result.lrs_length,
                         "p_col": result.lrs_collision_probability, "passed": result.lrs_passed},
        }  # fmt: skip
        if not result.passed:
            failed = True
            reasons.append("the section 5 tests reject the IID assumption (use the non-IID track)")
    else:
        from certification.entropy.non_iid import assess_non_iid

        found = assess_non_iid(samples, progress=progress)
        estimates = list(found.estimates)
        h_original, h_bitstring, assessed = found.h_original, found.h_bitstring, found.min_entropy
    h_i = assessed if args.claim is None else min(args.claim, assessed)
    restart_doc: dict[str, Any] | None = None
    if args.restart is not None:
        from certification.entropy.restart import restart_tests

        matrix = read_input(args.restart)
        inputs.append(matrix.facts())
        rs = Samples.from_bytes(matrix.data, args.bits_per_symbol, what=args.restart)
        restart = restart_tests(rs, h_i, iid=args.iid, progress=progress)
        restart_doc = {
            "H_I": restart.h_i, "cutoff": restart.cutoff,
            "max_row_count": restart.max_row_count, "max_column_count": restart.max_column_count,
            "sanity_check_passed": restart.sanity_passed, "H_r": restart.h_r, "H_c": restart.h_c,
            "validation_passed": restart.validation_passed, "passed": restart.passed,
            "row_estimates": [_estimate_json(e) for e in restart.row_estimates],
            "column_estimates": [_estimate_json(e) for e in restart.column_estimates],
        }  # fmt: skip
        if not restart.passed:
            failed = True
            why = "sanity check" if not restart.sanity_passed else "min(H_r, H_c) < H_I / 2"
            reasons.append(f"the section 3.1.4 restart tests fail ({why})")
    if args.claim is not None and assessed < args.claim:
        failed = True
        reasons.append(f"assessed min-entropy {assessed:.6f} is below the claim {args.claim:g}")
    if failed:
        verdict = "FAIL"
    elif args.claim is None:
        verdict = "INCONCLUSIVE"
        reasons.append("no --claim: the figures are reported, nothing is judged")
    elif samples.count < MIN_SAMPLES:
        verdict = "INCONCLUSIVE"
        reasons.append(f"{samples.count:,} samples; section 3.1 asks for at least {MIN_SAMPLES:,}")
    else:
        verdict = "PASS"
        reasons.append(f"assessed min-entropy {assessed:.6f} is at least the claim {args.claim:g}")
    return {
        "format": FORMAT,
        "verdict": verdict,
        "verdict_reason": "; ".join(reasons),
        "criteria": {
            "standard": "NIST SP 800-90B (January 2018)",
            "track": "IID" if args.iid else "non-IID",
            "claim": args.claim,
            "minimum_samples": MIN_SAMPLES,
            "confidence": "99% upper bounds, Z = 2.5758293035489008",
            "combination": "section 3.1.3: min(H_original, bits_per_symbol x H_bitstring)",
        },
        "samples": {
            "count": samples.count,
            "bits_per_symbol": samples.bits_per_symbol,
            "distinct_symbols": samples.alphabet,
        },
        "estimates": [_estimate_json(e) for e in estimates],
        "H_original": h_original,
        "H_bitstring": h_bitstring,
        "min_entropy": assessed,
        "H_I": h_i,
        "iid": iid_doc,
        "restart": restart_doc,
        "evidence": evidence_record(argv=args.argv, inputs=inputs),
    }


def render_text(doc: dict[str, Any]) -> str:
    lines = [f"{'estimator':<24} {'section':<8} {'track':<10} {'min-entropy':>12}"]
    for e in doc["estimates"]:
        value = "n/a" if e["min_entropy"] is None else f"{e['min_entropy']:.6f}"
        lines.append(f"{e['name']:<24} {e['section']:<8} {e['track']:<10} {value:>12}")
    lines.append(f"H_original = {doc['H_original']:.6f}")
    if doc["H_bitstring"] is not None:
        n = doc["samples"]["bits_per_symbol"]
        lines.append(
            f"H_bitstring = {doc['H_bitstring']:.6f} (x {n} = {n * doc['H_bitstring']:.6f})"
        )
    lines.append(f"assessed min-entropy per sample = {doc['min_entropy']:.6f}")
    if doc["iid"] is not None:
        lines.append(f"IID tests: {'passed' if doc['iid']['passed'] else 'REJECT'}")
    if doc["restart"] is not None:
        lines.append(f"restart tests: {'passed' if doc['restart']['passed'] else 'FAIL'}")
    lines.append(f"RESULT: {doc['verdict']} ({doc['verdict_reason']})")
    return "\n".join(lines) + "\n"


def run_entropy(args: argparse.Namespace) -> int:
    from certification.errors import InputError
    from certification.verdict import Verdict, exit_code

    started = time.monotonic()

    def progress(line: str) -> None:
        if sys.stderr.isatty():
            print(f"[{time.monotonic() - started:7.1f} s] {line}", file=sys.stderr)

    doc = build_document(args, progress)
    if args.json is not None:
        try:
            args.json.write_text(json.dumps(doc, indent=2) + "\n")
        except OSError as e:
            raise InputError(f"cannot write {args.json}: {e.strerror or e}") from e
    if args.html is not None:
        from certification.evidence import now_utc
        from certification.report.html import render_html

        page = render_html(entropy=doc, generated_at=now_utc(), inputs=[args.file])
        try:
            args.html.write_text(page)
        except OSError as e:
            raise InputError(f"cannot write {args.html}: {e.strerror or e}") from e
    sys.stdout.write(render_text(doc))
    return exit_code(Verdict[doc["verdict"]])
