"""gRPC servicers: translate, call the domain, translate back. Nothing more.

Outcome RPCs validate their request (``convert``), build a :class:`DrawRequest` whose ``draw``
is the pure outcome function, and await the appender: the response is built from the durably
logged entry, so a first answer and a replayed answer are built the same way.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping
from typing import Any

from grpc import aio

from rng_service._proto.rng.v1 import outcomes_pb2, outcomes_pb2_grpc
from rng_service.log.appender import Appender, AppendResult, DrawRequest
from rng_service.log.entry import JsonValue
from rng_service.outcomes import roulette
from rng_service.sampling import RandomSource
from rng_service.service.convert import (
    RequestIds,
    receipt_to_proto,
    request_ids,
    spin_to_proto,
    wheel_from_proto,
)
from rng_service.service.errors import RpcObserver, rpc

__all__ = ["OutcomeServicer"]


def _draw_spin(params: roulette.SpinParams, src: RandomSource) -> Mapping[str, JsonValue]:
    return roulette.draw(src, params).to_record()


class OutcomeServicer(outcomes_pb2_grpc.OutcomeServiceServicer):
    def __init__(
        self, *, appender: Appender, client_id: str, rpc_observer: RpcObserver | None = None
    ) -> None:
        self._appender = appender
        self._client_id = client_id
        self.rpc_observer = rpc_observer

    async def _issue(
        self,
        ids: RequestIds,
        *,
        kind: str,
        params: Mapping[str, JsonValue],
        draw: Any,
    ) -> AppendResult:
        future = self._appender.submit(
            DrawRequest(
                client_id=self._client_id,
                request_id=ids.request_id,
                table_id=ids.table_id,
                round_id=ids.round_id,
                session_id=ids.session_id,
                kind=kind,
                params=params,
                draw=draw,
            )
        )
        # The outcome is logged even if the caller goes away; a retry gets it back.
        return await asyncio.shield(asyncio.wrap_future(future))

    @rpc("SpinRoulette")
    async def SpinRoulette(
        self,
        request: outcomes_pb2.SpinRouletteRequest,
        context: aio.ServicerContext[
            outcomes_pb2.SpinRouletteRequest, outcomes_pb2.SpinRouletteResponse
        ],
    ) -> outcomes_pb2.SpinRouletteResponse:
        ids = request_ids(request.context, request.HasField("context"))
        params = roulette.SpinParams(wheel=wheel_from_proto(request.wheel))
        result = await self._issue(
            ids,
            kind="roulette_spin",
            params=params.to_record(),
            draw=functools.partial(_draw_spin, params),
        )
        outcome = result.entry.outcome
        return outcomes_pb2.SpinRouletteResponse(
            result=spin_to_proto(outcome["final"]),
            spins=[spin_to_proto(s) for s in outcome["spins"]],
            receipt=receipt_to_proto(result),
        )
