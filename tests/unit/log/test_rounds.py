"""rng_service.log.rounds: slot names and the order rules of a round, as pure functions.

The sequencer's use of them (lookups under the writers' lock, groups, chains) is in
test_appender_rounds.py; the live service in tests/integration/test_rounds.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from rng_service.errors import InvalidArgument, RoundOrderViolation, RoundVoided, SlotFilled
from rng_service.log import rounds
from rng_service.log.entry import GeneratorRef, LogEntry

ANY = {"table_id": "T1", "round_id": "R1"}


def filled(index: int, kind: str, **fields: Any) -> rounds.Filled:
    entry = LogEntry(
        index=index, timestamp_ns=0, kind=kind, params=fields.get("params", {}),
        outcome=fields.get("outcome", {}), client="c", table_id="T1", round_id="R1",
        session_id="", request_id=f"q{index}", generator=GeneratorRef("g", 0, False),
        profile_sha256=fields.get("profile", ""), slot=rounds.KIND_SLOTS.get(kind, kind),
        table_seq=1,
    )  # fmt: skip
    return rounds.Filled(index, lambda: entry)


def spin(index: int, number: str, wheel: str = "single_zero") -> rounds.Filled:
    return filled(
        index, "roulette_spin", params={"wheel": wheel}, outcome={"final": {"number": number}}
    )


def fire(index: int, numbers: list[str], profile: str = "p1") -> rounds.Filled:
    return filled(
        index, "fire_numbers", outcome={"count": len(numbers), "numbers": numbers},
        profile=profile,
    )  # fmt: skip


def check(kind: str, slots: dict[str, rounds.Filled], **request: Any) -> dict[str, Any]:
    return rounds.check(
        kind=kind,
        slot=request.get("slot", rounds.effective_slot(kind, "", "rid")),
        params=request.get("params", {}),
        profile_sha256=request.get("profile", "p1"),
        filled=slots,
        game_server=request.get("game_server", False),
        **ANY,
    )


# -- slot names -------------------------------------------------------------------------------


def test_each_game_kind_fills_its_own_slot() -> None:
    assert {k: rounds.effective_slot(k, "", "rid") for k in rounds.KIND_SLOTS} == {
        "roulette_spin": "spin", "fire_numbers": "fire_numbers",
        "mega_fire_blaze_bonus": "bonus", "jackpot_tier": "jackpot", "dice_roll": "dice",
        "card_shuffle": "shuffle", "multiball": "multiball", "round_void": "void",
    }  # fmt: skip
    # An unnamed generic draw is its kind's; a named one the client's; a lab entry its own.
    assert rounds.effective_slot("uniform_int", "", "rid") == "uniform_int"
    assert rounds.effective_slot("weighted_choice", "pick-2", "rid") == "pick-2"
    for kind in sorted(rounds.LAB_KINDS):
        assert rounds.effective_slot(kind, "", "s1/4") == "lab/s1/4"


@pytest.mark.parametrize("name", ["a", "draw-1", "Z.9_x:y-", "x" * 64])
def test_a_generic_draw_names_its_slot(name: str) -> None:
    assert rounds.named_slot("uniform_int", name) == name
    assert rounds.named_slot("weighted_choice", name) == name


def test_naming_the_default_or_nothing_is_the_default() -> None:
    assert rounds.named_slot("uniform_int", "") == ""
    assert rounds.named_slot("uniform_int", "uniform_int") == ""
    assert rounds.named_slot("roulette_spin", "spin") == ""
    assert rounds.named_slot("roulette_spin", "") == ""


@pytest.mark.parametrize(
    "name",
    ["spin", "bonus", "void", "multiball", "x" * 65, "a/b", "a b", "é", "lab/x", "a\n"],
)
def test_a_generic_draw_cannot_take_a_game_or_malformed_slot(name: str) -> None:
    with pytest.raises(InvalidArgument, match=r"^context\.slot: .*allowed: 1 to 64 characters"):
        rounds.named_slot("uniform_int", name)


@pytest.mark.parametrize(
    ("kind", "name"),
    [("roulette_spin", "fire_numbers"), ("dice_roll", "x"), ("roulette_spin_batch", "lab/x"),
     ("raw_output_session", "anything"), ("round_void", "spin")],
)  # fmt: skip
def test_other_kinds_fill_a_fixed_slot(kind: str, name: str) -> None:
    with pytest.raises(InvalidArgument, match=r"^context\.slot: .* only generic draws name"):
        rounds.named_slot(kind, name)


def test_format_1_kinds_fill_the_slot_of_their_kind() -> None:
    for kind, slot in rounds.KIND_SLOTS.items():
        assert rounds.slot_of_legacy(kind) == (None if kind == "round_void" else slot)
    assert rounds.slot_of_legacy("uniform_int") == "uniform_int"  # no named slots in format 1
    assert rounds.slot_of_legacy("weighted_choice") == "weighted_choice"
    for kind in sorted(rounds.LAB_KINDS):
        assert rounds.slot_of_legacy(kind) is None


# -- the rules ----------------------------------------------------------------------------------


def test_a_filled_slot_is_refused_naming_table_round_slot_and_index() -> None:
    with pytest.raises(SlotFilled) as info:
        check("dice_roll", {"dice": filled(41, "dice_roll")})
    assert str(info.value) == (
        "table 'T1' round 'R1': slot 'dice' is already filled by request 'q41' at log index 41; "
        "a game event is drawn once (retry with that request id to get its outcome again)"
    )
    assert (info.value.slot, info.value.index, info.value.table_id) == ("dice", 41, "T1")
    assert check("dice_roll", {}) == {}


def test_a_voided_round_takes_nothing_more() -> None:
    void = {"void": filled(9, "round_void")}
    for kind in ("roulette_spin", "dice_roll", "uniform_int", "mega_fire_blaze_bonus"):
        with pytest.raises(RoundVoided, match=r"voided at log index 9: nothing more is drawn"):
            check(kind, void)
    with pytest.raises(RoundVoided, match="was already voided at log index 9"):
        check("round_void", void)
    assert check("round_void", {"spin": spin(3, "7")}) == {}  # a round in play can be voided
    assert check("dice_roll_batch", void, slot="lab/x") == {}  # labs are no round's


def test_fire_numbers_come_before_the_spin() -> None:
    assert check("fire_numbers", {}) == {}
    with pytest.raises(RoundOrderViolation, match=r"617b\.7\(e\).*spun at log index 4") as info:
        check("fire_numbers", {"spin": spin(4, "3")})
    assert info.value.rule == "fire_numbers_after_spin"


@pytest.mark.parametrize("wheel", ["double_zero", "double_zero_as_single_zero"])
def test_a_round_with_fire_numbers_spins_on_a_single_zero_wheel(wheel: str) -> None:
    slots = {"fire_numbers": fire(2, ["5"])}
    assert check("roulette_spin", slots, params={"wheel": "single_zero"}) == {}
    with pytest.raises(RoundOrderViolation, match=r"617b\.7\(a\).*WHEEL_TYPE_SINGLE_ZERO"):
        check("roulette_spin", slots, params={"wheel": wheel})
    assert check("roulette_spin", {}, params={"wheel": wheel}) == {}  # no Fire Numbers


def test_the_bonus_follows_a_spin_on_a_fire_number() -> None:
    draw = fire(2, ["5", "17"])
    assert check("mega_fire_blaze_bonus", {"fire_numbers": draw, "spin": spin(3, "17")}) == {
        "fire_number_count": 2,
        "fire_numbers_index": 2,
        "spin_index": 3,
    }
    # fire_numbers_index may be given: it must be the round's draw.
    assert check(
        "mega_fire_blaze_bonus", {"fire_numbers": draw, "spin": spin(3, "5")},
        params={"fire_numbers_index": 2},
    )["spin_index"] == 3  # fmt: skip
    cases: list[tuple[dict[str, rounds.Filled], dict[str, Any], str, str]] = [
        ({}, {}, "bonus_without_fire_numbers", "no Fire Number draw"),
        ({"spin": spin(3, "5")}, {}, "bonus_without_fire_numbers", "no Fire Number draw"),
        ({"fire_numbers": draw}, {}, "bonus_without_spin", r"617b\.7\(f\).*no spin yet"),
        ({"fire_numbers": draw, "spin": spin(3, "6")}, {}, "bonus_not_triggered",
         r"came to rest on 6, not on one of its Fire Numbers \['5', '17'\]"),
        ({"fire_numbers": draw, "spin": spin(3, "5")}, {"fire_numbers_index": 1},
         "bonus_fire_numbers_index", "fire_numbers_index: 1 is not this round's"),
        ({"fire_numbers": fire(2, ["5"], profile="p2"), "spin": spin(3, "5")}, {},
         "bonus_profile", "profile: the Fire Number draw at log index 2"),
    ]  # fmt: skip
    for slots, params, rule, text in cases:
        with pytest.raises(RoundOrderViolation, match=text) as info:
            check("mega_fire_blaze_bonus", slots, params=params)
        assert info.value.rule == rule
    with pytest.raises(SlotFilled):  # once per round
        check("mega_fire_blaze_bonus", {"fire_numbers": draw, "spin": spin(3, "5"),
                                        "bonus": filled(4, "mega_fire_blaze_bonus")})  # fmt: skip


@pytest.mark.parametrize("number", ["7", "8", "00"])
def test_the_multi_ball_draw_is_once_per_round_without_a_trigger_check(number: str) -> None:
    # 617c.2(e) is documented, not checked (docs/outcomes.md, "Round rules").
    assert check("multiball", {}, params={"wheel": "double_zero"}) == {}
    assert check("multiball", {"spin": spin(6, number, "double_zero")}) == {}
    with pytest.raises(SlotFilled):
        check("multiball", {"multiball": filled(7, "multiball")})


def test_kinds_without_order_rules_only_fill_their_slot() -> None:
    # (multiball: a lab's draw of the balls alone; a game server's has its rule, below)
    for kind in ("dice_roll", "card_shuffle", "uniform_int", "weighted_choice", "multiball"):
        assert check(kind, {"spin": spin(1, "3"), "fire_numbers": fire(0, ["3"])}) == {}
    assert check("jackpot_tier", {"spin": spin(1, "3"), "dice": filled(0, "dice_roll")}) == {}


# -- Mega Fire Blaze: no DrawJackpotTier in a round with Fire Numbers (617b.7(g)(5)(ii)) -------


@pytest.mark.parametrize(
    "slots",
    [
        {"fire_numbers": fire(0, ["3"])},
        {"fire_numbers": fire(0, ["3"]), "spin": spin(1, "3"),
         "bonus": filled(2, "mega_fire_blaze_bonus")},
    ],
    ids=["after-fire-numbers", "after-bonus"],
)  # fmt: skip
def test_a_mega_fire_blaze_round_refuses_a_jackpot_tier(slots: dict[str, rounds.Filled]) -> None:
    with pytest.raises(RoundOrderViolation) as e:
        check("jackpot_tier", slots)
    assert e.value.rule == "jackpot_in_mega_fire_blaze"
    assert "table 'T1' round 'R1'" in str(e.value)
    assert "617b.7(g)(5)(ii)" in str(e.value)


def test_a_jackpot_tier_drawn_first_refuses_the_fire_numbers() -> None:
    with pytest.raises(RoundOrderViolation) as e:
        check("fire_numbers", {"jackpot": filled(0, "jackpot_tier")})
    assert e.value.rule == "jackpot_in_mega_fire_blaze"
    assert "log index 0" in str(e.value)
    assert "617b.7(g)(5)(ii)" in str(e.value)
    assert check("jackpot_tier", {}) == {}  # alone, a jackpot tier is a draw of its own


# -- Blazing 7's: a game server's three balls after a spin on 7, 17 or 27 (617c.2(e)) ---------

BALLS = {"wheel": "double_zero", "balls": 3}


@pytest.mark.parametrize("number", ["7", "17", "27"])
def test_a_game_servers_multiball_follows_a_spin_on_a_blazing_7(number: str) -> None:
    slots = {"spin": spin(4, number, "double_zero")}
    assert check("multiball", slots, params=BALLS, game_server=True) == {"spin_index": 4}


@pytest.mark.parametrize(
    ("slots", "rule", "said"),
    [
        ({}, "multiball_without_spin", "no spin yet"),
        ({"dice": filled(0, "dice_roll")}, "multiball_without_spin", "no spin yet"),
        ({"spin": spin(4, "8", "double_zero")}, "multiball_not_triggered", "came to rest on 8"),
        ({"spin": spin(4, "00", "double_zero")}, "multiball_not_triggered", "on 00, not on 7"),
        ({"spin": spin(4, "7", "single_zero")}, "multiball_wheel", "single_zero wheel"),
        # A lab batch of the same table and round is no slot of the round: no spin.
        ({"lab/b1": spin(4, "7", "double_zero")}, "multiball_without_spin", "no spin yet"),
    ],
    ids=["empty", "no-spin", "not-7", "double-zero", "other-wheel", "lab-batch"],
)  # fmt: skip
def test_a_game_servers_multiball_without_its_trigger_is_refused(
    slots: dict[str, rounds.Filled], rule: str, said: str
) -> None:
    with pytest.raises(RoundOrderViolation) as e:
        check("multiball", slots, params=BALLS, game_server=True)
    assert e.value.rule == rule
    assert said in str(e.value)
    assert "table 'T1' round 'R1'" in str(e.value)
    assert "617c.2" in str(e.value)
    assert rounds.needs_a_filled_round("multiball", True)
    assert not rounds.needs_a_filled_round("multiball", False)


def test_the_trigger_numbers_are_the_outcomes_blazing_7s() -> None:
    from rng_service.outcomes.multiball import BLAZING_7S_NUMBERS

    assert rounds.BLAZING_7S_TRIGGERS == frozenset(BLAZING_7S_NUMBERS) == {"7", "17", "27"}


def test_a_labs_multiball_is_drawn_alone() -> None:
    assert check("multiball", {}, params=BALLS) == {}
    assert check("multiball", {"spin": spin(4, "8", "double_zero")}, params=BALLS) == {}
