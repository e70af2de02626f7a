"""``rng.v1.LabService``: the raw-output stream for gaming labs (docs/certification.md, "The raw
output stream"; docs/security.md).

``StreamRawOutput`` sends raw CTR_DRBG output, before any scaling to outcomes, for certification
tests (SP 800-22, dieharder). It is for the lab role only (``rpc`` authorizes first) and only
when ``certification.raw_stream_enabled`` is set; otherwise FAILED_PRECONDITION naming the
setting. The bytes come from a generator instance of their own, never from the one that serves
outcomes, so a lab's stream neither consumes nor reveals outcome bytes.

One call is one session:

1. the request is validated (``num_bytes`` 1 to ``certification.raw_stream_max_bytes``,
   ``chunk_size`` 1 KiB to 1 MiB, 0 = 64 KiB);
2. the session is logged as ONE entry of kind ``raw_output_session`` through the appender
   (in a slot of its own, ``lab/<request_id>``: no round rule applies to it),
   before any byte is sent: its ``draw`` returns the session record (the raw generator's
   instance id and epoch, the byte count and chunking) and reads nothing from the random source
   the appender hands it, so the production generator gives no byte to it. The caller and time
   are the entry's own ``client`` and ``time``. No raw byte is ever logged;
3. the first message carries the session and the entry's receipt (so a lab can cite it); then
   ``ceil(num_bytes / chunk_size)`` data messages follow, each generated just before it is sent.

A request id opens one session only: a retry with the same request id (and parameters) finds
the logged entry and gets ALREADY_EXISTS naming its log index, and is sent no byte; with other
parameters the appender's ALREADY_EXISTS applies. So the same bytes are never streamed twice,
and a broken stream is resumed with a new request id. Every session is bounded in bytes
(``num_bytes``) and time (``certification.raw_stream_max_seconds``: a session still running
then, for example one whose reader stopped reading, ends with DEADLINE_EXCEEDED).

A client that ends the stream early (``rng-certify dieharder --live`` cancels the rest of its
last session once dieharder has read enough) is a normal end: the handler stops generating and
logs one INFO event ``raw_output_session_ended_by_client`` (request id, log index, bytes
written), never an error with a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from grpc import aio

from rng_service._proto.rng.v1 import lab_pb2, lab_pb2_grpc
from rng_service.errors import AlreadyExists, DeadlineExceeded, FailedPrecondition
from rng_service.log import rounds
from rng_service.log.entry import JsonValue
from rng_service.rpc.auth import Authorizer, caller_id
from rng_service.rpc.convert import count_in, receipt_to_proto, request_ids
from rng_service.rpc.errors import CALL_ENDED, RpcObserver, interrupted_by_stop, rpc
from rng_service.sampling import RandomSource
from rng_service.writer.appender import Appender, DrawRequest

__all__ = [
    "DEFAULT_RAW_CHUNK",
    "MAX_RAW_CHUNK",
    "MIN_RAW_CHUNK",
    "RAW_SESSION_KIND",
    "LabServicer",
    "RawGenerator",
]

# The logger keeps its name from before the package's rename (the JSON log's "logger" field).
_log = logging.getLogger("rng_service.service.lab_servicer")

#: The log entry kind of one raw-output session.
RAW_SESSION_KIND = "raw_output_session"
#: Bytes per data message when the request leaves chunk_size at 0.
DEFAULT_RAW_CHUNK = 64 * 1024
MIN_RAW_CHUNK = 1024
#: Well below gRPC's default 4 MiB receive limit.
MAX_RAW_CHUNK = 1024 * 1024


class RawGenerator(Protocol):
    """What the stream needs of its generator (a ``ProductionGenerator`` of its own)."""

    @property
    def instance_id(self) -> str: ...
    @property
    def epoch(self) -> int: ...
    def random_bytes(self, n: int) -> bytes: ...


def _session_draw(
    generator: RawGenerator, params: Mapping[str, JsonValue]
) -> Callable[[RandomSource], Mapping[str, JsonValue]]:
    """The appender's draw for a session: the record only, nothing read from ``src``."""

    def run(src: RandomSource) -> Mapping[str, JsonValue]:
        del src  # the production generator's source: never read
        return {
            "generator": {"instance": generator.instance_id, "epoch": generator.epoch},
            **params,
        }

    return run


class LabServicer(lab_pb2_grpc.LabServiceServicer):
    def __init__(
        self,
        *,
        appender: Appender,
        client_id: str,
        generator: RawGenerator | None,
        max_bytes: int,
        max_seconds: float,
        rpc_observer: RpcObserver | None = None,
        authorizer: Authorizer | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """``generator`` is None when ``certification.raw_stream_enabled`` is false."""
        self._appender = appender
        self._client_id = client_id
        self._generator = generator
        self._max_bytes = max_bytes
        self._max_seconds = max_seconds
        self._monotonic = monotonic
        self.rpc_observer = rpc_observer
        self.authorizer = authorizer

    @rpc("StreamRawOutput")
    async def StreamRawOutput(
        self,
        request: lab_pb2.StreamRawOutputRequest,
        context: aio.ServicerContext[lab_pb2.StreamRawOutputRequest, Any],
    ) -> None:
        generator = self._generator
        if generator is None:
            raise FailedPrecondition(
                "the raw output stream is disabled: this service is not configured for "
                "certification (set certification.raw_stream_enabled = true)",
                cause="disabled",
            )
        deadline = self._monotonic() + self._max_seconds
        ids = request_ids(request.context, request.HasField("context"))
        rounds.named_slot(RAW_SESSION_KIND, ids.slot)  # a session's slot is its own
        total = count_in(request.num_bytes, "num_bytes", 1, self._max_bytes)
        size = count_in(
            request.chunk_size or DEFAULT_RAW_CHUNK, "chunk_size", MIN_RAW_CHUNK, MAX_RAW_CHUNK
        )
        chunks = -(-total // size)
        params: dict[str, JsonValue] = {"num_bytes": total, "chunk_size": size, "chunks": chunks}
        future = self._appender.submit(
            DrawRequest(
                client_id=caller_id(self._client_id),
                request_id=ids.request_id,
                table_id=ids.table_id,
                round_id=ids.round_id,
                session_id=ids.session_id,
                kind=RAW_SESSION_KIND,
                params=params,
                draw=_session_draw(generator, params),
            )
        )
        result = await asyncio.shield(asyncio.wrap_future(future))
        if result.receipt.replayed:
            raise AlreadyExists(
                f"request_id {ids.request_id!r} already opened the raw output session logged "
                f"at index {result.receipt.index}; raw bytes are streamed once only "
                "(use a new request_id for more)"
            )
        logged = result.entry.outcome["generator"]
        offset = 0
        try:
            await self._write(
                context,
                lab_pb2.StreamRawOutputResponse(
                    session=lab_pb2.RawOutputSession(
                        generator_instance=logged["instance"],
                        generator_epoch=logged["epoch"],
                        num_bytes=total,
                        chunk_size=size,
                        chunks=chunks,
                    ),
                    receipt=receipt_to_proto(result),
                ),
                deadline,
            )
            while offset < total:  # bounded: ceil(total / size) iterations
                n = min(size, total - offset)
                # In a worker thread: a reseed may wait on the entropy source (up to its
                # deadline), and the event loop must keep serving health checks and other
                # calls meanwhile.
                data = await asyncio.to_thread(generator.random_bytes, n)
                await self._write(
                    context, lab_pb2.StreamRawOutputResponse(offset=offset, data=data), deadline
                )
                offset += n
        except CALL_ENDED as e:
            # grpc refuses to send on a call the client has cancelled or whose connection is
            # gone (its ExecuteBatchError): no byte can reach the client, the session is over.
            # Passed on, so the call is counted as the client's cancellation (rpc wrapper).
            _log_ended_by_client(ids.request_id, result.receipt.index, offset, total, e)
            raise
        except asyncio.CancelledError as e:
            if not interrupted_by_stop(asyncio.current_task()):  # gRPC's: the caller left
                _log_ended_by_client(ids.request_id, result.receipt.index, offset, total, e)
            raise

    async def _write(
        self,
        context: aio.ServicerContext[lab_pb2.StreamRawOutputRequest, Any],
        message: lab_pb2.StreamRawOutputResponse,
        deadline: float,
    ) -> None:
        remaining = deadline - self._monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError
            await asyncio.wait_for(context.write(message), timeout=remaining)
        except TimeoutError:
            raise DeadlineExceeded(
                f"the raw output session ran longer than certification.raw_stream_max_seconds "
                f"({self._max_seconds:g} s); use a new request_id for the rest"
            ) from None


def _log_ended_by_client(
    request_id: str, log_index: int, written: int, total: int, error: BaseException
) -> None:
    """The one INFO line of a session its client ended early (no traceback: a normal end)."""
    _log.info(
        {
            "event": "raw_output_session_ended_by_client",
            "request_id": request_id,
            "log_index": log_index,
            "bytes_written": written,
            "num_bytes": total,
            "grpc_error": type(error).__name__,
        }
    )
