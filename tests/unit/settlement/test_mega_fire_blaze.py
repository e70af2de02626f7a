"""Mega Fire Blaze (617b.7(d), (f)-(h)): settlement of worked rounds, the layout's bets, and each
wager's exact RTP against return_to_player and counts written here."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest

from rng_service.errors import InvalidArgument
from rng_service.outcomes import mega_fire_blaze as bonus
from rng_service.outcomes.profiles import load_builtin_profile
from rng_service.settlement import mega_fire_blaze as M
from rng_service.settlement.paytables import load_builtin_paytables

BASE = load_builtin_paytables()["mega_fire_blaze"].table("base")
PROFILE = load_builtin_profile("mega_fire_blaze_example")
W = M.Wager.parse
ODDS = {"straight_up": 1026, "split": 484, "street": 294, "corner": 180, "line": 50}


def test_worked_rounds() -> None:
    # 617b.7(f): straight up on 17, ball on 17, a Fire Number: the bonus odds (1026 to 1).
    assert M.settle(BASE, W("straight_up:17"), "17", {"17", "3"}, ODDS) == 1027
    # Not a Fire Number: the 617b.7(h) paytable (29 to 1); a corner pays 13 to 2.
    assert M.settle(BASE, W("straight_up:17"), "17", {"3"}) == 30
    assert M.settle(BASE, W("corner:1-2-4-5"), "5", set()) == Fraction(15, 2)
    assert M.settle(BASE, W("corner:0-1-2-3"), "0", {"0"}, ODDS) == 181
    # Outside bets never take part in the bonus; the zero loses them.
    assert M.settle(BASE, W("red"), "3", {"3"}, ODDS) == 2
    assert M.settle(BASE, W("dozen:3"), "25", set()) == 3
    assert M.settle(BASE, W("even"), "0", set()) == 0
    assert M.settle(BASE, W("split:17-20"), "21", {"21"}, ODDS) == 0
    with pytest.raises(InvalidArgument, match="bonus_odds"):
        M.settle(BASE, W("line:1-2-3-4-5-6"), "4", {"4"})


def test_layout_positions() -> None:
    # The single zero layout: 37 straight ups, 60 splits (with 0-1, 0-2, 0-3), 14 streets
    # (with 0-1-2, 0-2-3), 23 corners (with the basket 0-1-2-3), 11 lines.
    counts = {bet: len(M.valid_selections(bet)) for bet in M.INSIDE_BETS}
    assert counts == {"straight_up": 37, "split": 60, "street": 14, "corner": 23, "line": 11}
    for bad in ("split:1-5", "street:2-3-4", "corner:3-4-6-7", "line:2-3-4-5-6-7", "dozen:4", "zz"):
        with pytest.raises(InvalidArgument, match="wager"):
            W(bad)
    for wager in M.representative_wagers():
        assert W(wager.name) == wager


@pytest.mark.parametrize("bet", M.INSIDE_BETS)
def test_inside_bets_rtp_equals_return_to_player(bet: str) -> None:
    for numbers in M.valid_selections(bet)[:3]:
        rtp = M.return_distribution(BASE, PROFILE, M.Wager(bet, numbers)).rtp
        assert rtp == bonus.return_to_player(PROFILE, bet)


def test_inside_bet_rtp_by_counting_fire_sets() -> None:
    """Independent of the module's sum: count, for each Fire Number count c, the c-subsets of
    the 37 numbers holding the winning number (C(36, c-1) of C(37, c))."""
    bet, m, base = "street", 3, Fraction(10)
    total = Fraction(0)
    for c, pc in PROFILE.fire_counts.distribution().items():
        fire = Fraction(comb(36, c - 1), comb(37, c))
        odds = bonus.odds_distribution(PROFILE, c, bet)
        mean_bonus = sum((p * (o + 1) for o, p in odds.items()), Fraction(0))
        total += pc * ((1 - fire) * base + fire * mean_bonus)
    expected = Fraction(m, 37) * total
    assert M.return_distribution(BASE, PROFILE, W("street:1-2-3")).rtp == expected
    # docs/outcomes.md pins the street's return.
    assert expected == Fraction(1234639075878285925945228189077, 1269774880000000000000000000000)


@pytest.mark.parametrize("bet", M.OUTSIDE_BETS)
def test_outside_bets_return_36_over_37(bet: str) -> None:
    dist = M.return_distribution(BASE, PROFILE, M.Wager(bet, M.valid_selections(bet)[0]))
    assert dist.rtp == Fraction(36, 37)
