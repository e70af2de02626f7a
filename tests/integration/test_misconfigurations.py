"""Every documented misconfiguration is a one-line refusal naming the setting, exit status 2, no
traceback, in every command it applies to (docs/operations/configuration.md, "Misconfigurations").

The rows are :data:`rng_service.cli.misconfigurations.MISCONFIGURATIONS`, the list the docs table
is generated from; each runs as a person types it, ``rng-service serve --config FILE`` (or
``rng-witness serve``), against a working configuration with that one mistake. The working
configurations themselves start (the controls), so each refusal is the row's mistake.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rng_service.cli.misconfigurations import (
    MISCONFIGURATIONS,
    WITNESS_SERVE,
    Misconfiguration,
    misconfigurations_markdown,
)
from rng_service.log.keys import generate_key_pair
from rng_service.security.certs import write_dev_ca
from tests.scripts import load

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]
ORIGIN = "misconfig.test"


def _base_service(d: Path) -> dict[str, Any]:
    return {
        "server": {"host": "127.0.0.1", "port": 0, "lock_dir": f"{d}/run"},
        "metrics": {"enabled": False},
        "storage": {"path": f"{d}/log.sqlite3"},
        "log": {"origin": ORIGIN, "key_file": f"{d}/log.pem"},
    }


def _base_witness(d: Path) -> dict[str, Any]:
    return {
        "name": "witness.test/w1",
        "key_file": f"{d}/witness.pem",
        "state": f"{d}/witness-state.sqlite3",
        "port": 0,
        "logs": [{"origin": ORIGIN, "keys": [f"{d}/log.pem.vkey"]}],
    }


def _toml(data: dict[str, Any]) -> str:
    from rng_service.cli.misconfigurations import _toml_value

    top = [f"{k} = {_toml_value(v)}" for k, v in data.items() if not isinstance(v, (dict, list))
           or (isinstance(v, list) and not any(isinstance(i, dict) for i in v))]  # fmt: skip
    out = [*top, ""]
    for key, value in data.items():
        if isinstance(value, dict):
            out += [f"[{key}]", *(f"{k} = {_toml_value(v)}" for k, v in value.items()), ""]
        elif isinstance(value, list) and any(isinstance(i, dict) for i in value):
            for item in value:
                out += [f"[[{key}]]", *(f"{k} = {_toml_value(v)}" for k, v in item.items()), ""]
    return "\n".join(out)


def _config(row: Misconfiguration | None, d: Path, *, witness: bool) -> Path:
    data = _base_witness(d) if witness else _base_service(d)
    for name, value in (row.set if row else {}).items():
        section, _, key = name.rpartition(".")
        table = data.setdefault(section, {}) if section else data
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value.replace("{dir}", str(d)) if isinstance(value, str) else value
    path = d / ("witness.toml" if witness else "config.toml")
    toml = row.toml.replace("{dir}", str(d)) if row else ""
    path.write_text(_toml(data) + toml, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def material(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("misconfig")
    generate_key_pair(d / "log.pem", name=ORIGIN, passphrase=None)
    generate_key_pair(d / "witness.pem", name="witness.test/w1", passphrase=None, cosigner=True)
    write_dev_ca(d / "tls", [], now=dt.datetime.now(dt.UTC), days=2)
    for name in ("server.pem", "ca.pem"):
        (d / name).write_bytes((d / "tls" / name).read_bytes())
    return d


def _argv(command: str, config: Path) -> list[str]:
    if command == WITNESS_SERVE:
        return [str(BIN / "rng-witness"), "serve", "--config", str(config)]
    return [str(BIN / "rng-service"), command, "--config", str(config)]


def _run(argv: list[str], d: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("RNG_SERVICE_", "GRPC_", "RNG_TEST_UNSET"))}  # fmt: skip
    return subprocess.run(
        argv, cwd=d, env={**clean, **env}, capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip


def _cases() -> list[object]:
    return [
        pytest.param(row, command, id=f"{command}: {row.mistake}")
        for row in MISCONFIGURATIONS
        for command in row.commands
    ]


@pytest.mark.parametrize(("row", "command"), _cases())
def test_a_documented_misconfiguration_is_one_line_naming_the_setting_exit_2(
    row: Misconfiguration, command: str, material: Path, tmp_path: Path
) -> None:
    for item in material.iterdir():  # each case in its own directory: nothing carries over
        if item.is_file():
            (tmp_path / item.name).write_bytes(item.read_bytes())
    config = _config(row, tmp_path, witness=command == WITNESS_SERVE)
    if row.config_file == "missing":
        config = tmp_path / "no-such-config.toml"
    done = _run(_argv(command, config), tmp_path, dict(row.env))
    said = f"$ {command} ...\nstdout: {done.stdout}\nstderr: {done.stderr}"
    assert done.returncode == 2, said
    assert "Traceback" not in done.stdout + done.stderr, said
    if command in ("serve", "dev-run", WITNESS_SERVE):
        events = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
        failed = [e for e in events if e.get("event") == "startup_failed"]
        assert len(failed) == 1, said
        assert failed[0]["level"] == "error", said  # not "critical": not a bug
        assert failed[0]["setting"].startswith(row.setting), said
        assert failed[0]["error"].startswith(row.setting), said
        assert not failed[0]["error"].startswith(f"{row.setting}: {row.setting}:"), said
        assert "\n" not in failed[0]["error"], said
        assert "exception" not in failed[0], said
        assert failed[0].get("file", "-") != "", said  # no empty "file" field
        assert done.stdout == "", said  # no "listening" line
    else:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, said
        assert lines[0].split(": ", 1)[1].startswith(row.setting), said
        assert done.stdout == "", said
    # nothing was created for a log that was refused
    assert not (tmp_path / "no-such-dir").exists()


@pytest.mark.parametrize("command", ["serve", "dev-run", WITNESS_SERVE])
def test_the_working_configurations_serve(command: str, material: Path, tmp_path: Path) -> None:
    """The control: without a mistake, the same configurations start (the listening line)."""
    for item in material.iterdir():
        if item.is_file():
            (tmp_path / item.name).write_bytes(item.read_bytes())
    config = _config(None, tmp_path, witness=command == WITNESS_SERVE)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RNG_SERVICE_", "GRPC_"))}
    proc = subprocess.Popen(
        _argv(command, config), cwd=tmp_path, env=clean, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # bounded: the service exits or prints it
        assert json.loads(line)["event"] == "listening", line
    finally:
        proc.terminate()
        proc.wait(60)
        if proc.stdout is not None:
            proc.stdout.close()


def test_check_store_and_migrate_store_accept_the_working_configuration(
    material: Path, tmp_path: Path
) -> None:
    for item in material.iterdir():
        if item.is_file():
            (tmp_path / item.name).write_bytes(item.read_bytes())
    config = _config(None, tmp_path, witness=False)
    from rng_service.storage.sqlite import SqliteStorage

    SqliteStorage(tmp_path / "log.sqlite3").close()  # an empty log
    # check-store: 4, the empty log's truncation NOT CHECKED without a kept checkpoint
    for command, status in (("migrate-store", 0), ("check-store", 4)):
        done = _run(_argv(command, config), tmp_path, {})
        assert done.returncode == status, (command, done.stdout, done.stderr)
        assert "OK" in done.stdout or command == "migrate-store", done.stdout


def test_the_docs_table_is_the_list() -> None:
    text = (REPO / "docs" / "operations" / "configuration.md").read_text(encoding="utf-8")
    begin, end = "<!-- misconfigurations:begin -->\n", "<!-- misconfigurations:end -->"
    assert begin in text
    assert end in text
    assert text.split(begin, 1)[1].split(end, 1)[0] == misconfigurations_markdown(), (
        "docs/operations/configuration.md is out of date: run "
        "`.venv/bin/python scripts/render_status_table.py`"
    )
    assert load("render_status_table").BLOCKS  # the script renders this block too
