"""How the log writer forms a commit group (``appender.gather_group``): whatever is queued
joins; after a group with company it waits (at most the group wait) for the requests on
their way; a lone request after a lone one never waits; the stop marker ends the group."""

from __future__ import annotations

import queue

from rng_service.writer.queue import STOP as _STOP
from rng_service.writer.queue import gather_group


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


def _gather(q: ScriptedQueue, company: bool, max_group: int = 512) -> tuple[list[object], bool]:
    return gather_group("r0", q, max_group=max_group, company=company, wait=0.002)  # type: ignore[arg-type]


def test_a_lone_request_after_a_lone_one_never_waits() -> None:
    q = ScriptedQueue([], later=["r1"])
    group, stop = _gather(q, company=False)
    assert (group, stop, q.blocking_waits) == (["r0"], False, [])


def test_queued_requests_join_without_waiting() -> None:
    q = ScriptedQueue(["r1", "r2"], later=["r3"])
    group, _ = _gather(q, company=False)
    assert group == ["r0", "r1", "r2"]
    assert q.blocking_waits == []


def test_after_a_group_with_company_it_waits_for_the_requests_on_their_way() -> None:
    q = ScriptedQueue(["r1"], later=["r2", "r3"])
    group, _ = _gather(q, company=True)
    assert group == ["r0", "r1", "r2", "r3"]
    # every wait is within the group wait (2 ms), and the last one found nothing
    assert len(q.blocking_waits) == 3
    assert all(0 < t <= 0.002 for t in q.blocking_waits)


def test_a_group_holds_at_most_max_group() -> None:
    q = ScriptedQueue([f"r{i}" for i in range(1, 10)])
    group, _ = _gather(q, company=True, max_group=4)
    assert group == ["r0", "r1", "r2", "r3"]
    assert q.ready[0] == "r4"


def test_the_stop_marker_ends_the_group_and_is_reported() -> None:
    q = ScriptedQueue(["r1", _STOP, "r2"])
    group, stop = _gather(q, company=True)
    assert (group, stop) == (["r0", "r1"], True)
