"""The checks every configuration section shares (:mod:`rng_service.config`): the one error
type, :class:`ConfigError`, whose message names the setting and the values it allows, and the
checks of a value, a port and a host, and the conversion of a TOML or environment value to its
setting's type.
"""

from __future__ import annotations

import ipaddress
import types
from pathlib import Path
from typing import Any

__all__ = ["ConfigError", "is_loopback"]


class ConfigError(Exception):
    """A setting is missing, mistyped or out of range. The message names it."""


def _require(ok: bool, setting: str, allowed: str, value: object) -> None:
    if not ok:
        raise ConfigError(f"{setting}: {value!r} is not allowed (allowed: {allowed})")


def _port(setting: str, value: int) -> None:
    _require(0 <= value <= 65535, setting, "an integer from 0 to 65535 (0 = any free port)", value)


def _host(setting: str, value: str) -> None:
    if value == "localhost":
        return
    try:
        ipaddress.ip_address(value.strip("[]"))
    except ValueError:
        raise ConfigError(
            f"{setting}: {value!r} is not allowed (allowed: an IP address or 'localhost')"
        ) from None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _coerce(setting: str, hint: Any, value: Any, *, from_env: bool) -> Any:
    """Converts a TOML or environment value to the field's type, or raises ConfigError."""
    if hint is bool:
        if isinstance(value, bool):
            return value
        if from_env and isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
            return value.lower() in ("true", "1")
        raise ConfigError(f"{setting}: {value!r} is not allowed (allowed: true or false)")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if from_env and isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                pass
        raise ConfigError(f"{setting}: {value!r} is not allowed (allowed: an integer)")
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if from_env and isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        raise ConfigError(f"{setting}: {value!r} is not allowed (allowed: a number)")
    if hint is str:
        if isinstance(value, str):
            return value
        raise ConfigError(f"{setting}: {value!r} is not allowed (allowed: a string)")
    if hint is Path:
        if isinstance(value, str) and value:
            return Path(value)
        raise ConfigError(f"{setting}: {value!r} is not allowed (allowed: a file path)")
    if isinstance(hint, types.UnionType):  # pragma: no cover - no optional settings yet
        raise ConfigError(f"{setting}: unsupported setting type")
    raise ConfigError(f"{setting}: unsupported setting type {hint!r}")
