"""The rng-service command line against a live in-process service: spin, keys, health,
verify-receipt, keygen and pubkey; errors are messages with exit codes, never tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rng_service.cli.service import main
from tests.integration.conftest import Running


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_spin_receipt_and_offline_verification(
    running: Running, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = f"127.0.0.1:{running.port}"
    receipt = tmp_path / "receipt.json"
    code, out, _ = run(
        capsys, "call", "--target", target, "spin", "--wheel", "double_zero",
        "--table", "T1", "--round", "R1", "--request-id", "cli-1",
        "--receipt-out", str(receipt), "--json",
    )  # fmt: skip
    assert code == 0
    spin = json.loads(out)
    assert spin["request_id"] == "cli-1"
    assert spin["log_index"] == 0
    code, out, _ = run(capsys, "call", "--target", target, "keys", "--json")
    assert code == 0
    vkey = json.loads(out)[0]["verifier_key"]
    code, out, _ = run(capsys, "verify-receipt", str(receipt), "--key", vkey)
    assert code == 4  # offline: that the log still holds the entry is NOT CHECKED
    assert out.startswith("OK: entry 0 (roulette_spin, table T1, round R1)")
    outcome, not_checked = out.split("\n", 1)[1].split("\nNOT CHECKED: ")
    assert not_checked.startswith("that the log still holds this entry.")
    logged = json.loads(outcome)
    assert logged["final"]["number"] == spin["outcome"]["result"]["number"]
    # a tampered receipt fails with a message, exit 1
    data = json.loads(receipt.read_text())
    data["tree_size"] = 2
    receipt.write_text(json.dumps(data))
    code, _, err = run(capsys, "verify-receipt", str(receipt), "--key", vkey)
    assert code == 1
    assert "tree_size" in err
    assert "Traceback" not in err


def test_retry_and_conflict_through_the_cli(
    running: Running, capsys: pytest.CaptureFixture[str]
) -> None:
    target = f"127.0.0.1:{running.port}"
    args = ["call", "--target", target, "spin", "--table", "T", "--round", "R",
            "--request-id", "cli-2"]  # fmt: skip
    code, first, _ = run(capsys, *args, "--wheel", "single_zero")
    assert code == 0
    code, again, _ = run(capsys, *args, "--wheel", "single_zero")
    assert code == 0
    assert "replayed" in again
    assert again.split("  [")[0] == first.split("  [")[0]
    code, _, err = run(capsys, *args, "--wheel", "double_zero")
    assert code == 1
    assert "ALREADY_EXISTS" in err


def test_a_second_spin_of_a_round_and_a_void_through_the_cli(
    running: Running, capsys: pytest.CaptureFixture[str]
) -> None:
    target = f"127.0.0.1:{running.port}"
    spin = ["call", "--target", target, "spin", "--wheel", "double_zero", "--table", "TV"]
    code, _, _ = run(capsys, *spin, "--round", "RV", "--request-id", "cli-v1")
    assert code == 0
    code, _, err = run(capsys, *spin, "--round", "RV")  # another (random) request id
    assert code == 1
    assert "FAILED_PRECONDITION" in err
    assert "slot 'spin' is already filled by request 'cli-v1'" in err
    void = ["call", "--target", target, "void-round", "--table", "TV", "--round", "RV",
            "--reason", "ball left the wheel", "--request-id", "op-1"]  # fmt: skip
    code, out, _ = run(capsys, *void)
    assert code == 0
    assert out.startswith("voided round 'RV' of table 'TV' (client 'default')  [request op-1, ")
    code, out, _ = run(capsys, *void)
    assert code == 0
    assert out.rstrip().endswith(", replayed]")
    code, _, err = run(capsys, *spin, "--round", "RV")
    assert code == 1
    assert "was voided at log index" in err
    code, _, err = run(capsys, *void[:-2], "--request-id", "op-2", "--client", "nobody")
    assert code == 1
    assert "INVALID_ARGUMENT" in err
    assert "client: " in err


def test_health(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "call", "--target", f"127.0.0.1:{running.port}", "health")
    assert (code, out.strip()) == (0, "SERVING")


def test_health_with_config_calls_the_configured_port(
    running: Running, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The image's HEALTHCHECK form: the service's config file instead of --target.
    config = tmp_path / "c.toml"
    config.write_text(f'[server]\nhost = "127.0.0.1"\nport = {running.port}\n')
    code, out, _ = run(capsys, "call", "--config", str(config), "health")
    assert (code, out.strip()) == (0, "SERVING")
    # the environment overrides the file, as for serve
    other = tmp_path / "other.toml"
    other.write_text("[server]\nport = 1\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RNG_SERVICE__SERVER__PORT", str(running.port))
        code, out, _ = run(capsys, "call", "--config", str(other), "health")
    assert (code, out.strip()) == (0, "SERVING")


@pytest.mark.parametrize(
    ("host", "target"),
    [
        ("0.0.0.0", "127.0.0.1:7001"),  # every interface: call this host's loopback
        ("::", "[::1]:7001"),
        ("127.0.0.1", "127.0.0.1:7001"),
        ("::1", "[::1]:7001"),
        ("localhost", "localhost:7001"),
    ],
)
def test_call_config_target(tmp_path: Path, host: str, target: str) -> None:
    from rng_service.cli.support import resolve_target

    config = tmp_path / "c.toml"
    config.write_text(f'[server]\nhost = "{host}"\nport = 7001\n')
    assert resolve_target(None, str(config)).address == target


def test_call_target_and_config_together_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.toml"
    config.write_text("")
    code, _, err = run(capsys, "call", "--config", str(config), "--target", "127.0.0.1:1", "health")
    assert code == 2
    assert "give --target or --config, not both" in err


def test_unreachable_service_is_a_message(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys, "call", "--target", "127.0.0.1:1", "--timeout", "2", "spin",
        "--wheel", "double_zero", "--table", "T", "--round", "R",
    )  # fmt: skip
    assert code == 1
    assert "UNAVAILABLE" in err or "DEADLINE_EXCEEDED" in err


def test_keygen_pubkey_and_passphrase(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "k.pem"
    monkeypatch.setenv("KEY_PASS", "correct horse")
    code, out, _ = run(capsys, "keygen", "--out", str(key), "--name", "casino.example",
                       "--passphrase-env", "KEY_PASS")  # fmt: skip
    assert code == 0
    assert key.stat().st_mode & 0o777 == 0o600
    vkey = out.strip().splitlines()[-1].removeprefix("verifier key: ")
    assert vkey.startswith("casino.example+")
    code, out, _ = run(capsys, "pubkey", "--key-file", str(key), "--name", "casino.example",
                       "--passphrase-env", "KEY_PASS")  # fmt: skip
    assert (code, out.strip()) == (0, vkey)
    monkeypatch.setenv("KEY_PASS", "wrong")
    code, _, err = run(capsys, "pubkey", "--key-file", str(key), "--name", "casino.example",
                       "--passphrase-env", "KEY_PASS")  # fmt: skip
    assert code == 1
    assert "passphrase" in err
    with pytest.raises(SystemExit, match="exists"):
        main(["keygen", "--out", str(key), "--name", "casino.example"])
    code, _, _ = run(capsys, "keygen", "--out", str(key), "--name", "casino.example", "--force")
    assert code == 0


def test_bad_config_is_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[server]\nport = -1\n")
    code, _, err = run(capsys, "serve", "--config", str(cfg))
    assert code == 2
    assert "server.port" in err
    assert "allowed" in err
