"""A deployment of several logs as the integration tests start it: ``rng-service serve`` with
``[[logs]]`` and mTLS from a development CA (docs/operations/deployment.md, "Several logs").

One copy of what tests/integration/test_several_logs.py, test_shared_port.py and
test_audit_several_logs.py share: the keys and certificates, the configuration's common
sections and client bindings, and the supervisor's start (its ``listening`` line) and stop.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from rng_service.log.keys import generate_key_pair
from rng_service.security.certs import write_dev_ca

__all__ = ["client_lines", "key_file", "prepare", "serve", "server_lines"]

BIN = Path(sys.executable).parent
WAIT = 120.0


def key_file(d: Path, origin: str) -> Path:
    """The log's signing key (its verifier key is this path + ``.vkey``)."""
    return d / f"{origin.split('.')[0]}.pem"


def prepare(d: Path, origins: Iterable[str], identities: Iterable[str]) -> None:
    """A development CA with a certificate per identity (and the server's) under ``d/certs``,
    and a signing key per log named by its origin."""
    write_dev_ca(d / "certs", list(identities), now=dt.datetime.now(dt.UTC))
    for origin in origins:
        generate_key_pair(key_file(d, origin), name=origin, passphrase=None)


def server_lines(d: Path) -> list[str]:
    """``[server]`` (the shared port on a free port), ``[tls]`` and ``[log]``."""
    return [
        "[server]", "port = 0", f'lock_dir = "{d}/run"', "shutdown_grace_seconds = 1",
        "[tls]", f'cert_file = "{d}/certs/server.pem"', f'key_file = "{d}/certs/server.key"',
        f'client_ca_file = "{d}/certs/ca.pem"',
        "[log]", "publish_interval_seconds = 0.5",
    ]  # fmt: skip


def client_lines(game: Mapping[str, str], auditor: Mapping[str, str]) -> list[str]:
    """A game server (table T1) and an auditor bound to each log (origin -> identity)."""
    text: list[str] = []
    for origin in game:
        text += [
            "[[clients]]", f'identity = "{game[origin]}"', 'roles = ["game_server"]',
            'tables = ["T1"]', f'logs = ["{origin}"]',
            "[[clients]]", f'identity = "{auditor[origin]}"', 'roles = ["auditor"]',
            f'logs = ["{origin}"]',
        ]  # fmt: skip
    return text


def _first_line(proc: subprocess.Popen[str]) -> dict[str, object]:
    stdout = proc.stdout
    assert stdout is not None
    result: list[str] = []
    reader = threading.Thread(target=lambda: result.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(WAIT)
    assert result, "the deployment did not print its listening line"
    assert result[0], "the deployment ended without its listening line"
    event: dict[str, object] = json.loads(result[0])
    assert event.get("event") == "listening", event
    return event


@contextlib.contextmanager
def serve(
    d: Path, config: Path, *options: str
) -> Iterator[tuple[subprocess.Popen[str], dict[str, object]]]:
    """``rng-service serve --config CONFIG OPTIONS`` in ``d`` (its JSON log lines in
    ``d/stderr.jsonl``): the process and its ``listening`` line; stopped (SIGTERM, then
    SIGKILL after the wait) on leaving."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RNG_SERVICE_", "GRPC_"))}
    with open(d / "stderr.jsonl", "w", encoding="utf-8") as err:
        proc = subprocess.Popen(
            [str(BIN / "rng-service"), "serve", "--config", str(config), *options], cwd=d,
            env=env, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True,
        )  # fmt: skip
    try:
        yield proc, _first_line(proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
