"""Proto <-> domain conversion and request validation for the gRPC adapters.

Validation errors name the field (with its proto path) and the allowed values; nothing is drawn
or logged for a request that fails here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rng_service._proto.rng.v1 import common_pb2, outcomes_pb2
from rng_service.errors import InvalidArgument
from rng_service.outcomes import cards, generic
from rng_service.outcomes.profiles import MegaFireBlazeProfile
from rng_service.outcomes.roulette import WHEEL_ORDER, WheelType
from rng_service.settlement.paytables import PaytableDocument
from rng_service.writer.appender import AppendResult

__all__ = [
    "IDS_ALLOWED",
    "JSON_INT_MAX",
    "REQUEST_ID_ALLOWED",
    "RequestIds",
    "ShuffleRequest",
    "bonus_to_proto",
    "count_in",
    "field_prefix",
    "hands_to_proto",
    "jackpot_tier_to_proto",
    "json_int",
    "profile_ref",
    "receipt_to_proto",
    "request_ids",
    "shuffle_from_proto",
    "spin_to_proto",
    "uniform_from_proto",
    "wheel_from_proto",
    "wheel_positions",
]

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
REQUEST_ID_ALLOWED = "1 to 128 characters of A-Z a-z 0-9 . _ : -"
IDS_ALLOWED = "1 to 128 printable ASCII characters"


@dataclass(frozen=True, slots=True)
class RequestIds:
    table_id: str
    round_id: str
    request_id: str
    session_id: str
    slot: str = ""
    """``context.slot`` as sent; which values a request may give depends on its kind
    (``rng_service.log.rounds.named_slot``)."""


def _printable_id(value: str, field: str, *, required: bool) -> str:
    if not value:
        if required:
            raise InvalidArgument(field, "is required", allowed=IDS_ALLOWED)
        return value
    if len(value) > 128 or not (value.isascii() and value.isprintable()):
        raise InvalidArgument(
            field,
            f"{value[:40]!r}{'...' if len(value) > 40 else ''} is malformed",
            allowed=IDS_ALLOWED if required else "0 to 128 printable ASCII characters",
        )
    return value


def request_ids(ctx: common_pb2.RequestContext, has_context: bool) -> RequestIds:
    if not has_context:
        raise InvalidArgument("context", "is required (table_id, round_id, request_id)")
    if not _REQUEST_ID.fullmatch(ctx.request_id):
        shown = ctx.request_id[:40] + ("..." if len(ctx.request_id) > 40 else "")
        raise InvalidArgument(
            "context.request_id",
            "is required" if not ctx.request_id else f"{shown!r} is malformed",
            allowed=REQUEST_ID_ALLOWED,
        )
    return RequestIds(
        table_id=_printable_id(ctx.table_id, "context.table_id", required=True),
        round_id=_printable_id(ctx.round_id, "context.round_id", required=True),
        request_id=ctx.request_id,
        session_id=_printable_id(ctx.session_id, "context.session_id", required=False),
        slot=ctx.slot,
    )


_WHEELS = {
    outcomes_pb2.WHEEL_TYPE_SINGLE_ZERO: WheelType.SINGLE_ZERO,
    outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO: WheelType.DOUBLE_ZERO,
    outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO_AS_SINGLE_ZERO: WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO,
}


def wheel_from_proto(value: int) -> WheelType:
    try:
        return _WHEELS[value]  # type: ignore[index]
    except KeyError:
        raise InvalidArgument(
            "wheel",
            f"{value} is not a wheel type",
            allowed=", ".join(outcomes_pb2.WheelType.Name(k) for k in _WHEELS),
        ) from None


_COLOURS = {
    "green": outcomes_pb2.COLOR_GREEN,
    "red": outcomes_pb2.COLOR_RED,
    "black": outcomes_pb2.COLOR_BLACK,
}


def spin_to_proto(record: Mapping[str, Any]) -> outcomes_pb2.RouletteSpin:
    """A spin record of the log entry (``rng_service.outcomes.roulette.Spin.to_record``)."""
    return outcomes_pb2.RouletteSpin(
        number=record["number"],
        color=_COLOURS[record["colour"]],
        wheel_position=record["position"],
        void=record["voided"],
    )


def receipt_to_proto(result: AppendResult) -> common_pb2.Receipt:
    r = result.receipt
    return common_pb2.Receipt(
        index=r.index,
        entry=r.entry,
        leaf_hash=r.leaf_hash,
        inclusion_proof=list(r.inclusion_proof),
        tree_size=r.tree_size,
        checkpoint=r.checkpoint,
        replayed=r.replayed,
    )


# --- shared helpers ---------------------------------------------------------------------------

#: Log entries carry exact JSON integers only (docs/log-format.md): |n| <= 2**53 - 1.
JSON_INT_MAX = 2**53 - 1
_JSON_INT_ALLOWED = "-(2^53 - 1)..2^53 - 1"


def json_int(value: int, field: str) -> int:
    """``value`` if a log entry can carry it exactly, else INVALID_ARGUMENT naming ``field``."""
    if not -JSON_INT_MAX <= value <= JSON_INT_MAX:
        raise InvalidArgument(field, f"{value} is out of range", allowed=_JSON_INT_ALLOWED)
    return value


def count_in(value: int, field: str, low: int, high: int) -> int:
    """``value`` if in ``[low, high]``, else INVALID_ARGUMENT naming ``field`` and the range."""
    if not low <= value <= high:
        raise InvalidArgument(field, f"{value} is out of range", allowed=f"{low}..{high}")
    return value


@contextmanager
def field_prefix(prefix: str) -> Iterator[None]:
    """Re-raise a domain InvalidArgument with its field as the request's path (``dice.sides``)."""
    try:
        yield
    except InvalidArgument as e:
        text = str(e).removeprefix(f"{e.field}: ")
        if e.allowed:
            text = text.removesuffix(f" (allowed: {e.allowed})")
        raise InvalidArgument(f"{prefix}.{e.field}", text, allowed=e.allowed) from None


def profile_ref(profile: MegaFireBlazeProfile | PaytableDocument) -> outcomes_pb2.ProfileRef:
    """The document's identity and whether its canonical form says ``example = true``."""
    return outcomes_pb2.ProfileRef(
        name=profile.id.name,
        version=profile.id.version,
        sha256=profile.id.sha256,
        example=profile.example,
    )


# --- Mega Fire Blaze ----------------------------------------------------------------------------

_DESIGNATIONS = {
    "x2": outcomes_pb2.SEGMENT_DESIGNATION_X2,
    "x3": outcomes_pb2.SEGMENT_DESIGNATION_X3,
    "x5": outcomes_pb2.SEGMENT_DESIGNATION_X5,
    "jackpot": outcomes_pb2.SEGMENT_DESIGNATION_JACKPOT,
}
_TIERS = {
    "mini": outcomes_pb2.JACKPOT_TIER_MINI,
    "minor": outcomes_pb2.JACKPOT_TIER_MINOR,
    "major": outcomes_pb2.JACKPOT_TIER_MAJOR,
    "grand": outcomes_pb2.JACKPOT_TIER_GRAND,
}
_BETS = {
    "straight_up": outcomes_pb2.INSIDE_BET_STRAIGHT_UP,
    "split": outcomes_pb2.INSIDE_BET_SPLIT,
    "street": outcomes_pb2.INSIDE_BET_STREET,
    "corner": outcomes_pb2.INSIDE_BET_CORNER,
    "line": outcomes_pb2.INSIDE_BET_LINE,
}


def jackpot_tier_to_proto(tier: str | None) -> outcomes_pb2.JackpotTier:
    return outcomes_pb2.JACKPOT_TIER_UNSPECIFIED if tier is None else _TIERS[tier]


def bonus_to_proto(
    outcome: Mapping[str, Any],
) -> dict[str, Any]:
    """Response fields of a logged bonus game (``mega_fire_blaze.BonusOutcome.to_record``)."""
    return {
        "fire_number_count": outcome["fire_number_count"],
        "cells": [
            outcomes_pb2.BonusCell(
                index=c["index"],
                segment=c["segment"],
                position=c["index"] - 6 * c["segment"],
                filled=c["multiplier"] is not None,
                multiplier=c["multiplier"] or 0,
                value=c["value"],
            )
            for c in outcome["cells"]
        ],
        "segments": [
            outcomes_pb2.BonusSegment(
                index=s["index"],
                designation=_DESIGNATIONS[s["designation"]],
                complete=s["complete"],
                jackpot_tier=jackpot_tier_to_proto(s["jackpot_tier"]),
                jackpot_value=s["jackpot_value"],
            )
            for s in outcome["segments"]
        ],
        "fill_order": outcome["fill_order"],
        "total": outcome["total"],
        "odds": [
            outcomes_pb2.BetOdds(bet=_BETS[bet], odds=odds)
            for bet, odds in sorted(outcome["odds"].items(), key=lambda kv: _BETS[kv[0]])
        ],
    }


# --- cards and generic draws --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShuffleRequest:
    """A validated shuffle, with the dealing plan and players when one is asked for."""

    params: cards.ShuffleParams
    plan: cards.DealPlan | None
    players: int

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = self.params.to_record()
        if self.plan is not None:
            record["plan"] = self.plan.name
            record["players"] = self.players
        return record


def shuffle_from_proto(request: outcomes_pb2.ShuffleCardsRequest) -> ShuffleRequest:
    params = cards.ShuffleParams(decks=request.decks, jokers=request.jokers)
    if not request.plan:
        if request.players:
            raise InvalidArgument(
                "players", "is only used with a dealing plan", allowed="0 without plan"
            )
        return ShuffleRequest(params=params, plan=None, players=0)
    plan = cards.get_plan(request.plan)
    if (params.decks, params.jokers) != (plan.decks, plan.jokers):
        raise InvalidArgument(
            "decks",
            f"plan {plan.name} deals from {plan.decks} deck(s) with {plan.jokers} joker(s); "
            f"got {params.decks} with {params.jokers}",
            allowed=f"decks={plan.decks}, jokers={plan.jokers}",
        )
    players = count_in(request.players, "players", 1, plan.max_players)
    # Dealing is pure: checking the plan against the unshuffled shoe draws nothing.
    shoe = cards.ShuffleOutcome(
        decks=params.decks, jokers=params.jokers, cards=cards.canonical_shoe(params)
    )
    cards.deal(shoe, plan, players)
    return ShuffleRequest(params=params, plan=plan, players=players)


def hands_to_proto(dealt: cards.DealtRound) -> list[outcomes_pb2.DealtHand]:
    return [
        outcomes_pb2.DealtHand(
            position=h.position, cards=list(h.labels()), shoe_indices=list(h.shoe_indices)
        )
        for h in dealt.hands
    ]


def uniform_from_proto(low: int, high: int, count: int, distinct: bool) -> generic.UniformParams:
    return generic.UniformParams(
        low=json_int(low, "low"), high=json_int(high, "high"), count=count, distinct=distinct
    )


_POSITIONS = {w: {n: i for i, n in enumerate(order)} for w, order in WHEEL_ORDER.items()}


def wheel_positions(wheel: WheelType, numbers: list[str]) -> list[int]:
    """Positions in the wheel's physical order of logged compartment labels."""
    table = _POSITIONS[wheel]
    return [table[n] for n in numbers]
