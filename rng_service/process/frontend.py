"""A gRPC front-end process of ``serve --front-ends N`` (N >= 2): serves, forwards, holds no secret.

Started only by the instance's owner (``rng_service.process.app``, the log writer process), with the
spawn-like ``subprocess`` start (a fresh interpreter: no gRPC object crosses a fork), its end
of a socketpair and the owner's lock descriptors (``rng_service.ownership``: it shares the
owner's locks, so a stranger's instance is still refused). Everything it needs arrives over
that socket as one bootstrap frame: the validated configuration (never read again), the
identities of the profiles (it loads them and checks they are the same), the public keys
and the port. It then:

- serves every gRPC service on the port with ``SO_REUSEPORT`` (the kernel spreads
  connections over the front ends);
- hands outcome requests to the writer (``rng_service.process.ipc.WriterClient``), which draws,
  commits, signs and answers; the response is built here from the logged entry;
- serves log reads from its own read-only view of the store (SQLite: a read-only connection
  to the WAL database; PostgreSQL: its own connection, used for reads only) and its own copy
  of the Merkle tree, caught up from the store before each read, exactly as a replica's reads
  are; the signed checkpoint note of a size and publishing come from the writer, the only
  holder of the keys. No front end ever writes the store;
- reports health from the writer's generator and store status (pushed every 0.2 s; silence
  is NOT_SERVING), and pushes its own metric families to the writer, which serves the sum;
- stops gracefully on SIGTERM (the owner's stop: drain, then close the channel), and at once
  if the writer's end of the channel closes (the writer died: nothing more can be logged).

The raw output stream for labs is not served here (it needs a generator, and only the writer
holds one): ``serve`` refuses ``certification.raw_stream_enabled`` with ``--front-ends`` > 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from prometheus_client import CollectorRegistry

from rng_service.config import Config
from rng_service.process.bootstrap import Bootstrap, profile_ids, read_bootstrap
from rng_service.process.ipc import RemoteStoreHealth, WriterClient
from rng_service.rpc.drain import Drain
from rng_service.rpc.lab_servicer import LabServicer
from rng_service.rpc.log_servicer import LogServicer
from rng_service.rpc.server import HealthMonitor, HealthService, build_server
from rng_service.rpc.servicers import OutcomeServicer
from rng_service.writer.tree import MerkleTree

__all__ = ["main"]

_log = logging.getLogger("rng_service")
#: Seconds between metric pushes to the writer.
METRICS_INTERVAL = 1.0


async def _push_metrics(client: WriterClient, registry: CollectorRegistry) -> None:
    while True:
        client.push_metrics(list(registry.collect()))
        await asyncio.sleep(METRICS_INTERVAL)


async def _serve(sock: socket.socket, boot: Bootstrap) -> int:
    # Imported here: the composition root's helpers (credentials, authorizer, storage).
    from rng_service.process.app import Service, StartupError, open_storage

    cfg = boot.config
    client = await WriterClient.connect(sock)
    registry = CollectorRegistry()  # no process collectors: the writer reports its own
    helper = Service(cfg, registry=registry)  # for its credential and authorizer builders
    metrics = helper.metrics
    try:
        credentials = helper._server_credentials()
    except StartupError as e:
        _log.error({"event": "startup_failed", "error": str(e), "front_end": boot.index})
        return 2
    authorizer = helper._build_authorizer()
    try:
        profiles = helper._load_profiles()
    except StartupError as e:
        _log.error({"event": "startup_failed", "error": str(e), "front_end": boot.index})
        return 2
    if profile_ids(profiles) != boot.profiles:
        _log.error({"event": "startup_failed", "front_end": boot.index,
                    "error": "profiles.directory: the profiles changed since the log writer "
                    "started; restart the service to serve the new ones"})  # fmt: skip
        return 2
    # Read-only: SQLite opens the WAL database for reading; PostgreSQL never migrates here.
    storage = open_storage(cfg.storage, read_only=True)
    tree = MerkleTree.load(storage)

    def sync() -> int:
        tree.advance(storage.tree_size())
        return tree.size

    drain = Drain(observer=metrics)
    health = HealthService()
    monitor = HealthMonitor(health, client.generator_status, store=RemoteStoreHealth(client))
    server = build_server(
        outcome=OutcomeServicer(
            appender=client,  # type: ignore[arg-type]
            client_id=cfg.server.default_client_id,
            profiles=profiles,
            rpc_observer=metrics,
            authorizer=authorizer,
            round_clients=_round_clients(cfg),
        ),
        log=LogServicer(
            keys=boot.keys,
            storage=storage,
            tree=tree,
            checkpoint_note=client.checkpoint_note,
            publish=client.publish_checkpoint,
            rpc_observer=metrics,
            authorizer=authorizer,
            sync=sync,
            integrity_observer=metrics,
            client_id=cfg.server.default_client_id,
        ),
        lab=LabServicer(
            appender=client,  # type: ignore[arg-type]
            client_id=cfg.server.default_client_id,
            generator=None,
            max_bytes=cfg.certification.raw_stream_max_bytes,
            max_seconds=cfg.certification.raw_stream_max_seconds,
            rpc_observer=metrics,
            authorizer=authorizer,
        ),
        health=health,
        reuse_port=True,
        decode_observer=metrics,
        drain=drain,
    )
    host = cfg.server.host
    address = f"[{host.strip('[]')}]:{boot.port}" if ":" in host else f"{host}:{boot.port}"
    try:
        if credentials is None:
            port = server.add_insecure_port(address)
        else:
            port = server.add_secure_port(address, credentials)
    except RuntimeError:
        port = 0
    if port == 0:
        _log.error({"event": "startup_failed", "error": f"cannot listen on {address}",
                    "front_end": boot.index})  # fmt: skip
        return 2
    await monitor.update()
    monitor.start()
    await server.start()
    client.ready(port)
    pusher = asyncio.get_running_loop().create_task(_push_metrics(client, registry))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    writer_gone = loop.create_task(client.closed())
    stopping = loop.create_task(stop.wait())
    await asyncio.wait({writer_gone, stopping}, return_when=asyncio.FIRST_COMPLETED)
    status = 0
    if writer_gone.done() and not stop.is_set():
        _log.error({"event": "writer_gone", "front_end": boot.index,
                    "message": "the log writer process is gone: this front end stops"})  # fmt: skip
        await server.stop(0)
        status = 1
    else:
        grace = cfg.server.shutdown_grace_seconds
        await monitor.stop()
        await drain.close(grace)
        await server.stop(min(grace, 1.0))
        client.push_metrics(list(registry.collect()))  # the last calls' metrics
        await asyncio.sleep(0)
    pusher.cancel()
    writer_gone.cancel()
    stopping.cancel()
    client.close()
    storage.close()
    return status


def _round_clients(config: Config) -> frozenset[str]:
    from rng_service.process.startup import _round_clients as round_clients

    return round_clients(config)


def main(argv: list[str] | None = None) -> int:
    """``python -m rng_service.process.frontend FD``: FD is this front end's end of the channel."""
    args = sys.argv[1:] if argv is None else argv
    from rng_service import jsonlog

    jsonlog.configure()
    jsonlog.route_process_output()  # gRPC core's own lines become JSON events too
    sock = socket.socket(fileno=int(args[0]))
    boot = read_bootstrap(sock)
    _log.info({"event": "front_end_starting", "front_end": boot.index, "pid": os.getpid()})
    return run_front_end(lambda: _serve(sock, boot), boot.index)


def run_front_end(serve: Callable[[], Coroutine[Any, Any, int]], index: int) -> int:
    """A front end's event loop (this module's and the shared port's,
    ``rng_service.process.shared_frontend``): ``serve()`` on uvloop (asyncio without it), with
    the service's switch interval; its exit status, or 1 after one ``front_end_failed`` JSON
    event carrying the traceback."""
    sys.setswitchinterval(0.0005)
    try:
        with contextlib.suppress(ImportError):
            import uvloop

            return uvloop.run(serve())
        return asyncio.run(serve())
    except Exception as e:  # one JSON event with the traceback in a field, then exit 1
        _log.critical(
            {"event": "front_end_failed", "front_end": index,
             "error": f"{type(e).__name__}: {e}"},
            exc_info=True,
        )  # fmt: skip
        return 1


if __name__ == "__main__":
    # Run as rng_service.process.frontend, not __main__: one copy of this module's state, under
    # the name the rest of the package imports.
    from rng_service.process.frontend import main as _main

    sys.exit(_main())
