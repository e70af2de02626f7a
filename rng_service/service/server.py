"""Builds the grpc.aio server: our services, standard health checking and server reflection.

Health follows the generator: SERVING while it may issue outcomes, NOT_SERVING once it has
latched its error state (fail closed), for the overall service "" and each of our services.
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


class HealthMonitor:
    """Keeps the health service in step with the generator's status (polled), and logs it.

    SERVING while the generator may issue outcomes; NOT_SERVING once it has latched its error
    state. Each change, and each new entropy health-test failure, is one structured log event.
    """

    def __init__(
        self,
        health: HealthServicer,
        status: Callable[[], GeneratorStatusLike],
        *,
        interval: float = 0.5,
    ) -> None:
        self._health = health
        self._status = status
        self._interval = interval
        self._serving: bool | None = None
        self._failures = 0
        self._task: asyncio.Task[None] | None = None

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
        ready = status.state == "ok"
        if ready == self._serving:
            return
        code = (
            health_pb2.HealthCheckResponse.SERVING
            if ready
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        for name in ("", *SERVICE_NAMES):
            await self._health.set(name, code)
        if not ready:
            _log.error(
                {
                    "event": "generator_error",
                    "health": "NOT_SERVING",
                    "reason": status.reason,
                    "message": "outcome issuance stopped (fail closed); restart after repair",
                }
            )
        elif self._serving is not None:
            _log.warning({"event": "generator_ok", "health": "SERVING"})
        self._serving = ready

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
        await self._health.enter_graceful_shutdown()
