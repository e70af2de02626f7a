"""``rng-service dev-ca --client NAME[:ROLE[:TABLES]]`` prints least-privilege entries.

The printed ``[tls]`` and ``[[clients]]`` lines are pasted, as printed, into a config file; a
service started with it over mTLS lets each identity do what its role allows and nothing more:
the auditor reads the log but cannot draw (PERMISSION_DENIED), the game server draws on its own
tables only and reads nothing, and a plain NAME (no role) gets no entry, so only the health
service answers it. The role-by-method expectations come from docs/security.md ("Roles").
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import grpc
import pytest

from rng_service._proto.rng.v1 import log_pb2, log_pb2_grpc
from rng_service.cli.service import main as rng_service_main
from rng_service.rpc.client import ClientError, ClientTls, RngClient
from tests.integration.conftest import start
from tests.integration.test_security import secure_config

CLIENTS = ["game-1:game_server:T1,T2", "auditor-1:auditor", "lab-1:lab", "healthcheck"]


def dev_ca(out: Path, capsys: pytest.CaptureFixture[str], *clients: str) -> str:
    capsys.readouterr()
    args = ["dev-ca", "--out", str(out)]
    for client in clients:
        args += ["--client", client]
    assert rng_service_main(args) == 0
    return capsys.readouterr().out


def test_printed_entries_are_least_privilege(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    printed = tomllib.loads(dev_ca(tmp_path / "tls", capsys, *CLIENTS))
    entries = {c["identity"]: c for c in printed["clients"]}
    assert entries == {
        "game-1": {"identity": "game-1", "roles": ["game_server"], "tables": ["T1", "T2"]},
        "auditor-1": {"identity": "auditor-1", "roles": ["auditor"]},  # no tables, no draws
        "lab-1": {"identity": "lab-1", "roles": ["lab"]},
    }
    # every --client has its certificate, the plain NAME too
    for name in ("game-1", "auditor-1", "lab-1", "healthcheck"):
        assert (tmp_path / "tls" / f"{name}.pem").is_file()


def test_pasted_as_printed_the_auditor_cannot_draw_and_the_game_server_only_on_its_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    certs = tmp_path / "tls"
    config = secure_config(tmp_path, dev_ca(certs, capsys, *CLIENTS))  # pasted as printed
    assert config.tls.enabled
    running = start(config)
    target = f"127.0.0.1:{running.port}"

    def tls(identity: str) -> ClientTls:
        return ClientTls.from_files(
            certs / "ca.pem", certs / f"{identity}.pem", certs / f"{identity}.key"
        )

    def spin(identity: str, table: str, request_id: str) -> str:
        with RngClient(target, tls=tls(identity), timeout=10) as client:
            try:
                client.spin(
                    wheel="double_zero", table_id=table, round_id="R1", request_id=request_id
                )
            except ClientError as e:
                return e.code
        return "OK"

    def read_entries(identity: str) -> str:
        with grpc.secure_channel(target, tls(identity).credentials()) as channel:
            stub = log_pb2_grpc.LogServiceStub(channel)
            try:
                stub.GetEntries(log_pb2.GetEntriesRequest(start=0, end=1), timeout=10)
            except grpc.RpcError as e:
                return str(e.code().name)
        return "OK"

    try:
        assert spin("game-1", "T1", "g-1") == "OK"
        assert spin("game-1", "T2", "g-2") == "OK"
        assert spin("game-1", "T3", "g-3") == "PERMISSION_DENIED"  # not its table
        assert spin("auditor-1", "T1", "a-1") == "PERMISSION_DENIED"  # an auditor never draws
        assert spin("lab-1", "T1", "l-1") == "OK"  # a lab draws single outcomes too (rtp --live)
        assert spin("healthcheck", "T1", "h-1") == "UNAUTHENTICATED"  # no entry
        assert read_entries("auditor-1") == "OK"
        assert read_entries("game-1") == "PERMISSION_DENIED"
        assert read_entries("healthcheck") == "UNAUTHENTICATED"
        with RngClient(target, tls=tls("healthcheck"), timeout=10) as client:
            assert client.health() == "SERVING"
        assert running.service.appender is not None
        assert running.service.appender.tree_size == 3  # the allowed spins only
    finally:
        running.stop()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("game-1:game_server", "a game server needs its tables"),
        ("game-1:game_server:", "a game server needs its tables"),
        ("game-1:game_server:T1,,T2", "a game server needs its tables"),
        ("auditor-1:auditor:T1", "tables are for role game_server only"),
        ("x:admin", "role 'admin' is not allowed (allowed: game_server, auditor, lab, operator"),
    ],
)
def test_bad_client_specs_are_refused_before_anything_is_written(
    tmp_path: Path, spec: str, message: str
) -> None:
    with pytest.raises(SystemExit) as info:
        rng_service_main(["dev-ca", "--out", str(tmp_path / "tls"), "--client", spec])
    assert message in str(info.value.code)
    assert not (tmp_path / "tls").exists()


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        (["g1:game_server:T1,T2", "a:auditor", "g2:game_server:T2"],
         "--client 'g2:game_server:T2': table 'T2' is also granted to --client "
         "'g1:game_server:T1,T2'; one physical table has one game server"),
        (["g1:game_server:*", "g2:game_server:T9"],
         "--client 'g2:game_server:T9': table 'T9' is also granted to --client "
         "'g1:game_server:*'"),
        (["g1:game_server:T9", "g2:game_server:*"],
         "--client 'g2:game_server:*': \"*\" (every table) overlaps the tables of --client "
         "'g1:game_server:T9'"),
    ],
)  # fmt: skip
def test_two_game_servers_on_one_table_are_refused_before_anything_is_written(
    tmp_path: Path, specs: list[str], message: str
) -> None:
    argv = ["dev-ca", "--out", str(tmp_path / "tls")]
    for spec in specs:
        argv += ["--client", spec]
    with pytest.raises(SystemExit) as info:
        rng_service_main(argv)
    assert str(info.value.code).startswith("error: " + message)
    assert "\n" not in str(info.value.code)
    assert not (tmp_path / "tls").exists()


def test_log_bindings_are_printed_and_table_ids_are_per_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["dev-ca", "--out", str(tmp_path / "tls"),
            "--client", "g1:game_server:T1", "--client", "g2:game_server:T1",
            "--client", "aud:auditor",
            "--log", "g1=a.test/log", "--log", "g2=b.test/log",
            "--log", "aud=a.test/log,b.test/log"]  # fmt: skip
    capsys.readouterr()
    assert rng_service_main(argv) == 0  # T1 twice: in two logs
    entries = {c["identity"]: c for c in tomllib.loads(capsys.readouterr().out)["clients"]}
    assert entries["g1"]["logs"] == ["a.test/log"]
    assert entries["g2"]["logs"] == ["b.test/log"]
    assert entries["aud"]["logs"] == ["a.test/log", "b.test/log"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--log", "g1=a.test/log,b.test/log"],
         "--log 'g1=a.test/log,b.test/log': a game server is bound to exactly one log"),
        (["--log", "nobody=a.test/log"], "--log 'nobody=a.test/log': 'nobody' is not a --client"),
        (["--log", "g1"], "--log 'g1': the form is NAME=ORIGIN[,ORIGIN...]"),
        (["--client", "g2:game_server:T1", "--log", "g1=a.test/log", "--log", "g2=a.test/log"],
         "--client 'g2:game_server:T1': table 'T1' is also granted to --client "
         "'g1:game_server:T1'"),
    ],
)  # fmt: skip
def test_bad_log_bindings_are_refused_before_anything_is_written(
    tmp_path: Path, extra: list[str], message: str
) -> None:
    argv = ["dev-ca", "--out", str(tmp_path / "tls"), "--client", "g1:game_server:T1", *extra]
    with pytest.raises(SystemExit) as info:
        rng_service_main(argv)
    assert message in str(info.value.code)
    assert not (tmp_path / "tls").exists()
