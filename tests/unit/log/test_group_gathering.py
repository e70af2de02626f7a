"""How the log writer forms a commit group (``appender.gather_group``): whatever is queued
joins; under load it waits for the last group's callers, and no longer than it takes them to
arrive; a lone request never waits; the stop marker ends the group."""

from __future__ import annotations

import queue

from rng_service.log.appender import _STOP, gather_group


class ScriptedQueue:
    """A queue holding ``ready`` items now; a blocking ``get`` records its timeout and then
    hands out the next of ``later`` (items that would arrive while the writer waits), or
    raises ``queue.Empty`` as a timed-out get does."""

    def __init__(self, ready: list[object], later: list[object] | None = None) -> None:
        self.ready = list(ready)
        self.later = list(later or [])
        self.blocking_waits: list[float] = []

    def get_nowait(self) -> object:
        if not self.ready:
            raise queue.Empty
        return self.ready.pop(0)

    def get(self, block: bool = True, timeout: float | None = None) -> object:
        if self.ready:
            return self.ready.pop(0)
        assert timeout is not None
        assert timeout > 0
        self.blocking_waits.append(timeout)
        if not self.later:
            raise queue.Empty
        return self.later.pop(0)


def _gather(q: ScriptedQueue, last_group: int, max_group: int = 512) -> tuple[list[object], bool]:
    return gather_group("r0", q, max_group=max_group, last_group=last_group, wait=0.002)  # type: ignore[arg-type]


def test_a_lone_request_never_waits() -> None:
    q = ScriptedQueue([], later=["r1"])
    group, stop = _gather(q, last_group=1)
    assert (group, stop, q.blocking_waits) == (["r0"], False, [])


def test_queued_requests_join_without_waiting() -> None:
    q = ScriptedQueue(["r1", "r2"], later=["r3"])
    group, _ = _gather(q, last_group=0)
    assert group == ["r0", "r1", "r2"]
    assert q.blocking_waits == []


def test_under_load_it_waits_for_the_last_groups_callers() -> None:
    # The last group held 4: two more are on their way and are waited for (at most 2 ms).
    q = ScriptedQueue(["r1"], later=["r2", "r3", "r4"])
    group, _ = _gather(q, last_group=4)
    assert group == ["r0", "r1", "r2", "r3"]
    assert len(q.blocking_waits) == 2
    assert all(0 < t <= 0.002 for t in q.blocking_waits)


def test_it_stops_waiting_once_the_last_groups_size_is_back() -> None:
    # Four callers in a loop: once four requests are in, the group commits at once instead
    # of waiting out the 2 ms for a fifth; what is already queued still joins.
    q = ScriptedQueue(["r1", "r2", "r3"], later=["late"])
    group, _ = _gather(q, last_group=4)
    assert group == ["r0", "r1", "r2", "r3"]
    assert q.blocking_waits == []
    q = ScriptedQueue(["r1", "r2", "r3", "r4", "r5"], later=["late"])
    group, _ = _gather(q, last_group=4)
    assert group == ["r0", "r1", "r2", "r3", "r4", "r5"]
    assert q.blocking_waits == []


def test_the_wait_ends_when_nothing_more_arrives() -> None:
    q = ScriptedQueue([], later=["r1"])
    group, _ = _gather(q, last_group=8)
    assert group == ["r0", "r1"]
    assert len(q.blocking_waits) == 2


def test_a_group_holds_at_most_max_group() -> None:
    q = ScriptedQueue([f"r{i}" for i in range(1, 10)])
    group, _ = _gather(q, last_group=8, max_group=4)
    assert group == ["r0", "r1", "r2", "r3"]
    assert q.ready[0] == "r4"


def test_the_stop_marker_ends_the_group_and_is_reported() -> None:
    q = ScriptedQueue(["r1", _STOP, "r2"])
    group, stop = _gather(q, last_group=4)
    assert (group, stop) == (["r0", "r1"], True)
