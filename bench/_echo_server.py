"""A bare grpc.aio echo server, the baseline of the service benchmark (same server settings).

``python -m bench._echo_server`` prints ``PORT <n>`` once listening on 127.0.0.1 and serves,
until SIGTERM:

- ``/bench.Echo/Echo`` (unary): bytes in, the same bytes out;
- ``/bench.Echo/Stream`` (server streaming): the request is a 4-byte big-endian count ``n``
  (at most :data:`MAX_STREAM`) followed by a payload; the response is ``n`` messages, each the
  payload.
"""

from __future__ import annotations

import asyncio
import signal
import struct
import sys
from collections.abc import AsyncIterator

import grpc
from grpc import aio

#: Most messages one Stream call sends (bounds every call).
MAX_STREAM = 100_000

#: The service's own server options (rng_service/service/server.py).
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


async def main() -> None:
    server = aio.server(options=SERVER_OPTIONS)
    handler = grpc.method_handlers_generic_handler(
        "bench.Echo",
        {
            "Echo": grpc.unary_unary_rpc_method_handler(_echo),
            "Stream": grpc.unary_stream_rpc_method_handler(_stream),
        },
    )
    server.add_generic_rpc_handlers((handler,))
    # ``python -m bench._echo_server [PORT]``: a second echo process shares a port
    # (SO_REUSEPORT, as the service's front ends do).
    port = server.add_insecure_port(f"127.0.0.1:{int(sys.argv[1]) if len(sys.argv) > 1 else 0}")
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
