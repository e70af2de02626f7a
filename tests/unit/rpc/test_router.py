"""One port for several logs (``rng_service.rpc.router``): each call goes to the servicer of the
log its ``rng-origin`` metadata names, or of the one log its caller is bound to; a log not
served and a log not bound get the same PERMISSION_DENIED; a caller bound to several logs that
names none gets INVALID_ARGUMENT; each log's health is told to its own identities only
(docs/security.md, "Logs")."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import grpc
import pytest
from grpc import aio
from grpc_health.v1 import health_pb2

from rng_service.clock import FakeClock
from rng_service.rpc.auth import Authorizer, caller_id
from rng_service.rpc.errors import rpc
from rng_service.rpc.router import SERVICES, LogHealth, Router
from tests.unit.rpc.test_auth import Recorder, spin
from tests.unit.rpc.test_auth_logs import AUDITOR_AB, GAME_A, GAME_B, LogContext

A, B = "casino-a.example/log", "casino-b.example/log"
NOWHERE = "no-such-log.example/log"


class Servicer:
    """A log's servicer on the shared port: its own authorizer (the log's)."""

    def __init__(self, auth: Authorizer) -> None:
        self.authorizer = auth
        self.ran: list[str] = []

    @rpc("SpinRoulette")
    async def SpinRoulette(self, request: Any, context: Any) -> str:
        self.ran.append(caller_id("fallback"))
        return "ok"


def _port() -> tuple[Router, dict[str, Servicer], dict[str, Recorder], Authorizer]:
    gate = Authorizer.mtls([GAME_A, GAME_B, AUDITOR_AB], clock=FakeClock())
    recorders = {A: Recorder(), B: Recorder()}
    servicers = {o: Servicer(gate.for_log(o, recorders[o])) for o in (A, B)}
    return Router(SERVICES["outcome"], lambda: servicers, gate), servicers, recorders, gate


def _call(router: Router, cn: str, origin: str | None) -> LogContext:
    context = LogContext(cn, origin)
    request = spin("T9" if cn == "auditor-ab" else "T1")  # each caller's own table
    with contextlib.suppress(aio.AbortError):  # a refusal: the context holds its status
        assert asyncio.run(router.SpinRoulette(request, context)) == "ok"  # type: ignore[attr-defined]
    return context


def test_each_call_goes_to_the_log_it_names_or_to_its_callers_only_log() -> None:
    router, servicers, _, _ = _port()
    for origin in (A, None, ""):
        assert _call(router, "game-a", origin).status is None
    assert _call(router, "game-b", None).status is None
    assert _call(router, "auditor-ab", B).status is None
    assert servicers[A].ran == ["game-a"] * 3
    assert servicers[B].ran == ["game-b", "auditor-ab"]


def test_a_log_not_bound_and_a_log_not_served_get_the_same_refusal() -> None:
    router, servicers, recorders, _ = _port()
    not_bound = _call(router, "game-a", B)
    nowhere = _call(router, "game-a", NOWHERE)
    assert not_bound.status == grpc.StatusCode.PERMISSION_DENIED
    assert (nowhere.status, nowhere.details) == (not_bound.status, not_bound.details)
    assert not_bound.details == "the requested log is not available to client 'game-a'"
    assert servicers[A].ran == servicers[B].ran == []  # nothing drawn
    # The refusal on log B is counted in log B's metrics (reason "log").
    assert [d["reason"] for d in recorders[B].denials] == ["log"]


def test_a_caller_of_several_logs_naming_none_is_told_to_name_one() -> None:
    router, servicers, _, _ = _port()
    context = _call(router, "auditor-ab", None)
    assert context.status == grpc.StatusCode.INVALID_ARGUMENT
    assert context.details.startswith("rng-origin: this port serves several logs")
    assert f"'{A}', '{B}'" in context.details  # its own logs, as the allowed values
    assert servicers[A].ran == servicers[B].ran == []


def test_an_unconfigured_identity_is_unauthenticated_whatever_it_names() -> None:
    router, _, _, _ = _port()
    for origin in (A, NOWHERE, None):
        assert _call(router, "stranger", origin).status == grpc.StatusCode.UNAUTHENTICATED


def _health(gate: Authorizer) -> LogHealth:
    async def build() -> LogHealth:
        health = LogHealth(gate, lambda: (A, B))
        for origin in (A, B):
            await health.set(origin, health_pb2.HealthCheckResponse.SERVING)
        return health

    return asyncio.run(build())


def _check(health: LogHealth, cn: str, name: str) -> tuple[Any, Any, str]:
    context = LogContext(cn, None)
    try:
        reply = asyncio.run(health.Check(health_pb2.HealthCheckRequest(service=name), context))
    except aio.AbortError:
        return None, context.status, context.details
    return reply.status, None, ""


def test_a_logs_health_is_told_to_its_own_identities_only() -> None:
    _, _, _, gate = _port()
    health = _health(gate)
    assert _check(health, "game-a", A) == (health_pb2.HealthCheckResponse.SERVING, None, "")
    assert _check(health, "auditor-ab", B)[0] == health_pb2.HealthCheckResponse.SERVING
    hidden = _check(health, "game-a", B)
    assert hidden[1] == grpc.StatusCode.NOT_FOUND
    assert hidden == _check(health, "game-a", NOWHERE)
    assert _check(health, "stranger", A) == hidden
    listed = asyncio.run(health.List(health_pb2.HealthListRequest(), LogContext("game-a", None)))
    assert set(listed.statuses) == {"", A}


@pytest.mark.parametrize("origin", [B, NOWHERE])
def test_watching_a_hidden_log_answers_as_for_a_name_not_served(origin: str) -> None:
    _, _, _, gate = _port()
    health = _health(gate)

    async def first_answer() -> list[Any]:
        context = LogContext("game-a", None)
        watch = asyncio.ensure_future(
            health.Watch(health_pb2.HealthCheckRequest(service=origin), context)
        )
        await asyncio.sleep(0.05)
        watch.cancel()
        return context.written

    written = asyncio.run(first_answer())
    assert [w.status for w in written] == [health_pb2.HealthCheckResponse.SERVICE_UNKNOWN]
