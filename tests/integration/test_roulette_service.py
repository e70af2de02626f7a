"""Roulette end to end over gRPC: distribution, void-and-respin, idempotency, concurrency,
restart, bad input, failures, and receipt verification with the public key."""

from __future__ import annotations

import concurrent.futures
import logging
import urllib.request
from collections import Counter
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2
from scipy.stats import chisquare

from rng_service._proto.rng.v1 import common_pb2, log_pb2, outcomes_pb2
from rng_service.clock import FakeClock
from rng_service.errors import IntegrityError
from rng_service.log.entry import LogEntry
from rng_service.log.note import NoteVerifier
from rng_service.log.receipt import Receipt, verify_receipt
from rng_service.outcomes.roulette import WheelType, distribution
from tests.fakes import CounterEntropy, FlakyStorage
from tests.integration.conftest import Running, make_config, start, wait_for_sample

WHEELS = {
    outcomes_pb2.WHEEL_TYPE_SINGLE_ZERO: WheelType.SINGLE_ZERO,
    outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO: WheelType.DOUBLE_ZERO,
    outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO_AS_SINGLE_ZERO: WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO,
}


def receipt_of(reply: outcomes_pb2.SpinRouletteResponse) -> Receipt:
    r = reply.receipt
    return Receipt(
        index=r.index,
        entry=r.entry,
        leaf_hash=r.leaf_hash,
        inclusion_proof=tuple(r.inclusion_proof),
        tree_size=r.tree_size,
        checkpoint=r.checkpoint,
        replayed=r.replayed,
    )


def verifiers(running: Running) -> list[NoteVerifier]:
    keys = running.log.GetPublicKeys(log_pb2.GetPublicKeysRequest()).keys
    return [NoteVerifier.from_verifier_key(k.verifier_key) for k in keys]


def many_spins(
    running: Running, wheel: int, n: int, prefix: str, *, in_flight: int = 64
) -> list[outcomes_pb2.SpinRouletteResponse]:
    """``n`` spins with up to ``in_flight`` concurrent calls (bounded, like a real client)."""
    replies: list[outcomes_pb2.SpinRouletteResponse] = []
    for first in range(0, n, in_flight):
        futures = [
            running.outcomes.SpinRoulette.future(
                outcomes_pb2.SpinRouletteRequest(
                    context=common_pb2.RequestContext(
                        table_id="T-dist", round_id=f"R{i}", request_id=f"{prefix}-{i}"
                    ),
                    wheel=wheel,
                ),
                timeout=60,
            )
            for i in range(first, min(n, first + in_flight))
        ]
        replies.extend(f.result() for f in futures)
    return replies


@pytest.mark.slow
@pytest.mark.parametrize("wheel", sorted(WHEELS))
def test_spin_distribution_matches_the_wheel(running: Running, wheel: int) -> None:
    n = 3800
    replies = many_spins(running, wheel, n, f"dist{wheel}")
    expected = distribution_for(WHEELS[wheel])
    counts = Counter(r.result.number for r in replies)
    assert set(counts) <= set(expected)
    labels = sorted(expected)
    observed = [counts.get(label, 0) for label in labels]
    exp = [float(expected[label] * n) for label in labels]
    # Deterministic entropy in the harness: this P-value is the same on every run.
    assert chisquare(observed, exp).pvalue > 0.001
    assert all(not r.result.void for r in replies)
    if WHEELS[wheel] is WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO:
        assert "00" not in counts


def distribution_for(wheel: WheelType) -> dict[str, object]:
    from rng_service.outcomes.roulette import SpinParams

    return {k: v for k, v in distribution(SpinParams(wheel=wheel)).items() if v}


def test_double_zero_as_single_zero_voids_and_respins_and_logs_both(running: Running) -> None:
    replies = many_spins(running, outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO_AS_SINGLE_ZERO, 400, "void")
    voided = [r for r in replies if len(r.spins) > 1]
    assert voided, "no 00 in 400 spins (probability 38^-400 * ...); generator broken"
    keys = verifiers(running)
    for reply in voided:
        *voids, last = reply.spins
        assert all(
            s.void and s.number == "00" and s.color == outcomes_pb2.COLOR_GREEN for s in voids
        )
        assert not last.void
        assert last.number != "00"
        assert last == reply.result
        entry = verify_receipt(receipt_of(reply), keys).entry
        logged = entry.outcome["spins"]
        assert [s["number"] for s in logged] == [s.number for s in reply.spins]
        assert [s["voided"] for s in logged] == [s.void for s in reply.spins]


def test_receipt_verifies_with_the_public_key(running: Running, tmp_path: Path) -> None:
    reply = running.spin("receipt-1", wheel=outcomes_pb2.WHEEL_TYPE_SINGLE_ZERO)
    checked = verify_receipt(receipt_of(reply), verifiers(running))
    assert checked.entry.request_id == "receipt-1"
    assert checked.entry.table_id == "T1"
    assert checked.entry.kind == "roulette_spin"
    assert checked.entry.outcome["final"]["number"] == reply.result.number
    assert checked.entry.generator.lab_mode is False
    assert checked.checkpoint.origin == "test.example/log"
    # Another key, or a changed entry, does not verify.
    from rng_service.log.keys import generate_key_pair

    other = generate_key_pair(tmp_path / "other.pem", name="test.example/log", passphrase=None)
    with pytest.raises(IntegrityError):
        verify_receipt(receipt_of(reply), [NoteVerifier.from_verifier_key(other.verifier_key)])
    forged = receipt_of(reply)
    tampered = Receipt(
        index=forged.index,
        entry=forged.entry.replace(b'"T1"', b'"T2"'),
        leaf_hash=forged.leaf_hash,
        inclusion_proof=forged.inclusion_proof,
        tree_size=forged.tree_size,
        checkpoint=forged.checkpoint,
        replayed=False,
    )
    with pytest.raises(IntegrityError):
        verify_receipt(tampered, verifiers(running))


def test_retry_returns_the_same_logged_outcome_and_receipt(running: Running) -> None:
    first = running.spin("same-id")
    size = running.service.appender.tree_size  # type: ignore[union-attr]
    for _ in range(3):
        again = running.spin("same-id")
        assert again.result == first.result
        assert again.spins == first.spins
        assert again.receipt.entry == first.receipt.entry
        assert again.receipt.checkpoint == first.receipt.checkpoint
        assert list(again.receipt.inclusion_proof) == list(first.receipt.inclusion_proof)
        assert again.receipt.replayed
        assert not first.receipt.replayed
    assert running.service.appender.tree_size == size  # type: ignore[union-attr]


def test_racing_retries_draw_once(running: Running) -> None:
    before = running.service.appender.tree_size  # type: ignore[union-attr]
    futures = [
        running.outcomes.SpinRoulette.future(
            outcomes_pb2.SpinRouletteRequest(
                context=common_pb2.RequestContext(table_id="T", round_id="R", request_id="race"),
                wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO,
            ),
            timeout=30,
        )
        for _ in range(40)
    ]
    replies = [f.result() for f in futures]
    assert len({r.receipt.entry for r in replies}) == 1
    assert sum(not r.receipt.replayed for r in replies) == 1
    assert running.service.appender.tree_size == before + 1  # type: ignore[union-attr]


def test_same_request_id_with_other_parameters_is_already_exists(running: Running) -> None:
    running.spin("conflict", wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO)
    size = running.service.appender.tree_size  # type: ignore[union-attr]
    for kwargs in (
        {"wheel": outcomes_pb2.WHEEL_TYPE_SINGLE_ZERO},
        {"table_id": "T9"},
        {"round_id": "R9"},
        {"session_id": "S9"},
    ):
        with pytest.raises(grpc.RpcError) as info:
            running.spin("conflict", **kwargs)  # type: ignore[arg-type]
        assert info.value.code() == grpc.StatusCode.ALREADY_EXISTS
        assert "request_id" in (info.value.details() or "")
    assert running.service.appender.tree_size == size  # type: ignore[union-attr]


def test_concurrent_clients_get_distinct_contiguous_indices(running: Running) -> None:
    def client(c: int) -> list[int]:
        return [running.spin(f"c{c}-{i}", table_id=f"T{c}").receipt.index for i in range(25)]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        indices = [i for chunk in pool.map(client, range(8)) for i in chunk]
    assert sorted(indices) == list(range(len(indices)))


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (outcomes_pb2.SpinRouletteRequest(wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO), "context"),
        (
            outcomes_pb2.SpinRouletteRequest(
                context=common_pb2.RequestContext(table_id="T", round_id="R", request_id="ok"),
            ),
            "wheel",
        ),
        (
            outcomes_pb2.SpinRouletteRequest(
                context=common_pb2.RequestContext(table_id="T", round_id="R", request_id="ok"),
                wheel=99,  # type: ignore[arg-type]
            ),
            "wheel",
        ),
        (
            outcomes_pb2.SpinRouletteRequest(
                context=common_pb2.RequestContext(table_id="T", round_id="R", request_id="bad id!"),
                wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO,
            ),
            "context.request_id",
        ),
        (
            outcomes_pb2.SpinRouletteRequest(
                context=common_pb2.RequestContext(table_id="T", round_id="R", request_id="x" * 129),
                wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO,
            ),
            "context.request_id",
        ),
        (
            outcomes_pb2.SpinRouletteRequest(
                context=common_pb2.RequestContext(table_id="", round_id="R", request_id="ok"),
                wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO,
            ),
            "context.table_id",
        ),
        (
            outcomes_pb2.SpinRouletteRequest(
                context=common_pb2.RequestContext(
                    table_id="T", round_id="R" * 129, request_id="ok"
                ),
                wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO,
            ),
            "context.round_id",
        ),
        (
            outcomes_pb2.SpinRouletteRequest(
                context=common_pb2.RequestContext(
                    table_id="T", round_id="R", request_id="ok", session_id="bad\nsession"
                ),
                wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO,
            ),
            "context.session_id",
        ),
    ],
)
def test_bad_input_is_invalid_argument_and_changes_nothing(
    running: Running, request_: outcomes_pb2.SpinRouletteRequest, field: str
) -> None:
    size = running.service.appender.tree_size  # type: ignore[union-attr]
    with pytest.raises(grpc.RpcError) as info:
        running.outcomes.SpinRoulette(request_, timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = info.value.details() or ""
    assert details.startswith(field + ":"), details
    assert "allowed" in details or field == "context"
    assert running.service.appender.tree_size == size  # type: ignore[union-attr]
    # The request id was not consumed: a good request with it succeeds as a first draw.
    ok = running.spin("ok")
    assert not ok.receipt.replayed


def test_restart_continues_the_log_and_old_receipts_still_verify(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    first = start(config)
    try:
        early = [first.spin(f"before-{i}") for i in range(5)]
        keys = verifiers(first)
    finally:
        first.stop()
    second = start(config, entropy=CounterEntropy(b"another boot"))
    try:
        later = second.spin("after-0")
        assert later.receipt.index == 5
        for reply in early:
            verify_receipt(receipt_of(reply), keys)
            again = second.spin(LogEntry.decode(reply.receipt.entry).request_id)
            assert again.receipt.replayed
            assert again.receipt.entry == reply.receipt.entry
            assert again.receipt.checkpoint == reply.receipt.checkpoint
        verify_receipt(receipt_of(later), keys)
    finally:
        second.stop()


def test_generator_error_state_is_unavailable_and_not_serving(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rng_service")
    entropy = CounterEntropy()
    clock = FakeClock()
    running = start(
        make_config(tmp_path, RNG_SERVICE__GENERATOR__RESEED_INTERVAL_SECONDS="1"),
        entropy=entropy,
        clock=clock,
    )
    try:
        running.spin("fine")
        entropy.stuck = True
        clock.advance(5)  # the next draw must reseed, from a stuck source
        size = running.service.appender.tree_size  # type: ignore[union-attr]
        with pytest.raises(grpc.RpcError) as info:
            running.spin("after-fault")
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        assert running.service.appender.tree_size == size  # type: ignore[union-attr]
        import asyncio

        asyncio.run_coroutine_threadsafe(
            running.service._health_monitor.update(),  # type: ignore[union-attr]
            running.loop,
        ).result(10)
        status = running.health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
        assert status.status == health_pb2.HealthCheckResponse.NOT_SERVING
        events = [r.msg for r in caplog.records if isinstance(r.msg, dict)]
        error = next(e for e in events if e["event"] == "generator_error")
        assert error["health"] == "NOT_SERVING"
        assert error["reason"]  # says why: the entropy health tests latched
        assert any(e["event"] == "entropy_health_test_failure" for e in events)
        entropy.stuck = False  # latched: recovery needs an operator restart
        with pytest.raises(grpc.RpcError) as info:
            running.spin("still-latched")
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        assert running.metrics_port is not None
        text = (
            urllib.request.urlopen(f"http://127.0.0.1:{running.metrics_port}/metrics", timeout=10)
            .read()
            .decode()
        )
        assert "rng_generator_up 0.0" in text
        # counted as the service's failure (fires RngRpcErrorRate), with its cause
        labels = {"method": "SpinRoulette", "code": "UNAVAILABLE", "cause": "generator"}
        labels["class"] = "failure"
        assert wait_for_sample(running, "rng_rpc_duration_seconds_count", labels, at_least=2) == 2
    finally:
        running.stop()


def test_storage_that_cannot_commit_returns_nothing(tmp_path: Path) -> None:
    storage = FlakyStorage()
    running = start(make_config(tmp_path), storage=storage)
    try:
        running.spin("ok-1")
        storage.failing = True
        with pytest.raises(grpc.RpcError) as info:
            running.spin("lost")
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        # counted as the service's failure, with its cause (recorded just after the status is
        # sent, so it may land a moment after the client has its answer)
        labels = {"method": "SpinRoulette", "code": "UNAVAILABLE", "cause": "storage"}
        labels["class"] = "failure"
        assert wait_for_sample(running, "rng_rpc_duration_seconds_count", labels) == 1
        storage.failing = False
        retry = running.spin("lost")  # nothing was logged for it: a first draw now
        assert not retry.receipt.replayed
        assert retry.receipt.index == 1
        verify_receipt(receipt_of(retry), verifiers(running))
    finally:
        running.stop()


def test_health_serving_and_metrics_exposed(running: Running) -> None:
    status = running.health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
    assert status.status == health_pb2.HealthCheckResponse.SERVING
    status = running.health.Check(
        health_pb2.HealthCheckRequest(service="rng.v1.OutcomeService"), timeout=10
    )
    assert status.status == health_pb2.HealthCheckResponse.SERVING
    running.spin("m1")
    assert running.metrics_port is not None
    text = (
        urllib.request.urlopen(f"http://127.0.0.1:{running.metrics_port}/metrics", timeout=10)
        .read()
        .decode()
    )
    assert 'rng_outcomes_total{client="default",game="roulette",kind="roulette_spin"} 1.0' in text
    assert (
        'rng_rpc_duration_seconds_count{cause="ok",class="ok",code="OK",method="SpinRoulette"} 1.0'
        in text
    )
    assert "rng_log_commit_group_size_bucket" in text
    assert "rng_generator_up 1.0" in text
    assert "rng_generator_reseeds_total" in text


def test_start_and_stop_are_logged_without_secrets(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rng_service")
    config = make_config(tmp_path)
    running = start(config)
    running.spin("logged")
    running.stop()
    events = [r.msg for r in caplog.records if isinstance(r.msg, dict)]
    started = next(e for e in events if e["event"] == "started")
    assert started["key"]["name"] == "test.example/log"
    assert started["key"]["verifier_key"].startswith("test.example/log+")
    assert started["log"]["origin"] == "test.example/log"
    assert started["generator"]["self_test"] == "passed"
    stopped = next(e for e in events if e["event"] == "stopped")
    assert stopped["log_size"] == 1
    pem = config.log.key_file.read_text()
    secret_body = "".join(pem.strip().splitlines()[1:-1])
    text = caplog.text + repr(events)
    assert secret_body[:40] not in text
    assert "PRIVATE KEY" not in text
