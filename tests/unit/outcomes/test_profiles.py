"""Game profiles: loading, validation errors, canonical form and identity."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

import pytest

from rng_service.errors import InvalidArgument
from rng_service.outcomes import profiles as P

EXAMPLE = "mega_fire_blaze_example"


def _example_text() -> str:
    root = Path(__file__).resolve().parents[3]
    return (root / "rng_service" / "profiles" / f"{EXAMPLE}.toml").read_text()


def test_builtin_example_loads_and_is_marked_example() -> None:
    assert EXAMPLE in P.builtin_profile_names()
    p = P.load_builtin_profile(EXAMPLE)
    assert p.example is True
    assert p.id.name == EXAMPLE
    assert p.id.version == 1
    assert p.fire_counts.values == (1, 2, 3, 4, 5, 10)
    assert p.segments.mode == "independent"
    assert set(p.jackpot.values) == set(P.JACKPOT_TIERS)
    assert [r.bet for r in p.payouts] == list(P.BET_TYPES)


def test_identity_is_sha256_of_canonical_json() -> None:
    text = _example_text()
    p = P.parse_profile(text.encode(), "x.toml")
    doc = tomllib.loads(text)
    assert p.id.sha256 == hashlib.sha256(P.canonical_json(doc)).hexdigest()
    # Comments and layout do not change the identity; a value does.
    reformatted = "# another comment\n" + text.replace(" = ", "=")
    assert P.parse_profile(reformatted.encode(), "y.toml").id == p.id
    changed = text.replace("weights = [70, 20, 8, 2]", "weights = [70, 20, 8, 3]")
    assert P.parse_profile(changed.encode(), "z.toml").id.sha256 != p.id.sha256


def test_canonical_json_rfc8785_rules() -> None:
    assert P.canonical_json({"b": 1, "a": [True, "x\n\u00e9"], "c": {}}) == (
        '{"a":[true,"x\\n\u00e9"],"b":1,"c":{}}'.encode()
    )
    # Members sort by UTF-16 code units: U+1F600 (D83D DE00) before U+FB33.
    assert P.canonical_json({"\ufb33": 1, "\U0001f600": 2}) == (
        '{"\U0001f600":2,"\ufb33":1}'.encode()
    )
    assert P.canonical_json('\x01"\\') == b'"\\u0001\\"\\\\"'
    with pytest.raises(InvalidArgument):
        P.canonical_json({"a": 1.5})
    with pytest.raises(InvalidArgument):
        P.canonical_json(2**53)


def _bad(text: str) -> InvalidArgument:
    with pytest.raises(InvalidArgument) as exc:
        P.parse_profile(text.encode(), "bad.toml")
    return exc.value


@pytest.mark.parametrize(
    ("old", "new", "field", "allowed"),
    [
        (
            "counts = [1, 2, 3, 4, 5, 10]",
            "counts = [1, 2, 3, 4, 6, 10]",
            "bad.toml:fire_numbers.counts",
            "1, 2, 3, 4, 5, 10",
        ),
        (
            "weights = [80, 12, 4, 2, 1, 1]",
            "weights = [80, 12, 4, 2, 1, 0]",
            "bad.toml:fire_numbers.weights",
            "integers 1..",
        ),
        (
            "weights = [80, 12, 4, 2, 1, 1]",
            "weights = [80, 12, 4, 2, 1]",
            "bad.toml:fire_numbers.weights",
            "",
        ),
        (
            "values = [1, 2, 3, 4, 5, 10, 15, 50]",
            "values = [1, 2, 3, 4, 5, 10, 15, 20]",
            "bad.toml:bonus.multipliers.values",
            "1, 2, 3, 4, 5, 10, 15, 50",
        ),
        (
            'designations = ["x2", "x3", "x5", "jackpot"]',
            'designations = ["x2", "x3", "x4", "jackpot"]',
            "bad.toml:bonus.segments.designations",
            "x2, x3, x5, jackpot",
        ),
        (
            'mode = "independent"',
            'mode = "random"',
            "bad.toml:bonus.segments.mode",
            "independent, shuffled, fixed",
        ),
        (
            'tiers = ["mini", "minor", "major", "grand"]',
            'tiers = ["mini", "minor", "major", "mega"]',
            "bad.toml:jackpot.tiers",
            "mini, minor, major, grand",
        ),
        (
            'tiers = ["mini", "minor", "major", "grand"]\nweights = [70, 20, 8, 2]',
            'tiers = ["mini", "minor", "major"]\nweights = [70, 20, 8]',
            "bad.toml:jackpot.tiers",
            "mini, minor, major, grand",
        ),
        ("max = 5999", "max = 6000", "bad.toml:payout.straight_up.max", "5999"),
        ("min = 29\nmax = 999", "min = 28\nmax = 999", "bad.toml:payout.line.min", "29..999"),
        ("schema = 1", "schema = 2", "bad.toml:schema", "the integer 1"),
        ('game = "mega_fire_blaze"', 'game = "blackjack"', "bad.toml:game", "mega_fire_blaze"),
        ("example = true", 'example = "yes"', "bad.toml:example", "true, false"),
        ("version = 1", "version = 0", "bad.toml:version", "1.."),
        ("version = 1", "version = 1\ncolour = 1", "bad.toml:colour", "schema"),
        ("[payout.line]\n", "[payout.line]\nbonus = 2\n", "bad.toml:payout.line.bonus", "factor"),
    ],
)
def test_validation_errors_name_file_key_and_allowed(old, new, field, allowed) -> None:  # type: ignore[no-untyped-def]
    text = _example_text()
    assert old in text
    err = _bad(text.replace(old, new, 1))
    assert err.field == field
    assert allowed in err.allowed


def test_fixed_and_shuffled_segment_modes() -> None:
    text = _example_text()
    seg_old = (
        'mode = "independent"\ndesignations = ["x2", "x3", "x5", "jackpot"]\n'
        "weights = [40, 30, 15, 15]"
    )
    assert seg_old in text
    for mode in ("fixed", "shuffled"):
        layout = f'mode = "{mode}"\nlayout = ["x2", "x2", "x3", "x3", "x5", "jackpot"]'
        p = P.parse_profile(text.replace(seg_old, layout).encode(), "f.toml")
        assert p.segments.mode == mode
        assert p.segments.layout == ("x2", "x2", "x3", "x3", "x5", "jackpot")
    err = _bad(text.replace(seg_old, 'mode = "fixed"\nlayout = ["x2"]'))
    assert err.field == "bad.toml:bonus.segments.layout"
    err = _bad(text.replace(seg_old, 'mode = "fixed"\nlayout = ["x2"]\nweights = [1]'))
    assert err.field == "bad.toml:bonus.segments.weights"


@pytest.mark.parametrize(
    ("old", "said"),
    [
        ("schema = 1\n", "bad.toml:schema: missing (expected: the integer 1)"),
        ("example = true\n", "bad.toml:example: missing (expected: true, false)"),
        ('game = "mega_fire_blaze"\n', "bad.toml:game: missing (expected: mega_fire_blaze)"),
    ],
)
def test_a_missing_key_says_what_is_expected(old: str, said: str) -> None:
    """Issue 35, finding 5: not just "bad.toml:schema: missing"."""
    text = _example_text()
    assert old in text
    assert str(_bad(text.replace(old, "", 1))) == said


def test_floats_and_bad_toml_refused() -> None:
    text = _example_text()
    err = _bad(text.replace("version = 1", "version = 1\ndescription2 = 1.5"))
    assert err.field.startswith("bad")
    err = _bad("not = [toml")
    assert err.field == "bad.toml"


def test_load_profile_file_and_unknown_builtin(tmp_path: Path) -> None:
    f = tmp_path / "mine.toml"
    f.write_text(_example_text())
    assert P.load_profile_file(f).id == P.load_builtin_profile(EXAMPLE).id
    with pytest.raises(InvalidArgument) as exc:
        P.load_profile_file(tmp_path / "missing.toml")
    assert "missing.toml" in exc.value.field
    with pytest.raises(InvalidArgument) as exc:
        P.load_builtin_profile("nope")
    assert exc.value.field == "profile"
    assert EXAMPLE in exc.value.allowed


def test_payout_rule_clamps() -> None:
    rule = P.PayoutRule("line", 4, 3, 29, 999)
    assert rule.odds(1) == 29
    assert rule.odds(30) == 40
    assert rule.odds(10_000) == 999
