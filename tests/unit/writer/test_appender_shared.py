"""Several appenders (service replicas) sharing one store: one sequence, one tree, one answer
per request id whichever replica it reaches, and recovery from a commit of unknown outcome."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
from collections.abc import Callable

import pytest

from rng_service.clock import FakeClock
from rng_service.drbg import DeterministicGenerator
from rng_service.errors import AlreadyExists, IntegrityError, StorageUnavailable
from rng_service.log import merkle
from rng_service.log.entry import LogEntry
from rng_service.log.note import Checkpoint, parse_note, sign_note
from rng_service.log.receipt import verify_receipt
from rng_service.storage.base import AppendBatch, CheckpointRecord, LogStorage
from rng_service.storage.memory import MemoryStorage
from rng_service.writer.appender import Appender, AppendResult
from rng_service.writer.tree import MerkleTree
from tests.unit.writer.test_appender import SIGNER, request


class LostCommitStorage(MemoryStorage):
    """Stores the next batch, then reports the commit as failed: a connection lost during
    COMMIT, after the server made it durable."""

    def __init__(self) -> None:
        super().__init__()
        self.lose_next = False

    def sequence(self, build: Callable[[int], AppendBatch | None]) -> None:
        super().sequence(build)
        if self.lose_next:
            self.lose_next = False
            raise StorageUnavailable("connection lost during COMMIT; the outcome is unknown")


def replica(storage: LogStorage, seed: int, clock: FakeClock | None = None) -> Appender:
    appender = Appender(
        storage=storage,
        tree=MerkleTree.load(storage),
        generator=DeterministicGenerator(entropy_input=bytes([seed]) * 32, nonce=b"\x02" * 16),
        signer=SIGNER,
        origin="unit.example/log",
        clock=clock or FakeClock(),
        publish_interval_seconds=10,
    )
    appender.start()
    return appender


def result(appender: Appender, rid: str, **kw: object) -> AppendResult:
    return appender.submit(request(rid, **kw)).result(timeout=30)  # type: ignore[arg-type]


def test_replicas_share_one_sequence_and_tree() -> None:
    storage = MemoryStorage()
    replicas = [replica(storage, seed) for seed in (1, 2, 3)]
    per_thread, results = 40, []
    lock = threading.Lock()

    def client(k: int) -> None:
        for i in range(per_thread):
            r = result(replicas[(k + i) % 3], f"k{k}-{i}")
            with lock:
                results.append(r)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for a in replicas:
        a.stop(publish=False)
    total = 6 * per_thread
    assert sorted(r.receipt.index for r in results) == list(range(total))
    assert storage.tree_size() == total
    leaves = [e.leaf_hash for e in storage.entries(0, total)]
    for r in results:
        checked = verify_receipt(r.receipt, [SIGNER.verifier()])
        assert checked.entry == r.entry
        # each receipt's checkpoint is the root of the one shared log at its size
        cp = Checkpoint.parse(parse_note(r.receipt.checkpoint.encode()).text)
        assert cp.root_hash == merkle.root_from_leaf_hashes(leaves[: cp.size])
    # entries came from all three generators: the replicas really interleaved
    instances = {LogEntry.decode(e.data).generator.instance for e in storage.entries(0, total)}
    assert len(instances) == 3


def test_retry_on_another_replica_returns_the_same_receipt() -> None:
    storage = MemoryStorage()
    a, b = replica(storage, 1), replica(storage, 2)
    try:
        first = result(a, "spin-1")
        result(a, "spin-2")
        again = result(b, "spin-1")
        assert again.receipt == dataclasses.replace(first.receipt, replayed=True)
        assert again.entry == first.entry
        with pytest.raises(AlreadyExists, match="spin-1"):
            result(b, "spin-1", n=37)
        assert storage.tree_size() == 2
    finally:
        a.stop(publish=False)
        b.stop(publish=False)


def test_racing_retries_on_two_replicas_draw_once() -> None:
    storage = MemoryStorage()
    a, b = replica(storage, 1), replica(storage, 2)
    try:
        for i in range(25):
            barrier = threading.Barrier(2)

            def go(
                appender: Appender, rid: str = f"race-{i}", barrier: threading.Barrier = barrier
            ) -> AppendResult:
                barrier.wait()
                return result(appender, rid)

            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                ra, rb = pool.map(go, [a, b])
            assert ra.receipt.entry == rb.receipt.entry
            assert ra.receipt.index == rb.receipt.index
            assert ra.receipt.replayed != rb.receipt.replayed
        assert storage.tree_size() == 25
    finally:
        a.stop(publish=False)
        b.stop(publish=False)


def test_commit_of_unknown_outcome_is_recovered_by_the_retry() -> None:
    storage = LostCommitStorage()
    a = replica(storage, 1)
    try:
        storage.lose_next = True
        with pytest.raises(StorageUnavailable, match="unknown"):
            result(a, "lost")
        assert storage.tree_size() == 1  # it was stored after all
        assert a.tree_size == 0
        retried = result(a, "lost")  # the client retries with the same request id
        assert retried.receipt.replayed
        assert retried.receipt.index == 0
        assert verify_receipt(retried.receipt, [SIGNER.verifier()]).entry == retried.entry
        fresh = result(a, "next")
        assert fresh.receipt.index == 1
        assert a.tree_size == 2
    finally:
        a.stop(publish=False)


def test_sync_and_publish_cover_the_other_replicas_entries() -> None:
    storage = MemoryStorage()
    clock = FakeClock()
    a, b = replica(storage, 1, clock), replica(storage, 2, clock)
    try:
        for i in range(5):
            result(a, f"a{i}")
        assert b.tree_size == 0
        assert b.sync() == 5
        clock.advance(60)
        published = b.publish_checkpoint()
        assert published.size == 5
        cp = Checkpoint.parse(parse_note(published.note).text)
        leaves = [e.leaf_hash for e in storage.entries(0, 5)]
        assert cp.root_hash == merkle.root_from_leaf_hashes(leaves)
        assert result(b, "b0").receipt.index == 5
    finally:
        a.stop(publish=False)
        b.stop(publish=False)


def test_a_store_that_lost_entries_stops_appends() -> None:
    full = MemoryStorage()
    a = replica(full, 1)
    for i in range(3):
        result(a, f"x{i}")
    a.stop(publish=False)
    # The tree of 3 entries over a store that now holds none (restored from an old backup).
    shrunk = MemoryStorage()
    b = Appender(
        storage=shrunk,
        tree=MerkleTree(size=3, get_nodes=full.nodes),
        generator=DeterministicGenerator(entropy_input=b"\x05" * 32, nonce=b"\x02" * 16),
        signer=SIGNER,
        origin="unit.example/log",
        clock=FakeClock(),
    )
    b.start()
    try:
        with pytest.raises(StorageUnavailable, match="entries were lost"):
            result(b, "y")
        assert shrunk.tree_size() == 0
    finally:
        b.stop(publish=False)


class HookedStorage(MemoryStorage):
    """Runs ``before_latest`` (once) when the latest checkpoint is next read."""

    def __init__(self) -> None:
        super().__init__()
        self.before_latest: Callable[[], object] | None = None

    def latest_checkpoint(self) -> CheckpointRecord | None:
        hook, self.before_latest = self.before_latest, None
        if hook is not None:
            hook()
        return super().latest_checkpoint()


def test_a_checkpoint_another_replica_just_published_is_not_taken_for_lost_entries() -> None:
    storage = HookedStorage()
    clock = FakeClock()
    a = replica(storage, 1, clock)
    try:
        # B starts while A appends: B's tree is loaded, then A commits a group and publishes
        # its checkpoint before B reads the latest one.
        tree = MerkleTree.load(storage)
        result(a, "a0")
        assert storage.latest_checkpoint() is not None
        b = Appender(
            storage=storage,
            tree=tree,
            generator=DeterministicGenerator(entropy_input=b"\x02" * 32, nonce=b"\x02" * 16),
            signer=SIGNER,
            origin="unit.example/log",
            clock=clock,
        )
        b.start()
        try:
            assert b.tree_size == 1
            # B publishes: it syncs, then A appends and publishes before B reads the latest.
            clock.advance(60)
            storage.before_latest = lambda: result(a, "a1")
            published = b.publish_checkpoint()
            assert published.size == 2
            assert b.tree_size == 2
            assert result(b, "b0").receipt.index == 2
        finally:
            b.stop(publish=False)
    finally:
        a.stop(publish=False)


def test_a_published_checkpoint_beyond_the_store_still_stops_the_start() -> None:
    storage = MemoryStorage()
    a = replica(storage, 1)
    for i in range(3):
        result(a, f"x{i}")
    a.stop(publish=False)
    beyond = Checkpoint(origin="unit.example/log", size=5, root_hash=b"\x07" * 32)
    storage.add_checkpoint(CheckpointRecord(5, 2**62, sign_note(beyond.body(), [SIGNER])))
    b = Appender(
        storage=storage,
        tree=MerkleTree.load(storage),
        generator=DeterministicGenerator(entropy_input=b"\x05" * 32, nonce=b"\x02" * 16),
        signer=SIGNER,
        origin="unit.example/log",
        clock=FakeClock(),
    )
    with pytest.raises(IntegrityError, match=r"size 5 is beyond the stored tree of size 3"):
        b.start()


class LockWaitStorage(MemoryStorage):
    """The writers' lock is held elsewhere until ``release`` is set (another replica)."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()
        self.release = threading.Event()
        self.commits = 0

    def sequence(self, build: Callable[[int], AppendBatch | None]) -> None:
        self.waiting.set()
        assert self.release.wait(30)
        self.commits += 1
        super().sequence(build)


def test_requests_that_queue_while_waiting_for_the_lock_join_the_group() -> None:
    storage = LockWaitStorage()
    a = replica(storage, 1)
    try:
        first = a.submit(request("first"))
        assert storage.waiting.wait(30)  # the writer waits for the lock with a group of one
        later = [a.submit(request(f"later{i}")) for i in range(10)]
        storage.release.set()
        results = [f.result(timeout=30) for f in [first, *later]]
    finally:
        a.stop(publish=False)
    assert storage.commits == 1  # all eleven in the one transaction
    assert sorted(r.receipt.index for r in results) == list(range(11))
    assert {r.receipt.tree_size for r in results} == {11}
