"""GetProfile serves the canonical bytes the entries name by SHA-256: an entry's outcome is
re-derived from the entry and those bytes alone, by replaying the lab generator (the harness's
fixed seed) exactly as the log writer draws (a fresh RandomSource per outcome)."""

from __future__ import annotations

import hashlib
import json

import grpc
import pytest

from rng_service._proto.rng.v1 import common_pb2, outcomes_pb2
from rng_service.drbg import DeterministicGenerator
from rng_service.outcomes import fire_numbers, mega_fire_blaze
from rng_service.outcomes.profiles import MegaFireBlazeProfile
from rng_service.sampling import RandomSource
from rng_service.settlement.documents import document_from_canonical
from tests.unit.rpc.conftest import Aborted, ServicerHarness

EXAMPLE = "mega_fire_blaze_example"


def ctx(rid: str) -> common_pb2.RequestContext:
    return common_pb2.RequestContext(table_id="T", round_id="R", request_id=rid)


def test_an_entrys_outcome_is_rederived_from_the_entry_and_the_served_bytes(
    harness: ServicerHarness,
) -> None:
    fire = harness.call(
        "SelectFireNumbers",
        outcomes_pb2.SelectFireNumbersRequest(context=ctx("f"), profile=EXAMPLE),
    )
    assert fire.profile.example is True  # the response says the profile is an example
    # The round's spin lands on a Fire Number (another replica's generator: the harness's
    # generator draws the bonus game next, as the replay below expects).
    number = json.loads(fire.receipt.entry)["outcome"]["numbers"][0]
    harness.spin_landing_on(number, wheel="single_zero", round_id="R")
    bonus = harness.call(
        "PlayMegaFireBlazeBonus",
        outcomes_pb2.PlayMegaFireBlazeBonusRequest(
            context=ctx("b"), profile=EXAMPLE, fire_numbers_index=fire.receipt.index
        ),
    )
    assert bonus.profile.example is True
    entries = [json.loads(r.receipt.entry) for r in (fire, bonus)]
    sha = entries[0]["profile_sha256"]
    assert entries[0]["params"]["profile"]["sha256"] == sha

    served = harness.call("GetProfile", outcomes_pb2.GetProfileRequest(sha256=sha))
    assert hashlib.sha256(served.canonical).hexdigest() == sha
    assert served.profile.id.sha256 == sha
    assert served.profile.example is True
    assert b'"example":true' in served.canonical  # the canonical form carries the flag
    profile = document_from_canonical(served.canonical, "served")
    assert isinstance(profile, MegaFireBlazeProfile)

    # Replay: the harness's seed, one fresh RandomSource per outcome, in log order.
    generator = DeterministicGenerator(entropy_input=bytes(32), nonce=bytes(16))
    first = fire_numbers.draw(RandomSource(generator), fire_numbers.FireNumberParams(profile))
    assert first.to_record() == entries[0]["outcome"]
    params = mega_fire_blaze.BonusParams(profile, entries[1]["params"]["fire_number_count"])
    second = mega_fire_blaze.draw(RandomSource(generator), params)
    assert second.to_record() == entries[1]["outcome"]


def test_get_profile_by_name_and_version(harness: ServicerHarness) -> None:
    by_name = harness.call("GetProfile", outcomes_pb2.GetProfileRequest(name=EXAMPLE))
    assert by_name.profile.kind == "mega_fire_blaze"
    by_version = harness.call("GetProfile", outcomes_pb2.GetProfileRequest(name=EXAMPLE, version=1))
    assert by_version == by_name
    listed = harness.call("ListProfiles", outcomes_pb2.ListProfilesRequest())
    assert listed.profiles[0] == by_name.profile


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        (outcomes_pb2.GetProfileRequest(name=EXAMPLE, version=2), grpc.StatusCode.NOT_FOUND),
        (outcomes_pb2.GetProfileRequest(sha256="00" * 32), grpc.StatusCode.NOT_FOUND),
        (outcomes_pb2.GetProfileRequest(name="nope"), grpc.StatusCode.NOT_FOUND),
        (outcomes_pb2.GetProfileRequest(), grpc.StatusCode.INVALID_ARGUMENT),
        (outcomes_pb2.GetProfileRequest(sha256="d065"), grpc.StatusCode.INVALID_ARGUMENT),
    ],
)
def test_get_profile_errors(
    harness: ServicerHarness, request_: outcomes_pb2.GetProfileRequest, code: grpc.StatusCode
) -> None:
    with pytest.raises(Aborted) as info:
        harness.call("GetProfile", request_)
    assert info.value.code == code
    field = request_.WhichOneof("selector") or "name"
    assert info.value.details.startswith(f"{field}:")
    assert harness.appender.tree_size == 0
