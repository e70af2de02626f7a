"""mTLS, roles and rate limits through a real TLS channel to an in-process server on loopback.

One server with certificates from a development CA (``write_dev_ca``) and a FakeClock (rate
limit buckets never refill unless a test advances it). Every RPC of OutcomeService,
LogService and LabService (raw stream enabled) is called by each of the four roles: allowed
pairs answer OK, refused ones PERMISSION_DENIED, and a refused call draws and logs nothing
(tree size unchanged) and is counted. Handshake failures (no certificate, wrong CA, expired)
end as UNAVAILABLE before any handler runs.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from rng_service._proto.rng.v1 import (
    common_pb2,
    lab_pb2,
    lab_pb2_grpc,
    log_pb2,
    log_pb2_grpc,
    outcomes_pb2,
    outcomes_pb2_grpc,
)
from rng_service.clock import FakeClock
from rng_service.config import Config, load_config
from rng_service.log.entry import LogEntry
from rng_service.process.app import Service
from rng_service.rpc.client import ClientTls, RngClient
from rng_service.security.certs import IssuedCert, issue_ca, issue_client
from rng_service.security.policy import METHODS, Role
from tests.fakes import CounterEntropy
from tests.integration.conftest import Running, make_config, start, wait_for_sample

PROFILE = "mega_fire_blaze_example"
DZ = outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO
ROLE_CLIENT = {
    Role.GAME_SERVER: "game-1",
    Role.AUDITOR: "auditor-1",
    Role.LAB: "lab-1",
    Role.OPERATOR: "operator-1",
}
CLIENTS_TOML = """
[tls]
cert_file = "certs/server.pem"
key_file = "certs/server.key"
client_ca_file = "certs/ca.pem"

[certification]
raw_stream_enabled = true

[[clients]]
identity = "game-1"
roles = ["game_server"]
tables = ["T1", "T"]

[[clients]]
identity = "game-2"
roles = ["game_server"]
tables = ["T2"]
kinds = ["roulette_spin", "fire_numbers"]
profiles = ["some-other-profile"]

[[clients]]
identity = "auditor-1"
roles = ["auditor"]

[[clients]]
identity = "lab-1"
roles = ["lab"]

[[clients]]
identity = "operator-1"
roles = ["operator"]

[[clients]]
identity = "limited-1"
roles = ["game_server"]
tables = ["L1"]
rate_per_second = 1.0
burst = 2
"""
IDENTITIES = ["game-1", "game-2", "auditor-1", "lab-1", "operator-1", "limited-1", "stranger"]


@dataclass
class Secure:
    running: Running
    certs: Path
    clock: FakeClock
    channels: dict[str, grpc.Channel]

    @property
    def service(self) -> Service:
        return self.running.service

    def size(self) -> int:
        assert self.service.appender is not None
        return self.service.appender.tree_size

    def tls(self, identity: str) -> ClientTls:
        return ClientTls.from_files(
            self.certs / "ca.pem", self.certs / f"{identity}.pem", self.certs / f"{identity}.key"
        )

    def channel(self, identity: str) -> grpc.Channel:
        if identity not in self.channels:
            target = f"127.0.0.1:{self.running.port}"
            self.channels[identity] = grpc.secure_channel(target, self.tls(identity).credentials())
        return self.channels[identity]

    def denials(self, **labels: str) -> float:
        value = self.service.registry.get_sample_value("rng_auth_denials_total", labels)
        return value or 0.0

    def calls(self, method: str, code: str, cause: str, klass: str, at_least: float = 1) -> float:
        """The RPC metric's count (waiting briefly for ``at_least``: it is recorded just after
        the client has its status)."""
        labels = {"method": method, "code": code, "cause": cause, "class": klass}
        value = wait_for_sample(
            self.running, "rng_rpc_duration_seconds_count", labels, at_least=at_least
        )
        return value or 0.0


def secure_config(tmp: Path, toml: str = CLIENTS_TOML) -> Config:
    path = tmp / "config.toml"
    path.write_text(toml)
    base = make_config(tmp)  # the harness's ports, storage and key
    environ = {
        "RNG_SERVICE__SERVER__PORT": "0",
        "RNG_SERVICE__METRICS__ENABLED": "false",
        "RNG_SERVICE__STORAGE__PATH": str(base.storage.path),
        "RNG_SERVICE__LOG__KEY_FILE": str(base.log.key_file),
        "RNG_SERVICE__LOG__KEY_NAME": base.log.key_name,
        "RNG_SERVICE__LOG__ORIGIN": base.log.origin,
        "RNG_SERVICE__PROFILES__ALLOW_EXAMPLES": "true",
    }
    return load_config(path, environ=environ, base_dir=tmp)


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secure]:
    from rng_service.security.certs import write_dev_ca

    tmp = tmp_path_factory.mktemp("security")
    write_dev_ca(tmp / "certs", IDENTITIES, now=dt.datetime.now(dt.UTC))
    clock = FakeClock()
    running = start(secure_config(tmp), clock=clock)
    s = Secure(running=running, certs=tmp / "certs", clock=clock, channels={})
    try:
        yield s
    finally:
        for channel in s.channels.values():
            channel.close()
        running.stop()


def ctx(request_id: str, table_id: str = "T1", round_id: str = "") -> common_pb2.RequestContext:
    """The context of ``request_id``, in round ``R-<request_id>`` unless told."""
    return common_pb2.RequestContext(
        table_id=table_id, round_id=round_id or f"R-{request_id}", request_id=request_id
    )


# --- one valid request per RPC --------------------------------------------------------------

Call = Callable[[Secure, str, str], Any]


def _outcome(method: str, make: Callable[[str], Any]) -> Call:
    def call(s: Secure, identity: str, rid: str) -> Any:
        stub = outcomes_pb2_grpc.OutcomeServiceStub(s.channel(identity))
        rpc = getattr(stub, method)
        if method == "StreamBatch":
            return list(rpc(make(rid), timeout=20))
        return rpc(make(rid), timeout=20)

    return call


def _log(method: str, make: Callable[[], Any]) -> Call:
    def call(s: Secure, identity: str, rid: str) -> Any:
        stub = log_pb2_grpc.LogServiceStub(s.channel(identity))
        return getattr(stub, method)(make(), timeout=20)

    return call


def _raw(s: Secure, identity: str, rid: str) -> Any:
    stub = lab_pb2_grpc.LabServiceStub(s.channel(identity))
    request = lab_pb2.StreamRawOutputRequest(context=ctx(rid), num_bytes=2048)
    return list(stub.StreamRawOutput(request, timeout=20))


def _multiball(s: Secure, identity: str, rid: str) -> Any:
    """A game server's three balls follow a spin of the same round on 7, 17 or 27 (617c.2(e));
    a lab draws them alone."""
    stub = outcomes_pb2_grpc.OutcomeServiceStub(s.channel(identity))
    round_id = rid
    if identity == ROLE_CLIENT[Role.GAME_SERVER]:
        for i in range(1000):  # about one round in 13 qualifies
            round_id = f"{rid}-{i}"
            spin = stub.SpinRoulette(
                o.SpinRouletteRequest(context=ctx(f"spin-{round_id}", round_id=round_id),
                                      wheel=DZ), timeout=20,
            )  # fmt: skip
            if spin.result.number in ("7", "17", "27"):
                break
    return stub.DrawMultiBall(
        o.DrawMultiBallRequest(context=ctx(rid, round_id=round_id), wheel=DZ, balls=3),
        timeout=20,
    )


def _bonus(s: Secure, identity: str, rid: str) -> Any:
    """The bonus follows the caller's own Fire Number draw and a spin of the same round on one
    of the Fire Numbers; only a game server or a lab can make them (other roles are refused
    first)."""
    stub = outcomes_pb2_grpc.OutcomeServiceStub(s.channel(identity))
    round_id = rid
    if identity in (ROLE_CLIENT[Role.GAME_SERVER], ROLE_CLIENT[Role.LAB]):
        for i in range(3000):  # about one round in 27 qualifies
            round_id = f"{rid}-{i}"
            fire = stub.SelectFireNumbers(
                o.SelectFireNumbersRequest(context=ctx(f"fire-{round_id}", round_id=round_id),
                                           profile=PROFILE), timeout=20,
            )  # fmt: skip
            spin = stub.SpinRoulette(
                o.SpinRouletteRequest(context=ctx(f"spin-{round_id}", round_id=round_id),
                                      wheel=o.WHEEL_TYPE_SINGLE_ZERO), timeout=20,
            )  # fmt: skip
            if int(spin.result.number) in fire.numbers:
                break
    return stub.PlayMegaFireBlazeBonus(
        o.PlayMegaFireBlazeBonusRequest(context=ctx(rid, round_id=round_id), profile=PROFILE),
        timeout=20,
    )


o = outcomes_pb2
CALLS: dict[str, Call] = {
    "SpinRoulette": _outcome(
        "SpinRoulette", lambda r: o.SpinRouletteRequest(context=ctx(r), wheel=DZ)
    ),
    "DrawMultiBall": _multiball,
    "SelectFireNumbers": _outcome(
        "SelectFireNumbers", lambda r: o.SelectFireNumbersRequest(context=ctx(r), profile=PROFILE)
    ),
    "PlayMegaFireBlazeBonus": _bonus,
    "DrawJackpotTier": _outcome(
        "DrawJackpotTier", lambda r: o.DrawJackpotTierRequest(context=ctx(r), profile=PROFILE)
    ),
    "RollDice": _outcome("RollDice", lambda r: o.RollDiceRequest(context=ctx(r), count=3, sides=6)),
    "ShuffleCards": _outcome(
        "ShuffleCards", lambda r: o.ShuffleCardsRequest(context=ctx(r), decks=1)
    ),
    "DrawUniformIntegers": _outcome(
        "DrawUniformIntegers",
        lambda r: o.DrawUniformIntegersRequest(context=ctx(r), low=1, high=10, count=2),
    ),
    "DrawWeighted": _outcome(
        "DrawWeighted", lambda r: o.DrawWeightedRequest(context=ctx(r), weights=[1, 2], count=1)
    ),
    "ListProfiles": _outcome("ListProfiles", lambda r: o.ListProfilesRequest()),
    "GetProfile": _outcome("GetProfile", lambda r: o.GetProfileRequest(name=PROFILE)),
    "DrawBatch": _outcome(
        "DrawBatch",
        lambda r: o.DrawBatchRequest(context=ctx(r), count=10, dice=o.DiceBatch(count=1, sides=6)),
    ),
    "StreamBatch": _outcome(
        "StreamBatch",
        lambda r: o.StreamBatchRequest(
            context=ctx(r), count=10, chunk_size=5, uniform=o.UniformBatch(low=1, high=6)
        ),
    ),
    "VoidRound": _outcome(
        "VoidRound",
        lambda r: o.VoidRoundRequest(context=ctx(r), client="game-1", reason="wheel jammed"),
    ),
    "GetPublicKeys": _log("GetPublicKeys", log_pb2.GetPublicKeysRequest),
    "GetLatestCheckpoint": _log("GetLatestCheckpoint", log_pb2.GetLatestCheckpointRequest),
    "PublishCheckpoint": _log("PublishCheckpoint", log_pb2.PublishCheckpointRequest),
    "GetCheckpoints": _log("GetCheckpoints", log_pb2.GetCheckpointsRequest),
    "GetInclusionProof": _log(
        "GetInclusionProof", lambda: log_pb2.GetInclusionProofRequest(index=0)
    ),
    "GetConsistencyProof": _log(
        "GetConsistencyProof", lambda: log_pb2.GetConsistencyProofRequest(first_size=1)
    ),
    "GetEntries": _log("GetEntries", lambda: log_pb2.GetEntriesRequest(start=0, end=1)),
    "FindEntries": _log("FindEntries", lambda: log_pb2.FindEntriesRequest(table_id="T1")),
    "GetTableHistory": _log(
        "GetTableHistory", lambda: log_pb2.GetTableHistoryRequest(table_id="T1")
    ),
    "StreamRawOutput": _raw,
}


def _proto_methods() -> set[str]:
    return {
        m.name
        for module, name in (
            (outcomes_pb2, "OutcomeService"),
            (log_pb2, "LogService"),
            (lab_pb2, "LabService"),
        )
        for m in module.DESCRIPTOR.services_by_name[name].methods
    }


def test_every_rpc_is_in_the_policy_table_and_in_this_test() -> None:
    assert set(METHODS) == _proto_methods() == set(CALLS)


def _seed(s: Secure) -> None:
    """At least one entry, so that log reads and proofs have something to answer with."""
    if s.size() == 0:
        CALLS["SpinRoulette"](s, "game-1", "seed")


@pytest.mark.parametrize("role", list(Role), ids=lambda r: r.value)
@pytest.mark.parametrize("method", sorted(METHODS))
def test_role_by_method(secure: Secure, method: str, role: Role) -> None:
    _seed(secure)
    identity = ROLE_CLIENT[role]
    rid = f"{role.value}-{method}"
    allowed = role in METHODS[method].roles
    before = secure.size()
    denied_before = secure.denials(method=method, reason="role", role=role.value, client=identity)
    if allowed:
        reply = CALLS[method](secure, identity, rid)
        assert reply is not None
        kind = METHODS[method].kind
        if kind:  # a game-server draw logs the kind the policy table names, as this client
            assert secure.size() > before
            assert METHODS[method].kind == _last_entry(secure).kind
            assert _last_entry(secure).client == identity
        return
    with pytest.raises(grpc.RpcError) as info:
        CALLS[method](secure, identity, rid)
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert method in (info.value.details() or "")
    assert secure.size() == before
    assert (
        secure.denials(method=method, reason="role", role=role.value, client=identity)
        == denied_before + 1
    )


def _last_entry(s: Secure) -> LogEntry:
    storage = s.service._storage
    assert storage is not None
    size = storage.tree_size()
    return LogEntry.decode(storage.entries(size - 1, size)[0].data)


# --- scopes of a game server ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "request_", "method", "reason"),
    [
        ("table", o.SpinRouletteRequest(context=ctx("g2-t", table_id="T1"), wheel=DZ),
         "SpinRoulette", "table"),
        ("kind", o.RollDiceRequest(context=ctx("g2-k", table_id="T2"), count=1, sides=6),
         "RollDice", "kind"),
        ("profile", o.SelectFireNumbersRequest(context=ctx("g2-p", table_id="T2"), profile=PROFILE),
         "SelectFireNumbers", "profile"),
    ],
)  # fmt: skip
def test_a_game_server_outside_its_tables_kinds_or_profiles_is_denied(
    secure: Secure, name: str, request_: Any, method: str, reason: str,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    stub = outcomes_pb2_grpc.OutcomeServiceStub(secure.channel("game-2"))
    before = secure.size()
    with caplog.at_level(logging.WARNING), pytest.raises(grpc.RpcError) as info:
        getattr(stub, method)(request_, timeout=20)
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert name in (info.value.details() or "")
    assert secure.size() == before
    assert secure.denials(method=method, reason=reason, role="game_server", client="game-2") == 1
    assert secure.calls(method, "PERMISSION_DENIED", reason, "refusal") == 1
    events = [r.msg for r in caplog.records if isinstance(r.msg, dict)]
    assert {
        "event": "denied",
        "method": method,
        "reason": reason,
        "identity": "game-2",
    }.items() <= (events[-1].items())


def test_a_game_server_within_its_scope_draws(secure: Secure) -> None:
    stub = outcomes_pb2_grpc.OutcomeServiceStub(secure.channel("game-2"))
    before = secure.size()
    stub.SpinRoulette(o.SpinRouletteRequest(context=ctx("g2-ok", table_id="T2"), wheel=DZ))
    assert secure.size() == before + 1


# --- identity ---------------------------------------------------------------------------------


def test_idempotency_is_scoped_to_the_client_identity(secure: Secure) -> None:
    request = o.SpinRouletteRequest(context=ctx("same-id", round_id="R-same"), wheel=DZ)
    first = outcomes_pb2_grpc.OutcomeServiceStub(secure.channel("game-1")).SpinRoulette(request)
    again = outcomes_pb2_grpc.OutcomeServiceStub(secure.channel("game-1")).SpinRoulette(request)
    request = o.SpinRouletteRequest(context=ctx("same-id", "T2", "R-same"), wheel=DZ)
    other = outcomes_pb2_grpc.OutcomeServiceStub(secure.channel("game-2")).SpinRoulette(request)
    assert again.receipt.replayed
    assert again.receipt.index == first.receipt.index
    assert not other.receipt.replayed
    assert other.receipt.index != first.receipt.index


def test_a_bonus_cannot_use_another_clients_fire_numbers(secure: Secure) -> None:
    """A round is the caller's own: another client's draw of the same round id is not in it
    (each at its own table: a table has one game server), and the refusal tells nothing about
    that entry or the log (the same answer for its index, an index beyond the log, and
    none)."""
    game1 = outcomes_pb2_grpc.OutcomeServiceStub(secure.channel("game-1"))
    drawn = game1.SelectFireNumbers(
        o.SelectFireNumbersRequest(context=ctx("x-fire", round_id="RX"), profile=PROFILE)
    )
    before = secure.size()
    answers = []
    for index in (drawn.receipt.index, 10**12, None):
        secure.clock.advance(10)  # limited-1's bucket is full again
        request = o.PlayMegaFireBlazeBonusRequest(
            context=ctx("x-bonus", "L1", "RX"), profile=PROFILE
        )
        if index is not None:
            request.fire_numbers_index = index
        with pytest.raises(grpc.RpcError) as info:
            outcomes_pb2_grpc.OutcomeServiceStub(
                secure.channel("limited-1")
            ).PlayMegaFireBlazeBonus(request)
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        answers.append(info.value.details())
    assert answers[0] == answers[1] == answers[2]
    assert "this round has no Fire Number draw" in (answers[0] or "")
    assert str(drawn.receipt.index) not in (answers[0] or "")
    assert secure.size() == before


def test_an_operator_voids_a_game_servers_round(secure: Secure) -> None:
    game1 = outcomes_pb2_grpc.OutcomeServiceStub(secure.channel("game-1"))
    operator = outcomes_pb2_grpc.OutcomeServiceStub(secure.channel("operator-1"))
    game1.SpinRoulette(o.SpinRouletteRequest(context=ctx("v-spin", round_id="RV"), wheel=DZ))
    void = operator.VoidRound(
        o.VoidRoundRequest(context=ctx("v-1", round_id="RV"), client="game-1", reason="jam")
    )
    assert void.client == "game-1"
    entry = LogEntry.decode(void.receipt.entry)
    assert (entry.kind, entry.slot, entry.client, entry.request_id) == (
        "round_void", "void", "game-1", "void@v-1",
    )  # fmt: skip
    assert entry.params == {"reason": "jam", "operator": "operator-1"}
    before = secure.size()
    with pytest.raises(grpc.RpcError) as info:
        game1.RollDice(o.RollDiceRequest(context=ctx("v-dice", round_id="RV"), count=1, sides=6))
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert f"voided at log index {void.receipt.index}" in (info.value.details() or "")
    # Only game servers' rounds, and the operator's own identity is not one.
    for client in ("", "auditor-1", "nobody"):
        with pytest.raises(grpc.RpcError) as info:
            operator.VoidRound(o.VoidRoundRequest(context=ctx("v-2"), client=client, reason="x"))
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (info.value.details() or "").startswith("client: ")
    assert secure.size() == before


def test_an_unconfigured_identity_is_unauthenticated(
    secure: Secure, caplog: pytest.LogCaptureFixture
) -> None:
    before = secure.size()
    for method in ("SpinRoulette", "GetPublicKeys"):
        with caplog.at_level(logging.WARNING), pytest.raises(grpc.RpcError) as info:
            CALLS[method](secure, "stranger", f"stranger-{method}")
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "stranger" not in (info.value.details() or "")
        assert (
            secure.denials(
                method=method, reason="unconfigured_identity", role="none", client="unconfigured"
            )
            == 1
        )
    assert secure.size() == before
    events = [r.msg for r in caplog.records if isinstance(r.msg, dict)]
    assert events[-1]["event"] == "denied"
    assert events[-1]["identity"] == "stranger"
    assert events[-1]["configured"] is False


# --- rate limits ------------------------------------------------------------------------------


def test_rate_limit_per_client_then_refill(secure: Secure) -> None:
    stub = outcomes_pb2_grpc.OutcomeServiceStub(secure.channel("limited-1"))
    secure.clock.advance(10)  # a full bucket: burst 2

    def spin(rid: str) -> Any:
        return stub.SpinRoulette(
            o.SpinRouletteRequest(context=ctx(rid, "L1"), wheel=DZ), timeout=20
        )

    spin("rl-1")
    spin("rl-2")
    before = secure.size()
    with pytest.raises(grpc.RpcError) as info:
        spin("rl-3")
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "rate limit" in (info.value.details() or "")
    assert secure.size() == before
    assert (
        secure.denials(
            method="SpinRoulette", reason="rate_limit", role="game_server", client="limited-1"
        )
        >= 1
    )
    # a client's rate limit is a refusal: the RPC metric says so, apart from a full queue
    assert secure.calls("SpinRoulette", "RESOURCE_EXHAUSTED", "rate_limit", "refusal") >= 1
    assert secure.calls("SpinRoulette", "RESOURCE_EXHAUSTED", "queue_full", "failure", 0) == 0
    # other clients have their own buckets
    CALLS["RollDice"](secure, "game-1", "rl-other")
    secure.clock.advance(1.0)  # 1 call/s: one token back
    spin("rl-3")
    with pytest.raises(grpc.RpcError) as again:
        spin("rl-4")
    assert again.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


# --- the TLS handshake ------------------------------------------------------------------------


def _handshake_fails(s: Secure, credentials: grpc.ChannelCredentials) -> None:
    before = s.size()
    with grpc.secure_channel(f"127.0.0.1:{s.running.port}", credentials) as channel:
        stub = outcomes_pb2_grpc.OutcomeServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            stub.SpinRoulette(o.SpinRouletteRequest(context=ctx("hs"), wheel=DZ), timeout=10)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    assert s.size() == before


def _pem(issued: IssuedCert) -> tuple[bytes, bytes]:
    return issued.key_pem(), issued.cert_pem()


def test_no_client_certificate_fails_the_handshake(secure: Secure) -> None:
    ca = (secure.certs / "ca.pem").read_bytes()
    _handshake_fails(secure, grpc.ssl_channel_credentials(root_certificates=ca))


def test_a_certificate_from_another_ca_fails_the_handshake(secure: Secure) -> None:
    now = dt.datetime.now(dt.UTC)
    key, cert = _pem(issue_client(issue_ca("another CA", now=now), "game-1", now=now))
    ca = (secure.certs / "ca.pem").read_bytes()
    _handshake_fails(secure, grpc.ssl_channel_credentials(ca, key, cert))


def test_an_expired_certificate_fails_the_handshake(secure: Secure) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    now = dt.datetime.now(dt.UTC)
    ca_cert = x509.load_pem_x509_certificate((secure.certs / "ca.pem").read_bytes())
    ca_key = serialization.load_pem_private_key((secure.certs / "ca.key").read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    expired = issue_client(
        IssuedCert(ca_cert, ca_key), "game-1", now=now, not_after=now - dt.timedelta(days=1)
    )
    assert expired.cert.not_valid_after_utc < now
    key, cert = _pem(expired)
    _handshake_fails(secure, grpc.ssl_channel_credentials(ca_cert.public_bytes(
        serialization.Encoding.PEM), key, cert))  # fmt: skip
    # the same identity with a valid certificate still gets in
    CALLS["SpinRoulette"](secure, "game-1", "after-expired")


# --- the CLI client and start-up checks -------------------------------------------------------


def test_cli_call_with_ca_cert_and_key(secure: Secure, capsys: pytest.CaptureFixture[str]) -> None:
    from rng_service.cli.service import main

    c = secure.certs
    args = ["call", "--target", f"127.0.0.1:{secure.running.port}", "--ca", str(c / "ca.pem"),
            "--cert", str(c / "game-1.pem"), "--tls-key", str(c / "game-1.key")]  # fmt: skip
    before = secure.size()
    assert main([*args, "spin", "--wheel", "double_zero", "--table", "T1", "--round", "R"]) == 0
    assert secure.size() == before + 1
    spin = ["spin", "--wheel", "double_zero", "--table", "T", "--round", "R"]
    assert main([*args[:3], *spin]) == 1  # plaintext to the mTLS port
    assert "UNAVAILABLE" in capsys.readouterr().err
    assert main([*args[:5], *spin]) == 2
    assert "--cert, --tls-key needed too" in capsys.readouterr().err
    assert secure.size() == before + 1
    with RngClient(f"127.0.0.1:{secure.running.port}", tls=secure.tls("auditor-1")) as client:
        assert client.public_keys()
    assert "key=<hidden>" in repr(secure.tls("game-1"))


def _start_fails(config: Config) -> None:
    """Start-up checks come before anything is opened or bound, so no cleanup is needed."""
    asyncio.run(Service(config, entropy=CounterEntropy()).start())


def test_plaintext_off_loopback_is_refused_at_start_up(tmp_path: Path) -> None:
    from rng_service.process.app import StartupError

    config = make_config(tmp_path, RNG_SERVICE__SERVER__HOST="192.0.2.1")
    with pytest.raises(StartupError, match=r"^server\.host: '192\.0\.2\.1' is not a loopback"):
        _start_fails(config)


def test_plaintext_on_loopback_is_announced_and_everyone_is_the_default_client(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        running = start(make_config(tmp_path, RNG_SERVICE__SERVER__DEFAULT_CLIENT_ID="dev-box"))
    try:
        events = [r.msg for r in caplog.records if isinstance(r.msg, dict)]
        warning = next(e for e in events if e["event"] == "plaintext_development_mode")
        assert "DEVELOPMENT ONLY" in warning["message"]
        assert warning["client_id"] == "dev-box"
        reply = running.spin("dev-1")
        assert LogEntry.decode(reply.receipt.entry).client == "dev-box"
        running.log.PublishCheckpoint(log_pb2.PublishCheckpointRequest(), timeout=20)
    finally:
        running.stop()


def test_a_missing_server_certificate_file_is_a_startup_error(tmp_path: Path) -> None:
    from rng_service.process.app import StartupError

    toml = CLIENTS_TOML.replace("certs/server.pem", "certs/absent.pem")
    with pytest.raises(StartupError, match=r"^tls\.cert_file: cannot read .*absent\.pem"):
        _start_fails(secure_config(tmp_path, toml))


def test_log_client_reads_with_an_auditor_certificate_only(secure: Secure) -> None:
    from rng_service.errors import Unavailable
    from rng_service.rpc.log_servicer import LogClient

    _seed(secure)
    target = f"127.0.0.1:{secure.running.port}"
    with LogClient(target, tls=secure.tls("auditor-1")) as client:
        assert len(client.entries(0, 1)) == 1
        assert client.latest_checkpoint()
    with (
        LogClient(target, tls=secure.tls("game-1")) as client,
        pytest.raises(Unavailable, match="GetEntries: PERMISSION_DENIED"),
    ):
        client.entries(0, 1)


# --- undecodable bodies: identity, role and rate limit come first --------------------------------

GARBAGE = bytes.fromhex("0a060a04fffec328")  # a string field holding bytes that are not UTF-8


def _raw(secure: Secure, identity: str, path: str) -> grpc.RpcError:
    call = secure.channel(identity).unary_unary(path)  # no serializers: the bytes as they are
    with pytest.raises(grpc.RpcError) as info:
        call(GARBAGE, timeout=20)
    return info.value


def test_authorization_and_rate_limits_run_before_the_body_is_decoded(secure: Secure) -> None:
    spin = "/rng.v1.OutcomeService/SpinRoulette"
    before = secure.size()
    assert _raw(secure, "stranger", spin).code() == grpc.StatusCode.UNAUTHENTICATED
    assert _raw(secure, "auditor-1", spin).code() == grpc.StatusCode.PERMISSION_DENIED
    assert _raw(secure, "game-2", "/rng.v1.OutcomeService/RollDice").code() == (
        grpc.StatusCode.PERMISSION_DENIED  # its kinds: known from the method alone
    )
    secure.clock.advance(10)  # limited-1: a full bucket of 2
    for _ in range(2):
        error = _raw(secure, "limited-1", spin)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (error.details() or "").startswith("request: the body is not a valid ")
    # Undecodable bodies spend the caller's tokens like any call its role allows.
    assert _raw(secure, "limited-1", spin).code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert secure.size() == before


# --- round rules that depend on the role -------------------------------------------------------


def test_a_game_servers_blazing_7s_balls_need_the_rounds_spin_a_labs_do_not(
    secure: Secure,
) -> None:
    """617c.2(e): a game server's three balls follow its round's spin on 7, 17 or 27 (the
    refusal is FAILED_PRECONDITION, nothing logged); a lab draws them alone (rng-certify
    rtp --live, collect multiball_3)."""
    game1 = outcomes_pb2_grpc.OutcomeServiceStub(secure.channel("game-1"))
    lab = outcomes_pb2_grpc.OutcomeServiceStub(secure.channel("lab-1"))

    def balls(stub: Any, rid: str, round_id: str) -> Any:
        return stub.DrawMultiBall(
            o.DrawMultiBallRequest(context=ctx(rid, round_id=round_id), wheel=DZ, balls=3),
            timeout=20,
        )

    before = secure.size()
    with pytest.raises(grpc.RpcError) as info:
        balls(game1, "b7-alone", "B7-1")
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert info.value.details() == (
        "table 'T1' round 'B7-1': the Blazing 7's bonus round follows the round's spin that "
        "came to rest on 7, 17 or 27 (58 Pa. Code 617c.2(e)); this round has no spin yet"
    )
    assert secure.size() == before
    drawn = LogEntry.decode(balls(lab, "b7-lab", "B7-1").receipt.entry)
    assert (drawn.kind, drawn.client, "spin_index" in drawn.params) == ("multiball", "lab-1", False)
    # Spins of game-1's rounds until one lands on 7, 17 or 27: its balls then name it.
    for n in range(400):
        spun = game1.SpinRoulette(
            o.SpinRouletteRequest(context=ctx(f"b7-spin-{n}", round_id=f"B7-R{n}"), wheel=DZ)
        )
        if spun.result.number in ("7", "17", "27"):
            break
        with pytest.raises(grpc.RpcError) as info:
            balls(game1, f"b7-balls-{n}", f"B7-R{n}")
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert f"came to rest on {spun.result.number}, not on 7, 17 or 27" in str(
            info.value.details()
        )
    else:
        pytest.fail("no spin on 7, 17 or 27 in 400 spins")
    entry = LogEntry.decode(balls(game1, f"b7-balls-{n}", f"B7-R{n}").receipt.entry)
    assert entry.params["spin_index"] == spun.receipt.index
