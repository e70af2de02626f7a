"""A bare grpc.aio echo server, the baseline of the service benchmark (same server settings).

``python -m bench._echo_server`` prints ``PORT <n>`` once listening on 127.0.0.1 and serves,
until SIGTERM:

- ``/bench.Echo/Echo`` (unary): bytes in, the same bytes out;
- ``/bench.Echo/Stream`` (server streaming): the request is a 4-byte big-endian count ``n``
  (at most :data:`MAX_STREAM`) followed by a payload; the response is ``n`` messages, each the
  payload.

For the anatomy of a spin's cost (``bench/bench_anatomy.py``), ``/bench.Echo/Echo`` can be made
more like the service, one part at a time: ``--response FILE`` answers every call with those
bytes (a real ``SpinRouletteResponse``) instead of the request; ``--protobuf`` also parses the
request as a ``SpinRouletteRequest`` and serializes the response message, as the service's
handlers do; ``--writer-us N`` hands every call to a writer thread, as the service's log writer
takes its requests (in groups: what is queued, and when the last group had company, as many
as it held and then what arrives until a lull of 0.3 ms, for at most 2 ms:
``rng_service.writer.queue.gather_group``), which holds the GIL for about N microseconds of
pure Python a request and answers the group with one ``call_soon_threadsafe``.
"""

from __future__ import annotations

import argparse
import asyncio
import queue
import signal
import struct
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc
from grpc import aio

#: Most messages one Stream call sends (bounds every call).
MAX_STREAM = 100_000

#: The service's own server options (rng_service/rpc/server.py).
SERVER_OPTIONS = [
    ("grpc.so_reuseport", 1),
    ("grpc.max_receive_message_length", 4 * 1024 * 1024),
]


def stream_request(count: int, payload: bytes) -> bytes:
    """The body of a Stream call that asks for ``count`` copies of ``payload``."""
    return struct.pack(">I", count) + payload


async def _echo(request: bytes, context: aio.ServicerContext[bytes, bytes]) -> bytes:
    return request


async def _stream(
    request: bytes, context: aio.ServicerContext[bytes, bytes]
) -> AsyncIterator[bytes]:
    (count,) = struct.unpack_from(">I", request)
    payload = request[4:]
    for _ in range(min(count, MAX_STREAM)):
        yield payload


def _spin_loop_rate() -> float:
    """Iterations of :func:`_spin` a microsecond of this thread's CPU (calibrated once)."""
    n = 200_000
    t0 = time.thread_time()
    _spin(n)
    return n / max((time.thread_time() - t0) * 1e6, 1e-3)


def _spin(n: int) -> int:
    x = 0
    for i in range(n):
        x += i
    return x


class _Writer:
    """A stand-in for the service's log writer thread: groups, GIL time, one hand-back."""

    MAX_GROUP = 512
    WAIT = 0.002
    LULL = 0.0003

    def __init__(self, loop: asyncio.AbstractEventLoop, micros: float, answer: object) -> None:
        self._loop, self._answer = loop, answer
        self._per_request = int(micros * _spin_loop_rate())
        self._queue: queue.SimpleQueue[asyncio.Future[Any]] = queue.SimpleQueue()
        threading.Thread(target=self._run, name="writer", daemon=True).start()

    def submit(self) -> asyncio.Future[Any]:
        future = self._loop.create_future()
        self._queue.put(future)
        return future

    def _run(self) -> None:
        last = 0
        while True:
            group = [self._queue.get()]
            deadline = time.monotonic() + (self.WAIT if last > 1 else 0.0)
            while len(group) < self.MAX_GROUP:
                remaining = deadline - time.monotonic()
                if len(group) >= last:
                    remaining = min(self.LULL, remaining)
                try:
                    group.append(
                        self._queue.get(timeout=remaining) if remaining > 0
                        else self._queue.get_nowait()
                    )  # fmt: skip
                except queue.Empty:
                    break
            last = len(group)
            _spin(self._per_request * len(group))
            self._loop.call_soon_threadsafe(self._settle, group)

    def _settle(self, group: list[asyncio.Future[Any]]) -> None:
        for future in group:
            if not future.done():
                future.set_result(self._answer)


def _echo_handler(args: argparse.Namespace) -> grpc.RpcMethodHandler[Any, Any]:
    """``/bench.Echo/Echo`` as the options make it (see the module docstring)."""
    if args.response is None:
        return grpc.unary_unary_rpc_method_handler(_echo)
    answer: object = args.response.read_bytes()
    options: dict[str, Callable[..., Any]] = {}
    if args.protobuf:
        from rng_service._proto.rng.v1 import outcomes_pb2

        answer = outcomes_pb2.SpinRouletteResponse.FromString(answer)  # type: ignore[arg-type]
        options = {
            "request_deserializer": outcomes_pb2.SpinRouletteRequest.FromString,
            "response_serializer": outcomes_pb2.SpinRouletteResponse.SerializeToString,
        }
    if args.writer_us is None:

        async def fixed(request: object, context: object) -> object:
            return answer

        return grpc.unary_unary_rpc_method_handler(fixed, **options)
    writer = _Writer(asyncio.get_running_loop(), args.writer_us, answer)

    async def through_writer(request: object, context: object) -> object:
        return await writer.submit()

    return grpc.unary_unary_rpc_method_handler(through_writer, **options)


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench._echo_server")
    # A second echo process shares a port (SO_REUSEPORT, as the service's front ends do).
    parser.add_argument("port", nargs="?", type=int, default=0)
    parser.add_argument("--response", type=Path, help="answer Echo with these bytes")
    parser.add_argument("--protobuf", action="store_true", help="as SpinRoulette messages")
    parser.add_argument("--writer-us", type=float, help="through a writer thread (CPU-us)")
    args = parser.parse_args()
    if (args.protobuf or args.writer_us is not None) and args.response is None:
        parser.error("--protobuf and --writer-us need --response")
    if args.writer_us is not None and not 0 <= args.writer_us <= 10_000:
        parser.error("--writer-us must be 0-10,000")
    return args


async def main() -> None:
    args = _args()
    server = aio.server(options=SERVER_OPTIONS)
    handler = grpc.method_handlers_generic_handler(
        "bench.Echo",
        {
            "Echo": _echo_handler(args),
            "Stream": grpc.unary_stream_rpc_method_handler(_stream),
        },
    )
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port(f"127.0.0.1:{args.port}")
    await server.start()
    print(f"PORT {port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    await server.stop(1)


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.run(main())
    except ImportError:
        asyncio.run(main())
