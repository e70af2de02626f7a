"""Every line ``rng-service serve`` writes is JSON: its log, gRPC core's own lines, tracebacks,
start-up failures (a TLS file problem names the file, exit status 2), and the readiness line.

The real CLI runs as a subprocess; every wait is bounded.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from rng_service.log.keys import generate_key_pair
from rng_service.security.certs import write_dev_ca

REPO = Path(__file__).resolve().parents[2]
NOW = dt.datetime.now(dt.UTC)


def _setup(tmp: Path, *, key_file: str = "a/server.key") -> Path:
    write_dev_ca(tmp / "a", ["auditor-1"], now=NOW, days=2)
    write_dev_ca(tmp / "b", ["auditor-1"], now=NOW, days=2)  # another CA: another server key
    generate_key_pair(tmp / "log.pem", name="json-test", passphrase=None)
    config = tmp / "config.toml"
    config.write_text(
        f"""
[server]
port = 0
[metrics]
enabled = false
[storage]
path = "{tmp / "log.sqlite3"}"
[log]
key_file = "{tmp / "log.pem"}"
key_name = "json-test"
[tls]
cert_file = "{tmp / "a/server.pem"}"
key_file = "{tmp / key_file}"
client_ca_file = "{tmp / "a/ca.pem"}"
[[clients]]
identity = "auditor-1"
roles = ["auditor"]
"""
    )
    return config


def _serve(config: Path, tmp: Path) -> tuple[subprocess.Popen[bytes], Path, Path]:
    out, err = tmp / "out.txt", tmp / "err.txt"
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rng_service.cli.service", "serve", "--config", str(config)],
            cwd=REPO, stdout=o, stderr=e, stdin=subprocess.DEVNULL,
            env={k: v for k, v in os.environ.items() if not k.startswith("GRPC_")},
        )  # fmt: skip
    return proc, out, err


def _json_lines(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(errors="replace").splitlines()
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            raise AssertionError(
                f"not JSON: {line!r}\n(in {path.name}:\n{path.read_text()})"
            ) from None
    return parsed


def test_a_key_that_is_not_the_certificates_is_a_startup_failed_event(tmp_path: Path) -> None:
    proc, out, err = _serve(_setup(tmp_path, key_file="b/server.key"), tmp_path)
    assert proc.wait(60) == 2
    events = _json_lines(err)
    assert _json_lines(out) == []
    failed = [e for e in events if e.get("event") == "startup_failed"]
    assert len(failed) == 1, events
    assert failed[0]["setting"] == "tls.key_file"
    assert failed[0]["file"] == str(tmp_path / "b/server.key")
    assert "does not match the certificate in tls.cert_file" in failed[0]["error"]
    assert "bind" not in err.read_text()  # the port is not blamed


def test_an_unreadable_tls_file_is_a_startup_failed_event(tmp_path: Path) -> None:
    proc, _, err = _serve(_setup(tmp_path, key_file="absent.key"), tmp_path)
    assert proc.wait(60) == 2
    failed = [e for e in _json_lines(err) if e.get("event") == "startup_failed"]
    assert failed[0]["setting"] == "tls.key_file"
    assert f"cannot read {tmp_path / 'absent.key'}" in failed[0]["error"]


def test_a_bad_setting_is_a_startup_failed_event(tmp_path: Path) -> None:
    config = _setup(tmp_path)
    config.write_text(config.read_text().replace("port = 0", "port = -1"))
    proc, _, err = _serve(config, tmp_path)
    assert proc.wait(60) == 2
    failed = [e for e in _json_lines(err) if e.get("event") == "startup_failed"]
    assert failed[0]["setting"] == "server.port"


def test_grpc_core_lines_and_the_readiness_line_are_json(tmp_path: Path) -> None:
    proc, out, err = _serve(_setup(tmp_path), tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not out.read_text():
            assert proc.poll() is None, err.read_text()
            assert time.monotonic() < deadline, "the service did not start"
            time.sleep(0.05)
        ready = _json_lines(out)[0]
        assert ready["event"] == "listening"
        # A plaintext client on the mTLS port: gRPC core logs the failed handshake itself.
        with grpc.insecure_channel(f"127.0.0.1:{ready['grpc_port']}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            for _ in range(3):
                with contextlib.suppress(grpc.RpcError):  # refused in the handshake
                    stub.Check(health_pb2.HealthCheckRequest(), timeout=2)
        deadline = time.monotonic() + 10
        while not any(e.get("event") == "grpc_core" for e in _json_lines(err)):
            assert time.monotonic() < deadline, f"no gRPC core line in:\n{err.read_text()}"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    events = _json_lines(err)  # every line, after the stop too
    core = next(e for e in events if e.get("event") == "grpc_core")
    assert core["logger"] == "grpc.core"
    assert "Handshake failed" in core["message"]
    assert core["source"].split(":")[0].endswith(".cc")
    assert [e["event"] for e in events if e.get("event") in ("started", "stopped")] == [
        "started",
        "stopped",
    ]


def test_tracebacks_are_inside_a_json_field(tmp_path: Path) -> None:
    """A crash in a thread and at the top level, and raw native output, after routing."""
    code = (
        "import os, threading, time\n"
        "from rng_service import jsonlog\n"
        "jsonlog.configure()\n"
        "jsonlog.route_process_output()\n"
        "os.write(2, b'E1201 10:00:00.000000   123 some_file.cc:42] native trouble\\n')\n"
        "os.write(2, b'a line of its own\\n')\n"
        "t = threading.Thread(target=lambda: 1 / 0, name='worker'); t.start(); t.join()\n"
        "time.sleep(0.3)\n"
        "raise RuntimeError('at the top')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 1
    err = tmp_path / "err.txt"
    err.write_bytes(done.stderr)
    events = _json_lines(err)
    native = [e for e in events if e.get("event") in ("grpc_core", "native_stderr")]
    assert [(e["level"], e["message"]) for e in native] == [
        ("error", "native trouble"),
        ("warning", "a line of its own"),
    ]
    crashes = [e for e in events if e.get("event") == "uncaught_exception"]
    assert [c.get("thread") for c in crashes] == ["worker", None]
    assert "ZeroDivisionError" in crashes[0]["exception"]
    assert "Traceback" in crashes[1]["exception"]
    assert "RuntimeError: at the top" in crashes[1]["exception"]
