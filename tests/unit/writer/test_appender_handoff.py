"""The hand-off between callers and the log writer: the per-request outcome slots (``_Pending``),
the unbounded C queue with the appender's own ``max_queue`` bound, and ``stop()``.

Every request is settled exactly once, whichever way it ends (a new entry, a follower of the same
request earlier in the group, a replay of a stored entry, a conflict, a failed draw, a failed
commit, the writer's catch-all error path), for the event loop's waiters of ``submit_async`` and
the ``concurrent.futures`` futures of ``submit`` alike.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
from collections.abc import Callable, Mapping

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.clock import FakeClock
from rng_service.drbg import DeterministicGenerator
from rng_service.errors import (
    AlreadyExists,
    GeneratorUnavailable,
    Overloaded,
    StorageUnavailable,
    Unavailable,
)
from rng_service.log.entry import JsonValue
from rng_service.log.note import Ed25519NoteSigner
from rng_service.sampling import RandomSource
from rng_service.storage.base import AppendBatch
from rng_service.writer.appender import Appender, AppendResult, DrawRequest
from rng_service.writer.queue import Pending as _Pending
from rng_service.writer.tree import MerkleTree
from tests.fakes import FlakyStorage

SIGNER = Ed25519NoteSigner("unit-log", Ed25519PrivateKey.from_private_bytes(bytes(range(32))))


def draw_below(n: int, src: RandomSource) -> Mapping[str, JsonValue]:
    return {"value": src.randbelow(n)}


def broken(src: RandomSource) -> Mapping[str, JsonValue]:
    raise GeneratorUnavailable("generator in its error state")


def request(rid: str, *, n: int = 38, fail: bool = False) -> DrawRequest:
    return DrawRequest(
        client_id="c",
        request_id=rid,
        table_id="T",
        round_id=f"R-{rid}",
        session_id="",
        kind="test_draw",
        params={"n": n},
        draw=broken if fail else functools.partial(draw_below, n),
    )


class BrokenStorage(FlakyStorage):
    """Storage whose ``sequence`` fails with an unexpected error (the writer's catch-all)."""

    def sequence(self, build: Callable[[int], AppendBatch | None]) -> None:
        build(self.tree_size())
        raise RuntimeError("injected: a bug")


def appender(storage: FlakyStorage, *, max_queue: int = 10_000) -> Appender:
    return Appender(
        storage=storage,
        tree=MerkleTree.load(storage),
        generator=DeterministicGenerator(entropy_input=b"\x01" * 32, nonce=b"\x02" * 16),
        signer=SIGNER,
        origin="unit.example/log",
        clock=FakeClock(),
        max_queue=max_queue,
    )


def stored(storage: FlakyStorage, *rids: str) -> None:
    a = appender(storage)
    a.start()
    try:
        for rid in rids:
            a.submit(request(rid)).result(timeout=30)
    finally:
        a.stop(publish=False)


# One group with every kind of outcome, in this order; "old" is stored beforehand.
GROUP = [
    ("new", request("a")),
    ("follower", request("a")),
    ("conflict", request("a", n=37)),
    ("replay", request("old")),
    ("stored conflict", request("old", n=37)),
    ("draw error", request("bad", fail=True)),
    ("new", request("b")),
]


def run_group_async(
    a: Appender, sync_too: bool = True
) -> tuple[list[object], list[concurrent.futures.Future[AppendResult]], bool]:
    """Queues GROUP (before the writer starts, so it is one group) through ``submit_async``
    and, if ``sync_too``, once more through ``submit``; plus a waiter cancelled at once."""

    async def main() -> tuple[list[object], list[concurrent.futures.Future[AppendResult]], bool]:
        waiters = [a.submit_async(r) for _, r in GROUP]
        futures = [a.submit(r) for _, r in GROUP] if sync_too else []
        gone = a.submit_async(request("gone"))
        gone.cancel()  # the caller went away: skipped when settling, logged anyway
        a.start()
        try:
            results = await asyncio.gather(*waiters, return_exceptions=True)
            await asyncio.sleep(0.05)  # the cancelled waiter's settling has run by now
        finally:
            a.stop(publish=False)
        return list(results), futures, gone.cancelled()

    return asyncio.run(main())


def outcome(f: concurrent.futures.Future[AppendResult]) -> object:
    error = f.exception(timeout=0)
    return error if error is not None else f.result(timeout=0)


def test_every_kind_of_outcome_reaches_waiters_and_futures(
    caplog: pytest.LogCaptureFixture,
) -> None:
    storage = FlakyStorage()
    stored(storage, "old")
    with caplog.at_level(logging.ERROR, logger="rng_service.writer.appender"):
        results, futures, gone_cancelled = run_group_async(appender(storage))
    assert not caplog.records  # no settling error went to the writer's catch-all
    assert gone_cancelled
    # the futures' copies of the requests come later in the same group: followers
    for got, second in ((results, False), ([outcome(f) for f in futures], True)):
        for (kind, _), r in zip(GROUP, got, strict=True):
            if kind in ("conflict", "stored conflict"):
                assert isinstance(r, AlreadyExists), (kind, r)
            elif kind == "draw error":
                assert isinstance(r, GeneratorUnavailable), (kind, r)
            else:
                assert isinstance(r, AppendResult), (kind, r)
                assert r.receipt.replayed == (second or kind in ("follower", "replay")), kind
    for i, (kind, _) in enumerate(GROUP):
        r = results[i]
        if isinstance(r, AppendResult):
            assert futures[i].result().receipt.entry == r.receipt.entry, kind
    assert futures[1].result().receipt.entry == futures[0].result().receipt.entry
    assert storage.entry_by_request("c", "gone") is not None
    # "old", then "a", "b" and "gone" once each
    assert storage.tree_size() == 4


def test_failed_commit_settles_every_waiter() -> None:
    storage = FlakyStorage()
    stored(storage, "old")
    storage.failing = True
    results, futures, _ = run_group_async(appender(storage))
    for got in (results, [outcome(f) for f in futures]):
        for (kind, _), r in zip(GROUP, got, strict=True):
            if kind == "replay":  # a stored entry stands on its own
                assert isinstance(r, AppendResult)
                assert r.receipt.replayed
            elif kind in ("conflict", "stored conflict"):
                assert isinstance(r, AlreadyExists), kind
            elif kind == "draw error":
                assert isinstance(r, GeneratorUnavailable)
            else:
                assert isinstance(r, StorageUnavailable), (kind, r)
    assert storage.tree_size() == 1


def test_writer_catch_all_settles_every_waiter(caplog: pytest.LogCaptureFixture) -> None:
    storage = BrokenStorage()
    with caplog.at_level(logging.ERROR, logger="rng_service.writer.appender"):
        results, futures, _ = run_group_async(appender(storage))
    assert "log writer failed" in caplog.text
    for r in [*results, *(outcome(f) for f in futures)]:
        assert isinstance(r, Unavailable)
        assert "internal error in the log writer" in str(r)


def test_a_request_is_settled_once() -> None:
    p = _Pending(request("x"), None, concurrent.futures.Future())
    assert not p.done
    p.set_exception(StorageUnavailable("down"))
    assert p.done
    with pytest.raises(concurrent.futures.InvalidStateError):
        p.set_result(None)  # type: ignore[arg-type]
    with pytest.raises(concurrent.futures.InvalidStateError):
        p.set_exception(StorageUnavailable("again"))
    assert p.future is not None
    assert isinstance(p.future.exception(timeout=0), StorageUnavailable)
    assert isinstance(p.error, StorageUnavailable)
    assert p.result is None


def test_full_queue_is_overloaded_until_the_writer_drains_it() -> None:
    storage = FlakyStorage()
    a = appender(storage, max_queue=3)

    async def main() -> None:
        accepted = [
            asyncio.wrap_future(a.submit(request("s0"))),
            a.submit_async(request("s1")),
            asyncio.wrap_future(a.submit(request("s2"))),
        ]
        with pytest.raises(Overloaded) as full:
            a.submit(request("s3"))
        assert full.value.cause == "queue_full"  # the service's side, not a client's rate
        with pytest.raises(Overloaded):
            a.submit_async(request("s3"))
        a.start()
        try:
            results = await asyncio.gather(*accepted)
            assert [r.receipt.index for r in results] == [0, 1, 2]
            # drained: accepted again
            assert (await a.submit_async(request("s4"))).receipt.index == 3
        finally:
            a.stop(publish=False)

    asyncio.run(main())
    assert storage.tree_size() == 4
    assert storage.entry_by_request("c", "s3") is None


def test_stop_finishes_everything_submitted_before_it() -> None:
    storage = FlakyStorage()
    a = appender(storage)

    async def main() -> None:
        a.start()
        waiters = [a.submit_async(request(f"w{i}")) for i in range(100)]
        futures = [a.submit(request(f"f{i}")) for i in range(100)]
        a.stop(publish=False)  # blocks the loop: the writer settles the waiters afterwards
        assert all(f.done() for f in futures)
        assert [f.result().receipt.index for f in futures] == list(range(100, 200))
        results = await asyncio.gather(*waiters)
        assert [r.receipt.index for r in results] == list(range(100))
        with pytest.raises(Unavailable, match="stopped"):
            a.submit_async(request("late"))
        with pytest.raises(Unavailable, match="stopped") as late:
            a.submit(request("late"))
        assert late.value.cause == "shutting_down"

    asyncio.run(main())
    assert storage.tree_size() == 200
