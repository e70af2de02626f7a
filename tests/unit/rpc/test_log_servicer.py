"""The LogService servicer over a real appender and an in-memory store, with a fake context:
lookups are held to the entries' signed bytes even when the store's driver is wrong, and every
refusal is counted and logged before it is answered."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from grpc import aio

from rng_service._proto.rng.v1 import log_pb2
from rng_service.drbg import DeterministicGenerator
from rng_service.rpc.log_servicer import LogServicer
from rng_service.storage.base import EntryRecord
from rng_service.storage.memory import MemoryStorage
from rng_service.writer.tree import MerkleTree
from tests.unit.rpc.conftest import Aborted, FakeContext, ServicerHarness


class Sloppy:
    """A driver whose lookup ignores the round filter (a bug, not an edited row: every row's
    columns still equal its bytes); everything else is the store's."""

    def __init__(self, storage: MemoryStorage) -> None:
        self._storage = storage

    def __getattr__(self, name: str) -> Any:
        return getattr(self._storage, name)

    def find_entries(self, **filters: Any) -> list[EntryRecord]:
        filters.pop("round_id", None)
        return self._storage.find_entries(**filters)


class Recorder:
    def __init__(self) -> None:
        self.errors: list[tuple[str, str]] = []

    def integrity_error(self, method: str, check: str) -> None:
        self.errors.append((method, check))


@pytest.fixture
def harness() -> Iterator[ServicerHarness]:
    h = ServicerHarness(DeterministicGenerator(entropy_input=b"\x01" * 32, nonce=b"\x02" * 16))
    yield h
    h.close()


def servicer(harness: ServicerHarness, recorder: Recorder, *, sloppy: bool = False) -> LogServicer:
    return LogServicer(
        keys=[],
        storage=Sloppy(harness.storage) if sloppy else harness.storage,  # type: ignore[arg-type]
        tree=MerkleTree.load(harness.storage),  # the stored tree after the spins
        checkpoint_note=harness.appender.checkpoint_note,
        publish=harness.appender.publish_checkpoint,
        integrity_observer=recorder,
        client_id="unit-client",
    )


def call(log: LogServicer, method: str, request: Any) -> Any:
    context = FakeContext()
    try:
        return asyncio.run(getattr(log, method)(request, context))
    except aio.AbortError:
        raise Aborted(context.status, context.details) from None


def spins(harness: ServicerHarness, n: int) -> None:
    from rng_service._proto.rng.v1 import common_pb2, outcomes_pb2

    for i in range(n):
        harness.call(
            "SpinRoulette",
            outcomes_pb2.SpinRouletteRequest(
                context=common_pb2.RequestContext(
                    table_id="T", round_id=f"R{i}", request_id=f"q{i}"
                ),
                wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO,
            ),
        )


def test_a_driver_that_ignores_a_filter_is_caught(
    harness: ServicerHarness, caplog: pytest.LogCaptureFixture
) -> None:
    spins(harness, 3)
    recorder = Recorder()
    log = servicer(harness, recorder, sloppy=True)
    with caplog.at_level(logging.ERROR), pytest.raises(Aborted) as info:
        call(log, "FindEntries", log_pb2.FindEntriesRequest(table_id="T", round_id="R1"))
    assert info.value.code == grpc.StatusCode.DATA_LOSS
    assert "entry 0 was found by round_id 'R1', but its signed bytes say 'R0'" in (
        info.value.details
    )
    assert recorder.errors == [("FindEntries", "columns")]
    assert any("log_integrity_error" in str(r.msg) for r in caplog.records)
    found = call(servicer(harness, recorder), "FindEntries",
                 log_pb2.FindEntriesRequest(table_id="T", round_id="R1"))  # fmt: skip
    assert [e.index for e in found.entries] == [1]


def test_a_table_history_in_one_tree(harness: ServicerHarness) -> None:
    spins(harness, 5)
    recorder = Recorder()
    log = servicer(harness, recorder)
    reply = call(log, "GetTableHistory", log_pb2.GetTableHistoryRequest(table_id="T", limit=2))
    assert reply.client == "unit-client"  # an empty client is the caller's own chain
    assert [e.index for e in reply.entries] == [0, 1]
    assert (reply.truncated, reply.tree_size) == (True, 5)
    reply = call(
        log,
        "GetTableHistory",
        log_pb2.GetTableHistoryRequest(table_id="T", first_seq=3, tree_size=4),
    )
    assert [e.index for e in reply.entries] == [2, 3]
    assert not reply.truncated
    for request, field in (
        (log_pb2.GetTableHistoryRequest(), "table_id"),
        (log_pb2.GetTableHistoryRequest(table_id="T", first_seq=3, last_seq=2), "last_seq"),
        (log_pb2.GetTableHistoryRequest(table_id="T", limit=1001), "limit"),
    ):
        with pytest.raises(Aborted) as info:
            call(log, "GetTableHistory", request)
        assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert info.value.details.startswith(f"{field}:")
    assert recorder.errors == []
