"""The service's parts built and checked before anything serves: :class:`ServiceSetup`, the
base of :class:`rng_service.process.app.Service`, holds the instance's state and the start-up
steps that read the configuration (keys, profiles, the authorizer, TLS credentials, the
witnesses), take the instance's locks and check the log store (docs/architecture.md,
"Start-up order"). ``Service`` adds starting, serving and stopping.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
from prometheus_client import (
    CollectorRegistry,
    PlatformCollector,
    ProcessCollector,
)

from rng_service.clock import Clock, SystemClock
from rng_service.config import Config
from rng_service.drbg import EntropySource, GeneratorConfig, ProductionGenerator
from rng_service.errors import IntegrityError, RngServiceError
from rng_service.log.cosignature import CosignatureVerifier
from rng_service.log.keys import load_verifier_keys
from rng_service.log.note import Ed25519NoteSigner, NoteVerifier
from rng_service.metrics import Metrics, StoreCollector
from rng_service.ownership import InstanceLock, LockHeld
from rng_service.process.startup import (
    Endpoints,
    StartupError,
    _check_key_file,
    _client_policies,
    _signer_from,
    check_store_directory,
    open_storage,
)
from rng_service.process.writer_process import WriterProcess
from rng_service.rpc.auth import Authorizer
from rng_service.rpc.drain import Drain
from rng_service.rpc.profiles import ProfileRegistry
from rng_service.rpc.server import HealthMonitor
from rng_service.security.policy import RateLimit
from rng_service.security.tls_files import TlsFileError, load_server_tls
from rng_service.storage.base import LogStorage
from rng_service.verify_page import VerifyPageServer
from rng_service.writer.appender import Appender
from rng_service.writer.publisher import HttpWitnessTransport, WitnessEndpoint, Witnessing
from rng_service.writer.store_health import StoreHealth
from rng_service.writer.storecheck import (
    UnconfiguredSigner,
    check_store,
    record_verified,
)

__all__ = ["ServiceSetup"]

_log = logging.getLogger("rng_service")


class ServiceSetup:
    """A service instance's state and its start-up checks (see :class:`Service`)."""

    def __init__(
        self,
        config: Config,
        *,
        clock: Clock | None = None,
        entropy: EntropySource | None = None,
        storage: LogStorage | None = None,
        registry: CollectorRegistry | None = None,
        front_ends: int = 1,
        shared: tuple[int, ...] = (),
        own_port: bool = True,
    ) -> None:
        self.config = config
        #: Channels to the shared front ends of a deployment's one port (their descriptors,
        #: ``rng_service.process.shared_frontend``): this process serves each as it serves
        #: its own front ends.
        self.shared = shared
        #: Whether this process serves ``server.port`` (False: a log of a deployment served
        #: on the shared port only).
        self.own_port = own_port
        self._shared_endpoints: list[Any] = []
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
        if "*" not in cfg.names:  # a [[logs]] entry's profiles: this log serves these only
            loaded = {d.id.name for d in registry.all()}
            for name in cfg.names:
                if name not in loaded:
                    raise StartupError(
                        f"logs ({self.config.log.origin}).profiles: {name!r} is not a loaded "
                        "profile or paytable (allowed: "
                        + (", ".join(repr(n) for n in sorted(loaded)) or "none loaded")
                        + ', or "*")'
                    )
            registry = ProfileRegistry(d for d in registry.all() if d.id.name in cfg.names)
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
            return Authorizer.mtls(
                _client_policies(cfg), clock=self.clock, observer=self.metrics,
                origin=cfg.log.origin,
            )  # fmt: skip
        limit = (
            RateLimit(cfg.rate_limit.rate_per_second, cfg.rate_limit.burst)
            if cfg.rate_limit.enabled
            else None
        )
        return Authorizer.development(
            cfg.server.default_client_id, rate_limit=limit, clock=self.clock,
            observer=self.metrics, origin=cfg.log.origin,
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
        """One instance per gRPC port and per SQLite log (docs/operations/running.md, "One owner per
        log"): a second one stops here, naming the pid that holds what it wanted."""
        cfg = self.config
        # port 0: the kernel picks a free port, nobody else's; no port of its own: the
        # supervisor holds the shared port's lock
        if cfg.server.port != 0 and self.own_port:
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
                "(docs/operations/postgresql.md)",
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
        """Start-up against the witnesses (docs/operations/witnesses.md, "Witnesses"): the current
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
                f'log the witnesses saw (docs/operations/witnesses.md, "Witnesses")',
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
        """The store's own check (rng_service.writer.storecheck): refuses to serve a log that is
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
                f'check-store` for the full check and see docs/operations/running.md ("The log '
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
