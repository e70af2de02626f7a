"""Streaming of the draw kinds (Fire Numbers, jackpot tiers, multi-ball, generic integers,
weighted choices): their counts are accumulated as records are read, and the streamed tests
give the in-memory tests' results. Past the buffers the tallies are compared with the batch
functions of ``_stats`` and ``sequence`` run on the whole draws, which this file keeps."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from certification import sources, tallies
from certification.outcomes._stats import inclusion_test, repeats
from certification.outcomes.battery import all_tests
from certification.outcomes.sequence import discrete_stream_tests, run_sequence_tests
from certification.outcomes.shuffles import card_by_position
from certification.outcomes.stream import DiscreteStream, InclusionTally, RepeatStream
from rng_service.outcomes import fire_numbers

LAYOUT = tuple(str(i) for i in range(37))


def _draws(n: int, seed: int) -> list[tuple[str, ...]]:
    rng = np.random.default_rng(seed)
    return [tuple(str(x) for x in rng.choice(37, size=int(c), replace=False))
            for c in rng.integers(1, 6, n)]  # fmt: skip


def test_inclusion_tally_equals_the_batch_inclusion_test() -> None:
    draws = _draws(4_000, 1)
    tally = InclusionTally(LAYOUT)
    for d in draws:
        tally.add(d)
    streamed, batch = (
        tally.result("inclusion", "g"),
        inclusion_test("inclusion", "g", draws, LAYOUT),
    )
    assert streamed == batch
    bad = InclusionTally(LAYOUT)
    for d in [*draws[:10], ("99",), *draws[10:20]]:
        bad.add(d)
    assert bad.result("inclusion", "g").p_value == 0.0
    assert "'99'" in bad.result("inclusion", "g").note


def test_discrete_stream_equals_the_batch_tests_past_its_buffer() -> None:
    """Runs, runs up and down and lag correlation are the same statistics from the tallies as
    from the whole stream; the tuples keep their null distribution on the alphabet fixed at
    the switch; no repeat in a fair stream."""
    probabilities = (Fraction(1, 20), Fraction(2, 20), Fraction(3, 20), Fraction(14, 20))
    rng = np.random.default_rng(7)
    indices = rng.choice(4, size=40_000, p=[float(p) for p in probabilities])
    stream = DiscreteStream(probabilities, "g", buffer_values=3_000)
    for start in range(0, indices.size, 4_999):
        stream.add(indices[start : start + 4_999])
    assert stream.streaming
    streamed = {r.name: r for r in stream.results()}
    batch = {r.name: r for r in discrete_stream_tests(indices, probabilities, "g")}
    assert set(streamed) == set(batch)
    for name in ("runs_up_and_down", "runs_up", "runs_down", "lag_correlation"):
        assert streamed[name].statistic == pytest.approx(batch[name].statistic, rel=1e-9), name
        assert streamed[name].p_value == pytest.approx(batch[name].p_value, rel=1e-6), name
    for name in ("overlapping_pairs", "overlapping_triples"):
        a, k = streamed[name].details["alphabet"], streamed[name].details["k"]
        assert isinstance(a, int)
        assert isinstance(k, int)
        assert streamed[name].df == a**k - a ** (k - 1)
    assert streamed["repeats"].p_value == 1.0
    periodic = DiscreteStream(probabilities, "g", buffer_values=3_000)
    periodic.add(np.tile(indices[:2_000], 10))
    assert (periodic.results()[-1].p_value or 1.0) < 1e-6


def test_discrete_stream_below_its_buffer_is_the_batch_path() -> None:
    probabilities = (Fraction(1, 3), Fraction(2, 3))
    indices = np.random.default_rng(3).integers(0, 2, 5_000)
    stream = DiscreteStream(probabilities, "g", buffer_values=10_000)
    stream.add(indices[:2_500])
    stream.add(indices[2_500:])
    assert not stream.streaming
    assert stream.results() == discrete_stream_tests(indices, probabilities, "g")


def test_repeat_stream_on_whole_draws() -> None:
    """Past the buffer: a fair stream of draws shows no repeat; a stream that repeats its
    draws with period 1,500 is caught and its period named, as the batch detector does."""
    draws = _draws(6_000, 2)
    # sizes uniform on 1..5, each draw a uniform ordered c-subset of 37
    collision = sum((Fraction(1, 25) * Fraction(math.factorial(37 - c), math.factorial(37))
                     for c in range(1, 6)), Fraction(0))  # fmt: skip
    fair = RepeatStream("g", collision, buffer_records=1_000)
    for d in draws:
        fair.add(d)
    assert fair.streaming
    assert fair.result().p_value == 1.0
    assert repeats("repeats", "g", draws, collision).p_value == 1.0
    periodic = RepeatStream("g", collision, buffer_records=1_000)
    cycle = draws[:1_500] * 4
    for d in cycle:
        periodic.add(d)
    streamed, batch = periodic.result(), repeats("repeats", "g", cycle, collision)
    assert streamed.p_value is not None
    assert streamed.p_value < 1e-6
    assert batch.p_value is not None
    assert batch.p_value < 1e-6
    assert streamed.details["period"] == batch.details["period"] == 1_500
    small = RepeatStream("g", collision, buffer_records=10_000)
    for d in cycle:
        small.add(d)
    assert not small.streaming
    assert small.result() == batch


def test_draw_kinds_are_tallied_not_kept() -> None:
    """build_sample keeps counts and streams for the draw kinds, no draw lists; the tests of
    the tallies equal the batch tests run here on the records' draws."""
    plan = {
        "fire_numbers": 2_000,
        "multiball_3": 2_000,
        "jackpot_tier": 2_000,
        "weighted_choice": 1_000,
        "uniform_int": 1_000,
        "uniform_int_distinct": 500,
    }
    records = sources.generate_records(sources.lab_generator("draw-tally"), plan)
    sample = tallies.build_sample(records)
    for groups in (sample.fire_numbers, sample.multiball, sample.jackpots, sample.weighted,
                   sample.uniform):  # fmt: skip
        for g in groups:
            assert not hasattr(g, "draws")
            assert not hasattr(g, "tiers")
    assert sample.outcome_count == sum(plan.values())
    tests = {(r.group.split("/")[0], r.name): r for r in all_tests(sample)}
    fires = [tuple(r["outcome"]["numbers"]) for r in records if r["kind"] == "fire_numbers"]
    inc = inclusion_test("inclusion", "g", fires, fire_numbers.LAYOUT)
    assert tests[("fire_numbers", "inclusion")].statistic == inc.statistic
    weights = (1, 2, 3, 4, 10)
    idx = np.asarray([i for r in records if r["kind"] == "weighted_choice"
                      for i in r["outcome"]["indices"]], dtype=np.int64)  # fmt: skip
    batch = {r.name: r for r in discrete_stream_tests(
        idx, [Fraction(w, 20) for w in weights], "g")}  # fmt: skip
    for name, r in batch.items():
        assert tests[("weighted", name)].statistic == r.statistic, name
    values = np.asarray([v - 1 for r in records if r["kind"] == "uniform_int"
                         and not r["params"]["distinct"] for v in r["outcome"]["values"]],
                        dtype=np.int64)  # fmt: skip
    by_name = {r.name: r for r in all_tests(sample) if r.group == "uniform/1..100"}
    for r in run_sequence_tests(values, 100, "uniform/1..100"):
        assert by_name[r.name].statistic == r.statistic, r.name


def _bonus_records(tmp_path: Path, mode: str, n: int) -> tuple[Path, list[dict[str, Any]]]:
    """``n`` bonus games drawn by the service's own draw under the example profile with its
    designations made ``mode`` over a six-segment layout (written to a profile file)."""
    from rng_service.outcomes import fire_numbers, mega_fire_blaze
    from rng_service.outcomes.profiles import parse_profile

    root = Path(__file__).resolve().parents[3]
    text = (root / "rng_service" / "profiles" / "mega_fire_blaze_example.toml").read_text()
    old = (
        'mode = "independent"\ndesignations = ["x2", "x3", "x5", "jackpot"]\n'
        "weights = [40, 30, 15, 15]"
    )
    new = f'mode = "{mode}"\nlayout = ["x2", "x2", "x3", "x5", "jackpot", "jackpot"]'
    assert old in text
    path = tmp_path / f"{mode}.toml"
    path.write_text(text.replace(old, new))
    prof = parse_profile(path.read_bytes(), path.name)
    src = sources.random_source(sources.lab_generator(f"bonus-{mode}"))
    records = []
    for _ in range(n):
        count = len(fire_numbers.draw(src, fire_numbers.FireNumberParams(profile=prof)).numbers)
        bp = mega_fire_blaze.BonusParams(profile=prof, fire_number_count=count)
        records.append({"kind": "mega_fire_blaze_bonus", "params": bp.to_record(),
                        "outcome": mega_fire_blaze.draw(src, bp).to_record()})  # fmt: skip
    return path, json.loads(json.dumps(records))


def test_bonus_games_are_tallied_not_kept(tmp_path: Path) -> None:
    """A shuffled layout: the designations' position x label table gives card_by_position's
    statistic on the rows read here; the cells' inclusions equal inclusion_test's; a row that
    is not the layout fails, and a fixed layout's changed row fails."""
    path, records = _bonus_records(tmp_path, "shuffled", 1_500)
    sample = tallies.build_sample(records, profile_files=[path])
    assert sample.outcome_count == 1_500
    tests = {(r.group, r.name): r for r in all_tests(sample)}
    for g in sample.bonus:
        assert not hasattr(g, "fill_orders")
        group = f"bonus/{g.profile}/{g.fire_number_count}"
        games = [r["outcome"] for r in records
                 if r["params"]["fire_number_count"] == g.fire_number_count]  # fmt: skip
        names = sorted({"x2", "x3", "x5", "jackpot"})
        rows = np.array([[names.index(s["designation"])
                          for s in sorted(o["segments"], key=lambda s: s["index"])]
                         for o in games], dtype=np.int64)  # fmt: skip
        batch = card_by_position(rows, group)
        assert tests[(group, "designations")].statistic == batch.statistic
        assert tests[(group, "designations")].p_value == batch.p_value
        orders = [tuple(str(i) for i in o["fill_order"]) for o in games]
        cells = inclusion_test("cells", group, orders, tuple(str(i) for i in range(36)))
        assert tests[(group, "cells")] == cells
    bad = json.loads(json.dumps(records))
    bad[3]["outcome"]["segments"][0]["designation"] = "x5"
    bad[3]["outcome"]["segments"][1]["designation"] = "x5"
    count = bad[3]["params"]["fire_number_count"]
    failed = [r for r in all_tests(tallies.build_sample(bad, profile_files=[path]))
              if r.name == "designations" and r.group.endswith(f"/{count}")]  # fmt: skip
    assert failed[0].p_value == 0.0
    assert "not the profile's layout" in failed[0].note
    path, fixed = _bonus_records(tmp_path, "fixed", 200)
    fixed[0]["outcome"]["segments"][0]["designation"] = "x3"
    count = fixed[0]["params"]["fire_number_count"]
    results = [r for r in all_tests(tallies.build_sample(fixed, profile_files=[path]))
               if r.name == "designations"]  # fmt: skip
    assert [r.group.endswith(f"/{count}") for r in results] == [True]
    assert results[0].p_value == 0.0


def test_repeat_stream_takes_its_final_collision() -> None:
    """Draws without replacement learn their smallest size (hence the collision probability)
    only at the end: the streamed expectation uses the collision set last."""
    draws = _draws(3_000, 4)
    stream = RepeatStream("g", Fraction(1, 10**9), buffer_records=500)
    for d in draws:
        stream.add(d)
    low = stream.result().details["expected_pairs"]
    stream.collision = Fraction(1, 37)
    high = stream.result().details["expected_pairs"]
    assert isinstance(low, float)
    assert isinstance(high, float)
    assert high > low * 1e6
