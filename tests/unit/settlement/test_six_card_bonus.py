"""Six Card Bonus (641a.6(e), 641a.12(h), 643a.6(e), 643a.12(g)): hands on worked examples, the
hand of random six-card hands against a brute-force evaluator written here, the exact hand
counts against closed-form combinatorics, and each paytable's RTP from those counts."""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction
from itertools import combinations
from math import comb

import pytest

from rng_service.errors import InvalidArgument
from rng_service.outcomes import cards
from rng_service.settlement import six_card_bonus as S
from rng_service.settlement.paytables import load_builtin_paytables

DOC = load_builtin_paytables()["six_card_bonus"]
DECK = [r + s for s in "CDHS" for r in "23456789TJQKA"]


@pytest.mark.parametrize(
    ("hand", "best"),
    [
        ("9D TD JD QD KD AD", "six_card_royal_flush_diamonds"),
        ("9S TS JS QS KS AS", "six_card_royal_flush_other"),
        ("9C TS JS QS KS AS", "royal_flush"),
        ("8S TS JS QS KS AS", "royal_flush"),
        ("AH 2H 3H 4H 5H KC", "straight_flush"),  # the wheel
        ("9H TH JH QH KH 2C", "straight_flush"),
        ("7C 7D 7H 7S 2C 2D", "four_of_a_kind"),
        ("7C 7D 7H 2S 2C 9D", "full_house"),
        ("7C 7D 7H 2S 2C 2D", "full_house"),  # two threes of a kind
        ("2H 5H 9H JH KH 3H", "flush"),
        ("AC 2D 3H 4S 5C 9D", "straight"),
        ("TC JD QH KS AC AD", "straight"),
        ("7C 7D 7H 2S 4C 9D", "three_of_a_kind"),
        ("7C 7D 2H 2S 4C 4D", "two_pair"),
        ("7C 7D 2H 3S 4C 9D", "pair"),
        ("KC QD 2H 3S 4C 9D", "high_card"),
    ],
)
def test_worked_hands(hand: str, best: str) -> None:
    assert S.hand(hand.split()) == best


def test_settlement_by_paytable() -> None:
    six = ["9D", "TD", "JD", "QD", "KD", "AD"]
    # D prices the six-card royal in diamonds at 200,000 to 1; A pays it as a royal flush.
    assert S.settle(DOC.table("D"), six) == 200_001
    assert S.settle(DOC.table("D"), ["9H", "TH", "JH", "QH", "KH", "AH"]) == 20_001
    assert S.settle(DOC.table("A"), six) == 1001
    assert S.settle(DOC.table("C"), ["7C", "7D", "7H", "2S", "4C", "9D"]) == 9
    assert S.settle(DOC.table("C"), ["7C", "7D", "2H", "2S", "4C", "4D"]) == 0
    with pytest.raises(InvalidArgument, match="cards"):
        S.hand(["AS", "AS", "2C", "3C", "4C", "5C"])


def test_bonus_cards_of_both_dealing_plans() -> None:
    shuffle = cards.ShuffleOutcome(decks=1, jokers=0, cards=tuple(range(52)))
    four = cards.deal(shuffle, "four_card_poker_six_card_bonus", 2)
    mine = S.bonus_cards(four, 1)
    assert mine[:5] == four.hand("player1").labels()
    assert mine[5:] == four.hand("six_card_bonus").labels()
    ride = cards.deal(shuffle, "let_it_ride_automated_six_card_bonus", 3)
    mine = S.bonus_cards(ride, 3)
    assert len(mine) == 6
    assert mine[3:] == ride.hand("six_card_bonus").labels()
    with pytest.raises(InvalidArgument, match="plan"):
        S.bonus_cards(cards.deal(shuffle, "four_card_poker", 1), 1)


# --- an independent evaluator: the best of the six five-card hands --------------------------

FIVE = ("royal_flush", "straight_flush", "four_of_a_kind", "full_house", "flush", "straight",
        "three_of_a_kind", "two_pair", "pair", "high_card")  # fmt: skip


def five_card(hand: tuple[str, ...]) -> str:
    ranks = sorted("23456789TJQKA".index(c[0]) for c in hand)
    flush = len({c[1] for c in hand}) == 1
    shape = sorted(Counter(ranks).values(), reverse=True)
    straight = len(set(ranks)) == 5 and (ranks[4] - ranks[0] == 4 or ranks == [0, 1, 2, 3, 12])
    if straight and flush:
        return "royal_flush" if ranks[0] == 8 else "straight_flush"
    if shape[0] == 4:
        return "four_of_a_kind"
    if shape == [3, 2]:
        return "full_house"
    if flush:
        return "flush"
    if straight:
        return "straight"
    return {3: "three_of_a_kind", 2: "two_pair" if shape[1] == 2 else "pair"}.get(
        shape[0], "high_card"
    )


def best_of_six(hand: list[str]) -> str:
    best = min((five_card(h) for h in combinations(hand, 5)), key=FIVE.index)
    suits = {c[1] for c in hand}
    if len(suits) == 1 and {c[0] for c in hand} == set("9TJQKA"):
        return "six_card_royal_flush_diamonds" if suits == {"D"} else "six_card_royal_flush_other"
    return best


def test_hand_agrees_with_brute_force_on_random_and_rich_hands() -> None:
    rng = random.Random(20240323)
    hands = [rng.sample(DECK, 6) for _ in range(4000)]
    # Rich hands: six cards of one suit, or five suited plus one, so flushes and straight
    # flushes are common enough to check.
    for _ in range(2000):
        suit = rng.choice("CDHS")
        suited = [c for c in DECK if c[1] == suit]
        k = rng.choice((5, 6))
        hand = rng.sample(suited, k)
        hand += rng.sample([c for c in DECK if c not in hand], 6 - k)
        hands.append(hand)
    for hand in hands:
        assert S.hand(hand) == best_of_six(hand), hand


def closed_form_counts() -> dict[str, int]:
    """Independent textbook counts of the C(52, 6) hands."""
    royal = 4 * 47  # the five royal cards of a suit and any sixth card
    six_royal = 4
    # A straight flush topped 5 (the wheel) to K, and a sixth card that is not the suited card
    # one above (which would make a higher straight flush): 46 choices.
    straight_flush = 4 * 9 * 46
    quads = 13 * comb(48, 2)
    full_house = comb(13, 2) * 4 * 4 + 13 * 4 * 12 * 6 * 11 * 4  # 3+3, and 3+2+1
    flushes = 4 * comb(13, 6) + 4 * comb(13, 5) * 39
    flush = flushes - royal - straight_flush
    # Straights: 71 sets of six distinct ranks hold a straight (10 straights x 8 sixth ranks,
    # less the 9 runs of six counted twice), each with 4^6 suitings less 76 flushes; and
    # the 10 straights with one rank paired (5 choices), 6 x 4^4 suitings less 12 flushes.
    straight = (10 * 8 - 9) * (4**6 - 76) + 10 * 5 * (6 * 4**4 - 12)
    trips = 13 * 4 * comb(12, 3) * 4**3
    return {"six_card_royal": six_royal, "royal_flush": royal - six_royal,
            "straight_flush": straight_flush, "four_of_a_kind": quads, "full_house": full_house,
            "flush": flush, "straight": straight, "three_of_a_kind": trips}  # fmt: skip


def test_hand_counts_match_closed_form() -> None:
    counts = S.category_counts()
    assert sum(counts.values()) == comb(52, 6)
    expected = closed_form_counts()
    assert counts["six_card_royal_flush_diamonds"] == 1
    assert counts["six_card_royal_flush_other"] == 3
    for name in ("royal_flush", "straight_flush", "four_of_a_kind", "full_house", "flush",
                 "straight", "three_of_a_kind"):  # fmt: skip
        assert counts[name] == expected[name], name


@pytest.mark.parametrize("table", ["A", "B", "C", "D", "E"])
def test_rtp_from_closed_form_counts(table: str) -> None:
    paytable = DOC.table(table)
    counts = closed_form_counts()
    total = comb(52, 6)
    rtp = Fraction(0)
    for name, n in counts.items():
        if name == "six_card_royal":
            if "six_card_royal_flush_diamonds" in paytable.pays:
                rtp += Fraction(1, total) * paytable.returns("six_card_royal_flush_diamonds")
                rtp += Fraction(3, total) * paytable.returns("six_card_royal_flush_other")
            else:
                rtp += Fraction(n, total) * paytable.returns("royal_flush")
        else:
            rtp += Fraction(n, total) * paytable.returns(name)
    assert S.return_distribution(paytable).rtp == rtp
