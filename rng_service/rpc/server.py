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
from typing import Any, Protocol

import grpc
from google.protobuf.descriptor import ServiceDescriptor
from grpc import aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc
from grpc_reflection.v1alpha._async import ReflectionServicer

from rng_service._proto.rng.v1 import lab_pb2, log_pb2, outcomes_pb2
from rng_service.rpc.decoding import RESPONSE_TYPES, DecodeObserver, DecodingRegistrar
from rng_service.rpc.drain import Drain
from rng_service.rpc.lab_servicer import LabServicer
from rng_service.rpc.log_servicer import LogServicer
from rng_service.rpc.servicers import OutcomeServicer

__all__ = ["SERVICE_NAMES", "HealthMonitor", "HealthService", "build_server"]

# The logger keeps its name from before the package's rename (the JSON log's "logger" field).
_log = logging.getLogger("rng_service.service.server")

SERVICE_NAMES = tuple(
    s.full_name
    for module in (outcomes_pb2, log_pb2, lab_pb2)
    for s in module.DESCRIPTOR.services_by_name.values()
)


class HealthService(HealthServicer):  # type: ignore[misc]
    """grpcio-health-checking's asyncio servicer, plus ``List`` (added to health.proto in 2024;
    the package's servicer leaves it raising NotImplementedError, an UNKNOWN and a traceback)."""

    async def List(
        self, request: health_pb2.HealthListRequest, context: Any
    ) -> health_pb2.HealthListResponse:
        return health_pb2.HealthListResponse(
            statuses={
                name: health_pb2.HealthCheckResponse(status=status)
                for name, status in sorted(self._server_status.items())
            }
        )


def build_server(
    *,
    outcome: OutcomeServicer | object,
    log: LogServicer | object,
    lab: LabServicer | object,
    health: HealthServicer,
    reuse_port: bool = False,
    decode_observer: DecodeObserver | None = None,
    drain: Drain | None = None,
) -> aio.Server:
    """The server with every service. ``reuse_port``: share the port with other processes
    (``SO_REUSEPORT``); off, so that a second instance cannot bind the port beside this one
    (grpc enables it by default on Linux). Only processes that join the port's owner
    (``rng_service.ownership``) may turn it on.

    Every method of every service is registered with grpcio's identity deserializer, so that a
    body that does not parse is our INVALID_ARGUMENT, not grpcio's UNKNOWN and a traceback
    (``rng_service.rpc.decoding``): our servicers' ``rpc`` wrapper decodes after
    authorization, the health and reflection handlers are wrapped as they register. With a
    ``drain``, each of our methods is guarded by it (graceful stop: ``Drain.close``)."""
    server = aio.server(
        options=[
            ("grpc.so_reuseport", 1 if reuse_port else 0),
            ("grpc.max_receive_message_length", 4 * 1024 * 1024),
        ]
    )
    for servicer, module in ((outcome, outcomes_pb2), (log, log_pb2), (lab, lab_pb2)):
        for service in module.DESCRIPTOR.services_by_name.values():
            _add_undecoded(server, servicer, service, drain)
    registrar = DecodingRegistrar(server, decode_observer)
    health_pb2_grpc.add_HealthServicer_to_server(health, registrar)
    # What reflection.enable_server_reflection does for an aio server (it tells the kinds of
    # server apart by isinstance, which the registrar is not).
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(
        ReflectionServicer(
            (*SERVICE_NAMES, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
             reflection.SERVICE_NAME)
        ),
        registrar,
    )  # fmt: skip
    return server


def _add_undecoded(
    server: aio.Server, servicer: object, service: ServiceDescriptor, drain: Drain | None
) -> None:
    """What the generated ``add_..._to_server`` does, with ``request_deserializer=None``: the
    servicer method (its ``rpc`` wrapper) receives the raw request bytes."""
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
    for method in service.methods:
        if method.client_streaming:
            raise ValueError(f"{service.full_name}/{method.name}: client streaming is not served")
        make = (
            grpc.unary_stream_rpc_method_handler
            if method.server_streaming
            else grpc.unary_unary_rpc_method_handler
        )
        behaviour = getattr(servicer, method.name)
        handlers[method.name] = make(
            behaviour if drain is None else drain.guard(behaviour, method.name),
            request_deserializer=None,
            response_serializer=RESPONSE_TYPES[method.name].SerializeToString,
        )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service.full_name, handlers),)
    )
    registered: Any = server  # the stubs lack the (grpcio >= 1.62) registered-method API
    registered.add_registered_method_handlers(service.full_name, handlers)


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
    """:class:`rng_service.writer.store_health.StoreHealth`, as the monitor sees it."""

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
        names: tuple[str, ...] = ("", *SERVICE_NAMES),
        log: str = "",
    ) -> None:
        self._health = health
        #: The health service names it sets (a shared port: the log's origin).
        self._names = names
        #: The log it follows, named in its events on a shared port ("": the only one).
        self._log_field = {"log": log} if log else {}
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
        for name in self._names:
            await self._health.set(name, code)
        if self._serving is not None:
            _log.warning({"event": "health", "health": "SERVING" if ready else "NOT_SERVING",
                          **self._log_field})  # fmt: skip
        self._serving = ready

    @property
    def serving(self) -> bool:
        """Whether it last found every dependency ready."""
        return bool(self._serving)

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

    async def stop(self, *, shutdown: bool = True) -> None:
        """Stops following; with ``shutdown``, every name of the health service says
        NOT_SERVING from now on (the server's graceful stop)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._probe is not None and not self._probe.done():
            self._probe.cancel()  # the worker thread finishes its one write on its own
        if shutdown:
            await self._health.enter_graceful_shutdown()
