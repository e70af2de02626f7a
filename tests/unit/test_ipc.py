"""The log writer's channel (``rng_service.process.ipc``), as ``serve --front-ends`` uses it.

The real OutcomeServicer talks to a :class:`WriterClient`; a :class:`WriterEndpoint` on the
other end of a socketpair hands the pickled requests to a real appender (in-memory store,
the outcome vectors' lab-mode generator). Every outcome kind must log its known answer
(tests/vectors/outcomes/, checked independently by tests/unit/reader), which it can only do
if its draw crossed the channel intact; domain errors must cross with their class and
fields; a writer that goes away must fail what waits, never leave it hanging.
"""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import grpc
import pytest
from grpc import aio

from rng_service.clock import FakeClock
from rng_service.errors import InvalidArgument, SlotFilled, Unavailable
from rng_service.log.entry import LogEntry
from rng_service.metrics import MergedCollector
from rng_service.process.ipc import WriterClient, _decode_error, _encode_error, serve_front_end
from rng_service.rpc.profiles import ProfileRegistry
from rng_service.rpc.servicers import OutcomeServicer
from rng_service.storage.memory import MemoryStorage
from rng_service.writer.appender import Appender, DrawRequest, Waiter
from rng_service.writer.tree import MerkleTree
from tests.unit.rpc.conftest import CLIENT, SIGNER, Aborted, FakeContext
from tests.unit.rpc.test_outcome_vectors import (
    VECTORS,
    _lab_generator,
    _request,
    _service_cases,
)


async def _through_the_channel(calls: list[tuple[str, Any]]) -> list[Any]:
    generator = _lab_generator()
    storage = MemoryStorage()
    appender = Appender(storage=storage, tree=MerkleTree.load(storage), generator=generator,
                        signer=SIGNER, origin="unit.example/log", clock=FakeClock())  # fmt: skip
    appender.start()
    writer_end, front_end = socket.socketpair()
    try:
        await serve_front_end(writer_end, appender, lambda: (generator.status(), None))
        client = await WriterClient.connect(front_end)
        servicer = OutcomeServicer(
            appender=client,  # type: ignore[arg-type]
            client_id=CLIENT,
            profiles=ProfileRegistry.load_builtin(),
        )
        out = []
        for method, request in calls:
            context = FakeContext()
            try:
                out.append(await getattr(servicer, method)(request, context))
            except aio.AbortError:  # the status the servicer answered with
                out.append(Aborted(context.status, context.details))
            except Exception as e:  # the test compares what came back
                out.append(e)
        client.close()
        return out
    finally:
        await asyncio.to_thread(appender.stop, publish=False)


def test_every_outcome_kind_logs_its_known_answer_through_the_channel() -> None:
    cases = []
    for kind, case in _service_cases():
        if case:
            continue  # the first case of each kind: one generator, one log, in order
        vector = json.loads((VECTORS / f"{kind}.json").read_text())["cases"][0]
        if "outcomes" in vector:
            cases.append((kind, vector["params"], vector["outcomes"][0]))
    assert len(cases) >= 8
    # One fresh harness per kind: each vector starts from the generator's first bytes.
    for kind, params, expected in cases:
        (answer,) = asyncio.run(_through_the_channel([_request(kind, params, "v0")]))
        assert not isinstance(answer, BaseException), f"{kind}: {answer!r}"
        entry = LogEntry.decode(answer.receipt.entry)
        assert (entry.kind, entry.index, entry.params) == (kind, 0, params)
        assert entry.outcome == expected, kind


def test_the_writers_refusals_and_replays_come_back_through_the_channel() -> None:
    """What the sequencer decides crosses as it decided it: the same request id with other
    parameters is ALREADY_EXISTS with its message, a retry is the logged answer replayed."""
    spin = _request("roulette_spin", {"wheel": "double_zero"}, "r1")
    other = _request("roulette_spin", {"wheel": "single_zero"}, "r1")
    first, retried, conflict = asyncio.run(_through_the_channel([spin, spin, other]))
    assert not isinstance(first, BaseException)
    assert not isinstance(retried, BaseException)
    assert retried.receipt.replayed
    assert retried.receipt.entry == first.receipt.entry
    # The servicer aborted with the status of the writer's AlreadyExists and its message.
    assert isinstance(conflict, Aborted)
    assert conflict.code == grpc.StatusCode.ALREADY_EXISTS
    assert "already used with different parameters" in str(conflict)


def test_domain_errors_cross_with_their_class_and_fields() -> None:
    e = _decode_error(_encode_error(InvalidArgument("wheel", "is unknown", allowed="a, b")))
    assert isinstance(e, InvalidArgument)
    assert (e.field, e.allowed, str(e)) == ("wheel", "a, b", "wheel: is unknown (allowed: a, b)")
    sent = SlotFilled("filled", table_id="T", round_id="R", slot="spin", index=7)
    slot = _decode_error(_encode_error(sent))
    assert isinstance(slot, SlotFilled)
    assert (slot.cause, slot.slot, slot.index, str(slot)) == ("slot_filled", "spin", 7, "filled")
    # Not a domain error: the front end answers UNAVAILABLE, and says nothing of the inside.
    other = _decode_error(_encode_error(KeyError("secret detail")))
    assert isinstance(other, Unavailable)
    assert "secret" not in str(other)
    # A name that is not one of ours is never looked up elsewhere.
    assert isinstance(_decode_error(("OSError", ("x",), {})), Unavailable)


class _NeverAnswers:
    def __init__(self) -> None:
        self.got: list[DrawRequest] = []

    def submit_waiter(self, request: DrawRequest, waiter: Waiter) -> None:
        self.got.append(request)

    def checkpoint_note(self, size: int) -> str:
        raise AssertionError

    def publish_checkpoint(self) -> Any:
        raise AssertionError

    def sync(self) -> int:
        return 0


def test_a_writer_that_goes_away_fails_what_waits_and_is_not_healthy() -> None:
    async def scenario() -> None:
        writer_end, front_end = socket.socketpair()
        writer = _NeverAnswers()
        endpoint = await serve_front_end(writer_end, writer, lambda: ("gen", "store"))
        client = await WriterClient.connect(front_end)
        waiter = client.submit_async(
            DrawRequest(
                client_id="c",
                request_id="r",
                table_id="t",
                round_id="o",
                session_id="",
                kind="void",
                params={},
                draw=_no_draw,
            )
        )
        for _ in range(100):
            await asyncio.sleep(0.01)
            if writer.got and client.generator_status() == "gen":
                break
        assert [r.request_id for r in writer.got] == ["r"]
        assert (client.generator_status(), client.store_status()) == ("gen", "store")
        assert endpoint.transport is not None
        endpoint.transport.close()  # the writer process dies
        with pytest.raises(Unavailable, match="log writer process is gone"):
            await asyncio.wait_for(waiter, 5)
        await asyncio.wait_for(client.closed(), 5)
        with pytest.raises(Unavailable):
            await client.submit_async(writer.got[0])
        client._status_at -= 10  # no snapshot for longer than STATUS_STALE
        assert client.generator_status().state == "error"
        assert client.store_status().state == "down"

    asyncio.run(scenario())


def _no_draw(src: Any) -> dict[str, Any]:
    return {}


def test_the_writer_serves_its_metrics_and_the_front_ends_summed() -> None:
    from prometheus_client import CollectorRegistry, Counter, generate_latest

    def registry_with(n: float) -> CollectorRegistry:
        r = CollectorRegistry()
        Counter("calls", "calls", ["method"], registry=r).labels("Spin").inc(n)
        return r

    writer = registry_with(1)
    front = [list(registry_with(2).collect()), list(registry_with(3).collect())]
    front[1].append(_process_family())
    served = CollectorRegistry()
    served.register(MergedCollector(writer, lambda: front))
    text = generate_latest(served).decode()
    assert 'calls_total{method="Spin"} 6.0' in text
    created = [x for x in text.splitlines() if x.startswith("calls_created")]
    assert len(created) == 1  # the earliest, not a sum of times
    assert float(created[0].split()[-1]) < 2e9
    assert "process_cpu_seconds_total" not in text  # the writer's own process metrics only


def _process_family() -> Any:
    from prometheus_client.core import CounterMetricFamily

    family = CounterMetricFamily("process_cpu_seconds", "front end's own", value=99.0)
    return family
