"""One gRPC port for several logs: each call goes to its log's servicers (docs/security.md, "Logs").

A shared front end (``rng_service.process.shared_frontend``) holds, for each log of the
deployment, what a front end of ``serve --front-ends N`` holds for its one log: the
servicers of the three services, each with its log's authorizer
(:meth:`rng_service.rpc.auth.Authorizer.for_log`) and its log's metrics. A :class:`Router`
per gRPC service stands where a servicer stands in :func:`rng_service.rpc.server.build_server`:
each method asks :meth:`~rng_service.rpc.auth.Authorizer.route` for the call's log (the
``rng-origin`` metadata; a call naming none goes to the one log its caller is bound to) and
awaits that log's servicer method, which then authorizes, decodes and answers exactly as on
the log's own port: its authorizer checks the caller's binding to the log, so a log the caller
is not bound to and a log that does not exist get the same PERMISSION_DENIED, word for word.
A log whose writer process is gone answers UNAVAILABLE (its channel fails every call at once,
``rng_service.process.ipc.WriterClient``) until it is attached again.

Health per log: :class:`LogHealth` answers ``Check`` and ``Watch`` of the service name ORIGIN
with that log's status, to a caller bound to the log only; any other caller gets NOT_FOUND, as
for a name that is not served, so health does not reveal which logs exist either.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from google.protobuf.descriptor import ServiceDescriptor
from grpc_health.v1 import health_pb2

from rng_service._proto.rng.v1 import lab_pb2, log_pb2, outcomes_pb2
from rng_service.errors import RngServiceError
from rng_service.rpc.auth import Authorizer
from rng_service.rpc.errors import status_for
from rng_service.rpc.server import HealthService

__all__ = ["SERVICES", "LogHealth", "Router", "routers"]

Method = Callable[[Any, Any], Awaitable[Any]]


class Router:
    """The methods of one gRPC service, each dispatched by the call's log to that log's
    servicer (``servicers()`` is read at every call: a log attached again after its writer
    restarted is served from its next call on)."""

    def __init__(
        self,
        service: ServiceDescriptor,
        servicers: Callable[[], Mapping[str, object]],
        gate: Authorizer,
    ) -> None:
        self._servicers = servicers
        self._gate = gate
        for method in service.methods:
            setattr(self, method.name, self._method(method.name))

    def _method(self, name: str) -> Method:
        async def dispatch(request: Any, context: Any) -> Any:
            servicers = self._servicers()
            try:
                origin = self._gate.route(name, context, tuple(servicers))
            except RngServiceError as e:
                await context.abort(status_for(e), str(e))
                raise  # unreachable: abort raises
            return await getattr(servicers[origin], name)(request, context)

        dispatch.__name__ = name
        return dispatch


#: Our gRPC services by the keyword of :func:`rng_service.rpc.server.build_server`.
SERVICES: dict[str, ServiceDescriptor] = {
    "outcome": outcomes_pb2.DESCRIPTOR.services_by_name["OutcomeService"],
    "log": log_pb2.DESCRIPTOR.services_by_name["LogService"],
    "lab": lab_pb2.DESCRIPTOR.services_by_name["LabService"],
}


def routers(
    servicers: Callable[[str], Mapping[str, object]], gate: Authorizer
) -> dict[str, Router]:
    """A router per service of :data:`SERVICES`; ``servicers(name)``: each log's servicer of
    that service, by origin."""
    return {
        name: Router(service, lambda name=name: servicers(name), gate)  # type: ignore[misc]
        for name, service in SERVICES.items()
    }


class LogHealth(HealthService):
    """grpc.health.v1 on a shared port: "" and our services' names as the port's own health,
    each log's origin as that log's, told to callers bound to the log only; to others, the
    answers of a name that is not served (NOT_FOUND, SERVICE_UNKNOWN, left out of List)."""

    def __init__(self, authorizer: Authorizer, origins: Callable[[], tuple[str, ...]]) -> None:
        super().__init__()
        self._authorizer = authorizer
        self._origins = origins

    def _hidden(self, name: str, context: Any) -> bool:
        """A log's name that the caller may not learn about (not bound to it)."""
        return name in self._origins() and not self._authorizer.may_see_log(context, name)

    async def Check(self, request: health_pb2.HealthCheckRequest, context: Any) -> Any:
        if self._hidden(request.service, context):
            request = health_pb2.HealthCheckRequest(service=_NEVER_SET)  # as the package
        return await super().Check(request, context)  # answers a name it does not know

    async def Watch(self, request: health_pb2.HealthCheckRequest, context: Any) -> Any:
        if self._hidden(request.service, context):
            request = health_pb2.HealthCheckRequest(service=_NEVER_SET)
        await super().Watch(request, context)

    async def List(
        self, request: health_pb2.HealthListRequest, context: Any
    ) -> health_pb2.HealthListResponse:
        listed = await super().List(request, context)
        for name in list(listed.statuses):
            if self._hidden(name, context):
                del listed.statuses[name]
        return listed


#: A health service name that is never set (not printable: no origin is), whose answers are
#: those of a name that is not served.
_NEVER_SET = "\n"
