"""gRPC servicers: translate, call the domain, translate back. Nothing more.

Outcome RPCs validate their request (``convert``), build a :class:`DrawRequest` whose ``draw``
is the pure outcome function, and await the appender: the response is built from the durably
logged entry, so a first answer and a replayed answer are built the same way.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grpc import aio

from rng_service._proto.rng.v1 import log_pb2, log_pb2_grpc, outcomes_pb2, outcomes_pb2_grpc
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

__all__ = ["LogServicer", "OutcomeServicer", "PublicKeyInfo"]


@dataclass(frozen=True, slots=True)
class PublicKeyInfo:
    key_id: str
    name: str
    public_key: bytes
    verifier_key: str
    active: bool


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


class LogServicer(log_pb2_grpc.LogServiceServicer):
    def __init__(
        self, *, keys: Sequence[PublicKeyInfo], rpc_observer: RpcObserver | None = None
    ) -> None:
        self._keys = tuple(keys)
        self.rpc_observer = rpc_observer

    @rpc("GetPublicKeys")
    async def GetPublicKeys(
        self,
        request: log_pb2.GetPublicKeysRequest,
        context: aio.ServicerContext[log_pb2.GetPublicKeysRequest, log_pb2.GetPublicKeysResponse],
    ) -> log_pb2.GetPublicKeysResponse:
        return log_pb2.GetPublicKeysResponse(
            keys=[
                log_pb2.PublicKey(
                    key_id=k.key_id,
                    name=k.name,
                    algorithm="ed25519",
                    public_key=k.public_key,
                    verifier_key=k.verifier_key,
                    active=k.active,
                )
                for k in self._keys
            ]
        )
