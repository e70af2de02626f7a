"""gRPC adapter of ``rng.v1.LogService``: reading the log (auditors).

Translates requests to calls on the log layer and back; nothing more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grpc import aio

from rng_service._proto.rng.v1 import log_pb2, log_pb2_grpc
from rng_service.service.errors import RpcObserver, rpc

__all__ = ["LogServicer", "PublicKeyInfo"]


@dataclass(frozen=True, slots=True)
class PublicKeyInfo:
    key_id: str
    name: str
    public_key: bytes
    verifier_key: str
    active: bool


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
