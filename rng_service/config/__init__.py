"""Service configuration: frozen dataclasses built and validated once at start-up.

Sources, later ones winning: the defaults below, a TOML file, then environment variables named
``RNG_SERVICE__<SECTION>__<KEY>`` (for example ``RNG_SERVICE__SERVER__PORT=50052``). Any other
variable whose name begins with ``RNG_SERVICE_`` is refused rather than ignored (a single
underscore, ``RNG_SERVICE_SERVER_PORT``, is the usual slip), naming the double-underscore form
to use. This module is the only one that reads configuration files or the environment. Every
error names the setting and the values it allows (:class:`ConfigError`).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from rng_service.security.key_files import KEY_FILE_PERMISSIONS

__all__ = [
    "CertificationSettings",
    "ClientSettings",
    "Config",
    "ConfigError",
    "GeneratorSettings",
    "LogSettings",
    "MetricsSettings",
    "ProfilesSettings",
    "RateLimitSettings",
    "ServerSettings",
    "StorageSettings",
    "TlsSettings",
    "VerifyPageSettings",
    "WitnessSettings",
    "WitnessingSettings",
    "check_transport",
    "load_config",
]

ENV_PREFIX = "RNG_SERVICE__"
#: Every environment variable that starts like this is meant for the service: it must be a
#: setting in the ``ENV_PREFIX`` form, or the start-up stops.
_ENV_FAMILY = "RNG_SERVICE_"


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


@dataclass(frozen=True, kw_only=True)
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = 50051
    #: The drain window of a graceful stop: for this long new calls get UNAVAILABLE "shutting
    #: down" while the calls already accepted finish (rng_service.rpc.drain).
    shutdown_grace_seconds: float = 10.0
    #: The client identity used for idempotency until mTLS identifies clients.
    default_client_id: str = "default"
    #: Directory of the per-port lock files (``grpc-<port>.lock``) that make a second instance
    #: on the same port fail at start naming the owner's pid (docs/operations.md, "One owner
    #: per log"). Instances of one host should share it (for example /run/rng-service).
    lock_dir: Path = Path("var/run")
    #: What a private key file (``log.key_file``, ``log.cosign_key_file``, ``tls.key_file``)
    #: readable by its group or by others gets at start-up: ``warn`` (a logged warning; secret
    #: mounts are often 0440 or 0444) or ``strict`` (refused). A world-writable key file is
    #: always refused (rng_service.security.key_files).
    key_file_permissions: str = "warn"

    def __post_init__(self) -> None:
        _host("server.host", self.host)
        _port("server.port", self.port)
        _require(
            self.key_file_permissions in KEY_FILE_PERMISSIONS,
            "server.key_file_permissions",
            " or ".join(KEY_FILE_PERMISSIONS),
            self.key_file_permissions,
        )
        _require(
            0 <= self.shutdown_grace_seconds <= 300,
            "server.shutdown_grace_seconds",
            "0 to 300",
            self.shutdown_grace_seconds,
        )
        _require(
            0 < len(self.default_client_id) <= 128,
            "server.default_client_id",
            "1 to 128 characters",
            self.default_client_id,
        )


@dataclass(frozen=True, kw_only=True)
class MetricsSettings:
    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = 9464

    def __post_init__(self) -> None:
        _host("metrics.host", self.host)
        _port("metrics.port", self.port)


@dataclass(frozen=True, kw_only=True)
class VerifyPageSettings:
    """``[verify_page]``: the receipt-verification page (web/verify) on a port of its own,
    read-only (docs/verify-page.md). Off by default; never the metrics or the gRPC port."""

    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = 9465
    #: The page's directory; empty: ``web/verify`` of the checkout the package runs from.
    directory: str = ""

    def __post_init__(self) -> None:
        _host("verify_page.host", self.host)
        _port("verify_page.port", self.port)


@dataclass(frozen=True, kw_only=True)
class LogSettings:
    #: First line of every checkpoint (C2SP tlog-checkpoint "origin"): names this log.
    origin: str = "rng-service.local/log"
    #: Signed-note key name of the checkpoint-signing key. "" (the default) = ``origin``: C2SP
    #: tlog-checkpoint says the key name should be the origin, and verifiers take it as the
    #: origin they expect (docs/auditing.md); key IDs tell a log's keys apart (rotation).
    key_name: str = ""
    #: Ed25519 private key, PKCS#8 PEM (``rng-service keygen``).
    key_file: Path = Path("var/keys/log-signing-key.pem")
    #: Name of an environment variable holding the key's passphrase ("" = unencrypted key).
    key_passphrase_env: str = ""
    #: Retired checkpoint-signing keys that stay published (``LogService.GetPublicKeys``) after a
    #: key rotation, so that old receipts and checkpoints keep verifying: a comma-separated list
    #: of signed-note verifier keys (``<name>+<key id>+<base64>``) and/or ``.vkey`` files
    #: (relative paths are relative to the directory of ``key_file``). docs/auditing.md.
    retired_keys: str = ""
    #: During a key rotation's overlap window: a second Ed25519 private key (PEM) that co-signs
    #: every checkpoint beside ``key_file`` ("" = none; relative to the directory of
    #: ``key_file``), its signed-note key name, and its passphrase variable ("" = unencrypted).
    cosign_key_file: str = ""
    cosign_key_name: str = ""  # "" = ``origin``, like ``key_name``
    cosign_key_passphrase_env: str = ""
    #: Seconds between stored ("published") checkpoints while entries are appended.
    publish_interval_seconds: float = 10.0
    #: Most requests committed in one group (one transaction, one signature).
    max_group_size: int = 512
    #: Most requests waiting for the writer; beyond it callers get RESOURCE_EXHAUSTED.
    max_queue: int = 10_000
    #: Under concurrent load, how long the writer waits for more requests before committing a
    #: group (a lone request never waits): fewer, bigger groups cost fewer fsyncs and signatures.
    group_wait_seconds: float = 0.002
    #: The store's own check at start-up (docs/operations.md, "The log store's own check"):
    #: "incremental" checks what was stored since the last verified checkpoint, "full" all.
    startup_check: str = "incremental"

    def __post_init__(self) -> None:
        _require(
            bool(self.origin) and "\n" not in self.origin and self.origin.isprintable(),
            "log.origin",
            "a non-empty printable line, e.g. 'casino.example/rng-log'",
            self.origin,
        )
        for setting in ("key_name", "cosign_key_name"):
            if not getattr(self, setting):
                object.__setattr__(self, setting, self.origin)
        _require(
            self.key_name.isprintable() and not any(c in self.key_name for c in " +"),
            "log.key_name",
            "a non-empty name without spaces or '+' (it defaults to log.origin, which is then "
            "one: set log.key_name)",
            self.key_name,
        )
        _require(
            self.startup_check in ("incremental", "full"),
            "log.startup_check",
            "'incremental' or 'full'",
            self.startup_check,
        )
        _require(
            all(item.strip() for item in self.retired_keys.split(","))
            or not self.retired_keys.strip(),
            "log.retired_keys",
            "comma-separated verifier keys or .vkey file paths, without empty items",
            self.retired_keys,
        )
        _require(
            not self.cosign_key_file
            or (
                self.cosign_key_name.isprintable()
                and not any(c in self.cosign_key_name for c in " +")
            ),
            "log.cosign_key_name",
            "a name without spaces or '+' when log.cosign_key_file is set (default: log.origin)",
            self.cosign_key_name,
        )
        _require(
            0.1 <= self.publish_interval_seconds <= 86400,
            "log.publish_interval_seconds",
            "0.1 to 86400",
            self.publish_interval_seconds,
        )
        _require(
            1 <= self.max_group_size <= 10_000,
            "log.max_group_size",
            "1 to 10000",
            self.max_group_size,
        )
        _require(1 <= self.max_queue <= 1_000_000, "log.max_queue", "1 to 1000000", self.max_queue)
        _require(
            0 <= self.group_wait_seconds <= 0.1,
            "log.group_wait_seconds",
            "0 to 0.1",
            self.group_wait_seconds,
        )

    def retired_key_items(self) -> tuple[str, ...]:
        """The items of ``retired_keys``: verifier-key strings or ``.vkey`` file paths."""
        return tuple(item.strip() for item in self.retired_keys.split(",") if item.strip())


@dataclass(frozen=True, kw_only=True)
class StorageSettings:
    #: "sqlite" (one file, one service process) or "postgres" (one database shared by one or
    #: several service replicas; docs/operations.md, "PostgreSQL").
    driver: str = "sqlite"
    #: SQLite database file (driver "sqlite").
    path: Path = Path("var/outcome-log.sqlite3")
    #: libpq connection string or URI of the log database (driver "postgres"), without the
    #: password, e.g. "host=127.0.0.1 port=5432 dbname=rng_log user=rng_service".
    postgres_dsn: str = ""
    #: Name of an environment variable holding the PostgreSQL password ("" = none given here:
    #: libpq's PGPASSWORD or ~/.pgpass apply, or the server needs none).
    postgres_password_env: str = ""
    #: Seconds to wait for each (re)connection to PostgreSQL (libpq connect_timeout).
    postgres_connect_timeout_seconds: int = 5
    #: Milliseconds a write waits for a lock held by another session before it fails
    #: (the outcome request then gets UNAVAILABLE).
    postgres_lock_timeout_ms: int = 5000
    #: Apply pending schema migrations at start-up (back the database up first). When false,
    #: a log of an older schema version is refused.
    postgres_migrate: bool = False

    def __post_init__(self) -> None:
        _require(
            self.driver in ("sqlite", "postgres"),
            "storage.driver",
            "'sqlite' or 'postgres'",
            self.driver,
        )
        if self.driver == "postgres":
            _require(
                bool(self.postgres_dsn.strip()),
                "storage.postgres_dsn",
                "a libpq connection string or URI, e.g. "
                "'host=127.0.0.1 port=5432 dbname=rng_log user=rng_service'",
                self.postgres_dsn,
            )
        if self._dsn_has_password(self.postgres_dsn):
            raise ConfigError(
                "storage.postgres_dsn: contains a password (allowed: a connection string "
                "without one; name an environment variable holding it in "
                "storage.postgres_password_env)"
            )
        _require(
            not self.postgres_password_env
            or (self.postgres_password_env.isidentifier() and self.postgres_password_env.isascii()),
            "storage.postgres_password_env",
            "'' or an environment variable name such as 'RNG_LOG_DB_PASSWORD'",
            self.postgres_password_env,
        )
        _require(
            1 <= self.postgres_connect_timeout_seconds <= 300,
            "storage.postgres_connect_timeout_seconds",
            "1 to 300 (libpq waits at least 2)",
            self.postgres_connect_timeout_seconds,
        )
        _require(
            1 <= self.postgres_lock_timeout_ms <= 600_000,
            "storage.postgres_lock_timeout_ms",
            "1 to 600000",
            self.postgres_lock_timeout_ms,
        )

    @staticmethod
    def _dsn_has_password(dsn: str) -> bool:
        """A password in a libpq connection string: ``password=`` in the key/value form, or a
        URI's ``user:password@`` or ``?password=``."""
        text = dsn.strip()
        if text.lower().startswith(("postgres://", "postgresql://")):
            rest = text.split("://", 1)[1]
            authority = rest.split("/", 1)[0].split("?", 1)[0]
            query = rest.partition("?")[2]
            keys = [item.partition("=")[0].strip().lower() for item in query.split("&")]
            return ":" in authority.rpartition("@")[0] or "password" in keys
        tokens = text.lower().replace("=", " = ").split()
        return any(tokens[i : i + 2] == ["password", "="] for i in range(len(tokens)))


@dataclass(frozen=True, kw_only=True)
class GeneratorSettings:
    #: Reseed from fresh entropy after this many DRBG generate requests.
    reseed_interval_requests: int = 65_536
    #: ...and at least this often, in seconds.
    reseed_interval_seconds: float = 60.0
    #: A read of the entropy source that takes longer is a source failure (fail closed).
    entropy_timeout_seconds: float = 2.0

    def __post_init__(self) -> None:
        _require(
            1 <= self.reseed_interval_requests <= 2**48,
            "generator.reseed_interval_requests",
            "1 to 2^48 (SP 800-90A table 3)",
            self.reseed_interval_requests,
        )
        _require(
            0.001 <= self.reseed_interval_seconds <= 86400,
            "generator.reseed_interval_seconds",
            "0.001 to 86400",
            self.reseed_interval_seconds,
        )
        _require(
            0.01 <= self.entropy_timeout_seconds <= 60,
            "generator.entropy_timeout_seconds",
            "0.01 to 60",
            self.entropy_timeout_seconds,
        )


#: Hard upper bound of ``certification.raw_stream_max_bytes``: 1 GiB per call.
RAW_STREAM_BYTES_LIMIT = 1 << 30


@dataclass(frozen=True, kw_only=True)
class CertificationSettings:
    """Lab certification access (docs/certification.md, "The raw output stream"). Off by
    default: a production deployment serves outcomes only."""

    #: Serve ``rng.v1.LabService/StreamRawOutput`` (raw DRBG output, lab role only) from a
    #: separate generator instance. When false the RPC answers FAILED_PRECONDITION.
    raw_stream_enabled: bool = False
    #: Most bytes one StreamRawOutput call may ask for (1 to 1 GiB).
    raw_stream_max_bytes: int = RAW_STREAM_BYTES_LIMIT
    #: Longest one StreamRawOutput call may stream, in seconds (a slow reader is cut off).
    raw_stream_max_seconds: float = 600.0

    def __post_init__(self) -> None:
        _require(
            1 <= self.raw_stream_max_bytes <= RAW_STREAM_BYTES_LIMIT,
            "certification.raw_stream_max_bytes",
            f"1 to {RAW_STREAM_BYTES_LIMIT} (1 GiB)",
            self.raw_stream_max_bytes,
        )
        _require(
            1 <= self.raw_stream_max_seconds <= 86400,
            "certification.raw_stream_max_seconds",
            "1 to 86400",
            self.raw_stream_max_seconds,
        )


@dataclass(frozen=True, kw_only=True)
class ProfilesSettings:
    """The game profiles and paytables the service serves (docs/games.md, "Approved profiles")."""

    #: The operator's approved profiles and paytables: every ``*.toml`` in this directory is
    #: loaded and validated at start-up ("" = none; relative paths: to the config's base).
    directory: str = ""
    #: Also serve the shipped example profiles (``example = true``), and accept example
    #: documents in ``directory``. Development and lab set-ups only: an example is not an
    #: approved paytable.
    allow_examples: bool = False

    def __post_init__(self) -> None:
        _require(
            self.directory == self.directory.strip() and "\n" not in self.directory,
            "profiles.directory",
            "'' or a directory path",
            self.directory,
        )


@dataclass(frozen=True, kw_only=True)
class WitnessingSettings:
    """How the service uses its ``[[witnesses]]`` (C2SP tlog-witness; docs/operations.md,
    "Witnesses"). Outcomes never wait for witnesses: each published checkpoint is sent to them
    by a background task, and their cosignatures are stored beside it."""

    #: How many witnesses must cosign a checkpoint for it to count as witnessed (the
    #: ``rng_witness_quorum`` metric and its alert; auditors apply their own with
    #: ``--min-witnesses``). 0 to the number of ``[[witnesses]]``; default: 1 if there are any.
    min_witnesses: int = -1
    #: Seconds one request to a witness may take (connect, send, answer) before it counts as
    #: unreachable.
    timeout_seconds: float = 5.0
    #: Seconds between rounds: each round publishes the current tree's checkpoint if the log
    #: grew, and asks every witness to cosign the latest one, even when nothing changed (a
    #: quiet log still gets fresh cosignature timestamps). 0 = ``log.publish_interval_seconds``.
    interval_seconds: float = 0.0
    #: At start-up, refuse to serve unless ``min_witnesses`` witnesses cosigned the log's
    #: checkpoint. When false (the default), unreachable witnesses are a warning and the
    #: service starts; a witness that refuses the checkpoint as inconsistent always stops it.
    require_at_startup: bool = False

    def __post_init__(self) -> None:
        _require(
            -1 <= self.min_witnesses <= 100,
            "witnessing.min_witnesses",
            "0 to the number of [[witnesses]]",
            self.min_witnesses,
        )
        _require(
            0.1 <= self.timeout_seconds <= 120,
            "witnessing.timeout_seconds",
            "0.1 to 120",
            self.timeout_seconds,
        )
        _require(
            self.interval_seconds == 0 or 0.1 <= self.interval_seconds <= 86400,
            "witnessing.interval_seconds",
            "0 (log.publish_interval_seconds) or 0.1 to 86400",
            self.interval_seconds,
        )


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


_CLIENT_KEYS = ("identity", "roles", "tables", "kinds", "profiles", "rate_per_second", "burst")


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
    return ClientSettings(
        identity=identity,
        roles=roles,
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
    _one_game_server_a_table(clients)
    return tuple(clients)


def _one_game_server_a_table(clients: Sequence[ClientSettings]) -> None:
    """Refuses a table granted to two game servers (``security.policy.shared_table``)."""
    from rng_service.security.policy import ANY, Role, shared_table

    servers = [(i, c) for i, c in enumerate(clients) if Role.GAME_SERVER.value in c.roles]
    shared = shared_table([(c.identity, c.tables) for _, c in servers])
    if shared is None:
        return
    (i, earlier), (j, later), table = servers[shared[0]], servers[shared[1]], shared[2]
    if table == ANY:
        what = f'"*" (every table) overlaps the tables of game server clients[{i}]'
    else:
        what = f"table {table!r} is also granted to game server clients[{i}]"
    by = ' by its "*"' if ANY in earlier.tables and table != ANY else ""
    raise ConfigError(
        f"clients[{j}] ({later.identity}).tables: {what} ({earlier.identity}){by}; one "
        "physical table has one game server (allowed: tables no other game_server client "
        "is granted)"
    )


@dataclass(frozen=True, kw_only=True)
class Config:
    server: ServerSettings = field(default_factory=ServerSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    verify_page: VerifyPageSettings = field(default_factory=VerifyPageSettings)
    log: LogSettings = field(default_factory=LogSettings)
    storage: StorageSettings = field(default_factory=StorageSettings)
    generator: GeneratorSettings = field(default_factory=GeneratorSettings)
    tls: TlsSettings = field(default_factory=TlsSettings)
    rate_limit: RateLimitSettings = field(default_factory=RateLimitSettings)
    certification: CertificationSettings = field(default_factory=CertificationSettings)
    profiles: ProfilesSettings = field(default_factory=ProfilesSettings)
    witnessing: WitnessingSettings = field(default_factory=WitnessingSettings)
    #: ``[[clients]]``: identities and roles (used when mTLS is on; docs/security.md).
    clients: tuple[ClientSettings, ...] = ()
    #: ``[[witnesses]]``: the C2SP tlog-witnesses that cosign published checkpoints.
    witnesses: tuple[WitnessSettings, ...] = ()

    def __post_init__(self) -> None:
        page = self.verify_page
        if page.enabled and page.port:
            taken = {"server.port": self.server.port}
            if self.metrics.enabled:
                taken["metrics.port"] = self.metrics.port
            for name, port in taken.items():
                _require(
                    page.port != port,
                    "verify_page.port",
                    f"a port of its own, not {name} ({port}), or 0 for any free port",
                    page.port,
                )
        wanted = self.witnessing.min_witnesses
        if wanted == -1:
            object.__setattr__(
                self, "witnessing",
                dataclasses.replace(self.witnessing, min_witnesses=min(1, len(self.witnesses))),
            )  # fmt: skip
        else:
            _require(
                wanted <= len(self.witnesses),
                "witnessing.min_witnesses",
                f"0 to the number of [[witnesses]] ({len(self.witnesses)})",
                wanted,
            )
        _require(
            not self.witnessing.require_at_startup or bool(self.witnesses),
            "witnessing.require_at_startup",
            "false when no [[witnesses]] are configured",
            True,
        )


#: Top-level keys that are arrays of tables rather than ``[section]`` tables.
_ARRAYS = ("clients", "witnesses")

_SECTIONS: dict[str, type[Any]] = {
    f.name: typing.get_type_hints(Config)[f.name]
    for f in dataclasses.fields(Config)
    if f.name not in _ARRAYS
}


def check_transport(config: Config) -> None:
    """Refuses plaintext gRPC on a non-loopback address (called at start-up, before binding)."""
    if not config.tls.enabled and not is_loopback(config.server.host):
        raise ConfigError(
            f"server.host: {config.server.host!r} is not a loopback address, and plaintext gRPC "
            "is allowed on loopback only (allowed: 127.0.0.1, ::1 or localhost; or set "
            "tls.cert_file, tls.key_file and tls.client_ca_file for mTLS)"
        )


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


def _build_section(name: str, raw: Mapping[str, Any], env_keys: set[str]) -> Any:
    cls = _SECTIONS[name]
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(
            f"{name}.{unknown[0]}: unknown setting "
            f"(allowed in [{name}]: {', '.join(sorted(known))})"
        )
    kwargs = {
        key: _coerce(f"{name}.{key}", hints[key], value, from_env=key in env_keys)
        for key, value in raw.items()
    }
    return cls(**kwargs)


def load_config(
    path: Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
) -> Config:
    """Builds the configuration from defaults, an optional TOML file and the environment.

    Relative paths in the result are resolved against ``base_dir`` (default: the current
    directory), so the service does not depend on where it is started once loaded.
    """
    environ = os.environ if environ is None else environ
    data: dict[str, dict[str, Any]] = {}
    arrays: dict[str, Any] = {}
    if path is not None:
        try:
            with open(path, "rb") as fh:
                raw = tomllib.load(fh)
        except FileNotFoundError:
            raise ConfigError(f"config file {path}: not found") from None
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"config file {path}: not valid TOML: {e}") from None
        for section, values in raw.items():
            if section in _ARRAYS:
                arrays[section] = values
                continue
            if section not in _SECTIONS:
                raise ConfigError(
                    f"{section}: unknown section "
                    f"(allowed: {', '.join(sorted((*_SECTIONS, *_ARRAYS)))})"
                )
            if not isinstance(values, dict):
                raise ConfigError(f"{section}: must be a table [{section}]")
            data[section] = dict(values)
    env_keys: dict[str, set[str]] = {}
    for name, value in environ.items():
        if not name.startswith(_ENV_FAMILY):
            continue
        parts = name[len(ENV_PREFIX) :].lower().split("__")
        if not name.startswith(ENV_PREFIX) or len(parts) != 2 or parts[0] not in _SECTIONS:
            raise ConfigError(_env_name_error(name))
        data.setdefault(parts[0], {})[parts[1]] = value
        env_keys.setdefault(parts[0], set()).add(parts[1])
    sections = {
        name: _build_section(name, data.get(name, {}), env_keys.get(name, set()))
        for name in _SECTIONS
    }
    config = Config(
        **sections,
        clients=_build_clients(arrays.get("clients", [])),
        witnesses=_build_witnesses(arrays.get("witnesses", [])),
    )
    base = base_dir if base_dir is not None else Path.cwd()
    tls = config.tls
    if tls.enabled:
        tls = dataclasses.replace(
            tls,
            cert_file=str(_resolve(base, Path(tls.cert_file))),
            key_file=str(_resolve(base, Path(tls.key_file))),
            client_ca_file=str(_resolve(base, Path(tls.client_ca_file))),
        )
    page = config.verify_page
    if page.directory:
        page = dataclasses.replace(page, directory=str(_resolve(base, Path(page.directory))))
    profiles = config.profiles
    if profiles.directory:
        profiles = dataclasses.replace(
            profiles, directory=str(_resolve(base, Path(profiles.directory)))
        )
    witnesses = tuple(
        dataclasses.replace(
            w,
            key=w.key
            if "+" in w.key and not (base / w.key).is_file()
            else str(_resolve(base, Path(w.key))),
            ca_file=str(_resolve(base, Path(w.ca_file))) if w.ca_file else "",
        )
        for w in config.witnesses
    )
    return dataclasses.replace(
        config,
        witnesses=witnesses,
        server=dataclasses.replace(config.server, lock_dir=_resolve(base, config.server.lock_dir)),
        profiles=profiles,
        verify_page=page,
        log=dataclasses.replace(config.log, key_file=_resolve(base, config.log.key_file)),
        storage=dataclasses.replace(config.storage, path=_resolve(base, config.storage.path)),
        tls=tls,
    )


def _env_name_error(name: str) -> str:
    """The error for an ``RNG_SERVICE_*`` variable that is not a setting, with the
    double-underscore name it was most likely meant as."""
    allowed = (
        f"{ENV_PREFIX}<SECTION>__<KEY>, with double underscores, SECTION one of "
        f"{', '.join(s.upper() for s in sorted(_SECTIONS))}"
    )
    # Words of the name after the family prefix, whatever underscores separate them; a section
    # name (rate_limit) and a key (rate_per_second) may themselves hold single underscores.
    words = [w for w in name[len(_ENV_FAMILY) :].lower().split("_") if w]
    for cut in range(1, len(words)):
        section, key = "_".join(words[:cut]), "_".join(words[cut:])
        cls = _SECTIONS.get(section)
        if cls is not None and key in {f.name for f in dataclasses.fields(cls)}:
            wanted = f"{ENV_PREFIX}{section.upper()}__{key.upper()}"
            return f"{name}: not a setting; use {wanted} for {section}.{key} (allowed: {allowed})"
    return f"{name}: not a setting (allowed: {allowed})"


def _resolve(base: Path, path: Path) -> Path:
    return path if path.is_absolute() else (base / path)
