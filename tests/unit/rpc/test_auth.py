"""Authorization without a network: the policy table, identity matching, token buckets on a fake
clock, the ``rpc`` wrapper refusing before the handler runs, and the dev-CA certificates."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import stat
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from grpc import aio
from prometheus_client import CollectorRegistry

from rng_service._proto.rng.v1 import common_pb2, log_pb2, outcomes_pb2
from rng_service.clock import FakeClock
from rng_service.errors import Overloaded, PermissionDenied, Unauthenticated
from rng_service.metrics import Metrics
from rng_service.rpc.auth import Authorizer, caller_id
from rng_service.rpc.client import ClientTls
from rng_service.rpc.errors import rpc
from rng_service.security.certs import issue_ca, issue_client, write_dev_ca
from rng_service.security.policy import (
    ALL_ROLES,
    GAME_KINDS,
    METHODS,
    ClientPolicy,
    Policy,
    Principal,
    RateLimit,
    Role,
    TokenBucket,
)
from tests.unit.rpc.conftest import FakeContext

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
GAME = ClientPolicy(
    identity="game-1",
    roles=frozenset({Role.GAME_SERVER}),
    tables=frozenset({"T1"}),
    kinds=frozenset({"roulette_spin", "fire_numbers"}),
    profiles=frozenset({"p1"}),
)
AUDITOR = ClientPolicy(identity="auditor-1", roles=frozenset({Role.AUDITOR}))


class TlsContext(FakeContext):
    """A fake servicer context with the peer properties gRPC core puts in auth_context()."""

    def __init__(self, cn: str | None = None, sans: tuple[str, ...] = ()) -> None:
        super().__init__()
        self._props: dict[str, list[bytes]] = {"transport_security_type": [b"ssl"]}
        if cn is not None:
            self._props["x509_common_name"] = [cn.encode()]
        if sans:
            self._props["x509_subject_alternative_name"] = [s.encode() for s in sans]

    def auth_context(self) -> dict[str, list[bytes]]:
        return self._props


class Recorder:
    def __init__(self) -> None:
        self.denials: list[dict[str, str]] = []

    def denied(self, *, method: str, reason: str, role: str, client: str) -> None:
        self.denials.append({"method": method, "reason": reason, "role": role, "client": client})


def spin(table: str = "T1") -> outcomes_pb2.SpinRouletteRequest:
    return outcomes_pb2.SpinRouletteRequest(
        context=common_pb2.RequestContext(table_id=table, round_id="R", request_id="q")
    )


def authorizer(
    *clients: ClientPolicy, clock: FakeClock | None = None
) -> tuple[Authorizer, Recorder]:
    recorder = Recorder()
    return Authorizer.mtls(list(clients), clock=clock or FakeClock(), observer=recorder), recorder


# --- the table --------------------------------------------------------------------------------


def test_each_role_has_its_methods() -> None:
    by_role = {r: sorted(m for m, rule in METHODS.items() if r in rule.roles) for r in Role}
    public = ["GetProfile", "GetPublicKeys", "ListProfiles"]
    single = sorted(m for m, rule in METHODS.items() if rule.kind)
    assert len(single) == 9
    assert by_role[Role.LAB] == sorted(
        ["DrawBatch", "StreamBatch", "StreamRawOutput", *single, *public]
    )
    assert by_role[Role.OPERATOR] == sorted(
        ["GetLatestCheckpoint", "PublishCheckpoint", "VoidRound", *public]
    )
    assert by_role[Role.AUDITOR] == sorted(
        ["FindEntries", "GetCheckpoints", "GetConsistencyProof", "GetEntries",
         "GetInclusionProof", "GetLatestCheckpoint", "GetTableHistory", *public]
    )  # fmt: skip
    assert set(by_role[Role.GAME_SERVER]) - set(public) == {
        m for m, rule in METHODS.items() if rule.kind
    } | {"GetTableHistory"}
    assert len(GAME_KINDS) == len(set(GAME_KINDS)) == 9


# --- identity ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cn", "sans", "expected"),
    [
        ("game-1", (), "game-1"),
        ("something else", ("game-1",), "game-1"),
        (None, ("spiffe://casino/x", "auditor-1"), "auditor-1"),
    ],
)
def test_identity_is_the_cn_or_a_subject_alt_name(
    cn: str | None, sans: tuple[str, ...], expected: str
) -> None:
    auth, _ = authorizer(GAME, AUDITOR)
    request = log_pb2.GetPublicKeysRequest()
    assert auth.authorize("GetPublicKeys", request, TlsContext(cn, sans)).identity == expected


@pytest.mark.parametrize(
    ("cn", "sans", "reason"),
    [
        ("stranger", ("stranger.example",), "unconfigured_identity"),
        ("game-1", ("auditor-1",), "ambiguous_identity"),
        (None, (), "no_identity"),
    ],
)
def test_unknown_ambiguous_or_missing_identity_is_unauthenticated(
    cn: str | None, sans: tuple[str, ...], reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    auth, recorder = authorizer(GAME, AUDITOR)
    with caplog.at_level(logging.WARNING), pytest.raises(Unauthenticated):
        auth.authorize("GetPublicKeys", log_pb2.GetPublicKeysRequest(), TlsContext(cn, sans))
    assert recorder.denials == [
        {"method": "GetPublicKeys", "reason": reason, "role": "none", "client": "unconfigured"}
    ]
    event = caplog.records[-1].msg
    assert isinstance(event, dict)
    assert event["event"] == "denied"
    assert event["reason"] == reason


def test_logged_identity_is_truncated(caplog: pytest.LogCaptureFixture) -> None:
    auth, _ = authorizer(GAME)
    with caplog.at_level(logging.WARNING), pytest.raises(Unauthenticated) as info:
        auth.authorize("GetPublicKeys", log_pb2.GetPublicKeysRequest(), TlsContext("x" * 5000))
    event = caplog.records[-1].msg
    assert isinstance(event, dict)
    assert event["identity"] == "x" * 128
    assert "xxx" not in str(info.value)  # the caller's own name is not echoed back


# --- roles and scopes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "request_", "reason"),
    [
        ("GetEntries", log_pb2.GetEntriesRequest(), "role"),
        ("DrawBatch", outcomes_pb2.DrawBatchRequest(), "role"),
        ("NotAMethod", log_pb2.GetEntriesRequest(), "role"),
        ("SpinRoulette", spin("T9"), "table"),
        ("SpinRoulette", spin(""), "table"),
        ("RollDice", outcomes_pb2.RollDiceRequest(context=spin().context), "kind"),
        (
            "SelectFireNumbers",
            outcomes_pb2.SelectFireNumbersRequest(context=spin().context, profile="p2"),
            "profile",
        ),
    ],
)
def test_game_server_outside_its_role_or_scope(method: str, request_: Any, reason: str) -> None:
    auth, recorder = authorizer(GAME)
    with pytest.raises(PermissionDenied):
        auth.authorize(method, request_, TlsContext("game-1"))
    assert recorder.denials == [
        {"method": method, "reason": reason, "role": "game_server", "client": "game-1"}
    ]


@pytest.mark.parametrize(
    ("request_", "reason"),
    [
        (log_pb2.GetTableHistoryRequest(client="game-2", table_id="T1"), "client"),
        (log_pb2.GetTableHistoryRequest(table_id="T9"), "table"),
        (log_pb2.GetTableHistoryRequest(client="game-1", table_id="T9"), "table"),
    ],
)
def test_a_game_server_reads_its_own_table_histories_only(request_: Any, reason: str) -> None:
    auth, recorder = authorizer(GAME, AUDITOR)
    with pytest.raises(PermissionDenied):
        auth.authorize("GetTableHistory", request_, TlsContext("game-1"))
    assert recorder.denials == [
        {"method": "GetTableHistory", "reason": reason, "role": "game_server", "client": "game-1"}
    ]
    for own in (
        log_pb2.GetTableHistoryRequest(table_id="T1"),
        log_pb2.GetTableHistoryRequest(client="game-1", table_id="T1"),
    ):
        assert auth.authorize("GetTableHistory", own, TlsContext("game-1")).identity == "game-1"
    # an auditor reads any client's table
    auth.authorize("GetTableHistory", request_, TlsContext("auditor-1"))
    assert len(recorder.denials) == 1


def test_game_server_within_its_scope() -> None:
    auth, recorder = authorizer(GAME)
    request = outcomes_pb2.SelectFireNumbersRequest(context=spin().context, profile="p1")
    assert auth.authorize("SelectFireNumbers", request, TlsContext("game-1")).identity == "game-1"
    assert auth.authorize("SpinRoulette", spin(), TlsContext("game-1")).identity == "game-1"
    assert recorder.denials == []


def test_development_mode_is_one_client_with_every_role() -> None:
    auth = Authorizer.development("dev", rate_limit=None, clock=FakeClock())
    for method in METHODS:
        request = spin("any-table") if METHODS[method].kind else log_pb2.GetEntriesRequest()
        principal = auth.authorize(method, request, FakeContext())  # type: ignore[arg-type]
        assert principal.identity == "dev"
        assert principal.client.roles == ALL_ROLES


def test_role_label_joins_sorted_roles() -> None:
    both = ClientPolicy(identity="x", roles=frozenset({Role.OPERATOR, Role.AUDITOR}))
    assert Principal(both).role_label == "auditor+operator"


def test_duplicate_identities_are_refused_by_the_policy() -> None:
    with pytest.raises(ValueError, match="configured twice"):
        Policy([GAME, GAME], FakeClock())


# --- rate limits ------------------------------------------------------------------------------


def test_token_bucket_on_a_fake_clock() -> None:
    clock = FakeClock()
    bucket = TokenBucket(RateLimit(rate_per_second=2.0, burst=3), clock)
    assert [bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take() == pytest.approx(0.5)
    clock.advance(0.25)
    assert bucket.take() == pytest.approx(0.25)
    clock.advance(0.25)
    assert bucket.take() == 0.0
    clock.advance(100)  # never more than the burst
    assert [bucket.take() for _ in range(4)][-1] > 0.0


def test_rate_limit_is_per_identity_and_spent_only_by_allowed_calls() -> None:
    clock = FakeClock()
    limited = ClientPolicy(
        identity="lab-1", roles=frozenset({Role.LAB}), rate_limit=RateLimit(1.0, 2)
    )
    auth, recorder = authorizer(limited, AUDITOR, clock=clock)
    lab = TlsContext("lab-1")
    for _ in range(5):  # refused by role: no tokens spent
        with pytest.raises(PermissionDenied):
            auth.authorize("GetEntries", log_pb2.GetEntriesRequest(), lab)
    batch = outcomes_pb2.DrawBatchRequest()
    auth.authorize("DrawBatch", batch, lab)
    auth.authorize("DrawBatch", batch, lab)
    with pytest.raises(Overloaded, match=r"1 calls/s, burst 2\); retry in 1\.000 s"):
        auth.authorize("DrawBatch", batch, lab)
    assert recorder.denials[-1] == {
        "method": "DrawBatch", "reason": "rate_limit", "role": "lab", "client": "lab-1"
    }  # fmt: skip
    for _ in range(10):  # the auditor has no limit
        auth.authorize("GetEntries", log_pb2.GetEntriesRequest(), TlsContext("auditor-1"))
    clock.advance(1.0)
    auth.authorize("DrawBatch", batch, lab)


# --- the rpc wrapper --------------------------------------------------------------------------


class Servicer:
    def __init__(self, auth: Authorizer | None) -> None:
        self.authorizer = auth
        self.ran: list[str] = []

    @rpc("SpinRoulette")
    async def SpinRoulette(self, request: Any, context: Any) -> str:
        self.ran.append(caller_id("fallback"))
        return "ok"


def run(servicer: Servicer, context: FakeContext) -> Any:
    return asyncio.run(servicer.SpinRoulette(spin(), context))


def test_rpc_refuses_before_the_handler_runs() -> None:
    auth, _ = authorizer(AUDITOR)
    servicer = Servicer(auth)
    context = TlsContext("auditor-1")
    with pytest.raises(aio.AbortError):
        run(servicer, context)
    assert context.status == grpc.StatusCode.PERMISSION_DENIED
    assert servicer.ran == []
    context = TlsContext("stranger")
    with pytest.raises(aio.AbortError):
        run(servicer, context)
    assert context.status == grpc.StatusCode.UNAUTHENTICATED
    assert servicer.ran == []


def test_the_handler_sees_the_caller_and_nobody_else_after() -> None:
    auth, _ = authorizer(GAME)
    servicer = Servicer(auth)
    assert run(servicer, TlsContext("game-1")) == "ok"
    assert servicer.ran == ["game-1"]
    assert caller_id("fallback") == "fallback"
    assert run(Servicer(None), FakeContext()) == "ok"  # no authorizer: the fixed client id


def test_metrics_count_denials_by_method_reason_role_and_client() -> None:
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    auth = Authorizer.mtls([AUDITOR], clock=FakeClock(), observer=metrics)
    for _ in range(2):
        with pytest.raises(PermissionDenied):
            auth.authorize("SpinRoulette", spin(), TlsContext("auditor-1"))
    labels = {"method": "SpinRoulette", "reason": "role", "role": "auditor", "client": "auditor-1"}
    assert registry.get_sample_value("rng_auth_denials_total", labels) == 2.0


# --- certificates -----------------------------------------------------------------------------


def test_dev_ca_writes_certificates_and_private_keys_0600(tmp_path: Path) -> None:
    files = write_dev_ca(tmp_path / "ca", ["game-1", "auditor-1"], now=NOW, days=30)
    for key in (files.ca_key, files.server_key, *(k for _, k in files.clients.values())):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
    ca = x509.load_pem_x509_certificate(files.ca_cert.read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    server = x509.load_pem_x509_certificate(files.server_cert.read_bytes())
    sans = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    client = x509.load_pem_x509_certificate(files.clients["game-1"][0].read_bytes())
    assert client.issuer == ca.subject
    assert client.not_valid_after_utc == NOW + dt.timedelta(days=30)
    eku = client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    san = client.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["game-1"]
    with pytest.raises(FileExistsError):
        write_dev_ca(tmp_path / "ca", ["game-1"], now=NOW)


@pytest.mark.parametrize("identity", ["", "../x", "a b", "ca", "server", "x" * 65])
def test_dev_ca_refuses_identities_that_are_not_file_names(tmp_path: Path, identity: str) -> None:
    with pytest.raises(ValueError, match="client identity"):
        write_dev_ca(tmp_path, [identity], now=NOW)
    assert list(tmp_path.iterdir()) == []


def test_expired_client_certificate_is_expired() -> None:
    ca = issue_ca("ca", now=NOW)
    cert = issue_client(ca, "g", now=NOW, not_after=NOW - dt.timedelta(seconds=1)).cert
    assert cert.not_valid_after_utc < NOW
    assert cert.not_valid_before_utc < cert.not_valid_after_utc


def test_reprs_never_show_private_keys() -> None:
    issued = issue_client(issue_ca("ca", now=NOW), "g", now=NOW)
    assert "PRIVATE" not in repr(issued)
    assert repr(issued) == "IssuedCert(subject='CN=g')"
    tls = ClientTls(ca=b"ca", cert=b"cert", key=issued.key_pem())
    assert "PRIVATE" not in repr(tls)


def test_the_security_package_imports_no_grpc_or_metrics() -> None:
    import json
    import subprocess
    import sys

    code = (
        "import json, sys, rng_service.security.policy, rng_service.security.certs; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    forbidden = ("grpc", "prometheus_client", "rng_service._proto", "rng_service.rpc")
    assert not [m for m in loaded for f in forbidden if m == f or m.startswith(f + ".")]
