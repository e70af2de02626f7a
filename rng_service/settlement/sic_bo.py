"""Sic Bo (58 Pa. Code ch. 625a): what each wager returns for a roll of three dice.

Owns: the wagers of 625a.3 with the player's selections, their settlement by a 625a.6
paytable (as amended by 49 Pa.B. 4956: paytables A and B, the One of a Kind payouts of
625a.6(b)), and the exact distribution of each wager's return.

Wagers (:class:`Wager`; ``name`` is how reports and the command line write them):

* ``three_of_a_kind:N``: all three dice show N (625a.3(1));
* ``two_of_a_kind:N``: N shows on two of the dice (625a.3(2)); a triple of N shows it on two
  of the dice too, so it wins (:data:`AT_LEAST_TWO`, the default; :data:`EXACTLY_TWO` is the
  other reading, docs/games.md);
* ``any_three_of_a_kind``: any triple (625a.3(3));
* ``total_T`` for T = 4..17: the three dice total T (625a.3(4)); a triple wins too;
* ``two_dice_combination:A-B`` (A < B): both A and B show (625a.3(5));
* ``small`` / ``big``: total 4-10 / 11-17, losing on any triple (625a.3(6), (7));
* ``one_of_a_kind:N``: N shows on one, two or three dice, paid by how many (625a.3(8),
  625a.6(b)).

Exact distribution: each of the 216 ordered rolls has probability 1/216 (docs/outcomes.md,
"Dice"); the code settles every one.

Must not: draw random values, perform I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import product

from rng_service.errors import InvalidArgument
from rng_service.outcomes._common import allowed_list
from rng_service.settlement.paytables import Paytable
from rng_service.settlement.returns import ReturnDistribution

__all__ = [
    "AT_LEAST_TWO",
    "EXACTLY_TWO",
    "KINDS",
    "READINGS",
    "Wager",
    "all_wagers",
    "category",
    "representative_wagers",
    "return_distribution",
    "settle",
]

#: Two of a Kind wins when at least two dice show the number (a triple included): default.
AT_LEAST_TWO = "at_least_two"
#: The other reading: exactly two dice show it.
EXACTLY_TWO = "exactly_two"
READINGS = (AT_LEAST_TWO, EXACTLY_TWO)

KINDS = (
    "three_of_a_kind",
    "two_of_a_kind",
    "any_three_of_a_kind",
    "total",
    "two_dice_combination",
    "small",
    "big",
    "one_of_a_kind",
)
_FACES = range(1, 7)
_NUMBER_KINDS = ("three_of_a_kind", "two_of_a_kind", "one_of_a_kind")
_ALLOWED_NAMES = (
    "three_of_a_kind:N, two_of_a_kind:N, any_three_of_a_kind, total_T (4-17), "
    "two_dice_combination:A-B (A < B), small, big, one_of_a_kind:N (N, A, B: 1-6)"
)


@dataclass(frozen=True, slots=True)
class Wager:
    """A 625a.3 wager: its kind and the player's selection (a face, two faces, a total)."""

    kind: str
    selection: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        k, s = self.kind, self.selection
        ok = (
            (k in _NUMBER_KINDS and len(s) == 1 and s[0] in _FACES)
            or (k in ("any_three_of_a_kind", "small", "big") and not s)
            or (k == "total" and len(s) == 1 and 4 <= s[0] <= 17)
            or (k == "two_dice_combination" and len(s) == 2 and s[0] in _FACES
                and s[1] in _FACES and s[0] < s[1])
        )  # fmt: skip
        if not ok:
            raise InvalidArgument(
                "wager", f"bad Sic Bo wager {self.name!r}", allowed=_ALLOWED_NAMES
            )

    @property
    def name(self) -> str:
        if self.kind == "total":
            return f"total_{self.selection[0]}" if self.selection else "total"
        if self.kind == "two_dice_combination" and len(self.selection) == 2:
            return f"{self.kind}:{self.selection[0]}-{self.selection[1]}"
        if self.selection:
            return f"{self.kind}:{self.selection[0]}"
        return self.kind

    @classmethod
    def parse(cls, name: str) -> Wager:
        """The wager written as :attr:`name` (``total_10``, ``two_dice_combination:1-2``)."""
        kind, _, rest = name.partition(":")
        try:
            if kind.startswith("total_") and not rest:
                return cls("total", (int(kind[6:]),))
            if kind == "two_dice_combination":
                a, _, b = rest.partition("-")
                return cls(kind, (int(a), int(b)))
            if rest:
                return cls(kind, (int(rest),))
        except ValueError:
            pass
        else:
            if kind in KINDS:
                return cls(kind)
        raise InvalidArgument("wager", f"bad Sic Bo wager {name!r}", allowed=_ALLOWED_NAMES)


def all_wagers() -> list[Wager]:
    """Every wager of 625a.3 with every selection (50 wagers)."""
    out: list[Wager] = []
    out += [Wager("three_of_a_kind", (n,)) for n in _FACES]
    out += [Wager("two_of_a_kind", (n,)) for n in _FACES]
    out.append(Wager("any_three_of_a_kind"))
    out += [Wager("total", (t,)) for t in range(4, 18)]
    out += [Wager("two_dice_combination", (a, b)) for a in _FACES for b in _FACES if a < b]
    out += [Wager("small"), Wager("big")]
    out += [Wager("one_of_a_kind", (n,)) for n in _FACES]
    return out


def representative_wagers() -> list[Wager]:
    """One wager per paytable row: every selection of a kind has the same return
    distribution (the faces are exchangeable), except the totals, which are all listed."""
    return [
        Wager("three_of_a_kind", (1,)),
        Wager("two_of_a_kind", (1,)),
        Wager("any_three_of_a_kind"),
        *(Wager("total", (t,)) for t in range(4, 18)),
        Wager("two_dice_combination", (1, 2)),
        Wager("small"),
        Wager("big"),
        Wager("one_of_a_kind", (1,)),
    ]


def _check_faces(faces: Sequence[int]) -> None:
    if len(faces) != 3 or any(isinstance(f, bool) or f not in _FACES for f in faces):
        raise InvalidArgument("faces", f"{list(faces)!r}", allowed="three faces 1-6")


def category(faces: Sequence[int], wager: Wager, reading: str = AT_LEAST_TWO) -> str | None:
    """The paytable row that pays ``wager`` for ``faces``, or None when it loses."""
    _check_faces(faces)
    if reading not in READINGS:
        raise InvalidArgument("reading", f"{reading!r}", allowed=allowed_list(READINGS))
    triple = faces[0] == faces[1] == faces[2]
    total = sum(faces)
    k, s = wager.kind, wager.selection
    if k == "three_of_a_kind":
        return k if triple and faces[0] == s[0] else None
    if k == "two_of_a_kind":
        shown = faces.count(s[0])
        return k if shown == 2 or (shown == 3 and reading == AT_LEAST_TWO) else None
    if k == "any_three_of_a_kind":
        return k if triple else None
    if k == "total":
        return f"total_{s[0]}" if total == s[0] else None
    if k == "two_dice_combination":
        return k if s[0] in faces and s[1] in faces else None
    if k == "small":
        return k if 4 <= total <= 10 and not triple else None
    if k == "big":
        return k if 11 <= total <= 17 and not triple else None
    shown = faces.count(s[0])
    return f"one_of_a_kind_{shown}" if shown else None


def settle(
    paytable: Paytable, faces: Sequence[int], wager: Wager, reading: str = AT_LEAST_TWO
) -> Fraction:
    """What one unit staked on ``wager`` returns for the roll ``faces``."""
    if paytable.game != "sic_bo":
        raise InvalidArgument("paytable", f"a {paytable.game} paytable", allowed="sic_bo")
    row = category(faces, wager, reading)
    return Fraction(0) if row is None else paytable.returns(row)


def return_distribution(
    paytable: Paytable, wager: Wager, reading: str = AT_LEAST_TWO
) -> ReturnDistribution:
    """Exact distribution of the return, settling each of the 216 equally likely rolls."""
    p = Fraction(1, 216)
    return ReturnDistribution.of(
        (settle(paytable, roll, wager, reading), p) for roll in product(_FACES, repeat=3)
    )
