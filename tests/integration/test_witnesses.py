"""Witnessed checkpoints end to end: real ``rng-witness`` processes on loopback, the real
service, and the edits to its store that only witnesses can catch.

- Two witnesses cosign the log's checkpoints; one is stopped (warnings, ``rng_witness_up`` 0,
  outcomes still served) and started again on the same port and state (recovery, fresh
  cosignatures); an export verifies with ``--witness ... --min-witnesses 2``.
- A log cosigned at size 40 is cut back consistently (entries, nodes, checkpoints, the verified
  record and the stored cosignatures deleted: the store's own check passes): the witness refuses
  it, the service refuses to start naming the witness, and logs the alarm.
- A fork served beside the log (a copy of its store, grown with other entries) raises the alarm
  in the running service: ``rng_witness_conflicts_total`` and a ``witness_conflict`` error.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rng_service.cli.audit import main as audit_main
from rng_service.cli.service import main as cli_main
from rng_service.config import Config, WitnessingSettings, WitnessSettings
from rng_service.log.cosignature import CosignatureVerifier, verify_cosignatures
from rng_service.log.keys import generate_key_pair
from rng_service.log.note import NoteVerifier, open_checkpoint
from rng_service.rpc.log_servicer import LogClient
from rng_service.writer.storecheck import VERIFIED_CHECKPOINT_KEY
from tests.integration.conftest import make_config, start
from tests.integration.test_store_integrity import (
    ORIGIN,
    REPO,
    Served,
    serve_refused,
    sql,
    truncate,
    write_config,
)

INTERVAL = 0.3  # witnessing rounds in these tests (production: the publish interval, 10 s)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RNG_SERVICE__")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


class WitnessProc:
    """``rng-witness serve`` in a subprocess with its own key, state and port."""

    def __init__(self, directory: Path, name: str, log_vkey: Path, port: int) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.key = directory / "witness.pem"
        if not self.key.exists():
            generate_key_pair(self.key, name=name, cosigner=True)
        self.vkey_file = directory / "witness.pem.vkey"
        self.verifier = CosignatureVerifier.from_verifier_key(self.vkey_file.read_text())
        self.config = directory / "witness.toml"
        self.config.write_text(
            f'name = "{name}"\nkey_file = "witness.pem"\nstate = "state.sqlite3"\n'
            f'host = "127.0.0.1"\nport = {port}\n'
            f'[[logs]]\norigin = "{ORIGIN}"\nkeys = ["{log_vkey}"]\n'
        )
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[str] | None = None
        self.stderr = ""

    def start(self) -> WitnessProc:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rng_service.cli.witness", "serve", "--config",
             str(self.config)],
            cwd=REPO, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if '"listening"' not in line:
            self.stop()
            raise AssertionError(f"the witness did not start: {line}{self.stderr}")
        assert json.loads(line)["port"] == self.port
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr += self.proc.stderr.read() if self.proc.stderr else ""
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        self.proc = None

    def state(self) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "rng_service.cli.witness", "state", "--config",
             str(self.config)],
            cwd=REPO, env=_env(), capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        data: dict[str, Any] = json.loads(done.stdout)
        return data


def witness_lines(*witnesses: WitnessProc, min_witnesses: int | None = None) -> str:
    """The ``[witnessing]`` and ``[[witnesses]]`` part of a service config."""
    lines = [
        "[witnessing]",
        f"interval_seconds = {INTERVAL}",
        "timeout_seconds = 2",
        *([f"min_witnesses = {min_witnesses}"] if min_witnesses is not None else []),
    ]
    for w in witnesses:
        lines += ["[[witnesses]]", f'url = "{w.url}"', f'key = "{w.vkey_file}"',
                  f'name = "{w.directory.name}"']  # fmt: skip
    return "\n".join(lines)


def wait_until(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def metric(port: int, name: str, labels: str = "") -> float | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    wanted = f"{name}{{{labels}}}" if labels else name
    for line in text.splitlines():
        if line.startswith(wanted + " "):
            return float(line.split()[-1])
    return None


def events(stderr: str, name: str) -> list[dict[str, Any]]:
    return [
        e
        for e in (json.loads(line) for line in stderr.splitlines() if line.startswith("{"))
        if e.get("event") == name
    ]


class Service:
    """``rng-service serve --config FILE`` in a subprocess; its stderr (the JSON log) is read
    by a thread while it runs, its metrics port comes from the readiness line."""

    def __init__(self, config: Path) -> None:
        import threading

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rng_service.cli.service", "serve", "--config", str(config)],
            cwd=REPO, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self._lines: list[str] = []
        self._drain = threading.Thread(target=self._read, daemon=True)
        self._drain.start()
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith('{"event": "listening"'):
            self.stop()
            raise AssertionError(f"the service did not start: {line}{self.log}")
        ready = json.loads(line)
        self.target = f"127.0.0.1:{ready['grpc_port']}"
        self.metrics_port: int = ready["metrics_port"]

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._lines.append(line)

    @property
    def log(self) -> str:
        return "".join(self._lines)

    def spins(self, prefix: str, n: int) -> None:
        Served.spins(self, prefix, n)  # type: ignore[arg-type]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._drain.join(10)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def log_key(tmp_path: Path) -> Path:
    key = tmp_path / "log.pem"
    generate_key_pair(key, name=ORIGIN)
    return key


@pytest.fixture
def witnesses(tmp_path: Path, log_key: Path) -> Iterator[list[WitnessProc]]:
    vkey = Path(str(log_key) + ".vkey")
    made = [
        WitnessProc(tmp_path / f"w{i}", f"w{i}.witness.test/w", vkey, free_port()).start()
        for i in (1, 2)
    ]
    try:
        yield made
    finally:
        for w in made:
            w.stop()


def _witnessed_note(target: str) -> bytes:
    with LogClient(target) as client:
        return client.latest_checkpoint(witnessed=True).encode()


def test_two_witnesses_cosign_one_stops_and_recovers(
    tmp_path: Path, log_key: Path, witnesses: list[WitnessProc], capsys: pytest.CaptureFixture[str]
) -> None:
    w1, w2 = witnesses
    config = write_config(tmp_path, log_key, extra=witness_lines(w1, w2, min_witnesses=2))
    config.write_text(
        config.read_text().replace(
            "[metrics]\nenabled = false\n", '[metrics]\nhost = "127.0.0.1"\nport = 0\n', 1
        )
    )
    served = Service(config)
    port = served.metrics_port
    log_verifier = NoteVerifier.from_verifier_key(Path(str(log_key) + ".vkey").read_text().strip())
    try:
        served.spins("a", 5)
        # Both witnesses cosign the published checkpoint of the 5 entries.
        wait_until(
            lambda: (
                metric(port, "rng_witness_cosigned_size", 'witness="w1"') == 5
                and metric(port, "rng_witness_cosigned_size", 'witness="w2"') == 5
            ),
            "both witnesses to cosign size 5",
        )
        note = _witnessed_note(served.target)
        checkpoint, _ = open_checkpoint(note, [log_verifier], origin=ORIGIN)
        cosigs = verify_cosignatures(note, [w1.verifier, w2.verifier])
        assert checkpoint.size == 5
        assert {c.witness for c in cosigs} == {w1.verifier, w2.verifier}
        assert metric(port, "rng_witnesses_cosigned") == 2

        # Witness 1 stops: warnings, its metric drops, outcomes are still served.
        w1.stop()
        stopped_at = int(time.time())
        served.spins("b", 3)
        wait_until(lambda: metric(port, "rng_witness_up", 'witness="w1"') == 0, "w1 down")
        wait_until(lambda: bool(events(served.log, "witness_unreachable")), "the warning")
        warning = events(served.log, "witness_unreachable")[0]
        assert warning["level"] == "warning"
        assert warning["witness"] == "w1"
        assert metric(port, "rng_witness_up", 'witness="w2"') == 1
        wait_until(lambda: metric(port, "rng_witness_cosigned_size", 'witness="w2"') == 8,
                   "w2 to cosign size 8")  # fmt: skip
        assert metric(port, "rng_witnesses_cosigned") == 1
        assert (metric(port, "rng_witness_requests_total",
                       'result="unreachable",witness="w1"') or 0) >= 1  # fmt: skip
        # Only w2 cosigned size 8: a verifier asking for both does not take it.
        note = _witnessed_note(served.target)
        assert {c.witness.name for c in verify_cosignatures(note, [w1.verifier, w2.verifier])} \
            <= {w1.verifier.name, w2.verifier.name}  # fmt: skip

        # Witness 1 back on its port with its state: it cosigns again, from size 5 to 8.
        w1.start()
        wait_until(lambda: metric(port, "rng_witness_up", 'witness="w1"') == 1, "w1 back")
        wait_until(lambda: bool(events(served.log, "witness_recovered")), "the recovery event")
        wait_until(lambda: metric(port, "rng_witnesses_cosigned") == 2, "both again")
        note = _witnessed_note(served.target)
        cosigs = verify_cosignatures(note, [w1.verifier, w2.verifier])
        assert len(cosigs) == 2
        assert all(c.timestamp >= stopped_at for c in cosigs)  # fresh, not the ones from before
        assert w1.state()["logs"][0]["size"] == 8
        # A quiet log: no entries, and yet the cosignatures keep getting newer.
        first = max(c.timestamp for c in cosigs)
        wait_until(
            lambda: min(c.timestamp for c in verify_cosignatures(
                _witnessed_note(served.target), [w1.verifier, w2.verifier])) > first,
            "fresher cosignatures of the unchanged checkpoint", timeout=10,
        )  # fmt: skip
        export = tmp_path / "log.export"
        assert audit_main(["export", "--target", served.target, "--out", str(export)]) == 0
    finally:
        served.stop()
    capsys.readouterr()
    vkey = str(log_key) + ".vkey"
    code = audit_main(["verify", str(export), "--key", vkey, "--witness", str(w1.vkey_file),
                       str(w2.vkey_file), "--min-witnesses", "2"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "WITNESSED: " in out
    assert "(tree size 8) is cosigned by 2 of the given witnesses" in out
    assert "NOT CHECKED: truncation" not in out
    assert out.count("cosigned: ") >= 2


def test_a_store_cut_back_is_refused_by_the_witness(
    tmp_path: Path, log_key: Path, witnesses: list[WitnessProc], capsys: pytest.CaptureFixture[str]
) -> None:
    w1, _ = witnesses
    config = write_config(tmp_path, log_key, extra=witness_lines(w1))
    db = tmp_path / "log.sqlite3"
    served = Served(config)
    try:
        served.spins("a", 40)
        wait_until(lambda: w1.state()["logs"][0]["size"] == 40, "w1 to cosign size 40")
    finally:
        served.stop()
    # The operator, who holds the key and the database, cuts the log back consistently: the
    # newest entries, their nodes, the checkpoints, the verified record and the cosignatures.
    truncate(db, 30)
    sql(db, "DELETE FROM meta WHERE key = ?", VERIFIED_CHECKPOINT_KEY)
    sql(db, "DELETE FROM cosignatures WHERE size > ?", 30)
    # The store's own check sees a valid shorter log, and names truncation NOT CHECKED.
    assert cli_main(["check-store", "--config", str(config)]) == 4, capsys.readouterr()
    out = capsys.readouterr().out
    assert "holds 30 entries" in out
    assert "NOT CHECKED: truncation" in out
    # The witness does not: the service refuses to start and names it.
    failed = serve_refused(config)
    assert failed["setting"] == "witnesses"
    assert f"witness w1 ({w1.url})" in failed["error"]
    assert (
        "has cosigned tree size 40 of this log, but the log has only 30 entries" in failed["error"]
    )
    # The witness said 409 with its size, and still holds 40.
    w1.stop()
    conflict = [e for e in events(w1.stderr, "add_checkpoint_conflict") if e["size"] == 30]
    assert conflict
    assert conflict[0]["status"] == 409
    assert conflict[0]["witness_size"] == 40
    assert w1.state()["logs"][0]["size"] == 40


def test_a_store_cut_back_logs_the_alarm(
    tmp_path: Path, log_key: Path, witnesses: list[WitnessProc]
) -> None:
    """The start-up refusal is also the alarm's log line: an error event per witness."""
    w1, w2 = witnesses
    config = write_config(tmp_path, log_key, extra=witness_lines(w1, w2))
    db = tmp_path / "log.sqlite3"
    served = Served(config)
    try:
        served.spins("a", 12)
        wait_until(lambda: w2.state()["logs"][0]["size"] == 12, "w2 to cosign size 12")
    finally:
        served.stop()
    truncate(db, 6)
    sql(db, "DELETE FROM meta WHERE key = ?", VERIFIED_CHECKPOINT_KEY)
    done = subprocess.run(
        [sys.executable, "-m", "rng_service.cli.service", "serve", "--config", str(config)],
        cwd=REPO, env=_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    alarms = events(done.stderr, "witness_conflict")
    assert {a["witness"] for a in alarms} == {"w1", "w2"}
    assert all(a["level"] == "error" and a["witness_size"] == 12 for a in alarms)


def test_a_fork_beside_the_log_raises_the_alarm_in_the_running_service(
    tmp_path: Path, log_key: Path, witnesses: list[WitnessProc], caplog: pytest.LogCaptureFixture
) -> None:
    """The operator copies the store and serves the copy as well (same key, same origin): the
    two logs diverge. The witness follows the first one, so the copy's next round is refused:
    the running copy raises the alarm (metric and error line) and keeps serving outcomes."""
    w1, _ = witnesses
    witnessing = WitnessingSettings(interval_seconds=0.2, timeout_seconds=2)
    settings = (WitnessSettings(url=w1.url, key=str(w1.vkey_file), name="w1"),)

    def config(directory: Path) -> Config:
        directory.mkdir()
        made = make_config(
            directory,
            RNG_SERVICE__LOG__KEY_FILE=str(log_key),
            RNG_SERVICE__LOG__ORIGIN=ORIGIN,
            RNG_SERVICE__LOG__PUBLISH_INTERVAL_SECONDS="0.1",
        )
        return dataclasses.replace(made, witnesses=settings, witnessing=witnessing)

    a = start(config(tmp_path / "a"))
    b = None
    try:
        for i in range(4):
            a.spin(f"a{i}", round_id=f"a{i}")
        wait_until(lambda: w1.state()["logs"][0]["size"] == 4, "w1 to cosign size 4")
        b_config = config(tmp_path / "b")
        source = sqlite3.connect(tmp_path / "a" / "log.sqlite3")  # the online backup API
        copy = sqlite3.connect(b_config.storage.path)
        source.backup(copy)
        source.close()
        copy.close()
        b = start(b_config)  # the copy is the same log so far: the witness agrees
        for i in range(4, 9):
            a.spin(f"a{i}", round_id=f"a{i}")
        wait_until(lambda: w1.state()["logs"][0]["size"] == 9, "w1 to cosign a's size 9")
        for i in range(2):
            b.spin(f"b{i}", round_id=f"b{i}")  # other entries at indexes 4 and 5
        registry = b.service.registry
        wait_until(
            lambda: (registry.get_sample_value("rng_witness_conflicts_total",
                                               {"witness": "w1"}) or 0) >= 1,
            "the conflict alarm of the copy",
        )  # fmt: skip
        assert registry.get_sample_value("rng_witness_up", {"witness": "w1"}) == 0
        alarms = [r.msg for r in caplog.records if isinstance(r.msg, dict)
                  and r.msg.get("event") == "witness_conflict"]  # fmt: skip
        assert alarms
        assert alarms[0]["witness"] == "w1"
        # The copy's first round after a grew: a's newer size against the copy's.
        assert re.search(
            r"has cosigned tree size \d+ of this log, but the log has only \d+ entries",
            alarms[0]["message"],
        )
        assert next(r.levelname for r in caplog.records if r.msg in alarms) == "ERROR"
        b.spin("b-after", round_id="b-after")  # outcomes keep being served
        assert a.service.registry.get_sample_value("rng_witness_conflicts_total",
                                                   {"witness": "w1"}) == 0  # fmt: skip
    finally:
        if b is not None:
            b.stop()
        a.stop()


def test_witness_refuses_what_the_spec_says(tmp_path: Path, log_key: Path) -> None:
    """The HTTP layer of a real witness process: unknown paths, GET, a body without a length."""
    w = WitnessProc(tmp_path / "w", "w.witness.test/w", Path(str(log_key) + ".vkey"),
                    free_port()).start()  # fmt: skip
    try:
        request = urllib.request.Request(w.url + "/add-checkpoint", data=b"old 0\n\nx\n")
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=5)
        info.value.close()
        assert info.value.code == 400
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(w.url + "/add-checkpoint", timeout=5)
        info.value.close()
        assert info.value.code == 405
        request = urllib.request.Request(w.url + "/elsewhere", data=b"x")
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=5)
        info.value.close()
        assert info.value.code == 404
    finally:
        w.stop()
