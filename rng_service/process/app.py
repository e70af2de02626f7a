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
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from prometheus_client import (
    CollectorRegistry,
    start_http_server,
)
from prometheus_client.registry import Collector

from rng_service.config import Config, ConfigError, check_transport
from rng_service.drbg import OsEntropySource, ProductionGenerator
from rng_service.errors import IntegrityError, RngServiceError
from rng_service.log.note import Checkpoint, Ed25519NoteSigner
from rng_service.metrics import GeneratorCollector, LogLabelCollector, MergedCollector
from rng_service.ownership import InstanceLock
from rng_service.process.bootstrap import Bootstrap, profile_ids, write_bootstrap
from rng_service.process.ipc import serve_front_end
from rng_service.process.setup import ServiceSetup
from rng_service.process.startup import (
    Endpoints,
    StartupError,
    _Keys,
    _round_clients,
    configured_verifiers,
    open_storage,
)
from rng_service.process.writer_process import WriterProcess
from rng_service.rpc.auth import Authorizer
from rng_service.rpc.lab_servicer import LabServicer
from rng_service.rpc.log_servicer import LogServicer, PublicKeyInfo
from rng_service.rpc.profiles import ProfileRegistry
from rng_service.rpc.server import HealthMonitor, HealthService, build_server
from rng_service.rpc.servicers import OutcomeServicer
from rng_service.storage.base import LogStorage
from rng_service.verify_page import VerifyPageServer, default_page_directory, load_page
from rng_service.writer.appender import Appender
from rng_service.writer.columns import CHECKS
from rng_service.writer.publisher import Witnessing
from rng_service.writer.storecheck import (
    StoreCheckFailed,
    StoreCheckReport,
    check_kept,
    check_store,
)
from rng_service.writer.tree import MerkleTree

__all__ = [
    "Service",
    "StartupError",
    "check_store_offline",
    "configured_verifiers",
    "open_storage",
    "run",
]

_log = logging.getLogger("rng_service")


def check_store_offline(
    config: Config, kept: Sequence[tuple[str, bytes]] = ()
) -> tuple[StoreCheckReport, list[Checkpoint]]:
    """``rng-service check-store``: the full store check, reading only (it may run while the
    service serves the same log), then the checkpoints ``kept`` outside the database
    (``(source, note)``) against it (:func:`check_kept`). Raises StoreCheckFailed (integrity)
    or StartupError."""
    verifiers = configured_verifiers(config)
    storage = open_storage(config.storage, read_only=True)
    origin = config.log.origin
    try:
        report = check_store(storage, verifiers, origin=origin, full=True)
        return report, check_kept(storage, report, kept, verifiers, origin=origin)
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
    tables: int = 0
    """Rows of the table map (one per table chain) after the migration."""


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
                tables=len(storage.map_rows()),
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


class Service(ServiceSetup):
    """One running service instance. ``await start()``, then ``await stop()``."""

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
        if len(self.config.logs) > 1 and not self.config.serving:
            raise StartupError(  # serve runs rng_service.process.supervisor for these
                f"logs: {len(self.config.logs)} [[logs]] are configured, and a Service serves "
                "one log (allowed: Config.for_log(origin), one process per log)"
            )
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
        await self._serve_shared(profiles, keys.public_keys())
        if not self.own_port:
            return self._start_without_port(tree, keys.signer, generator)
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

    async def _serve_shared(self, profiles: ProfileRegistry, keys: Sequence[PublicKeyInfo]) -> None:
        """Serves the channel of each shared front end (several ``[[logs]]`` on one port) as
        a front end's of ``serve --front-ends N``: first the log's bootstrap frame (its view
        of the configuration, public keys, profiles), then the writer's side of the channel."""
        if not self.shared:
            return
        generator, store_health = self.generator, self.store_health
        if generator is None or store_health is None:
            raise RuntimeError("_serve_shared before the generator and store health started")
        for index, fd in enumerate(self.shared):
            sock = socket.socket(fileno=fd)
            boot = Bootstrap(self.config, profile_ids(profiles), tuple(keys), 0, index)
            await asyncio.to_thread(write_bootstrap, sock, boot)
            if self.appender is None:  # not reached: the appender started first
                raise RuntimeError("_serve_shared before the log writer started")
            self._shared_endpoints.append(
                await serve_front_end(
                    sock, self.appender, lambda: (generator.status(), store_health.status())
                )
            )

    def _front_end_families(self) -> list[list[Any]]:
        """The metric families the front ends pushed: this log's own and the shared ones'."""
        own = self._writer.metric_families() if self._writer is not None else []
        return [*own, *(e.metric_families for e in self._shared_endpoints)]

    def _start_without_port(
        self, tree: MerkleTree, signer: Ed25519NoteSigner, generator: ProductionGenerator
    ) -> Endpoints:
        """A log served on a deployment's shared port only: the writer of its shared front
        ends, with its witnesses and metrics, and no gRPC port of its own."""
        if self.witnessing is not None:
            self.witnessing.start()
        metrics_port = self._start_metrics()
        self.endpoints = Endpoints(grpc_port=0, metrics_port=metrics_port, verify_page_port=None)
        self._log_started(0, metrics_port, None, tree, signer, generator)
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
            group_lull_seconds=cfg.group_lull_seconds,
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
            source: Collector = self.registry
            if self._shared_endpoints:
                source = MergedCollector(self.registry, self._front_end_families)
            self._metrics_server, _ = start_http_server(
                cfg.port, addr=cfg.host, registry=self._labelled(source)
            )
        except OSError as e:
            raise StartupError(f"metrics.port: cannot listen on {cfg.host}:{cfg.port}: {e}") from e
        metrics_port: int = self._metrics_server.server_port
        return metrics_port

    def _labelled(self, source: Collector) -> CollectorRegistry:
        """What the metrics port serves: ``source``, and with several ``[[logs]]`` its series
        labelled ``log`` = this process's log (``rng_service.metrics.LogLabelCollector``)."""
        served = CollectorRegistry(auto_describe=True)
        if len(self.config.logs) > 1:
            served.register(LogLabelCollector(source, self.config.log.origin))
        else:
            served.register(source)
        return served

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
            served = self._labelled(MergedCollector(self.registry, self._front_end_families))
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
    config: Config,
    on_ready: Callable[[int], None] | None = None,
    front_ends: int = 1,
    on_refusal: Callable[[dict[str, str]], None] | None = None,
    shared: tuple[int, ...] = (),
    own_port: bool = True,
) -> int:
    service = Service(config, front_ends=front_ends, shared=shared, own_port=own_port)
    try:
        endpoints = await service.start()
    except StartupError as e:
        event = {"event": "startup_failed", "error": str(e), "setting": e.setting}
        if e.file:  # only when a file is at fault (a key or TLS file)
            event["file"] = e.file
        if on_refusal is None:
            _log.error(event)
        else:  # the supervisor of several logs says it, naming the log
            on_refusal(event)
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
                "grpc": f"{config.server.host}:{endpoints.grpc_port}" if own_port else None,
                "grpc_port": endpoints.grpc_port if own_port else None,
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


def run(
    config: Config,
    on_ready: Callable[[int], None] | None = None,
    front_ends: int = 1,
    on_refusal: Callable[[dict[str, str]], None] | None = None,
    shared: tuple[int, ...] = (),
    own_port: bool = True,
) -> int:
    """Runs the service until SIGTERM or SIGINT; returns the process exit status.
    ``on_ready(grpc_port)`` is called once it serves, after the readiness line.
    ``front_ends`` above 1: this process is the log writer and starts that many gRPC
    front-end processes on the port (``rng_service.process.writer_process``). ``shared``:
    channels to a deployment's shared front ends (``rng_service.process.shared_frontend``);
    ``own_port`` False: no port of its own (a log served on the shared port only)."""
    # The log writer thread hands every group back to the event loop right after its fsync;
    # with the default 5 ms switch interval it could wait that long for the GIL each time.
    sys.setswitchinterval(0.0005)
    with contextlib.suppress(ImportError):
        import uvloop

        return uvloop.run(_serve(config, on_ready, front_ends, on_refusal, shared, own_port))
    return asyncio.run(_serve(config, on_ready, front_ends, on_refusal, shared, own_port))
