"""A shared front end: one gRPC port serving every log of a deployment (several ``[[logs]]``).

Started by the supervisor (``rng_service.process.supervisor``) as ``python -m
rng_service.process.shared_frontend FD`` (a fresh interpreter: no gRPC object crosses a fork),
FD its end of the supervisor's control channel (``rng_service.process.handoff``). It holds no
secret and writes no store. For each log it holds what a front end of ``serve --front-ends N``
(``rng_service.process.frontend``) holds for its one log, because it is that design, once per
log: a channel to the log's writer process (:class:`rng_service.process.ipc.WriterClient`,
whose other end the log process serves exactly as it serves its own front ends), a read-only
view of the log's store and its own copy of the tree, and the three servicers with the log's
authorizer, profiles and metrics. Why this design rather than forwarding gRPC calls to each
log's port: a call crosses one process boundary (the writer's channel, which coalesces a commit
group's answers into one frame) instead of a second gRPC hop, and each log's writer process
stays the one owner of its store, generator and key, as before.

- The supervisor sends the deployment's configuration (validated once, by it), then one
  ``attach`` message per log carrying the front end's end of a channel the supervisor made
  when it started that log's process; the log process first writes the log's bootstrap frame
  (its view of the configuration, public keys, profiles: ``rng_service.process.bootstrap``).
  Once every log is attached it listens (``SO_REUSEPORT``, the port the supervisor holds the
  lock of) and says ``ready``.
- Each call goes to its log by the ``rng-origin`` metadata (``rng_service.rpc.router``);
  mTLS terminates here, so the client's identity is authenticated here, per call.
- A log whose writer process dies: its calls fail at once with UNAVAILABLE, its health says
  NOT_SERVING, the other logs serve on. The supervisor starts the log again and sends a new
  ``attach``: the log is served again from its next call on.
- Health: the origin of each log as a grpc.health.v1 service name (to callers bound to it);
  "" and our services' names are SERVING while at least one log is. Metrics: each log's RPC
  series are pushed to that log's writer, which serves them labelled ``log``.
- SIGTERM (or the control channel closing): the drain window, then it stops.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
from dataclasses import dataclass, field
from typing import Any

from grpc_health.v1 import health_pb2
from prometheus_client import CollectorRegistry

from rng_service.config import Config
from rng_service.process import handoff
from rng_service.process.bootstrap import Bootstrap, profile_ids, read_bootstrap
from rng_service.process.frontend import run_front_end
from rng_service.process.handoff import SharedBoot
from rng_service.process.ipc import RemoteStoreHealth, WriterClient
from rng_service.rpc.auth import Authorizer
from rng_service.rpc.drain import Drain
from rng_service.rpc.lab_servicer import LabServicer
from rng_service.rpc.log_servicer import LogServicer
from rng_service.rpc.router import LogHealth, routers
from rng_service.rpc.server import SERVICE_NAMES, HealthMonitor, build_server
from rng_service.rpc.servicers import OutcomeServicer
from rng_service.storage.base import LogStorage
from rng_service.writer.tree import MerkleTree

__all__ = ["SharedFrontEnd", "main"]

_log = logging.getLogger("rng_service")
#: Seconds between metric pushes to each log's writer.
METRICS_INTERVAL = 1.0
#: Seconds between two looks at whether any log serves (the port's own health).
HEALTH_INTERVAL = 0.5


@dataclass
class _Log:
    """One attached log: its channel, store view, servicers and health."""

    origin: str
    client: WriterClient
    storage: LogStorage
    servicers: dict[str, object]
    monitor: HealthMonitor


@dataclass
class _Metrics:
    """One log's metrics in this process (its RPC series), pushed to its writer."""

    registry: CollectorRegistry
    helper: Any  # rng_service.process.app.Service: credential, authorizer, profile builders


@dataclass
class SharedFrontEnd:
    """The logs this process serves, attached one by one over the control channel."""

    boot: SharedBoot
    gate: Authorizer
    health: LogHealth
    logs: dict[str, _Log] = field(default_factory=dict)
    metrics: dict[str, _Metrics] = field(default_factory=dict)
    #: Per gRPC service, each attached log's servicer (what the routers read per call).
    by_service: dict[str, dict[str, object]] = field(default_factory=dict)
    _tasks: set[asyncio.Future[None]] = field(default_factory=set)

    def origins(self) -> tuple[str, ...]:
        return tuple(self.logs)

    async def attach(self, fd: int) -> str:
        """Attaches (or attaches again) the log whose channel end is ``fd``: reads its
        bootstrap frame, connects, builds its servicers; returns its origin."""
        sock = socket.socket(fileno=fd)
        boot = await asyncio.to_thread(read_bootstrap, sock)
        origin = boot.config.log.origin
        if origin not in self.boot.config.origins:
            sock.close()
            raise ValueError(f"a channel to a log that is not configured: {origin!r}")
        client = await WriterClient.connect(sock)
        try:
            log = _build_log(boot, client, self._metrics_of(boot), self)
        except BaseException:
            client.close()
            raise
        old = self.logs.get(origin)
        self.logs[origin] = log
        for name, servicer in log.servicers.items():
            self.by_service.setdefault(name, {})[origin] = servicer
        await log.monitor.update()
        log.monitor.start()
        client.lost.add_done_callback(lambda _: self._writer_gone(log))
        if old is not None:
            await _detach(old)
        _log.info({"event": "log_attached", "log": origin, "front_end": self.boot.index,
                   "again": old is not None})  # fmt: skip
        return origin

    def _writer_gone(self, log: _Log) -> None:
        """The log's health says NOT_SERVING at once when its writer's channel closes (not
        at the monitor's next look), unless the log was attached again meanwhile."""
        if self.logs.get(log.origin) is log:
            _log.error({"event": "log_writer_gone", "log": log.origin,
                        "front_end": self.boot.index,
                        "message": "UNAVAILABLE until it is started again"})  # fmt: skip
            self._tasks.add(asyncio.ensure_future(log.monitor.update()))
            self._tasks = {t for t in self._tasks if not t.done()}

    def _metrics_of(self, boot: Bootstrap) -> _Metrics:
        origin = boot.config.log.origin
        found = self.metrics.get(origin)
        if found is None:
            from rng_service.process.app import Service

            registry = CollectorRegistry()  # no process collectors: the writer has its own
            found = self.metrics[origin] = _Metrics(
                registry, Service(boot.config, registry=registry)
            )
        return found

    def push_metrics(self) -> None:
        for origin, log in self.logs.items():
            log.client.push_metrics(list(self.metrics[origin].registry.collect()))

    async def follow_health(self) -> None:
        """ "" and our services' names: SERVING while at least one log serves."""
        serving: bool | None = None
        while True:
            now = any(log.monitor.serving for log in self.logs.values())
            if now != serving:
                code = (health_pb2.HealthCheckResponse.SERVING if now
                        else health_pb2.HealthCheckResponse.NOT_SERVING)  # fmt: skip
                for name in ("", *SERVICE_NAMES):
                    await self.health.set(name, code)
                serving = now
            await asyncio.sleep(HEALTH_INTERVAL)

    async def close(self) -> None:
        for log in self.logs.values():
            await _detach(log)


def _build_log(boot: Bootstrap, client: WriterClient, metrics: _Metrics,
               shared: SharedFrontEnd) -> _Log:  # fmt: skip
    """What a front end of ``serve --front-ends N`` builds for its log, for one log here."""
    cfg = boot.config
    helper = metrics.helper
    profiles = helper._load_profiles()
    if profile_ids(profiles) != boot.profiles:
        raise ValueError(f"logs ({cfg.log.origin}).profiles: the profiles changed since the "
                         "log's writer started; restart the deployment")  # fmt: skip
    authorizer = shared.gate.for_log(cfg.log.origin, helper.metrics)
    storage = _read_only_store(cfg)
    tree = MerkleTree.load(storage)

    def sync() -> int:
        tree.advance(storage.tree_size())
        return tree.size

    observer = helper.metrics
    client_id = cfg.server.default_client_id
    servicers: dict[str, object] = {
        "outcome": OutcomeServicer(
            appender=client,  # type: ignore[arg-type]
            client_id=client_id, profiles=profiles, rpc_observer=observer,
            authorizer=authorizer, round_clients=_round_clients(cfg),
        ),
        "log": LogServicer(
            keys=boot.keys, storage=storage, tree=tree, checkpoint_note=client.checkpoint_note,
            publish=client.publish_checkpoint, rpc_observer=observer, authorizer=authorizer,
            sync=sync, integrity_observer=observer, client_id=client_id,
        ),
        "lab": LabServicer(
            appender=client,  # type: ignore[arg-type]
            client_id=client_id, generator=None,
            max_bytes=cfg.certification.raw_stream_max_bytes,
            max_seconds=cfg.certification.raw_stream_max_seconds,
            rpc_observer=observer, authorizer=authorizer,
        ),
    }  # fmt: skip
    monitor = HealthMonitor(
        shared.health, client.generator_status, store=RemoteStoreHealth(client),
        names=(cfg.log.origin,), log=cfg.log.origin,
    )  # fmt: skip
    return _Log(cfg.log.origin, client, storage, servicers, monitor)


def _read_only_store(cfg: Config) -> LogStorage:
    """The log's store, read-only: SQLite opens the WAL database for reading; PostgreSQL
    never migrates here."""
    from rng_service.process.app import open_storage

    return open_storage(cfg.storage, read_only=True)


async def _detach(log: _Log) -> None:
    await log.monitor.stop(shutdown=False)
    log.client.close()
    log.storage.close()


def _round_clients(config: Config) -> frozenset[str]:
    from rng_service.process.startup import _round_clients as round_clients

    return round_clients(config)


async def _attach_all(shared: SharedFrontEnd, ctrl: socket.socket) -> None:
    """Reads ``attach`` messages until every configured log is attached."""
    wanted = set(shared.boot.config.origins)
    while not wanted <= set(shared.logs):
        message, fds = await asyncio.to_thread(handoff.receive, ctrl)
        if message != "attach" or len(fds) != 1:
            raise ValueError(f"unexpected control message {message!r}")
        await shared.attach(fds[0])


async def _follow_control(shared: SharedFrontEnd, ctrl: socket.socket) -> None:
    """Attaches each log started again; returns when the supervisor's end closes."""
    while True:
        try:
            message, fds = await asyncio.to_thread(handoff.receive, ctrl)
        except (EOFError, OSError):
            return
        if message != "attach" or len(fds) != 1:
            _log.error({"event": "control_message_unknown", "front_end": shared.boot.index})
            continue
        try:
            await shared.attach(fds[0])
        except Exception as e:  # the log stays UNAVAILABLE; the others serve on
            _log.error({"event": "log_attach_failed", "front_end": shared.boot.index,
                        "error": f"{type(e).__name__}: {e}"})  # fmt: skip


async def _serve(ctrl: socket.socket, boot: SharedBoot) -> int:
    from rng_service.process.app import Service, StartupError

    cfg = boot.config
    first = Service(cfg.for_log(cfg.origins[0]), registry=CollectorRegistry())
    try:
        credentials = first._server_credentials()
    except StartupError as e:
        _log.error({"event": "startup_failed", "error": str(e), "front_end": boot.index})
        return 2
    gate = first._build_authorizer()
    shared = SharedFrontEnd(boot, gate, LogHealth(gate, lambda: shared.origins()))
    await _attach_all(shared, ctrl)
    drain = Drain()
    routed = routers(lambda name: shared.by_service[name], shared.gate)
    server = build_server(
        outcome=routed["outcome"], log=routed["log"], lab=routed["lab"],
        health=shared.health, reuse_port=True, drain=drain,
    )  # fmt: skip
    host = cfg.server.host
    address = f"[{host.strip('[]')}]:{boot.port}" if ":" in host else f"{host}:{boot.port}"
    try:
        port = (server.add_insecure_port(address) if credentials is None
                else server.add_secure_port(address, credentials))  # fmt: skip
    except RuntimeError:
        port = 0
    if port == 0:
        _log.error({"event": "startup_failed", "error": f"server.port: cannot listen on "
                    f"{address}", "front_end": boot.index})  # fmt: skip
        return 2
    await server.start()
    handoff.send(ctrl, ("ready", port))
    return await _run(shared, ctrl, server, drain)


async def _run(shared: SharedFrontEnd, ctrl: socket.socket, server: Any, drain: Drain) -> int:
    """Serves until SIGTERM or the supervisor's end of the control channel closes."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    tasks = [loop.create_task(shared.follow_health()), loop.create_task(_pushing(shared))]
    control = loop.create_task(_follow_control(shared, ctrl))
    stopping = loop.create_task(stop.wait())
    await asyncio.wait({control, stopping}, return_when=asyncio.FIRST_COMPLETED)
    grace = shared.boot.config.server.shutdown_grace_seconds
    await shared.health.enter_graceful_shutdown()
    await drain.close(grace)
    await server.stop(min(grace, 1.0))
    shared.push_metrics()  # the last calls' metrics
    await asyncio.sleep(0)
    for task in (*tasks, stopping):
        task.cancel()
    await shared.close()
    ctrl.close()  # the control task's thread returns (EOF or OSError)
    return 0


async def _pushing(shared: SharedFrontEnd) -> None:
    while True:
        await asyncio.sleep(METRICS_INTERVAL)
        shared.push_metrics()


def main(argv: list[str] | None = None) -> int:
    """``python -m rng_service.process.shared_frontend FD SUPERVISOR_PID``: FD is the control
    channel's end."""
    args = sys.argv[1:] if argv is None else argv
    from rng_service import jsonlog
    from rng_service.process.log_process import stop_with_the_supervisor

    stop_with_the_supervisor(int(args[1]))
    jsonlog.configure()
    jsonlog.route_process_output()
    ctrl = socket.socket(fileno=int(args[0]))
    boot, _ = handoff.receive(ctrl)
    if not isinstance(boot, SharedBoot):
        raise TypeError("not a shared front end's boot message")
    _log.info({"event": "shared_front_end_starting", "front_end": boot.index,
               "pid": os.getpid()})  # fmt: skip
    return run_front_end(lambda: _serve(ctrl, boot), boot.index)


if __name__ == "__main__":
    # Run as rng_service.process.shared_frontend, not __main__ (one copy of this module's state).
    from rng_service.process.shared_frontend import main as _main

    sys.exit(_main())
