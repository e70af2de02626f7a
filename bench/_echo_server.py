"""A bare grpc.aio echo server, the baseline of the service benchmark (same server settings).

``python -m bench._echo_server`` prints ``PORT <n>`` once listening on 127.0.0.1 and serves
``/bench.Echo/Echo`` (unary, bytes in, the same bytes out) until SIGTERM.
"""

from __future__ import annotations

import asyncio
import signal

import grpc
from grpc import aio


async def _echo(request: bytes, context: aio.ServicerContext[bytes, bytes]) -> bytes:
    return request


async def main() -> None:
    server = aio.server(options=[("grpc.so_reuseport", 1)])
    handler = grpc.method_handlers_generic_handler(
        "bench.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(_echo)}
    )
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
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
