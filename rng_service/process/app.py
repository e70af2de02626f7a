"""Composition root: builds the service from a validated :class:`Config`.

The only module that knows the concrete storage driver, the entropy source, the key file and
the gRPC server; everything it wires takes its collaborators as constructor arguments, so tests
build the same graph with fakes (a fixed entropy source, a fake clock, in-memory storage).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import signal
import ssl
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from prometheus_client import (
    CollectorRegistry,
    PlatformCollector,
    ProcessCollector,
    start_http_server,
)

from rng_service.clock import Clock, SystemClock
from rng_service.config import Config, ConfigError, StorageSettings, check_transport
from rng_service.drbg import EntropySource, GeneratorConfig, OsEntropySource, ProductionGenerator
from rng_service.errors import IntegrityError, RngServiceError
from rng_service.log.appender import Appender
from rng_service.log.columns import CHECKS
from rng_service.log.cosignature import CosignatureVerifier
from rng_service.log.keys import load_private_key, load_verifier, load_verifier_keys
from rng_service.log.note import Ed25519NoteSigner, NoteVerifier
from rng_service.log.store_health import StoreHealth
from rng_service.log.storecheck import (
    StoreCheckFailed,
    StoreCheckReport,
    UnconfiguredSigner,
    check_store,
    record_verified,
)
from rng_service.log.tree import MerkleTree
from rng_service.log.witnessing import HttpWitnessTransport, WitnessEndpoint, Witnessing
from rng_service.metrics import GeneratorCollector, MergedCollector, Metrics, StoreCollector
from rng_service.ownership import InstanceLock, LockHeld
from rng_service.process.writer_process import WriterProcess
from rng_service.rpc.auth import Authorizer
from rng_service.rpc.drain import Drain
from rng_service.rpc.lab_servicer import LabServicer
from rng_service.rpc.log_servicer import LogServicer, PublicKeyInfo
from rng_service.rpc.profiles import ProfileRegistry
from rng_service.rpc.server import HealthMonitor, HealthService, build_server
from rng_service.rpc.servicers import OutcomeServicer
from rng_service.security.key_files import KeyFilePermissionError, check_key_file
from rng_service.security.policy import ClientPolicy, RateLimit, Role
from rng_service.security.tls_files import TlsFileError, load_server_tls
from rng_service.storage.base import LogStorage
from rng_service.storage.sqlite import SqliteStorage
from rng_service.verify_page import VerifyPageServer, default_page_directory, load_page

__all__ = [
    "Service",
    "StartupError",
    "check_store_offline",
    "configured_verifiers",
    "open_storage",
    "run",
]

_log = logging.getLogger("rng_service")


class StartupError(Exception):
    """The service cannot start; the message says which setting or resource is at fault.

    ``setting`` and ``file``, when known, are logged as fields of the ``startup_failed`` event.
    """

    def __init__(self, message: str, *, setting: str = "", file: str = "") -> None:
        super().__init__(message)
        self.setting = setting or message.split(":", 1)[0]
        self.file = file


@dataclass(frozen=True)
class Endpoints:
    grpc_port: int
    metrics_port: int | None
    verify_page_port: int | None = None


def _check_key_file(path: Path | str, *, setting: str, permissions: str) -> None:
    """The key file's mode (rng_service.security.key_files): refused (StartupError) when
    world-writable, or group/world-readable with ``permissions`` "strict"; else a warning."""
    try:
        warning = check_key_file(path, setting=setting, strict=permissions == "strict")
    except KeyFilePermissionError as e:
        raise StartupError(str(e), setting=e.setting, file=e.path) from None
    if warning is not None:
        _log.warning(
            {
                "event": "key_file_permissions",
                "setting": setting,
                "file": str(path),
                "message": f"{warning}; server.key_file_permissions = strict refuses it",
            }
        )


def _signer_from(
    path: Path, name: str, passphrase_env: str, *, setting: str, permissions: str
) -> Ed25519NoteSigner:
    """A checkpoint signer from a private key file; errors name ``setting`` (the key file's).
    ``permissions``: ``server.key_file_permissions``."""
    _check_key_file(path, setting=setting, permissions=permissions)
    passphrase: bytes | None = None
    if passphrase_env:
        value = os.environ.get(passphrase_env)
        if value is None:
            env_setting = setting.removesuffix("_file") + "_passphrase_env"
            raise StartupError(f"{env_setting}: environment variable {passphrase_env} is not set")
        passphrase = value.encode("utf-8")
    try:
        key = load_private_key(path, passphrase)
    except RngServiceError as e:
        raise StartupError(f"{setting}: {e}") from e
    return Ed25519NoteSigner(name, key)


def _round_clients(config: Config) -> frozenset[str]:
    """Whose rounds ``VoidRound`` may void: the game servers (plaintext: the default client)."""
    if not config.tls.enabled:
        return frozenset({config.server.default_client_id})
    return frozenset(c.identity for c in config.clients if Role.GAME_SERVER.value in c.roles)


def _client_policies(config: Config) -> list[ClientPolicy]:
    """The ``[[clients]]`` entries as policy: roles, scopes and each one's rate limit."""
    default = config.rate_limit
    out = []
    for c in config.clients:
        limit: RateLimit | None = None
        if c.rate_per_second is not None and c.burst is not None:
            limit = RateLimit(c.rate_per_second, c.burst)
        elif default.enabled:
            limit = RateLimit(default.rate_per_second, default.burst)
        out.append(
            ClientPolicy(
                identity=c.identity,
                roles=frozenset(Role(r) for r in c.roles),
                tables=frozenset(c.tables),
                kinds=frozenset(c.kinds),
                profiles=frozenset(c.profiles),
                rate_limit=limit,
            )
        )
    return out


def open_storage(
    settings: StorageSettings, *, read_only: bool = False, migrate: bool = False
) -> LogStorage:
    """The configured log store; ``read_only``: an existing SQLite log opened for reading only
    (a PostgreSQL log is only read by what uses it read-only); ``migrate``: an existing log
    brought to this release's schema (``rng-service migrate-store``). Errors name the
    setting."""
    if settings.driver == "postgres":
        # Imported here: only a PostgreSQL deployment loads the driver (and psycopg).
        from rng_service.storage.postgres import PostgresStorage

        password: str | None = None
        if settings.postgres_password_env:
            password = os.environ.get(settings.postgres_password_env)
            if password is None:
                raise StartupError(
                    "storage.postgres_password_env: environment variable "
                    f"{settings.postgres_password_env} is not set"
                )
        try:
            return PostgresStorage(
                settings.postgres_dsn,
                password=password,
                connect_timeout_seconds=settings.postgres_connect_timeout_seconds,
                lock_timeout_ms=settings.postgres_lock_timeout_ms,
                migrate=(settings.postgres_migrate or migrate) and not read_only,
            )
        except RngServiceError as e:
            raise StartupError(f"storage.postgres_dsn: {e}") from e
    path = settings.path
    try:
        if read_only or migrate:
            if not path.is_file():
                raise StartupError(f"storage.path: {path} does not exist")
            return SqliteStorage(path, read_only=read_only, migrate=migrate and not read_only)
        check_store_directory(path)
        return SqliteStorage(path)
    except (OSError, RngServiceError) as e:
        raise StartupError(f"storage.path: cannot open {path}: {e}") from e


def check_store_directory(path: Path) -> None:
    """Refuses an SQLite log whose directory does not exist (StartupError naming
    ``storage.path``): the service never creates it, so that a typo in the path cannot start a
    second, empty log beside the real one. The directory is the deployment's to create
    (``make run``, the image, the compose volume)."""
    if not path.parent.is_dir():
        raise StartupError(
            f"storage.path: the directory {path.parent} of {path} does not exist (allowed: a "
            "file in an existing directory; create the directory first: the service never "
            "creates a log's directory, so that a mistyped path cannot start a second, empty log)"
        )


def _verifier_from(
    path: Path, name: str, passphrase_env: str, *, setting: str, permissions: str
) -> NoteVerifier:
    """A signing key's verifier: from its public half ``<path>.pub`` (written by keygen) if
    there is one, so that checking needs no private key, else from the private key."""
    public = path.with_name(path.name + ".pub")
    if public.is_file():
        try:
            return load_verifier(public, name=name)
        except RngServiceError as e:
            raise StartupError(f"{setting}: {e}") from e
    return _signer_from(
        path, name, passphrase_env, setting=setting, permissions=permissions
    ).verifier()


def configured_verifiers(config: Config) -> list[NoteVerifier]:
    """Every key whose checkpoints may be in the log: the active, co-signing and retired
    keys of ``[log]``, as verifiers."""
    cfg = config.log
    permissions = config.server.key_file_permissions
    keys = [_verifier_from(cfg.key_file, cfg.key_name, cfg.key_passphrase_env,
                           setting="log.key_file", permissions=permissions)]  # fmt: skip
    if cfg.cosign_key_file:
        keys.append(
            _verifier_from(
                cfg.key_file.parent / cfg.cosign_key_file, cfg.cosign_key_name,
                cfg.cosign_key_passphrase_env, setting="log.cosign_key_file",
                permissions=permissions,
            )
        )  # fmt: skip
    try:
        retired = load_verifier_keys(cfg.retired_key_items(), base_dir=cfg.key_file.parent)
    except RngServiceError as e:
        raise StartupError(f"log.retired_keys: {e}") from e
    return list(dict.fromkeys([*keys, *retired]))


def check_store_offline(config: Config) -> StoreCheckReport:
    """``rng-service check-store``: the full store check, reading only (it may run while the
    service serves the same log). Raises StoreCheckFailed (integrity) or StartupError."""
    verifiers = configured_verifiers(config)
    storage = open_storage(config.storage, read_only=True)
    try:
        return check_store(storage, verifiers, origin=config.log.origin, full=True)
    except StoreCheckFailed:
        raise
    except RngServiceError as e:
        raise StartupError(f"cannot read the log store: {e}") from e
    finally:
        storage.close()


@dataclass(frozen=True)
class MigrationReport:
    """What ``rng-service migrate-store`` did: ``migrated_from`` None if nothing was due."""

    where: str
    migrated_from: int | None
    schema_version: int
    entries: int


def migrate_store(config: Config) -> MigrationReport:
    """``rng-service migrate-store``: the configured log store brought to this release's schema
    (each step one transaction). A SQLite log is migrated only by the one owner of its lock,
    so never under a running service. Raises StartupError."""
    owner = InstanceLock()
    if config.storage.driver == "sqlite":
        if not config.storage.path.is_file():  # before the lock, which would create a file
            raise StartupError(f"storage.path: {config.storage.path} does not exist")
        Service._lock(
            lambda: owner.lock_store(config.storage.path),
            setting="storage.path",
            what=f"the SQLite log {config.storage.path}",
            io_setting="storage.path",
            hint=": stop the service before migrating its log",
        )
    try:
        storage = open_storage(config.storage, migrate=True)
        try:
            return MigrationReport(
                where=str(config.storage.path) if config.storage.driver == "sqlite"
                else repr(storage),
                migrated_from=getattr(storage, "migrated_from", None),
                schema_version=_schema_version(config),
                entries=storage.tree_size(),
            )  # fmt: skip
        except RngServiceError as e:
            raise StartupError(f"cannot read the log store: {e}") from e
        finally:
            storage.close()
    finally:
        owner.release()


def _schema_version(config: Config) -> int:
    if config.storage.driver == "postgres":
        from rng_service.storage.postgres import SCHEMA_VERSION as PG_SCHEMA_VERSION

        return PG_SCHEMA_VERSION
    from rng_service.storage.sqlite import SCHEMA_VERSION as SQLITE_SCHEMA_VERSION

    return SQLITE_SCHEMA_VERSION


@dataclass(frozen=True)
class _Keys:
    """The keys of the log: the active signer, the co-signers of a rotation's overlap window and
    the retired keys that stay published (their verifiers)."""

    signer: Ed25519NoteSigner
    cosigners: list[Ed25519NoteSigner]
    retired: list[NoteVerifier]

    def verifiers(self) -> list[NoteVerifier]:
        """Every key whose checkpoints may be in the store."""
        return [s.verifier() for s in (self.signer, *self.cosigners)] + self.retired

    def public_keys(self) -> list[PublicKeyInfo]:
        """What ``GetPublicKeys`` answers: the active key first, then the co-signers."""
        return [
            PublicKeyInfo(
                key_id=f"{v.key_id:08x}",
                name=v.name,
                public_key=v.public_key.public_bytes_raw(),
                verifier_key=v.verifier_key(),
                active=i == 0,
                cosigning=1 <= i <= len(self.cosigners),
            )
            for i, v in enumerate(self.verifiers())
        ]


class Service:
    """One running service instance. ``await start()``, then ``await stop()``."""

    def __init__(
        self,
        config: Config,
        *,
        clock: Clock | None = None,
        entropy: EntropySource | None = None,
        storage: LogStorage | None = None,
        registry: CollectorRegistry | None = None,
        front_ends: int = 1,
    ) -> None:
        self.config = config
        #: gRPC front-end processes (``serve --front-ends``); above 1, this process is the log
        #: writer and serves no gRPC itself (``rng_service.process.writer_process``).
        self.front_ends = front_ends
        self._writer: WriterProcess | None = None
        self.clock = clock or SystemClock()
        self._entropy = entropy
        self._storage = storage
        if registry is None:
            registry = CollectorRegistry()
            ProcessCollector(registry=registry)
            PlatformCollector(registry=registry)
        self.registry = registry
        self.metrics = Metrics(self.registry)
        self.generator: ProductionGenerator | None = None
        #: The raw-output stream's own generator (certification.raw_stream_enabled only).
        self.raw_generator: ProductionGenerator | None = None
        self.appender: Appender | None = None
        #: Whether the log store can commit (commits and probes); health follows it.
        self.store_health: StoreHealth | None = None
        self._server: Any = None
        #: The drain window of a graceful stop (new calls UNAVAILABLE, accepted ones finish).
        self._drain = Drain(observer=self.metrics)
        self._health_monitor: HealthMonitor | None = None
        self._metrics_server: Any = None
        self._verify_page: VerifyPageServer | None = None
        self._owner = InstanceLock()
        self.endpoints: Endpoints | None = None
        #: Sends published checkpoints to the ``[[witnesses]]`` (None without witnesses).
        self.witnessing: Witnessing | None = None

    def _open_storage(self) -> LogStorage:
        if self._storage is not None:
            return self._storage
        return open_storage(self.config.storage)

    def _load_signer(self) -> Ed25519NoteSigner:
        cfg = self.config.log
        return _signer_from(
            cfg.key_file, cfg.key_name, cfg.key_passphrase_env, setting="log.key_file",
            permissions=self.config.server.key_file_permissions,
        )  # fmt: skip

    def _load_cosigners(self) -> list[Ed25519NoteSigner]:
        """The co-signing key of a key rotation's overlap window, if configured."""
        cfg = self.config.log
        if not cfg.cosign_key_file:
            return []
        path = cfg.key_file.parent / cfg.cosign_key_file
        return [
            _signer_from(
                path, cfg.cosign_key_name, cfg.cosign_key_passphrase_env,
                setting="log.cosign_key_file",
                permissions=self.config.server.key_file_permissions,
            )
        ]  # fmt: skip

    def _load_retired_keys(self, active: Sequence[Ed25519NoteSigner]) -> list[NoteVerifier]:
        """Retired signing keys that stay published after a rotation (docs/auditing.md)."""
        cfg = self.config.log
        try:
            verifiers = load_verifier_keys(cfg.retired_key_items(), base_dir=cfg.key_file.parent)
        except RngServiceError as e:
            raise StartupError(f"log.retired_keys: {e}") from e
        signing = {s.verifier() for s in active}
        return list(dict.fromkeys(v for v in verifiers if v not in signing))

    def _load_profiles(self) -> ProfileRegistry:
        """The operator's profiles and paytables (``[profiles] directory``) and, only with
        ``allow_examples``, the shipped examples; validated once, never changed while serving.
        An error names the setting, the file and the key."""
        cfg = self.config.profiles
        try:
            registry = ProfileRegistry.load(
                directory=cfg.directory or None, allow_examples=cfg.allow_examples
            )
        except RngServiceError as e:
            text = str(e)  # a message that names the setting already is not prefixed again
            raise StartupError(
                text if text.startswith("profiles.directory:") else f"profiles.directory: {text}"
            ) from e
        _log.info(
            {
                "event": "profiles_loaded",
                "directory": cfg.directory or None,
                "allow_examples": cfg.allow_examples,
                "profiles": [
                    {"name": d.id.name, "version": d.id.version, "sha256": d.id.sha256,
                     "example": d.example}
                    for d in registry.all()
                ],
            }
        )  # fmt: skip
        return registry

    def _build_authorizer(self) -> Authorizer:
        """mTLS: callers are their certificate identities from ``[[clients]]``. Plaintext
        (loopback only): every caller is ``server.default_client_id`` with every role."""
        cfg = self.config
        if cfg.tls.enabled:
            return Authorizer.mtls(_client_policies(cfg), clock=self.clock, observer=self.metrics)
        limit = (
            RateLimit(cfg.rate_limit.rate_per_second, cfg.rate_limit.burst)
            if cfg.rate_limit.enabled
            else None
        )
        return Authorizer.development(
            cfg.server.default_client_id, rate_limit=limit, clock=self.clock,
            observer=self.metrics,
        )  # fmt: skip

    def _generator_config(self) -> GeneratorConfig:
        settings = self.config.generator
        return GeneratorConfig(
            reseed_interval_requests=settings.reseed_interval_requests,
            reseed_interval_seconds=settings.reseed_interval_seconds,
            entropy_timeout_seconds=settings.entropy_timeout_seconds,
        )

    def _watch_store(self, storage: LogStorage) -> StoreHealth:
        """The store's health, fed by the appender's commits (it forwards them to the metrics)
        and by probes the health monitor runs; scraped as ``rng_log_store_up``."""
        self.store_health = StoreHealth(storage, clock=self.clock, forward=self.metrics)
        self.registry.register(StoreCollector(self.store_health.status))
        return self.store_health

    def _server_credentials(self) -> grpc.ServerCredentials | None:
        """mTLS server credentials: the client certificate is required and verified against
        ``tls.client_ca_file`` in the handshake (grpc.ssl_server_credentials)."""
        tls = self.config.tls
        if not tls.enabled:
            return None
        _check_key_file(
            tls.key_file,
            setting="tls.key_file",
            permissions=self.config.server.key_file_permissions,
        )
        try:  # checked here: gRPC would only say "Failed to bind to address"
            files = load_server_tls(
                cert_file=tls.cert_file, key_file=tls.key_file, client_ca_file=tls.client_ca_file
            )
        except TlsFileError as e:
            raise StartupError(str(e), setting=e.setting, file=e.path) from None
        return grpc.ssl_server_credentials(
            [(files.private_key, files.cert_chain)],
            root_certificates=files.client_ca,
            require_client_auth=True,
        )

    def _warn_unless_key_named_by_origin(self) -> None:
        cfg = self.config.log
        if cfg.key_name != cfg.origin:
            _log.warning(
                {
                    "event": "key_name_differs_from_origin",
                    "key_name": cfg.key_name,
                    "origin": cfg.origin,
                    "message": "C2SP tlog-checkpoint: the key name should be the origin; "
                    "auditors must then pass --origin (docs/auditing.md)",
                }
            )

    def _take_ownership(self) -> None:
        """One instance per gRPC port and per SQLite log (docs/operations.md, "One owner per
        log"): a second one stops here, naming the pid that holds what it wanted."""
        cfg = self.config
        if cfg.server.port != 0:  # port 0: the kernel picks a free port, nobody else's
            self._lock(
                lambda: self._owner.lock_port(cfg.server.lock_dir, cfg.server.port),
                setting="server.port",
                what=f"port {cfg.server.port}",
                io_setting="server.lock_dir",
            )
        if self._storage is None and cfg.storage.driver == "sqlite":
            check_store_directory(cfg.storage.path)
            self._lock(
                lambda: self._owner.lock_store(cfg.storage.path),
                setting="storage.path",
                what=f"the SQLite log {cfg.storage.path}",
                io_setting="storage.path",
                hint=". An SQLite log has one owner; replicas share a PostgreSQL log "
                "(docs/operations.md)",
            )

    @staticmethod
    def _lock(
        take: Callable[[], object], *, setting: str, what: str, io_setting: str, hint: str = ""
    ) -> None:
        try:
            take()
        except LockHeld as e:
            raise StartupError(
                f"{setting}: {what} belongs to another rng-service instance, {e}{hint}"
            ) from e
        except OSError as e:
            raise StartupError(f"{io_setting}: cannot take the lock of {what}: {e}") from e

    def _witness_endpoints(self) -> list[WitnessEndpoint]:
        """The ``[[witnesses]]``: each one's key (errors name the entry), URL and TLS trust."""
        endpoints = []
        timeout = self.config.witnessing.timeout_seconds
        for i, w in enumerate(self.config.witnesses):
            setting = f"witnesses[{i}]"
            try:
                text = w.key
                if "+" not in text or Path(text).is_file():
                    text = Path(text).read_text(encoding="utf-8").strip().splitlines()[0]
                verifier = CosignatureVerifier.from_verifier_key(text)
            except (OSError, IndexError, UnicodeDecodeError) as e:
                raise StartupError(f"{setting}.key: cannot read {w.key}: {e}") from e
            except RngServiceError as e:
                raise StartupError(f"{setting}.key: {e}") from e
            context: ssl.SSLContext | None = None
            if w.url.startswith("https://"):
                try:
                    context = ssl.create_default_context(cafile=w.ca_file or None)
                except (OSError, ssl.SSLError) as e:
                    raise StartupError(f"{setting}.ca_file: {w.ca_file}: {e}",
                                       file=w.ca_file) from e  # fmt: skip
            endpoints.append(
                WitnessEndpoint(
                    name=w.name or verifier.name,
                    url=w.url,
                    verifier=verifier,
                    transport=HttpWitnessTransport(w.url, timeout=timeout, ssl_context=context),
                )
            )
        names = [e.name for e in endpoints]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise StartupError(
                    f"witnesses[{i}].name: {name!r} names two witnesses; give each a name"
                )
        return endpoints

    def _check_witnesses(self, witnessing: Witnessing) -> None:
        """Start-up against the witnesses (docs/operations.md, "Witnesses"): the current
        tree's checkpoint goes to each; one that holds a checkpoint this tree does not extend
        refuses the start, naming it. Unreachable ones are a warning, unless
        ``witnessing.require_at_startup`` asks for ``min_witnesses`` cosignatures."""
        cfg = self.config.witnessing
        report = witnessing.startup()
        if report.conflicts:
            named = "; ".join(
                f"witness {o.witness} ({self._witness_url(o.witness)}): {o.message}"
                for o in report.conflicts
            )
            raise StartupError(
                f"witnesses: {named}. Nothing was served; the log's store does not hold the "
                f'log the witnesses saw (docs/operations.md, "Witnesses")',
                setting="witnesses",
            )
        if cfg.require_at_startup and report.cosigned < cfg.min_witnesses:
            missing = "; ".join(
                f"{o.witness}: {o.result} ({o.message})"
                for o in report.outcomes
                if o.result != "cosigned"
            )
            raise StartupError(
                f"witnessing.require_at_startup: {report.cosigned} of the "
                f"{cfg.min_witnesses} witnesses needed cosigned the log's checkpoint ({missing})",
                setting="witnessing.require_at_startup",
            )
        if report.cosigned and self.appender is not None:
            self.appender.publish_checkpoint()  # the checkpoint they cosigned, as published
        _log.info(
            {
                "event": "witnesses_checked",
                "cosigned": report.cosigned,
                "required": cfg.min_witnesses,
                "witnesses": {o.witness: o.result for o in report.outcomes},
            }
        )

    def _witness_url(self, name: str) -> str:
        if self.witnessing is not None:
            for e in self.witnessing.endpoints:
                if e.name == name:
                    return e.url
        return "?"

    def _check_store(self, storage: LogStorage, verifiers: Sequence[NoteVerifier]) -> None:
        """The store's own check (rng_service.log.storecheck): refuses to serve a log that is
        not the log that was signed, naming the first bad index or checkpoint."""
        cfg = self.config
        full = cfg.log.startup_check == "full"
        try:
            report = check_store(storage, verifiers, origin=cfg.log.origin, full=full)
            recorded = record_verified(storage, report)
        except UnconfiguredSigner as e:  # a configuration fault: one line naming the setting
            raise StartupError(f"log.retired_keys: {e}", setting="log.retired_keys") from e
        except IntegrityError as e:
            raise StartupError(
                f"log store check failed: {e}. Nothing was served; run `rng-service "
                f'check-store` for the full check and see docs/operations.md ("The log '
                f"store's own check\")"
            ) from e
        except RngServiceError as e:
            raise StartupError(f"log store check could not read the store: {e}") from e
        _log.info(
            {
                "event": "store_check_passed",
                "mode": "full" if report.full else "incremental",
                "reason": report.reason,
                "tree_size": report.tree_size,
                "checked_from": report.start,
                "entries": report.entries,
                "nodes": report.nodes,
                "checkpoints": report.checkpoints,
                "verified_checkpoint_size": report.newest.size if report.newest else None,
                "recorded": recorded,
                "seconds": round(report.seconds, 3),
            }
        )

    async def start(self) -> Endpoints:
        """Starts the service, in this order: every check that needs no resource (transport,
        TLS files, keys, profiles) before anything is opened or bound; then the log store's
        ownership, the store and its own check; the generators; the log writer and the
        witnesses' check; health; the gRPC server and its port; witnessing rounds; metrics; the
        verification page. Raises StartupError naming what is at fault."""
        try:  # before anything binds: plaintext only on loopback
            check_transport(self.config)
        except ConfigError as e:
            raise StartupError(str(e)) from None
        if self.front_ends > 1 and self.config.certification.raw_stream_enabled:
            raise StartupError(
                "certification.raw_stream_enabled: the raw output stream is served with one "
                "front end only (--front-ends 1): only the log writer process holds a generator"
            )
        credentials = self._server_credentials()
        authorizer = self._build_authorizer()
        keys = self._load_keys()
        profiles = self._load_profiles()
        self._warn_unless_key_named_by_origin()
        self._take_ownership()
        storage, tree = self._open_checked_store(keys)
        generator = self._start_generators()
        self._show_log_state(storage, tree)
        appender = self._start_appender(storage, tree, generator, keys)
        await self._check_witnesses_at_start(appender, storage, tree)
        health = await self._start_health(generator)
        if self.front_ends > 1:  # this process stays the log writer; N front ends serve gRPC
            self.metrics.expect_integrity_errors(
                (*LogServicer.CHECKED_METHODS, "sequencer"), CHECKS
            )
            return await self._start_writer(
                profiles, keys.public_keys(), tree.size, keys.signer, generator
            )
        self._server = self._build_grpc_server(
            appender, storage, tree, keys, profiles, authorizer, health
        )
        port = await self._listen(credentials)
        if self.witnessing is not None:
            self.witnessing.start()
        metrics_port = self._start_metrics()
        verify_page_port = self._start_verify_page()
        self.endpoints = Endpoints(
            grpc_port=port, metrics_port=metrics_port, verify_page_port=verify_page_port
        )
        self._log_started(port, metrics_port, verify_page_port, tree, keys.signer, generator)
        return self.endpoints

    def _load_keys(self) -> _Keys:
        """The signing key, the co-signing key of a rotation (if any) and the retired keys."""
        signer = self._load_signer()
        cosigners = self._load_cosigners()
        return _Keys(signer, cosigners, self._load_retired_keys([signer, *cosigners]))

    def _open_checked_store(self, keys: _Keys) -> tuple[LogStorage, MerkleTree]:
        """The log store, proven by its own check to be the log that was signed, and its
        tree."""
        storage = self._open_storage()
        self._storage = storage
        self._check_store(storage, keys.verifiers())
        try:
            tree = MerkleTree.load(storage)
        except IntegrityError as e:
            raise StartupError(f"log store: {e}") from e
        return storage, tree

    def _start_generators(self) -> ProductionGenerator:
        """The outcome generator and, for labs, the raw-output stream's own; the outcome
        generator's status becomes metrics."""
        # ProductionGenerator runs the SP 800-90B health tests on whatever source it gets.
        entropy = self._entropy or OsEntropySource()
        self.generator = ProductionGenerator(
            entropy=entropy, clock=self.clock, config=self._generator_config()
        )
        if self.config.certification.raw_stream_enabled:
            # A separate instance (own instance id, own DRBG state) of the same kind, on the
            # same entropy source type with the same health tests: raw output for labs never
            # comes from, nor consumes, the generator that serves outcomes.
            self.raw_generator = ProductionGenerator(
                entropy=entropy, clock=self.clock, config=self._generator_config()
            )
        self.registry.register(GeneratorCollector(self.generator.status))
        return self.generator

    def _show_log_state(self, storage: LogStorage, tree: MerkleTree) -> None:
        """The log's size and checkpoint age in the metrics from the start, not from the first
        commit."""
        self.metrics.log_size.set(tree.size)
        latest = storage.latest_checkpoint()
        if latest is not None:
            self.metrics.last_checkpoint.set(latest.timestamp_ns / 1e9)

    def _start_appender(
        self, storage: LogStorage, tree: MerkleTree, generator: ProductionGenerator, keys: _Keys
    ) -> Appender:
        """The log writer (sequencer, signer of checkpoints), running."""
        cfg = self.config.log
        self.appender = Appender(
            storage=storage,
            tree=tree,
            generator=generator,
            signer=keys.signer,
            cosigners=keys.cosigners,
            origin=cfg.origin,
            clock=self.clock,
            publish_interval_seconds=cfg.publish_interval_seconds,
            max_group_size=cfg.max_group_size,
            max_queue=cfg.max_queue,
            group_wait_seconds=cfg.group_wait_seconds,
            observer=self._watch_store(storage),
        )
        try:
            self.appender.start()
        except IntegrityError as e:
            raise StartupError(f"log store: {e}") from e
        return self.appender

    async def _check_witnesses_at_start(
        self, appender: Appender, storage: LogStorage, tree: MerkleTree
    ) -> None:
        """With ``[[witnesses]]``: the witnessing rounds (started once the server serves), and
        the witnesses' own check of the store now; if they contradict it, the log writer stops
        without signing more and the start fails."""
        cfg = self.config
        if not cfg.witnesses:
            return
        endpoints = self._witness_endpoints()
        self.metrics.witnesses_configured([e.name for e in endpoints], cfg.witnessing.min_witnesses)
        self.witnessing = Witnessing(
            endpoints=endpoints,
            storage=storage,
            tree=tree,
            checkpoint_note=appender.checkpoint_note,
            publish=appender.publish_checkpoint,
            sync=appender.sync,
            clock=self.clock,
            interval_seconds=cfg.witnessing.interval_seconds or cfg.log.publish_interval_seconds,
            min_witnesses=cfg.witnessing.min_witnesses,
            observer=self.metrics,
        )
        try:
            await asyncio.to_thread(self._check_witnesses, self.witnessing)
        except StartupError:
            # Nothing more is signed over a store the witnesses contradict.
            await asyncio.to_thread(appender.stop, publish=False)
            raise

    async def _start_health(self, generator: ProductionGenerator) -> HealthService:
        """The gRPC health service, following the generator and the store from now on."""
        health = HealthService()
        self._health_monitor = HealthMonitor(health, generator.status, store=self.store_health)
        await self._health_monitor.update()
        self._health_monitor.start()
        return health

    def _build_grpc_server(
        self,
        appender: Appender,
        storage: LogStorage,
        tree: MerkleTree,
        keys: _Keys,
        profiles: ProfileRegistry,
        authorizer: Authorizer,
        health: HealthService,
    ) -> Any:
        """The gRPC server with its three services, health and the drain window (not bound)."""
        cfg = self.config
        public_keys = keys.public_keys()
        self.metrics.expect_integrity_errors((*LogServicer.CHECKED_METHODS, "sequencer"), CHECKS)
        return build_server(
            outcome=OutcomeServicer(
                appender=appender,
                client_id=cfg.server.default_client_id,
                profiles=profiles,
                rpc_observer=self.metrics,
                authorizer=authorizer,
                round_clients=_round_clients(cfg),
            ),
            log=LogServicer(
                keys=public_keys,
                storage=storage,
                tree=tree,
                checkpoint_note=appender.checkpoint_note,
                publish=appender.publish_checkpoint,
                rpc_observer=self.metrics,
                authorizer=authorizer,
                sync=appender.sync,
                integrity_observer=self.metrics,
                client_id=cfg.server.default_client_id,
            ),
            lab=LabServicer(
                appender=appender,
                client_id=cfg.server.default_client_id,
                generator=self.raw_generator,
                max_bytes=cfg.certification.raw_stream_max_bytes,
                max_seconds=cfg.certification.raw_stream_max_seconds,
                rpc_observer=self.metrics,
                authorizer=authorizer,
            ),
            health=health,
            decode_observer=self.metrics,
            drain=self._drain,
        )

    async def _listen(self, credentials: grpc.ServerCredentials | None) -> int:
        """Binds the gRPC port (mTLS, or plaintext on loopback, announced) and starts serving;
        returns the port."""
        cfg = self.config
        address = f"{cfg.server.host}:{cfg.server.port}"
        if ":" in cfg.server.host:
            address = f"[{cfg.server.host.strip('[]')}]:{cfg.server.port}"
        if credentials is None:
            _log.warning(
                {
                    "event": "plaintext_development_mode",
                    "address": address,
                    "client_id": cfg.server.default_client_id,
                    "configured_clients_ignored": len(cfg.clients),
                    "message": "PLAINTEXT gRPC on loopback, DEVELOPMENT ONLY: no client is "
                    "authenticated and every caller is server.default_client_id with every "
                    "role (game_server, auditor, lab, operator). Set [tls] for mTLS.",
                }
            )
            bind = functools.partial(self._server.add_insecure_port, address)
        else:
            _log.info(
                {
                    "event": "mtls",
                    "address": address,
                    "clients": {c.identity: list(c.roles) for c in cfg.clients},
                }
            )
            bind = functools.partial(self._server.add_secure_port, address, credentials)
        try:
            port: int = bind()
        except RuntimeError:  # grpcio raises where older versions returned 0
            port = 0
        if port == 0:
            raise StartupError(
                f"server.port: cannot listen on {address}: the address is in use by another "
                f"process, or not an address of this host"
            )
        await self._server.start()
        return port

    def _start_metrics(self) -> int | None:
        """The Prometheus endpoint, if enabled; returns its port."""
        cfg = self.config.metrics
        if not cfg.enabled:
            return None
        try:
            self._metrics_server, _ = start_http_server(
                cfg.port, addr=cfg.host, registry=self.registry
            )
        except OSError as e:
            raise StartupError(f"metrics.port: cannot listen on {cfg.host}:{cfg.port}: {e}") from e
        metrics_port: int = self._metrics_server.server_port
        return metrics_port

    def _log_started(
        self,
        port: int,
        metrics_port: int | None,
        verify_page_port: int | None,
        tree: MerkleTree,
        signer: Ed25519NoteSigner,
        generator: ProductionGenerator,
    ) -> None:
        cfg = self.config
        _log.info(
            {
                "event": "started",
                "grpc": f"{cfg.server.host}:{port}",
                "metrics": metrics_port,
                "verify_page": verify_page_port,
                "storage": (
                    {"driver": "sqlite", "path": str(cfg.storage.path)}
                    if cfg.storage.driver == "sqlite"
                    else {"driver": cfg.storage.driver}
                ),
                "log": {
                    "origin": cfg.log.origin,
                    "size": tree.size,
                    "publish_interval_seconds": cfg.log.publish_interval_seconds,
                    "max_group_size": cfg.log.max_group_size,
                },
                "key": {"name": signer.name, "key_id": f"{signer.key_id:08x}",
                        "verifier_key": signer.verifier_key()},
                "generator": {
                    "instance": generator.instance_id,
                    "reseed_interval_requests": cfg.generator.reseed_interval_requests,
                    "reseed_interval_seconds": cfg.generator.reseed_interval_seconds,
                    "self_test": generator.status().self_test,
                },
                "raw_output_stream": (
                    None
                    if self.raw_generator is None
                    else {"instance": self.raw_generator.instance_id,
                          "max_bytes": cfg.certification.raw_stream_max_bytes}
                ),
            }
        )  # fmt: skip

    def _start_verify_page(self) -> int | None:
        """``[verify_page]``: the receipt-verification page, read-only on its own port."""
        page = self.config.verify_page
        if not page.enabled:
            return None
        directory = Path(page.directory) if page.directory else default_page_directory()
        try:
            files = load_page(directory)
        except OSError as e:
            raise StartupError(f"verify_page.directory: cannot read {directory}: {e}") from e
        except RngServiceError as e:
            raise StartupError(f"verify_page.directory: {e}") from e
        try:
            self._verify_page = VerifyPageServer(files, page.host, page.port)
        except OSError as e:
            raise StartupError(
                f"verify_page.port: cannot listen on {page.host}:{page.port}: {e}"
            ) from e
        return self._verify_page.port

    async def stop(self, grace: float | None = None) -> None:
        """Graceful stop: health says NOT_SERVING; for ``grace`` seconds (the drain window,
        ``server.shutdown_grace_seconds``) new calls get UNAVAILABLE "shutting down" while the
        calls already accepted finish; then the server stops, the log writer commits what is
        queued and a final checkpoint is published."""
        if grace is None:
            grace = self.config.server.shutdown_grace_seconds
        if self._health_monitor is not None:
            await self._health_monitor.stop()
        if self._writer is not None:
            await self._writer.stop(grace)  # the front ends drain; then the writer stops below
        if self._server is not None:
            await self._drain_calls(grace)
            await self._server.stop(min(grace, 1.0))  # our calls are done: nothing to wait for
        if self.witnessing is not None:
            await asyncio.to_thread(self.witnessing.stop)
        if self.appender is not None:
            await asyncio.to_thread(self.appender.stop)
        if self._metrics_server is not None:
            self._metrics_server.shutdown()
            self._metrics_server.server_close()
        if self._verify_page is not None:
            self._verify_page.close()
        if self._storage is not None:
            self._storage.close()
        self._owner.release()
        _log.info(
            {"event": "stopped", "log_size": self.appender.tree_size if self.appender else None}
        )

    async def _start_writer(
        self,
        profiles: ProfileRegistry,
        keys: Sequence[PublicKeyInfo],
        size: int,
        signer: Ed25519NoteSigner,
        generator: ProductionGenerator,
    ) -> Endpoints:
        """``serve --front-ends N``: this process stays the log writer (store, generator, keys)
        and starts the N gRPC front ends (``rng_service.process.writer_process``)."""
        cfg = self.config
        if self.appender is None or self.store_health is None:
            raise RuntimeError("_start_writer before the log writer and store health started")
        store_health = self.store_health
        self._writer = WriterProcess(
            appender=self.appender,
            status=lambda: (generator.status(), store_health.status()),
            config=cfg,
            profiles=profiles,
            keys=tuple(keys),
            count=self.front_ends,
            inherit=self._owner.descriptors(),
        )
        try:
            port = await self._writer.start()
        except RngServiceError as e:
            raise StartupError(f"server.port: the front ends did not start: {e}") from e
        if self.witnessing is not None:
            self.witnessing.start()
        metrics_port: int | None = None
        if cfg.metrics.enabled:
            served = CollectorRegistry(auto_describe=True)
            served.register(MergedCollector(self.registry, self._writer.metric_families))
            try:
                self._metrics_server, _ = start_http_server(
                    cfg.metrics.port, addr=cfg.metrics.host, registry=served
                )
            except OSError as e:
                raise StartupError(
                    f"metrics.port: cannot listen on {cfg.metrics.host}:{cfg.metrics.port}: {e}"
                ) from e
            metrics_port = self._metrics_server.server_port
        verify_page_port = self._start_verify_page()  # static files: the writer serves them
        self.endpoints = Endpoints(
            grpc_port=port, metrics_port=metrics_port, verify_page_port=verify_page_port
        )
        _log.info(
            {
                "event": "started",
                "grpc": f"{cfg.server.host}:{port}",
                "metrics": metrics_port,
                "verify_page": verify_page_port,
                "front_ends": self._writer.pids(),
                "log": {"origin": cfg.log.origin, "size": size},
                "key": {"name": signer.name, "key_id": f"{signer.key_id:08x}",
                        "verifier_key": signer.verifier_key()},
                "generator": {"instance": generator.instance_id},
            }
        )  # fmt: skip
        return self.endpoints

    async def _drain_calls(self, grace: float) -> None:
        """The drain window (``rng_service.rpc.drain``), logged with what it took."""
        in_progress = self._drain.in_progress
        started = asyncio.get_running_loop().time()
        interrupted = await self._drain.close(grace)
        _log.info(
            {
                "event": "drained",
                "calls_in_progress": in_progress,
                "interrupted": interrupted,
                "seconds": round(asyncio.get_running_loop().time() - started, 3),
            }
        )


async def _serve(
    config: Config, on_ready: Callable[[int], None] | None = None, front_ends: int = 1
) -> int:
    service = Service(config, front_ends=front_ends)
    try:
        endpoints = await service.start()
    except StartupError as e:
        event = {"event": "startup_failed", "error": str(e), "setting": e.setting}
        if e.file:  # only when a file is at fault (a key or TLS file)
            event["file"] = e.file
        _log.error(event)
        await _stop_after_failed_start(service)
        return 2
    except Exception as e:  # anything else: still one JSON event, the traceback in a field
        _log.critical(
            {"event": "startup_failed", "error": f"{type(e).__name__}: {e}"}, exc_info=True
        )
        await _stop_after_failed_start(service)
        return 1
    # The handlers before the readiness line: a SIGTERM sent as soon as it appears (a supervisor,
    # a test) must stop the service gracefully, not kill it with the default action.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    # One JSON line on stdout for scripts that wait for the service (the log is on stderr).
    print(
        json.dumps(
            {
                "event": "listening",
                "grpc": f"{config.server.host}:{endpoints.grpc_port}",
                "grpc_port": endpoints.grpc_port,
                "metrics_port": endpoints.metrics_port,
                "verify_page_port": endpoints.verify_page_port,
            }
        ),
        flush=True,
    )
    if on_ready is not None:
        on_ready(endpoints.grpc_port)
    await stop.wait()
    _log.info(
        {"event": "shutdown_requested", "grace_seconds": config.server.shutdown_grace_seconds}
    )
    await service.stop()
    return 0


async def _stop_after_failed_start(service: Service) -> None:
    try:
        await service.stop(0)
    except Exception:  # the start-up failure is what matters; this is logged, not raised
        _log.warning({"event": "stop_after_failed_start_failed"}, exc_info=True)


def run(config: Config, on_ready: Callable[[int], None] | None = None, front_ends: int = 1) -> int:
    """Runs the service until SIGTERM or SIGINT; returns the process exit status.
    ``on_ready(grpc_port)`` is called once it serves, after the readiness line.
    ``front_ends`` above 1: this process is the log writer and starts that many gRPC
    front-end processes on the port (``rng_service.process.writer_process``)."""
    # The log writer thread hands every group back to the event loop right after its fsync;
    # with the default 5 ms switch interval it could wait that long for the GIL each time.
    sys.setswitchinterval(0.0005)
    with contextlib.suppress(ImportError):
        import uvloop

        return uvloop.run(_serve(config, on_ready, front_ends))
    return asyncio.run(_serve(config, on_ready, front_ends))
