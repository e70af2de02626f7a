"""The log a call names: the ``rng-origin`` request metadata (docs/security.md, "Logs").

A deployment with several logs (``[[logs]]``) serves each log under its C2SP tlog-checkpoint
origin; a call names the log it means in this metadata key, so that every RPC of every
service names it the same way without a field in each request message. A call that names
none means the log served where it arrives. The server side reads it in
:mod:`rng_service.rpc.auth` (before anything else about the request); clients add it to
every call with :func:`origin_channel`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import grpc

__all__ = ["ORIGIN_METADATA", "open_channels", "origin_channel"]

#: The request metadata key naming the log (gRPC metadata keys are lowercase ASCII).
ORIGIN_METADATA = "rng-origin"


if TYPE_CHECKING:  # generic in the type stubs only
    _UnaryUnary = grpc.UnaryUnaryClientInterceptor[Any, Any]
    _UnaryStream = grpc.UnaryStreamClientInterceptor[Any, Any]
else:
    _UnaryUnary = grpc.UnaryUnaryClientInterceptor
    _UnaryStream = grpc.UnaryStreamClientInterceptor


class _NameTheLog(_UnaryUnary, _UnaryStream):
    """Adds ``rng-origin: <origin>`` to every call's metadata."""

    def __init__(self, origin: str) -> None:
        self._item = (ORIGIN_METADATA, origin)

    def _details(self, details: Any) -> Any:
        metadata = [*(details.metadata or ()), self._item]
        return details._replace(metadata=metadata)

    def intercept_unary_unary(self, continuation: Callable[..., Any], details: Any,
                              request: Any) -> Any:  # fmt: skip
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Callable[..., Any], details: Any,
                               request: Any) -> Any:  # fmt: skip
        return continuation(self._details(details), request)


def origin_channel(channel: grpc.Channel, origin: str | None) -> grpc.Channel:
    """``channel`` whose calls name the log ``origin`` (None or "": unchanged, the served log)."""
    if not origin:
        return channel
    return grpc.intercept_channel(channel, _NameTheLog(origin))


def open_channels(
    target: str, credentials: grpc.ChannelCredentials | None, origin: str | None
) -> tuple[grpc.Channel, grpc.Channel]:
    """A channel to ``target`` (plaintext without ``credentials``) and the same channel with
    every call naming the log ``origin`` (:func:`origin_channel`): the first to close, the
    second to call through (``RngClient``, ``LogClient``)."""
    raw = (
        grpc.insecure_channel(target)
        if credentials is None
        else grpc.secure_channel(target, credentials)
    )
    return raw, origin_channel(raw, origin)
