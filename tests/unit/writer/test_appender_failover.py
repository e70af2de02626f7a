"""The log writer survives the loss of its store without a restart (docs/operations/postgresql.md,
"Failover"): a commit whose outcome is unknown is resolved from the store reached next, a store
that lacks acknowledged entries is refused, replicas that reconnect at different moments keep
one sequence, and health follows.

The store is :class:`tests.fakes.ConnectedStore`: MemoryStorage servers behind a connection the
test loses, restores or points at another server (a promoted standby), raising the errors the
PostgreSQL driver raises (StoreConnectionLost, CommitUnknown). Known answers come from the
stored entries themselves (RFC 6962 roots computed by ``merkle.root_from_leaf_hashes``, notes
checked with the verifier key), never from the writer's own tree.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from rng_service.clock import FakeClock
from rng_service.drbg import DeterministicGenerator
from rng_service.errors import StorageUnavailable
from rng_service.log import merkle
from rng_service.log.note import Checkpoint, open_note
from rng_service.log.receipt import verify_receipt
from rng_service.metrics import RESOLUTIONS as METRIC_RESOLUTIONS
from rng_service.storage.memory import MemoryStorage
from rng_service.writer import recovery as recovery_module
from rng_service.writer.appender import RESOLUTIONS, Appender, AppendResult
from rng_service.writer.store_health import StoreHealth
from rng_service.writer.tree import MerkleTree
from tests.fakes import ConnectedStore, copy_of_prefix
from tests.unit.writer.test_appender import SIGNER, request


class Events:
    """The observer the store's health forwards to (the metrics, in the service)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.lock = threading.Lock()

    def committed(self, **kw: Any) -> None:
        with self.lock:
            self.calls.append(("committed", kw["entries"]))

    def append_failed(self) -> None:
        with self.lock:
            self.calls.append(("failed", None))

    def store_lost(self, *, reason: str) -> None:
        with self.lock:
            self.calls.append(("lost", reason))

    def ambiguous_commit(self, *, resolution: str, entries: int) -> None:
        with self.lock:
            self.calls.append(("ambiguous", (resolution, entries)))

    def store_recovered(self, *, seconds: float) -> None:
        with self.lock:
            self.calls.append(("recovered", seconds))

    def integrity_error(self, method: str, check: str) -> None:
        with self.lock:
            self.calls.append(("integrity", (method, check)))

    def of(self, kind: str) -> list[Any]:
        with self.lock:
            return [value for k, value in self.calls if k == kind]


def writer(
    store: Any, seed: int, *, publish_every_group: bool = False, events: Events | None = None
) -> tuple[Appender, StoreHealth]:
    health = StoreHealth(store, clock=FakeClock(), forward=events or Events())
    appender = Appender(
        storage=store,
        tree=MerkleTree.load(store),
        generator=DeterministicGenerator(entropy_input=bytes([seed]) * 32, nonce=b"\x02" * 16),
        signer=SIGNER,
        origin="unit.example/log",
        clock=FakeClock(),
        publish_interval_seconds=0 if publish_every_group else 3600,
        observer=health,
    )
    return appender, health


def wait_until(predicate: Callable[[], object], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def result(appender: Appender, rid: str) -> AppendResult:
    return appender.submit(request(rid)).result(timeout=30)


def logged(server: MemoryStorage, rid: str) -> bool:
    return server.entry_by_request("c", rid) is not None


def checked_against(server: MemoryStorage, results: list[AppendResult]) -> None:
    """Every receipt verifies with the key, and its checkpoint's root is the root of the
    server's stored leaves at that size."""
    leaves = [e.leaf_hash for e in server.entries(0, server.tree_size())]
    for r in results:
        checked = verify_receipt(r.receipt, [SIGNER.verifier()])
        assert checked.checkpoint.root_hash == merkle.root_from_leaf_hashes(
            leaves[: r.receipt.tree_size]
        )
        assert server.entries(r.receipt.index, r.receipt.index + 1)[0].data == r.receipt.entry


def seeded(n: int) -> MemoryStorage:
    """A primary holding ``n`` entries and a published checkpoint of them."""
    server = MemoryStorage()
    first, _ = writer(server, 9, publish_every_group=True)
    first.start()
    for i in range(n):
        result(first, f"before{i}")
    first.stop(publish=False)
    return server


def test_the_two_resolution_vocabularies_agree() -> None:
    # rng_service.metrics may not import the log layer, so it keeps its own copy.
    assert METRIC_RESOLUTIONS == RESOLUTIONS


def test_a_commit_lost_but_stored_gives_its_callers_their_outcomes() -> None:
    """The connection breaks during COMMIT of a group the server made durable: the callers
    wait (the writer holds the group) and, once the store can be read, get their outcomes and
    receipts, the checkpoint note the very one the group published; meanwhile other requests
    are refused at once, and health is down from the loss until the first commit after it."""
    primary = seeded(5)
    conn = ConnectedStore(primary)
    events = Events()
    a, health = writer(conn, 1, publish_every_group=True, events=events)
    conn.lose_next_commit(stored=True)
    futures = [a.submit(request(f"amb{i}")) for i in range(4)]  # one group: queued first
    a.start()
    try:
        wait_until(lambda: conn.calls_while_down >= 3, "the writer to poll the lost store")
        assert "connection was lost" in a.recovering
        assert not any(f.done() for f in futures), "the group is held until it is resolved"
        started = time.monotonic()
        with pytest.raises(StorageUnavailable, match="nothing was drawn or logged: retry"):
            a.submit(request("during"))
        assert time.monotonic() - started < 0.5  # refused at once, not queued
        assert health.status().state == "down"
        assert "connection was lost" in health.status().reason
        assert health.probe_due() is False  # the writer polls the store itself meanwhile

        conn.down = False
        results = [f.result(timeout=30) for f in futures]
        assert [r.receipt.index for r in results] == [5, 6, 7, 8]
        assert {r.receipt.tree_size for r in results} == {9}
        assert not any(r.receipt.replayed for r in results)
        published = primary.latest_checkpoint()
        assert published is not None
        assert published.size == 9
        assert {r.receipt.checkpoint for r in results} == {published.note.decode()}
        checked_against(primary, results)
        assert events.of("ambiguous") == [("stored", 4)]
        assert not logged(primary, "during")

        wait_until(lambda: not a.recovering, "the recovery to end")
        assert len(events.of("recovered")) == 1
        # Down until a commit (or probe) succeeds after the recovery; a probe is due at once.
        assert health.status().state == "down"
        assert health.probe_due() is True
        assert result(a, "after").receipt.index == 9
        assert health.status().state == "up"
    finally:
        a.stop(publish=False)


def test_a_commit_the_promoted_standby_lacks_fails_its_callers_and_draws_once_on_retry() -> None:
    """The dead primary stored the group but its standby never received it: after the
    failover the callers get UNAVAILABLE with nothing logged, and their retries draw once."""
    primary = seeded(5)
    standby = copy_of_prefix(primary, 5)
    conn = ConnectedStore(primary)
    events = Events()
    a, _ = writer(conn, 2, events=events)
    conn.lose_next_commit(stored=True)  # on the primary only
    futures = [a.submit(request(f"amb{i}")) for i in range(3)]
    a.start()
    try:
        wait_until(lambda: conn.calls_while_down >= 2, "the writer to poll the lost store")
        conn.fail_over(standby)
        conn.down = False
        for f in futures:
            with pytest.raises(StorageUnavailable, match="does not hold it: nothing was logged"):
                f.result(timeout=30)
        assert events.of("ambiguous") == [("not_stored", 3)]
        assert standby.tree_size() == 5
        retried = [result(a, f"amb{i}") for i in range(3)]
        assert [r.receipt.index for r in retried] == [5, 6, 7]
        assert not any(r.receipt.replayed for r in retried)  # drawn now, for the first time
        again = [result(a, f"amb{i}") for i in range(3)]
        assert [r.receipt.entry for r in again] == [r.receipt.entry for r in retried]
        assert all(r.receipt.replayed for r in again)
        checked_against(standby, retried)
        assert standby.tree_size() == 8
    finally:
        a.stop(publish=False)


def test_a_connection_lost_before_commit_fails_the_group_at_once_and_recovers() -> None:
    primary = seeded(2)
    conn = ConnectedStore(primary)
    events = Events()
    a, _ = writer(conn, 3, events=events)
    a.start()
    try:
        conn.down = True
        with pytest.raises(StorageUnavailable, match="connection to the store is lost"):
            result(a, "x")
        conn.down = False
        wait_until(lambda: not a.recovering, "the recovery")
        assert events.of("ambiguous") == []  # nothing could have been stored
        assert result(a, "x").receipt.index == 2
        assert len(events.of("recovered")) == 1
    finally:
        a.stop(publish=False)


def test_a_standby_lacking_acknowledged_entries_is_refused_until_the_log_is_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An asynchronous standby promoted without the last acknowledged entries: the writer
    refuses it, says so, and appends nothing, even once other writers made it longer than the
    log it saw (other entries at the same indices); when the full log is back it resumes."""
    monkeypatch.setattr(recovery_module, "DIVERGED_RETRY_SECONDS", 0.02)
    primary = MemoryStorage()
    conn = ConnectedStore(primary)
    events = Events()
    a, health = writer(conn, 4, events=events)
    a.start()
    try:
        acked = [result(a, f"ok{i}") for i in range(6)]
        standby = copy_of_prefix(primary, 3)  # it lagged: entries 3-5 never reached it
        conn.lose_next_commit(stored=True)
        lost = a.submit(request("lost"))
        wait_until(lambda: conn.calls_while_down >= 1, "the writer to lose the primary")
        conn.fail_over(standby)
        conn.down = False
        with pytest.raises(StorageUnavailable, match="may or may not be logged"):
            lost.result(timeout=30)
        # the caller's answer may come a moment before the writer states why (a loaded CI)
        wait_until(lambda: "refusing to sign a fork" in a.recovering, "the refusal")
        wait_until(
            lambda: "holds 3 entries but this service has seen 6" in health.status().reason,
            "health to name the diverged store",
        )
        with pytest.raises(StorageUnavailable, match="diverged"):
            a.submit(request("refused"))
        assert events.of("ambiguous") == [("unresolved", 1)]

        # Another writer (a replica that never saw entries 3-5) appends to the standby: first
        # as many entries as this writer has seen, then more. Other entries at the same
        # indices: refused at either size, and nothing appended.
        other, _ = writer(standby, 5)
        other.start()
        polled = standby.tree_size
        reads: list[int] = []
        monkeypatch.setattr(standby, "tree_size", lambda: reads.append(1) or polled())
        for batch, size in ((range(3), 6), (range(3, 6), 9)):
            for i in batch:
                result(other, f"other{i}")
            assert polled() == size
            reads.clear()
            wait_until(lambda: len(reads) >= 3, "the writer to look at the store again")
            assert "Merkle node" in a.recovering
            assert polled() == size
        other.stop(publish=False)

        conn.fail_over(primary)  # the operator brings the full log back
        wait_until(lambda: not a.recovering, "the writer to resume on the full log")
        assert result(a, "lost").receipt.replayed  # it was stored on the primary
        fresh = result(a, "after")
        assert fresh.receipt.index == 7
        checked_against(primary, [*acked, fresh])
    finally:
        a.stop(publish=False)


def test_a_writer_whose_store_changed_server_silently_checks_its_tree_first() -> None:
    """The driver reconnected by itself while this writer was idle (no call failed), to a
    standby that lacked the last 3 acknowledged entries and to which another writer has
    appended 3 others since: the store has exactly as many entries as this writer has seen.
    The next group checks the tree first (the server changed), refuses the store and appends
    nothing; on the same server again it appends at once, without a check."""
    primary = MemoryStorage()
    conn = ConnectedStore(primary)
    events = Events()
    a, _ = writer(conn, 11, events=events)
    a.start()
    try:
        for i in range(6):
            result(a, f"ok{i}")
        standby = copy_of_prefix(primary, 3)
        other, _ = writer(standby, 12)
        other.start()
        for i in range(3):
            result(other, f"other{i}")
        other.stop(publish=False)
        assert standby.tree_size() == 6
        conn.fail_over(standby)
        with pytest.raises(StorageUnavailable, match="refusing to sign a fork"):
            result(a, "next")
        assert standby.tree_size() == 6
        assert not logged(standby, "next")
        assert "diverged" in a.recovering
        assert events.of("ambiguous") == []  # nothing was in flight
    finally:
        a.stop(publish=False)

    b, _ = writer(ConnectedStore(primary), 13)
    b.start()
    try:
        nodes_read = []
        original = primary.nodes
        primary.nodes = lambda coords: nodes_read.append(1) or original(coords)  # type: ignore[method-assign]
        assert result(b, "same-server").receipt.index == 6
        assert nodes_read == []  # no check: the server did not change
    finally:
        b.stop(publish=False)


def test_replicas_that_reconnect_at_different_moments_keep_one_sequence() -> None:
    """Two writers on one database: A loses a commit the database stored and stays cut off
    while B appends; A then resolves it and appends after B's entries; B loses a commit that
    was not stored, and its callers' retries on A draw once. One contiguous log, each
    request id once, every receipt and every published checkpoint consistent with it."""
    server = MemoryStorage()
    ca, cb = ConnectedStore(server), ConnectedStore(server)
    a, _ = writer(ca, 6, publish_every_group=True)
    b, _ = writer(cb, 7, publish_every_group=True)
    a.start()
    b.start()
    results: dict[str, AppendResult] = {}
    try:
        for i in range(3):
            results[f"a{i}"] = result(a, f"a{i}")
            results[f"b{i}"] = result(b, f"b{i}")
        ca.lose_next_commit(stored=True)
        pool = concurrent.futures.ThreadPoolExecutor(1)
        held = pool.submit(result, a, "a-amb")
        wait_until(lambda: ca.calls_while_down >= 1, "A to lose its store")
        for i in range(3, 8):
            results[f"b{i}"] = result(b, f"b{i}")
        ca.down = False  # A reconnects, later than B
        results["a-amb"] = held.result(timeout=30)
        assert results["a-amb"].receipt.index == 6  # where its commit landed, before B's
        wait_until(lambda: not a.recovering, "A to recover")
        results["a3"] = result(a, "a3")
        assert results["a3"].receipt.index == 12

        cb.lose_next_commit(stored=False)
        waiting = pool.submit(result, b, "b-lost")
        wait_until(lambda: cb.calls_while_down >= 1, "B to lose its store")
        # The caller gives up on B and retries on A, which draws it (B's commit was lost).
        results["b-lost"] = result(a, "b-lost")
        assert not results["b-lost"].receipt.replayed
        cb.down = False
        # B resolves its commit: not stored, but the request id is logged now: that entry.
        answered = waiting.result(timeout=30)
        assert answered.receipt.replayed
        assert answered.receipt.entry == results["b-lost"].receipt.entry
        wait_until(lambda: not b.recovering, "B to recover")
        results["b8"] = result(b, "b8")
    finally:
        a.stop(publish=False)
        b.stop(publish=False)

    size = server.tree_size()
    entries = server.entries(0, size)
    assert [e.index for e in entries] == list(range(size))
    assert len({e.request_id for e in entries}) == size == 15
    checked_against(server, list(results.values()))
    leaves = [e.leaf_hash for e in entries]
    for cp in server.checkpoints():
        body = Checkpoint.parse(open_note(cp.note, [SIGNER.verifier()]).text)
        assert body.root_hash == merkle.root_from_leaf_hashes(leaves[: body.size])


def test_stop_during_recovery_fails_the_held_group_as_unknown() -> None:
    primary = seeded(1)
    conn = ConnectedStore(primary)
    events = Events()
    a, _ = writer(conn, 8, events=events)
    conn.lose_next_commit(stored=True)
    future = a.submit(request("held"))
    a.start()
    wait_until(lambda: conn.calls_while_down >= 2, "the writer to poll")
    started = time.monotonic()
    a.stop(publish=False)
    assert time.monotonic() - started < 5
    with pytest.raises(StorageUnavailable, match="may or may not be logged"):
        future.result(timeout=1)
    assert events.of("ambiguous") == [("unresolved", 1)]
    assert events.of("recovered") == []
