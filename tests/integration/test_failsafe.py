"""Fail-safe runtime through a real in-process server: an entropy source that hangs, a log
store that cannot commit (in-memory fake, and a real SQLite file locked by another process), a
graceful stop, and what clients, health, metrics and the service log say meanwhile
(docs/operations/running.md, "Failure modes"). Every wait is bounded."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2

from rng_service.clock import FakeClock
from rng_service.storage.base import AppendBatch
from rng_service.storage.memory import MemoryStorage
from rng_service.storage.sqlite import SqliteStorage
from tests.fakes import BlockingEntropy, FlakyStorage
from tests.integration.conftest import Running, make_config, start

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def health(running: Running, timeout: float = 2.0) -> int:
    reply = running.health.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout)
    return int(reply.status)


def scrape(running: Running) -> str:
    assert running.metrics_port is not None
    url = f"http://127.0.0.1:{running.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=2) as reply:
        return str(reply.read().decode())


def wait_for(what: str, check: Callable[[], bool], seconds: float) -> float:
    """Polls ``check`` until it holds; returns the seconds it took (fails after ``seconds``)."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < seconds, f"{what}: not within {seconds} s"
        time.sleep(0.05)
    return time.monotonic() - started


def events(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [r.msg for r in caplog.records if isinstance(r.msg, dict)]


def update_health(running: Running) -> None:
    """One poll of the health monitor now (it also polls every 0.5 s by itself)."""
    monitor = running.service._health_monitor
    assert monitor is not None
    asyncio.run_coroutine_threadsafe(monitor.update(), running.loop).result(10)


# --- an entropy source that hangs --------------------------------------------------------------


def test_a_hung_entropy_source_fails_closed_while_health_and_metrics_answer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rng_service")
    entropy = BlockingEntropy()
    clock = FakeClock()
    deadline = 1.0
    running = start(
        make_config(
            tmp_path,
            RNG_SERVICE__GENERATOR__RESEED_INTERVAL_SECONDS="1",
            RNG_SERVICE__GENERATOR__ENTROPY_TIMEOUT_SECONDS=str(deadline),
        ),
        entropy=entropy,
        clock=clock,
    )
    spin_error: list[grpc.RpcError] = []
    try:
        running.spin("before")
        size = running.service.appender.tree_size  # type: ignore[union-attr]
        entropy.block()
        clock.advance(5)  # the next draw reseeds: its entropy read hangs

        def spin() -> None:
            try:
                running.spin("during")
            except grpc.RpcError as e:
                spin_error.append(e)

        caller = threading.Thread(target=spin)
        started = time.monotonic()
        caller.start()
        assert entropy.entered.wait(10), "the draw never read the entropy source"
        # While the read hangs (inside its deadline), health and metrics still answer.
        assert health(running, timeout=0.8) == SERVING
        assert "rng_generator_up 1.0" in scrape(running)
        caller.join(deadline + 10)
        failed_after = time.monotonic() - started
        assert not caller.is_alive()
        assert len(spin_error) == 1
        assert spin_error[0].code() == grpc.StatusCode.UNAVAILABLE
        assert "did not answer within 1 s" in (spin_error[0].details() or "")
        assert failed_after < deadline + 3  # the deadline, plus one scheduling slice
        took = wait_for("health NOT_SERVING", lambda: health(running) == NOT_SERVING, 5)
        assert took < 2  # at most one health poll (0.5 s) after the failure
        text = scrape(running)
        assert "rng_generator_up 0.0" in text
        assert "rng_entropy_read_timeouts_total 3.0" in text  # the read and its two retries
        assert running.service.appender.tree_size == size  # type: ignore[union-attr]
        seen = {e["event"] for e in events(caplog)}
        assert {"entropy_read_timeout", "generator_error"} <= seen
    finally:
        entropy.release()
        running.stop()


# --- a store that cannot commit -----------------------------------------------------------------


def test_health_follows_a_store_that_fails_and_recovers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rng_service")
    storage = FlakyStorage()
    clock = FakeClock()
    running = start(make_config(tmp_path), storage=storage, clock=clock)
    try:
        running.spin("ok-1")
        assert health(running) == SERVING
        storage.failing = True
        for i in range(2):
            with pytest.raises(grpc.RpcError) as info:
                running.spin(f"lost-{i}")
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        update_health(running)
        assert health(running) == SERVING  # two failed commits: not yet N = 3
        with pytest.raises(grpc.RpcError):
            running.spin("lost-2")
        wait_for("health NOT_SERVING after 3 failed commits",
                 lambda: health(running) == NOT_SERVING, 3)  # fmt: skip
        text = scrape(running)
        assert "rng_log_store_up 0.0" in text
        assert "rng_generator_up 1.0" in text
        down = next(e for e in events(caplog) if e["event"] == "store_unavailable")
        assert down["reason"] == "3 group commits failed in a row"
        # While it is still failing, a probe (every 5 s) keeps it down ...
        clock.advance(5)
        wait_for("a failed probe", lambda: 'rng_log_store_probes_total{result="failed"} 1.0'
                 in scrape(running), 3)  # fmt: skip
        assert health(running) == NOT_SERVING
        # ... and the first probe after the store is back brings it up, with no traffic.
        storage.failing = False
        clock.advance(5)
        wait_for("health SERVING after a good probe", lambda: health(running) == SERVING, 3)
        assert "rng_log_store_up 1.0" in scrape(running)
        assert any(e["event"] == "store_ok" for e in events(caplog))
        assert running.spin("lost-0").receipt.index == 1  # nothing was logged for it before
        # An idle store that becomes unreachable is noticed by the probe alone.
        storage.failing = True
        clock.advance(5)
        wait_for("health NOT_SERVING from the probe alone",
                 lambda: health(running) == NOT_SERVING, 3)  # fmt: skip
        storage.failing = False
    finally:
        running.stop()


def test_a_locked_sqlite_store_turns_health_not_serving_until_it_commits_again(
    tmp_path: Path,
) -> None:
    """A real SQLite file, write-locked by another process's connection (a backup tool or a
    shell left in a write transaction): commits fail after the busy timeout."""
    config = make_config(tmp_path)
    storage = SqliteStorage(config.storage.path, busy_timeout_ms=100)
    clock = FakeClock()
    running = start(config, storage=storage, clock=clock)
    holder = sqlite3.connect(config.storage.path, timeout=5, isolation_level=None)
    try:
        running.spin("ok-1")
        holder.execute("BEGIN EXCLUSIVE")
        for i in range(3):
            with pytest.raises(grpc.RpcError) as info:
                running.spin(f"locked-{i}")
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        wait_for("NOT_SERVING while SQLite is locked",
                 lambda: health(running) == NOT_SERVING, 3)  # fmt: skip
        clock.advance(5)
        wait_for("a failed probe", lambda: 'rng_log_store_probes_total{result="failed"} 1.0'
                 in scrape(running), 3)  # fmt: skip
        holder.execute("ROLLBACK")
        clock.advance(5)
        wait_for("SERVING once the lock is gone", lambda: health(running) == SERVING, 3)
        assert running.spin("locked-0").receipt.index == 1
    finally:
        holder.close()
        running.stop()


# --- graceful stop: the drain window -------------------------------------------------------------


class GatedStorage(MemoryStorage):
    """In-memory storage whose commits wait while the gate is closed (a slow disk), bounded."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.waiting = threading.Event()

    def sequence(self, build: Callable[[int], AppendBatch | None]) -> None:
        if not self.gate.is_set():
            self.waiting.set()
            self.gate.wait(30)
        super().sequence(build)


def _stop_in_background(running: Running, grace: float) -> Any:
    running.stopped = True  # the test stops it; Running.stop only closes what is left
    return asyncio.run_coroutine_threadsafe(running.service.stop(grace), running.loop)


def _close(running: Running) -> None:
    running.channel.close()
    running.loop.call_soon_threadsafe(running.loop.stop)
    running.thread.join(30)
    running.loop.close()


def _stopping_count(running: Running) -> float:
    labels = {"method": "SpinRoulette", "code": "UNAVAILABLE", "cause": "shutting_down",
              "class": "failure"}  # fmt: skip
    value = running.service.registry.get_sample_value("rng_rpc_duration_seconds_count", labels)
    return value or 0.0


def _spin_in_thread(running: Running, request_id: str) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def call() -> None:
        try:
            out.append(running.spin(request_id))
        except grpc.RpcError as e:
            out.append(e)

    thread = threading.Thread(target=call)
    thread.start()
    return thread, out


def test_during_the_drain_window_new_calls_are_refused_and_accepted_ones_finish(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rng_service")
    storage = GatedStorage()
    running = start(make_config(tmp_path), storage=storage)
    try:
        running.spin("before")
        storage.gate.clear()
        accepted, result = _spin_in_thread(running, "accepted")
        assert storage.waiting.wait(10), "the accepted call never reached the store"
        stopping = _stop_in_background(running, grace=20)
        wait_for("the drain window", lambda: running.service._drain.closing, 5)
        started = time.monotonic()
        with pytest.raises(grpc.RpcError) as refused:
            running.spin("new")
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "shutting down" in (refused.value.details() or "")
        assert time.monotonic() - started < 2  # refused at once, not queued behind the drain
        assert health(running) == NOT_SERVING  # load balancers move away meanwhile
        assert not stopping.done()  # the accepted call holds the window open
        storage.gate.set()
        accepted.join(30)
        assert not isinstance(result[0], grpc.RpcError), result
        assert result[0].receipt.index == 1
        stopping.result(30)
        assert running.service.appender.tree_size == 2  # type: ignore[union-attr]  # no "new"
        drained = next(e for e in events(caplog) if e["event"] == "drained")
        assert (drained["calls_in_progress"], drained["interrupted"]) == (1, 0)
        assert _stopping_count(running) == 1  # the refused call, in the RPC metric
    finally:
        storage.gate.set()
        _close(running)


def test_a_call_that_outlives_the_window_gets_unavailable_not_cancelled(tmp_path: Path) -> None:
    storage = GatedStorage()
    running = start(make_config(tmp_path), storage=storage)
    try:
        storage.gate.clear()
        stuck, result = _spin_in_thread(running, "slow")
        assert storage.waiting.wait(10)
        stopping = _stop_in_background(running, grace=0.5)
        stuck.join(10)
        assert isinstance(result[0], grpc.RpcError)
        assert result[0].code() == grpc.StatusCode.UNAVAILABLE
        assert "did not finish within the drain window" in (result[0].details() or "")
        storage.gate.set()  # the store answers: the outcome submitted before is logged
        stopping.result(30)
        assert running.service.appender.tree_size == 1  # type: ignore[union-attr]
        assert _stopping_count(running) == 1  # counted as a stop, not as a client that left
    finally:
        storage.gate.set()
        _close(running)
