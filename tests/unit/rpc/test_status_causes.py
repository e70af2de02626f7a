"""The one table that classes every status an RPC ends with as a refusal or a failure.

What an operator relies on (issue "The operator's kit"): a client's mistake (bad request,
unknown identity, role or scope, its rate limit, a precondition it did not set up) is a
*refusal* and never fires the error alert; the service's own trouble (generator fail-closed,
storage down, a full queue, shutting down, an integrity error, a bug) is a *failure* and does.
The expected classes below are written from that rule, not read back from the table. The
wrapper's behaviour is checked through a real grpc.aio server on loopback: the status the client
sees and the row the metrics observer gets agree.
"""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc import aio

import rng_service
from rng_service import errors
from rng_service.rpc.errors import (
    STATUS_CAUSES,
    STATUS_TABLE,
    CallClass,
    StatusCause,
    cancelled_status,
    classify,
    rpc,
    status_causes_markdown,
    status_for,
)

ROOT = Path(__file__).resolve().parents[3]
C = grpc.StatusCode
REFUSAL, FAILURE = CallClass.REFUSAL, CallClass.FAILURE


def _all_error_classes() -> Iterator[type[errors.RngServiceError]]:
    for info in pkgutil.walk_packages(rng_service.__path__, "rng_service."):
        importlib.import_module(info.name)
    todo = [errors.RngServiceError]
    while todo:
        cls = todo.pop()
        yield cls
        todo.extend(cls.__subclasses__())


def _code_of(cls: type[errors.RngServiceError]) -> grpc.StatusCode:
    for base, code in STATUS_TABLE:
        if issubclass(cls, base):
            return code
    return C.INTERNAL


def test_every_error_class_of_the_service_has_a_row() -> None:
    missing = []
    seen = 0
    for cls in _all_error_classes():
        if cls.__module__.startswith("tests."):
            continue  # classes the tests below define
        seen += 1
        if (_code_of(cls), cls.cause) not in {(r.code, r.cause) for r in STATUS_CAUSES}:
            missing.append(f"{cls.__module__}.{cls.__name__}: ({_code_of(cls).name}, {cls.cause})")
    assert seen >= 15
    assert not missing, "add a row to STATUS_CAUSES for: " + "; ".join(missing)


def test_rows_are_unique_bounded_words_and_every_returned_code_has_a_default() -> None:
    keys = [(r.code, r.cause) for r in STATUS_CAUSES]
    assert len(keys) == len(set(keys))
    for row in STATUS_CAUSES:
        assert re.fullmatch(r"[a-z][a-z_]{1,30}", row.cause), row.cause
        assert row.call_class in (REFUSAL, FAILURE)
        assert row.meaning
    # Codes the wrapper can produce: the domain table's, plus INTERNAL, UNKNOWN (an abort
    # without a code), CANCELLED and DEADLINE_EXCEEDED (the caller went away or ran out of time).
    returned = {code for _, code in STATUS_TABLE} | {
        C.INTERNAL,
        C.UNKNOWN,
        C.CANCELLED,
        C.DEADLINE_EXCEEDED,
    }
    assert returned <= {r.code for r in STATUS_CAUSES}
    assert C.OK not in {r.code for r in STATUS_CAUSES}


# (code, cause) -> class, from the rule in the module docstring and the examples.
EXPECTED = {
    (C.INVALID_ARGUMENT, "invalid_argument"): REFUSAL,
    (C.INVALID_ARGUMENT, "undecodable"): REFUSAL,
    (C.OUT_OF_RANGE, "out_of_range"): REFUSAL,
    (C.NOT_FOUND, "not_found"): REFUSAL,
    (C.ALREADY_EXISTS, "request_id_reused"): REFUSAL,
    (C.FAILED_PRECONDITION, "precondition"): REFUSAL,
    (C.FAILED_PRECONDITION, "disabled"): REFUSAL,
    # Issue 15's round rules: the client asked for a slot its round already holds, out of the
    # rules' order, or in a voided round - the client's own mistake, never the service's.
    (C.FAILED_PRECONDITION, "slot_filled"): REFUSAL,
    (C.FAILED_PRECONDITION, "round_order"): REFUSAL,
    (C.FAILED_PRECONDITION, "round_voided"): REFUSAL,
    (C.UNAUTHENTICATED, "unconfigured_identity"): REFUSAL,
    (C.UNAUTHENTICATED, "ambiguous_identity"): REFUSAL,
    (C.UNAUTHENTICATED, "no_identity"): REFUSAL,
    (C.PERMISSION_DENIED, "role"): REFUSAL,
    (C.PERMISSION_DENIED, "table"): REFUSAL,
    (C.PERMISSION_DENIED, "kind"): REFUSAL,
    (C.PERMISSION_DENIED, "profile"): REFUSAL,
    (C.PERMISSION_DENIED, "client"): REFUSAL,
    (C.RESOURCE_EXHAUSTED, "rate_limit"): REFUSAL,
    (C.RESOURCE_EXHAUSTED, "queue_full"): FAILURE,
    # Issue 35: over gRPC's own size limits (message, metadata): what the client sent.
    (C.RESOURCE_EXHAUSTED, "grpc_limit"): REFUSAL,
    (C.CANCELLED, "client_cancelled"): REFUSAL,
    (C.DEADLINE_EXCEEDED, "session_time_limit"): REFUSAL,
    (C.DEADLINE_EXCEEDED, "client_deadline"): FAILURE,
    (C.UNAVAILABLE, "generator"): FAILURE,
    (C.UNAVAILABLE, "storage"): FAILURE,
    (C.UNAVAILABLE, "shutting_down"): FAILURE,
    (C.UNAVAILABLE, "unavailable"): FAILURE,
    (C.DATA_LOSS, "integrity"): FAILURE,
    (C.INTERNAL, "unexpected"): FAILURE,
    (C.UNKNOWN, "unknown"): FAILURE,
}


def test_the_table_classes_each_pair_as_expected() -> None:
    assert {(r.code, r.cause): r.call_class for r in STATUS_CAUSES} == EXPECTED


def test_the_policys_denials_are_refusals_with_their_reason_as_cause() -> None:
    from rng_service.clock import FakeClock
    from rng_service.rpc.auth import Authorizer
    from rng_service.security.policy import ClientPolicy, Policy, Principal, RateLimit, Role

    game = ClientPolicy(
        identity="g",
        roles=frozenset({Role.GAME_SERVER}),
        tables=frozenset({"T1"}),
        kinds=frozenset({"roulette_spin"}),
        profiles=frozenset({"p"}),
        # Four tokens: the table, profile and client refusals below come after the rate limit
        # (they need the request body, which is decoded after it: docs/security.md) and spend
        # one each; the role and kind refusals spend none.
        rate_limit=RateLimit(1.0, 4),
    )
    other = ClientPolicy(identity="h", roles=frozenset({Role.AUDITOR}))
    policy = Policy([game, other], FakeClock())
    me = Principal(game)
    denials = [
        policy.identify(["nobody"]),
        policy.identify(["g", "h"]),
        policy.check(me, "GetEntries", table_id=None, profile=None),
        policy.check(me, "RollDice", table_id="T1", profile=None),
        policy.check(me, "SpinRoulette", table_id="T9", profile=None),
        policy.check(me, "SpinRoulette", table_id="T1", profile="q"),
        policy.check(me, "GetTableHistory", table_id="T1", profile=None, client="h"),
    ]
    assert policy.check(me, "SpinRoulette", table_id="T1", profile=None) is None  # one token
    denials.append(policy.check(me, "SpinRoulette", table_id="T1", profile=None))
    errors_seen: list[errors.RngServiceError] = []
    for denied in denials:
        assert denied is not None
        assert not isinstance(denied, Principal)
        assert denied.reason == denied.error.cause  # one word for both metrics
        errors_seen.append(denied.error)

    class NoNames:  # a TLS peer whose certificate names nothing
        def auth_context(self) -> dict[str, list[bytes]]:
            return {}

    authorizer = Authorizer.mtls([game], clock=FakeClock())
    with pytest.raises(errors.Unauthenticated) as info:
        authorizer.authorize("SpinRoulette", None, NoNames())
    errors_seen.append(info.value)
    rows = [classify(status_for(e), e.cause) for e in errors_seen]
    assert [(r.code, r.cause) for r in rows] == [
        (C.UNAUTHENTICATED, "unconfigured_identity"),
        (C.UNAUTHENTICATED, "ambiguous_identity"),
        (C.PERMISSION_DENIED, "role"),
        (C.PERMISSION_DENIED, "kind"),
        (C.PERMISSION_DENIED, "table"),
        (C.PERMISSION_DENIED, "profile"),
        (C.PERMISSION_DENIED, "client"),
        (C.RESOURCE_EXHAUSTED, "rate_limit"),
        (C.UNAUTHENTICATED, "no_identity"),
    ]
    assert all(r.call_class is REFUSAL for r in rows)


def test_errors_added_later_are_classed_by_their_base() -> None:
    # Subclasses without a cause of their own take their base class's row.
    class SlotFilled(errors.FailedPrecondition):
        pass

    class StoreTampered(errors.IntegrityError):
        pass

    slot = classify(status_for(SlotFilled("slot spin of T1/R1 is filled")), SlotFilled.cause)
    assert (slot.code, slot.cause, slot.call_class) == (
        C.FAILED_PRECONDITION,
        "precondition",
        REFUSAL,
    )
    bad = classify(status_for(StoreTampered("entry 7")), StoreTampered.cause)
    assert (bad.code, bad.cause, bad.call_class) == (C.DATA_LOSS, "integrity", FAILURE)


def test_an_unknown_cause_takes_its_codes_default_and_labels_stay_bounded() -> None:
    row = classify(C.RESOURCE_EXHAUSTED, "made_up")
    assert (row.cause, row.call_class) == ("queue_full", FAILURE)
    assert classify(C.UNAVAILABLE, "") is classify(C.UNAVAILABLE, "other")
    odd = classify(C.UNIMPLEMENTED, "x")
    assert (odd.cause, odd.call_class) == ("unclassified", FAILURE)
    assert classify(C.UNIMPLEMENTED, "y") is odd  # one row per code, not one per call
    assert classify(C.OK).labels == ("OK", "ok", "ok")


def test_operations_doc_renders_the_table() -> None:
    doc = (ROOT / "docs" / "operations" / "monitoring.md").read_text(encoding="utf-8")
    begin, end = "<!-- status-causes:begin -->\n", "<!-- status-causes:end -->"
    assert begin in doc
    assert end in doc
    block = doc.split(begin, 1)[1].split(end, 1)[0]
    assert block.strip() == status_causes_markdown().strip(), (
        "docs/operations/monitoring.md is out of date: run "
        "`.venv/bin/python scripts/render_status_table.py`"
    )


# --- the wrapper, through a real server ----------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.rows: list[tuple[str, StatusCause]] = []

    def rpc_finished(self, method: str, status: StatusCause, seconds: float) -> None:
        assert seconds >= 0
        self.rows.append((method, status))


class SlotFilled(errors.FailedPrecondition):
    """As issue 15 may add it: no cause of its own."""


Behaviour = Callable[[aio.ServicerContext[bytes, bytes]], Any]


class Servicer:
    def __init__(self, behaviours: dict[str, Behaviour]) -> None:
        self.rpc_observer = Recorder()
        self.behaviours = behaviours

    async def call(self, name: str, context: aio.ServicerContext[bytes, bytes]) -> bytes:
        result = self.behaviours[name](context)
        if asyncio.iscoroutine(result):
            result = await result
        return b"ok" if result is None else bytes(result)


def _raise(error: BaseException) -> Behaviour:
    def behave(context: aio.ServicerContext[bytes, bytes]) -> None:
        raise error

    return behave


async def _sleep(context: aio.ServicerContext[bytes, bytes]) -> None:
    await asyncio.sleep(30)


async def _abort_deadline(context: aio.ServicerContext[bytes, bytes]) -> None:
    await context.abort(C.DEADLINE_EXCEEDED, "a handler's own abort")


BEHAVIOURS: dict[str, Behaviour] = {
    "Ok": lambda context: None,
    "RateLimited": _raise(errors.Overloaded("rate limit", cause="rate_limit")),
    "QueueFull": _raise(errors.Overloaded("too many requests waiting")),
    "Slot": _raise(SlotFilled("slot filled")),
    "Generator": _raise(errors.GeneratorUnavailable("latched")),
    "Stopping": _raise(errors.ShuttingDown("stopping")),
    "Bug": _raise(ValueError("a bug")),
    "Abort": _abort_deadline,
    "Sleep": _sleep,
}


def _server(servicer: Servicer) -> grpc.GenericRpcHandler:
    handlers = {}
    for name in servicer.behaviours:

        @rpc(name)
        async def method(self: Servicer, request: bytes, context: Any, _name: str = name) -> bytes:
            return await self.call(_name, context)

        async def bound(request: bytes, context: Any, _m: Any = method) -> bytes:
            return bytes(await _m(servicer, request, context))

        handlers[name] = grpc.unary_unary_rpc_method_handler(bound)
    return grpc.method_handlers_generic_handler("test.Status", handlers)


def test_the_wrapper_reports_the_row_the_client_sees() -> None:
    servicer = Servicer(BEHAVIOURS)

    async def main() -> dict[str, grpc.StatusCode]:
        server = aio.server()
        server.add_generic_rpc_handlers((_server(servicer),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        seen: dict[str, grpc.StatusCode] = {}
        try:
            async with aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                for name in BEHAVIOURS:
                    call = channel.unary_unary(f"/test.Status/{name}")
                    try:
                        if name == "Sleep":
                            await call(b"", timeout=0.3)  # the client's deadline passes
                        else:
                            await call(b"", timeout=10)
                        seen[name] = C.OK
                    except grpc.RpcError as e:
                        seen[name] = e.code()
                for _ in range(200):  # the server has noticed the passed deadline (loaded CI)
                    if len(servicer.rpc_observer.rows) == len(BEHAVIOURS):
                        break
                    await asyncio.sleep(0.05)
                # the client goes away
                pending = channel.unary_unary("/test.Status/Sleep")(b"", timeout=10)
                await asyncio.sleep(0.3)
                pending.cancel()
            for _ in range(100):  # the server side notices the cancellation
                if len(servicer.rpc_observer.rows) == len(BEHAVIOURS) + 1:
                    break
                await asyncio.sleep(0.05)
        finally:
            await server.stop(0)
        return seen

    seen = asyncio.run(main())
    rows = servicer.rpc_observer.rows
    got = {method: status for method, status in rows[:-1]}
    expected = {
        "Ok": (C.OK, "ok", CallClass.OK),
        "RateLimited": (C.RESOURCE_EXHAUSTED, "rate_limit", REFUSAL),
        "QueueFull": (C.RESOURCE_EXHAUSTED, "queue_full", FAILURE),
        "Slot": (C.FAILED_PRECONDITION, "precondition", REFUSAL),
        "Generator": (C.UNAVAILABLE, "generator", FAILURE),
        "Stopping": (C.UNAVAILABLE, "shutting_down", FAILURE),
        "Bug": (C.INTERNAL, "unexpected", FAILURE),
        "Abort": (C.DEADLINE_EXCEEDED, "client_deadline", FAILURE),
        "Sleep": (C.DEADLINE_EXCEEDED, "client_deadline", FAILURE),
    }
    assert {m: (s.code, s.cause, s.call_class) for m, s in got.items()} == expected
    for name, (code, _, _) in expected.items():
        assert seen[name] == code, name  # what the client saw is what was counted
    last_method, last = rows[-1]
    assert last_method == "Sleep"
    assert (last.code, last.cause, last.call_class) == (C.CANCELLED, "client_cancelled", REFUSAL)


@pytest.mark.parametrize(
    ("remaining", "expected"),
    [
        (None, (C.CANCELLED, "client_cancelled")),  # a call without a deadline
        (5.0, (C.CANCELLED, "client_cancelled")),  # the caller went away early
        (0.5, (C.CANCELLED, "client_cancelled")),
        (0.09, (C.DEADLINE_EXCEEDED, "client_deadline")),  # the caller's deadline, seen early
        (0.0, (C.DEADLINE_EXCEEDED, "client_deadline")),
        (-0.2, (C.DEADLINE_EXCEEDED, "client_deadline")),
    ],
)
def test_a_cancellation_at_the_callers_deadline_counts_as_the_deadline(
    remaining: float | None, expected: tuple[grpc.StatusCode, str]
) -> None:
    # The service's copy of the deadline is later than the caller's by the request's transit,
    # so the cancellation of a caller whose deadline passed arrives with a little time left.
    status = cancelled_status(remaining)
    assert (status.code, status.cause) == expected
