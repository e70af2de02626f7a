"""StoreHealth: N failed commits in a row, the probe's schedule, its timeout, forwarding, and
the log writer's recovery from a lost store (down from the loss to the first commit after)."""

from __future__ import annotations

import threading
from typing import Any

from rng_service.clock import FakeClock
from rng_service.errors import StorageUnavailable
from rng_service.storage.memory import MemoryStorage
from rng_service.writer.store_health import (
    FAILURE_THRESHOLD,
    PROBE_INTERVAL_SECONDS,
    PROBE_META_KEY,
    StoreHealth,
)


class Recorder:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def committed(self, **kw: Any) -> None:
        self.calls.append(f"committed {kw['entries']}")

    def append_failed(self) -> None:
        self.calls.append("failed")

    def store_lost(self, *, reason: str) -> None:
        self.calls.append(f"lost {reason}")

    def ambiguous_commit(self, *, resolution: str, entries: int) -> None:
        self.calls.append(f"ambiguous {resolution} {entries}")

    def store_recovered(self, *, seconds: float) -> None:
        self.calls.append(f"recovered {seconds}")

    def integrity_error(self, method: str, check: str) -> None:
        self.calls.append(f"integrity {method} {check}")


class Probed(MemoryStorage):
    def __init__(self) -> None:
        super().__init__()
        self.failing = False
        self.gate: threading.Event | None = None

    def set_meta(self, key: str, value: bytes) -> None:
        if self.gate is not None:
            self.gate.wait(10)
        if self.failing:
            raise StorageUnavailable("disk full")
        super().set_meta(key, value)


def commit(health: StoreHealth) -> None:
    health.committed(
        entries=1, replays_by_kind={}, kinds={}, seconds=0.001, tree_size=1, published=False
    )


def test_n_failed_commits_in_a_row_mark_it_down_and_a_commit_brings_it_up() -> None:
    assert FAILURE_THRESHOLD == 3  # documented in docs/operations/running.md
    forward = Recorder()
    health = StoreHealth(MemoryStorage(), clock=FakeClock(), forward=forward)
    health.append_failed()
    health.append_failed()
    commit(health)  # a success in between: the count starts again
    health.append_failed()
    health.append_failed()
    assert health.status().state == "up"
    health.append_failed()
    status = health.status()
    assert (status.state, status.reason) == ("down", "3 group commits failed in a row")
    commit(health)
    assert health.status().state == "up"
    assert forward.calls == ["failed"] * 2 + ["committed 1"] + ["failed"] * 3 + ["committed 1"]


def test_probe_schedule_and_what_it_writes() -> None:
    clock = FakeClock()
    storage = Probed()
    health = StoreHealth(storage, clock=clock)
    assert not health.probe_due()  # just opened and read at start-up
    clock.advance(PROBE_INTERVAL_SECONDS - 0.1)
    commit(health)
    clock.advance(0.2)
    assert not health.probe_due()  # a commit succeeded within the interval: no probe needed
    clock.advance(PROBE_INTERVAL_SECONDS)
    assert health.probe_due()  # idle for an interval: probe
    storage.failing = True
    assert not health.probe()
    status = health.status()
    assert status.state == "down"
    assert "store probe failed: disk full" in status.reason
    assert not health.probe_due()  # not before another interval
    clock.advance(PROBE_INTERVAL_SECONDS)
    assert health.probe_due()
    storage.failing = False
    assert health.probe()
    assert health.status().state == "up"
    assert storage.get_meta(PROBE_META_KEY) == str(clock.now_ns()).encode()
    status = health.status()
    assert (status.probes, status.probe_failures) == (2, 1)


def test_a_probe_that_hangs_marks_it_down() -> None:
    clock = FakeClock()
    storage = Probed()
    storage.gate = threading.Event()
    health = StoreHealth(storage, clock=clock, probe_timeout_seconds=10)
    clock.advance(PROBE_INTERVAL_SECONDS)
    prober = threading.Thread(target=health.probe)
    prober.start()
    try:
        for _ in range(1000):  # wait (bounded) until the probe is inside set_meta
            if health.status().probes == 1:
                break
            threading.Event().wait(0.01)
        assert not health.probe_due()  # one probe at a time
        assert health.status().state == "up"
        clock.advance(10.5)
        status = health.status()
        assert status.state == "down"
        assert "has not answered for over 10 s" in status.reason
    finally:
        storage.gate.set()
        prober.join(10)
    assert health.status().state == "up"  # it answered in the end


def test_down_from_a_lost_store_until_the_first_commit_after_the_recovery() -> None:
    clock = FakeClock()
    forward = Recorder()
    storage = Probed()
    health = StoreHealth(storage, clock=clock, forward=forward)
    health.store_lost(reason="connection lost during COMMIT")
    status = health.status()
    assert (status.state, status.reason) == ("down", "connection lost during COMMIT")
    assert status.consecutive_failures == 0  # at once, not after N failed commits
    clock.advance(PROBE_INTERVAL_SECONDS * 3)
    assert not health.probe_due()  # the writer polls the store itself meanwhile
    assert health.probe()  # a probe that ran anyway (the monitor's) does not end it,
    commit(health)  # nor does the commit of the group the recovery resolved as stored
    assert health.status().reason == "connection lost during COMMIT"
    health.ambiguous_commit(resolution="stored", entries=4)
    health.store_recovered(seconds=1.5)
    status = health.status()
    assert status.state == "down"  # recovered: down until a commit or probe succeeds
    assert "no commit or probe has succeeded since" in status.reason
    assert health.probe_due()  # at once, so that an idle instance is SERVING again soon
    assert health.probe()
    assert health.status().state == "up"
    health.store_lost(reason="again")
    health.store_recovered(seconds=0.1)
    commit(health)  # or the first commit
    assert health.status().state == "up"
    assert forward.calls[:4] == [
        "lost connection lost during COMMIT",
        "committed 1",
        "ambiguous stored 4",
        "recovered 1.5",
    ]


def test_an_edited_row_is_forwarded_to_the_metrics_and_leaves_health_up() -> None:
    """The sequencer's refusal of a request relying on an edited row reaches
    rng_log_integrity_errors_total through this observer; the store can still commit, so
    health stays up (other tables are served)."""
    forward = Recorder()
    health = StoreHealth(MemoryStorage(), clock=FakeClock(), forward=forward)
    health.integrity_error("sequencer", "columns")
    assert forward.calls == ["integrity sequencer columns"]
    assert health.status().state == "up"
