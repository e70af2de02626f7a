"""The log writer's IPC channel: two candidates, measured the way the front end uses them.

A front end is an asyncio (uvloop) process whose interpreter is the bottleneck (grpc-aio's
own work), so what counts is the front end's CPU a request, then round-trip latency. Each
candidate runs a front-end process with 32 requests in flight (each an awaited future) and a
writer process that answers every request it receives (no store: the channel alone), with
the same payloads: a pickled request of about the size of a spin's ``DrawRequest`` and an
answer of about a receipt's size. Both ends run on a socketpair made before the processes
start (what ``serve --front-ends`` does; nothing is reachable by path).

- ``mpconn``: ``multiprocessing.connection.Connection`` (its own 4-byte length framing,
  ``send_bytes``/``recv_bytes``), one frame a request, the answers read by a reader callback
  on the event loop (``loop.add_reader``; the connection's reads are blocking);
- ``stream``: a raw length-prefixed protocol on an asyncio transport (``asyncio.Protocol``),
  coalescing: the requests submitted during one turn of the event loop go out as ONE frame
  (one pickled list), and the writer answers everything it read in one go with one frame.

Bounded: ``--seconds`` and at most 2,000,000 requests. Reported: requests/s, the front end's
and the writer's CPU-seconds per 1,000 requests (``os.times`` / ``resource``), p50 and p99.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import socket
import struct
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path

from bench._common import Row

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
_LEN = struct.Struct(">I")
#: About a spin's request (ids, params, a draw reference) and a receipt-sized answer.
REQUEST = ("client", "request-id-0123456789", "table-1", "round-1", "", "roulette_spin",
           {"wheel": "double_zero"}, "rng_service.outcomes.roulette:draw")  # fmt: skip
ANSWER = b"e" * 600
MAX_REQUESTS = 2_000_000


def _writer_mpconn(fd: int) -> None:
    conn = Connection(fd)
    while True:
        try:
            frame = conn.recv_bytes()
        except EOFError:
            return
        rid, _req = pickle.loads(frame)
        conn.send_bytes(pickle.dumps((rid, ANSWER)))


def _writer_stream(fd: int) -> None:
    sock = socket.socket(fileno=fd)
    buf = bytearray()
    while True:
        data = sock.recv(1 << 20)
        if not data:
            return
        buf += data
        answers = []
        while len(buf) >= 4:
            (n,) = _LEN.unpack_from(buf)
            if len(buf) < 4 + n:
                break
            batch = pickle.loads(bytes(buf[4 : 4 + n]))
            del buf[: 4 + n]
            answers.extend((rid, ANSWER) for rid, _req in batch)
        if answers:
            out = pickle.dumps(answers)
            sock.sendall(_LEN.pack(len(out)) + out)


async def _front_mpconn(fd: int, seconds: float, inflight: int) -> dict[str, float]:
    conn = Connection(fd)
    loop = asyncio.get_running_loop()
    waiting: dict[int, asyncio.Future[bytes]] = {}

    def readable() -> None:
        while conn.poll():
            rid, answer = pickle.loads(conn.recv_bytes())
            waiting.pop(rid).set_result(answer)

    loop.add_reader(fd, readable)

    async def call(rid: int) -> bytes:
        fut = loop.create_future()
        waiting[rid] = fut
        conn.send_bytes(pickle.dumps((rid, REQUEST)))
        return await fut

    return await _drive(call, seconds, inflight)


async def _front_stream(fd: int, seconds: float, inflight: int) -> dict[str, float]:
    loop = asyncio.get_running_loop()
    waiting: dict[int, asyncio.Future[bytes]] = {}
    outbox: list[tuple[int, object]] = []

    class Proto(asyncio.Protocol):
        def __init__(self) -> None:
            self.buf = bytearray()

        def data_received(self, data: bytes) -> None:
            self.buf += data
            while len(self.buf) >= 4:
                (n,) = _LEN.unpack_from(self.buf)
                if len(self.buf) < 4 + n:
                    return
                for rid, answer in pickle.loads(bytes(self.buf[4 : 4 + n])):
                    waiting.pop(rid).set_result(answer)
                del self.buf[: 4 + n]

    transport, _ = await loop.create_unix_connection(Proto, sock=socket.socket(fileno=fd))

    def flush() -> None:
        out = pickle.dumps(outbox)
        outbox.clear()
        transport.write(_LEN.pack(len(out)) + out)

    async def call(rid: int) -> bytes:
        fut = loop.create_future()
        waiting[rid] = fut
        if not outbox:
            loop.call_soon(flush)
        outbox.append((rid, REQUEST))
        return await fut

    return await _drive(call, seconds, inflight)


async def _drive(call, seconds: float, inflight: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    latencies: list[float] = []
    next_id = 0
    deadline = time.perf_counter() + seconds
    t_cpu = os.times()

    async def worker() -> None:
        nonlocal next_id
        while time.perf_counter() < deadline and next_id < MAX_REQUESTS:
            rid = next_id
            next_id += 1
            t0 = time.perf_counter()
            await call(rid)
            latencies.append(time.perf_counter() - t0)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(inflight)))
    elapsed = time.perf_counter() - start
    after = os.times()
    latencies.sort()
    return {
        "rate": len(latencies) / elapsed,
        "calls": len(latencies),
        "front_cpu": (after.user - t_cpu.user) + (after.system - t_cpu.system),
        "p50": latencies[len(latencies) // 2],
        "p99": latencies[int(len(latencies) * 0.99)],
    }


def _child_cpu(pid: int) -> float:
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(kind: str, seconds: float, inflight: int) -> dict[str, float]:
    front, writer = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    proc = subprocess.Popen(
        [PY, "-m", "bench.bench_ipc", "--writer", kind, str(writer.fileno())],
        pass_fds=(writer.fileno(),), cwd=ROOT,
    )  # fmt: skip
    writer.close()
    try:
        fd = front.detach()
        run = _front_mpconn if kind == "mpconn" else _front_stream
        try:
            import uvloop

            result = uvloop.run(run(fd, seconds, inflight))
        except ImportError:
            result = asyncio.run(run(fd, seconds, inflight))
        result["writer_cpu"] = _child_cpu(proc.pid)
    finally:
        proc.terminate()
        proc.wait(10)
    return result


def run(*, short: bool) -> list[Row]:
    seconds = 1.0 if short else 5.0
    a = _measure("mpconn", seconds, 32)
    b = _measure("stream", seconds, 32)

    def per_k(r: dict[str, float], key: str) -> float:
        return r[key] / r["calls"] * 1000

    return [
        Row("IPC requests/s, 32 in flight: coalesced stream", b["rate"], "req/s",
            "multiprocessing.connection, frame a request", a["rate"]),
        Row("front end CPU-s per 1,000 requests: stream", per_k(b, "front_cpu"), "CPU-s",
            "multiprocessing.connection", per_k(a, "front_cpu")),
        Row("writer CPU-s per 1,000 requests: stream", per_k(b, "writer_cpu"), "CPU-s",
            "multiprocessing.connection", per_k(a, "writer_cpu")),
        Row("IPC round trip p50: stream", b["p50"] * 1000, "ms",
            "multiprocessing.connection", a["p50"] * 1000),
        Row("IPC round trip p99: stream", b["p99"] * 1000, "ms",
            "multiprocessing.connection", a["p99"] * 1000),
    ]  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--writer":
        (_writer_mpconn if sys.argv[2] == "mpconn" else _writer_stream)(int(sys.argv[3]))
