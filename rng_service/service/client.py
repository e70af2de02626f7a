"""A small synchronous client for the CLI and for Python users without generated code.

It returns plain dictionaries and :class:`rng_service.log.receipt.Receipt` objects, so its
callers never touch protobuf types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from rng_service._proto.rng.v1 import (
    common_pb2,
    log_pb2,
    log_pb2_grpc,
    outcomes_pb2,
    outcomes_pb2_grpc,
)
from rng_service.log.receipt import Receipt

__all__ = ["ClientError", "RngClient", "SpinResult"]

_WHEELS = {
    "single_zero": outcomes_pb2.WHEEL_TYPE_SINGLE_ZERO,
    "double_zero": outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO,
    "double_zero_as_single_zero": outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO_AS_SINGLE_ZERO,
}
WHEEL_NAMES = tuple(_WHEELS)


class ClientError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.details = message


@dataclass(frozen=True)
class SpinResult:
    number: str
    color: str
    wheel_position: int
    spins: tuple[dict[str, Any], ...]
    receipt: Receipt


def _spin_dict(s: outcomes_pb2.RouletteSpin) -> dict[str, Any]:
    return {
        "number": s.number,
        "color": outcomes_pb2.Color.Name(s.color).removeprefix("COLOR_").lower(),
        "wheel_position": s.wheel_position,
        "void": s.void,
    }


class RngClient:
    def __init__(self, target: str, *, timeout: float = 10.0) -> None:
        self._channel = grpc.insecure_channel(target)
        self._outcomes = outcomes_pb2_grpc.OutcomeServiceStub(self._channel)
        self._log = log_pb2_grpc.LogServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self._timeout = timeout

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> RngClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, fn: Any, request: Any) -> Any:
        try:
            return fn(request, timeout=self._timeout)
        except grpc.RpcError as e:
            raise ClientError(e.code().name, e.details() or "") from None

    def spin(
        self, *, wheel: str, table_id: str, round_id: str, request_id: str, session_id: str = ""
    ) -> SpinResult:
        if wheel not in _WHEELS:
            raise ClientError("INVALID_ARGUMENT", f"wheel must be one of {', '.join(_WHEELS)}")
        reply = self._call(
            self._outcomes.SpinRoulette,
            outcomes_pb2.SpinRouletteRequest(
                context=common_pb2.RequestContext(
                    table_id=table_id,
                    round_id=round_id,
                    request_id=request_id,
                    session_id=session_id,
                ),
                wheel=_WHEELS[wheel],
            ),
        )
        r = reply.receipt
        final = _spin_dict(reply.result)
        return SpinResult(
            number=final["number"],
            color=final["color"],
            wheel_position=final["wheel_position"],
            spins=tuple(_spin_dict(s) for s in reply.spins),
            receipt=Receipt(
                index=r.index,
                entry=r.entry,
                leaf_hash=r.leaf_hash,
                inclusion_proof=tuple(r.inclusion_proof),
                tree_size=r.tree_size,
                checkpoint=r.checkpoint,
                replayed=r.replayed,
            ),
        )

    def public_keys(self) -> list[dict[str, Any]]:
        reply = self._call(self._log.GetPublicKeys, log_pb2.GetPublicKeysRequest())
        return [
            {
                "key_id": k.key_id,
                "name": k.name,
                "algorithm": k.algorithm,
                "verifier_key": k.verifier_key,
                "active": k.active,
            }
            for k in reply.keys
        ]

    def health(self, service: str = "") -> str:
        reply = self._call(self._health.Check, health_pb2.HealthCheckRequest(service=service))
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))
