"""The supervisor of several logs, without processes: each log process's environment holds its
own log's secrets only, and a log process's refusal names its ``[[logs]]`` entry; the ``log``
label on a log process's metrics (``rng_service.metrics.LogLabelCollector``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, generate_latest

from rng_service.config import Config, load_config
from rng_service.metrics import LogLabelCollector
from rng_service.process.supervisor import Supervisor, _in_log

A, B = "casino-a.test/log", "casino-b.test/log"


def _config(tmp_path: Path) -> Config:
    path = tmp_path / "c.toml"
    path.write_text(
        "[metrics]\nenabled = false\n"
        f'[[logs]]\norigin = "{A}"\nkey_file = "a.pem"\nstore = "a.sqlite3"\nport = 0\n'
        'key_passphrase_env = "A_KEY_PASS"\n'
        f'[[logs]]\norigin = "{B}"\nkey_file = "b.pem"\nstore = "host=db dbname=b"\nport = 0\n'
        'key_passphrase_env = "B_KEY_PASS"\npostgres_password_env = "B_DB_PASS"\n',
        encoding="utf-8",
    )
    return load_config(path, environ={}, base_dir=tmp_path)


def test_each_log_process_gets_its_own_secrets_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("A_KEY_PASS", "B_KEY_PASS", "B_DB_PASS", "UNRELATED"):
        monkeypatch.setenv(name, "x")
    config = _config(tmp_path)
    supervisor = Supervisor(config)
    env_a = supervisor._environment(config.for_log(A))
    env_b = supervisor._environment(config.for_log(B))
    assert "A_KEY_PASS" in env_a
    assert "B_KEY_PASS" not in env_a
    assert "B_DB_PASS" not in env_a
    assert {"B_KEY_PASS", "B_DB_PASS"} <= set(env_b)
    assert "A_KEY_PASS" not in env_b
    assert env_a["UNRELATED"] == env_b["UNRELATED"] == "x"


def test_a_log_process_refusal_names_its_logs_entry(tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert _in_log(config, B, "log.key_file: /x/b.pem does not exist") == (
        f"logs[1] ({B}).key_file: /x/b.pem does not exist"
    )
    assert _in_log(config, A, "storage.path: the SQLite log a.sqlite3 belongs to another") == (
        f"logs[0] ({A}).store: the SQLite log a.sqlite3 belongs to another"
    )
    assert _in_log(config, A, "tls.key_file: cannot read") == (
        f"logs[0] ({A}): tls.key_file: cannot read"
    )


def test_the_log_label_is_added_to_the_service_series_only() -> None:
    registry = CollectorRegistry()
    Counter("rng_outcomes", "outcomes", ["kind"], registry=registry).labels("roulette_spin").inc()
    Counter("process_thing", "a process series", registry=registry).inc()
    served = CollectorRegistry()
    served.register(LogLabelCollector(registry, A))
    text = generate_latest(served).decode()
    assert f'rng_outcomes_total{{kind="roulette_spin",log="{A}"}} 1.0' in text
    assert "process_thing_total 1.0" in text
