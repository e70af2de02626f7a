"""The log writer process of ``serve --front-ends N`` (N >= 2): starts and watches the front ends.

The process that took the instance's locks (``rng_service.ownership``) stays the one log
writer: it keeps everything ``rng_service.process.app.Service`` opened (the store, the outcome
generator, the signing keys, the sequencer ``rng_service.writer.appender.Appender`` and its
writer thread, the store check, the witnesses) and serves no gRPC itself. This module starts
N gRPC front ends (``rng_service.process.frontend``) as fresh interpreters (``subprocess``, never a
bare fork: grpc objects must not cross a fork), each with its end of a socketpair and the
owner's lock descriptors, and serves each channel (``rng_service.process.ipc.WriterEndpoint``) on
the writer's event loop: requests go to ``Appender.submit_waiter``, answers come back when
their group has committed.

The first front end binds the configured port (port 0: the kernel picks one) with
``SO_REUSEPORT``; the others then bind the same port. A front end that exits while the
instance serves (killed, crashed) is logged and started again (at most once a second);
what it had handed over is logged anyway and its callers' retries get the logged outcome.
The owner's graceful stop sends SIGTERM to every front end and waits for them to drain before
the writer commits what is queued and publishes its final checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rng_service.config import Config
from rng_service.errors import Unavailable
from rng_service.process.bootstrap import Bootstrap, profile_ids, write_bootstrap
from rng_service.process.ipc import WriterEndpoint, WriterLike, serve_front_end
from rng_service.rpc.log_servicer import PublicKeyInfo
from rng_service.rpc.profiles import ProfileRegistry

__all__ = ["WriterProcess"]

_log = logging.getLogger("rng_service")

#: Seconds a front end may take to listen.
START_TIMEOUT = 60.0
#: Fewest seconds between two starts of the same front end.
RESTART_INTERVAL = 1.0


@dataclass
class _FrontEnd:
    index: int
    proc: subprocess.Popen[bytes]
    endpoint: WriterEndpoint
    started: float = field(default_factory=time.monotonic)


def _stderr() -> int | None:
    """The descriptor behind ``sys.stderr``: the original stderr once ``jsonlog`` routes fd 2
    (the front end routes its own native output); None: inherit fd 2."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None


class WriterProcess:
    """Starts, watches and stops the front ends; hands their requests to the writer."""

    def __init__(
        self,
        *,
        appender: WriterLike,
        status: Callable[[], tuple[object, object]],
        config: Config,
        profiles: ProfileRegistry,
        keys: tuple[PublicKeyInfo, ...],
        count: int,
        inherit: tuple[int, ...],
    ) -> None:
        self._appender = appender
        self._status = status
        self._config = config
        self._profiles = profiles
        self._keys = keys
        self._count = count
        self._inherit = inherit
        self._front_ends: list[_FrontEnd] = []
        self._port = config.server.port
        self._stopping = False
        self._watch: asyncio.Task[None] | None = None

    async def _spawn(self, index: int) -> _FrontEnd:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "rng_service.process.frontend", str(theirs.fileno())],
                pass_fds=(theirs.fileno(), *self._inherit),
                env=self._front_end_env(),
                stderr=_stderr(),
            )
        finally:
            theirs.close()
        boot = Bootstrap(self._config, profile_ids(self._profiles), self._keys, self._port, index)
        await asyncio.to_thread(write_bootstrap, ours, boot)
        endpoint = await serve_front_end(ours, self._appender, self._status)
        return _FrontEnd(index, proc, endpoint)

    def _front_end_env(self) -> dict[str, str]:
        """The environment without the signing keys' passphrases: a front end never needs
        them (it holds no key), so it is not handed them."""
        env = dict(os.environ)
        for name in (self._config.log.key_passphrase_env,
                     self._config.log.cosign_key_passphrase_env):  # fmt: skip
            if name:
                env.pop(name, None)
        return env

    async def _ready(self, fe: _FrontEnd) -> int:
        exited = asyncio.ensure_future(asyncio.to_thread(fe.proc.wait))
        try:
            await asyncio.wait(
                {exited, fe.endpoint.ready}, timeout=START_TIMEOUT,
                return_when=asyncio.FIRST_COMPLETED,
            )  # fmt: skip
        finally:
            if not exited.done():
                exited.cancel()
        ready = fe.endpoint.ready
        why = ""
        if ready.done():
            if ready.exception() is None:
                return ready.result()
            why = f": {ready.exception()}"
        try:  # let it finish saying why
            await asyncio.wait_for(asyncio.to_thread(fe.proc.wait), 5.0)
        except TimeoutError:
            fe.proc.kill()
        raise Unavailable(
            f"front end {fe.index} (pid {fe.proc.pid}) did not listen on port {self._port} "
            f"(exit status {fe.proc.poll()}){why}; its log lines say why"
        )

    async def start(self) -> int:
        """Starts the front ends; returns the port they share once all listen."""
        first = await self._spawn(0)
        self._front_ends.append(first)
        self._port = await self._ready(first)
        rest = [await self._spawn(i) for i in range(1, self._count)]
        self._front_ends.extend(rest)
        for fe in rest:
            await self._ready(fe)
        self._watch = asyncio.get_running_loop().create_task(self._supervise())
        return self._port

    async def _supervise(self) -> None:
        while not self._stopping:
            await asyncio.sleep(0.2)
            for i, fe in enumerate(self._front_ends):
                status = fe.proc.poll()
                if status is None or self._stopping:
                    continue
                _log.error(
                    {"event": "front_end_exited", "front_end": fe.index, "pid": fe.proc.pid,
                     "status": status, "message": "starting it again"}
                )  # fmt: skip
                wait = RESTART_INTERVAL - (time.monotonic() - fe.started)
                if wait > 0:
                    await asyncio.sleep(wait)
                try:
                    new = await self._spawn(fe.index)
                    self._front_ends[i] = new
                    await self._ready(new)
                except Exception as e:  # logged; the next round tries again
                    _log.error({"event": "front_end_restart_failed", "front_end": fe.index,
                                "error": str(e)})  # fmt: skip

    def pids(self) -> list[int]:
        return [fe.proc.pid for fe in self._front_ends]

    def metric_families(self) -> list[list[Any]]:
        """Each front end's latest metric families (``MergedCollector`` sums them)."""
        return [fe.endpoint.metric_families for fe in self._front_ends]

    async def stop(self, grace: float) -> None:
        """SIGTERM to every front end (each drains for ``grace`` seconds), then waits."""
        self._stopping = True
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        for fe in self._front_ends:
            with contextlib.suppress(ProcessLookupError):
                fe.proc.send_signal(signal.SIGTERM)
        for fe in self._front_ends:
            try:
                await asyncio.wait_for(asyncio.to_thread(fe.proc.wait), grace + 15.0)
            except TimeoutError:
                _log.error({"event": "front_end_stop_timeout", "pid": fe.proc.pid})
                fe.proc.kill()
                await asyncio.to_thread(fe.proc.wait)
        # Answers for the last requests were flushed before the front ends' channels closed.
        await asyncio.sleep(0)
