"""Builds the grpc.aio server: our services, standard health checking and server reflection.

Health follows every dependency an outcome needs (:class:`HealthMonitor`): SERVING while the
generator may issue outcomes and the log store can commit, NOT_SERVING otherwise (fail closed),
for the overall service "" and each of our services.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Protocol

from grpc import aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

from rng_service._proto.rng.v1 import (
    lab_pb2,
    lab_pb2_grpc,
    log_pb2,
    log_pb2_grpc,
    outcomes_pb2,
    outcomes_pb2_grpc,
)
from rng_service.service.lab_servicer import LabServicer
from rng_service.service.log_servicer import LogServicer
from rng_service.service.servicers import OutcomeServicer

__all__ = ["SERVICE_NAMES", "HealthMonitor", "build_server"]

_log = logging.getLogger(__name__)

SERVICE_NAMES = tuple(
    s.full_name
    for module in (outcomes_pb2, log_pb2, lab_pb2)
    for s in module.DESCRIPTOR.services_by_name.values()
)


def build_server(
    *,
    outcome: OutcomeServicer,
    log: LogServicer,
    lab: LabServicer,
    health: HealthServicer,
    reuse_port: bool = False,
) -> aio.Server:
    """The server with every service. ``reuse_port``: share the port with other processes
    (``SO_REUSEPORT``); off, so that a second instance cannot bind the port beside this one
    (grpc enables it by default on Linux). Only processes that join the port's owner
    (``rng_service.ownership``) may turn it on."""
    server = aio.server(
        options=[
            ("grpc.so_reuseport", 1 if reuse_port else 0),
            ("grpc.max_receive_message_length", 4 * 1024 * 1024),
        ]
    )
    outcomes_pb2_grpc.add_OutcomeServiceServicer_to_server(outcome, server)
    log_pb2_grpc.add_LogServiceServicer_to_server(log, server)
    lab_pb2_grpc.add_LabServiceServicer_to_server(lab, server)
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    reflection.enable_server_reflection(
        (*SERVICE_NAMES, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
         reflection.SERVICE_NAME),
        server,
    )  # fmt: skip
    return server


class GeneratorStatusLike(Protocol):
    @property
    def state(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def health_test_failures(self) -> int: ...
    @property
    def entropy_read_timeouts(self) -> int: ...


class StoreStatusLike(Protocol):
    @property
    def state(self) -> str: ...
    @property
    def reason(self) -> str: ...


class StoreHealthLike(Protocol):
    """:class:`rng_service.log.store_health.StoreHealth`, as the monitor sees it."""

    def status(self) -> StoreStatusLike: ...
    def probe_due(self) -> bool: ...
    def probe(self) -> bool: ...


class HealthMonitor:
    """Keeps the health service in step with every dependency an outcome needs (polled), and
    logs each change.

    SERVING while the generator may issue outcomes AND the log store can commit; NOT_SERVING
    while either cannot: the generator in its latched error state (only a restart clears it),
    or the store down (``StoreHealth``: failed commits or a failed probe; it comes back by
    itself once a commit or a probe succeeds). Each change of each dependency, each new
    entropy health-test failure and each entropy read past its deadline is one structured log
    event. The store probe runs in a worker thread, never on the event loop, and the generator
    status is read without the generator's lock, so health answers while either hangs.
    """

    def __init__(
        self,
        health: HealthServicer,
        status: Callable[[], GeneratorStatusLike],
        *,
        store: StoreHealthLike | None = None,
        interval: float = 0.5,
    ) -> None:
        self._health = health
        self._status = status
        self._store = store
        self._interval = interval
        self._serving: bool | None = None
        self._generator_ok: bool | None = None
        self._store_ok: bool | None = None
        self._failures = 0
        self._timeouts = 0
        self._task: asyncio.Task[None] | None = None
        self._probe: asyncio.Future[bool] | None = None

    async def update(self) -> None:
        status = self._status()
        if status.health_test_failures > self._failures:
            _log.warning(
                {
                    "event": "entropy_health_test_failure",
                    "failures_total": status.health_test_failures,
                    "new": status.health_test_failures - self._failures,
                }
            )
            self._failures = status.health_test_failures
        timeouts = getattr(status, "entropy_read_timeouts", 0)
        if timeouts > self._timeouts:
            _log.error(
                {
                    "event": "entropy_read_timeout",
                    "timeouts_total": timeouts,
                    "new": timeouts - self._timeouts,
                    "message": "a read of the entropy source passed its deadline",
                }
            )
            self._timeouts = timeouts
        generator_ok = status.state == "ok"
        if generator_ok != self._generator_ok:
            if not generator_ok:
                _log.error(
                    {
                        "event": "generator_error",
                        "health": "NOT_SERVING",
                        "reason": status.reason,
                        "message": "outcome issuance stopped (fail closed); restart after repair",
                    }
                )
            elif self._generator_ok is not None:
                _log.warning({"event": "generator_ok"})
            self._generator_ok = generator_ok
        store_ok = self._check_store()
        ready = generator_ok and store_ok
        if ready == self._serving:
            return
        code = (
            health_pb2.HealthCheckResponse.SERVING
            if ready
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        for name in ("", *SERVICE_NAMES):
            await self._health.set(name, code)
        if self._serving is not None:
            _log.warning({"event": "health", "health": "SERVING" if ready else "NOT_SERVING"})
        self._serving = ready

    def _check_store(self) -> bool:
        store = self._store
        if store is None:
            return True
        if (self._probe is None or self._probe.done()) and store.probe_due():
            self._probe = asyncio.ensure_future(asyncio.to_thread(store.probe))
        status = store.status()
        ok = status.state == "up"
        if ok != self._store_ok:
            if not ok:
                _log.error(
                    {
                        "event": "store_unavailable",
                        "health": "NOT_SERVING",
                        "reason": status.reason,
                        "message": "the log store cannot commit: outcome calls get "
                        "UNAVAILABLE until a commit or a probe succeeds",
                    }
                )
            elif self._store_ok is not None:
                _log.warning({"event": "store_ok", "message": "the log store commits again"})
            self._store_ok = ok
        return ok

    async def _loop(self) -> None:
        while True:
            await self.update()
            await asyncio.sleep(self._interval)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._probe is not None and not self._probe.done():
            self._probe.cancel()  # the worker thread finishes its one write on its own
        await self._health.enter_graceful_shutdown()
