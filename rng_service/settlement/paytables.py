"""Paytables as data: versioned TOML documents with their citation, validated and hashed.

Owns: the paytable document format (schema 1), the payouts it may hold, the categories each
game's paytable must price, loading the paytables shipped as package data under
``rng_service/paytables/`` (the regulations' own tables), and a document's identity.

A paytable document is read like a game profile (``rng_service.outcomes.profiles``): the same
strict TOML reader, the same RFC 8785 canonical JSON, and the identity ``(name, version,
sha256)`` over the canonical bytes, so an operator's approved paytable is served and cited by
hash exactly as a profile is. It says ``kind = "paytable"`` (which tells it from a profile),
the ``game`` it prices, the ``citation`` it comes from, and one or more tables under
``[paytables.<id>]``, each mapping a category of the game (a streak length, a hand, a wager)
to a payout:

* ``"loss"``: the wager is lost (returns 0 per unit staked);
* ``"push"``: the stake is returned (returns 1);
* ``"<a> to <b>"``: wins ``a/b`` per unit staked and the stake is returned (returns
  ``1 + a/b``), for example ``"400 to 1"`` or ``"13 to 2"`` (617b.7(h)).

Categories per game (:data:`CATEGORIES`; every required one must be priced, nothing else):

* ``roulette_up`` (617b.4(h)(1)): streak lengths ``"1"`` .. ``"L"``, L >= 2 being the longest
  streak the paytable knows (617b.4(g)(2)(iii) ends the streak there);
* ``blazing_7s`` (617c.2(j)): ``all_three``, ``two_of_three``, ``one_of_three``, ``other`` and,
  in paytables 3 and 4, ``one_colour``;
* ``sic_bo`` (625a.6(a), (b) as amended by 49 Pa.B. 4956): every wager of 625a.3;
* ``mega_fire_blaze`` (617b.7(h)): the thirteen bets of 617b.7(d) when not in the bonus;
* ``six_card_bonus`` (641a.12(h), 643a.12(g) as amended): the hands of 641a.6(e) and
  643a.6(e), with the six-card royal flush rows of paytable D both or neither.

Must not: settle wagers (the game modules do), draw random values, import anything above the
outcomes layer. The only I/O is reading a document when asked to.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import resources
from types import MappingProxyType

from rng_service.errors import InvalidArgument
from rng_service.outcomes._common import allowed_list
from rng_service.outcomes.profiles import (
    DocumentReader,
    ProfileId,
    document_identity,
    parse_toml_document,
    shipped_names,
)

__all__ = [
    "CATEGORIES",
    "GAMES",
    "OPTIONAL_CATEGORIES",
    "Payout",
    "Paytable",
    "PaytableDocument",
    "builtin_paytable_names",
    "is_paytable_document",
    "load_builtin_paytables",
    "parse_paytable",
    "paytable_from_document",
]

#: The longest Roulette Up streak a paytable may price (617b.4(h) prices up to 8; progressive
#: paytables up to 9, which are out of scope but would fit).
MAX_STREAK = 20

_SIC_BO = (
    "three_of_a_kind",
    "two_of_a_kind",
    "any_three_of_a_kind",
    *(f"total_{t}" for t in range(4, 18)),
    "two_dice_combination",
    "small",
    "big",
    "one_of_a_kind_1",
    "one_of_a_kind_2",
    "one_of_a_kind_3",
)

#: Required categories of each game's paytables, highest-ranking first where they rank.
CATEGORIES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "roulette_up": (),  # "1".."L": checked by _streak_categories
        "blazing_7s": ("all_three", "two_of_three", "one_of_three", "other"),
        "sic_bo": _SIC_BO,
        "mega_fire_blaze": (
            "straight_up",
            "split",
            "street",
            "corner",
            "line",
            "dozen",
            "column",
            "red",
            "black",
            "odd",
            "even",
            "low",
            "high",
        ),
        "six_card_bonus": (
            "royal_flush",
            "straight_flush",
            "four_of_a_kind",
            "full_house",
            "flush",
            "straight",
            "three_of_a_kind",
        ),
    }
)
#: Categories a paytable of the game may price in addition; groups go together.
OPTIONAL_CATEGORIES: Mapping[str, tuple[tuple[str, ...], ...]] = MappingProxyType(
    {
        "blazing_7s": (("one_colour",),),
        "six_card_bonus": (("six_card_royal_flush_diamonds", "six_card_royal_flush_other"),),
    }
)
GAMES: tuple[str, ...] = tuple(CATEGORIES)

_TOP_KEYS = (
    "schema",
    "kind",
    "name",
    "version",
    "game",
    "example",
    "citation",
    "description",
    "paytables",
)
_PAYOUT = re.compile(r"([1-9][0-9]{0,8}) to ([1-9][0-9]{0,8})")
_PAYOUT_ALLOWED = '"loss", "push" or "<a> to <b>" with positive integers (e.g. "400 to 1")'
_TABLE_ID = re.compile(r"[A-Za-z0-9_]{1,32}")


@dataclass(frozen=True, slots=True)
class Payout:
    """One paytable cell: a loss, a push, or odds of ``to`` to ``per``."""

    to: int = 0
    per: int = 1
    push: bool = False

    @classmethod
    def parse(cls, text: str) -> Payout:
        """``"loss"``, ``"push"`` or ``"<a> to <b>"``; ValueError otherwise."""
        if text == "loss":
            return cls()
        if text == "push":
            return cls(push=True)
        m = _PAYOUT.fullmatch(text)
        if m is None:
            raise ValueError(text)
        return cls(to=int(m.group(1)), per=int(m.group(2)))

    @property
    def wins(self) -> bool:
        return self.to > 0

    @property
    def returns(self) -> Fraction:
        """What a unit staked returns, stake included: 0, 1 or 1 + to/per."""
        if self.wins:
            return 1 + Fraction(self.to, self.per)
        return Fraction(1) if self.push else Fraction(0)

    def __str__(self) -> str:
        if self.wins:
            return f"{self.to} to {self.per}"
        return "push" if self.push else "loss"


@dataclass(frozen=True, slots=True)
class Paytable:
    """One table: category -> payout, in the game's category order."""

    game: str
    id: str
    pays: Mapping[str, Payout]

    def payout(self, category: str) -> Payout:
        try:
            return self.pays[category]
        except KeyError:
            raise InvalidArgument(
                "category",
                f"{category!r} is not priced by {self.game} paytable {self.id}",
                allowed=allowed_list(self.pays),
            ) from None

    def returns(self, category: str) -> Fraction:
        return self.payout(category).returns

    @property
    def longest_streak(self) -> int:
        """Roulette Up: the longest streak priced (617b.4(g)(2)(iii))."""
        return max((int(c) for c in self.pays if c.isdigit()), default=0)


@dataclass(frozen=True, slots=True)
class PaytableDocument:
    """A validated paytable document: identity, citation and its tables by id."""

    id: ProfileId
    game: str
    example: bool
    citation: str
    description: str
    paytables: Mapping[str, Paytable]
    #: The canonical JSON bytes (RFC 8785) whose SHA-256 is ``id.sha256``.
    canonical: bytes = field(default=b"", repr=False, compare=False)

    @property
    def kind(self) -> str:
        """What ``ListProfiles`` reports as the document's kind: ``paytable:<game>``."""
        return f"paytable:{self.game}"

    def table(self, table_id: str) -> Paytable:
        try:
            return self.paytables[table_id]
        except KeyError:
            raise InvalidArgument(
                "paytable",
                f"{self.id.name} has no paytable {table_id!r}",
                allowed=allowed_list(self.paytables),
            ) from None


def is_paytable_document(doc: Mapping[str, object]) -> bool:
    """True for a document that says ``kind = "paytable"`` (profiles have no ``kind``)."""
    return doc.get("kind") == "paytable"


def _streak_categories(r: DocumentReader, key: str, cells: Sequence[str]) -> tuple[str, ...]:
    lengths = sorted(int(c) for c in cells if c.isdigit() and c == str(int(c)))
    longest = lengths[-1] if lengths else 0
    expected = [str(n) for n in range(1, longest + 1)]
    if not 2 <= longest <= MAX_STREAK or sorted(cells, key=_as_int) != expected:
        raise r.fail(
            key,
            f"streak lengths {sorted(cells, key=_as_int)} are not 1..L",
            allowed=f'keys "1" to "L" for one L from 2 to {MAX_STREAK}, each once',
        )
    return tuple(expected)


def _as_int(text: str) -> int:
    return int(text) if text.isdigit() else -1


def _categories(r: DocumentReader, game: str, key: str, cells: Sequence[str]) -> tuple[str, ...]:
    if game == "roulette_up":
        return _streak_categories(r, key, cells)
    required = CATEGORIES[game]
    groups = OPTIONAL_CATEGORIES.get(game, ())
    optional = [c for g in groups for c in g]
    for c in cells:
        if c not in required and c not in optional:
            raise r.fail(
                f"{key}.{c}", "unknown category", allowed=allowed_list((*required, *optional))
            )
    for c in required:
        if c not in cells:
            raise r.fail(f"{key}.{c}", "missing", allowed=_PAYOUT_ALLOWED)
    chosen: list[str] = []
    for group in groups:
        present = [c for c in group if c in cells]
        if present and len(present) != len(group):
            missing = next(c for c in group if c not in cells)
            raise r.fail(f"{key}.{missing}", f"required with {present[0]}", allowed=_PAYOUT_ALLOWED)
        chosen += present
    # Optional rows rank first for six-card royals; the colour row of Blazing 7's ranks
    # between "one of three" and "other" (617c.2(j) lists it there).
    if game == "blazing_7s":
        return (*required[:3], *chosen, required[3])
    return (*chosen, *required)


def parse_paytable(data: bytes, source: str) -> PaytableDocument:
    """Parse and validate a paytable file (TOML); ``source`` (a file name) is named in every
    error, with the key (``source:paytables.A.8``) and the values allowed."""
    doc, canonical = parse_toml_document(data, source)
    return paytable_from_document(doc, canonical, source)


def paytable_from_document(
    doc: Mapping[str, object], canonical: bytes, source: str
) -> PaytableDocument:
    """Validate a parsed paytable document whose canonical bytes are ``canonical``."""
    r = DocumentReader(source)
    unknown = sorted(set(doc) - set(_TOP_KEYS))
    if unknown:
        raise r.fail(unknown[0], "unknown key", allowed=allowed_list(_TOP_KEYS))
    r.string(doc, "kind", ("paytable",))
    ident, example, description = document_identity(r, doc, canonical)
    game = r.string(doc, "game", GAMES)
    citation = r.string(doc, "citation")
    if not citation.strip():
        raise r.fail(
            "citation",
            "must name the rule the paytable comes from",
            allowed="a citation such as '58 Pa. Code 617b.4(h)(1)'",
        )
    tables = doc.get("paytables")
    if not isinstance(tables, Mapping) or not tables:
        raise r.fail("paytables", "missing or empty", allowed="one or more [paytables.<id>] tables")
    out: dict[str, Paytable] = {}
    for table_id, cells in tables.items():
        key = f"paytables.{table_id}"
        if not _TABLE_ID.fullmatch(table_id):
            raise r.fail(key, f"bad paytable id {table_id!r}", allowed="1-32 of A-Z a-z 0-9 _")
        if not isinstance(cells, Mapping):
            raise r.fail(key, "must be a table", allowed=f"category = payout ({_PAYOUT_ALLOWED})")
        order = _categories(r, game, key, list(cells))
        pays: dict[str, Payout] = {}
        for category in order:
            text = cells[category]
            try:
                if not isinstance(text, str):
                    raise ValueError(text)
                pays[category] = Payout.parse(text)
            except ValueError:
                raise r.fail(
                    f"{key}.{category}", f"bad payout {text!r}", allowed=_PAYOUT_ALLOWED
                ) from None
        out[table_id] = Paytable(game=game, id=table_id, pays=MappingProxyType(pays))
    return PaytableDocument(
        id=ident,
        game=game,
        example=example,
        citation=citation,
        description=description,
        paytables=MappingProxyType(out),
        canonical=canonical,
    )


def builtin_paytable_names() -> list[str]:
    """Names of the paytable documents shipped in ``rng_service/paytables/``."""
    return shipped_names("paytables")


def load_builtin_paytables() -> dict[str, PaytableDocument]:
    """Every shipped paytable document by game (one per game); a document's ``name`` must
    equal its file name."""
    out: dict[str, PaytableDocument] = {}
    for name in builtin_paytable_names():
        resource = resources.files("rng_service").joinpath("paytables", f"{name}.toml")
        document = parse_paytable(resource.read_bytes(), f"{name}.toml")
        if document.id.name != name:
            raise InvalidArgument(
                f"{name}.toml:name", f"name {document.id.name!r} differs from file", allowed=name
            )
        out[document.game] = document
    return out
