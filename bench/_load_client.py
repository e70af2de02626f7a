"""A bounded grpc.aio unary load client: ``python -m bench._load_client ARGS`` prints JSON.

Why not h2load: h2load sends one request body for every call, and every outcome request needs
its own request id (a repeated id is answered from the log, not drawn), so the client builds a
distinct serialized request per call before the clock starts. The same client drives the echo
baseline, so the ratio compares servers, not clients. Bounded: at most ``--max-calls`` calls and
``--seconds`` of load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time


def _bodies(kind: str, n: int, tag: str) -> list[bytes]:
    from rng_service._proto.rng.v1 import common_pb2, outcomes_pb2

    out = []
    for i in range(n):
        req = outcomes_pb2.SpinRouletteRequest(
            context=common_pb2.RequestContext(
                table_id="bench-table", round_id=f"r{i}", request_id=f"{tag}-{i}"
            ),
            wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO,
        )
        out.append(req.SerializeToString())
    return out


async def run(args: argparse.Namespace) -> dict[str, object]:
    from grpc import aio

    bodies = _bodies(args.kind, args.max_calls, f"{args.tag}-{os.getpid()}")
    channel = aio.insecure_channel(args.target)
    call = channel.unary_unary(args.path)
    await channel.channel_ready()
    # warm-up, not counted
    for b in bodies[: args.concurrency]:
        await call(b)
    latencies: list[float] = []
    errors = 0
    next_i = args.concurrency
    deadline = time.perf_counter() + args.seconds

    async def worker() -> None:
        nonlocal next_i, errors
        while time.perf_counter() < deadline and next_i < len(bodies):
            body = bodies[next_i]
            next_i += 1
            t0 = time.perf_counter()
            try:
                await call(body)
            except aio.AioRpcError:
                errors += 1
                continue
            latencies.append(time.perf_counter() - t0)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(args.concurrency)))
    elapsed = time.perf_counter() - start
    await channel.close()
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] if latencies else 0.0

    return {
        "calls": len(latencies),
        "errors": errors,
        "seconds": elapsed,
        "rate": len(latencies) / elapsed,
        "p50": pct(0.50),
        "p99": pct(0.99),
        "cpu_seconds": time.process_time(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--path", required=True)
    parser.add_argument("--kind", default="spin")
    parser.add_argument("--tag", default="bench")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--max-calls", type=int, default=200_000)
    args = parser.parse_args()
    try:
        import uvloop

        result = uvloop.run(run(args))
    except ImportError:
        result = asyncio.run(run(args))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
