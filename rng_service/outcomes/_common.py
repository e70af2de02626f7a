"""Shared validation helpers and types for the outcome modules (private).

Owns: the JSON-record type every ``to_record()`` returns, integer validation that raises
:class:`rng_service.errors.InvalidArgument` naming the field and the allowed values, and the
error an outcome raises when a bounded rejection loop runs out (a sign of a broken generator).
Must not: draw random values, perform I/O or import anything above the random core.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeAlias

from rng_service.errors import GeneratorUnavailable, InvalidArgument

__all__ = [
    "JsonValue",
    "RespinLimitExceeded",
    "allowed_list",
    "require_bool",
    "require_int",
    "require_mapping",
    "require_str",
]

JsonValue: TypeAlias = "str | int | bool | list[JsonValue] | dict[str, JsonValue] | None"


class RespinLimitExceeded(GeneratorUnavailable):
    """A bounded respin loop voided every spin (probability at most 38**-64 for a sound
    generator): treat the generator as failed and issue nothing."""


def allowed_list(values: Iterable[object]) -> str:
    """Render allowed values for an error message: ``1, 2, 3``."""
    return ", ".join(str(v) for v in values)


def require_int(value: object, field: str, low: int, high: int) -> int:
    """Return ``value`` if it is an ``int`` (not a ``bool``) in ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(field, f"must be an integer, got {value!r}", allowed=f"{low}..{high}")
    if not low <= value <= high:
        raise InvalidArgument(field, f"{value} is out of range", allowed=f"{low}..{high}")
    return value


def require_bool(value: object, field: str) -> bool:
    """Return ``value`` if it is a ``bool``."""
    if not isinstance(value, bool):
        raise InvalidArgument(field, f"must be a boolean, got {value!r}", allowed="true, false")
    return value


def require_str(value: object, field: str, allowed: Iterable[str] | None = None) -> str:
    """Return ``value`` if it is a ``str`` (and one of ``allowed`` when given)."""
    options = None if allowed is None else tuple(allowed)
    if not isinstance(value, str):
        raise InvalidArgument(
            field, f"must be a string, got {value!r}", allowed=allowed_list(options or ())
        )
    if options is not None and value not in options:
        raise InvalidArgument(field, f"unknown value {value!r}", allowed=allowed_list(options))
    return value


def require_mapping(value: object, field: str) -> Mapping[str, object]:
    """Return ``value`` if it is a mapping with string keys."""
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise InvalidArgument(field, f"must be a table/object, got {type(value).__name__}")
    return value
