"""Refusals by gRPC core itself (issue 35, finding 7): a request message over the server's
4 MiB limit, or request metadata over gRPC's header limit, end RESOURCE_EXHAUSTED before the
service reads the request. The status table has their row (``grpc_limit``, a refusal); this
test shows, with real loopback servers, that nothing of the service runs for them (no draw, no
log entry, not in ``rng_rpc_duration_seconds``), and that a server interceptor sees such a call
arrive but never its end: the handler and deserializer are not called, so no hook of ours
learns the status, and the RPC metric cannot count them (docs/operations/monitoring.md, "Refusals
and failures")."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc
import pytest
from grpc import aio

from rng_service._proto.rng.v1 import common_pb2, outcomes_pb2
from rng_service.rpc.errors import STATUS_CAUSES, CallClass
from tests.integration.conftest import Running

SPIN = "/rng.v1.OutcomeService/SpinRoulette"
LIMIT = 4 * 1024 * 1024  # rng_service.rpc.server: grpc.max_receive_message_length


def _counted(running: Running) -> float:
    """Every call the RPC metric holds, whatever its method and status."""
    total = 0.0
    for metric in running.service.registry.collect():
        if metric.name == "rng_rpc_duration_seconds":
            total += sum(s.value for s in metric.samples if s.name.endswith("_count"))
    return total


def _spin_bytes(table: str, request_id: str) -> bytes:
    return outcomes_pb2.SpinRouletteRequest(
        context=common_pb2.RequestContext(table_id=table, round_id="R", request_id=request_id),
        wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO,
    ).SerializeToString()


def _wait_counted(running: Running, at_least: float) -> float:
    deadline = time.monotonic() + 5.0
    while _counted(running) < at_least and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # a call recorded late would land here
    return _counted(running)


def test_core_refusals_reach_nothing_of_the_service(running: Running) -> None:
    raw = running.channel.unary_unary(SPIN)
    before = _counted(running)
    first = raw(_spin_bytes("T1", "control-1"), timeout=30)  # a call the service sees
    assert _wait_counted(running, before + 1) == before + 1
    with pytest.raises(grpc.RpcError) as too_big:
        raw(_spin_bytes("T" + "x" * LIMIT, "too-big"), timeout=30)
    assert too_big.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "larger than max" in (too_big.value.details() or "")
    with pytest.raises(grpc.RpcError) as big_metadata:
        raw(_spin_bytes("T2", "big-metadata"), metadata=(("x-padding", "v" * 20000),), timeout=30)
    assert big_metadata.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "metadata" in (big_metadata.value.details() or "")
    second = raw(_spin_bytes("T3", "control-2"), timeout=30)
    assert _wait_counted(running, before + 2) == before + 2  # the two refusals: not counted
    # nothing was drawn or logged for them: the controls' entries are neighbours in the log
    indexes = [
        outcomes_pb2.SpinRouletteResponse.FromString(r).receipt.index for r in (first, second)
    ]
    assert indexes[1] == indexes[0] + 1
    row = next(r for r in STATUS_CAUSES if r.cause == "grpc_limit")
    assert row.code is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert row.call_class is CallClass.REFUSAL
    assert next(r.cause for r in STATUS_CAUSES if r.code is row.code) == "queue_full"  # default


def test_an_interceptor_sees_the_call_arrive_but_never_its_end() -> None:
    """Why the metric cannot count them: the only server hook that sees such a call is an
    interceptor, before the request is read; gRPC core then ends the call without calling
    the handler (or its deserializer), so nothing of ours learns its status."""
    arrived: list[str] = []
    handled: list[bytes] = []
    deserialized: list[bytes] = []

    class Arrivals(aio.ServerInterceptor):
        async def intercept_service(self, continuation: Any, details: Any) -> Any:
            arrived.append(details.method)
            return await continuation(details)

    async def handle(request: bytes, context: Any) -> bytes:
        handled.append(request)
        return b"ok"

    def deserialize(data: bytes) -> bytes:
        deserialized.append(data)
        return data

    async def main() -> list[grpc.StatusCode]:
        server = aio.server(
            interceptors=[Arrivals()], options=[("grpc.max_receive_message_length", 1024)]
        )
        handler = grpc.unary_unary_rpc_method_handler(handle, request_deserializer=deserialize)
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("t.S", {"M": handler}),)
        )
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        codes = []
        try:
            async with aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                call = channel.unary_unary("/t.S/M")
                assert await call(b"small", timeout=10) == b"ok"
                for kwargs in (
                    {"request": b"x" * 2048},
                    {"request": b"y", "metadata": (("p", "v" * 20000),)},
                ):
                    try:
                        await call(timeout=10, **kwargs)
                    except aio.AioRpcError as e:
                        codes.append(e.code())
        finally:
            await server.stop(0)
        return codes

    codes = asyncio.run(main())
    assert codes == [grpc.StatusCode.RESOURCE_EXHAUSTED] * 2
    assert arrived == ["/t.S/M"] * 3  # the interceptor saw all three arrive
    assert handled == [b"small"]  # but the handler ran for the first only
    assert deserialized == [b"small"]
