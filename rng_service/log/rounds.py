"""Rounds and slots: which game event an outcome is, and the order the rules give them.

Owns the tables of kinds and slots (:data:`KIND_SLOTS`, :data:`LAB_KINDS`) and :func:`check`,
the order rules within a round (docs/outcomes-api.md, "Rounds and slots"; docs/log-format.md,
"Slots and chains"): each outcome fills one slot of its (client, table, round) at most once,
lab entries ``lab/<request id>`` slots of their own; Mega Fire Blaze in the order of 58 Pa.
Code 617b.7 (a), (e), (f), (g)(3), (g)(5)(ii); a game server's Blazing 7's bonus round after
its round's spin on 7, 17 or 27 (617c.2(e)); nothing after a void. Pure: no storage, no I/O;
the sequencer feeds it, the verifier (:mod:`rng_service.audit.rounds_check`) uses its tables.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rng_service.errors import (
    InvalidArgument,
    RoundOrderViolation,
    RoundVoided,
    SlotFilled,
)
from rng_service.log.entry import JsonValue, LogEntry

__all__ = [
    "BLAZING_7S_TRIGGERS",
    "BONUS_KIND",
    "FIRE_NUMBERS_KIND",
    "GENERIC_KINDS",
    "JACKPOT_KIND",
    "KIND_SLOTS",
    "LAB_KINDS",
    "LAB_SLOT_PREFIX",
    "MULTIBALL_KIND",
    "NEED_A_FILLED_ROUND",
    "NEED_A_SPIN_FOR_GAME_SERVERS",
    "RESERVED_SLOTS",
    "SLOT_ALLOWED",
    "SPIN_KIND",
    "VOID_KIND",
    "VOID_SLOT",
    "Filled",
    "check",
    "effective_slot",
    "is_lab_slot",
    "named_slot",
    "needs_a_filled_round",
    "slot_of_legacy",
]

SPIN_KIND = "roulette_spin"
JACKPOT_KIND = "jackpot_tier"
FIRE_NUMBERS_KIND = "fire_numbers"
BONUS_KIND = "mega_fire_blaze_bonus"
MULTIBALL_KIND = "multiball"
VOID_KIND = "round_void"
VOID_SLOT = "void"

#: The slot each game kind fills.
KIND_SLOTS: Mapping[str, str] = {
    SPIN_KIND: "spin",
    FIRE_NUMBERS_KIND: "fire_numbers",
    BONUS_KIND: "bonus",
    JACKPOT_KIND: "jackpot",
    "dice_roll": "dice",
    "card_shuffle": "shuffle",
    MULTIBALL_KIND: "multiball",
    VOID_KIND: VOID_SLOT,
}
#: Kinds whose slot the client names (default: the kind's own name).
GENERIC_KINDS = frozenset({"uniform_int", "weighted_choice"})
#: Kinds of lab entries: a slot of their own per entry, no round rules.
LAB_KINDS = frozenset(
    {"roulette_spin_batch", "dice_roll_batch", "uniform_int_batch", "raw_output_session"}
)
LAB_SLOT_PREFIX = "lab/"
#: Slot names a client may not give a generic draw: the game kinds' slots.
RESERVED_SLOTS = frozenset(KIND_SLOTS.values())
_SLOT_NAME = re.compile(r"[A-Za-z0-9._:-]{1,64}")
SLOT_ALLOWED = "1 to 64 characters of A-Z a-z 0-9 . _ : -, not " + ", ".join(sorted(RESERVED_SLOTS))


def named_slot(kind: str, given: str) -> str:
    """The slot a request names, validated: "" for the kind's own slot (the default).

    A generic draw may name a slot (:data:`SLOT_ALLOWED`; its kind's own name is the default);
    any other kind fills its fixed slot, so ``given`` must be empty or that slot. Raises
    :class:`InvalidArgument` for ``context.slot``.
    """
    if not given:
        return ""
    if kind in GENERIC_KINDS:
        if given == kind:
            return ""
        if not _SLOT_NAME.fullmatch(given) or given in RESERVED_SLOTS:
            shown = given[:40] + ("..." if len(given) > 40 else "")
            raise InvalidArgument("context.slot", f"{shown!r} is not allowed", allowed=SLOT_ALLOWED)
        return given
    own = KIND_SLOTS.get(kind)
    if own is not None and given == own:
        return ""
    fixed = f"'{own}'" if own is not None else "a slot of its own (lab/<request_id>)"
    raise InvalidArgument(
        "context.slot",
        f"{kind} fills {fixed}; only generic draws name their slot",
        allowed=f"empty{f' or {own!r}' if own is not None else ''}",
    )


def effective_slot(kind: str, named: str, request_id: str) -> str:
    """The slot an entry fills: a lab entry's own, the client's name, or the kind's slot."""
    if kind in LAB_KINDS:
        return LAB_SLOT_PREFIX + request_id
    if named:
        return named
    return KIND_SLOTS.get(kind, kind)


def is_lab_slot(slot: str) -> bool:
    return slot.startswith(LAB_SLOT_PREFIX)


def slot_of_legacy(kind: str) -> str | None:
    """The slot a format-1 entry (written before slots existed) of ``kind`` fills, if any: the
    slot of its kind (lab entries and kinds without a slot fill none)."""
    if kind in GENERIC_KINDS:
        return kind
    if kind == VOID_KIND or kind in LAB_KINDS:
        return None
    return KIND_SLOTS.get(kind)


@dataclass(slots=True)
class Filled:
    """A filled slot of a round: the entry's log index, and the entry itself, decoded only
    when a rule needs its outcome or a refusal its request id."""

    index: int
    load: Callable[[], LogEntry]
    _entry: LogEntry | None = field(default=None, repr=False)

    @property
    def entry(self) -> LogEntry:
        if self._entry is None:
            self._entry = self.load()
        return self._entry

    @property
    def request_id(self) -> str:
        return self.entry.request_id


@dataclass(frozen=True, slots=True)
class _Request:
    """What an order rule reads: the request and its round's filled slots."""

    table_id: str
    round_id: str
    params: Mapping[str, JsonValue]
    profile_sha256: str
    filled: Mapping[str, Filled]
    game_server: bool

    @property
    def where(self) -> str:
        return _where(self.table_id, self.round_id)

    def refuse(self, rule: str, text: str) -> RoundOrderViolation:
        return RoundOrderViolation(
            f"{self.where}: {text}", table_id=self.table_id, round_id=self.round_id, rule=rule
        )


def _where(table_id: str, round_id: str) -> str:
    return f"table {table_id!r} round {round_id!r}"


def check(
    *,
    kind: str,
    slot: str,
    table_id: str,
    round_id: str,
    params: Mapping[str, JsonValue],
    profile_sha256: str,
    filled: Mapping[str, Filled],
    game_server: bool = False,
) -> dict[str, JsonValue]:
    """Checks a request against its round's filled slots; returns the links its entry records
    (for example ``{"spin_index": 12}``), or raises a :class:`~rng_service.errors.RoundRefused`.

    ``filled`` maps each filled slot of the round to its entry (no lab slot: those are no
    slots of a round, and no rule names one). ``game_server``: the caller is a game server
    (not a lab), so the rules for game servers only apply (Blazing 7's, 617c.2(e)). The
    checks, in order: the round is not voided; the request's slot is empty; the kind's order
    rules.
    """
    rule = _RULES.get(kind)
    if not filled and not needs_a_filled_round(kind, game_server):  # the common case
        return {}
    if slot.startswith(LAB_SLOT_PREFIX):
        return {}
    where = _where(table_id, round_id)
    void = filled.get(VOID_SLOT)
    if void is not None:
        if kind == VOID_KIND:
            message = f"{where} was already voided at log index {void.index}"
        else:
            message = (
                f"{where} was voided at log index {void.index}: nothing more is drawn in it; "
                "start a new round"
            )
        raise RoundVoided(message, table_id=table_id, round_id=round_id, index=void.index)
    taken = filled.get(slot)
    if taken is not None:
        raise SlotFilled(
            f"{where}: slot {slot!r} is already filled by request {taken.request_id!r} at log "
            f"index {taken.index}; a game event is drawn once (retry with that request id to "
            "get its outcome again)",
            table_id=table_id,
            round_id=round_id,
            slot=slot,
            index=taken.index,
        )
    if rule is None:
        return {}
    return rule(_Request(table_id, round_id, params, profile_sha256, filled, game_server))


def needs_a_filled_round(kind: str, game_server: bool) -> bool:
    """Whether a round with nothing in it refuses ``kind`` (for a game server or not)."""
    return kind in NEED_A_FILLED_ROUND or (game_server and kind in NEED_A_SPIN_FOR_GAME_SERVERS)


def _fire_numbers(r: _Request) -> dict[str, JsonValue]:
    spin = r.filled.get("spin")
    if spin is not None:
        raise r.refuse(
            "fire_numbers_after_spin",
            "the Fire Numbers are selected before the round's spin (58 Pa. Code 617b.7(e)); "
            f"this round was spun at log index {spin.index}",
        )
    jackpot = r.filled.get("jackpot")
    if jackpot is not None:
        raise r.refuse(
            "jackpot_in_mega_fire_blaze",
            f"this round drew a jackpot tier at log index {jackpot.index}: in Mega Fire Blaze "
            "Roulette the jackpot's tier is drawn inside the bonus game (58 Pa. Code "
            "617b.7(g)(5)(ii)), so a round with a DrawJackpotTier takes no Fire Numbers; "
            "start a new round",
        )
    return {}


def _jackpot(r: _Request) -> dict[str, JsonValue]:
    for slot, what in (("bonus", "its bonus game"), ("fire_numbers", "its Fire Numbers")):
        held = r.filled.get(slot)
        if held is not None:
            raise r.refuse(
                "jackpot_in_mega_fire_blaze",
                f"this is a Mega Fire Blaze round ({what} at log index {held.index}): its "
                "jackpot's tier is drawn inside the bonus game (58 Pa. Code 617b.7(g)(5)(ii), "
                "PlayMegaFireBlazeBonus), not by DrawJackpotTier",
            )
    return {}


def _multiball(r: _Request) -> dict[str, JsonValue]:
    if not r.game_server:
        return {}  # a lab's draw of the balls alone (docs/outcomes.md, "Round rules")
    spin = r.filled.get("spin")
    if spin is None:
        raise r.refuse(
            "multiball_without_spin",
            "the Blazing 7's bonus round follows the round's spin that came to rest on 7, 17 "
            "or 27 (58 Pa. Code 617c.2(e)); this round has no spin yet",
        )
    wheel = r.params.get("wheel")
    spun = spin.entry.params.get("wheel")
    if wheel != spun:
        raise r.refuse(
            "multiball_wheel",
            f"wheel: the round's spin at log index {spin.index} was on a {spun} wheel; the "
            f"Blazing 7's bonus round is played on the same wheel (58 Pa. Code 617c.2(g)), "
            f"not {wheel}",
        )
    number = _final_number(spin)
    if number not in BLAZING_7S_TRIGGERS:
        raise r.refuse(
            "multiball_not_triggered",
            f"the round's spin at log index {spin.index} came to rest on {number}, not on 7, "
            "17 or 27: there is no Blazing 7's bonus round (58 Pa. Code 617c.2(e))",
        )
    return {"spin_index": spin.index}


def _spin(r: _Request) -> dict[str, JsonValue]:
    fire = r.filled.get("fire_numbers")
    wheel = r.params.get("wheel")
    if fire is not None and wheel != "single_zero":
        raise r.refuse(
            "fire_numbers_wheel",
            f"this round has Fire Numbers (log index {fire.index}): Mega Fire Blaze Roulette "
            "is played on a single zero wheel (58 Pa. Code 617b.7(a)); wheel must be "
            f"WHEEL_TYPE_SINGLE_ZERO, not {wheel}",
        )
    return {}


def _final_number(spin: Filled) -> Any:
    final = spin.entry.outcome.get("final")
    return final.get("number") if isinstance(final, dict) else None


def _bonus(r: _Request) -> dict[str, JsonValue]:
    fire = r.filled.get("fire_numbers")
    named = r.params.get("fire_numbers_index")
    if fire is None:
        raise r.refuse(
            "bonus_without_fire_numbers",
            "fire_numbers_index: this round has no Fire Number draw (SelectFireNumbers comes "
            "first, 58 Pa. Code 617b.7(e))",
        )
    if named is not None and named != fire.index:
        raise r.refuse(
            "bonus_fire_numbers_index",
            f"fire_numbers_index: {named} is not this round's Fire Number draw, which is at log "
            f"index {fire.index} (the field may be left out)",
        )
    drawn = fire.entry
    if drawn.profile_sha256 != r.profile_sha256:
        raise r.refuse(
            "bonus_profile",
            f"profile: the Fire Number draw at log index {fire.index} was made under profile "
            f"sha256 {drawn.profile_sha256}; the bonus game must use the same profile",
        )
    spin = r.filled.get("spin")
    if spin is None:
        raise r.refuse(
            "bonus_without_spin",
            "the bonus game is played when the round's spin comes to rest on a Fire Number "
            "(58 Pa. Code 617b.7(f)); this round has no spin yet",
        )
    numbers = drawn.outcome.get("numbers")
    number = _final_number(spin)
    if not isinstance(numbers, list) or number not in numbers:
        raise r.refuse(
            "bonus_not_triggered",
            f"the round's spin at log index {spin.index} came to rest on {number}, not on one "
            f"of its Fire Numbers {numbers} (log index {fire.index}): there is no bonus game "
            "(58 Pa. Code 617b.7(f))",
        )
    count = drawn.outcome.get("count")
    return {"fire_number_count": count, "fire_numbers_index": fire.index, "spin_index": spin.index}


#: Kinds that a round with nothing in it refuses (:func:`check` of any other kind on such a
#: round returns no links and raises nothing).
NEED_A_FILLED_ROUND = frozenset({BONUS_KIND})
#: Kinds that a round with nothing in it refuses when a game server asks (617c.2(e)).
NEED_A_SPIN_FOR_GAME_SERVERS = frozenset({MULTIBALL_KIND})
#: The final numbers of a spin that trigger the Blazing 7's bonus round (617c.2(e)); the
#: outcomes' own ``multiball.BLAZING_7S_NUMBERS`` (this module imports no outcome module:
#: docs/architecture.md), which a test holds equal.
BLAZING_7S_TRIGGERS = frozenset({"7", "17", "27"})

_RULES: Mapping[str, Callable[[_Request], dict[str, JsonValue]]] = {
    FIRE_NUMBERS_KIND: _fire_numbers,
    SPIN_KIND: _spin,
    BONUS_KIND: _bonus,
    JACKPOT_KIND: _jackpot,
    MULTIBALL_KIND: _multiball,
}
