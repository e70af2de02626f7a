"""The code under test against the independent reader of the documents, kind by kind.

For every outcome kind, 10^4 outcomes with random parameters over the kind's whole allowed range
(``make soak``: 10^5), each from a fresh RandomSource over one lab generator as the log appender
draws them, so every outcome's values *and* the bytes it reads (where the next one starts) must
follow docs/outcomes.md and docs/random-core.md. Then the cases random parameters rarely reach:
the 64-respin limit, a batch that needs a second round, batches of 10^5 and the draw after them.

CI budget: the 10^4-case tests are marked ``slow`` (``make test`` runs them, ``make test-fast``
does not) and take about 20 s of CPU together on the 2-core CI machine; parameters are drawn
over every allowed value but weighted towards cheap ones (a batch of 10^4 values in 0.5% of the
cases, 10^5 only in the dedicated tests) to stay there. ``make soak`` runs 10^5 per kind.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from rng_service.errors import GeneratorUnavailable, InvalidArgument
from rng_service.outcomes import cards, roulette
from rng_service.sampling import RandomSource
from tests.reader import kinds
from tests.reader.sampling import Source
from tests.unit.reader.agreement import (
    PARAMS,
    CodeSide,
    Profiles,
    ReaderSide,
    code_draw,
    seed,
)

CASES = 10_000
SOAK_CASES = 100_000
BATCH_KINDS = ("roulette_spin_batch", "dice_roll_batch", "uniform_int_batch")


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) < 300 else text[:300] + "..."


def _agree(kind: str, cases: int, label: str) -> None:
    rng = random.Random(label)
    profiles = Profiles(rng, extra=12)
    s = seed(label)
    code, reader = CodeSide(s, profiles), ReaderSide(s, profiles)
    for i in range(cases):
        params = PARAMS[kind](rng, profiles)
        code_params, expected = code.draw(kind, params)
        assert code_params == params, f"case {i}: params record {_short(code_params)}"
        got = reader.draw(kind, params)
        assert got == expected, f"case {i}, params {_short(params)}: {_short(got)}"


def test_every_kind_has_random_cases() -> None:
    assert set(PARAMS) == set(kinds.KINDS)
    assert len(kinds.KINDS) == 12


@pytest.mark.slow
@pytest.mark.parametrize("kind", kinds.KINDS)
def test_the_code_draws_what_the_documents_say(kind: str) -> None:
    _agree(kind, CASES, f"agreement/{kind}")


@pytest.mark.soak
@pytest.mark.parametrize("kind", kinds.KINDS)
def test_the_code_draws_what_the_documents_say_soak(kind: str) -> None:
    _agree(kind, SOAK_CASES, f"agreement-soak/{kind}")


@pytest.mark.slow
def test_outcomes_of_mixed_kinds_follow_each_other_on_one_generator() -> None:
    """Each outcome starts where the previous one, of whatever kind, stopped reading."""
    rng = random.Random("mixed")
    profiles = Profiles(rng, extra=4)
    s = seed("mixed")
    code, reader = CodeSide(s, profiles), ReaderSide(s, profiles)
    for i in range(3000):
        kind = rng.choice(kinds.KINDS)
        params = PARAMS[kind](rng, profiles)
        _, expected = code.draw(kind, params)
        assert reader.draw(kind, params) == expected, f"case {i}: {kind} {_short(params)}"


# -- scripted streams: the same bytes to both sides -------------------------------------------


class Script:
    """A scripted byte stream serving the code (``random_bytes``) and the reader (``take``)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.reads: list[int] = []

    def random_bytes(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise AssertionError(f"read past the script: {n} at {self.pos} of {len(self.data)}")
        self.reads.append(n)
        self.pos += n
        return self.data[self.pos - n : self.pos]

    take = random_bytes


ZERO_ZERO = 19  # position of 00 on the double zero wheel; randbelow(38) accepts byte 19 as 19


@pytest.mark.parametrize("voids", [1, 63])
def test_a_double_zero_as_single_zero_spin_keeps_up_to_63_voided_spins(voids: int) -> None:
    data = bytes([ZERO_ZERO] * voids + [0]) + bytes(300)
    code_script, reader_script = Script(data), Script(data)
    params = {"wheel": "double_zero_as_single_zero"}
    _, expected = code_draw(
        "roulette_spin", params, RandomSource(code_script), Profiles(random.Random(0), 0)
    )
    got = kinds.draw("roulette_spin", params, Source(reader_script))
    assert got == expected
    assert [s["voided"] for s in got["spins"]] == [True] * voids + [False]
    assert got["final"]["number"] == "0"
    assert code_script.reads == reader_script.reads


def test_the_64th_voided_spin_fails_closed_on_both_sides() -> None:
    data = bytes([ZERO_ZERO] * 64) + bytes(300)
    with pytest.raises(GeneratorUnavailable):
        roulette.draw(
            RandomSource(Script(data)),
            roulette.SpinParams(wheel=roulette.WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO),
        )
    with pytest.raises(kinds.RespinLimit):
        kinds.roulette_spin(Source(Script(data)), "double_zero_as_single_zero")


@pytest.mark.parametrize(("n", "count"), [(6, 1000), (38, 50), (1000, 300), (2**63 - 5, 40)])
def test_a_batch_that_needs_a_second_round_reads_and_consumes_alike(n: int, count: int) -> None:
    """Rejected attempts up front leave the first round short of ``count`` accepted values."""
    k = ((n - 1).bit_length() + 7) // 8
    span = 256**k
    limit = span - span % n
    attempts = count * span // limit + 16 + count // 64
    reject = (span - 1).to_bytes(k, "big")  # >= limit: always rejected (n does not divide span)
    good = random.Random(n).randbytes(8 * k * (count + 100))
    data = reject * (attempts - count // 2) + good
    code_script, reader_script = Script(data), Script(data)
    code_src, reader_src = RandomSource(code_script), Source(reader_script)
    values = code_src.randbelow_batch(n, count).tolist()
    assert reader_src.randbelow_batch(n, count) == values
    assert code_script.reads == reader_script.reads
    if attempts * k > 256:  # round 1 read exactly its attempts, so round 2 had to read more
        assert code_script.reads[0] == attempts * k
        assert len(code_script.reads) >= 2
    # and the next draw on each source takes the same next bytes
    assert code_src.randbelow(n) == reader_src.randbelow(n)


# -- batches of 10^5 and the draw after them --------------------------------------------------

LARGE = [
    ("roulette_spin_batch", {"wheel": "double_zero", "count": 100_000}),
    ("roulette_spin_batch", {"wheel": "single_zero", "count": 100_000}),
    ("dice_roll_batch", {"dice": 3, "sides": 6, "count": 100_000}),
    ("uniform_int_batch", {"low": 0, "high": 999, "count": 100_000}),
    ("uniform_int_batch", {"low": -(2**53 - 1), "high": 2**53 - 1, "count": 100_000}),
]


@pytest.mark.parametrize(("kind", "params"), LARGE)
def test_a_batch_of_100000_and_the_outcomes_after_it(kind: str, params: dict[str, Any]) -> None:
    profiles = Profiles(random.Random(0), 0)
    s = seed(f"large/{kind}/{params}")
    code, reader = CodeSide(s, profiles), ReaderSide(s, profiles)
    after = [
        ("roulette_spin", {"wheel": "double_zero"}),
        (kind, {**params, "count": 1000}),
        ("card_shuffle", {"decks": 1, "jokers": 0}),
    ]
    for k, p in [(kind, params), *after]:
        _, expected = code.draw(k, p)
        assert reader.draw(k, p) == expected, k
    assert kind in BATCH_KINDS


# -- dealing plans ----------------------------------------------------------------------------

#: The most players of each plan (docs/outcomes.md, the dealing plan table).
MAX_PLAYERS = {
    "four_card_poker": 6,
    "four_card_poker_six_card_bonus": 6,
    "let_it_ride_automated": 7,
    "let_it_ride_automated_six_card_bonus": 7,
    "caribbean_stud_automated": 7,
}


def test_every_dealing_plan_deals_what_the_documents_say() -> None:
    assert set(cards.DEAL_PLANS) == set(kinds.PLANS) == set(MAX_PLAYERS)
    profiles = Profiles(random.Random(0), 0)
    code = CodeSide(seed("deal"), profiles)
    for name, most in MAX_PLAYERS.items():
        assert cards.get_plan(name).max_players == most
        with pytest.raises(InvalidArgument):
            cards.deal(cards.draw(RandomSource(code.gen), cards.ShuffleParams()), name, most + 1)
        for players in range(1, most + 1):
            for _ in range(40):
                shuffle = cards.draw(RandomSource(code.gen), cards.ShuffleParams())
                expected = cards.deal(shuffle, name, players).to_record()
                got = kinds.deal(shuffle.to_record(), name, players)
                assert got == expected, (name, players)
