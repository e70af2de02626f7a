"""The outcome battery's power study: ``python -m bench power`` (``--short`` for a smoke run).

Long form: ``certification.power.run_study`` with 100 replicates per ladder size (a seed each),
so that "caught" means at least 99 of 100 replicates FAIL (99 % power). Rows, one per bad
generator: the sample size at which it is caught, against the first size at which any
replicate failed (baseline: the ratio reads how far the 99 % point lies beyond the first
rejection); then our generator's overall FAIL rate against the nominal alpha of the battery.
The whole study document is written beside the results as ``power-study.json``. Last row:
the battery's FAIL rate on mixed lab-mode outcomes of our generator (:data:`MIXED_PLAN`, every
kind, 200 seeds), against alpha. Short form: 1 replicate, 1 mixed run.
"""

from __future__ import annotations

import json

from bench._common import RESULTS_DIR, Row
from certification import power, sources, tallies
from certification.outcomes import run_battery
from certification.outcomes.battery import DEFAULT_CONFIDENCE
from certification.verdict import Verdict

__all__ = ["MIXED_PLAN", "run"]

#: One mixed run: every kind, each above its tests' minimum sample.
MIXED_PLAN = {
    "roulette_single_zero": 4_000,
    "roulette_double_zero_as_single_zero": 1_000,
    "sic_bo": 1_000,
    "fire_numbers": 1_000,
    "jackpot_tier": 500,
    "multiball_3": 500,
    "card_shuffle": 300,
    "card_shoe_6": 300,
    "uniform_int": 400,
    "uniform_int_distinct": 400,
    "weighted_choice": 400,
}


def _mixed_fail_rate(runs: int) -> tuple[float, float]:
    """(FAIL share, INCONCLUSIVE share) of the battery on ``runs`` mixed lab-mode samples."""
    fails = inconclusive = 0
    for seed in range(runs):
        records = sources.generate_records(sources.lab_generator(f"mixed-{seed}"), MIXED_PLAN)
        verdict = run_battery(tallies.build_sample(records)).verdict
        fails += verdict is Verdict.FAIL
        inconclusive += verdict is Verdict.INCONCLUSIVE
    return fails / runs, inconclusive / runs


def run(*, short: bool) -> list[Row]:
    replicates = 1 if short else 100
    rows = power.run_study(replicates=replicates)
    document = power.study_json(rows, confidence=DEFAULT_CONFIDENCE, replicates=replicates)
    if not short:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        (RESULTS_DIR / "power-study.json").write_text(json.dumps(document, indent=1))
    out: list[Row] = []
    for r in rows:
        if r.bad:
            caught = r.caught_at or 0
            first = r.first_rejection_at or 0
            out.append(
                Row(
                    name=f"power {r.name}: caught at ({power.POWER_TARGET:.0%} of {replicates})",
                    value=float(caught),
                    unit=r.outcome,
                    baseline_name="first size with a FAIL",
                    baseline_value=float(first),
                )
            )
    for r in rows:
        if not r.bad:
            runs = sum(t.replicates for t in r.trials)
            fails = sum(t.rejections for t in r.trials)
            rate = fails / runs if runs else 0.0
            out.append(
                Row(
                    name=f"power {r.name}: FAIL rate over {runs} runs (false alarms)",
                    value=max(rate, 1e-9),
                    unit="share",
                    baseline_name="alpha",
                    baseline_value=1 - DEFAULT_CONFIDENCE,
                    target=f"< {power.OURS_MAX_REJECTION_RATE}",
                )
            )
    runs = 1 if short else 200
    fail_rate, inconclusive_rate = _mixed_fail_rate(runs)
    out.append(
        Row(
            name=f"outcome battery FAIL rate, our generator, every kind mixed ({runs} runs; "
            f"INCONCLUSIVE {inconclusive_rate:.3f})",
            value=max(fail_rate, 1e-9),
            unit="share",
            baseline_name="alpha",
            baseline_value=1 - DEFAULT_CONFIDENCE,
            target="about alpha",
        )
    )
    return out
