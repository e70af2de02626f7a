"""Writes the outcome known-answer vectors in tests/vectors/outcomes/ (one JSON file per kind).

``python scripts/gen_outcome_vectors.py`` writes the files; ``--check`` exits 1 if regenerating
would change them (``tests/unit/rpc/test_outcome_vectors.py`` does the same comparison).
The files are written by the code under test, so on their own they only catch change; what
makes them known answers is ``tests/unit/reader/test_reader_vectors.py``, which reproduces every
one with the independent reader of the documents (``tests/reader/``).

Every case starts a new lab-mode generator, ``rng_service.drbg.DeterministicGenerator`` with the
fixed seed below (SP 800-90A CTR_DRBG, AES-256 with derivation function, no reseed; the exact
stream is in docs/random-core.md section 4), and draws its outcomes one after the other with a
fresh ``RandomSource`` each, as the log appender does: outcome i + 1 starts at the generator's
next unread byte, after the 256-byte read-ahead (or more) of outcome i. ``params`` and
``outcome`` are the values an entry of that kind logs (docs/log-format.md), drawn by the same
functions the service calls (``rng_service.outcomes``; nothing from the service layer).

The batch kinds also have a large case: two batches of 10^5 values (recorded by digest: the
SHA-256 of the outcome record's canonical JSON, plus its first and last values) and then the
outcome of another kind drawn next from the same generator, which starts where the second
batch's read-ahead stopped (docs/random-core.md section 5, randbelow_batch).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rng_service.drbg import DeterministicGenerator  # noqa: E402
from rng_service.outcomes import (  # noqa: E402
    batch,
    cards,
    dice,
    fire_numbers,
    generic,
    jackpot,
    mega_fire_blaze,
    multiball,
    roulette,
)
from rng_service.outcomes.profiles import load_builtin_profile  # noqa: E402
from rng_service.sampling import RandomSource  # noqa: E402

OUT_DIR = ROOT / "tests" / "vectors" / "outcomes"

#: The lab seed of every case (public by design: these are test vectors, not secrets).
SEED = {
    "entropy_input": bytes(range(32)),
    "nonce": bytes(range(32, 48)),
    "personalization": b"rng-service outcome known answers v1",
}

PROCEDURE = (
    "Each case: a new DeterministicGenerator(entropy_input, nonce, personalization) (SP 800-90A "
    "CTR_DRBG AES-256 with df, no reseed; docs/random-core.md section 4). Outcome i is drawn "
    "with a fresh RandomSource (read-ahead 256) over that generator, as the log appender does, "
    "so outcome i + 1 starts at the generator's next unread byte. params and outcome are the "
    "log entry's fields of that kind (docs/outcomes.md gives each kind's draw order). A case with "
    "outcome_digests draws its outcomes the same way but records each by the SHA-256 of its "
    "canonical JSON (sorted keys, no white space), its value count and its first and last "
    "values; its 'then' outcome is drawn next from the same generator."
)

Draw = Callable[[RandomSource], Mapping[str, Any]]


#: Values per batch in the large cases, and how many leading and trailing values are shown.
LARGE_COUNT = 100_000
SHOWN = 8


def _outcomes(draw: Draw, n: int) -> list[Mapping[str, Any]]:
    gen = DeterministicGenerator(**SEED)
    return [draw(RandomSource(gen)) for _ in range(n)]


def _case(params: Mapping[str, Any], draw: Draw, n: int, **extra: Any) -> dict[str, Any]:
    return {"params": dict(params), **extra, "outcomes": _outcomes(draw, n)}


def canonical(record: Mapping[str, Any]) -> bytes:
    """The record's canonical JSON as a log entry holds it (RFC 8785 for these values)."""
    return json.dumps(record, sort_keys=True, separators=(",", ":")).encode()


def digest(record: Mapping[str, Any]) -> dict[str, Any]:
    """A large batch record by SHA-256 of its canonical JSON, with its first and last values."""
    ((key, values),) = record.items()
    return {
        "sha256": hashlib.sha256(canonical(record)).hexdigest(),
        "key": key,
        "count": len(values),
        "first": values[:SHOWN],
        "last": values[-SHOWN:],
    }


def _large_case(
    params: Mapping[str, Any], draw: Draw, then_kind: str, then_params: Any, then: Draw
) -> dict[str, Any]:
    """Two large batches from one generator, then one outcome of ``then_kind``."""
    gen = DeterministicGenerator(**SEED)
    batches = [digest(draw(RandomSource(gen))) for _ in range(2)]
    return {
        "params": dict(params),
        "outcome_digests": batches,
        "then": {
            "kind": then_kind,
            "params": then_params.to_record(),
            "outcome": then(RandomSource(gen)),
        },
    }


def _record(fn: Callable[[RandomSource, Any], Any], params: Any) -> Draw:
    return lambda src: fn(src, params).to_record()  # type: ignore[no-any-return]


def _cases() -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """Kind -> (description, cases)."""
    wt = roulette.WheelType
    profile = load_builtin_profile("mega_fire_blaze_example")
    spins = [roulette.SpinParams(wheel=w) for w in wt]
    balls = [
        multiball.MultiBallParams(wheel=wt.SINGLE_ZERO, balls=3),
        multiball.MultiBallParams(wheel=wt.DOUBLE_ZERO, balls=5),
    ]
    bonus = [mega_fire_blaze.BonusParams(profile=profile, fire_number_count=c) for c in (1, 10)]
    rolls = [dice.SIC_BO, dice.DiceParams(count=2, sides=10)]
    top = 2**53 - 1
    uniform = [
        generic.UniformParams(low=1, high=100, count=5),
        generic.UniformParams(low=1, high=52, count=5, distinct=True),
        generic.UniformParams(low=-top, high=top, count=2),
    ]
    weighted = generic.WeightedParams(weights=(1, 2, 3, 4), count=5)
    deal_plan, players = "let_it_ride_automated", 3

    def dealt(record: Mapping[str, Any]) -> dict[str, Any]:
        shoe = cards.ShuffleOutcome.from_record(record)
        return cards.deal(shoe, deal_plan, players).to_record()

    deal_case = _case(
        {"decks": 1, "jokers": 0, "plan": deal_plan, "players": players},
        _record(cards.draw, cards.ShuffleParams(decks=1)),
        1,
    )
    deal_case["dealt"] = [dealt(o) for o in deal_case["outcomes"]]

    dz = wt.DOUBLE_ZERO
    sic_bo = dice.SIC_BO
    byte = generic.UniformParams(low=0, high=999)
    wide = generic.UniformParams(low=-(2**53 - 1), high=2**53 - 1)
    spin = roulette.SpinParams(wheel=dz)
    large = LARGE_COUNT
    return {
        "roulette_spin": (
            "One roulette spin (SpinRoulette).",
            [_case(p.to_record(), _record(roulette.draw, p), 5) for p in spins],
        ),
        "multiball": (
            "Multi-ball draw (DrawMultiBall).",
            [_case(p.to_record(), _record(multiball.draw, p), 5) for p in balls],
        ),
        "fire_numbers": (
            "Fire Number selection (SelectFireNumbers); entry profile_sha256 = "
            f"{profile.id.sha256}.",
            [
                _case(
                    fire_numbers.FireNumberParams(profile).to_record(),
                    _record(fire_numbers.draw, fire_numbers.FireNumberParams(profile)),
                    5,
                )
            ],
        ),
        "mega_fire_blaze_bonus": (
            "Mega Fire Blaze bonus game (PlayMegaFireBlazeBonus); the entry's params also hold "
            "fire_numbers_index, the log index of the round's Fire Number draw the count came "
            "from, and spin_index, the log index of the round's spin that came to rest on a "
            "Fire Number.",
            [_case(p.to_record(), _record(mega_fire_blaze.draw, p), 2) for p in bonus],
        ),
        "jackpot_tier": (
            "Jackpot tier (DrawJackpotTier).",
            [
                _case(
                    jackpot.JackpotParams(profile).to_record(),
                    _record(jackpot.draw, jackpot.JackpotParams(profile)),
                    5,
                )
            ],
        ),
        "dice_roll": (
            "Dice (RollDice); the first case is Sic Bo.",
            [_case(p.to_record(), _record(dice.draw, p), 5) for p in rolls],
        ),
        "card_shuffle": (
            "Card shuffle (ShuffleCards), cards from the top of the shoe. With a dealing plan "
            "the entry logs the plan and players in params and only the shuffle as outcome; "
            "'dealt' is cards.deal(shuffle, plan, players), what the response's hands show.",
            [
                _case(
                    {"decks": 1, "jokers": 0},
                    _record(cards.draw, cards.ShuffleParams(decks=1)),
                    2,
                ),
                _case(
                    {"decks": 2, "jokers": 1},
                    _record(cards.draw, cards.ShuffleParams(decks=2, jokers=1)),
                    1,
                ),
                deal_case,
            ],
        ),
        "uniform_int": (
            "Uniform integers (DrawUniformIntegers).",
            [_case(p.to_record(), _record(generic.draw_uniform, p), 3) for p in uniform],
        ),
        "weighted_choice": (
            "Weighted choice (DrawWeighted).",
            [_case(weighted.to_record(), _record(generic.draw_weighted, weighted), 5)],
        ),
        "roulette_spin_batch": (
            "DrawBatch of spins: the same values as that many roulette_spin draws from one "
            "RandomSource.",
            [
                _case(
                    {"wheel": "double_zero", "count": 20},
                    lambda src: batch.draw_spin_batch(src, dz, 20),
                    2,
                ),
                _large_case(
                    {"wheel": "double_zero", "count": large},
                    lambda src: batch.draw_spin_batch(src, dz, large),
                    "roulette_spin",
                    spin,
                    _record(roulette.draw, spin),
                ),
            ],
        ),
        "dice_roll_batch": (
            "DrawBatch of dice rolls, faces roll after roll.",
            [
                _case(
                    {"dice": 3, "sides": 6, "count": 10},
                    lambda src: batch.draw_dice_batch(src, sic_bo, 10),
                    2,
                ),
                _large_case(
                    {"dice": 3, "sides": 6, "count": large},
                    lambda src: batch.draw_dice_batch(src, sic_bo, large),
                    "dice_roll",
                    sic_bo,
                    _record(dice.draw, sic_bo),
                ),
            ],
        ),
        "uniform_int_batch": (
            "DrawBatch of uniform integers (with replacement).",
            [
                _case(
                    {"low": 0, "high": 999, "count": 20},
                    lambda src: batch.draw_uniform_batch(src, byte, 20),
                    2,
                ),
                _large_case(
                    {"low": wide.low, "high": wide.high, "count": large},
                    lambda src: batch.draw_uniform_batch(src, wide, large),
                    "card_shuffle",
                    cards.ShuffleParams(decks=1),
                    _record(cards.draw, cards.ShuffleParams(decks=1)),
                ),
            ],
        ),
    }


def _render(value: Any, level: int = 0) -> str:
    """JSON with the structure indented and each case's values on single lines."""
    pad = "  " * (level + 1)
    end = "  " * level
    if isinstance(value, dict) and level < 3:
        items = [f"{pad}{json.dumps(k)}: {_render(v, level + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + end + "}"
    if isinstance(value, list) and value and isinstance(value[0], dict) and level < 3:
        return "[\n" + ",\n".join(pad + _render(v, level + 1) for v in value) + "\n" + end + "]"
    return json.dumps(value, separators=(", ", ": "))


def build() -> dict[str, str]:
    """File name -> exact file text."""
    seed = {
        "generator": "DeterministicGenerator",
        "entropy_input": SEED["entropy_input"].hex(),
        "nonce": SEED["nonce"].hex(),
        "personalization": SEED["personalization"].hex(),
        "personalization_text": SEED["personalization"].decode("ascii"),
    }
    files: dict[str, str] = {}
    for kind, (description, cases) in _cases().items():
        doc = {
            "kind": kind,
            "description": description,
            "seed": seed,
            "procedure": PROCEDURE,
            "generated_by": "scripts/gen_outcome_vectors.py",
            "cases": cases,
        }
        files[f"{kind}.json"] = _render(doc) + "\n"
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    files = build()
    if args.check:
        stale = sorted(
            name
            for name, text in files.items()
            if not (OUT_DIR / name).exists() or (OUT_DIR / name).read_text() != text
        )
        extra = sorted(p.name for p in OUT_DIR.glob("*.json") if p.name not in files)
        if stale or extra:
            print(f"outcome vectors differ: {stale + extra}", file=sys.stderr)
            return 1
        return 0
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (OUT_DIR / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
