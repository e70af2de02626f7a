"""Proto <-> domain conversion and request validation for the gRPC adapters.

Validation errors name the field (with its proto path) and the allowed values; nothing is drawn
or logged for a request that fails here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rng_service._proto.rng.v1 import common_pb2, outcomes_pb2
from rng_service.errors import InvalidArgument
from rng_service.log.appender import AppendResult
from rng_service.outcomes.roulette import WheelType

__all__ = [
    "IDS_ALLOWED",
    "REQUEST_ID_ALLOWED",
    "RequestIds",
    "receipt_to_proto",
    "request_ids",
    "spin_to_proto",
    "wheel_from_proto",
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
