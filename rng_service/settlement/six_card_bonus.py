"""Six Card Bonus (Four Card Poker 641a.7(d)(8), Let It Ride 643a.7(j)): what the wager returns.

Owns: the best Poker hand of six cards by the rankings of 641a.6(e) / 643a.6(e) (a six-card
royal flush, A K Q J 10 9 of one suit, above a royal flush, then straight flush, four of a
kind, full house, flush, straight, three of a kind; below those, two pair, a pair and high
card, which lose), which cards make the six (Four Card Poker: the player's five cards and the
Six Card Bonus card, 641a.11(c)(8); Let It Ride: the player's three cards and the three Six
Card Bonus cards, 643a.11(g)(6)), the settlement by a 641a.12(h) / 643a.12(g) paytable, and the
exact distribution of the hand.

Rules of the hand: five cards of the six form each hand; an ace is high in A K Q J 10 and low
in 5 4 3 2 A; a six-card royal flush is paid by the "six-card royal flush" rows of a paytable
that has them (D: diamonds and the other suits apart) and as a royal flush otherwise.

Exact distribution: the six cards are a uniform 6-subset of one 52-card deck whichever
dealing plan made them (docs/outcomes.md, "Cards"). The code counts the C(52, 6) = 20,358,520
hands by their ranks: for each multiset of six ranks, the suit assignments number
prod C(4, m_r); those with five or six cards of one suit are counted by the set of ranks in
that suit (a flush or better), the rest take the hand the ranks alone make.

Must not: draw random values, perform I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from functools import cache
from itertools import combinations, combinations_with_replacement
from math import comb, prod

from rng_service.errors import InvalidArgument
from rng_service.outcomes._common import allowed_list
from rng_service.outcomes.cards import SUITS, DealtRound, card_code
from rng_service.settlement.paytables import Paytable
from rng_service.settlement.returns import ReturnDistribution

__all__ = [
    "HANDS",
    "PLAN_CARDS",
    "bonus_cards",
    "category_counts",
    "hand",
    "return_distribution",
    "settle",
]

#: Six-card hands, highest first (two_pair, pair and high_card never pay).
HANDS = (
    "six_card_royal_flush_diamonds",
    "six_card_royal_flush_other",
    "royal_flush",
    "straight_flush",
    "four_of_a_kind",
    "full_house",
    "flush",
    "straight",
    "three_of_a_kind",
    "two_pair",
    "pair",
    "high_card",
)
_RANK = {h: i for i, h in enumerate(HANDS)}
_SIX_ROYAL = frozenset(range(7, 13))  # 9 T J Q K A
_ROYAL = frozenset(range(8, 13))  # T J Q K A
_DIAMONDS = SUITS.index("D")
#: Per dealing plan (docs/outcomes.md), the positions whose cards make a player's six.
PLAN_CARDS = {
    "four_card_poker_six_card_bonus": ("six_card_bonus",),
    "let_it_ride_automated_six_card_bonus": ("six_card_bonus",),
}


def _straight_high(ranks: frozenset[int]) -> int | None:
    """The highest card of the best straight among ``ranks`` (0 = 2 .. 12 = A), or None; the
    wheel 5 4 3 2 A counts as five-high (3)."""
    for top in range(12, 3, -1):
        if all(r in ranks for r in range(top - 4, top + 1)):
            return top
    if {12, 0, 1, 2, 3} <= ranks:
        return 3
    return None


def _flush_hand(suited: frozenset[int], suit: int) -> str:
    if len(suited) == 6 and suited == _SIX_ROYAL:
        return (
            "six_card_royal_flush_diamonds" if suit == _DIAMONDS else "six_card_royal_flush_other"
        )
    high = _straight_high(suited)
    if high == 12:
        return "royal_flush"
    if high is not None:
        return "straight_flush"
    return "flush"


def _rank_hand(counts: Counter[int]) -> str:
    shape = sorted(counts.values(), reverse=True)
    if shape[0] == 4:
        return "four_of_a_kind"
    if shape[0] == 3 and shape[1] >= 2:
        return "full_house"
    if len(counts) >= 5 and _straight_high(frozenset(counts)) is not None:
        return "straight"
    if shape[0] == 3:
        return "three_of_a_kind"
    if shape[0] == 2 and shape[1] == 2:
        return "two_pair"
    if shape[0] == 2:
        return "pair"
    return "high_card"


def _better(a: str, b: str) -> str:
    return a if _RANK[a] <= _RANK[b] else b


def hand(cards: Sequence[str]) -> str:
    """The best hand (:data:`HANDS`) of six distinct cards given as labels (``"AS"``)."""
    if len(cards) != 6 or len(set(cards)) != 6:
        raise InvalidArgument("cards", f"{list(cards)!r}", allowed="six distinct cards")
    codes = [card_code(c) for c in cards]
    if any(c >= 52 for c in codes):
        raise InvalidArgument("cards", "a joker is not a Six Card Bonus card", allowed="2C..AS")
    suits = Counter(c // 13 for c in codes)
    ranks = Counter(c % 13 for c in codes)
    best = _rank_hand(ranks)
    suit, n = suits.most_common(1)[0]
    if n >= 5:
        suited = frozenset(c % 13 for c in codes if c // 13 == suit)
        best = _better(_flush_hand(suited, suit), best)
    return best


def bonus_cards(dealt: DealtRound, player: int) -> tuple[str, ...]:
    """Player ``player``'s six cards (its hand and the Six Card Bonus card or cards) of a round
    dealt with a ``*_six_card_bonus`` plan."""
    if dealt.plan not in PLAN_CARDS:
        raise InvalidArgument(
            "plan",
            f"{dealt.plan!r} deals no Six Card Bonus cards",
            allowed=allowed_list(PLAN_CARDS),
        )
    own = dealt.hand(f"player{player}").labels()
    extra = tuple(c for pos in PLAN_CARDS[dealt.plan] for c in dealt.hand(pos).labels())
    return (*own, *extra)


def _row(paytable: Paytable, best: str) -> str | None:
    if best.startswith("six_card_royal_flush") and best not in paytable.pays:
        best = "royal_flush"
    return best if best in paytable.pays else None


def settle(paytable: Paytable, cards: Sequence[str]) -> Fraction:
    """What one unit staked returns for the player's six cards (641a.11(c)(8), 643a.11(g)(6))."""
    if paytable.game != "six_card_bonus":
        raise InvalidArgument("paytable", f"a {paytable.game} paytable", allowed="six_card_bonus")
    row = _row(paytable, hand(cards))
    return Fraction(0) if row is None else paytable.returns(row)


@cache
def category_counts() -> dict[str, int]:
    """How many of the C(52, 6) six-card hands are of each :data:`HANDS` hand."""
    counts: Counter[str] = Counter()
    for ranks in combinations_with_replacement(range(13), 6):
        m = Counter(ranks)
        if max(m.values()) > 4:
            continue
        by_ranks = _rank_hand(m)
        assignments = prod(comb(4, k) for k in m.values())
        distinct = sorted(m)
        if len(distinct) >= 5:
            # Five or six cards of one suit: the ranks in that suit are a set of 5 or 6 of
            # the distinct ranks, one card each; each other card avoids that suit.
            for size in (5, 6):
                for suited in combinations(distinct, size):
                    per_suit = prod(comb(3, m[r] - (r in suited)) for r in distinct)
                    if not per_suit:
                        continue
                    assignments -= 4 * per_suit
                    flush = _flush_hand(frozenset(suited), _DIAMONDS)
                    if flush == "six_card_royal_flush_diamonds":
                        counts[flush] += per_suit
                        counts["six_card_royal_flush_other"] += 3 * per_suit
                    else:
                        counts[_better(flush, by_ranks)] += 4 * per_suit
        counts[by_ranks] += assignments
    return {h: counts[h] for h in HANDS}


def return_distribution(paytable: Paytable) -> ReturnDistribution:
    """Exact distribution of what one unit staked returns."""
    total = comb(52, 6)
    pairs = []
    for best, n in category_counts().items():
        row = _row(paytable, best)
        pairs.append((Fraction(0) if row is None else paytable.returns(row), Fraction(n, total)))
    return ReturnDistribution.of(pairs)
