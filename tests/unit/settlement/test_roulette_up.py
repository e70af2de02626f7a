"""Roulette Up (617b.4): streak rules on worked runs, and the exact length distribution and RTP
against an independent state-by-state enumeration written here."""

from __future__ import annotations

from fractions import Fraction
from functools import cache

import pytest

from rng_service.errors import InvalidArgument
from rng_service.outcomes.roulette import WheelType
from rng_service.settlement import roulette_up as R
from rng_service.settlement.paytables import load_builtin_paytables

PAYTABLES = load_builtin_paytables()["roulette_up"]
A = PAYTABLES.table("A")
SZ, DZ, DZS = WheelType.SINGLE_ZERO, WheelType.DOUBLE_ZERO, WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO


def run(numbers: str, *, wheel: WheelType = DZ, reading: str = R.COUNTS) -> R.Streak | None:
    return R.streak(numbers.split(), wheel=wheel, longest=8, reading=reading)


@pytest.mark.parametrize(
    ("numbers", "length", "used", "ended_by"),
    [
        # 617b.4(g)(1)(ii): 00 is above 0 and below 1.
        ("0 00 1 1", 3, 4, "lower_or_equal"),
        ("00 0", 1, 2, "lower_or_equal"),
        # (g)(2)(i): equal ends it, and the ending spin does not count.
        ("5 5", 1, 2, "lower_or_equal"),
        ("5 9 14 3 20", 3, 4, "lower_or_equal"),
        # (g)(2)(ii): 36 ends it; under the default reading it counts first.
        ("5 20 36 1", 3, 3, "thirty_six"),
        ("36 1", 1, 1, "thirty_six"),
        # (g)(2)(iii): the eighth box ends it at once.
        ("0 00 1 2 3 4 5 6 7", 8, 8, "longest"),
    ],
)
def test_streak_rules(numbers: str, length: int, used: int, ended_by: str) -> None:
    assert run(numbers) == R.Streak(length, used, ended_by)


def test_the_other_reading_of_36_stops_without_counting() -> None:
    assert run("5 20 36", reading=R.ENDS) == R.Streak(2, 3, "thirty_six")
    assert run("36", reading=R.ENDS) == R.Streak(1, 1, "thirty_six")
    # Eight rising numbers ending on 36: 8 under the default, 7 under the other reading.
    rising = "0 00 1 2 3 4 5 36"
    assert run(rising) == R.Streak(8, 8, "thirty_six")
    assert run(rising, reading=R.ENDS) == R.Streak(7, 8, "thirty_six")


def test_unfinished_streak_and_bad_numbers() -> None:
    assert run("1 2 3") is None
    with pytest.raises(InvalidArgument, match="numbers"):
        run("00 1", wheel=SZ)
    with pytest.raises(InvalidArgument, match="numbers"):
        run("0 00", wheel=DZS)  # a voided 00 is never a result
    with pytest.raises(InvalidArgument, match="reading"):
        run("1", reading="maybe")


def test_settlement_by_paytable() -> None:
    # A: length 3 pays 2 to 1 (returns 3), 8 pays 400 to 1; B pushes a 2.
    assert R.settle(A, R.Streak(3, 4, "lower_or_equal")) == 3
    assert R.settle(A, R.Streak(8, 8, "longest")) == 401
    assert R.settle(A, R.Streak(2, 3, "lower_or_equal")) == 0
    assert R.settle(PAYTABLES.table("B"), R.Streak(2, 3, "lower_or_equal")) == 1
    with pytest.raises(InvalidArgument, match="paytable"):
        R.settle(load_builtin_paytables()["sic_bo"].table("A"), R.Streak(2, 3, "x"))


@cache
def enumerate_lengths(n: int, longest: int, counts_36: bool) -> dict[int, Fraction]:
    """Independent: walk the streak state (last rank, length) spin by spin over all n results,
    ranks 0..n-1 with n-1 the 36, until every path has ended."""
    top = n - 1
    done: dict[int, Fraction] = {}
    state = {(r, 1): Fraction(1, n) for r in range(n)}
    for r in range(n):
        if r == top:  # a starting 36 ends a streak of 1
            done[1] = done.get(1, Fraction(0)) + state.pop((r, 1))
    while state:
        nxt: dict[tuple[int, int], Fraction] = {}
        for (last, length), p in state.items():
            for r in range(n):
                q = p / n
                if r <= last:
                    done[length] = done.get(length, Fraction(0)) + q
                elif r == top:
                    k = length + 1 if counts_36 else length
                    done[k] = done.get(k, Fraction(0)) + q
                elif length + 1 == longest:
                    done[longest] = done.get(longest, Fraction(0)) + q
                else:
                    nxt[(r, length + 1)] = nxt.get((r, length + 1), Fraction(0)) + q
        state = nxt
    return dict(sorted(done.items()))


@pytest.mark.parametrize("wheel", R.WHEELS, ids=lambda w: w.value)
@pytest.mark.parametrize("reading", R.READINGS)
def test_length_distribution_matches_enumeration(wheel: WheelType, reading: str) -> None:
    n = 38 if wheel is DZ else 37
    expected = enumerate_lengths(n, 8, reading == R.COUNTS)
    assert R.length_distribution(wheel, 8, reading) == expected
    assert sum(expected.values()) == 1


@pytest.mark.parametrize("table", ["A", "B", "C", "D", "E"])
def test_rtp_of_every_paytable_matches_enumeration(table: str) -> None:
    paytable = PAYTABLES.table(table)
    for wheel in R.WHEELS:
        n = 38 if wheel is DZ else 37
        for reading in R.READINGS:
            lengths = enumerate_lengths(n, 8, reading == R.COUNTS)
            expected = sum((p * paytable.returns(str(k)) for k, p in lengths.items()), Fraction(0))
            assert R.return_distribution(paytable, wheel, reading).rtp == expected


def test_closed_form_values() -> None:
    # P(L >= 8) on a double zero wheel, default reading: C(38, 8) / 38^8.
    dist = R.length_distribution(DZ, 8)
    assert dist[8] == Fraction(48_903_492, 38**8)
    assert R.length_distribution(DZS, 8) == R.length_distribution(SZ, 8)
