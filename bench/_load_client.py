"""A bounded grpc.aio load client: ``python -m bench._load_client ARGS`` prints JSON.

Why not h2load: h2load sends one request body for every call, and every outcome request needs
its own request id (a repeated id is answered from the log, not drawn), so the client builds a
distinct serialized request per call before the clock starts. The same client drives the echo
baselines, so the ratio compares servers, not clients. Bounded: at most ``--max-calls`` calls and
``--seconds`` of load (a call in flight at the deadline is finished and counted).

Several ``--target`` s (service replicas): one channel each, and the ``--concurrency`` workers
are dealt round robin over them (worker ``w`` calls target ``w % n``, so 32 in flight over two
targets is 16 in flight to each), as are the warm-up calls; the output adds the calls each
target answered (``calls_by_target``).

Kinds (``--kind``):

- ``spin``: unary calls whose bodies are ``SpinRouletteRequest`` s with fresh request ids and
  rounds (for ``SpinRoulette`` and for the unary echo); one item per call. ``--tables N``
  deals the calls round robin over N tables (call ``i`` is on ``bench-table-{i % N}``; the
  default, 1, keeps every call on ``bench-table``).
- ``batch``: unary ``DrawBatchRequest`` s of ``--items`` double-zero spins each, fresh request
  ids; ``--items`` items (outcomes) per call. The warm-up calls check that each answer holds
  that many outcomes; measured answers are not parsed (the client shares the machine's CPUs).
- ``stream``: server-streaming calls to the streaming echo, each asking for ``--items``
  messages of ``--payload`` bytes; every message received is one item.

``--lone-after-burst R`` (unary kinds): instead of the steady load, R rounds of a burst of
``--concurrency`` calls at once, then, as soon as the burst's last answer arrives, ONE call
alone, timed (after a group that had company the service's log writer waits, at most the
group wait, for as many requests as that group held: this is the call that pays it); then a
pause of 20 ms so that the next burst starts from idle. The latencies reported are those of
the lone calls. Bounded by R (at most 1,000) and ``--seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import time


def _bodies(args: argparse.Namespace, n: int, tag: str) -> list[bytes]:
    from rng_service._proto.rng.v1 import common_pb2, outcomes_pb2

    if args.kind == "stream":
        from bench._echo_server import stream_request

        return [stream_request(args.items, b"x" * args.payload)] * n
    out = []
    for i in range(n):
        # A round per call: a round's spin is drawn once (docs/outcomes-api.md).
        table = "bench-table" if args.tables == 1 else f"bench-table-{i % args.tables}"
        context = common_pb2.RequestContext(
            table_id=table, round_id=f"{tag}-r{i}", request_id=f"{tag}-{i}"
        )
        req: outcomes_pb2.SpinRouletteRequest | outcomes_pb2.DrawBatchRequest
        if args.kind == "batch":
            req = outcomes_pb2.DrawBatchRequest(
                context=context,
                count=args.items,
                roulette=outcomes_pb2.RouletteBatch(wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO),
            )
        else:
            req = outcomes_pb2.SpinRouletteRequest(
                context=context, wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO
            )
        out.append(req.SerializeToString())
    return out


def _check_batch(answer: bytes, items: int) -> None:
    from rng_service._proto.rng.v1 import outcomes_pb2

    got = len(outcomes_pb2.DrawBatchResponse.FromString(answer).roulette.numbers)
    if got != items:
        raise RuntimeError(f"DrawBatch answered {got} outcomes, expected {items}")


async def run(args: argparse.Namespace) -> dict[str, object]:
    from grpc import aio

    bodies = _bodies(args, args.max_calls, f"{args.tag}-{os.getpid()}")
    channels = [
        aio.insecure_channel(
            target,
            options=[
                ("grpc.max_receive_message_length", 64 * 1024 * 1024),
                # Its own connection per channel: gRPC core otherwise shares one subchannel
                # (one TCP connection) between channels to the same target, and SO_REUSEPORT
                # spreads connections, not calls, over a server's processes.
                ("grpc.use_local_subchannel_pool", 1),
            ],
        )
        for target in args.target
    ]
    streaming = args.kind == "stream"
    # --origin: every call names its log (rng-origin metadata), as on a shared port
    metadata = (("rng-origin", args.origin),) if args.origin else None
    unaries = [
        functools.partial(channel.unary_unary(args.path, None, None), metadata=metadata)
        for channel in channels
    ]
    streams = [
        functools.partial(channel.unary_stream(args.path, None, None), metadata=metadata)
        for channel in channels
    ]
    per_call = 1 if args.kind == "spin" else args.items

    async def once(body: bytes, target: int) -> int:
        """One call to ``args.target[target]``; returns the items it delivered."""
        if streaming:
            n = 0
            async for _ in streams[target](body):
                n += 1
            return n
        await unaries[target](body)
        return per_call

    for channel in channels:
        await channel.channel_ready()
    # warm-up, not counted
    for j, b in enumerate(bodies[: args.concurrency]):
        if args.kind == "batch":
            _check_batch(await unaries[j % len(channels)](b), args.items)
        elif await once(b, j % len(channels)) != per_call:
            raise RuntimeError(f"{args.path} delivered fewer than {per_call} items")
    latencies: list[float] = []
    calls_by_target = [0] * len(channels)
    errors = 0
    items = 0
    next_i = args.concurrency
    deadline = time.perf_counter() + args.seconds

    async def worker(target: int) -> None:
        nonlocal next_i, errors, items
        while time.perf_counter() < deadline and next_i < len(bodies):
            body = bodies[next_i]
            next_i += 1
            t0 = time.perf_counter()
            try:
                got = await once(body, target)  # not `items += await ...`: reads items first
            except aio.AioRpcError:
                errors += 1
                continue
            items += got
            calls_by_target[target] += 1
            latencies.append(time.perf_counter() - t0)

    async def lone_after_burst() -> None:
        nonlocal next_i, errors, items
        for _ in range(args.lone_after_burst):
            if time.perf_counter() >= deadline or next_i + args.concurrency + 1 > len(bodies):
                break
            burst = bodies[next_i : next_i + args.concurrency]
            next_i += args.concurrency
            await asyncio.gather(*(once(b, j % len(channels)) for j, b in enumerate(burst)))
            body = bodies[next_i]
            next_i += 1
            t0 = time.perf_counter()
            try:
                items += await once(body, 0)
            except aio.AioRpcError:
                errors += 1
                continue
            calls_by_target[0] += 1
            latencies.append(time.perf_counter() - t0)
            await asyncio.sleep(0.02)

    start = time.perf_counter()
    if args.lone_after_burst:
        await lone_after_burst()
    else:
        await asyncio.gather(*(worker(w % len(channels)) for w in range(args.concurrency)))
    elapsed = time.perf_counter() - start
    for channel in channels:
        await channel.close(None)
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] if latencies else 0.0

    return {
        "calls": len(latencies),
        "calls_by_target": calls_by_target,
        "items": items,
        "errors": errors,
        "seconds": elapsed,
        "rate": len(latencies) / elapsed,
        "items_rate": items / elapsed,
        "p50": pct(0.50),
        "p99": pct(0.99),
        "cpu_seconds": time.process_time(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--target", required=True, action="append", help="host:port; repeat for replicas"
    )
    parser.add_argument("--path", required=True)
    parser.add_argument("--kind", choices=("spin", "batch", "stream"), default="spin")
    parser.add_argument("--items", type=int, default=1000, help="outcomes or messages a call")
    parser.add_argument("--payload", type=int, default=16, help="bytes a streamed message")
    parser.add_argument("--tag", default="bench")
    parser.add_argument("--origin", default="", help="the log every call names (rng-origin)")
    parser.add_argument("--tables", type=int, default=1, help="tables the calls are dealt over")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--max-calls", type=int, default=200_000)
    parser.add_argument(
        "--lone-after-burst", type=int, default=0, metavar="R",
        help="R rounds of a burst of --concurrency calls, then one lone call (timed)",
    )  # fmt: skip
    args = parser.parse_args()
    if not 0 <= args.lone_after_burst <= 1000:
        parser.error("--lone-after-burst must be 0-1,000")
    if args.lone_after_burst and args.kind == "stream":
        parser.error("--lone-after-burst is for unary kinds")
    if not 1 <= args.tables <= 1_000_000:
        parser.error("--tables must be 1-1,000,000")
    if not 1 <= args.items <= 100_000:
        parser.error("--items must be 1-100,000")
    try:
        import uvloop

        result = uvloop.run(run(args))
    except ImportError:
        result = asyncio.run(run(args))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
