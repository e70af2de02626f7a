"""How the log writer forms a commit group (``writer.queue.gather_group``), on a fake queue and
clock: what queued while the previous group was committed joins at once; after a lone group
the writer adds no wait; after a group with company it waits (at most the group wait) for as
many requests as that group held, then takes arrivals until a lull with none; the size cap and
the stop marker end the group."""

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
    q: TimedQueue, *, last: int, max_group: int = 512, lull: float = LULL
) -> tuple[list[object], bool]:
    group, stop = gather_group(
        "r0",  # type: ignore[arg-type]
        q,
        max_group=max_group,
        last=last,
        wait=WAIT,
        lull=lull,
        clock=q.clock,
    )
    return list(group), stop


def _every(step: float, names: range, start: float = 0.0) -> list[tuple[float, object]]:
    """Arrivals ``step`` seconds apart, the first at ``start + step``."""
    return [(start + (i + 1) * step, f"r{n}") for i, n in enumerate(names)]


@pytest.mark.parametrize("last", [0, 1])
def test_at_idle_after_a_lone_group_a_request_never_waits(last: int) -> None:
    q = TimedQueue([], arrivals=[(0.0001, "r1")])
    group, stop = _gather(q, last=last)
    assert (group, stop, q.blocking_waits, q.now) == (["r0"], False, [], 0.0)


def test_what_queued_during_the_last_commit_joins_at_once() -> None:
    q = TimedQueue(["r1", "r2"], arrivals=[(0.0001, "r3")])
    group, _ = _gather(q, last=1)
    assert group == ["r0", "r1", "r2"]
    assert (q.blocking_waits, q.now) == ([], 0.0)


def test_after_a_group_of_four_it_closes_one_lull_after_the_fourth() -> None:
    # four callers in a loop: r1-r3 arrive 0.1 ms apart, then nobody (all are in the group)
    q = TimedQueue([], arrivals=_every(0.0001, range(1, 4)))
    group, _ = _gather(q, last=4)
    assert group == ["r0", "r1", "r2", "r3"]
    assert q.now == pytest.approx(0.0003 + LULL)  # long before the group wait
    assert q.blocking_waits[-1] == pytest.approx(LULL)


def test_below_the_last_group_size_a_lull_does_not_close_the_group() -> None:
    # r2 comes 0.8 ms after r1 (longer than the lull): the last group's callers are awaited
    q = TimedQueue([], arrivals=[(0.0001, "r1"), (0.0009, "r2"), (0.001, "r3")])
    group, _ = _gather(q, last=4)
    assert group == ["r0", "r1", "r2", "r3"]
    assert q.now == pytest.approx(0.001 + LULL)


def test_beyond_the_last_group_size_arrivals_keep_it_open_until_a_lull() -> None:
    q = TimedQueue(["r1"], arrivals=_every(0.0002, range(2, 9)))
    group, _ = _gather(q, last=2)
    assert group == [f"r{i}" for i in range(9)]
    assert q.now == pytest.approx(7 * 0.0002 + LULL)


def test_arrivals_closer_than_the_lull_keep_the_group_open_until_the_wait() -> None:
    # 32 callers trickling in every 0.1 ms: the group closes at the group wait
    q = TimedQueue([], arrivals=_every(0.0001, range(1, 32), start=-0.00005))
    group, _ = _gather(q, last=32)
    assert group == ["r0", *(f"r{i}" for i in range(1, 21))]
    assert q.now == pytest.approx(WAIT)


def test_a_lone_request_after_a_burst_waits_the_group_wait() -> None:
    # what the rule costs: the burst's callers do not come back, and the wait bounds it
    q = TimedQueue([], arrivals=[(0.003, "r1")])
    group, _ = _gather(q, last=32)
    assert group == ["r0"]
    assert q.now == pytest.approx(WAIT)


def test_a_lull_as_long_as_the_wait_waits_out_the_wait() -> None:
    # lull >= wait is the fixed wait: four callers in a loop wait the whole 2 ms
    q = TimedQueue([], arrivals=_every(0.0001, range(1, 4)))
    group, _ = _gather(q, last=4, lull=WAIT)
    assert group == ["r0", "r1", "r2", "r3"]
    assert q.now == pytest.approx(WAIT)


def test_a_group_holds_at_most_max_group() -> None:
    q = TimedQueue([f"r{i}" for i in range(1, 10)], arrivals=[(0.0001, "late")])
    group, _ = _gather(q, last=32, max_group=4)
    assert group == ["r0", "r1", "r2", "r3"]
    assert q.queued[0] == "r4"
    assert (q.blocking_waits, q.now) == ([], 0.0)


def test_the_stop_marker_ends_the_group_and_is_reported() -> None:
    q = TimedQueue(["r1", _STOP, "r2"])
    group, stop = _gather(q, last=4)
    assert (group, stop) == (["r0", "r1"], True)


def test_a_stop_marker_on_its_way_ends_the_wait() -> None:
    q = TimedQueue([], arrivals=[(0.0001, "r1"), (0.0002, _STOP), (0.0003, "r2")])
    group, stop = _gather(q, last=4)
    assert (group, stop, q.now) == (["r0", "r1"], True, 0.0002)
