"""The round rules of ``rng-audit verify`` over a whole log, from the entries' signed bytes.

Owns :class:`RoundTracker` (docs/log-format.md, "Slots and chains"; docs/outcomes-api.md,
"Rounds and slots"): each slot of a round filled once, each request id once per client, a
slot that agrees with its kind, nothing after a void, Mega Fire Blaze in the order of
58 Pa. Code 617b.7 and Blazing 7's bonus rounds after their spin (617c.2(e)). The rules'
tables (kinds and slots) come from :mod:`rng_service.log.rounds`, the service's own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rng_service.audit.fast_check import EntryShape, json_bytes
from rng_service.audit.results import VerificationFailure, at
from rng_service.log import rounds

__all__ = ["RoundTracker"]


def _text(part: bytes) -> str:
    """The value of a canonical JSON string of an entry (for messages)."""
    value: str = json.loads(part)
    return value


_SLOT_OF_KIND = {json_bytes(k): json_bytes(v) for k, v in rounds.KIND_SLOTS.items()}
_LEGACY_SLOT = {
    json_bytes(k): json_bytes(v)
    for k in (*rounds.KIND_SLOTS, *rounds.GENERIC_KINDS)
    if (v := rounds.slot_of_legacy(k)) is not None
}
_LAB_KINDS = frozenset(json_bytes(k) for k in rounds.LAB_KINDS)
_RESERVED_SLOTS = frozenset(json_bytes(s) for s in rounds.RESERVED_SLOTS)
_LAB_SLOT = b'"' + rounds.LAB_SLOT_PREFIX.encode("ascii")
_VOID_KIND = json_bytes(rounds.VOID_KIND)
_SPIN = json_bytes(rounds.KIND_SLOTS[rounds.SPIN_KIND])
_FIRE = json_bytes(rounds.KIND_SLOTS[rounds.FIRE_NUMBERS_KIND])
_BONUS = json_bytes(rounds.KIND_SLOTS[rounds.BONUS_KIND])
_JACKPOT = json_bytes(rounds.KIND_SLOTS[rounds.JACKPOT_KIND])
_SPIN_KIND = json_bytes(rounds.SPIN_KIND)
_FIRE_KIND = json_bytes(rounds.FIRE_NUMBERS_KIND)
_BONUS_KIND = json_bytes(rounds.BONUS_KIND)
_JACKPOT_KIND = json_bytes(rounds.JACKPOT_KIND)
_MULTIBALL_KIND = json_bytes(rounds.MULTIBALL_KIND)
#: The final numbers of 617c.2(e) as they appear between the quotes of a canonical entry.
_BLAZING_7S_BYTES = frozenset(n.encode("ascii") for n in rounds.BLAZING_7S_TRIGGERS)


class RoundTracker:
    """The round rules over a whole log read in index order (docs/log-format.md, "Slots and
    chains"; docs/outcomes-api.md, "Rounds and slots"), from the entries' signed bytes:

    - each (client, table, round, slot) is filled at most once: a second entry for it is a game
      event drawn twice (format 1 entries fill the slot of their kind, the first one of a round,
      so a round begun before the upgrade is not drawn again after it; several format 1 entries
      of one round are allowed, format 1 had no slots);
    - each request id at most once per client (the idempotency key: a retry is answered with
      the logged entry, never logged again);
    - a slot agrees with its kind (a game kind its own slot, a lab entry ``lab/<request id>``,
      a generic draw no game kind's slot), so that no entry escapes the first rule under
      another slot name;
    - nothing in a round after its void;
    - Mega Fire Blaze (58 Pa. Code 617b.7): the Fire Numbers before the round's spin (e), that
      spin on a single zero wheel (a), the bonus game after a Fire Number draw and a spin of its
      round that came to rest on a Fire Number (f), naming both entries, under the draw's
      profile and with its Fire Number count (g)(3); no jackpot tier draw in a round with Fire
      Numbers or a bonus game, and no Fire Numbers in a round with a jackpot tier draw (the
      jackpot's tier is drawn inside the bonus game, (g)(5)(ii));
    - Blazing 7's (58 Pa. Code 617c.2(e)): a multi-ball draw that names a spin
      (``spin_index``: a game server's, which the sequencer links) names its round's spin,
      which came to rest on 7, 17 or 27 on the same wheel type. One that names none is a
      lab's draw of the balls alone: the log does not record the client's role, so that its
      client is no game server is in the service's configuration, not in the signed bytes.

    Format 1 entries (release 1, before slots) fill their slots but are held to no order rule:
    release 1 had none of these rules. Format 2 is the first format the service writes with
    them.

    Memory: two keys per entry (its round and slot, its client and request id: the entries' own
    JSON strings, about 150 bytes an entry in all), plus the numbers of each Fire Number draw,
    the final number of each spin of a round with Fire Numbers, and the wheel of each spin that
    came to rest on 7, 17 or 27.
    """

    def __init__(self) -> None:
        self._filled: dict[bytes, int] = {}
        self._requests: dict[bytes, int] = {}
        self._fire: dict[int, tuple[Any, Any, Any]] = {}  # index -> numbers, count, profile
        self._final: dict[int, Any] = {}  # index of a spin of a round with Fire Numbers -> number
        self._blazing: dict[int, Any] = {}  # index of a spin on 7, 17 or 27 -> its wheel
        # Rounds with a void, with Fire Numbers: few, so that most entries look up nothing more.
        self._voided: dict[bytes, int] = {}
        self._fire_rounds: set[bytes] = set()

    def add(self, position: int, line: int, shape: EntryShape, data: bytes) -> None:
        """The next entry; raises :class:`VerificationFailure` at a broken rule."""
        prior = self._requests.setdefault(shape.client + shape.request_id, position)
        if prior != position:
            raise VerificationFailure(
                f"{at(position, line)} has request id {_text(shape.request_id)!r} of client "
                f"{_text(shape.client)!r}, which entry {prior} already has: a request id is "
                f"logged once (a retry is answered with the logged entry), so one request was "
                f"drawn twice",
                index=position,
            )
        slot, kind = shape.slot, shape.kind
        round_key = shape.client + shape.table_id + shape.round_id
        filled = self._filled
        if slot is None:  # format 1: the slot of its kind, if it has one, from its first entry
            legacy = _LEGACY_SLOT.get(kind)
            if legacy is None:
                return
            first = filled.setdefault(round_key + legacy, position)
            if first == position and kind in _ORDERED:
                self._remember(position, kind, round_key, _record(data))
            if first == position and kind == _SPIN_KIND:
                self._blazing_7(position, data)
            return
        # A slot agrees with its kind: a game kind's own slot (any other, a lab slot too, is
        # wrong), a lab entry's lab/<request id>, a generic draw's neither a game kind's slot
        # nor a lab slot.
        own = _SLOT_OF_KIND.get(kind)
        if own is not None:
            if slot != own:
                raise self._slot_of_kind(position, line, shape)
        elif kind in _LAB_KINDS:
            if slot != _LAB_SLOT + shape.request_id[1:]:
                raise self._slot_of_kind(position, line, shape)
            return  # a lab entry's slot is its own: no round rules
        elif slot in _RESERVED_SLOTS or slot.startswith(_LAB_SLOT):
            raise self._slot_of_kind(position, line, shape)
        void = self._voided.get(round_key) if self._voided else None
        if void is not None:
            raise VerificationFailure(
                f"{at(position, line)} is in {self._slot_name(shape)}, but that round was "
                f"voided at entry {void}: nothing is drawn in a round after its void",
                index=position,
            )
        prior = filled.setdefault(round_key + slot, position)
        if prior != position:
            raise VerificationFailure(
                f"{at(position, line)} fills {self._slot_name(shape)}, which entry {prior} "
                f"already filled: a game event was drawn twice",
                index=position,
            )
        if kind == _SPIN_KIND:
            self._blazing_7(position, data)
        if kind == _VOID_KIND:
            self._voided[round_key] = position
        elif kind in _ORDERED and (
            kind != _SPIN_KIND or (self._fire_rounds and round_key in self._fire_rounds)
        ):
            self._order(position, line, shape, round_key, data)

    def _blazing_7(self, position: int, data: bytes) -> None:
        """Remembers the wheel of a spin that came to rest on 7, 17 or 27 (617c.2(e)).

        Most spins are not decoded: in the canonical bytes the first ``"final":{`` is the
        outcome's final spin (no member before ``outcome`` has one, and a ``"`` inside a string
        is escaped), and the first ``"number":"`` after it is that spin's number (its only
        member before ``number`` is ``colour``); a spin's params are ``{"wheel": ...}``. (Round
        rules run only on entries checked canonical.) A spin of another shape is decoded."""
        at = data.find(b'"final":{')
        if at < 0:
            return
        at = data.find(b'"number":"', at)
        if at < 0:
            return
        at += 10
        if data[at : data.find(b'"', at)] not in _BLAZING_7S_BYTES:
            return
        at = data.find(b'"params":{"wheel":"')
        if at >= 0:
            at += 19
            end = data.find(b'"', at)
            if data[end : end + 2] == b'"}':
                self._blazing[position] = data[at:end].decode("ascii", "replace")
                return
        record = _record(data)
        final = record["outcome"].get("final")
        number = final.get("number") if isinstance(final, dict) else None
        if number in rounds.BLAZING_7S_TRIGGERS:
            self._blazing[position] = record["params"].get("wheel")

    def _remember(self, position: int, kind: bytes, round_key: bytes, record: Any) -> None:
        """What a later entry of the round is checked against: a Fire Number draw's numbers,
        count and profile; the final number of a spin of a round with Fire Numbers."""
        outcome = record["outcome"]
        if kind == _FIRE_KIND:
            self._fire_rounds.add(round_key)
            self._fire[position] = (
                outcome.get("numbers"), outcome.get("count"), record["profile_sha256"]
            )  # fmt: skip
        elif kind == _SPIN_KIND and round_key in self._fire_rounds:
            final = outcome.get("final")
            self._final[position] = final.get("number") if isinstance(final, dict) else None

    def _order(
        self, position: int, line: int, shape: EntryShape, round_key: bytes, data: bytes
    ) -> None:
        """Mega Fire Blaze's order within a round (58 Pa. Code 617b.7)."""
        kind = shape.kind
        fire = self._filled.get(round_key + _FIRE)
        spin = self._filled.get(round_key + _SPIN)

        def broken(why: str) -> VerificationFailure:
            return VerificationFailure(
                f"{at(position, line)} ({_text(kind)}) in {self._slot_name(shape)} breaks the "
                f"round's order: {why}",
                index=position,
            )

        if kind == _FIRE_KIND and spin is not None:
            raise broken(
                f"the Fire Numbers come before the round's spin (58 Pa. Code 617b.7(e)), "
                f"which is entry {spin}"
            )
        if kind in (_FIRE_KIND, _JACKPOT_KIND):
            if kind == _FIRE_KIND:
                held, what = self._filled.get(round_key + _JACKPOT), "a jackpot tier draw"
            else:
                held = fire if fire is not None else self._filled.get(round_key + _BONUS)
                what = "Fire Numbers" if fire is not None else "a bonus game"
            if held is not None:
                raise broken(
                    f"the round has {what} (entry {held}): in Mega Fire Blaze Roulette the "
                    "jackpot's tier is drawn inside the bonus game (58 Pa. Code "
                    "617b.7(g)(5)(ii)), so a round holds a jackpot tier draw or Fire Numbers, "
                    "not both"
                )
            if kind == _JACKPOT_KIND:
                return
        if kind == _MULTIBALL_KIND:
            self._multiball(position, line, shape, spin, data, broken)
            return
        if fire is None and kind == _SPIN_KIND:
            return  # a spin of a round without Fire Numbers: the common case, nothing to read
        record = _record(data)
        params = record["params"]
        if kind == _SPIN_KIND and params.get("wheel") != "single_zero":
            raise broken(
                f"the round has Fire Numbers (entry {fire}), so it is spun on a single zero "
                f"wheel (58 Pa. Code 617b.7(a)), not {params.get('wheel')!r}"
            )
        if kind == _BONUS_KIND:
            self._bonus(record, fire, spin, broken)
        self._remember(position, kind, round_key, record)

    def _bonus(
        self,
        record: Any,
        fire: int | None,
        spin: int | None,
        broken: Callable[[str], VerificationFailure],
    ) -> None:
        """A Mega Fire Blaze bonus game follows its round's Fire Number draw and a spin that
        came to rest on a Fire Number, naming both, under the draw's profile and with its Fire
        Number count (58 Pa. Code 617b.7(e), (f), (g)(3))."""
        params = record["params"]
        if fire is None or spin is None:
            missing = "no Fire Number draw" if fire is None else "no spin"
            raise broken(
                "a bonus game follows the round's Fire Number draw and its spin (58 Pa. "
                f"Code 617b.7(e), (f)); the round has {missing} before it"
            )
        numbers, count, profile = self._fire.get(fire, (None, None, None))
        number = self._final.get(spin)
        links = (params.get("fire_numbers_index"), params.get("spin_index"))
        if links != (fire, spin):
            raise broken(
                f"it names Fire Number draw {links[0]} and spin {links[1]}, but the round's "
                f"are entries {fire} and {spin}"
            )
        if not isinstance(numbers, list) or number not in numbers:
            raise broken(
                f"the round's spin (entry {spin}) came to rest on {number}, not on one of "
                f"its Fire Numbers {numbers} (entry {fire}): there is no bonus game "
                f"(58 Pa. Code 617b.7(f))"
            )
        if params.get("fire_number_count") != count or record["profile_sha256"] != profile:
            raise broken(
                f"its Fire Number count or profile is not that of the round's Fire Number "
                f"draw (entry {fire}: {count} numbers; 58 Pa. Code 617b.7(g)(3))"
            )

    def _multiball(
        self,
        position: int,
        line: int,
        shape: EntryShape,
        spin: int | None,
        data: bytes,
        broken: Callable[[str], VerificationFailure],
    ) -> None:
        """A game server's Blazing 7's bonus round (one that names a spin) follows its round's
        spin on 7, 17 or 27 on the same wheel type (58 Pa. Code 617c.2(e))."""
        if b'"spin_index":' not in data:
            return  # a lab's draw of the balls alone (see the class docstring)
        params = _record(data)["params"]
        named = params.get("spin_index")
        if named is None:
            return
        if spin is None or named != spin:
            held = "has no spin" if spin is None else f"has its spin at entry {spin}"
            raise broken(
                f"it names spin {named}, but the round {held}: a game server's Blazing 7's "
                "bonus round follows its round's spin (58 Pa. Code 617c.2(e))"
            )
        wheel = params.get("wheel")
        if self._blazing.get(spin, False) != wheel:
            raise broken(
                f"the round's spin (entry {spin}) did not come to rest on 7, 17 or 27 on a "
                f"{wheel} wheel: there is no Blazing 7's bonus round (58 Pa. Code 617c.2(e))"
            )

    @staticmethod
    def _slot_name(shape: EntryShape) -> str:
        slot = "?" if shape.slot is None else _text(shape.slot)
        return (
            f"slot {slot!r} of round {_text(shape.round_id)!r} of table "
            f"{_text(shape.table_id)!r} (client {_text(shape.client)!r})"
        )

    def _slot_of_kind(self, position: int, line: int, shape: EntryShape) -> VerificationFailure:
        return VerificationFailure(
            f"{at(position, line)} is a {_text(shape.kind)} entry in "
            f"{self._slot_name(shape)}: that is not its kind's slot (a game kind fills its "
            f"own, a lab entry 'lab/<request id>', a generic draw none of the game kinds' "
            f"slots)",
            index=position,
        )


_ORDERED = frozenset({_SPIN_KIND, _FIRE_KIND, _BONUS_KIND, _JACKPOT_KIND, _MULTIBALL_KIND})


def _record(data: bytes) -> Any:
    """The decoded entry (its bytes were checked canonical before)."""
    return json.loads(data)
