"""The writer thread applies the group rule (``writer.queue.gather_group``) with the size of its
previous group: after a lone group a request is committed without waiting; after a group of two
the writer waits for two, and once it has them closes the group at the lull.

The waits here are long (60 s) so that the rule, not the machine's speed, decides each group:
a result within 30 s proves the writer did not wait the wait out."""

from __future__ import annotations

import time

from rng_service.clock import FakeClock
from rng_service.drbg import DeterministicGenerator
from rng_service.writer.appender import Appender
from rng_service.writer.tree import MerkleTree
from tests.fakes import FlakyStorage
from tests.unit.writer.test_appender_handoff import SIGNER, request

LONG = 60.0
ANSWER = 30.0


def _appender(storage: FlakyStorage, *, wait: float, lull: float) -> Appender:
    return Appender(
        storage=storage,
        tree=MerkleTree.load(storage),
        generator=DeterministicGenerator(entropy_input=b"\x01" * 32, nonce=b"\x02" * 16),
        signer=SIGNER,
        origin="unit.example/log",
        clock=FakeClock(),
        group_wait_seconds=wait,
        group_lull_seconds=lull,
    )


def _taken(app: Appender) -> None:
    """Until the writer has taken everything queued (bounded), then a moment for it to act."""
    deadline = time.monotonic() + ANSWER
    while app._queue.items.qsize() and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.2)


def test_after_a_lone_group_a_request_is_committed_without_waiting() -> None:
    app = _appender(FlakyStorage(), wait=LONG, lull=LONG)
    app.start()
    try:
        for rid in ("a", "b"):  # the first after the start, then one after a lone group
            assert app.submit(request(rid)).result(timeout=ANSWER).receipt.tree_size >= 1
    finally:
        app.stop(publish=False)


def test_after_a_group_of_two_the_writer_waits_for_two_then_closes_at_the_lull() -> None:
    app = _appender(FlakyStorage(), wait=LONG, lull=0.0)
    first = [app.submit(request("a")), app.submit(request("b"))]  # queued: one group of two
    app.start()
    try:
        assert {f.result(timeout=ANSWER).receipt.tree_size for f in first} == {2}
        c = app.submit(request("c"))
        _taken(app)  # the writer holds c and waits for a second request
        d = app.submit(request("d"))
        # one group (one checkpoint of size 4), committed at once when d made two
        assert {f.result(timeout=ANSWER).receipt.tree_size for f in (c, d)} == {4}
    finally:
        app.stop(publish=False)
