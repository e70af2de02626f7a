"""Outcome known answers (tests/vectors/outcomes/): the checked-in files are exactly what
scripts/gen_outcome_vectors.py generates, and the service logs exactly those outcomes when its
generator is the vectors' lab-mode generator (the large batch cases too, and the outcome after
them). That the vectors are right, not merely unchanged, is checked by the independent reader
of the documents: tests/unit/reader/test_reader_vectors.py."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from rng_service._proto.rng.v1 import common_pb2, outcomes_pb2
from rng_service.drbg import DeterministicGenerator
from rng_service.log.entry import LogEntry
from rng_service.outcomes import fire_numbers, mega_fire_blaze
from rng_service.outcomes.profiles import load_builtin_profile
from rng_service.sampling import RandomSource
from tests import scripts
from tests.unit.rpc.conftest import ServicerHarness

ROOT = Path(__file__).resolve().parents[3]
VECTORS = ROOT / "tests" / "vectors" / "outcomes"


GEN: Any = scripts.load("gen_outcome_vectors")


def test_checked_in_vectors_are_what_the_generator_writes() -> None:
    files = GEN.build()
    on_disk = {p.name: p.read_text() for p in VECTORS.glob("*.json")}
    assert sorted(on_disk) == sorted(files)
    for name, text in files.items():
        assert on_disk[name] == text, f"{name} differs: run scripts/gen_outcome_vectors.py"


def test_the_vectors_cover_every_outcome_kind_of_the_service() -> None:
    kinds = {json.loads(p.read_text())["kind"] for p in VECTORS.glob("*.json")}
    assert kinds == {
        "roulette_spin",
        "multiball",
        "fire_numbers",
        "mega_fire_blaze_bonus",
        "jackpot_tier",
        "dice_roll",
        "card_shuffle",
        "uniform_int",
        "weighted_choice",
        "roulette_spin_batch",
        "dice_roll_batch",
        "uniform_int_batch",
    }


WHEELS = {
    "single_zero": outcomes_pb2.WHEEL_TYPE_SINGLE_ZERO,
    "double_zero": outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO,
    "double_zero_as_single_zero": outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO_AS_SINGLE_ZERO,
}


def _request(kind: str, p: dict[str, Any], rid: str) -> tuple[str, Any]:
    """The RPC and request that log an entry of ``kind`` with params ``p``, in round R-<rid>."""
    c = common_pb2.RequestContext(table_id="T", round_id=f"R-{rid}", request_id=rid)
    if kind == "roulette_spin":
        return "SpinRoulette", outcomes_pb2.SpinRouletteRequest(context=c, wheel=WHEELS[p["wheel"]])
    if kind == "multiball":
        return "DrawMultiBall", outcomes_pb2.DrawMultiBallRequest(
            context=c, wheel=WHEELS[p["wheel"]], balls=p["balls"]
        )
    if kind == "fire_numbers":
        return "SelectFireNumbers", outcomes_pb2.SelectFireNumbersRequest(
            context=c, profile=p["profile"]["name"]
        )
    if kind == "jackpot_tier":
        return "DrawJackpotTier", outcomes_pb2.DrawJackpotTierRequest(
            context=c, profile=p["profile"]["name"]
        )
    if kind == "dice_roll":
        return "RollDice", outcomes_pb2.RollDiceRequest(context=c, **p)
    if kind == "card_shuffle":
        return "ShuffleCards", outcomes_pb2.ShuffleCardsRequest(context=c, **p)
    if kind == "uniform_int":
        return "DrawUniformIntegers", outcomes_pb2.DrawUniformIntegersRequest(context=c, **p)
    if kind == "weighted_choice":
        return "DrawWeighted", outcomes_pb2.DrawWeightedRequest(context=c, **p)
    batch = outcomes_pb2.DrawBatchRequest(context=c, count=p["count"])
    if kind == "roulette_spin_batch":
        batch.roulette.wheel = WHEELS[p["wheel"]]
    elif kind == "dice_roll_batch":
        batch.dice.count, batch.dice.sides = p["dice"], p["sides"]
    else:
        assert kind == "uniform_int_batch", kind
        batch.uniform.low, batch.uniform.high = p["low"], p["high"]
    return "DrawBatch", batch


def _service_cases() -> list[tuple[str, int]]:
    out = []
    for path in sorted(VECTORS.glob("*.json")):
        doc = json.loads(path.read_text())
        if doc["kind"] != "mega_fire_blaze_bonus":  # needs a logged Fire Number draw first
            out.extend((doc["kind"], i) for i in range(len(doc["cases"])))
    return out


def _lab_generator() -> DeterministicGenerator:
    seed = json.loads((VECTORS / "dice_roll.json").read_text())["seed"]
    return DeterministicGenerator(
        entropy_input=bytes.fromhex(seed["entropy_input"]),
        nonce=bytes.fromhex(seed["nonce"]),
        personalization=bytes.fromhex(seed["personalization"]),
    )


@pytest.mark.parametrize(("kind", "case"), _service_cases())
def test_the_service_logs_the_known_answers(kind: str, case: int) -> None:
    doc = json.loads((VECTORS / f"{kind}.json").read_text())
    vector = doc["cases"][case]
    h = ServicerHarness(_lab_generator())
    try:
        index = 0
        for i, expected in enumerate(vector.get("outcomes", [])):
            method, request = _request(kind, vector["params"], f"v{i}")
            entry = LogEntry.decode(h.call(method, request).receipt.entry)
            assert (entry.kind, entry.index) == (kind, index)
            assert entry.params == vector["params"]
            assert entry.outcome == expected
            assert entry.generator.lab_mode
            index += 1
        for i, summary in enumerate(vector.get("outcome_digests", [])):
            method, request = _request(kind, vector["params"], f"d{i}")
            entry = LogEntry.decode(h.call(method, request).receipt.entry)
            assert (entry.kind, entry.index, entry.params) == (kind, index, vector["params"])
            canonical = json.dumps(entry.outcome, sort_keys=True, separators=(",", ":"))
            assert hashlib.sha256(canonical.encode()).hexdigest() == summary["sha256"]
            index += 1
        if "then" in vector:
            then = vector["then"]
            method, request = _request(then["kind"], then["params"], "then")
            entry = LogEntry.decode(h.call(method, request).receipt.entry)
            assert (entry.kind, entry.index) == (then["kind"], index)
            assert entry.outcome == then["outcome"]
    finally:
        h.close()


def test_the_bonus_game_logs_the_pure_draw_after_the_logged_fire_numbers() -> None:
    profile = load_builtin_profile("mega_fire_blaze_example")
    h = ServicerHarness(_lab_generator())
    try:
        c = common_pb2.RequestContext(table_id="T", round_id="R", request_id="fire")
        fire = h.call(
            "SelectFireNumbers",
            outcomes_pb2.SelectFireNumbersRequest(context=c, profile=profile.id.name),
        )
        # The round's spin lands on a Fire Number (from another generator: the bonus game
        # is the next thing the vectors' generator draws).
        number = LogEntry.decode(fire.receipt.entry).outcome["numbers"][0]
        spin = h.spin_landing_on(number, wheel="single_zero", round_id="R")
        c.request_id = "bonus"
        bonus = h.call(
            "PlayMegaFireBlazeBonus",
            outcomes_pb2.PlayMegaFireBlazeBonusRequest(context=c, profile=profile.id.name),
        )
    finally:
        h.close()
    gen = _lab_generator()
    drawn = fire_numbers.draw(RandomSource(gen), fire_numbers.FireNumberParams(profile))
    game = mega_fire_blaze.draw(
        RandomSource(gen), mega_fire_blaze.BonusParams(profile, drawn.count)
    )
    assert LogEntry.decode(fire.receipt.entry).outcome == drawn.to_record()
    entry = LogEntry.decode(bonus.receipt.entry)
    assert entry.outcome == game.to_record()
    assert entry.params == {
        **mega_fire_blaze.BonusParams(profile, drawn.count).to_record(),
        "fire_numbers_index": 0,
        "spin_index": spin.receipt.index,
    }
    assert (bonus.fire_numbers_index, bonus.spin_index) == (0, 1)
    vector = json.loads((VECTORS / "fire_numbers.json").read_text())["cases"][0]
    assert vector["outcomes"][0] == drawn.to_record()


def test_stream_chunks_are_the_batch_known_answers_in_order() -> None:
    vector = json.loads((VECTORS / "uniform_int_batch.json").read_text())["cases"][0]
    p = vector["params"]
    h = ServicerHarness(_lab_generator())
    try:
        chunks = h.stream(
            "StreamBatch",
            outcomes_pb2.StreamBatchRequest(
                context=common_pb2.RequestContext(table_id="T", round_id="R", request_id="s"),
                count=2 * p["count"],
                chunk_size=p["count"],
                uniform=outcomes_pb2.UniformBatch(low=p["low"], high=p["high"]),
            ),
        )
    finally:
        h.close()
    assert [list(c.uniform.values) for c in chunks] == [o["values"] for o in vector["outcomes"]]
    assert [LogEntry.decode(c.receipt.entry).request_id for c in chunks] == ["s/0", "s/1"]
