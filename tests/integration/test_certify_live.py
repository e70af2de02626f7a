"""A full, small certification run against a live in-process service: collect outcomes through
the ordinary RPCs with ``rng-certify collect --live``, run the outcome battery with
``rng-certify outcomes``, write the HTML report and render it in headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from certification import sources, tallies
from certification.cli import main
from rng_service.cli.audit import main as audit_main
from tests.integration.conftest import make_config, start
from tests.unit.certification.test_html_report import chromium_render, plots_in, png_size

PLAN = {
    "roulette_double_zero": 3000,
    "roulette_double_zero_as_single_zero": 600,
    "sic_bo": 600,
    "fire_numbers": 400,
    "jackpot_tier": 330,
    "multiball_3": 300,
    "card_shuffle": 300,
    "card_shoe_6": 270,
    # about 27 rounds (a Fire Number draw and a spin each) per bonus game: see collect_live
    "mega_fire_blaze_bonus": 60,
    "uniform_int": 100,
    "uniform_int_distinct": 330,
    "weighted_choice": 100,
}


@pytest.fixture(scope="module")
def live_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(records written by collect --live, the log exported by rng-audit export)."""
    tmp = tmp_path_factory.mktemp("certify-live")
    # Fire Numbers and jackpot tiers are drawn under the shipped example profile.
    running = start(make_config(tmp, RNG_SERVICE__PROFILES__ALLOW_EXAMPLES="true"))
    try:
        records = tmp / "records.jsonl"
        argv = ["collect", "--live", f"127.0.0.1:{running.port}", "--output", str(records),
                "--run-id", "live-test", "--time-limit", "240"]  # fmt: skip
        for kind, count in PLAN.items():
            argv += ["--kind", f"{kind}={count}"]
        assert main(argv) == 0
        export = tmp / "export.jsonl"
        target = f"127.0.0.1:{running.port}"
        assert audit_main(["export", "--target", target, "--out", str(export)]) == 0
    finally:
        running.stop()
    return records, export


@pytest.fixture(scope="module")
def collected(live_files: tuple[Path, Path]) -> Path:
    return live_files[0]


def test_the_log_export_holds_the_same_outcomes(live_files: tuple[Path, Path]) -> None:
    records, export = live_files
    collected = list(sources.read_records(records))
    # the rounds played for the bonus games (request ids ending in -fire and -spin) are logged
    # too; the collector keeps the bonus entries only
    entries = list(sources.read_records(export))
    logged = [
        {"kind": e["kind"], "params": e["params"], "outcome": e["outcome"]}
        for e in entries
        if not e["request_id"].endswith(("-fire", "-spin"))
    ]
    assert logged == collected
    # Each bonus game follows a spin of its round that came to rest on one of the round's
    # Fire Numbers (617b.7(f)); the rounds before it in its series had no such spin.
    by_round: dict[str, dict[str, dict[str, Any]]] = {}
    for e in entries:
        if "mega_fire_blaze_bonus" in e["request_id"]:
            by_round.setdefault(e["round_id"], {})[e["request_id"].rsplit("-", 1)[-1]] = e
    bonuses = 0
    for drawn in by_round.values():
        numbers = drawn["fire"]["outcome"]["numbers"]
        landed = drawn["spin"]["outcome"]["final"]["number"] in numbers
        assert landed == any(e["kind"] == "mega_fire_blaze_bonus" for e in drawn.values())
        bonuses += landed
    assert bonuses == PLAN["mega_fire_blaze_bonus"]


def test_live_records_are_the_logged_entries(collected: Path) -> None:
    records = list(sources.read_records(collected))
    assert len(records) == sum(PLAN.values())
    kinds = {r["kind"] for r in records}
    assert kinds == {"roulette_spin", "dice_roll", "fire_numbers", "jackpot_tier", "multiball",
                     "card_shuffle", "mega_fire_blaze_bonus", "uniform_int",
                     "weighted_choice"}  # fmt: skip
    sample = tallies.build_sample(records)
    wheels = sample.wheel_tallies
    assert [g.wheel for g in wheels] == ["double_zero", "double_zero_as_single_zero"]
    assert wheels[0].outcomes == PLAN["roulette_double_zero"]


def test_live_outcome_battery_and_report(collected: Path, tmp_path: Path) -> None:
    out, page = tmp_path / "outcomes.json", tmp_path / "report.html"
    # The live generator's personalization holds the pid and the clock, so its outcomes differ
    # from run to run; at this confidence a fair service fails with probability about 10^-5
    # (Holm over the family, and the second level at the same alpha), while a broken one
    # (a biased wheel, an unshuffled deck) still fails by many orders of magnitude.
    status = main(["outcomes", "--input", str(collected), "--json", str(out),
                   "--html", str(page), "--confidence", "0.999999"])  # fmt: skip
    doc = json.loads(out.read_text())
    # every kind is tested; bonus games split by Fire Number count, and the rarer counts may
    # lack data in 200 games (INCONCLUSIVE, naming what they need), nothing else may
    assert status in (0, 3), doc["verdict_reason"]
    waiting = {t["group"] for t in doc["tests"] if t["p_value"] is None and t["min_sample"]}
    assert all(g.startswith("bonus/") for g in waiting), waiting
    groups = {t["group"].split("/")[0] for t in doc["tests"] if t["p_value"] is not None}
    assert groups == {"wheel", "dice", "fire_numbers", "jackpot", "multiball", "shuffle",
                      "uniform", "weighted", "bonus"}  # fmt: skip
    shoes = {t["group"] for t in doc["tests"] if t["group"].startswith("shuffle/")}
    assert shoes == {"shuffle/1deck+0j", "shuffle/6decks+0j"}

    dom, png = chromium_render(page, tmp_path)
    rendered = plots_in(dom)
    assert rendered.kinds.get("p-value-histogram") == 1
    charted = sum(1 for t in doc["tests"] if t["cells"])
    assert rendered.kinds.get("frequency-chart", 0) + rendered.kinds.get("residual-chart", 0) == (
        charted
    )
    assert rendered.bars > 100
    assert png_size(png) == (1200, 2000)
