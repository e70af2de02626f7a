"""The service's profile registry: loaded once, looked up by name, errors name the field."""

from __future__ import annotations

import pytest

from rng_service.errors import InvalidArgument
from rng_service.outcomes.profiles import builtin_profile_names, load_builtin_profile
from rng_service.service.profiles import ProfileRegistry


def test_builtin_profiles_are_all_loaded_by_name() -> None:
    registry = ProfileRegistry.load_builtin()
    assert [p.id.name for p in registry.all()] == builtin_profile_names()
    example = registry.get("mega_fire_blaze_example")
    assert example.id == load_builtin_profile("mega_fire_blaze_example").id


@pytest.mark.parametrize("name", ["", "nope", "MEGA_FIRE_BLAZE_EXAMPLE"])
def test_unknown_profile_is_invalid_argument_listing_the_loaded_names(name: str) -> None:
    registry = ProfileRegistry.load_builtin()
    with pytest.raises(InvalidArgument) as info:
        registry.get(name)
    assert info.value.field == "profile"
    assert "mega_fire_blaze_example" in info.value.allowed


def test_two_profiles_of_one_name_are_refused() -> None:
    p = load_builtin_profile("mega_fire_blaze_example")
    with pytest.raises(InvalidArgument, match="two profiles"):
        ProfileRegistry([p, p])


def test_no_profiles_says_so() -> None:
    with pytest.raises(InvalidArgument) as info:
        ProfileRegistry([]).get("x")
    assert info.value.allowed == "(no profiles loaded)"
