"""The service runs without the ``certify`` extra (scipy, jinja2): its container image does not
install them (requirements/image.txt). In a subprocess where a meta path finder refuses them
(:mod:`tests.blocked_imports`; every attempt is recorded, so an import swallowed by an
``except ImportError`` still fails the test), every module of ``rng_service`` imports, and
``rng-service serve`` starts, draws a spin and a dice batch (the numpy path) and stops on
SIGTERM. The layer contracts say the same statically (``app`` and ``witness`` never reach
``scipy`` or ``jinja2``, docs/architecture.md)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import grpc

from rng_service._proto.rng.v1 import common_pb2, outcomes_pb2, outcomes_pb2_grpc
from rng_service.log.keys import generate_key_pair
from tests.blocked_imports import attempts, blocking_env

CERTIFY_EXTRA = ["scipy", "jinja2"]

_IMPORT_ALL = """
import importlib, pkgutil, sys
import rng_service
names = [m.name for m in pkgutil.walk_packages(rng_service.__path__, "rng_service.")]
for name in names:
    importlib.import_module(name)
loaded = sorted(m for m in sys.modules if m.partition(".")[0] in {"scipy", "jinja2"})
print(len(names), loaded)
"""


def test_every_service_module_imports_without_the_extra(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL],
        env=blocking_env(tmp_path, CERTIFY_EXTRA),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    count, loaded = proc.stdout.split(" ", 1)
    assert int(count) > 50  # the walk found the package's modules
    assert loaded.strip() == "[]"
    assert attempts(tmp_path) == []


def test_the_service_serves_without_the_extra(tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    generate_key_pair(key, name="no-certify-test")
    env = {
        **blocking_env(tmp_path / "site", CERTIFY_EXTRA),
        "RNG_SERVICE__SERVER__PORT": "0",
        "RNG_SERVICE__METRICS__ENABLED": "false",
        "RNG_SERVICE__STORAGE__PATH": str(tmp_path / "log.sqlite3"),
        "RNG_SERVICE__LOG__KEY_FILE": str(key),
        "RNG_SERVICE__LOG__KEY_NAME": "no-certify-test",
        "PYTHONUNBUFFERED": "1",
    }
    with subprocess.Popen(
        [sys.executable, "-m", "rng_service.cli.service", "serve"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith('{"event": "listening"'), line + (proc.stderr.read() or "")
            port = int(json.loads(line)["grpc_port"])
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = outcomes_pb2_grpc.OutcomeServiceStub(channel)
                spin = stub.SpinRoulette(
                    outcomes_pb2.SpinRouletteRequest(
                        context=common_pb2.RequestContext(
                            table_id="T", round_id="R1", request_id="a"
                        ),
                        wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO,
                    ),
                    timeout=30,
                )
                batch = stub.DrawBatch(
                    outcomes_pb2.DrawBatchRequest(
                        context=common_pb2.RequestContext(
                            table_id="T", round_id="R2", request_id="b"
                        ),
                        count=100,
                        dice=outcomes_pb2.DiceBatch(count=3, sides=6),
                    ),
                    timeout=30,
                )
            assert spin.receipt.index == 0
            assert len(batch.dice.faces) == 300
            assert set(batch.dice.faces) <= set(range(1, 7))
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0, proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert attempts(tmp_path / "site") == []
