"""Round integrity through the live service (SQLite): every refusal of docs/outcomes-api.md
("Rounds and slots") over gRPC, each with nothing drawn (no generator byte), nothing logged
and its request id not consumed; the bonus game accepted only after a qualifying spin; voided
rounds; lab entries outside every round.

One service for the module (plaintext development mode: the caller is the default client with
every role, so it may void rounds too). Two replicas racing for one slot on PostgreSQL are in
test_replicas_postgres.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest

from rng_service._proto.rng.v1 import common_pb2, outcomes_pb2
from rng_service.log.entry import LogEntry
from tests.integration.conftest import Running, make_config, start

o = outcomes_pb2
PROFILE = "mega_fire_blaze_example"
SZ, DZ = o.WHEEL_TYPE_SINGLE_ZERO, o.WHEEL_TYPE_DOUBLE_ZERO


class Counted:
    """The service's generator, counting the bytes the log writer draws from it."""

    def __init__(self, running: Running) -> None:
        generator = running.service.generator
        assert generator is not None
        self.bytes = 0
        real = generator.random_bytes

        def random_bytes(n: int) -> bytes:
            self.bytes += n
            return real(n)

        generator.random_bytes = random_bytes  # type: ignore[method-assign]


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, Counted]]:
    r = start(
        make_config(tmp_path_factory.mktemp("rounds"), RNG_SERVICE__PROFILES__ALLOW_EXAMPLES="true")
    )
    try:
        yield r, Counted(r)
    finally:
        r.stop()


def ctx(rid: str, round_id: str, table_id: str = "RT", slot: str = "") -> common_pb2.RequestContext:
    return common_pb2.RequestContext(
        table_id=table_id, round_id=round_id, request_id=rid, slot=slot
    )


def call(r: Running, method: str, request: Any) -> Any:
    return getattr(r.outcomes, method)(request, timeout=30)


def size(r: Running) -> int:
    assert r.service.appender is not None
    return r.service.appender.tree_size


def outcomes_metric(r: Running) -> float:
    samples = [
        s.value
        for m in r.service.registry.collect()
        if m.name == "rng_outcomes"
        for s in m.samples
        if s.name == "rng_outcomes_total"
    ]
    return sum(samples)


def refused(svc: tuple[Running, Counted], method: str, request: Any) -> str:
    """The call's FAILED_PRECONDITION details, after checking that it drew no byte, logged
    nothing and counted no outcome."""
    r, counted = svc
    before = (size(r), counted.bytes, outcomes_metric(r))
    with pytest.raises(grpc.RpcError) as info:
        call(r, method, request)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION, info.value.details()
    assert (size(r), counted.bytes, outcomes_metric(r)) == before
    return info.value.details() or ""


# One request per kind with a slot of its own, as (method, make(request_id, round_id)).
KINDS: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "spin": ("SpinRoulette", lambda rid, rnd: o.SpinRouletteRequest(context=ctx(rid, rnd),
                                                                    wheel=DZ)),
    "fire_numbers": ("SelectFireNumbers", lambda rid, rnd: o.SelectFireNumbersRequest(
        context=ctx(rid, rnd), profile=PROFILE)),
    "jackpot": ("DrawJackpotTier", lambda rid, rnd: o.DrawJackpotTierRequest(
        context=ctx(rid, rnd), profile=PROFILE)),
    "dice": ("RollDice", lambda rid, rnd: o.RollDiceRequest(context=ctx(rid, rnd), count=3,
                                                            sides=6)),
    "shuffle": ("ShuffleCards", lambda rid, rnd: o.ShuffleCardsRequest(context=ctx(rid, rnd),
                                                                       decks=1)),
    "uniform_int": ("DrawUniformIntegers", lambda rid, rnd: o.DrawUniformIntegersRequest(
        context=ctx(rid, rnd), low=1, high=6, count=1)),
    "weighted_choice": ("DrawWeighted", lambda rid, rnd: o.DrawWeightedRequest(
        context=ctx(rid, rnd), weights=[1, 1], count=1)),
    "second-card": ("DrawUniformIntegers", lambda rid, rnd: o.DrawUniformIntegersRequest(
        context=ctx(rid, rnd, slot="second-card"), low=1, high=52, count=1)),
    "void": ("VoidRound", lambda rid, rnd: o.VoidRoundRequest(context=ctx(rid, rnd),
                                                              reason="table closed")),
}  # fmt: skip


@pytest.mark.parametrize("slot", sorted(KINDS))
def test_a_filled_slot_is_refused_and_the_same_request_id_replays(
    svc: tuple[Running, Counted], slot: str
) -> None:
    r, _ = svc
    method, make = KINDS[slot]
    rnd = f"slot-{slot}"
    first = call(r, method, make(f"{slot}-1", rnd))
    entry = LogEntry.decode(first.receipt.entry)
    assert (entry.slot, entry.version) == (slot, 3)
    logged_id = entry.request_id  # a void is logged as "void@<request id>"
    details = refused(svc, method, make(f"{slot}-2", rnd))
    if slot == "void":
        assert details == f"table 'RT' round '{rnd}' was already voided at log index " \
            f"{first.receipt.index}"  # fmt: skip
    else:
        assert details == (
            f"table 'RT' round '{rnd}': slot '{slot}' is already filled by request "
            f"'{logged_id}' at log index {first.receipt.index}; a game event is drawn once "
            "(retry with that request id to get its outcome again)"
        )
    again = call(r, method, make(f"{slot}-1", rnd))
    assert again.receipt.replayed
    assert again.receipt.entry == first.receipt.entry
    # The refused request id was not consumed: it draws in a round of its own.
    fresh = call(r, method, make(f"{slot}-2", f"{rnd}-fresh"))
    assert not fresh.receipt.replayed


def test_the_slots_of_one_round_are_filled_independently(svc: tuple[Running, Counted]) -> None:
    r, _ = svc
    for slot in ("dice", "shuffle", "uniform_int", "weighted_choice", "second-card", "jackpot"):
        method, make = KINDS[slot]
        assert (
            LogEntry.decode(call(r, method, make(f"all-{slot}", "ALL")).receipt.entry).slot == slot
        )


def test_fire_numbers_after_the_spin_and_a_double_zero_spin_with_them_are_refused(
    svc: tuple[Running, Counted],
) -> None:
    r, _ = svc
    spun = call(r, *_kind("spin", "late-spin", "ORD1"))
    details = refused(svc, *_kind("fire_numbers", "late-fire", "ORD1"))
    assert details == (
        "table 'RT' round 'ORD1': the Fire Numbers are selected before the round's spin "
        f"(58 Pa. Code 617b.7(e)); this round was spun at log index {spun.receipt.index}"
    )
    fire = call(r, *_kind("fire_numbers", "fire-2", "ORD2"))
    for wheel in (DZ, o.WHEEL_TYPE_DOUBLE_ZERO_AS_SINGLE_ZERO):
        details = refused(svc, "SpinRoulette", o.SpinRouletteRequest(
            context=ctx(f"dz-{wheel}", "ORD2"), wheel=wheel))  # fmt: skip
        assert f"this round has Fire Numbers (log index {fire.receipt.index})" in details
        assert "617b.7(a)" in details
    call(r, "SpinRoulette", o.SpinRouletteRequest(context=ctx("sz", "ORD2"), wheel=SZ))


def _kind(slot: str, rid: str, rnd: str) -> tuple[str, Any]:
    method, make = KINDS[slot]
    return method, make(rid, rnd)


def _bonus(rid: str, rnd: str, index: int | None = None) -> Any:
    request = o.PlayMegaFireBlazeBonusRequest(context=ctx(rid, rnd), profile=PROFILE)
    if index is not None:
        request.fire_numbers_index = index
    return request


def test_the_bonus_game_only_after_a_spin_on_a_fire_number(svc: tuple[Running, Counted]) -> None:
    r, _ = svc
    assert "this round has no Fire Number draw" in refused(svc, "PlayMegaFireBlazeBonus",
                                                           _bonus("b-none", "MFB0"))  # fmt: skip
    # Rounds are played until one spin misses and one lands on a Fire Number (bounded).
    missed = landed = None
    for i in range(3000):
        rnd = f"MFB{i + 1}"
        fire = call(r, "SelectFireNumbers", o.SelectFireNumbersRequest(
            context=ctx(f"f{i}", rnd), profile=PROFILE))  # fmt: skip
        if missed is None:  # before the spin: no bonus yet
            details = refused(svc, "PlayMegaFireBlazeBonus", _bonus(f"b-early-{i}", rnd))
            assert "617b.7(f)" in details
            assert "no spin yet" in details
        spin = call(r, "SpinRoulette", o.SpinRouletteRequest(context=ctx(f"s{i}", rnd), wheel=SZ))
        if int(spin.result.number) in fire.numbers:
            landed = (rnd, fire, spin)
        elif missed is None:
            missed = (rnd, fire, spin)
        if missed and landed:
            break
    assert missed is not None
    assert landed is not None
    rnd, fire, spin = missed
    details = refused(svc, "PlayMegaFireBlazeBonus", _bonus("b-miss", rnd))
    assert f"the round's spin at log index {spin.receipt.index} came to rest on " \
        f"{spin.result.number}, not on one of its Fire Numbers" in details  # fmt: skip
    rnd, fire, spin = landed
    details = refused(svc, "PlayMegaFireBlazeBonus", _bonus("b-ok", rnd, fire.receipt.index + 1))
    assert f"{fire.receipt.index + 1} is not this round's Fire Number draw" in details
    game = call(r, "PlayMegaFireBlazeBonus", _bonus("b-ok", rnd, fire.receipt.index))
    assert (game.fire_numbers_index, game.spin_index) == (fire.receipt.index, spin.receipt.index)
    assert game.fire_number_count == fire.count
    entry = LogEntry.decode(game.receipt.entry)
    assert entry.params["fire_numbers_index"] == fire.receipt.index
    assert entry.params["spin_index"] == spin.receipt.index
    # Once per round (617b.7(f): one bonus game, its odds for every bet type).
    assert "slot 'bonus' is already filled by request 'b-ok'" in refused(
        svc, "PlayMegaFireBlazeBonus", _bonus("b-twice", rnd)
    )


def test_the_multi_ball_draw_is_once_per_round(svc: tuple[Running, Counted]) -> None:
    """Its Blazing 7's trigger (617c.2(e)) is documented, not checked: a round without a spin,
    or whose spin missed 7, 17 and 27, takes one multi-ball draw like any other."""
    r, _ = svc

    def balls(rid: str, rnd: str) -> Any:
        return o.DrawMultiBallRequest(context=ctx(rid, rnd), wheel=DZ, balls=3)

    first = call(r, "DrawMultiBall", balls("mb-1", "B7"))
    assert LogEntry.decode(first.receipt.entry).params == {"wheel": "double_zero", "balls": 3}
    assert "slot 'multiball' is already filled by request 'mb-1'" in refused(
        svc, "DrawMultiBall", balls("mb-2", "B7")
    )


def test_a_voided_round_takes_nothing_more_but_lab_entries(svc: tuple[Running, Counted]) -> None:
    r, _ = svc
    call(r, *_kind("dice", "v-dice-before", "VOID1"))
    void = call(r, *_kind("void", "v-1", "VOID1"))
    entry = LogEntry.decode(void.receipt.entry)
    assert (entry.kind, entry.slot, entry.request_id) == ("round_void", "void", "void@v-1")
    assert entry.params["reason"] == "table closed"
    assert void.client == entry.client
    for slot in ("spin", "fire_numbers", "dice", "uniform_int", "second-card"):
        details = refused(svc, *_kind(slot, f"v-{slot}", "VOID1"))
        assert details == (
            f"table 'RT' round 'VOID1' was voided at log index {void.receipt.index}: nothing "
            "more is drawn in it; start a new round"
        )
    # A lab's batch is in a slot of its own: rounds never block it.
    batch = call(r, "DrawBatch", o.DrawBatchRequest(
        context=ctx("v-batch", "VOID1"), count=10, dice=o.DiceBatch(count=1, sides=6)))  # fmt: skip
    assert LogEntry.decode(batch.receipt.entry).slot == "lab/v-batch"


def test_lab_entries_fill_slots_of_their_own(svc: tuple[Running, Counted]) -> None:
    r, _ = svc
    call(r, *_kind("spin", "lab-spin", "LAB"))
    chunks = list(r.outcomes.StreamBatch(o.StreamBatchRequest(
        context=ctx("lab-s", "LAB"), count=20, chunk_size=10,
        uniform=o.UniformBatch(low=1, high=6)), timeout=30))  # fmt: skip
    assert [LogEntry.decode(c.receipt.entry).slot for c in chunks] == ["lab/lab-s/0", "lab/lab-s/1"]


BAD_SLOTS: list[tuple[str, Any, str]] = [
    ("SpinRoulette", o.SpinRouletteRequest(context=ctx("bs1", "BAD", slot="dice"), wheel=DZ),
     "only generic draws name their slot"),
    ("DrawUniformIntegers", o.DrawUniformIntegersRequest(context=ctx("bs2", "BAD", slot="spin"),
                                                         low=1, high=2, count=1), "not allowed"),
    ("DrawWeighted", o.DrawWeightedRequest(context=ctx("bs3", "BAD", slot="a/b"), weights=[1],
                                           count=1), "not allowed"),
    ("DrawBatch", o.DrawBatchRequest(context=ctx("bs4", "BAD", slot="x"), count=1,
                                     dice=o.DiceBatch(count=1, sides=6)), "a slot of its own"),
]  # fmt: skip


@pytest.mark.parametrize(("method", "request_", "text"), BAD_SLOTS,
                         ids=[m for m, _, _ in BAD_SLOTS])  # fmt: skip
def test_a_malformed_slot_is_invalid_argument(
    svc: tuple[Running, Counted], method: str, request_: Any, text: str
) -> None:
    r, counted = svc
    before = (size(r), counted.bytes)
    with pytest.raises(grpc.RpcError) as info:
        call(r, method, request_)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (info.value.details() or "").startswith("context.slot: ")
    assert text in (info.value.details() or "")
    assert (size(r), counted.bytes) == before


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (o.VoidRoundRequest(context=ctx("vb1", "VB"), reason=""), "reason"),
        (o.VoidRoundRequest(context=ctx("vb2", "VB"), reason="x" * 257), "reason"),
        (o.VoidRoundRequest(context=ctx("vb3", "VB"), reason="a\nb"), "reason"),
        (o.VoidRoundRequest(context=ctx("vb4", "VB"), client="someone-else", reason="x"),
         "client"),
        (o.VoidRoundRequest(reason="x"), "context"),
    ],
)  # fmt: skip
def test_a_malformed_void_is_invalid_argument(
    svc: tuple[Running, Counted], request_: Any, field: str
) -> None:
    r, _ = svc
    before = size(r)
    with pytest.raises(grpc.RpcError) as info:
        call(r, "VoidRound", request_)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (info.value.details() or "").startswith(f"{field}:")
    assert size(r) == before


def test_chains_number_every_tables_entries(svc: tuple[Running, Counted]) -> None:
    r, _ = svc
    entries = [LogEntry.decode(call(r, *_kind("dice", f"ch{i}", f"CH{i}")).receipt.entry)
               for i in range(3)]  # fmt: skip
    assert [e.table_seq for e in entries] == [entries[0].table_seq + i for i in range(3)]
    assert [e.table_prev for e in entries[1:]] == [e.index for e in entries[:2]]
    other = call(r, "RollDice", o.RollDiceRequest(context=ctx("ch-other", "CH0", table_id="NEW"),
                                                 count=1, sides=6))  # fmt: skip
    first = LogEntry.decode(other.receipt.entry)
    assert (first.table_seq, first.table_prev) == (1, None)


def test_a_mega_fire_blaze_round_and_a_jackpot_tier_refuse_each_other(
    svc: tuple[Running, Counted],
) -> None:
    """617b.7(g)(5)(ii): the jackpot's tier is drawn inside the bonus game, so a round with
    Fire Numbers takes no DrawJackpotTier, and one with a jackpot tier no Fire Numbers."""
    r, _ = svc
    fire = call(r, *_kind("fire_numbers", "mfb-fire", "JP1"))
    details = refused(svc, *_kind("jackpot", "mfb-jackpot", "JP1"))
    assert details == (
        f"table 'RT' round 'JP1': this is a Mega Fire Blaze round (its Fire Numbers at log "
        f"index {fire.receipt.index}): its jackpot's tier is drawn inside the bonus game (58 "
        "Pa. Code 617b.7(g)(5)(ii), PlayMegaFireBlazeBonus), not by DrawJackpotTier"
    )
    tier = call(r, *_kind("jackpot", "jp-first", "JP2"))
    details = refused(svc, *_kind("fire_numbers", "jp-then-fire", "JP2"))
    assert details.startswith(
        f"table 'RT' round 'JP2': this round drew a jackpot tier at log index "
        f"{tier.receipt.index}: in Mega Fire Blaze Roulette the jackpot's tier is drawn "
        "inside the bonus game (58 Pa. Code 617b.7(g)(5)(ii))"
    )
    # The refused request ids were not consumed.
    assert not call(r, *_kind("jackpot", "mfb-jackpot", "JP3")).receipt.replayed
