"""Hostile request bytes through a real in-process server on a loopback port 0.

A body that is not a valid message is INVALID_ARGUMENT naming the request type (never grpcio's
UNKNOWN "Unexpected <class ...DecodeError>"), counted, and logged as one rate-limited line.
Then a hypothesis-driven fuzz test: about 2,000 requests spread over every method of every
service the server exposes (ours, health, reflection), built from the request types'
descriptors with boundary values and then, often, corrupted. It asserts that no call ends with
UNKNOWN or INTERNAL (or hangs), that a refused call adds no log entry, that nothing logs a
traceback, and that the service answers normally afterwards.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from rng_service._proto.rng.v1 import common_pb2, lab_pb2, log_pb2, outcomes_pb2
from rng_service.outcomes.cards import DEAL_PLANS
from rng_service.rpc import decoding
from tests.integration.conftest import Running, make_config, start

ISSUE_BYTES = bytes.fromhex("0a060a04fffec328")  # from the fault campaign: not UTF-8


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    tmp = tmp_path_factory.mktemp("hostile")
    running = start(
        make_config(
            tmp,
            RNG_SERVICE__CERTIFICATION__RAW_STREAM_ENABLED="true",
            RNG_SERVICE__CERTIFICATION__RAW_STREAM_MAX_BYTES=str(1 << 20),
        )
    )
    try:
        running.spin("warm-up")  # the log has an entry: index lookups find something
        yield running
    finally:
        running.stop()


@pytest.fixture
def fresh_throttle(monkeypatch: pytest.MonkeyPatch) -> None:
    """The undecodable-request log line is rate limited process-wide: start from a clean one."""
    monkeypatch.setattr(decoding, "_throttle", decoding._Throttle(decoding.LOG_INTERVAL_SECONDS))


def raw_unary(running: Running, path: str, body: bytes) -> grpc.RpcError | bytes:
    call = running.channel.unary_unary(path)  # no serializers: the bytes go as they are
    try:
        return bytes(call(body, timeout=20))
    except grpc.RpcError as e:
        return e


def undecodable_count(running: Running, method: str) -> float:
    value = running.service.registry.get_sample_value(
        "rng_rpc_undecodable_requests_total", {"method": method}
    )
    return value or 0.0


def test_an_undecodable_body_is_invalid_argument_counted_and_logged_once(
    served: Running, caplog: pytest.LogCaptureFixture, fresh_throttle: None
) -> None:
    caplog.set_level(logging.DEBUG)
    size = served.service.appender.tree_size  # type: ignore[union-attr]
    before = undecodable_count(served, "DrawBatch")
    for _ in range(3):
        error = raw_unary(served, "/rng.v1.OutcomeService/DrawBatch", ISSUE_BYTES)
        assert isinstance(error, grpc.RpcError)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        details = error.details() or ""
        assert details.startswith("request: the body is not a valid rng.v1.DrawBatchRequest")
        assert "class" not in details
        assert "Error" not in details  # no internal class name
    assert undecodable_count(served, "DrawBatch") == before + 3
    lines = [r.msg for r in caplog.records if isinstance(r.msg, dict)]
    logged = [e for e in lines if e.get("event") == "undecodable_request"]
    assert len(logged) == 1  # rate limited: one line per 10 s
    assert logged[0]["method"] == "DrawBatch"
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert served.service.appender.tree_size == size  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("path", "body", "type_name"),
    [
        ("/grpc.health.v1.Health/Check", ISSUE_BYTES, "grpc.health.v1.HealthCheckRequest"),
        # field 1 (a uint64) as a varint cut short
        ("/rng.v1.LogService/GetCheckpoints", b"\x08\xff", "rng.v1.GetCheckpointsRequest"),
    ],
)
def test_health_and_log_services_decode_alike(
    served: Running, path: str, body: bytes, type_name: str
) -> None:
    error = raw_unary(served, path, body)
    assert isinstance(error, grpc.RpcError)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert type_name in (error.details() or "")


def test_reflection_still_answers_and_refuses_garbage(served: Running) -> None:
    call = served.channel.stream_stream(
        "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )
    replies = list(call(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                        timeout=20))  # fmt: skip
    names = {s.name for s in replies[0].list_services_response.service}
    assert {"rng.v1.OutcomeService", "rng.v1.LogService", "grpc.health.v1.Health"} <= names
    raw = served.channel.stream_stream(
        "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
    )
    with pytest.raises(grpc.RpcError) as info:
        list(raw(iter([b"\x0a\x02\xff\xfe"]), timeout=20))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


# --- the fuzz test -----------------------------------------------------------------------------

F = FieldDescriptor
_INT_RANGES = {
    F.TYPE_INT32: (-(2**31), 2**31 - 1),
    F.TYPE_SINT32: (-(2**31), 2**31 - 1),
    F.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    F.TYPE_ENUM: (-(2**31), 2**31 - 1),
    F.TYPE_INT64: (-(2**63), 2**63 - 1),
    F.TYPE_SINT64: (-(2**63), 2**63 - 1),
    F.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    F.TYPE_UINT32: (0, 2**32 - 1),
    F.TYPE_FIXED32: (0, 2**32 - 1),
    F.TYPE_UINT64: (0, 2**64 - 1),
    F.TYPE_FIXED64: (0, 2**64 - 1),
}
_EDGES = (0, 1, 2, 3, 5, 6, 10, 37, 38, 100, 1000, 10_000, 100_000, 2**20, 2**31 - 1, 2**32 - 1,
          2**53 - 1, 2**53, 2**63 - 1, 2**63, 2**64 - 1)  # fmt: skip
# Realistic values, so that many requests get past validation into the deeper paths.
_WORDS = ("", "T1", "R1", "S1", "req-1", "mega_fire_blaze_example", *DEAL_PLANS,
          "rng.v1.OutcomeService", "x" * 129, "\u00e9\u4e2d", "a/b", " ")  # fmt: skip


def _ints(kind: int) -> st.SearchStrategy[int]:
    lo, hi = _INT_RANGES[kind]
    edges = [v for e in _EDGES for v in (e, -e) if lo <= v <= hi]
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi), st.integers(max(lo, -3), 40))


def _scalar(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    if field.type == F.TYPE_MESSAGE:
        return _message(field.message_type, depth + 1)
    if field.type in _INT_RANGES:
        return _ints(field.type)
    if field.type == F.TYPE_BOOL:
        return st.booleans()
    if field.type == F.TYPE_STRING:
        return st.one_of(st.sampled_from(_WORDS), st.text(max_size=20))
    if field.type == F.TYPE_BYTES:
        return st.one_of(st.binary(max_size=40), st.sampled_from([b"", bytes(32)]))
    if field.type in (F.TYPE_DOUBLE, F.TYPE_FLOAT):
        return st.floats(allow_nan=False, width=32)
    raise AssertionError(f"no strategy for field type {field.type}")


_CONTEXT = "rng.v1.RequestContext"


def _valid_context() -> st.SearchStrategy[Message]:
    """Mostly well-formed contexts, so that outcome requests reach the draw and the log."""
    return st.builds(
        common_pb2.RequestContext,
        table_id=st.sampled_from(["T1", "T2"]),
        round_id=st.sampled_from(["R1", "R2", "R3"]),
        request_id=st.from_regex(r"fz-[A-Za-z0-9]{1,10}", fullmatch=True),
        session_id=st.sampled_from(["", "S1"]),
    )


def _message(descriptor: Descriptor, depth: int = 0) -> st.SearchStrategy[Message]:
    cls = message_factory.GetMessageClass(descriptor)
    if depth > 3:
        return st.just(cls())
    required: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for field in descriptor.fields:
        value = _scalar(field, depth)
        if field.is_repeated:
            value = st.lists(value, max_size=5)
        if field.type == F.TYPE_MESSAGE and field.message_type.full_name == _CONTEXT:
            required[field.name] = st.one_of(_valid_context(), _valid_context(), value)
        else:
            optional[field.name] = value
    return st.fixed_dictionaries(required, optional=optional).map(lambda kw: cls(**kw))


def _mutate(data: st.DataObject, body: bytes) -> bytes:
    how = data.draw(st.sampled_from(
        ["as is"] * 6 + ["truncate", "flip", "append", "random", "bad utf-8", "deep"]
    ))  # fmt: skip
    if how == "truncate" and body:
        return body[: data.draw(st.integers(0, len(body) - 1))]
    if how == "flip" and body:
        i = data.draw(st.integers(0, len(body) - 1))
        return body[:i] + bytes([body[i] ^ data.draw(st.integers(1, 255))]) + body[i + 1 :]
    if how == "append":
        return body + data.draw(st.binary(min_size=1, max_size=16))
    if how == "random":
        return data.draw(st.binary(max_size=64))
    if how == "bad utf-8":  # field 1 as a length-delimited string (or message) of bad UTF-8
        return b"\x0a\x04\xff\xfe\xc3\x28" + body
    if how == "deep":  # nested length-delimited field 1, far deeper than any message
        inner = b""
        for _ in range(data.draw(st.integers(50, 200))):
            inner = b"\x0a" + _varint(len(inner)) + inner
        return inner
    return body


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _methods() -> list[tuple[str, Descriptor, bool, bool]]:
    services = [
        s
        for module in (outcomes_pb2, log_pb2, lab_pb2, health_pb2, reflection_pb2)
        for s in module.DESCRIPTOR.services_by_name.values()
    ]
    return [
        (f"/{s.full_name}/{m.name}", m.input_type, m.client_streaming, m.server_streaming)
        for s in services
        for m in s.methods
    ]


METHODS = _methods()
EXAMPLES = 2000 // len(METHODS) + 1  # about 2,000 requests in all
BAD_CODES = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL, grpc.StatusCode.DEADLINE_EXCEEDED}
seen_codes: dict[str, set[str]] = {}  # method -> status codes seen
calls_made: list[int] = [0]


def _call(running: Running, path: str, body: bytes, client_streaming: bool,
          server_streaming: bool) -> tuple[grpc.StatusCode, bool]:  # fmt: skip
    """The call's status, and whether it was cut short by us (a stream read in part)."""
    channel = running.channel
    if not server_streaming:
        return _status(lambda: channel.unary_unary(path)(body, timeout=20)), False
    call = (
        channel.stream_stream(path)(iter([body]), timeout=20)
        if client_streaming
        else channel.unary_stream(path)(body, timeout=20)
    )
    got = 0
    try:
        for _ in call:
            got += 1
            if got == 1:  # enough: a stream may be long (StreamBatch) or endless (Watch)
                call.cancel()
                return grpc.StatusCode.OK, True
    except grpc.RpcError as e:
        return e.code(), got > 0
    return grpc.StatusCode.OK, False


def _settle(appender: Any) -> None:
    """Waits (at most 3 s) until the log stops growing for 0.1 s."""
    deadline = time.monotonic() + 3
    size, since = appender.tree_size, time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - since < 0.1:
        time.sleep(0.02)
        if appender.tree_size != size:
            size, since = appender.tree_size, time.monotonic()


def _status(fn: Any) -> grpc.StatusCode:
    try:
        fn()
    except grpc.RpcError as e:
        return e.code()  # type: ignore[no-any-return]
    return grpc.StatusCode.OK


@pytest.mark.parametrize(
    ("path", "request_type", "client_streaming", "server_streaming"),
    METHODS,
    ids=[m[0] for m in METHODS],
)
def test_fuzzed_requests_never_break_the_service(
    served: Running,
    caplog: pytest.LogCaptureFixture,
    path: str,
    request_type: Descriptor,
    client_streaming: bool,
    server_streaming: bool,
) -> None:
    caplog.set_level(logging.INFO)
    appender = served.service.appender
    assert appender is not None
    codes = seen_codes.setdefault(path, set())

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,  # the same requests on every run: CI stays reproducible
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: the failing body is printed
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                               HealthCheck.data_too_large, HealthCheck.large_base_example],
    )  # fmt: skip
    @given(data=st.data())
    def one(data: st.DataObject) -> None:
        body = _mutate(data, data.draw(_message(request_type)).SerializeToString())
        size = appender.tree_size
        calls_made[0] += 1
        code, cut_short = _call(served, path, body, client_streaming, server_streaming)
        codes.add(code.name)
        assert code not in BAD_CODES, f"{path} answered {code.name} to {body.hex()}"
        if code != grpc.StatusCode.OK and not cut_short:
            assert appender.tree_size == size, f"{path}: a refused call logged an entry"
        if cut_short and path.startswith("/rng.v1."):
            _settle(appender)  # the chunk in flight when we cancelled is logged, then no more

    started = time.monotonic()
    one()
    elapsed = time.monotonic() - started
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "an error was logged"
    lines = [r.msg for r in caplog.records if isinstance(r.msg, dict)]
    undecodable = [e for e in lines if e.get("event") == "undecodable_request"]
    assert len(undecodable) <= elapsed / decoding.LOG_INTERVAL_SECONDS + 1  # rate limited
    # The service answers normally afterwards.
    assert served.spin(f"after-{METHODS.index(next(m for m in METHODS if m[0] == path))}")
    check = served.health.Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert check.status == health_pb2.HealthCheckResponse.SERVING


def test_the_fuzz_reached_past_decoding(served: Path | Running) -> None:
    """Runs last: the fuzz exercised refusals and successes, not only decode errors."""
    every = set().union(*seen_codes.values()) if seen_codes else set()
    if len(seen_codes) < len(METHODS):
        pytest.fail("run with the whole module: the fuzz test did not run for every method")
    assert calls_made[0] >= 1900, calls_made  # about 2,000 requests
    assert {"OK", "INVALID_ARGUMENT"} <= every
    assert every - {"OK", "INVALID_ARGUMENT"}, every  # deeper refusals too (OUT_OF_RANGE, ...)
    print(f"\n{calls_made[0]} fuzzed requests; status codes by method:")
    for path, codes in sorted(seen_codes.items()):
        print(f"  {path}: {', '.join(sorted(codes))}")
