"""The appender (sequencer) with fakes: grouping, idempotency, failure atomicity, receipts."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import functools
from collections.abc import Mapping

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.clock import FakeClock
from rng_service.drbg import DeterministicGenerator
from rng_service.errors import AlreadyExists, GeneratorUnavailable, StorageUnavailable
from rng_service.log.entry import JsonValue, LogEntry
from rng_service.log.note import Ed25519NoteSigner
from rng_service.log.receipt import verify_receipt
from rng_service.sampling import RandomSource
from rng_service.writer.appender import Appender, AppendResult, DrawRequest
from rng_service.writer.tree import MerkleTree
from tests.fakes import FlakyStorage

SIGNER = Ed25519NoteSigner("unit-log", Ed25519PrivateKey.from_private_bytes(bytes(range(32))))


def draw_below(n: int, src: RandomSource) -> Mapping[str, JsonValue]:
    return {"value": src.randbelow(n)}


def request(rid: str, *, n: int = 38, table: str = "T", client: str = "c") -> DrawRequest:
    return DrawRequest(
        client_id=client,
        request_id=rid,
        table_id=table,
        round_id=f"R-{rid}",
        session_id="",
        kind="test_draw",
        params={"n": n},
        draw=functools.partial(draw_below, n),
    )


class Harness:
    def __init__(self) -> None:
        self.storage = FlakyStorage()
        self.clock = FakeClock()
        self.generator = DeterministicGenerator(entropy_input=b"\x01" * 32, nonce=b"\x02" * 16)

    def run_group(
        self, requests: list[DrawRequest]
    ) -> list[concurrent.futures.Future[AppendResult]]:
        """A fresh appender on the same storage (a restart) takes ``requests`` as one group:
        they are all queued before its writer starts."""
        self.appender = Appender(
            storage=self.storage,
            tree=MerkleTree.load(self.storage),
            generator=self.generator,
            signer=SIGNER,
            origin="unit.example/log",
            clock=self.clock,
            publish_interval_seconds=10,
        )
        futures = [self.appender.submit(r) for r in requests]
        self.appender.start()
        for f in futures:
            f.exception(timeout=30)
        self.appender.stop(publish=False)
        return futures


@pytest.fixture
def h() -> Harness:
    return Harness()


def test_one_group_one_commit_with_verifiable_receipts(h: Harness) -> None:
    futures = h.run_group([request(f"r{i}") for i in range(10)])
    results = [f.result() for f in futures]
    assert [r.receipt.index for r in results] == list(range(10))
    assert {r.receipt.tree_size for r in results} == {10}
    assert len({r.receipt.checkpoint for r in results}) == 1
    for r in results:
        checked = verify_receipt(r.receipt, [SIGNER.verifier()])
        assert checked.entry == LogEntry.decode(r.receipt.entry)
        assert checked.entry.generator.lab_mode is True
    # the first group is published (stored) as a checkpoint
    latest = h.storage.latest_checkpoint()
    assert latest is not None
    assert latest.size == 10


def test_same_request_in_one_group_draws_once(h: Harness) -> None:
    futures = h.run_group([request("dup"), request("other"), request("dup")])
    first, _, again = (f.result() for f in futures)
    assert again.receipt.entry == first.receipt.entry
    assert again.receipt.replayed
    assert not first.receipt.replayed
    assert h.storage.tree_size() == 2


def test_conflicting_parameters_in_one_group(h: Harness) -> None:
    futures = h.run_group([request("x", n=37), request("x", n=38)])
    assert futures[0].result().receipt.index == 0
    with pytest.raises(AlreadyExists, match="request_id 'x'"):
        futures[1].result()
    assert h.storage.tree_size() == 1


def test_replay_from_storage_is_identical(h: Harness) -> None:
    first = h.run_group([request("a"), request("b")])[0].result()
    again = h.run_group([request("a"), request("c")])[0].result()
    assert again.receipt == dataclasses.replace(first.receipt, replayed=True)
    assert again.receipt.entry == first.receipt.entry
    assert again.receipt.checkpoint == first.receipt.checkpoint
    assert again.receipt.inclusion_proof == first.receipt.inclusion_proof
    assert again.receipt.tree_size == 2
    assert h.storage.tree_size() == 3


def test_failed_commit_returns_nothing_and_changes_nothing(h: Harness) -> None:
    h.storage.failing = True
    futures = h.run_group([request("a"), request("b")])
    for f in futures:
        with pytest.raises(StorageUnavailable):
            f.result()
    assert h.storage.tree_size() == 0
    assert h.appender.tree_size == 0
    h.storage.failing = False
    ok = h.run_group([request("a")])[0].result()
    assert ok.receipt.index == 0
    assert not ok.receipt.replayed


def test_generator_failure_fails_only_that_request(h: Harness) -> None:
    def broken(src: RandomSource) -> Mapping[str, JsonValue]:
        raise GeneratorUnavailable("generator in its error state")

    bad = DrawRequest(
        client_id="c", request_id="bad", table_id="T", round_id="R", session_id="",
        kind="test_draw", params={"n": 0}, draw=broken,
    )  # fmt: skip
    futures = h.run_group([request("a"), bad, request("b")])
    assert futures[0].result().receipt.index == 0
    with pytest.raises(GeneratorUnavailable):
        futures[1].result()
    assert futures[2].result().receipt.index == 1


def test_clients_have_separate_request_id_spaces(h: Harness) -> None:
    futures = h.run_group([request("same", client="c1"), request("same", client="c2")])
    a, b = (f.result() for f in futures)
    assert a.receipt.index != b.receipt.index
    assert LogEntry.decode(b.receipt.entry).client == "c2"


def test_submit_async_settles_on_the_event_loop(h: Harness) -> None:
    """The servicers' path: every request of a group is answered on its loop, errors too."""
    h.run_group([request("before")])  # h.appender now exists (stopped); start a fresh one
    appender = Appender(
        storage=h.storage,
        tree=MerkleTree.load(h.storage),
        generator=h.generator,
        signer=SIGNER,
        origin="unit.example/log",
        clock=h.clock,
    )
    appender.start()

    async def main() -> list[object]:
        waiters = [appender.submit_async(request(f"a{i}")) for i in range(20)]
        waiters.append(appender.submit_async(request("a3", n=37)))  # conflicting retry
        cancelled = appender.submit_async(request("gone"))
        cancelled.cancel()  # the caller went away: it is logged anyway
        return await asyncio.gather(*waiters, return_exceptions=True)

    try:
        results = asyncio.run(main())
    finally:
        appender.stop(publish=False)
    ok = [r for r in results if isinstance(r, AppendResult)]
    assert sorted(r.receipt.index for r in ok) == list(range(1, 21))
    assert isinstance(results[-1], AlreadyExists)
    assert h.storage.entry_by_request("c", "gone") is not None
    assert h.storage.tree_size() == 22
