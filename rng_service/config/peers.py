"""The configuration of the parties the service talks to (:mod:`rng_service.config`):
``[tls]``, ``[rate_limit]``, the ``[[clients]]`` with their roles, scopes and rate limits (one
game server a table), and the ``[[witnesses]]`` (docs/security.md, docs/operations/witnesses.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from rng_service.config.checks import (
    ConfigError,
    _coerce,
    _require,
)

__all__ = ["ClientSettings", "RateLimitSettings", "TlsSettings", "WitnessSettings"]


@dataclass(frozen=True, kw_only=True)
class WitnessSettings:
    """One ``[[witnesses]]`` entry: a C2SP tlog-witness the service submits its checkpoints to."""

    #: The witness's submission prefix: ``POST <url>/add-checkpoint``; http or https.
    url: str
    #: The witness's cosignature verifier key (``<name>+<key id>+<base64(0x04 || key)>``, from
    #: ``rng-witness keygen``/``pubkey``) or a ``.vkey`` file holding it (relative: to the
    #: working directory at start-up, like every path).
    key: str
    #: A short name for logs and metric labels; default: the key's name.
    name: str = ""
    #: For an https url: CA certificate(s), PEM, to verify the witness's certificate with
    #: ("" = the system's trust store).
    ca_file: str = ""


_WITNESS_KEYS = ("url", "key", "name", "ca_file")


def _witness(index: int, raw: Any) -> WitnessSettings:
    where = f"witnesses[{index}]"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be a table (write [[witnesses]] entries)")
    unknown = sorted(set(raw) - set(_WITNESS_KEYS))
    if unknown:
        raise ConfigError(
            f"{where}.{unknown[0]}: unknown setting (allowed in [[witnesses]]: "
            f"{', '.join(_WITNESS_KEYS)})"
        )
    values: dict[str, str] = {}
    for key in _WITNESS_KEYS:
        value = raw.get(key, "")
        if not isinstance(value, str):
            raise ConfigError(f"{where}.{key}: {value!r} is not allowed (allowed: a string)")
        values[key] = value.strip()
    url = values["url"]
    scheme, _, rest = url.partition("://")
    _require(
        scheme in ("http", "https") and bool(rest) and not rest.startswith("/")
        and not any(c.isspace() for c in url) and "?" not in url and "#" not in url,
        f"{where}.url",
        "the witness's submission prefix, http(s)://host[:port][/path] (the service POSTs to "
        "<url>/add-checkpoint)",
        url,
    )  # fmt: skip
    _require(
        bool(values["key"]),
        f"{where}.key",
        "the witness's verifier key <name>+<key id>+<base64>, or a .vkey file",
        "",
    )
    name = values["name"]
    _require(
        not name or (len(name) <= 64 and all(c.isalnum() or c in "-_.:/" for c in name)),
        f"{where}.name",
        "'' (the key's name) or up to 64 letters, digits and - _ . : /",
        name,
    )
    _require(
        not values["ca_file"] or scheme == "https",
        f"{where}.ca_file",
        "'' for an http url (ca_file is for https)",
        values["ca_file"],
    )
    return WitnessSettings(url=url.rstrip("/"), key=values["key"], name=name,
                           ca_file=values["ca_file"])  # fmt: skip


def _build_witnesses(raw: Any) -> tuple[WitnessSettings, ...]:
    if not isinstance(raw, list):
        raise ConfigError("witnesses: must be an array of tables (write [[witnesses]] entries)")
    witnesses = tuple(_witness(i, item) for i, item in enumerate(raw))
    urls = [w.url for w in witnesses]
    for i, url in enumerate(urls):
        if url in urls[:i]:
            raise ConfigError(
                f"witnesses[{i}].url: {url!r} is already configured (allowed: each witness once)"
            )
    return witnesses


@dataclass(frozen=True, kw_only=True)
class TlsSettings:
    """mTLS on the gRPC port (docs/security.md). All three files, or none: without them the
    port is plaintext, which is allowed on a loopback address only (:func:`check_transport`)."""

    #: Server certificate chain, PEM (relative paths: to the current directory at start-up).
    cert_file: str = ""
    #: The server certificate's private key, PEM, unencrypted (mount it read-only, mode 0600).
    key_file: str = ""
    #: CA certificate(s), PEM, that issue client certificates; a client without one is refused.
    client_ca_file: str = ""

    def __post_init__(self) -> None:
        given = {
            "tls.cert_file": self.cert_file,
            "tls.key_file": self.key_file,
            "tls.client_ca_file": self.client_ca_file,
        }
        if any(given.values()):
            for setting, value in given.items():
                _require(
                    bool(value.strip()),
                    setting,
                    "a PEM file path (tls.cert_file, tls.key_file and tls.client_ca_file "
                    "go together)",
                    value,
                )

    @property
    def enabled(self) -> bool:
        return bool(self.cert_file)


@dataclass(frozen=True, kw_only=True)
class RateLimitSettings:
    """The default per-client token bucket: ``burst`` calls at once, refilled at
    ``rate_per_second``. A ``[[clients]]`` entry may set its own; with ``enabled`` false only
    those apply (in plaintext development mode: none unless enabled)."""

    enabled: bool = False
    rate_per_second: float = 100.0
    burst: int = 200

    def __post_init__(self) -> None:
        _rate("rate_limit.rate_per_second", self.rate_per_second)
        _burst("rate_limit.burst", self.burst)


def _rate(setting: str, value: float) -> None:
    _require(
        0 < value <= 1_000_000, setting, "a number of calls per second above 0, up to 1e6", value
    )


def _burst(setting: str, value: int) -> None:
    _require(1 <= value <= 1_000_000, setting, "an integer from 1 to 1000000", value)


@dataclass(frozen=True, kw_only=True)
class ClientSettings:
    """One ``[[clients]]`` entry: a certificate identity (subject CN or a subjectAltName) and
    what it may do (docs/security.md has the roles and their methods)."""

    identity: str
    #: Any of "game_server", "auditor", "lab", "operator".
    roles: tuple[str, ...]
    #: game_server only: table ids it draws for ("*" = any). Required for a game server.
    tables: tuple[str, ...] = ()
    #: game_server only: outcome kinds (log entry kinds, e.g. "roulette_spin"; "*" = any).
    kinds: tuple[str, ...] = ("*",)
    #: game_server only: game profiles by name ("*" = any).
    profiles: tuple[str, ...] = ("*",)
    #: This client's own token bucket (both or neither; default: [rate_limit] when enabled).
    rate_per_second: float | None = None
    burst: int | None = None
    #: The origins of the logs this identity may use (``[[logs]]``): a game server exactly
    #: one, other roles a set or ``["*"]`` (every log). () = the only log, when there is one.
    logs: tuple[str, ...] = ()


_CLIENT_KEYS = (
    "identity", "roles", "tables", "kinds", "profiles", "rate_per_second", "burst", "logs",
)  # fmt: skip


def _string_list(setting: str, value: Any, *, allowed: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{setting}: {value!r} is not allowed (allowed: {allowed})")
    return tuple(dict.fromkeys(value))


def _client(index: int, raw: Any) -> ClientSettings:
    # Imported here: the policy module owns the role names and outcome kinds.
    from rng_service.security.policy import ANY, GAME_KINDS, Role

    where = f"clients[{index}]"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be a table (write [[clients]] entries)")
    unknown = sorted(set(raw) - set(_CLIENT_KEYS))
    if unknown:
        raise ConfigError(
            f"{where}.{unknown[0]}: unknown setting (allowed in [[clients]]: "
            f"{', '.join(_CLIENT_KEYS)})"
        )
    identity = raw.get("identity")
    _require(
        isinstance(identity, str)
        and 0 < len(identity) <= 255
        and identity.isprintable()
        and identity == identity.strip()
        and identity != ANY,
        f"{where}.identity",
        "the client certificate's subject CN or a subjectAltName, 1 to 255 printable characters",
        identity,
    )
    identity = cast(str, identity)  # _require checked it
    where = f"{where} ({identity})"
    role_names = [r.value for r in Role]
    roles = _string_list(
        f"{where}.roles", raw.get("roles"), allowed=f"a non-empty list of {', '.join(role_names)}"
    )
    _require(bool(roles), f"{where}.roles", f"a non-empty list of {', '.join(role_names)}", [])
    for role in roles:
        _require(role in role_names, f"{where}.roles", ", ".join(role_names), role)
    game = Role.GAME_SERVER.value in roles
    if game and Role.LAB.value in roles:
        raise ConfigError(
            f"{where}.roles: game_server and lab together; a game server's draws are held to "
            "the round rules a lab's are not (58 Pa. Code 617c.2(e)), so one identity cannot "
            "be both (allowed: game_server, or lab, each with auditor or operator)"
        )
    scopes: dict[str, tuple[str, ...]] = {}
    for key, allowed in (
        ("tables", 'table ids, or ["*"] for any'),
        ("kinds", f'["*"] or outcome kinds among {", ".join(GAME_KINDS)}'),
        ("profiles", 'game profile names, or ["*"] for any'),
    ):
        if key not in raw:
            continue
        if not game:
            raise ConfigError(f"{where}.{key}: only for role game_server")
        scopes[key] = _string_list(f"{where}.{key}", raw[key], allowed=allowed)
        _require(bool(scopes[key]), f"{where}.{key}", allowed, [])
    if game:
        _require("tables" in scopes, f"{where}.tables", 'table ids, or ["*"] for any', None)
    for kind in scopes.get("kinds", ()):
        _require(
            kind == ANY or kind in GAME_KINDS,
            f"{where}.kinds",
            f'"*" or {", ".join(GAME_KINDS)}',
            kind,
        )
    rate = raw.get("rate_per_second")
    burst = raw.get("burst")
    if (rate is None) != (burst is None):
        missing = "burst" if burst is None else "rate_per_second"
        raise ConfigError(f"{where}.{missing}: required with the other (rate_per_second, burst)")
    if rate is not None:
        rate = _coerce(f"{where}.rate_per_second", float, rate, from_env=False)
        burst = _coerce(f"{where}.burst", int, burst, from_env=False)
        _rate(f"{where}.rate_per_second", rate)
        _burst(f"{where}.burst", burst)
    logs: tuple[str, ...] = ()
    if "logs" in raw:
        logs = _string_list(
            f"{where}.logs", raw["logs"], allowed='a list of log origins, or ["*"] for every log'
        )
        _require(bool(logs), f"{where}.logs", 'log origins, or ["*"] for every log', [])
    return ClientSettings(
        identity=identity,
        roles=roles,
        logs=logs,
        rate_per_second=rate,
        burst=burst,
        **scopes,
    )


def _build_clients(raw: Any) -> tuple[ClientSettings, ...]:
    if not isinstance(raw, list):
        raise ConfigError("clients: must be an array of tables (write [[clients]] entries)")
    clients = [_client(i, item) for i, item in enumerate(raw)]
    seen: dict[str, int] = {}
    for i, client in enumerate(clients):
        if client.identity in seen:
            raise ConfigError(
                f"clients[{i}].identity: {client.identity!r} is already configured by "
                f"clients[{seen[client.identity]}] (allowed: each identity once)"
            )
        seen[client.identity] = i
    return tuple(clients)
