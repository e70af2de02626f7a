"""Every outcome RPC end to end over gRPC: receipts verified with the key from GetPublicKeys,
idempotency (identical replay, ALREADY_EXISTS on other parameters), bad input that draws and
logs nothing, the Fire Number -> spin -> bonus flow, session-linked entries, batches and streams.
(The round rules' refusals have a module of their own: test_rounds.py.)

One service serves the whole module (deterministic harness entropy); every test uses its own
request ids, and checks the log's size around what it does."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from rng_service._proto.rng.v1 import common_pb2, log_pb2, outcomes_pb2
from rng_service.errors import IntegrityError
from rng_service.log.note import NoteVerifier
from rng_service.log.receipt import Receipt, VerifiedReceipt, verify_receipt
from rng_service.outcomes import cards, roulette
from rng_service.outcomes.profiles import load_builtin_profile
from tests.integration.conftest import Running, make_config, start

PROFILE = "mega_fire_blaze_example"
SZ = outcomes_pb2.WHEEL_TYPE_SINGLE_ZERO
DZ = outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    tmp: Path = tmp_path_factory.mktemp("outcome-rpcs")
    r = start(make_config(tmp, RNG_SERVICE__PROFILES__ALLOW_EXAMPLES="true"))
    try:
        yield r
    finally:
        r.stop()


def ctx(
    request_id: str, table_id: str = "T1", round_id: str = "", session_id: str = ""
) -> common_pb2.RequestContext:
    """The context of ``request_id``, in round ``R-<request_id>`` unless told (a round's slot
    is filled once)."""
    return common_pb2.RequestContext(
        table_id=table_id, round_id=round_id or f"R-{request_id}", request_id=request_id,
        session_id=session_id,
    )  # fmt: skip


def mfb_round(svc: Running, prefix: str, table_id: str = "MFB") -> tuple[str, Any, Any]:
    """A Mega Fire Blaze round whose single zero spin came to rest on one of its Fire Numbers
    (617b.7(f)): rounds are played until one does (about one in 27; bounded)."""
    for i in range(3000):
        round_id = f"{prefix}-{i}"
        drawn = fire(svc, f"{prefix}-fire-{i}", table_id=table_id, round_id=round_id)
        spin = svc.spin(f"{prefix}-spin-{i}", wheel=SZ, table_id=table_id, round_id=round_id)
        if int(spin.result.number) in drawn.numbers:
            return round_id, drawn, spin
    raise AssertionError("no spin came to rest on a Fire Number in 3,000 rounds")


def size(svc: Running) -> int:
    return svc.service.appender.tree_size  # type: ignore[union-attr]


def receipt_of(reply: Any) -> Receipt:
    r = reply.receipt
    return Receipt(
        index=r.index,
        entry=r.entry,
        leaf_hash=r.leaf_hash,
        inclusion_proof=tuple(r.inclusion_proof),
        tree_size=r.tree_size,
        checkpoint=r.checkpoint,
        replayed=r.replayed,
    )


def verified(svc: Running, reply: Any) -> VerifiedReceipt:
    keys = svc.log.GetPublicKeys(log_pb2.GetPublicKeysRequest(), timeout=10).keys
    receipt = reply.receipt if isinstance(reply.receipt, Receipt) else receipt_of(reply)
    return verify_receipt(receipt, [NoteVerifier.from_verifier_key(k.verifier_key) for k in keys])


def call(svc: Running, method: str, request: Any) -> Any:
    return getattr(svc.outcomes, method)(request, timeout=60)


def fail(svc: Running, method: str, request: Any) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call(svc, method, request)
    return info.value


# --- per kind: end to end with receipt verification ---


def test_list_profiles_gives_name_version_and_canonical_sha256(svc: Running) -> None:
    reply = svc.outcomes.ListProfiles(outcomes_pb2.ListProfilesRequest(), timeout=10)
    by_name = {p.id.name: p for p in reply.profiles}
    expected = load_builtin_profile(PROFILE)
    got = by_name[PROFILE]
    assert (got.id.version, got.id.sha256) == (expected.id.version, expected.id.sha256)
    assert got.kind == "mega_fire_blaze"
    assert got.example is True


def test_multiball_gives_distinct_compartments_logged_with_a_receipt(svc: Running) -> None:
    reply = call(
        svc,
        "DrawMultiBall",
        outcomes_pb2.DrawMultiBallRequest(context=ctx("mb-1"), wheel=SZ, balls=3),
    )
    entry = verified(svc, reply).entry
    assert entry.kind == "multiball"
    assert entry.params == {"wheel": "single_zero", "balls": 3}
    numbers = [b.number for b in reply.balls]
    assert len(set(numbers)) == 3
    assert numbers == [b["number"] for b in entry.outcome["balls"]]
    for b in reply.balls:
        assert roulette.WHEEL_ORDER[roulette.WheelType.SINGLE_ZERO][b.wheel_position] == b.number
        assert not b.void
    every = call(
        svc,
        "DrawMultiBall",
        outcomes_pb2.DrawMultiBallRequest(context=ctx("mb-2"), wheel=DZ, balls=38),
    )
    assert sorted(b.number for b in every.balls) == sorted(
        roulette.WHEEL_ORDER[roulette.WheelType.DOUBLE_ZERO]
    )


def fire(svc: Running, request_id: str, **ids: str) -> outcomes_pb2.SelectFireNumbersResponse:
    reply: outcomes_pb2.SelectFireNumbersResponse = call(
        svc,
        "SelectFireNumbers",
        outcomes_pb2.SelectFireNumbersRequest(context=ctx(request_id, **ids), profile=PROFILE),
    )
    return reply


def bonus_request(request_id: str, index: int | None, **ids: str) -> Any:
    request = outcomes_pb2.PlayMegaFireBlazeBonusRequest(
        context=ctx(request_id, **ids), profile=PROFILE
    )
    if index is not None:
        request.fire_numbers_index = index
    return request


def test_fire_numbers_then_bonus_takes_the_count_from_the_log(svc: Running) -> None:
    sha = load_builtin_profile(PROFILE).id.sha256
    round_id, drawn, spin = mfb_round(svc, "mfb-1")
    entry = verified(svc, drawn).entry
    assert entry.kind == "fire_numbers"
    assert entry.profile_sha256 == sha
    assert drawn.profile.sha256 == sha
    assert drawn.count in (1, 2, 3, 4, 5, 10)
    assert len(drawn.numbers) == drawn.count == len(set(drawn.numbers))
    assert all(0 <= n <= 36 for n in drawn.numbers)
    assert [str(n) for n in drawn.numbers] == entry.outcome["numbers"]

    reply = call(
        svc, "PlayMegaFireBlazeBonus", bonus_request("bonus-1", None, table_id="MFB",
                                                     round_id=round_id)
    )  # fmt: skip
    entry = verified(svc, reply).entry
    assert entry.kind == "mega_fire_blaze_bonus"
    assert entry.profile_sha256 == sha
    assert entry.params["fire_numbers_index"] == drawn.receipt.index
    assert entry.params["spin_index"] == spin.receipt.index
    assert entry.params["fire_number_count"] == drawn.count
    assert reply.fire_number_count == drawn.count
    assert reply.fire_numbers_index == drawn.receipt.index
    assert reply.spin_index == spin.receipt.index
    assert len(reply.cells) == 36
    assert [c.index for c in reply.cells if c.filled] == sorted(reply.fill_order)
    assert len(reply.fill_order) == drawn.count
    for c in reply.cells:
        assert (c.segment, c.position) == divmod(c.index, 6)
        assert (c.multiplier == 0) == (not c.filled) == (c.value == 0)
    assert len(reply.segments) == 6
    assert all(
        s.designation != outcomes_pb2.SEGMENT_DESIGNATION_UNSPECIFIED for s in reply.segments
    )
    jackpots = sum(s.jackpot_value for s in reply.segments)
    assert reply.total == sum(c.value for c in reply.cells) + jackpots == entry.outcome["total"]
    assert [o.bet for o in reply.odds] == [1, 2, 3, 4, 5]
    assert all(o.odds >= 29 for o in reply.odds)


def test_bonus_naming_the_fire_number_draw(svc: Running) -> None:
    round_id, drawn, _ = mfb_round(svc, "mfb-2")
    before = size(svc)
    wrong = bonus_request("b-x1", drawn.receipt.index + 1, table_id="MFB", round_id=round_id)
    err = fail(svc, "PlayMegaFireBlazeBonus", wrong)
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert f"fire_numbers_index: {drawn.receipt.index + 1} is not this round's" in (
        err.details() or ""
    )
    assert size(svc) == before
    right = bonus_request("b-x1", drawn.receipt.index, table_id="MFB", round_id=round_id)
    ok = call(svc, "PlayMegaFireBlazeBonus", right)
    assert not ok.receipt.replayed  # the refused request id was not consumed
    assert ok.fire_numbers_index == drawn.receipt.index


def test_jackpot_tier(svc: Running) -> None:
    reply = call(
        svc,
        "DrawJackpotTier",
        outcomes_pb2.DrawJackpotTierRequest(context=ctx("jp-1"), profile=PROFILE),
    )
    entry = verified(svc, reply).entry
    values = {
        outcomes_pb2.JACKPOT_TIER_MINI: 20,
        outcomes_pb2.JACKPOT_TIER_MINOR: 100,
        outcomes_pb2.JACKPOT_TIER_MAJOR: 500,
        outcomes_pb2.JACKPOT_TIER_GRAND: 2000,
    }
    assert reply.value == values[reply.tier] == entry.outcome["value"]
    assert entry.kind == "jackpot_tier"
    assert entry.profile_sha256 == reply.profile.sha256 == load_builtin_profile(PROFILE).id.sha256


def test_sic_bo_dice(svc: Running) -> None:
    reply = call(
        svc, "RollDice", outcomes_pb2.RollDiceRequest(context=ctx("dice-1"), count=3, sides=6)
    )
    entry = verified(svc, reply).entry
    assert entry.kind == "dice_roll"
    assert entry.params == {"count": 3, "sides": 6}
    assert entry.profile_sha256 == ""
    assert list(reply.faces) == entry.outcome["faces"]
    assert len(reply.faces) == 3
    assert all(1 <= f <= 6 for f in reply.faces)
    assert reply.total == sum(reply.faces)


def test_shuffle_is_a_permutation_of_the_shoe(svc: Running) -> None:
    reply = call(
        svc,
        "ShuffleCards",
        outcomes_pb2.ShuffleCardsRequest(context=ctx("sh-1"), decks=2, jokers=1),
    )
    entry = verified(svc, reply).entry
    assert entry.kind == "card_shuffle"
    assert entry.params == {"decks": 2, "jokers": 1}
    shoe = cards.canonical_shoe(cards.ShuffleParams(decks=2, jokers=1))
    assert len(reply.cards) == 106
    assert Counter(reply.cards) == Counter(shoe)
    assert [cards.card_label(c) for c in reply.cards] == entry.outcome["cards"]
    assert not reply.hands
    assert not reply.plan


def test_dealing_plan_hands_are_rebuilt_from_the_logged_shuffle(svc: Running) -> None:
    reply = call(
        svc,
        "ShuffleCards",
        outcomes_pb2.ShuffleCardsRequest(
            context=ctx("deal-1"), decks=1, plan="let_it_ride_automated", players=3
        ),
    )
    entry = verified(svc, reply).entry
    assert entry.params == {"decks": 1, "jokers": 0, "plan": "let_it_ride_automated", "players": 3}
    # A dispute: the entry alone gives every hand.
    rebuilt = cards.deal(cards.ShuffleOutcome.from_record(entry.outcome), entry.params["plan"], 3)
    got = {h.position: (list(h.cards), list(h.shoe_indices)) for h in reply.hands}
    assert got == {h.position: (list(h.labels()), list(h.shoe_indices)) for h in rebuilt.hands}
    assert set(got) == {"player1", "player2", "player3", "community", "discard"}
    assert [len(got[f"player{i}"][0]) for i in (1, 2, 3)] == [3, 3, 3]
    assert got["player1"][0] == [cards.card_label(c) for c in reply.cards[:3]]
    assert reply.next_index == 12
    assert (reply.plan, reply.players) == ("let_it_ride_automated", 3)


def test_uniform_integers_with_and_without_replacement(svc: Running) -> None:
    reply = call(
        svc,
        "DrawUniformIntegers",
        outcomes_pb2.DrawUniformIntegersRequest(context=ctx("u-1"), low=-5, high=5, count=200),
    )
    entry = verified(svc, reply).entry
    assert entry.kind == "uniform_int"
    assert list(reply.values) == entry.outcome["values"]
    assert set(reply.values) == set(range(-5, 6))  # 200 draws of 11 values: all seen
    distinct = call(
        svc,
        "DrawUniformIntegers",
        outcomes_pb2.DrawUniformIntegersRequest(
            context=ctx("u-2"), low=1, high=10, count=10, distinct=True
        ),
    )
    verified(svc, distinct)
    assert sorted(distinct.values) == list(range(1, 11))
    top = 2**53 - 1
    edge = call(
        svc,
        "DrawUniformIntegers",
        outcomes_pb2.DrawUniformIntegersRequest(context=ctx("u-3"), low=-top, high=top, count=5),
    )
    assert verified(svc, edge).entry.outcome["values"] == list(edge.values)


def test_weighted_choice(svc: Running) -> None:
    reply = call(
        svc,
        "DrawWeighted",
        outcomes_pb2.DrawWeightedRequest(context=ctx("w-1"), weights=[1, 2, 997], count=100),
    )
    entry = verified(svc, reply).entry
    assert entry.kind == "weighted_choice"
    assert entry.params == {"weights": [1, 2, 997], "count": 100}
    assert list(reply.indices) == entry.outcome["indices"]
    assert all(i in (0, 1, 2) for i in reply.indices)
    assert Counter(reply.indices)[2] > 80  # P(index 2) = 0.997


# --- idempotency for every kind ---

# method, request for a request id, and the same request with one parameter changed
IDEMPOTENT: list[tuple[str, Callable[[str], Any], Callable[[str], Any]]] = [
    (
        "DrawMultiBall",
        lambda rid: outcomes_pb2.DrawMultiBallRequest(context=ctx(rid), wheel=SZ, balls=3),
        lambda rid: outcomes_pb2.DrawMultiBallRequest(context=ctx(rid), wheel=SZ, balls=4),
    ),
    (
        "SelectFireNumbers",
        lambda rid: outcomes_pb2.SelectFireNumbersRequest(context=ctx(rid), profile=PROFILE),
        lambda rid: outcomes_pb2.SelectFireNumbersRequest(
            context=ctx(rid, round_id="R2"), profile=PROFILE
        ),
    ),
    (
        "DrawJackpotTier",
        lambda rid: outcomes_pb2.DrawJackpotTierRequest(context=ctx(rid), profile=PROFILE),
        lambda rid: outcomes_pb2.DrawJackpotTierRequest(
            context=ctx(rid, table_id="T2"), profile=PROFILE
        ),
    ),
    (
        "RollDice",
        lambda rid: outcomes_pb2.RollDiceRequest(context=ctx(rid), count=3, sides=6),
        lambda rid: outcomes_pb2.RollDiceRequest(context=ctx(rid), count=2, sides=6),
    ),
    (
        "ShuffleCards",
        lambda rid: outcomes_pb2.ShuffleCardsRequest(
            context=ctx(rid), decks=1, plan="caribbean_stud_automated", players=2
        ),
        lambda rid: outcomes_pb2.ShuffleCardsRequest(
            context=ctx(rid), decks=1, plan="caribbean_stud_automated", players=3
        ),
    ),
    (
        "DrawUniformIntegers",
        lambda rid: outcomes_pb2.DrawUniformIntegersRequest(
            context=ctx(rid), low=1, high=6, count=5
        ),
        lambda rid: outcomes_pb2.DrawUniformIntegersRequest(
            context=ctx(rid), low=1, high=6, count=5, distinct=True
        ),
    ),
    (
        "DrawWeighted",
        lambda rid: outcomes_pb2.DrawWeightedRequest(context=ctx(rid), weights=[1, 2], count=3),
        lambda rid: outcomes_pb2.DrawWeightedRequest(context=ctx(rid), weights=[2, 1], count=3),
    ),
    (
        "DrawBatch",
        lambda rid: outcomes_pb2.DrawBatchRequest(
            context=ctx(rid), count=50, dice=outcomes_pb2.DiceBatch(count=3, sides=6)
        ),
        lambda rid: outcomes_pb2.DrawBatchRequest(
            context=ctx(rid), count=51, dice=outcomes_pb2.DiceBatch(count=3, sides=6)
        ),
    ),
]


@pytest.mark.parametrize(("method", "make", "other"), IDEMPOTENT, ids=[m for m, _, _ in IDEMPOTENT])
def test_replay_is_identical_and_other_parameters_are_already_exists(
    svc: Running, method: str, make: Callable[[str], Any], other: Callable[[str], Any]
) -> None:
    rid = f"idem-{method}"
    first = call(svc, method, make(rid))
    before = size(svc)
    again = call(svc, method, make(rid))
    assert again.receipt.replayed
    assert not first.receipt.replayed
    again.receipt.replayed = False
    assert again == first  # every field, the receipt's entry, proof and checkpoint included
    err = fail(svc, method, other(rid))
    assert err.code() == grpc.StatusCode.ALREADY_EXISTS
    assert "request_id" in (err.details() or "")
    assert size(svc) == before


def test_bonus_replay_is_identical(svc: Running) -> None:
    round_id, drawn, _ = mfb_round(svc, "mfb-idem")
    request = bonus_request("bonus-idem", drawn.receipt.index, table_id="MFB", round_id=round_id)
    first = call(svc, "PlayMegaFireBlazeBonus", request)
    before = size(svc)
    again = call(svc, "PlayMegaFireBlazeBonus", request)
    assert again.receipt.replayed
    again.receipt.replayed = False
    assert again == first
    # The same request id with other parameters: ALREADY_EXISTS (fire_numbers_index, when
    # given, is a parameter of the request).
    request.ClearField("fire_numbers_index")
    assert fail(svc, "PlayMegaFireBlazeBonus", request).code() == grpc.StatusCode.ALREADY_EXISTS
    assert size(svc) == before


# --- bad input: INVALID_ARGUMENT naming the field, nothing drawn or logged ---

C = ctx("bad")
BAD: list[tuple[str, Any, str]] = [
    ("DrawMultiBall", outcomes_pb2.DrawMultiBallRequest(context=C, wheel=SZ, balls=0), "balls"),
    ("DrawMultiBall", outcomes_pb2.DrawMultiBallRequest(context=C, wheel=SZ, balls=38), "balls"),
    (
        "DrawMultiBall",
        outcomes_pb2.DrawMultiBallRequest(
            context=C, wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO_AS_SINGLE_ZERO, balls=3
        ),
        "wheel",
    ),
    ("DrawMultiBall", outcomes_pb2.DrawMultiBallRequest(wheel=SZ, balls=3), "context"),
    (
        "SelectFireNumbers",
        outcomes_pb2.SelectFireNumbersRequest(context=C, profile="no_such_profile"),
        "profile",
    ),
    ("SelectFireNumbers", outcomes_pb2.SelectFireNumbersRequest(context=C), "profile"),
    ("DrawJackpotTier", outcomes_pb2.DrawJackpotTierRequest(context=C, profile="nope"), "profile"),
    (
        "PlayMegaFireBlazeBonus",
        outcomes_pb2.PlayMegaFireBlazeBonusRequest(context=C, profile="nope", fire_numbers_index=0),
        "profile",
    ),
    ("RollDice", outcomes_pb2.RollDiceRequest(context=C, count=0, sides=6), "count"),
    ("RollDice", outcomes_pb2.RollDiceRequest(context=C, count=101, sides=6), "count"),
    ("RollDice", outcomes_pb2.RollDiceRequest(context=C, count=3, sides=1), "sides"),
    ("ShuffleCards", outcomes_pb2.ShuffleCardsRequest(context=C, decks=0), "decks"),
    ("ShuffleCards", outcomes_pb2.ShuffleCardsRequest(context=C, decks=9), "decks"),
    ("ShuffleCards", outcomes_pb2.ShuffleCardsRequest(context=C, decks=1, jokers=3), "jokers"),
    (
        "ShuffleCards",
        outcomes_pb2.ShuffleCardsRequest(context=C, decks=1, plan="blackjack", players=2),
        "plan",
    ),
    (
        "ShuffleCards",
        outcomes_pb2.ShuffleCardsRequest(context=C, decks=1, plan="four_card_poker", players=0),
        "players",
    ),
    (
        "ShuffleCards",
        outcomes_pb2.ShuffleCardsRequest(context=C, decks=1, plan="four_card_poker", players=7),
        "players",
    ),
    (
        "ShuffleCards",
        outcomes_pb2.ShuffleCardsRequest(context=C, decks=2, plan="four_card_poker", players=2),
        "decks",
    ),
    ("ShuffleCards", outcomes_pb2.ShuffleCardsRequest(context=C, decks=1, players=2), "players"),
    (
        "DrawUniformIntegers",
        outcomes_pb2.DrawUniformIntegersRequest(context=C, low=5, high=4, count=1),
        "high",
    ),
    (
        "DrawUniformIntegers",
        outcomes_pb2.DrawUniformIntegersRequest(context=C, low=1, high=6, count=0),
        "count",
    ),
    (
        "DrawUniformIntegers",
        outcomes_pb2.DrawUniformIntegersRequest(context=C, low=1, high=6, count=10_001),
        "count",
    ),
    (
        "DrawUniformIntegers",
        outcomes_pb2.DrawUniformIntegersRequest(context=C, low=1, high=6, count=7, distinct=True),
        "count",
    ),
    (
        "DrawUniformIntegers",
        outcomes_pb2.DrawUniformIntegersRequest(context=C, low=-(2**53), high=0, count=1),
        "low",
    ),
    (
        "DrawUniformIntegers",
        outcomes_pb2.DrawUniformIntegersRequest(context=C, low=0, high=2**63 - 1, count=1),
        "high",
    ),
    ("DrawWeighted", outcomes_pb2.DrawWeightedRequest(context=C, weights=[], count=1), "weights"),
    (
        "DrawWeighted",
        outcomes_pb2.DrawWeightedRequest(context=C, weights=[3, 0, 1], count=1),
        "weights[1]",
    ),
    (
        "DrawWeighted",
        outcomes_pb2.DrawWeightedRequest(context=C, weights=[1, 2**53], count=1),
        "weights[1]",
    ),
    ("DrawWeighted", outcomes_pb2.DrawWeightedRequest(context=C, weights=[1, 2], count=0), "count"),
    (
        "DrawBatch",
        outcomes_pb2.DrawBatchRequest(
            context=C,
            count=10,
            roulette=outcomes_pb2.RouletteBatch(
                wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO_AS_SINGLE_ZERO
            ),
        ),
        "roulette.wheel",
    ),
    (
        "DrawBatch",
        outcomes_pb2.DrawBatchRequest(context=C, count=10, roulette=outcomes_pb2.RouletteBatch()),
        "roulette.wheel",
    ),
    (
        "DrawBatch",
        outcomes_pb2.DrawBatchRequest(
            context=C, count=0, roulette=outcomes_pb2.RouletteBatch(wheel=SZ)
        ),
        "count",
    ),
    (
        "DrawBatch",
        outcomes_pb2.DrawBatchRequest(
            context=C, count=100_001, roulette=outcomes_pb2.RouletteBatch(wheel=SZ)
        ),
        "count",
    ),
    ("DrawBatch", outcomes_pb2.DrawBatchRequest(context=C, count=10), "kind"),
    (
        "DrawBatch",
        outcomes_pb2.DrawBatchRequest(
            context=C, count=10, dice=outcomes_pb2.DiceBatch(count=3, sides=1)
        ),
        "dice.sides",
    ),
    (
        "DrawBatch",
        outcomes_pb2.DrawBatchRequest(
            context=C, count=10, uniform=outcomes_pb2.UniformBatch(low=2, high=1)
        ),
        "uniform.high",
    ),
]


@pytest.mark.parametrize(
    ("method", "request_", "field"), BAD, ids=[f"{m}-{f}-{i}" for i, (m, _, f) in enumerate(BAD)]
)
def test_bad_input_is_invalid_argument_naming_the_field_and_logs_nothing(
    svc: Running, method: str, request_: Any, field: str
) -> None:
    before = size(svc)
    err = fail(svc, method, request_)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err.details()
    details = err.details() or ""
    assert details.startswith(field + ":"), details
    assert "allowed" in details or field == "context"
    assert size(svc) == before


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (
            outcomes_pb2.StreamBatchRequest(
                context=C, count=0, uniform=outcomes_pb2.UniformBatch(low=1, high=6)
            ),
            "count",
        ),
        (
            outcomes_pb2.StreamBatchRequest(
                context=C, count=10_000_001, uniform=outcomes_pb2.UniformBatch(low=1, high=6)
            ),
            "count",
        ),
        (
            outcomes_pb2.StreamBatchRequest(
                context=C,
                count=10,
                chunk_size=100_001,
                uniform=outcomes_pb2.UniformBatch(low=1, high=6),
            ),
            "chunk_size",
        ),
        (outcomes_pb2.StreamBatchRequest(context=C, count=10), "kind"),
        (
            outcomes_pb2.StreamBatchRequest(
                context=C,
                count=100_000,
                chunk_size=99,  # 1,011 chunks: more than 1,000 entries for one call
                uniform=outcomes_pb2.UniformBatch(low=1, high=6),
            ),
            "chunk_size",
        ),
    ],
)
def test_bad_stream_request_is_invalid_argument_and_logs_nothing(
    svc: Running, request_: Any, field: str
) -> None:
    before = size(svc)
    with pytest.raises(grpc.RpcError) as info:
        list(svc.outcomes.StreamBatch(request_, timeout=30))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (info.value.details() or "").startswith(field + ":")
    assert size(svc) == before


# --- linked sequences ---


def test_successive_spins_of_one_session_are_linked_in_the_log(svc: Running) -> None:
    replies = [
        svc.spin(f"streak-{i}", table_id="RU1", round_id=f"R{i}", session_id="streak-42")
        for i in range(4)
    ]
    svc.spin("not-in-streak", table_id="RU1", round_id="R9")
    entries = [verified(svc, r).entry for r in replies]
    assert all(e.session_id == "streak-42" for e in entries)
    assert [e.index for e in entries] == sorted(e.index for e in entries)
    storage = svc.service._storage  # the dispute lookup RPC is not ours; read the store
    assert storage is not None
    linked = storage.find_entries(session_id="streak-42")
    assert [r.index for r in linked] == [e.index for e in entries]


# --- batches and streams ---


def test_batch_of_100000_spins_is_one_entry_whose_receipt_covers_all(svc: Running) -> None:
    before = size(svc)
    reply = call(
        svc,
        "DrawBatch",
        outcomes_pb2.DrawBatchRequest(
            context=ctx("batch-spins"), count=100_000, roulette=outcomes_pb2.RouletteBatch(wheel=DZ)
        ),
    )
    assert size(svc) == before + 1
    entry = verified(svc, reply).entry
    assert entry.kind == "roulette_spin_batch"
    assert entry.params == {"wheel": "double_zero", "count": 100_000}
    assert reply.WhichOneof("result") == "roulette"
    numbers = list(reply.roulette.numbers)
    assert numbers == entry.outcome["numbers"]
    order = roulette.WHEEL_ORDER[roulette.WheelType.DOUBLE_ZERO]
    assert [order[p] for p in reply.roulette.wheel_positions] == numbers
    counts = Counter(numbers)
    assert set(counts) == set(order)
    assert all(2000 < n < 3300 for n in counts.values())  # mean 2632, sd 50
    # The entry's bytes, hence its leaf hash and the signed root, cover every spin: changing
    # the last one breaks the receipt.
    last = reply.receipt.entry.rindex(b'"' + numbers[-1].encode() + b'"')
    other = b'"0"' if numbers[-1] != "0" else b'"1"'
    forged = receipt_of(reply)
    forged = Receipt(
        index=forged.index,
        entry=forged.entry[:last] + other + forged.entry[last + len(numbers[-1]) + 2 :],
        leaf_hash=forged.leaf_hash,
        inclusion_proof=forged.inclusion_proof,
        tree_size=forged.tree_size,
        checkpoint=forged.checkpoint,
        replayed=False,
    )
    keys = svc.log.GetPublicKeys(log_pb2.GetPublicKeysRequest(), timeout=10).keys
    with pytest.raises(IntegrityError):
        verify_receipt(forged, [NoteVerifier.from_verifier_key(k.verifier_key) for k in keys])


def test_batch_dice_and_uniform(svc: Running) -> None:
    dice_reply = call(
        svc,
        "DrawBatch",
        outcomes_pb2.DrawBatchRequest(
            context=ctx("batch-dice"), count=1000, dice=outcomes_pb2.DiceBatch(count=3, sides=6)
        ),
    )
    entry = verified(svc, dice_reply).entry
    assert entry.kind == "dice_roll_batch"
    assert entry.params == {"dice": 3, "sides": 6, "count": 1000}
    assert dice_reply.dice.dice == 3
    assert len(dice_reply.dice.faces) == 3000
    assert set(dice_reply.dice.faces) == set(range(1, 7))
    uni = call(
        svc,
        "DrawBatch",
        outcomes_pb2.DrawBatchRequest(
            context=ctx("batch-uni"), count=5000, uniform=outcomes_pb2.UniformBatch(low=-3, high=3)
        ),
    )
    entry = verified(svc, uni).entry
    assert entry.kind == "uniform_int_batch"
    assert list(uni.uniform.values) == entry.outcome["values"]
    assert set(uni.uniform.values) == set(range(-3, 4))


def test_stream_sends_chunks_each_logged_with_its_receipt_and_replays(svc: Running) -> None:
    request = outcomes_pb2.StreamBatchRequest(
        context=ctx("stream-1"),
        count=25_000,
        chunk_size=10_000,
        uniform=outcomes_pb2.UniformBatch(low=1, high=1000),
    )
    before = size(svc)
    chunks = list(svc.outcomes.StreamBatch(request, timeout=60))
    assert size(svc) == before + 3
    assert [(c.chunk, c.first, c.chunks) for c in chunks] == [
        (0, 0, 3),
        (1, 10_000, 3),
        (2, 20_000, 3),
    ]
    assert [len(c.uniform.values) for c in chunks] == [10_000, 10_000, 5_000]
    for c in chunks:
        entry = verified(svc, c).entry
        assert entry.request_id == f"stream-1/{c.chunk}"
        assert entry.kind == "uniform_int_batch"
        assert entry.params["stream"] == {"count": 25_000, "chunk_size": 10_000, "chunk": c.chunk}
        assert entry.outcome["values"] == list(c.uniform.values)
        assert not c.receipt.replayed
    again = list(svc.outcomes.StreamBatch(request, timeout=60))
    assert size(svc) == before + 3
    assert all(c.receipt.replayed for c in again)
    assert [c.uniform.values for c in again] == [c.uniform.values for c in chunks]
    request.chunk_size = 5_000
    with pytest.raises(grpc.RpcError) as info:
        list(svc.outcomes.StreamBatch(request, timeout=60))
    assert info.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert size(svc) == before + 3


# --- the Python client ---


def test_python_client_returns_plain_values_and_verifiable_receipts(svc: Running) -> None:
    from rng_service.rpc.client import ClientError, RngClient

    round_id, fired, _ = mfb_round(svc, "cl-mfb", table_id="CL")
    ids = {"table_id": "CL", "round_id": round_id}
    with RngClient(f"127.0.0.1:{svc.port}") as client:
        assert [p["id"]["name"] for p in client.profiles()] == [PROFILE]
        attempt = round_id.rsplit("-", 1)[1]  # mfb_round's request ids end like its rounds
        drawn = client.fire_numbers(profile=PROFILE, request_id=f"cl-mfb-fire-{attempt}", **ids)
        assert drawn.receipt.replayed  # the round's Fire Numbers, asked for again
        assert drawn.receipt.index == fired.receipt.index
        assert drawn.outcome["count"] == len(drawn.outcome["numbers"])
        game = client.mega_fire_blaze_bonus(profile=PROFILE, request_id="cl-bonus", **ids)
        assert game.outcome["fire_number_count"] == drawn.outcome["count"]
        assert game.outcome["segments"][0]["designation"] in ("x2", "x3", "x5", "jackpot")
        assert game.outcome["segments"][0]["jackpot_tier"] in (
            "",
            "mini",
            "minor",
            "major",
            "grand",
        )
        roll = client.roll_dice(count=3, sides=6, request_id="cl-dice", **ids)
        assert roll.outcome["total"] == sum(roll.outcome["faces"])
        dealt = client.shuffle(plan="four_card_poker", players=2, request_id="cl-deal", **ids)
        assert [h["position"] for h in dealt.outcome["hands"]] == ["player1", "player2", "dealer"]
        # A Mega Fire Blaze round's jackpot tier is drawn inside its bonus game (617b.7(g)(5)(ii)):
        # a stand-alone tier belongs to a round of its own.
        tier = client.jackpot_tier(
            profile=PROFILE, request_id="cl-jp", table_id="CL", round_id=f"{round_id}-jp"
        )
        assert tier.outcome["tier"] in ("mini", "minor", "major", "grand")
        balls = client.multiball(wheel="single_zero", balls=3, request_id="cl-mb", **ids)
        assert balls.outcome["balls"][0]["color"] in ("red", "black", "green")
        values = client.uniform(low=1, high=3, count=4, request_id="cl-u", **ids)
        assert all(1 <= v <= 3 for v in values.outcome["values"])
        picks = client.weighted(weights=[1, 1], count=4, request_id="cl-w", **ids)
        assert all(i in (0, 1) for i in picks.outcome["indices"])
        named = client.uniform(low=1, high=3, request_id="cl-u2", slot="second-draw", **ids)
        assert verified(svc, named).entry.slot == "second-draw"
        for result in (drawn, game, roll, dealt, tier, balls, values, picks):
            verified(svc, result)
        with pytest.raises(ClientError) as info:
            client.roll_dice(count=0, sides=6, request_id="cl-bad", **ids)
        assert info.value.code == "INVALID_ARGUMENT"
