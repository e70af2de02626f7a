"""Paytable documents: the shipped ones, payouts, identity, and errors naming file and key."""

from __future__ import annotations

import hashlib
import re
import tomllib
from fractions import Fraction
from pathlib import Path

import pytest

from rng_service.errors import InvalidArgument
from rng_service.outcomes.profiles import canonical_json
from rng_service.settlement import paytables as P

SHIPPED = Path(__file__).resolve().parents[3] / "rng_service" / "paytables"


def test_every_game_ships_one_document_with_its_citation() -> None:
    docs = P.load_builtin_paytables()
    assert sorted(docs) == sorted(P.GAMES)
    tables = {game: list(doc.paytables) for game, doc in docs.items()}
    assert tables == {
        "roulette_up": ["A", "B", "C", "D", "E"],
        "blazing_7s": ["1", "2", "3", "4"],
        "sic_bo": ["A", "B"],
        "mega_fire_blaze": ["base"],
        "six_card_bonus": ["A", "B", "C", "D", "E"],
    }
    assert docs["roulette_up"].citation == "58 Pa. Code 617b.4(h)(1)"
    assert all(not doc.example for doc in docs.values())
    assert docs["six_card_bonus"].kind == "paytable:six_card_bonus"


def test_a_few_cells_as_printed() -> None:
    docs = P.load_builtin_paytables()
    assert str(docs["roulette_up"].table("D").payout("8")) == "800 to 1"
    assert str(docs["roulette_up"].table("B").payout("2")) == "push"
    assert docs["mega_fire_blaze"].table("base").returns("corner") == Fraction(15, 2)
    assert docs["blazing_7s"].table("4").returns("one_colour") == 12
    assert docs["sic_bo"].table("B").returns("one_of_a_kind_3") == 13
    assert docs["six_card_bonus"].table("D").returns("six_card_royal_flush_diamonds") == 200_001
    assert list(docs["six_card_bonus"].table("D").pays)[:3] == [
        "six_card_royal_flush_diamonds", "six_card_royal_flush_other", "royal_flush",
    ]  # fmt: skip


def test_identity_is_sha256_of_canonical_json() -> None:
    text = (SHIPPED / "sic_bo.toml").read_bytes()
    doc = P.parse_paytable(text, "sic_bo.toml")
    assert doc.canonical == canonical_json(tomllib.loads(text.decode()))
    assert doc.id.sha256 == hashlib.sha256(doc.canonical).hexdigest()
    assert P.parse_paytable(b"# note\n" + text, "x.toml").id == doc.id


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (("version = 1", "version = 0"), "bad.toml:version"),
        (('kind = "paytable"', 'kind = "profile"'), "bad.toml:kind"),
        (('game = "roulette_up"', 'game = "craps"'), "bad.toml:game"),
        (('citation = "58 Pa. Code 617b.4(h)(1)"', 'citation = " "'), "bad.toml:citation"),
        (('8 = "400 to 1"', '8 = "400 to 0"'), "bad.toml:paytables.A.8"),
        (('8 = "400 to 1"', '8 = "400:1"'), "bad.toml:paytables.A.8"),
        (('8 = "400 to 1"', "8 = 400"), "bad.toml:paytables.A.8"),
        (('4 = "10 to 1"\n', ""), "bad.toml:paytables.A"),  # streak lengths must be 1..L
        (('3 = "2 to 1"\n4 = "10 to 1"', '3 = "2 to 1"\n9 = "10 to 1"'), "bad.toml:paytables.A"),
        (("[paytables.A]", "[paytables.A-1]"), "bad.toml:paytables.A-1"),
        (("example = false", "example = false\nextra = 1"), "bad.toml:extra"),
    ],
)
def test_errors_name_the_file_and_key(edit: tuple[str, str], field: str) -> None:
    text = (SHIPPED / "roulette_up.toml").read_text()
    assert edit[0] in text
    with pytest.raises(InvalidArgument) as info:
        P.parse_paytable(text.replace(edit[0], edit[1], 1).encode(), "bad.toml")
    assert info.value.field == field
    assert info.value.allowed


def test_category_rules_per_game() -> None:
    text = (SHIPPED / "six_card_bonus.toml").read_text()
    # The six-card royal rows go together; an unknown hand is refused.
    one_row = text.replace('six_card_royal_flush_other = "20000 to 1"\n', "")
    with pytest.raises(InvalidArgument) as info:
        P.parse_paytable(one_row.encode(), "s.toml")
    assert info.value.field == "s.toml:paytables.D.six_card_royal_flush_other"
    unknown = text.replace('straight = "10 to 1"', 'straightish = "10 to 1"', 1)
    with pytest.raises(InvalidArgument, match="straight"):
        P.parse_paytable(unknown.encode(), "s.toml")
    with pytest.raises(InvalidArgument, match=r"s\.toml"):
        P.parse_paytable(b"kind = [", "s.toml")


def test_payout_parse() -> None:
    assert P.Payout.parse("loss").returns == 0
    assert P.Payout.parse("push").returns == 1
    assert P.Payout.parse("13 to 2").returns == Fraction(15, 2)
    for bad in ("0 to 1", "1 to 0", "1.5 to 1", "one to one", " 1 to 1"):
        with pytest.raises(ValueError, match=re.escape(bad)):
            P.Payout.parse(bad)
