"""The ``[[logs]]`` of one deployment (:mod:`rng_service.config`): each log's origin, signing
key, retired keys, store (an SQLite file or a PostgreSQL database), witnesses, publish interval
and the game profiles it serves (docs/operations/configuration.md, "Several logs").

A log is a C2SP tlog-checkpoint origin with its own key and its own store; several logs in one
deployment keep several casino operators' outcomes apart. Without ``[[logs]]`` the single-log
sections ``[log]`` and ``[storage]`` are the one log. This module parses the entries and checks
what each entry alone and the entries together must satisfy (no origin twice, no store twice,
no signing key twice); :class:`rng_service.config.Config` checks what the entries share with the
rest of the configuration (witness names, client bindings).
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rng_service.config.checks import ConfigError, _coerce, _port, _require

__all__ = ["LogDefinition", "store_identity"]


@dataclass(frozen=True, kw_only=True)
class LogDefinition:
    """One ``[[logs]]`` entry (or the single log of ``[log]`` and ``[storage]``)."""

    #: The log's C2SP tlog-checkpoint origin: its name in every checkpoint and in requests.
    origin: str
    #: Ed25519 private key, PKCS#8 PEM, that signs this log's checkpoints.
    key_file: Path
    #: Signed-note key name ("" = ``origin``).
    key_name: str = ""
    key_passphrase_env: str = ""
    #: Retired keys that stay published (as ``log.retired_keys``: verifier keys or ``.vkey``
    #: files, relative to the directory of ``key_file``).
    retired_keys: tuple[str, ...] = ()
    #: A key rotation's co-signing key (as ``log.cosign_key_file``; "" = none).
    cosign_key_file: str = ""
    cosign_key_name: str = ""
    cosign_key_passphrase_env: str = ""
    #: The log's store: an SQLite file path, or a PostgreSQL connection string (a
    #: ``postgresql://`` URI or libpq ``key=value`` pairs) without a password.
    store: str
    #: Environment variable holding the PostgreSQL password ("" = libpq's own sources).
    postgres_password_env: str = ""
    #: Names of the ``[[witnesses]]`` that cosign this log's checkpoints.
    witnesses: tuple[str, ...] = ()
    #: Cosignatures a checkpoint needs to count as witnessed (-1: 1 if it has witnesses).
    min_witnesses: int = -1
    #: Seconds between published checkpoints (None: ``log.publish_interval_seconds``).
    publish_interval_seconds: float | None = None
    #: Names of the game profiles (``[profiles]``) this log serves; ``"*"``: all of them.
    profiles: tuple[str, ...] = ("*",)
    #: With several logs, a gRPC port of this log's own beside ``server.port`` (which serves
    #: every log, each call naming its log); None: none. With one log: ``server.port``.
    port: int | None = None
    #: Its Prometheus port with several logs and ``[metrics] enabled`` (None: ``metrics.port``,
    #: the only log's). Each log's series carry the label ``log`` = its origin.
    metrics_port: int | None = None

    @property
    def driver(self) -> str:
        """ "postgres" for a connection string, else "sqlite"."""
        return "postgres" if is_postgres_dsn(self.store) else "sqlite"


_STRINGS = (
    "origin", "key_name", "key_passphrase_env", "cosign_key_file", "cosign_key_name",
    "cosign_key_passphrase_env", "store", "postgres_password_env",
)  # fmt: skip
_LISTS = ("retired_keys", "witnesses", "profiles")
LOG_KEYS = (
    *_STRINGS, "key_file", *_LISTS, "min_witnesses", "publish_interval_seconds", "port",
    "metrics_port",
)  # fmt: skip


def is_postgres_dsn(store: str) -> bool:
    """A PostgreSQL connection string: a ``postgres(ql)://`` URI, or libpq ``key=value``
    pairs (a first word followed by ``=``); anything else is an SQLite file path."""
    text = store.strip()
    if text.lower().startswith(("postgres://", "postgresql://")):
        return True
    first = text.split(None, 1)[0] if text else ""
    key = first.partition("=")[0]
    return "=" in first and key.isidentifier()


def store_identity(store: str, base: Path) -> tuple[str, ...]:
    """What makes two stores the same store: an SQLite file's resolved path, or a PostgreSQL
    database's (host, port, database name); two logs in one store would mix their entries."""
    if not is_postgres_dsn(store):
        path = Path(store)
        return ("sqlite", str((path if path.is_absolute() else base / path).resolve()))
    text = store.strip()
    params: dict[str, str] = {}
    if "://" in text:
        url = urllib.parse.urlsplit(text)
        params["host"] = url.hostname or ""
        params["port"] = str(url.port or "")
        params["dbname"] = url.path.lstrip("/")
        params["user"] = url.username or ""
        for key, value in urllib.parse.parse_qsl(url.query):
            params.setdefault(key, value)
            if not params[key]:
                params[key] = value
    else:
        for token in text.replace(" = ", "=").split():
            key, _, value = token.partition("=")
            params[key.strip().lower()] = value.strip().strip("'")
    host = params.get("host") or params.get("hostaddr") or "localhost"
    port = params.get("port") or "5432"
    dbname = params.get("dbname") or params.get("user") or ""
    return ("postgres", host.lower(), port, dbname)


def _string_items(setting: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):  # the single-log form: comma-separated
        return tuple(item.strip() for item in value.split(",") if item.strip())
    if isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value):
        return tuple(dict.fromkeys(v.strip() for v in value))
    raise ConfigError(f"{setting}: {value!r} is not allowed (allowed: a list of strings)")


def _log(index: int, raw: Any) -> LogDefinition:
    where = f"logs[{index}]"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be a table (write [[logs]] entries)")
    unknown = sorted(set(raw) - set(LOG_KEYS))
    if unknown:
        raise ConfigError(
            f"{where}.{unknown[0]}: unknown setting (allowed in [[logs]]: {', '.join(LOG_KEYS)})"
        )
    for key in ("origin", "key_file", "store"):
        if key not in raw:
            raise ConfigError(f"{where}.{key}: required in every [[logs]] entry")
    values: dict[str, Any] = {}
    for key in _STRINGS:
        if key in raw:
            values[key] = _coerce(f"{where}.{key}", str, raw[key], from_env=False).strip()
    origin = values["origin"]
    _require(
        bool(origin) and origin.isprintable(),
        f"{where}.origin",
        "a non-empty printable line, e.g. 'casino-a.example/rng-log'",
        origin,
    )
    where = f"{where} ({origin})"
    key_file = _coerce(f"{where}.key_file", Path, raw["key_file"], from_env=False)
    for key in _LISTS:
        if key in raw:
            values[key] = _string_items(f"{where}.{key}", raw[key])
    _require(bool(values.get("profiles", ("*",))), f"{where}.profiles", '["*"] or names', [])
    if "min_witnesses" in raw:
        values["min_witnesses"] = _coerce(
            f"{where}.min_witnesses", int, raw["min_witnesses"], from_env=False
        )
    if "publish_interval_seconds" in raw:
        interval = _coerce(
            f"{where}.publish_interval_seconds", float, raw["publish_interval_seconds"],
            from_env=False,
        )  # fmt: skip
        _require(
            0.1 <= interval <= 86400, f"{where}.publish_interval_seconds", "0.1 to 86400", interval
        )
        values["publish_interval_seconds"] = interval
    for key in ("port", "metrics_port"):
        if key in raw:
            port = _coerce(f"{where}.{key}", int, raw[key], from_env=False)
            _port(f"{where}.{key}", port)
            values[key] = port
    _require(
        bool(values["store"]),
        f"{where}.store",
        "an SQLite file path, or a PostgreSQL connection string "
        "('postgresql://host:port/dbname' or 'host=... dbname=...') without a password",
        values["store"],
    )
    return LogDefinition(key_file=key_file, **values)


def build_logs(raw: Any, base: Path) -> tuple[LogDefinition, ...]:
    """The ``[[logs]]`` entries, each checked alone and against the others."""
    if not isinstance(raw, list) or not raw:
        raise ConfigError("logs: must be a non-empty array of tables (write [[logs]] entries)")
    logs = [_log(i, item) for i, item in enumerate(raw)]
    origins: dict[str, int] = {}
    stores: dict[tuple[str, ...], int] = {}
    keys: dict[Path, int] = {}
    ports: dict[int, tuple[int, str]] = {}
    for i, log in enumerate(logs):
        where = f"logs[{i}] ({log.origin})"
        if log.origin in origins:
            raise ConfigError(
                f"{where}.origin: {log.origin!r} is already the origin of "
                f"logs[{origins[log.origin]}] (allowed: each origin once)"
            )
        origins[log.origin] = i
        store = store_identity(log.store, base)
        if store in stores:
            j = stores[store]
            raise ConfigError(
                f"{where}.store: the same store as logs[{j}] ({logs[j].origin}); one store holds "
                "one log (allowed: a store of its own, another SQLite file or database)"
            )
        stores[store] = i
        key = (log.key_file if log.key_file.is_absolute() else base / log.key_file).resolve()
        if key in keys:
            j = keys[key]
            raise ConfigError(
                f"{where}.key_file: the same signing key as logs[{j}] ({logs[j].origin}) "
                "(allowed: a key of its own for each log)"
            )
        keys[key] = i
        if len(logs) > 1:
            for setting, port in (("port", log.port), ("metrics_port", log.metrics_port)):
                if port is None or port == 0:  # 0: any free port, nobody else's
                    continue
                if port in ports:
                    j, other = ports[port]
                    raise ConfigError(
                        f"{where}.{setting}: {port} is already the {other} of logs[{j}] "
                        f"({logs[j].origin}) (allowed: a port of its own for each log)"
                    )
                ports[port] = (i, setting)
    return tuple(logs)
