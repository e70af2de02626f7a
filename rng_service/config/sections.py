"""The configuration's sections (:mod:`rng_service.config`): ``[server]``, ``[metrics]``,
``[verify_page]``, ``[log]``, ``[storage]``, ``[generator]``, ``[certification]``,
``[profiles]`` and ``[witnessing]``, each a frozen dataclass with its documented defaults that
checks its own values once (docs/operations/configuration.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rng_service.config.checks import (
    ConfigError,
    _host,
    _port,
    _require,
)
from rng_service.security.key_files import KEY_FILE_PERMISSIONS

__all__ = [
    "RAW_STREAM_BYTES_LIMIT",
    "CertificationSettings",
    "GeneratorSettings",
    "LogSettings",
    "MetricsSettings",
    "ProfilesSettings",
    "ServerSettings",
    "StorageSettings",
    "VerifyPageSettings",
    "WitnessingSettings",
]


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
    #: on the same port fail at start naming the owner's pid (docs/operations/running.md,
    #: "One owner per log"). Instances of one host should share it (for example /run/rng-service).
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
    #: Under concurrent load (the last group had company), how long at most the writer waits
    #: for more requests before committing a group (after a lone group it never waits): fewer,
    #: bigger groups cost fewer fsyncs and signatures.
    group_wait_seconds: float = 0.002
    #: Within that wait, once the group holds as many requests as the last one, the writer
    #: commits at the first lull this long with none arriving (``>= group_wait_seconds``: it
    #: always waits the whole wait; ``writer.queue.gather_group``).
    group_lull_seconds: float = 0.0003
    #: The store's own check at start-up (docs/operations/running.md, "The log store's own check"):
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
        _require(
            0 <= self.group_lull_seconds <= 0.1,
            "log.group_lull_seconds",
            "0 to 0.1",
            self.group_lull_seconds,
        )

    def retired_key_items(self) -> tuple[str, ...]:
        """The items of ``retired_keys``: verifier-key strings or ``.vkey`` file paths."""
        return tuple(item.strip() for item in self.retired_keys.split(",") if item.strip())


@dataclass(frozen=True, kw_only=True)
class StorageSettings:
    #: "sqlite" (one file, one service process) or "postgres" (one database shared by one or
    #: several service replicas; docs/operations/postgresql.md, "PostgreSQL").
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
    #: The names of the loaded profiles this log serves ("*" = all); set per log by a
    #: ``[[logs]]`` entry's ``profiles``.
    names: tuple[str, ...] = ("*",)

    def __post_init__(self) -> None:
        _require(
            bool(self.names) and all(n and n == n.strip() for n in self.names),
            "profiles.names",
            '["*"] or profile names',
            list(self.names),
        )
        _require(
            self.directory == self.directory.strip() and "\n" not in self.directory,
            "profiles.directory",
            "'' or a directory path",
            self.directory,
        )


@dataclass(frozen=True, kw_only=True)
class WitnessingSettings:
    """How the service uses its ``[[witnesses]]`` (C2SP tlog-witness;
    docs/operations/witnesses.md). Outcomes never wait for witnesses: each published checkpoint
    is sent to them by a background task, and their cosignatures are stored beside it."""

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
