"""The one-process unary spin path without gRPC's own work, for CPU and instruction counts.

``python -m bench.hotpath N [--gc]`` builds the service's parts as
``rng_service.process.app.Service`` does on its defaults (SQLite WAL log with synchronous=FULL
in a temporary directory, a fresh Ed25519 key, the production generator on the OS entropy, the
development authorizer, the metrics, the drain guard) and runs N ``SpinRoulette`` calls
through the servicer's handler, 32 in flight on one uvloop event loop, with the log writer
thread doing its real work: the raw request bytes in, the serialized response out. What gRPC
itself does (HTTP/2, the call objects) is left out, so the figures are the interpreter time
OUR code adds to a call.

It prints the process's CPU (user and system, ``os.times``) of the N calls and the log writer
thread's (``/proc/self/task``), in microseconds a call. For a deterministic count run it
under callgrind (docs/performance.md), once with N and once with 0::

    valgrind --tool=callgrind --separate-threads=yes .venv/bin/python -m bench.hotpath 3200

The writer groups exactly 32 requests (``max_group_size`` 32, and a group wait long enough
that every group fills), so each run makes the same groups. ``--gc``: leave the cyclic
garbage collector on (off by default: its passes land at different calls from run to run);
``--defaults``: the writer's default grouping instead (what the service does; the groups then
depend on timing, so use it for CPU figures, not instruction counts). ``--tables K``: the
calls go round-robin to K tables (30 by default). ``--no-map``: the writer's table map work
taken out (issue 40's A/B, ``bench/bench_table_map.py``): no map path rehashed per entry (the
root stays that of the empty map), no round tail check, no map rows in the append.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
from pathlib import Path

from bench._without_map import take_out_the_map

IN_FLIGHT = 32


def _config(tmp: Path, defaults: bool) -> object:
    from rng_service.config import load_config
    from rng_service.log.keys import generate_key_pair

    environ = {
        "RNG_SERVICE__SERVER__PORT": "0",
        "RNG_SERVICE__METRICS__ENABLED": "false",
        "RNG_SERVICE__STORAGE__PATH": str(tmp / "log.sqlite3"),
        "RNG_SERVICE__LOG__KEY_FILE": str(tmp / "key.pem"),
        "RNG_SERVICE__LOG__KEY_NAME": "bench",
    }
    if not defaults:
        environ["RNG_SERVICE__LOG__MAX_GROUP_SIZE"] = str(IN_FLIGHT)
    config = load_config(None, environ=environ, base_dir=tmp)
    generate_key_pair(config.log.key_file, name="bench", passphrase=None)
    return config


async def _run(
    n: int, tmp: Path, defaults: bool, tables: int = 30
) -> tuple[os.times_result, tuple[float, float]]:
    from rng_service._proto.rng.v1 import common_pb2, outcomes_pb2
    from rng_service.process.app import Service
    from rng_service.rpc.drain import Drain
    from rng_service.rpc.servicers import OutcomeServicer

    service = Service(_config(tmp, defaults))  # type: ignore[arg-type]
    keys = service._load_keys()
    storage, tree = service._open_checked_store(keys)
    generator = service._start_generators()
    appender = service._start_appender(storage, tree, generator, keys)
    if not defaults:
        # Every group waits until it has 32 requests (the setting's bound is 0.1 s, which a
        # run under callgrind can exceed), so every run makes the same groups.
        appender._group_wait, appender._last_group = 600.0, IN_FLIGHT
    servicer = OutcomeServicer(
        appender=appender,
        client_id=service.config.server.default_client_id,
        profiles=service._load_profiles(),
        rpc_observer=service.metrics,
        authorizer=service._build_authorizer(),
    )
    handler = Drain(observer=service.metrics).guard(servicer.SpinRoulette, "SpinRoulette")
    wheel = outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO

    def body(i: int) -> bytes:
        ctx = common_pb2.RequestContext(
            request_id=f"req-{i}", table_id=f"T{i % tables}", round_id=f"R{i}"
        )
        return outcomes_pb2.SpinRouletteRequest(context=ctx, wheel=wheel).SerializeToString()

    bodies = [body(i) for i in range(n + IN_FLIGHT)]
    context = _Context()

    async def call(data: bytes) -> None:
        response = await handler(data, context)
        response.SerializeToString()

    # One group of 32 to warm up (imports, caches, the first statements), not counted.
    await asyncio.gather(*(call(b) for b in bodies[:IN_FLIGHT]))
    writer = appender._thread
    tid = writer.native_id if writer is not None else None
    cpu, wcpu, switches = os.times(), _thread_cpu(tid), _switches()
    it = iter(bodies[IN_FLIGHT:])

    async def worker() -> None:
        for data in it:
            await call(data)

    await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
    cpu2, wcpu2, switches2 = os.times(), _thread_cpu(tid), _switches()
    used = os.times_result(tuple(b - a for a, b in zip(cpu, cpu2, strict=True)))
    wused = (wcpu2[0] - wcpu[0], wcpu2[1] - wcpu[1])
    print(f"context switches a call: {(switches2 - switches) / max(n, 1):.2f} (all threads)")
    await asyncio.to_thread(appender.stop)
    storage.close()
    return used, wused


def _thread_cpu(tid: int | None) -> tuple[float, float]:
    """User and system CPU-seconds of thread ``tid`` of this process."""
    if tid is None:
        return 0.0, 0.0
    fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _switches() -> int:
    """Voluntary and involuntary context switches of every thread of this process."""
    total = 0
    for task in Path("/proc/self/task").iterdir():
        try:
            text = (task / "status").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.endswith("ctxt_switches:") or "ctxt_switches:" in line:
                total += int(line.split()[1])
    return total


class _Context:
    """What the handler path asks of a grpc.aio context on success (nothing, in development
    mode); an error path would abort, which this run never takes."""

    def time_remaining(self) -> float | None:
        return None

    async def abort(self, code: object, details: str) -> None:
        raise RuntimeError(f"aborted: {code} {details}")


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hotpath")
    parser.add_argument("n", type=int, help="calls after the warm-up (a multiple of 32)")
    parser.add_argument("--gc", action="store_true", help="leave the cyclic GC on")
    parser.add_argument(
        "--defaults",
        action="store_true",
        help="the log writer's default grouping (2 ms wait, up to 512): timing-dependent groups",
    )
    parser.add_argument("--tables", type=int, default=30, help="tables the calls go to")
    parser.add_argument("--no-map", action="store_true", help="the table map's work taken out")
    args = parser.parse_args()
    if args.no_map:
        take_out_the_map()
    if not args.gc:
        gc.disable()
    sys.setswitchinterval(0.0005)  # as rng_service.process.app's serve does
    import uvloop

    with tempfile.TemporaryDirectory(prefix="rng-hotpath-") as tmp:
        used, wused = uvloop.run(_run(args.n, Path(tmp), args.defaults, args.tables))
    per = 1e6 / max(args.n, 1)
    user, system = used.user * per, used.system * per
    wuser, wsystem = wused[0] * per, wused[1] * per
    print(
        f"calls {args.n} in {used.elapsed:.2f} s: process CPU {user + system:.1f} us/call "
        f"(user {user:.1f}, system {system:.1f}); the writer thread user {wuser:.1f}, system "
        f"{wsystem:.1f}; the rest (event loop) user {user - wuser:.1f}, system "
        f"{system - wsystem:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
