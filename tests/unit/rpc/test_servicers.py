"""OutcomeServicer with a fake context: the Fire Number -> bonus checks that need a second client
or a second profile, status codes through the one error table, and conversion details."""

from __future__ import annotations

from importlib import resources

import grpc
import pytest

from rng_service._proto.rng.v1 import common_pb2, outcomes_pb2
from rng_service.errors import InvalidArgument
from rng_service.outcomes.profiles import parse_profile
from rng_service.rpc.convert import field_prefix, json_int, shuffle_from_proto
from rng_service.rpc.profiles import ProfileRegistry
from rng_service.rpc.servicers import OutcomeServicer
from tests.unit.rpc.conftest import Aborted, ServicerHarness

EXAMPLE = "mega_fire_blaze_example"


def ctx(rid: str) -> common_pb2.RequestContext:
    return common_pb2.RequestContext(table_id="T", round_id="R", request_id=rid)


def other_profile() -> ProfileRegistry:
    text = resources.files("rng_service").joinpath("profiles", f"{EXAMPLE}.toml").read_text()
    text = text.replace(f'name = "{EXAMPLE}"', 'name = "other"').replace(
        "weights = [80, 12, 4, 2, 1, 1]", "weights = [1, 1, 1, 1, 1, 1]"
    )
    return ProfileRegistry([parse_profile(text.encode(), "other.toml")])


def fire(h: ServicerHarness, servicer: OutcomeServicer, profile: str = EXAMPLE) -> int:
    request = outcomes_pb2.SelectFireNumbersRequest(context=ctx("fire"), profile=profile)
    index: int = h.call("SelectFireNumbers", request, servicer).receipt.index
    return index


def bonus(h: ServicerHarness, index: int | None, profile: str = EXAMPLE) -> Aborted:
    request = outcomes_pb2.PlayMegaFireBlazeBonusRequest(context=ctx("bonus"), profile=profile)
    if index is not None:
        request.fire_numbers_index = index
    with pytest.raises(Aborted) as info:
        h.call("PlayMegaFireBlazeBonus", request)
    return info.value


def test_another_clients_fire_numbers_are_not_in_my_round(harness: ServicerHarness) -> None:
    """A round is the caller's own: another client's draw at the same table and round is not
    this round's, and the refusal says nothing about that entry (not its kind, owner or the
    log's size): naming its index, an index beyond the log, or none gives the same answer."""
    stranger = OutcomeServicer(
        appender=harness.appender,
        client_id="another-client",
        profiles=ProfileRegistry.load_builtin(),
    )
    index = fire(harness, stranger)
    answers = [bonus(harness, i) for i in (index, 10**9, None)]
    assert {a.code for a in answers} == {grpc.StatusCode.FAILED_PRECONDITION}
    assert answers[0].details == (
        "table 'T' round 'R': fire_numbers_index: this round has no Fire Number draw "
        "(SelectFireNumbers comes first, 58 Pa. Code 617b.7(e))"
    )
    assert answers[0].details == answers[1].details == answers[2].details
    assert harness.appender.tree_size == 1


def test_a_fire_number_draw_under_another_profile_is_refused(harness: ServicerHarness) -> None:
    elsewhere = OutcomeServicer(
        appender=harness.appender,
        client_id="unit-client",
        profiles=other_profile(),
    )
    index = fire(harness, elsewhere, profile="other")
    err = bonus(harness, index)
    assert err.code == grpc.StatusCode.FAILED_PRECONDITION
    assert "profile: the Fire Number draw at log index 0 was made under profile" in err.details
    assert harness.appender.tree_size == 1


def test_a_wrong_fire_numbers_index_is_refused(harness: ServicerHarness) -> None:
    index = fire(harness, harness.servicer)
    err = bonus(harness, index + 5)
    assert err.code == grpc.StatusCode.FAILED_PRECONDITION
    assert f"fire_numbers_index: {index + 5} is not this round's Fire Number draw, which is " \
        f"at log index {index}" in err.details  # fmt: skip
    assert harness.appender.tree_size == 1


def test_list_profiles_needs_no_context(harness: ServicerHarness) -> None:
    reply = harness.call("ListProfiles", outcomes_pb2.ListProfilesRequest())
    assert [p.id.name for p in reply.profiles] == [EXAMPLE]


def test_field_prefix_keeps_message_and_allowed() -> None:
    with pytest.raises(InvalidArgument) as info, field_prefix("dice"):
        raise InvalidArgument("sides", "1 is out of range", allowed="2..1000")
    assert info.value.field == "dice.sides"
    assert info.value.allowed == "2..1000"
    assert str(info.value) == "dice.sides: 1 is out of range (allowed: 2..1000)"


@pytest.mark.parametrize("value", [2**53, -(2**53), 2**63 - 1])
def test_json_int_refuses_what_an_entry_cannot_carry(value: int) -> None:
    with pytest.raises(InvalidArgument) as info:
        json_int(value, "low")
    assert info.value.field == "low"
    assert json_int(2**53 - 1, "low") == 2**53 - 1


def test_shuffle_with_plan_records_plan_and_players() -> None:
    request = outcomes_pb2.ShuffleCardsRequest(decks=1, plan="four_card_poker", players=6)
    shuffle = shuffle_from_proto(request)
    assert shuffle.to_record() == {"decks": 1, "jokers": 0, "plan": "four_card_poker", "players": 6}
    assert shuffle_from_proto(outcomes_pb2.ShuffleCardsRequest(decks=8, jokers=2)).to_record() == {
        "decks": 8,
        "jokers": 2,
    }
