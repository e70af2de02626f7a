"""In-process service harness: a real grpc.aio server on a loopback port 0, in its own thread."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2_grpc

from rng_service._proto.rng.v1 import common_pb2, log_pb2_grpc, outcomes_pb2, outcomes_pb2_grpc
from rng_service.clock import Clock
from rng_service.config import Config, load_config
from rng_service.drbg import EntropySource
from rng_service.log.keys import generate_key_pair
from rng_service.process.app import Service
from rng_service.storage.base import LogStorage
from tests.fakes import CounterEntropy


@dataclass
class Running:
    service: Service
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    channel: grpc.Channel
    outcomes: outcomes_pb2_grpc.OutcomeServiceStub
    log: log_pb2_grpc.LogServiceStub
    health: health_pb2_grpc.HealthStub
    port: int
    metrics_port: int | None
    stopped: bool = field(default=False)

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        self.channel.close()
        asyncio.run_coroutine_threadsafe(self.service.stop(2.0), self.loop).result(60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()

    def spin(self, request_id: str, *, wheel: int = outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO,
             table_id: str = "T1", round_id: str = "", session_id: str = "") -> Any:  # fmt: skip
        """One spin; in round ``R-<request_id>`` unless ``round_id`` is given (a round's spin
        is drawn once)."""
        return self.outcomes.SpinRoulette(
            outcomes_pb2.SpinRouletteRequest(
                context=common_pb2.RequestContext(
                    table_id=table_id, round_id=round_id or f"R-{request_id}",
                    request_id=request_id,
                    session_id=session_id,
                ),
                wheel=wheel,
            ),
            timeout=30,
        )  # fmt: skip


def wait_for_sample(
    running: Running, name: str, labels: dict[str, str], *, at_least: float = 1.0
) -> float | None:
    """A metric sample of the running service, waiting (at most 5 s) until it reaches
    ``at_least``: the RPC metric is recorded just after the status is sent, so a client can
    have its answer a moment before the count moves. Returns the value then, or the last seen."""
    deadline = time.monotonic() + 5.0
    while True:
        value = running.service.registry.get_sample_value(name, labels)
        if (value or 0.0) >= at_least or time.monotonic() > deadline:
            return value
        time.sleep(0.01)


def make_config(tmp_path: Path, **env: str) -> Config:
    environ = {
        "RNG_SERVICE__SERVER__PORT": "0",
        "RNG_SERVICE__METRICS__PORT": "0",
        "RNG_SERVICE__STORAGE__PATH": str(tmp_path / "log.sqlite3"),
        "RNG_SERVICE__LOG__KEY_FILE": str(tmp_path / "key.pem"),
        "RNG_SERVICE__LOG__ORIGIN": "test.example/log",
        **env,
    }
    config = load_config(None, environ=environ, base_dir=tmp_path)
    if not config.log.key_file.exists():
        generate_key_pair(config.log.key_file, name=config.log.key_name, passphrase=None)
    return config


def start(
    config: Config,
    *,
    entropy: EntropySource | None = None,
    storage: LogStorage | None = None,
    clock: Clock | None = None,
) -> Running:
    service = Service(config, entropy=entropy or CounterEntropy(), storage=storage, clock=clock)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="test-service-loop", daemon=True)
    thread.start()
    endpoints = asyncio.run_coroutine_threadsafe(service.start(), loop).result(60)
    channel = grpc.insecure_channel(f"127.0.0.1:{endpoints.grpc_port}")
    return Running(
        service=service,
        loop=loop,
        thread=thread,
        channel=channel,
        outcomes=outcomes_pb2_grpc.OutcomeServiceStub(channel),
        log=log_pb2_grpc.LogServiceStub(channel),
        health=health_pb2_grpc.HealthStub(channel),
        port=endpoints.grpc_port,
        metrics_port=endpoints.metrics_port,
    )


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Running]:
    r = start(make_config(tmp_path))
    try:
        yield r
    finally:
        r.stop()
