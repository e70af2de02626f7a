"""Blazing 7's (617c.2): the trigger, the bonus rows on worked rounds, and the exact RTP of every
paytable on both wheels against closed-form counts written here."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest

from rng_service.errors import InvalidArgument
from rng_service.outcomes.roulette import WheelType
from rng_service.settlement import blazing_7s as B
from rng_service.settlement.paytables import load_builtin_paytables

DOC = load_builtin_paytables()["blazing_7s"]
T1, T3 = DOC.table("1"), DOC.table("3")


@pytest.mark.parametrize(
    ("balls", "row1", "row3"),
    [
        (("7", "17", "27"), "all_three", "all_three"),
        (("27", "3", "7"), "two_of_three", "two_of_three"),
        # two red 7s and a red third ball: the higher row (two of three) pays, not one colour
        (("7", "27", "9"), "two_of_three", "two_of_three"),
        (("17", "1", "2"), "one_of_three", "one_of_three"),
        (("1", "3", "5"), "other", "one_colour"),  # all red
        (("2", "4", "6"), "other", "one_colour"),  # all black
        (("0", "1", "3"), "other", "other"),
        (("0", "00", "2"), "other", "other"),  # green is not a colour row
    ],
)
def test_bonus_rows(balls: tuple[str, ...], row1: str, row3: str) -> None:
    assert B.bonus_category(balls, T1) == row1
    assert B.bonus_category(balls, T3) == row3


def test_settlement() -> None:
    # 617c.2(e): no 7, 17 or 27 on the base spin: the wager loses, no bonus round.
    assert B.settle(T1, "8", None) == 0
    assert B.settle(T1, "17", ("7", "17", "27")) == 1001
    assert B.settle(DOC.table("2"), "7", ("7", "17", "27")) == 300
    assert B.settle(T3, "27", ("1", "3", "5")) == 12
    assert B.settle(T1, "27", ("1", "3", "5")) == 8
    with pytest.raises(InvalidArgument, match="balls"):
        B.settle(T1, "7", None)
    with pytest.raises(InvalidArgument, match="balls"):
        B.settle(T1, "7", ("1", "1", "2"))


def closed_form_rows(n: int, colour_row: bool) -> dict[str, Fraction]:
    """Independent: hypergeometric counts of balls on 7, 17, 27, and for "one colour" the
    3-subsets of the 16 red numbers other than 7 and 27 or the 17 black other than 17."""
    total = comb(n, 3)
    rows = {
        "all_three": Fraction(1, total),
        "two_of_three": Fraction(comb(3, 2) * (n - 3), total),
        "one_of_three": Fraction(3 * comb(n - 3, 2), total),
    }
    if colour_row:
        rows["one_colour"] = Fraction(comb(16, 3) + comb(17, 3), total)
    rows["other"] = 1 - sum(rows.values(), Fraction(0))
    return rows


@pytest.mark.parametrize("table", ["1", "2", "3", "4"])
@pytest.mark.parametrize("wheel", B.WHEELS, ids=lambda w: w.value)
def test_exact_rtp_matches_closed_form(table: str, wheel: WheelType) -> None:
    paytable = DOC.table(table)
    n = 38 if wheel is WheelType.DOUBLE_ZERO else 37
    rows = closed_form_rows(n, table in ("3", "4"))
    assert B.category_distribution(paytable, wheel) == rows
    expected = Fraction(3, n) * sum((p * paytable.returns(r) for r, p in rows.items()), Fraction(0))
    assert B.return_distribution(paytable, wheel).rtp == expected


def test_the_double_zero_wheel_used_as_single_zero_is_not_a_blazing_7s_wheel() -> None:
    with pytest.raises(InvalidArgument, match="wheel"):
        B.category_distribution(T1, WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO)
