"""``rng-witness serve`` checks its key files' modes as the service does (security.key_files):
a world-writable cosigning or TLS key stops the start before the key is read or a port bound;
a group/world-readable one is a logged warning, or refused with key_file_permissions = "strict".
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from rng_service.cli.witness import main
from rng_service.log.keys import generate_key_pair
from rng_service.witness.config import WitnessConfigError, load_witness_config


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port already listening: a witness that got past its key check stops at the bind
    (exit 2, setting "port") instead of serving, so no test can hang on a running server."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    yield sock.getsockname()[1]
    sock.close()


def _config(tmp_path: Path, *, port: int, extra: str = "") -> Path:
    key = tmp_path / "witness.pem"
    log_key = tmp_path / "log.pem"
    if not key.exists():
        generate_key_pair(key, name="witness.example/w1", cosigner=True)
        generate_key_pair(log_key, name="casino.example/rng-log")
    log_vkey = log_key.with_name("log.pem.vkey")
    config = tmp_path / "witness.toml"
    config.write_text(
        f'name = "witness.example/w1"\nkey_file = "witness.pem"\n{extra}'
        f'state = "state.sqlite3"\nhost = "127.0.0.1"\nport = {port}\n'
        f'[[logs]]\norigin = "casino.example/rng-log"\nkeys = ["{log_vkey}"]\n'
    )
    return config


def _events(stderr: str, event: str) -> list[dict[str, object]]:
    """The JSON log lines (the witness's log goes to standard error) of one event."""
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("event") == event]


@pytest.mark.parametrize("strict", [False, True])
def test_a_world_writable_cosigning_key_stops_the_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], busy_port: int, strict: bool
) -> None:
    extra = 'key_file_permissions = "strict"\n' if strict else ""
    config = _config(tmp_path, port=busy_port, extra=extra)
    (tmp_path / "witness.pem").chmod(0o606)
    assert main(["serve", "--config", str(config)]) == 2
    stderr = capsys.readouterr().err
    [failed] = _events(stderr, "startup_failed")
    assert failed["setting"] == "key_file"
    assert "writable by every user" in str(failed["error"])
    assert not (tmp_path / "state.sqlite3").exists()  # stopped before its state was opened


def test_a_readable_key_is_refused_when_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], busy_port: int
) -> None:
    config = _config(tmp_path, port=busy_port, extra='key_file_permissions = "strict"\n')
    (tmp_path / "witness.pem").chmod(0o440)  # a common secret mount's mode
    assert main(["serve", "--config", str(config)]) == 2
    stderr = capsys.readouterr().err
    [failed] = _events(stderr, "startup_failed")
    assert "group-readable" in str(failed["error"])


def test_a_readable_key_is_a_warning_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], busy_port: int
) -> None:
    config = _config(tmp_path, port=busy_port)
    (tmp_path / "witness.pem").chmod(0o644)
    assert main(["serve", "--config", str(config)]) == 2
    stderr = capsys.readouterr().err
    [warning] = _events(stderr, "key_file_permissions")
    assert warning["setting"] == "key_file"
    assert "world-readable" in str(warning["message"])
    [failed] = _events(stderr, "startup_failed")
    assert failed["setting"] == "port"  # past the key check, stopped by the busy port


def test_the_setting_names_its_allowed_values(tmp_path: Path) -> None:
    config = _config(tmp_path, port=0, extra='key_file_permissions = "lenient"\n')
    with pytest.raises(
        WitnessConfigError, match=r"key_file_permissions: 'lenient'.*warn or strict"
    ):
        load_witness_config(config)


@pytest.mark.parametrize("command", ["rng-service", "rng-witness"])
def test_pubkey_refuses_a_world_writable_key_and_warns_on_a_readable_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    from rng_service.cli import service as service_cli

    key = tmp_path / "k.pem"
    generate_key_pair(key, name="casino.example", cosigner=command == "rng-witness")
    run = service_cli.main if command == "rng-service" else main
    argv = ["pubkey", "--key-file", str(key), "--name", "casino.example"]

    key.chmod(0o666)
    assert run(argv) == 2
    out = capsys.readouterr()
    assert out.out == ""  # no verifier key printed from a key anyone could have replaced
    assert "writable by every user" in out.err

    key.chmod(0o644)
    assert run(argv) == 0
    out = capsys.readouterr()
    assert out.out.startswith("casino.example+")
    assert "warning:" in out.err
    assert "world-readable" in out.err

    key.chmod(0o600)
    assert run(argv) == 0
    assert capsys.readouterr().err == ""
