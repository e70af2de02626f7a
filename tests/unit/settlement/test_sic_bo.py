"""Sic Bo (625a.3, 625a.6): every wager on worked rolls, and the exact RTP of every wager and
selection on both paytables against closed-form counts of the 216 rolls written here."""

from __future__ import annotations

from fractions import Fraction

import pytest

from rng_service.errors import InvalidArgument
from rng_service.settlement import sic_bo as S
from rng_service.settlement.paytables import load_builtin_paytables

DOC = load_builtin_paytables()["sic_bo"]
A, B = DOC.table("A"), DOC.table("B")
W = S.Wager.parse


@pytest.mark.parametrize(
    ("faces", "wager", "a", "b"),
    [
        ((4, 4, 4), "three_of_a_kind:4", 151, 181),
        ((4, 4, 4), "two_of_a_kind:4", 9, 12),  # a triple shows 4 on two of the dice
        ((4, 4, 2), "two_of_a_kind:4", 9, 12),
        ((4, 4, 4), "any_three_of_a_kind", 25, 32),
        ((4, 4, 4), "total_12", 7, 8),  # totals win on triples
        ((1, 1, 2), "total_4", 51, 63),
        ((2, 6, 3), "two_dice_combination:2-6", 6, 7),
        ((2, 2, 3), "two_dice_combination:2-6", 0, 0),
        ((1, 3, 6), "small", 2, 2),
        ((3, 3, 3), "small", 0, 0),  # any three of a kind loses Small and Big
        ((5, 5, 5), "big", 0, 0),
        ((6, 6, 5), "big", 2, 2),
        ((2, 5, 6), "one_of_a_kind:5", 2, 2),
        ((5, 5, 6), "one_of_a_kind:5", 3, 3),
        ((5, 5, 5), "one_of_a_kind:5", 4, 13),  # 625a.6(b)(3): 3 to 1 (A) or 12 to 1 (B)
        ((1, 2, 3), "one_of_a_kind:5", 0, 0),
    ],
)
def test_worked_rolls(faces: tuple[int, ...], wager: str, a: int, b: int) -> None:
    assert S.settle(A, faces, W(wager)) == a
    assert S.settle(B, faces, W(wager)) == b


def test_exactly_two_reading() -> None:
    assert S.settle(A, (4, 4, 4), W("two_of_a_kind:4"), S.EXACTLY_TWO) == 0
    assert S.settle(A, (4, 4, 1), W("two_of_a_kind:4"), S.EXACTLY_TWO) == 9


def test_wager_names_round_trip_and_bad_ones_are_refused() -> None:
    for wager in S.all_wagers():
        assert W(wager.name) == wager
    assert len(S.all_wagers()) == 50
    for bad in ("total_3", "total_18", "two_dice_combination:2-2", "three_of_a_kind:7", "x"):
        with pytest.raises(InvalidArgument, match="wager"):
            W(bad)
    with pytest.raises(InvalidArgument, match="faces"):
        S.settle(A, (0, 1, 2), W("small"))


# Independent closed-form counts of winning rolls out of 216, by row.
TOTAL_WAYS = {4: 3, 5: 6, 6: 10, 7: 15, 8: 21, 9: 25, 10: 27, 11: 27, 12: 25, 13: 21, 14: 15,
              15: 10, 16: 6, 17: 3}  # fmt: skip


def closed_form(wager: S.Wager, reading: str) -> dict[str, int]:
    k = wager.kind
    if k == "three_of_a_kind":
        return {k: 1}
    if k == "two_of_a_kind":  # exactly two: 3 positions x 5 others; a triple: 1
        return {k: 15 + (1 if reading == S.AT_LEAST_TWO else 0)}
    if k == "any_three_of_a_kind":
        return {k: 6}
    if k == "total":
        return {f"total_{wager.selection[0]}": TOTAL_WAYS[wager.selection[0]]}
    if k == "two_dice_combination":  # {a, b, x}: 6 orders x 4 other x, plus 2 x 3 orders of aab/abb
        return {k: 6 * 4 + 2 * 3}
    if k in ("small", "big"):  # totals 3-10: 108 rolls, less 111 and the triples 222, 333
        return {k: 108 - 1 - 2}
    return {"one_of_a_kind_1": 3 * 25, "one_of_a_kind_2": 3 * 5, "one_of_a_kind_3": 1}


@pytest.mark.parametrize("reading", S.READINGS)
@pytest.mark.parametrize("table", ["A", "B"])
def test_exact_rtp_of_every_wager_matches_closed_form(table: str, reading: str) -> None:
    paytable = DOC.table(table)
    for wager in S.all_wagers():
        ways = closed_form(wager, reading)
        expected = sum(
            (Fraction(n, 216) * paytable.returns(r) for r, n in ways.items()), Fraction(0)
        )
        assert S.return_distribution(paytable, wager, reading).rtp == expected, wager.name


def test_small_is_210_over_216() -> None:
    assert S.return_distribution(A, W("small")).rtp == Fraction(210, 216)
