"""How the log writer forms a commit group (``writer.queue.gather_group``), on a fake queue and
clock: what queued while the previous group was committed joins at once; a writer that was
idle adds no wait after a lone group; after a group with company it takes the requests on
their way until a lull with none arriving, or the group wait, or the size cap; the stop marker
ends the group."""

from __future__ import annotations

import queue
from collections.abc import Sequence

import pytest

from rng_service.writer.queue import STOP as _STOP
from rng_service.writer.queue import gather_group

WAIT = 0.002
LULL = 0.0003


class TimedQueue:
    """A writer queue on a fake clock: ``queued`` items are there now; each of ``arrivals``
    ``(at, item)`` is put at time ``at`` (seconds). A blocking ``get`` moves the clock to the
    next arrival within its timeout, or by the whole timeout and raises ``queue.Empty``, as a
    timed-out get does; every blocking wait is recorded."""

    def __init__(self, queued: list[object], arrivals: Sequence[tuple[float, object]] = ()) -> None:
        self.now = 0.0
        self.queued = list(queued)
        self.arrivals = sorted(arrivals, key=lambda a: a[0])
        self.blocking_waits: list[float] = []

    def clock(self) -> float:
        return self.now

    def _arrived(self) -> None:
        while self.arrivals and self.arrivals[0][0] <= self.now:
            self.queued.append(self.arrivals.pop(0)[1])

    def get_nowait(self) -> object:
        self._arrived()
        if not self.queued:
            raise queue.Empty
        return self.queued.pop(0)

    def get(self, block: bool = True, timeout: float | None = None) -> object:
        self._arrived()
        if self.queued:
            return self.queued.pop(0)
        assert timeout is not None
        assert timeout > 0
        self.blocking_waits.append(timeout)
        if self.arrivals and self.arrivals[0][0] <= self.now + timeout:
            self.now = self.arrivals[0][0]
            return self.get_nowait()
        self.now += timeout
        raise queue.Empty


def _gather(
    q: TimedQueue, *, company: bool, max_group: int = 512, lull: float = LULL
) -> tuple[list[object], bool]:
    group, stop = gather_group(
        "r0",  # type: ignore[arg-type]
        q,
        max_group=max_group,
        company=company,
        wait=WAIT,
        lull=lull,
        clock=q.clock,
    )
    return list(group), stop


def test_at_idle_a_lone_request_after_a_lone_one_never_waits() -> None:
    q = TimedQueue([], arrivals=[(0.0001, "r1")])
    group, stop = _gather(q, company=False)
    assert (group, stop, q.blocking_waits, q.now) == (["r0"], False, [], 0.0)


def test_what_queued_during_the_last_commit_joins_at_once() -> None:
    q = TimedQueue(["r1", "r2"], arrivals=[(0.0001, "r3")])
    group, _ = _gather(q, company=False)
    assert group == ["r0", "r1", "r2"]
    assert (q.blocking_waits, q.now) == ([], 0.0)


def test_after_company_it_takes_arrivals_until_a_lull() -> None:
    # four callers in a loop: r1-r3 arrive 0.1 ms apart, then nobody (all are in the group)
    q = TimedQueue([], arrivals=[(0.0001, "r1"), (0.0002, "r2"), (0.0003, "r3")])
    group, _ = _gather(q, company=True)
    assert group == ["r0", "r1", "r2", "r3"]
    # closed one lull after the last arrival, long before the group wait
    assert q.now == pytest.approx(0.0003 + LULL)
    assert q.blocking_waits[-1] == LULL


def test_arrivals_closer_than_the_lull_keep_the_group_open_until_the_wait() -> None:
    # 32 callers trickling in every 0.1 ms: the group closes at the group wait
    q = TimedQueue([], arrivals=[(i * 0.0001 - 0.00005, f"r{i}") for i in range(1, 32)])
    group, _ = _gather(q, company=True)
    assert group == ["r0", *(f"r{i}" for i in range(1, 21))]
    assert q.now == pytest.approx(WAIT)
    assert all(0 < t <= LULL for t in q.blocking_waits)


def test_a_lull_as_long_as_the_wait_waits_out_the_wait() -> None:
    # lull >= wait is the fixed wait: four callers in a loop wait the whole 2 ms
    q = TimedQueue([], arrivals=[(0.0001, "r1"), (0.0002, "r2"), (0.0003, "r3")])
    group, _ = _gather(q, company=True, lull=WAIT)
    assert group == ["r0", "r1", "r2", "r3"]
    assert q.now == pytest.approx(WAIT)


def test_a_group_holds_at_most_max_group() -> None:
    q = TimedQueue([f"r{i}" for i in range(1, 10)], arrivals=[(0.0001, "late")])
    group, _ = _gather(q, company=True, max_group=4)
    assert group == ["r0", "r1", "r2", "r3"]
    assert q.queued[0] == "r4"
    assert (q.blocking_waits, q.now) == ([], 0.0)


def test_the_stop_marker_ends_the_group_and_is_reported() -> None:
    q = TimedQueue(["r1", _STOP, "r2"])
    group, stop = _gather(q, company=True)
    assert (group, stop) == (["r0", "r1"], True)


def test_a_stop_marker_on_its_way_ends_the_wait() -> None:
    q = TimedQueue([], arrivals=[(0.0001, "r1"), (0.0002, _STOP), (0.0003, "r2")])
    group, stop = _gather(q, company=True)
    assert (group, stop, q.now) == (["r0", "r1"], True, 0.0002)
