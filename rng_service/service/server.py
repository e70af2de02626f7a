"""Builds the grpc.aio server: our services, standard health checking and server reflection.

Health follows the generator: SERVING while it may issue outcomes, NOT_SERVING once it has
latched its error state (fail closed), for the overall service "" and each of our services.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from grpc import aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

from rng_service._proto.rng.v1 import log_pb2, log_pb2_grpc, outcomes_pb2, outcomes_pb2_grpc
from rng_service.service.log_servicer import LogServicer
from rng_service.service.servicers import OutcomeServicer

__all__ = ["SERVICE_NAMES", "HealthMonitor", "build_server"]

_log = logging.getLogger(__name__)

SERVICE_NAMES = tuple(
    s.full_name
    for module in (outcomes_pb2, log_pb2)
    for s in module.DESCRIPTOR.services_by_name.values()
)


def build_server(
    *, outcome: OutcomeServicer, log: LogServicer, health: HealthServicer
) -> aio.Server:
    server = aio.server(
        options=[
            ("grpc.so_reuseport", 1),
            ("grpc.max_receive_message_length", 4 * 1024 * 1024),
        ]
    )
    outcomes_pb2_grpc.add_OutcomeServiceServicer_to_server(outcome, server)
    log_pb2_grpc.add_LogServiceServicer_to_server(log, server)
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    reflection.enable_server_reflection(
        (*SERVICE_NAMES, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
         reflection.SERVICE_NAME),
        server,
    )  # fmt: skip
    return server


class HealthMonitor:
    """Keeps the health service in step with a readiness predicate (polled)."""

    def __init__(
        self, health: HealthServicer, ready: Callable[[], bool], *, interval: float = 0.5
    ) -> None:
        self._health = health
        self._ready = ready
        self._interval = interval
        self._serving: bool | None = None
        self._task: asyncio.Task[None] | None = None

    async def update(self) -> None:
        ready = self._ready()
        if ready == self._serving:
            return
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if ready
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        for name in ("", *SERVICE_NAMES):
            await self._health.set(name, status)
        if self._serving is not None or not ready:
            _log.warning("health: %s", "SERVING" if ready else "NOT_SERVING")
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
