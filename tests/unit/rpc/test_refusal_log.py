"""Refusal log lines are rate-limited: at most one ``denied`` line per (reason, client) per
interval, then one ``denied_suppressed`` line with the number held back. Every refusal is still
counted in ``rng_auth_denials_total``. A fake clock and a fake scheduler make it deterministic;
one test runs the real event-loop scheduling through the Authorizer."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from rng_service.clock import FakeClock
from rng_service.errors import PermissionDenied, Unauthenticated
from rng_service.metrics import Metrics
from rng_service.rpc.auth import Authorizer, RefusalLog
from rng_service.security.policy import ClientPolicy, Role
from tests.unit.rpc.test_auth import TlsContext, spin


class Scheduler:
    """Holds ``(at, callback)`` until :meth:`run_due` is told the time."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.pending: list[tuple[float, Callable[[], None]]] = []

    def __call__(self, delay: float, callback: Callable[[], None]) -> None:
        self.pending.append((self.clock.monotonic() + delay, callback))

    def run_due(self) -> None:
        now = self.clock.monotonic()
        due = [p for p in self.pending if p[0] <= now]
        self.pending = [p for p in self.pending if p[0] > now]
        for _, callback in due:
            callback()


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.events: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        assert isinstance(record.msg, dict)
        self.events.append(record.msg)


@pytest.fixture
def lines() -> Lines:
    logger = logging.getLogger("test.refusal_log")
    logger.handlers[:] = [handler := Lines()]
    logger.propagate = False
    logger.setLevel(logging.WARNING)
    return handler


def refusal_log(clock: FakeClock, scheduler: Scheduler | None) -> RefusalLog:
    return RefusalLog(
        logging.getLogger("test.refusal_log"),
        monotonic=clock.monotonic,
        interval=10.0,
        schedule=scheduler,
    )


def denied(n: int) -> dict[str, Any]:
    return {"event": "denied", "n": n}


def test_a_burst_is_one_line_then_one_count(lines: Lines) -> None:
    clock = FakeClock()
    scheduler = Scheduler(clock)
    log = refusal_log(clock, scheduler)
    for i in range(80):
        log.refused(("role", "game-1"), denied(i))
        clock.advance(0.0625)  # 80 refusals in 5 s (binary fractions: exact times)
    assert lines.events == [denied(0)]
    clock.advance(5.0)
    scheduler.run_due()
    assert [e["event"] for e in lines.events] == ["denied", "denied_suppressed"]
    summary = lines.events[1]
    assert (summary["reason"], summary["client"], summary["suppressed"]) == ("role", "game-1", 79)
    # quiet afterwards: the next refusal, much later, is a full line again
    clock.advance(60)
    scheduler.run_due()
    log.refused(("role", "game-1"), denied(80))
    assert lines.events[-1] == denied(80)
    assert len(lines.events) == 3


def test_a_steady_stream_is_one_line_per_interval(lines: Lines) -> None:
    clock = FakeClock()
    scheduler = Scheduler(clock)
    log = refusal_log(clock, scheduler)
    for i in range(512):  # 8 per second for 64 s
        log.refused(("rate_limit", "game-1"), denied(i))
        clock.advance(0.125)
        scheduler.run_due()
    kinds = [e["event"] for e in lines.events]
    assert kinds[0] == "denied"
    assert kinds[1:] == ["denied_suppressed"] * (len(kinds) - 1)
    assert len(kinds) == 7  # the first line, then one count every 10 s (at 10, 20, ... 60 s)
    # the last interval's count is still pending; once it ends, every refusal is accounted
    # for: one logged in full, the rest in the counts
    assert len(scheduler.pending) == 1
    clock.advance(10)
    scheduler.run_due()
    assert 1 + sum(e["suppressed"] for e in lines.events[1:]) == 512


def test_keys_are_independent(lines: Lines) -> None:
    clock = FakeClock()
    log = refusal_log(clock, Scheduler(clock))
    log.refused(("role", "game-1"), denied(1))
    log.refused(("table", "game-1"), denied(2))
    log.refused(("role", "game-2"), denied(3))
    log.refused(("role", "game-1"), denied(4))  # held back
    assert lines.events == [denied(1), denied(2), denied(3)]


def test_without_an_event_loop_the_count_comes_with_the_next_line(lines: Lines) -> None:
    clock = FakeClock()
    log = refusal_log(clock, None)  # no scheduler, no running loop
    for i in range(5):
        log.refused(("role", "game-1"), denied(i))
    clock.advance(11)
    log.refused(("role", "game-1"), denied(5))
    assert [e["event"] for e in lines.events] == ["denied", "denied_suppressed", "denied"]
    assert lines.events[1]["suppressed"] == 4
    assert lines.events[2] == denied(5)


def test_the_authorizer_thins_its_log_but_counts_every_refusal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Through the Authorizer on a running event loop (the real ``call_later``, a short
    interval): unconfigured identities all share one key whatever names they present."""
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    game = ClientPolicy(
        identity="game-1", roles=frozenset({Role.GAME_SERVER}), tables=frozenset({"T1"})
    )
    authorizer = Authorizer.mtls([game], clock=FakeClock(), observer=metrics)
    authorizer.refusal_log = RefusalLog(
        logging.getLogger("rng_service.service.auth"), monotonic=time.monotonic, interval=0.2
    )

    async def main() -> None:
        for i in range(50):
            with pytest.raises(Unauthenticated):
                authorizer.authorize("SpinRoulette", spin(), TlsContext(cn=f"stranger-{i}"))
            with pytest.raises(PermissionDenied):
                authorizer.authorize("SpinRoulette", spin("T9"), TlsContext(cn="game-1"))
        await asyncio.sleep(0.5)  # the interval ends: the counts are written

    with caplog.at_level(logging.WARNING, logger="rng_service.service.auth"):
        asyncio.run(main())
    events = [r.msg for r in caplog.records if isinstance(r.msg, dict)]
    assert [(e["event"], e["reason"]) for e in events] == [
        ("denied", "unconfigured_identity"),
        ("denied", "table"),
        ("denied_suppressed", "unconfigured_identity"),
        ("denied_suppressed", "table"),
    ]
    assert events[0]["identity"] == "stranger-0"
    assert events[2]["suppressed"] == events[3]["suppressed"] == 49
    assert events[2]["client"] == "unconfigured"
    assert events[3]["client"] == "game-1"
    unconfigured = {
        "method": "SpinRoulette",
        "reason": "unconfigured_identity",
        "role": "none",
        "client": "unconfigured",
    }
    table = {"method": "SpinRoulette", "reason": "table", "role": "game_server", "client": "game-1"}
    assert registry.get_sample_value("rng_auth_denials_total", unconfigured) == 50
    assert registry.get_sample_value("rng_auth_denials_total", table) == 50
