"""Routing by identity: each call names its log (``rng-origin`` metadata, default the log served
here); a log that is not served here and a log the caller is not bound to get the same
PERMISSION_DENIED, word for word (docs/security.md, "Logs")."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from grpc import aio

from rng_service.clock import FakeClock
from rng_service.errors import PermissionDenied, Unauthenticated
from rng_service.rpc.auth import Authorizer, caller_id
from rng_service.rpc.errors import rpc
from rng_service.rpc.origin import ORIGIN_METADATA
from rng_service.security.policy import ClientPolicy, Policy, Principal, Role
from tests.unit.rpc.test_auth import Recorder, TlsContext, spin

A, B = "casino-a.example/log", "casino-b.example/log"
GAME_A = ClientPolicy(
    identity="game-a", roles=frozenset({Role.GAME_SERVER}), tables=frozenset({"T1"}),
    logs=frozenset({A}),
)  # fmt: skip
GAME_B = ClientPolicy(
    identity="game-b", roles=frozenset({Role.GAME_SERVER}), tables=frozenset({"T1"}),
    logs=frozenset({B}),
)  # fmt: skip
AUDITOR_AB = ClientPolicy(
    identity="auditor-ab", roles=frozenset({Role.AUDITOR, Role.GAME_SERVER}),
    tables=frozenset({"T9"}), logs=frozenset({A, B}),
)  # fmt: skip


class LogContext(TlsContext):
    def __init__(self, cn: str, origin: str | None) -> None:
        super().__init__(cn)
        self._metadata = () if origin is None else ((ORIGIN_METADATA, origin),)

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata


def _served(origin: str) -> tuple[Authorizer, Recorder]:
    recorder = Recorder()
    auth = Authorizer.mtls(
        [GAME_A, GAME_B, AUDITOR_AB], clock=FakeClock(), observer=recorder, origin=origin
    )
    return auth, recorder


class Servicer:
    def __init__(self, auth: Authorizer) -> None:
        self.authorizer = auth
        self.ran: list[str] = []

    @rpc("SpinRoulette")
    async def SpinRoulette(self, request: Any, context: Any) -> str:
        self.ran.append(caller_id("fallback"))
        return "ok"


def _refusal(auth: Authorizer, cn: str, origin: str | None) -> tuple[Any, str]:
    servicer = Servicer(auth)
    context = LogContext(cn, origin)
    with pytest.raises(aio.AbortError):
        asyncio.run(servicer.SpinRoulette(spin(), context))
    assert servicer.ran == []  # refused before the handler: nothing drawn
    return context.status, context.details


def test_a_bound_caller_uses_its_log_named_or_by_default() -> None:
    auth, _ = _served(A)
    for origin in (A, None, ""):
        servicer = Servicer(auth)
        assert asyncio.run(servicer.SpinRoulette(spin(), LogContext("game-a", origin))) == "ok"
        assert servicer.ran == ["game-a"]
    auditor = Servicer(_served(B)[0])
    assert asyncio.run(auditor.SpinRoulette(spin("T9"), LogContext("auditor-ab", B))) == "ok"


def test_an_unbound_log_is_refused_exactly_as_a_log_that_does_not_exist() -> None:
    served_b, recorder = _served(B)
    unbound = _refusal(served_b, "game-a", B)  # log B exists here; game-a is bound to A
    missing = _refusal(served_b, "game-a", "casino-z.example/log")
    assert unbound[0] == grpc.StatusCode.PERMISSION_DENIED
    # The same words whichever log was named that is not the caller's: a named log that does
    # not exist, and the log served here that the caller is not bound to.
    nowhere = _refusal(served_b, "game-a", "nowhere.example/log")
    assert unbound == (
        grpc.StatusCode.PERMISSION_DENIED,
        "the requested log is not available to client 'game-a'",
    )
    assert nowhere == missing == unbound
    # Named the same, the two cases are indistinguishable: log A asked where B is served
    # (A exists elsewhere in the deployment) and where nothing but a stranger's log is.
    elsewhere = _refusal(served_b, "game-b", A)
    served_c, _ = _served("casino-c.example/log")
    absent = _refusal(served_c, "game-b", A)
    assert elsewhere == absent
    assert {d["reason"] for d in recorder.denials} == {"log"}


def test_without_a_name_the_log_served_here_is_asked_for() -> None:
    served_b, _ = _served(B)
    assert _refusal(served_b, "game-a", None) == _refusal(served_b, "game-a", B)


def test_identity_comes_before_the_log() -> None:
    served_b, _ = _served(B)
    with pytest.raises(Unauthenticated):
        served_b.admit("SpinRoulette", LogContext("stranger", "nowhere.example/log"))


def test_policy_check_log_is_the_same_text_for_both_cases() -> None:
    policy = Policy([GAME_A], FakeClock())
    principal = policy.identify(["game-a"])
    assert isinstance(principal, Principal)
    unbound = Policy.check_log(principal, B, served=B)
    absent = Policy.check_log(principal, B, served="casino-c.example/log")
    assert unbound is not None
    assert absent is not None
    assert isinstance(unbound.error, PermissionDenied)
    assert str(unbound.error) == str(absent.error)
    assert unbound.reason == absent.reason == "log"
    assert Policy.check_log(principal, A, served=A) is None


def test_a_table_id_may_recur_across_logs_in_the_policy() -> None:
    Policy([GAME_A, GAME_B], FakeClock())  # both hold T1, each in its own log
    same_log = ClientPolicy(
        identity="game-a2", roles=frozenset({Role.GAME_SERVER}), tables=frozenset({"T1"}),
        logs=frozenset({A}),
    )  # fmt: skip
    with pytest.raises(ValueError, match="both granted table 'T1'"):
        Policy([GAME_A, same_log], FakeClock())


def test_a_log_served_elsewhere_is_refused_even_to_a_caller_bound_to_it() -> None:
    served_b, _ = _served(B)
    status, details = _refusal(served_b, "auditor-ab", A)  # bound to A, but A is not here
    assert (status, details) == (
        grpc.StatusCode.PERMISSION_DENIED,
        "the requested log is not available to client 'auditor-ab'",
    )
