"""The ``rpc`` wrapper: decoding our way, unexpected errors, and a write to a call that ended."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import grpc
import pytest
from grpc import aio
from grpc._cython import cygrpc  # type: ignore[attr-defined]

from rng_service._proto.rng.v1 import common_pb2, outcomes_pb2
from rng_service.rpc.errors import StatusCause, rpc
from tests.unit.rpc.conftest import FakeContext


class Observer:
    def __init__(self) -> None:
        self.finished: list[tuple[grpc.StatusCode, str]] = []
        self.undecodable_methods: list[str] = []

    def rpc_finished(self, method: str, status: StatusCause, seconds: float) -> None:
        self.finished.append((status.code, status.cause))

    def undecodable(self, method: str) -> None:
        self.undecodable_methods.append(method)


class Servicer:
    def __init__(self, raises: BaseException | None = None) -> None:
        self.rpc_observer = Observer()
        self.raises = raises
        self.seen: list[Any] = []

    @rpc("SpinRoulette")
    async def SpinRoulette(self, request: Any, context: Any) -> str:
        self.seen.append(request)
        if self.raises is not None:
            raise self.raises
        return "ok"


def spin_bytes() -> bytes:
    request = outcomes_pb2.SpinRouletteRequest(
        context=common_pb2.RequestContext(table_id="T1", round_id="R1", request_id="q"), wheel=2
    )
    return request.SerializeToString()


def test_raw_bytes_are_decoded_for_the_servicer() -> None:
    servicer = Servicer()
    assert asyncio.run(servicer.SpinRoulette(spin_bytes(), FakeContext())) == "ok"
    assert isinstance(servicer.seen[0], outcomes_pb2.SpinRouletteRequest)
    assert servicer.seen[0].context.table_id == "T1"


def test_an_undecodable_body_never_reaches_the_servicer() -> None:
    servicer = Servicer()
    context = FakeContext()
    with pytest.raises(aio.AbortError):
        asyncio.run(servicer.SpinRoulette(b"\x0a\x03\xff\xfe\xfd", context))
    assert context.status == grpc.StatusCode.INVALID_ARGUMENT
    assert context.details.startswith("request: the body is not a valid rng.v1.SpinRouletteRequest")
    assert servicer.seen == []
    assert servicer.rpc_observer.undecodable_methods == ["SpinRoulette"]
    assert servicer.rpc_observer.finished == [(grpc.StatusCode.INVALID_ARGUMENT, "undecodable")]


def test_an_unexpected_error_is_internal_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    servicer = Servicer(raises=KeyError("boom"))
    context = FakeContext()
    with caplog.at_level(logging.ERROR), pytest.raises(aio.AbortError):
        asyncio.run(servicer.SpinRoulette(spin_bytes(), context))
    assert context.status == grpc.StatusCode.INTERNAL
    assert "boom" not in context.details  # no detail leaks to the caller
    assert [r.exc_info is not None for r in caplog.records] == [True]


def test_a_write_to_a_call_that_ended_is_left_to_grpc(caplog: pytest.LogCaptureFixture) -> None:
    """A client that cancels a stream while a message is being written: grpc raises its own
    ExecuteBatchError from the write and ignores it for a closed call. The wrapper passes it on
    untouched: no INTERNAL, no traceback in the service log (found by the fuzz test)."""
    servicer = Servicer(raises=cygrpc.ExecuteBatchError('Failed "execute_batch"'))
    context = FakeContext()
    with caplog.at_level(logging.DEBUG), pytest.raises(cygrpc.ExecuteBatchError):
        asyncio.run(servicer.SpinRoulette(spin_bytes(), context))
    assert context.status is None  # no abort
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert servicer.rpc_observer.finished == [(grpc.StatusCode.CANCELLED, "client_cancelled")]
