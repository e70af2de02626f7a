"""Card shuffles and dealing plans (ch. 639a, 641a, 643a)."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from math import factorial

import pytest

from rng_service.errors import InvalidArgument
from rng_service.outcomes import cards as C

IDENTITY = C.ShuffleOutcome(decks=1, jokers=0, cards=tuple(range(52)))


def test_encoding() -> None:
    assert C.card_label(0) == "2C"
    assert C.card_label(12) == "AC"
    assert C.card_label(13) == "2D"
    assert C.card_label(51) == "AS"
    assert C.card_label(52) == "JK1"
    assert C.card_label(53) == "JK2"
    for code in range(54):
        assert C.card_code(C.card_label(code)) == code
    assert C.card_code("TD") == 13 + 8
    for bad in ("1S", "AX", "JK3", ""):
        with pytest.raises(InvalidArgument):
            C.card_code(bad)
    with pytest.raises(InvalidArgument):
        C.card_label(54)


def test_canonical_shoe() -> None:
    shoe = C.canonical_shoe(C.ShuffleParams(decks=2, jokers=1))
    assert len(shoe) == 106
    assert shoe[:53] == (*range(52), 52)
    assert shoe[53:] == shoe[:53]


def test_shuffle_scripted_identity_and_swap(scripted) -> None:  # type: ignore[no-untyped-def]
    src, raw = scripted([0] * 51)
    out = C.draw(src, C.ShuffleParams())
    assert out.cards == tuple(range(52))
    assert raw.remaining == 0
    # First draw randbelow(52) = 51 swaps the top card with the last; the rest stay.
    src, _ = scripted([51] + [0] * 50)
    out = C.draw(src, C.ShuffleParams())
    assert out.cards[0] == 51
    assert out.cards[51] == 0
    assert out.labels()[0] == "AS"


def test_shuffle_record_round_trip(seeded) -> None:  # type: ignore[no-untyped-def]
    out = C.draw(seeded("cards-record"), C.ShuffleParams(decks=2, jokers=2))
    rec = out.to_record()
    assert C.ShuffleOutcome.from_record(rec) == out
    bad = dict(rec)
    bad["cards"] = [*list(rec["cards"])[:-1], "AS"]  # type: ignore[call-overload]
    with pytest.raises(InvalidArgument):
        C.ShuffleOutcome.from_record(bad)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"decks": 0}, "decks"),
        ({"decks": 9}, "decks"),
        ({"jokers": 3}, "jokers"),
        ({"jokers": -1}, "jokers"),
        ({"decks": True}, "decks"),
    ],
)
def test_bad_shuffle_params(kwargs, field) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgument) as exc:
        C.ShuffleParams(**kwargs)
    assert exc.value.field == field
    assert exc.value.allowed


def test_four_card_poker_six_card_bonus_plan() -> None:
    dealt = C.deal(IDENTITY, "four_card_poker_six_card_bonus", 2)
    assert dealt.hand("six_card_bonus").shoe_indices == (0,)
    assert dealt.hand("player1").shoe_indices == (1, 4, 7, 10, 13)
    assert dealt.hand("player2").shoe_indices == (2, 5, 8, 11, 14)
    # Dealer: six cards, the fifth and sixth dealt consecutively (641a.8(d)).
    assert dealt.hand("dealer").shoe_indices == (3, 6, 9, 12, 15, 16)
    assert dealt.next_index == 17
    assert [h.position for h in dealt.hands] == ["six_card_bonus", "player1", "player2", "dealer"]


def test_four_card_poker_plan_without_bonus() -> None:
    dealt = C.deal(IDENTITY, "four_card_poker", 1)
    assert dealt.hand("player1").cards == (0, 2, 4, 6, 8)
    assert dealt.hand("dealer").cards == (1, 3, 5, 7, 9, 10)


def test_let_it_ride_plans() -> None:
    dealt = C.deal(IDENTITY, "let_it_ride_automated_six_card_bonus", 2)
    assert dealt.hand("player1").shoe_indices == (0, 1, 2)
    assert dealt.hand("player2").shoe_indices == (3, 4, 5)
    assert dealt.hand("community").shoe_indices == (6, 7)
    assert dealt.hand("discard").shoe_indices == (8,)
    assert dealt.hand("six_card_bonus").shoe_indices == (9, 10, 11)
    plain = C.deal(IDENTITY, "let_it_ride_automated", 2)
    assert plain.next_index == 9


def test_caribbean_stud_plan_and_record() -> None:
    dealt = C.deal(IDENTITY, "caribbean_stud_automated", 7)
    assert dealt.hand("player7").shoe_indices == (30, 31, 32, 33, 34)
    assert dealt.hand("dealer").labels() == ("JH", "QH", "KH", "AH", "2S")
    rec = dealt.to_record()
    assert rec["plan"] == "caribbean_stud_automated"
    assert rec["next_index"] == 40


def test_deal_reconstructs_every_card_once(seeded) -> None:  # type: ignore[no-untyped-def]
    shuffle = C.draw(seeded("deal"), C.ShuffleParams())
    for name, plan in C.DEAL_PLANS.items():
        for players in range(1, plan.max_players + 1):
            dealt = C.deal(shuffle, name, players)
            indices = sorted(i for h in dealt.hands for i in h.shoe_indices)
            assert indices == list(range(dealt.next_index))
            for h in dealt.hands:
                assert h.cards == tuple(shuffle.cards[i] for i in h.shoe_indices)
            assert C.deal(shuffle, plan, players) == dealt


def test_deal_bad_arguments() -> None:
    with pytest.raises(InvalidArgument) as exc:
        C.deal(IDENTITY, "blackjack", 2)
    assert exc.value.field == "plan"
    assert "four_card_poker" in exc.value.allowed
    with pytest.raises(InvalidArgument) as exc:
        C.deal(IDENTITY, "four_card_poker", 7)
    assert exc.value.field == "players"
    assert exc.value.allowed == "1..6"
    with pytest.raises(InvalidArgument) as exc:
        C.deal(IDENTITY, "four_card_poker", 0)
    assert exc.value.field == "players"
    jokers = C.ShuffleOutcome(decks=1, jokers=1, cards=tuple(range(53)))
    with pytest.raises(InvalidArgument) as exc:
        C.deal(jokers, "four_card_poker", 2)
    assert exc.value.field == "shuffle"
    with pytest.raises(InvalidArgument) as exc:
        C.deal(IDENTITY, "four_card_poker", 2).hand("player3")
    assert exc.value.field == "position"


def test_exact_distributions() -> None:
    p = C.ShuffleParams(decks=2, jokers=1)
    d = C.position_distribution(p)
    assert d["AS"] == Fraction(2, 106)
    assert d["JK1"] == Fraction(2, 106)
    assert sum(d.values()) == 1
    assert C.arrangement_probability(C.ShuffleParams()) == Fraction(1, factorial(52))
    assert C.arrangement_probability(p) == Fraction(2**53, factorial(106))


def test_shuffle_chi_square(seeded, chi2_pvalue, chi2_alpha) -> None:  # type: ignore[no-untyped-def]
    src = seeded("shuffle")
    params = C.ShuffleParams()
    first: Counter[object] = Counter()
    middle: Counter[object] = Counter()
    last: Counter[object] = Counter()
    for _ in range(52 * 150):
        labels = C.draw(src, params).labels()
        first[labels[0]] += 1
        middle[labels[25]] += 1
        last[labels[51]] += 1
    exact = C.position_distribution(params)
    for counts in (first, middle, last):
        assert chi2_pvalue(counts, exact) > chi2_alpha  # type: ignore[arg-type]
