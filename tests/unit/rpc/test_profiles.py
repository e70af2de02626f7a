"""The service's profile registry: what is served (operator directory, examples only when
allowed), lookups by name, version and SHA-256, and errors naming the field, file and key."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from rng_service.errors import InvalidArgument, NotFound
from rng_service.outcomes.profiles import (
    MegaFireBlazeProfile,
    builtin_profile_names,
    load_builtin_profile,
    parse_profile,
)
from rng_service.rpc.profiles import ProfileRegistry
from rng_service.settlement.paytables import load_builtin_paytables

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = "mega_fire_blaze_example"
EXAMPLE_TOML = (ROOT / "rng_service" / "profiles" / f"{EXAMPLE}.toml").read_text()


def operator_profile(name: str = "casino_mfb", version: int = 1) -> str:
    """The example's weights as an operator's own, non-example profile."""
    return (
        EXAMPLE_TOML.replace(f'name = "{EXAMPLE}"', f'name = "{name}"')
        .replace("version = 1", f"version = {version}")
        .replace("example = true", "example = false")
    )


def test_builtin_profiles_are_all_loaded_by_name() -> None:
    registry = ProfileRegistry.load_builtin()
    assert [p.id.name for p in registry.all()] == builtin_profile_names()
    example = registry.get(EXAMPLE)
    assert example.id == load_builtin_profile(EXAMPLE).id


@pytest.mark.parametrize("name", ["", "nope", "MEGA_FIRE_BLAZE_EXAMPLE"])
def test_unknown_profile_is_invalid_argument_listing_the_loaded_names(name: str) -> None:
    registry = ProfileRegistry.load_builtin()
    with pytest.raises(InvalidArgument) as info:
        registry.get(name)
    assert info.value.field == "profile"
    assert EXAMPLE in info.value.allowed


def test_two_documents_of_one_name_and_version_are_refused() -> None:
    p = load_builtin_profile(EXAMPLE)
    assert ProfileRegistry([p, p]).all() == (p,)  # the same document twice is one
    changed = parse_profile(EXAMPLE_TOML.replace("[70, 20, 8, 2]", "[70, 20, 8, 3]").encode(), "x")
    with pytest.raises(InvalidArgument, match="two documents"):
        ProfileRegistry([p, changed])


def test_no_profiles_says_so() -> None:
    with pytest.raises(InvalidArgument) as info:
        ProfileRegistry([]).get("x")
    assert info.value.allowed == "(no profiles loaded)"


def test_examples_are_withheld_unless_allowed(tmp_path: Path) -> None:
    registry = ProfileRegistry.load(directory=None, allow_examples=False)
    assert registry.all() == ()
    with pytest.raises(InvalidArgument, match="allow_examples") as info:
        registry.get(EXAMPLE)
    assert info.value.field == "profile"
    allowed = ProfileRegistry.load(directory=None, allow_examples=True)
    assert allowed.get(EXAMPLE).example is True


def test_operator_directory_with_profiles_and_paytables(tmp_path: Path) -> None:
    (tmp_path / "mfb.toml").write_text(operator_profile())
    (tmp_path / "mfb-v2.toml").write_text(
        operator_profile(version=2).replace("weights = [70, 20, 8, 2]", "weights = [70, 20, 8, 3]")
    )
    shutil.copy(ROOT / "rng_service" / "paytables" / "sic_bo.toml", tmp_path / "sic_bo.toml")
    (tmp_path / "notes.txt").write_text("not a profile")
    registry = ProfileRegistry.load(directory=tmp_path, allow_examples=False)
    names = [(d.id.name, d.id.version) for d in registry.all()]
    assert names == [("casino_mfb", 1), ("casino_mfb", 2), ("sic_bo", 1)]
    # Outcomes are drawn under the highest version; the older stays available by hash.
    drawn = registry.get("casino_mfb")
    assert drawn.id.version == 2
    old = registry.find("casino_mfb", version=1)
    assert isinstance(old, MegaFireBlazeProfile)
    assert registry.find(sha256=old.id.sha256) is old
    assert hashlib.sha256(old.canonical).hexdigest() == old.id.sha256
    assert registry.find("casino_mfb") is drawn
    paytable = registry.find("sic_bo")
    assert paytable == load_builtin_paytables()["sic_bo"]
    with pytest.raises(InvalidArgument, match="is a paytable"):
        registry.get("sic_bo")
    with pytest.raises(NotFound, match="version 3"):
        registry.find("casino_mfb", version=3)
    with pytest.raises(NotFound):
        registry.find("sic_bo", sha256=old.id.sha256)  # the hash is another document's
    with pytest.raises(InvalidArgument, match="name"):
        registry.find()


def test_directory_errors_name_the_file_and_key(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text(operator_profile().replace("[50, 20, 10", "[50, 0, 10"))
    with pytest.raises(InvalidArgument) as info:
        ProfileRegistry.load(directory=tmp_path, allow_examples=False)
    assert info.value.field == "bad.toml:bonus.multipliers.weights"
    with pytest.raises(InvalidArgument, match="not a directory") as info:
        ProfileRegistry.load(directory=tmp_path / "missing", allow_examples=False)
    assert info.value.field == "profiles.directory"


def test_an_example_in_the_directory_is_refused_without_allow_examples(tmp_path: Path) -> None:
    (tmp_path / "copy.toml").write_text(EXAMPLE_TOML.replace(EXAMPLE, "my_copy"))
    with pytest.raises(InvalidArgument, match="example") as info:
        ProfileRegistry.load(directory=tmp_path, allow_examples=False)
    assert info.value.field == "copy.toml:example"
    registry = ProfileRegistry.load(directory=tmp_path, allow_examples=True)
    assert sorted(d.id.name for d in registry.all()) == [EXAMPLE, "my_copy"]


def test_a_name_is_one_kind_of_document() -> None:
    paytable = load_builtin_paytables()["sic_bo"]
    profile = parse_profile(operator_profile(name="sic_bo", version=2).encode(), "x.toml")
    with pytest.raises(InvalidArgument, match="names both"):
        ProfileRegistry([paytable, profile])
