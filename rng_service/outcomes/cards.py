"""Card shuffles and dealing plans for the poker games of 58 Pa. Code ch. 639a (Caribbean Stud),
641a (Four Card Poker) and 643a (Let It Ride), as amended by 49 Pa.B. 4956.

Owns: the card encoding; a uniformly random permutation of a shoe of ``decks`` standard
52-card decks with optional jokers; dealing plans that say, in the order the rules deal them,
which position receives each card (players, dealer, community cards, bonus cards, discards);
``deal(shuffle, plan, players)``, a pure function that rebuilds every hand from a logged
shuffle, so any hand can be reconstructed in a dispute (641a.11(d), 643a.11(h)); and the exact
distributions of a shuffle.

Card encoding: a label is rank then suit, ranks ``23456789TJQKA``, suits ``C D H S``
(``"AS"``, ``"TD"``); jokers are ``"JK1"``, ``"JK2"``. The integer code of a standard card is
``13 * suit + rank`` with suit C=0, D=1, H=2, S=3 and rank 2=0 .. A=12 (``"2C"`` = 0,
``"AS"`` = 51); jokers are 52 and 53. The canonical shoe lists deck 0's codes 0..51 then its
jokers, then deck 1 likewise, and so on.

Draw mapping (docs/outcomes.md): one ``src.shuffle(canonical shoe)`` (forward Fisher-Yates:
``randbelow(N)``, ``randbelow(N - 1)``, ..., ``randbelow(2)``); card ``i`` of the outcome is
the ``i``-th card dealt from the top of the shoe. Dealing draws nothing.

Must not: use floats, ``%`` on random values, I/O, or a generator other than ``src``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from math import factorial, prod
from typing import TYPE_CHECKING

from rng_service.errors import InvalidArgument
from rng_service.outcomes._common import JsonValue, allowed_list, require_int

if TYPE_CHECKING:
    from rng_service.sampling import RandomSource

__all__ = [
    "DEAL_PLANS",
    "JOKER_LABELS",
    "MAX_DECKS",
    "MAX_JOKERS",
    "PLAYERS",
    "RANKS",
    "SUITS",
    "DealPlan",
    "DealStep",
    "DealtRound",
    "Hand",
    "ShuffleOutcome",
    "ShuffleParams",
    "arrangement_probability",
    "canonical_shoe",
    "card_code",
    "card_label",
    "deal",
    "draw",
    "get_plan",
    "position_distribution",
]

RANKS = "23456789TJQKA"
SUITS = "CDHS"
JOKER_LABELS = ("JK1", "JK2")
MAX_DECKS = 8
MAX_JOKERS = 2
_STANDARD = 52


def card_label(code: int) -> str:
    """Label of an integer card code (0..53)."""
    if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code < 54:
        raise InvalidArgument("card", f"bad card code {code!r}", allowed="0..53")
    if code >= _STANDARD:
        return JOKER_LABELS[code - _STANDARD]
    suit, rank = divmod(code, 13)
    return RANKS[rank] + SUITS[suit]


def card_code(label: str) -> int:
    """Integer code of a card label."""
    if label in JOKER_LABELS:
        return _STANDARD + JOKER_LABELS.index(label)
    if isinstance(label, str) and len(label) == 2 and label[0] in RANKS and label[1] in SUITS:
        return 13 * SUITS.index(label[1]) + RANKS.index(label[0])
    raise InvalidArgument("card", f"bad card label {label!r}", allowed="2C..AS, JK1, JK2")


@dataclass(frozen=True, slots=True)
class ShuffleParams:
    """A shoe of ``decks`` (1..8) 52-card decks, each with ``jokers`` (0..2) jokers."""

    decks: int = 1
    jokers: int = 0

    def __post_init__(self) -> None:
        require_int(self.decks, "decks", 1, MAX_DECKS)
        require_int(self.jokers, "jokers", 0, MAX_JOKERS)

    @classmethod
    def parse(cls, data: Mapping[str, object]) -> ShuffleParams:
        return cls(decks=data.get("decks", 1), jokers=data.get("jokers", 0))  # type: ignore[arg-type]

    @property
    def size(self) -> int:
        return self.decks * (_STANDARD + self.jokers)

    def to_record(self) -> dict[str, JsonValue]:
        return {"decks": self.decks, "jokers": self.jokers}


def canonical_shoe(params: ShuffleParams) -> tuple[int, ...]:
    """The shoe before shuffling: per deck, codes 0..51 then its jokers."""
    deck = tuple(range(_STANDARD)) + tuple(_STANDARD + j for j in range(params.jokers))
    return deck * params.decks


@dataclass(frozen=True, slots=True)
class ShuffleOutcome:
    """The shoe from top (index 0) to bottom, as integer codes."""

    decks: int
    jokers: int
    cards: tuple[int, ...]

    def labels(self) -> tuple[str, ...]:
        return tuple(card_label(c) for c in self.cards)

    def to_record(self) -> dict[str, JsonValue]:
        return {"decks": self.decks, "jokers": self.jokers, "cards": list(self.labels())}

    @classmethod
    def from_record(cls, record: Mapping[str, object]) -> ShuffleOutcome:
        """Rebuild a logged shuffle, checking it is a permutation of its canonical shoe."""
        params = ShuffleParams.parse(record)
        labels = record.get("cards")
        if not isinstance(labels, list):
            raise InvalidArgument("cards", "must be a list of card labels")
        cards = tuple(card_code(lb) for lb in labels)
        if Counter(cards) != Counter(canonical_shoe(params)):
            raise InvalidArgument("cards", "not a permutation of the declared shoe")
        return cls(decks=params.decks, jokers=params.jokers, cards=cards)


def draw(src: RandomSource, params: ShuffleParams) -> ShuffleOutcome:
    """Shuffle the canonical shoe once."""
    cards = src.shuffle(canonical_shoe(params))
    return ShuffleOutcome(decks=params.decks, jokers=params.jokers, cards=tuple(cards))


def position_distribution(params: ShuffleParams) -> dict[str, Fraction]:
    """At every shoe position, P(label) = copies of the label in the shoe / shoe size."""
    counts = Counter(card_label(c) for c in canonical_shoe(params))
    return {label: Fraction(n, params.size) for label, n in counts.items()}


def arrangement_probability(params: ShuffleParams) -> Fraction:
    """Probability of each distinct sequence of labels: prod(m_x!) / N!."""
    counts = Counter(canonical_shoe(params))
    return Fraction(prod(factorial(m) for m in counts.values()), factorial(params.size))


# --- dealing plans -----------------------------------------------------------------------

#: Placeholder in a step's targets for the player positions ``player1``..``playerN``, player1
#: being the player farthest to the dealer's left, then clockwise (641a.8(d), 643a.10(b)).
PLAYERS = "players"


@dataclass(frozen=True, slots=True)
class DealStep:
    """``round``: ``count`` rounds, each giving one card to every target in order.
    ``stack``: every target in order receives ``count`` consecutive cards (a stack dispensed by
    an automated shoe; the first card of a stack is its top card)."""

    kind: str
    targets: tuple[str, ...]
    count: int


@dataclass(frozen=True, slots=True)
class DealPlan:
    """Named dealing order for one game variant; ``citation`` names the rule it follows."""

    name: str
    citation: str
    steps: tuple[DealStep, ...]
    max_players: int
    decks: int = 1
    jokers: int = 0

    def sequence(self, players: int) -> tuple[str, ...]:
        """The position receiving each card, in dealing order."""
        require_int(players, "players", 1, self.max_players)
        seats = tuple(f"player{i}" for i in range(1, players + 1))
        out: list[str] = []
        for step in self.steps:
            targets = [t for name in step.targets for t in (seats if name == PLAYERS else (name,))]
            if step.kind == "round":
                out.extend(targets * step.count)
            else:
                for t in targets:
                    out.extend([t] * step.count)
        return tuple(out)


def _round(count: int, *targets: str) -> DealStep:
    return DealStep("round", targets, count)


def _stack(count: int, *targets: str) -> DealStep:
    return DealStep("stack", targets, count)


_PLAN_LIST = (
    DealPlan(
        name="four_card_poker",
        citation="58 Pa. Code 641a.8(d), 641a.9(b) (no Six Card Bonus Wager placed)",
        steps=(_round(5, PLAYERS, "dealer"), _stack(1, "dealer")),
        max_players=6,
    ),
    DealPlan(
        name="four_card_poker_six_card_bonus",
        citation="58 Pa. Code 641a.8(d), 641a.9(b): bonus card first, then one card at a time "
        "until players have five and the dealer six, the dealer's fifth and sixth consecutive",
        steps=(_stack(1, "six_card_bonus"), _round(5, PLAYERS, "dealer"), _stack(1, "dealer")),
        max_players=6,
    ),
    DealPlan(
        name="let_it_ride_automated",
        citation="58 Pa. Code 643a.10(b): a stack of three per player, then three community "
        "cards of which the bottom one (dealer's left) is discarded",
        steps=(_stack(3, PLAYERS), _stack(2, "community"), _stack(1, "discard")),
        max_players=7,
    ),
    DealPlan(
        name="let_it_ride_automated_six_card_bonus",
        citation="58 Pa. Code 643a.10(b): as let_it_ride_automated, then the next stack of "
        "three to the Six Card Bonus area",
        steps=(
            _stack(3, PLAYERS),
            _stack(2, "community"),
            _stack(1, "discard"),
            _stack(3, "six_card_bonus"),
        ),
        max_players=7,
    ),
    DealPlan(
        name="caribbean_stud_automated",
        citation="58 Pa. Code 639a.10(b): a stack of five per player, then the dealer's five; "
        "the bottom (last) dealer card is turned face up",
        steps=(_stack(5, PLAYERS), _stack(5, "dealer")),
        max_players=7,
    ),
)

#: Shipped dealing plans by name.
DEAL_PLANS: Mapping[str, DealPlan] = {p.name: p for p in _PLAN_LIST}


def get_plan(name: str) -> DealPlan:
    try:
        return DEAL_PLANS[name]
    except (KeyError, TypeError):
        raise InvalidArgument(
            "plan", f"unknown dealing plan {name!r}", allowed=allowed_list(DEAL_PLANS)
        ) from None


@dataclass(frozen=True, slots=True)
class Hand:
    """One position's cards in the order received, with their shoe indices."""

    position: str
    cards: tuple[int, ...]
    shoe_indices: tuple[int, ...]

    def labels(self) -> tuple[str, ...]:
        return tuple(card_label(c) for c in self.cards)

    def to_record(self) -> dict[str, JsonValue]:
        return {
            "position": self.position,
            "cards": list(self.labels()),
            "shoe_indices": list(self.shoe_indices),
        }


@dataclass(frozen=True, slots=True)
class DealtRound:
    """Every position's hand (positions in order of first card) and the first undealt index."""

    plan: str
    players: int
    hands: tuple[Hand, ...]
    next_index: int

    def hand(self, position: str) -> Hand:
        for h in self.hands:
            if h.position == position:
                return h
        raise InvalidArgument(
            "position",
            f"no position {position!r}",
            allowed=allowed_list(h.position for h in self.hands),
        )

    def to_record(self) -> dict[str, JsonValue]:
        return {
            "plan": self.plan,
            "players": self.players,
            "hands": [h.to_record() for h in self.hands],
            "next_index": self.next_index,
        }


def deal(shuffle: ShuffleOutcome, plan: DealPlan | str, players: int) -> DealtRound:
    """Deal ``shuffle`` from the top by ``plan`` for ``players`` players (pure)."""
    p = get_plan(plan) if isinstance(plan, str) else plan
    if (shuffle.decks, shuffle.jokers) != (p.decks, p.jokers):
        raise InvalidArgument(
            "shuffle",
            f"plan {p.name} needs {p.decks} deck(s) with {p.jokers} joker(s), got "
            f"{shuffle.decks} deck(s) with {shuffle.jokers}",
            allowed=f"decks={p.decks}, jokers={p.jokers}",
        )
    sequence = p.sequence(players)
    if len(sequence) > len(shuffle.cards):
        raise InvalidArgument(
            "players", f"plan {p.name} needs {len(sequence)} cards", allowed=f"1..{p.max_players}"
        )
    received: dict[str, list[int]] = {}
    for index, position in enumerate(sequence):
        received.setdefault(position, []).append(index)
    hands = tuple(
        Hand(position=pos, cards=tuple(shuffle.cards[i] for i in idx), shoe_indices=tuple(idx))
        for pos, idx in received.items()
    )
    return DealtRound(plan=p.name, players=players, hands=hands, next_index=len(sequence))
