"""``rng-witness serve`` with ``[metrics]`` on port 0, as a subprocess on loopback: it reports the
bound port in its ``listening`` line, cosigns, refuses a fork, and its ``/metrics`` scrape shows
both (and passes ``promtool check metrics``); restarted on the same state, it shows the size it
cosigned before any new request.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from prometheus_client.parser import text_string_to_metric_families

from rng_service.log.keys import generate_key_pair, load_private_key
from rng_service.log.merkle import leaf_hash, root_from_leaf_hashes
from rng_service.log.note import Checkpoint, Ed25519NoteSigner, sign_note
from rng_service.log.tlog_witness import AddCheckpoint
from tests.integration.test_witnesses import _env

REPO = Path(__file__).resolve().parents[2]
ORIGIN = "casino.test.example/rng-log"
LEAVES = [leaf_hash(b"entry %d" % i) for i in range(8)]
FORKED = [*LEAVES[:5], leaf_hash(b"another entry 5"), *LEAVES[6:]]


def _serve(config: Path) -> tuple[subprocess.Popen[str], dict[str, object]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "rng_service.cli.witness", "serve", "--config", str(config)],
        cwd=REPO, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if '"listening"' not in line:
        proc.kill()
        _, err = proc.communicate(timeout=30)
        raise AssertionError(f"rng-witness did not start: {line}{err}")
    return proc, json.loads(line)


def _stop(proc: subprocess.Popen[str]) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
    return proc.returncode


def _post(port: int, body: bytes) -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/add-checkpoint", data=body)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as e:
        e.close()
        return int(e.code)


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse_samples(text: str) -> Samples:
    """(name, sorted labels) -> value, read with prometheus_client's own text parser."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _scrape(port: int) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        body: bytes = response.read()
        return body


def test_witness_metrics_over_loopback(tmp_path: Path) -> None:
    """Mutations tried: the cli not passing ``sink=metrics`` to the server (the counts stay
    0: fails); the listening line without ``metrics_port`` (KeyError: fails); the start-up not
    reading ``state.heads()`` (size 0 after the restart: fails)."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool not found: apt-get install prometheus (make test installs it)")
    generate_key_pair(tmp_path / "witness.pem", name="witness.test.example/w", cosigner=True)
    generate_key_pair(tmp_path / "log.pem", name=ORIGIN)
    log = Ed25519NoteSigner(ORIGIN, load_private_key(tmp_path / "log.pem", None))
    config = tmp_path / "witness.toml"
    config.write_text(
        'name = "witness.test.example/w"\nkey_file = "witness.pem"\nstate = "state.sqlite3"\n'
        'host = "127.0.0.1"\nport = 0\n[metrics]\nport = 0\n'
        f'[[logs]]\norigin = "{ORIGIN}"\nkeys = ["log.pem.vkey"]\n'
    )

    def add(old: int, leaves: list[bytes], signer: Ed25519NoteSigner = log) -> bytes:
        body = Checkpoint(signer.name, len(leaves), root_from_leaf_hashes(leaves)).body()
        return AddCheckpoint(old, (), sign_note(body, [signer])).encode()

    proc, listening = _serve(config)
    try:
        port, metrics_port = listening["port"], listening["metrics_port"]
        assert isinstance(port, int)
        assert isinstance(metrics_port, int)
        assert metrics_port not in (0, port)
        before = parse_samples(_scrape(metrics_port).decode())
        fork_key = ("rng_witness_server_requests_total", (("origin", ORIGIN), ("result", "fork")))
        assert before[fork_key] == 0.0
        assert _post(port, add(0, LEAVES)) == 200
        assert _post(port, add(8, FORKED)) == 409  # the cosigned size, another root
        stranger = Ed25519NoteSigner("stranger.example/log", Ed25519PrivateKey.generate())
        assert _post(port, add(0, LEAVES[:3], stranger)) == 404
        body = _scrape(metrics_port)
    finally:
        assert _stop(proc) == 0
    text = body.decode()
    samples = parse_samples(text)

    def count(origin: str, result: str) -> float:
        key = ("rng_witness_server_requests_total", (("origin", origin), ("result", result)))
        return samples[key]

    assert count(ORIGIN, "cosigned") == 1
    assert count(ORIGIN, "fork") == 1
    assert count(ORIGIN, "conflict") == 0
    assert count("", "unknown_log") == 1
    assert samples[("rng_witness_server_cosigned_size", (("origin", ORIGIN),))] == 8
    assert samples[("rng_witness_server_state_up", ())] == 1
    assert "stranger" not in text
    check = subprocess.run(
        [promtool, "check", "metrics"], input=body, capture_output=True, timeout=60, check=False
    )
    assert check.returncode == 0, (check.stdout + check.stderr).decode()

    proc, listening = _serve(config)
    try:
        metrics_port = listening["metrics_port"]
        assert isinstance(metrics_port, int)
        again = parse_samples(_scrape(metrics_port).decode())
    finally:
        assert _stop(proc) == 0
    assert again[("rng_witness_server_cosigned_size", (("origin", ORIGIN),))] == 8
    fork_key = ("rng_witness_server_requests_total", (("origin", ORIGIN), ("result", "fork")))
    assert again[fork_key] == 0  # a counter starts again at 0, and is there from the start


def test_a_metrics_port_in_use_stops_the_start(tmp_path: Path) -> None:
    """Exit status 2 and a startup_failed line naming metrics.port; the witness does not serve
    without the endpoint its operator asked for. Mutation tried: the OSError of
    start_http_server not caught (a traceback, exit status 1: fails)."""
    generate_key_pair(tmp_path / "witness.pem", name="witness.test.example/w", cosigner=True)
    generate_key_pair(tmp_path / "log.pem", name=ORIGIN)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        config = tmp_path / "witness.toml"
        config.write_text(
            'name = "witness.test.example/w"\nkey_file = "witness.pem"\nport = 0\n'
            f"[metrics]\nport = {busy.getsockname()[1]}\n"
            f'[[logs]]\norigin = "{ORIGIN}"\nkeys = ["log.pem.vkey"]\n'
        )
        done = subprocess.run(
            [sys.executable, "-m", "rng_service.cli.witness", "serve", "--config", str(config)],
            cwd=REPO, env=_env(), capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    failed = [json.loads(line) for line in done.stderr.splitlines() if "startup_failed" in line]
    assert [f["setting"] for f in failed] == ["metrics.port"]
