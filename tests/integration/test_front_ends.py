"""``serve --front-ends N``: one log writer process, N gRPC front ends on one port.

What a user relies on: outcomes are answered only once durable, whichever process dies; a
retry through any front end gets the logged outcome; the round rules hold across front ends;
health and metrics cover the whole instance; a stranger's instance is still refused; SIGTERM
drains and stops every process.

The kill -9 tests run load from several client threads (bounded in calls and seconds), kill
one process mid-load, and then read the store directly (``SqliteStorage``, read-only): every
answer a client got must be in the log, with the same index and the same entry bytes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from rng_service.log.entry import LogEntry
from rng_service.log.keys import generate_key_pair, load_verifier
from rng_service.log.note import Checkpoint, open_note
from rng_service.rpc.client import ClientError, RngClient
from rng_service.rpc.log_servicer import LogClient
from rng_service.storage.sqlite import SqliteStorage
from tests.integration.test_one_owner import free_port
from tests.integration.test_store_integrity import (
    ORIGIN,
    REPO,
    Served,
    _env,
    serve_refused,
    write_config,
)

#: Bounds of every load loop here.
MAX_CALLS_PER_THREAD = 3000
LOAD_SECONDS = 20.0


class FrontEnds(Served):
    """``rng-service serve --front-ends N --config FILE`` in a subprocess."""

    def __init__(self, config: Path, n: int = 2) -> None:
        self.front_ends: list[int] = []
        super().__init__(config, ("--front-ends", str(n)))
        self.metrics_port = self.listening["metrics_port"]
        self.front_ends = children(self.proc.pid)
        assert len(self.front_ends) == n, self.front_ends

    def stop(self) -> int:  # type: ignore[override]
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pid in self.front_ends:  # a front end left behind would hold stderr open
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        super().stop()  # reads the log
        return self.proc.returncode

    def events(self) -> list[dict[str, object]]:
        return [json.loads(x) for x in self.stderr.splitlines() if x.startswith("{")]


def children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (the front ends)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry.name))
    return sorted(out)


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] != "Z"


class Load:
    """Client threads spinning fresh rounds until stopped; keeps every answer it got."""

    def __init__(self, target: str, threads: int = 4) -> None:
        self.target = target
        self.acked: dict[str, tuple[int, bytes]] = {}
        self.failures = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._run, args=(t,), daemon=True) for t in range(threads)
        ]
        for t in self._threads:
            t.start()

    def _run(self, t: int) -> None:
        deadline = time.monotonic() + LOAD_SECONDS
        client = RngClient(self.target, timeout=5)
        try:
            for i in range(MAX_CALLS_PER_THREAD):
                if self._stop.is_set() or time.monotonic() > deadline:
                    return
                rid = f"t{t}-{i}"
                try:
                    r = client.spin(wheel="double_zero", table_id="T1", round_id=rid,
                                    request_id=rid)  # fmt: skip
                except ClientError:
                    with self._lock:
                        self.failures += 1
                    time.sleep(0.01)
                    continue
                with self._lock:
                    self.acked[rid] = (r.receipt.index, r.receipt.entry)
        finally:
            client.close()

    def count(self) -> int:
        with self._lock:
            return len(self.acked)

    def wait_for(self, n: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.count() < n and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.count() >= n, f"only {self.count()} answers ({self.failures} failures)"

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(10)


def assert_all_logged(db: Path, acked: dict[str, tuple[int, bytes]]) -> None:
    store = SqliteStorage(db, read_only=True)
    try:
        for rid, (index, entry) in acked.items():
            rec = store.entry_by_request("default", rid)
            assert rec is not None, f"{rid} was answered (index {index}) but is not in the log"
            assert (rec.index, rec.data) == (index, entry), rid
    finally:
        store.close()


@pytest.fixture
def key(tmp_path: Path) -> Path:
    path = tmp_path / "key.pem"
    generate_key_pair(path, name=ORIGIN)
    return path


def _metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text: str = r.read().decode()
        return text


def test_two_front_ends_serve_one_log_and_stop_gracefully(tmp_path: Path, key: Path) -> None:
    port, locks = free_port(), tmp_path / "locks"
    config = write_config(tmp_path, key, port=port, lock_dir=locks)
    metrics_on = '[metrics]\nenabled = true\nport = 0\nhost = "127.0.0.1"'
    config.write_text(config.read_text().replace("[metrics]\nenabled = false", metrics_on))
    served = FrontEnds(config, 2)
    try:
        # Many connections, so that the kernel hands some to each front end.
        results = []
        for i in range(12):
            with RngClient(served.target) as client:
                results.append(client.spin(wheel="double_zero", table_id="T1",
                                           round_id=f"r{i}", request_id=f"q{i}"))  # fmt: skip
                assert client.health() == "SERVING"
        assert sorted(r.receipt.index for r in results) == list(range(12))
        # A retry (new connection, perhaps the other front end): the logged outcome.
        for i, first in enumerate(results):
            with RngClient(served.target) as client:
                again = client.spin(wheel="double_zero", table_id="T1", round_id=f"r{i}",
                                    request_id=f"q{i}")  # fmt: skip
            assert again.receipt.replayed
            assert (again.receipt.index, again.receipt.entry) == (
                first.receipt.index, first.receipt.entry)  # fmt: skip
        # The round rule holds across processes: a new request id for a drawn round.
        with RngClient(served.target) as client, pytest.raises(ClientError) as info:
            client.spin(wheel="double_zero", table_id="T1", round_id="r0", request_id="other")
        assert info.value.code == "FAILED_PRECONDITION"
        # Log reads through a front end: its own view of the store, the note signed by the
        # writer (the only key holder), for the whole log.
        verifier = load_verifier(key.with_name(key.name + ".pub"), name=ORIGIN)
        with LogClient(served.target) as log:
            note = log.latest_checkpoint().encode()
            stored = log.entries(0, 12)
        checkpoint = Checkpoint.parse(open_note(note, [verifier]).text)
        assert (checkpoint.origin, checkpoint.size) == (ORIGIN, 12)
        assert [e for _, _, e in stored] == sorted(
            (r.receipt.entry for r in results), key=lambda b: LogEntry.decode(b).index
        )
        # A stranger's instance on the same port is refused by the owner's lock.
        other = tmp_path / "other"
        other.mkdir()
        refused = serve_refused(write_config(other, key, port=port, lock_dir=locks))
        assert f"held by pid {served.proc.pid}" in refused["error"]
        # Metrics: the writer's (entries, outcomes) and the front ends' (RPCs), one endpoint.
        # Front ends push their metrics every second: read until every front end's count is
        # in (at most 10 s), then the sum must be exact.
        deadline = time.monotonic() + 10
        while True:
            metrics = _metrics(served.metrics_port)
            ok = [x for x in metrics.splitlines() if x.startswith("rng_rpc_duration_seconds_count")
                  and 'method="SpinRoulette"' in x and 'code="OK"' in x]  # fmt: skip
            if (ok and float(ok[0].rsplit(" ", 1)[1]) >= 24.0) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert "rng_log_entries 12.0" in metrics
        assert ok
        assert float(ok[0].rsplit(" ", 1)[1]) == 24.0  # 12 first answers + 12 replays
        front_ends = served.front_ends
    finally:
        status = served.stop()
    assert status == 0, served.stderr
    assert not [p for p in front_ends if alive(p)]
    assert any(e.get("event") == "stopped" for e in served.events())
    assert "Traceback" not in served.stderr


@pytest.mark.slow
def test_kill_9_of_the_writer_loses_nothing_answered(tmp_path: Path, key: Path) -> None:
    config = write_config(tmp_path, key)
    served = FrontEnds(config, 2)
    load = Load(served.target)
    try:
        load.wait_for(50)
        os.kill(served.proc.pid, signal.SIGKILL)
        served.proc.wait(10)
        deadline = time.monotonic() + 15
        while [p for p in served.front_ends if alive(p)] and time.monotonic() < deadline:
            time.sleep(0.05)
        # Without the writer nothing can be logged: the front ends stop by themselves.
        assert not [p for p in served.front_ends if alive(p)]
    finally:
        load.stop()
        served.stop()
    assert load.count() >= 50
    assert_all_logged(tmp_path / "log.sqlite3", load.acked)
    # The instance starts again on that store (its own check passes), and a retry of an
    # answered request gets the same outcome.
    again = FrontEnds(config, 2)
    try:
        rid, (index, entry) = next(iter(load.acked.items()))
        with RngClient(again.target) as client:
            r = client.spin(wheel="double_zero", table_id="T1", round_id=rid, request_id=rid)
        assert (r.receipt.index, r.receipt.entry, r.receipt.replayed) == (index, entry, True)
    finally:
        assert again.stop() == 0, again.stderr


@pytest.mark.slow
def test_kill_9_of_a_front_end_loses_nothing_answered(tmp_path: Path, key: Path) -> None:
    config = write_config(tmp_path, key)
    served = FrontEnds(config, 2)
    load = Load(served.target)
    try:
        load.wait_for(50)
        victim = served.front_ends[0]
        os.kill(victim, signal.SIGKILL)
        before = load.count()
        # The instance serves on (the other front end, then the restarted one).
        load.wait_for(before + 50)
        deadline = time.monotonic() + 20
        while len(children(served.proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(children(served.proc.pid)) == 2
        assert victim not in children(served.proc.pid)
    finally:
        load.stop()
        status = served.stop()
    assert status == 0, served.stderr
    assert any(e.get("event") == "front_end_exited" for e in served.events())
    assert_all_logged(tmp_path / "log.sqlite3", load.acked)


def test_the_raw_stream_needs_one_front_end(tmp_path: Path, key: Path) -> None:
    config = write_config(tmp_path, key)
    config.write_text(config.read_text() + "[certification]\nraw_stream_enabled = true\n")
    done = subprocess.run(
        [sys.executable, "-m", "rng_service.cli.service", "serve", "--front-ends", "2",
         "--config", str(config)],
        cwd=REPO, env=_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    failed = [json.loads(x) for x in done.stderr.splitlines() if '"startup_failed"' in x]
    assert failed
    assert failed[0]["error"].startswith("certification.raw_stream_enabled:")


@pytest.mark.parametrize("value", ["0", "65", "two"])
def test_a_bad_front_end_count_is_refused_naming_the_allowed_values(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from rng_service.cli.service import main as cli_main

    with pytest.raises(SystemExit) as info:
        cli_main(["serve", "--front-ends", value])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --front-ends: {value!r}: allowed: an integer from 1 to 64" in err


def test_front_ends_are_not_handed_the_keys_passphrase(tmp_path: Path) -> None:
    key = tmp_path / "locked.pem"
    generate_key_pair(key, name=ORIGIN, passphrase=b"correct horse")
    config = write_config(tmp_path, key, extra='key_passphrase_env = "RNG_TEST_KEY_PASS"')
    os.environ["RNG_TEST_KEY_PASS"] = "correct horse"
    try:
        served = FrontEnds(config, 2)
    finally:
        del os.environ["RNG_TEST_KEY_PASS"]
    try:
        writer_env = Path(f"/proc/{served.proc.pid}/environ").read_bytes().split(b"\0")
        assert b"RNG_TEST_KEY_PASS=correct horse" in writer_env
        for pid in served.front_ends:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            assert b"RNG_TEST_KEY_PASS" not in environ
            assert b"correct horse" not in environ
        with RngClient(served.target) as client:
            client.spin(wheel="double_zero", table_id="T1", round_id="r", request_id="q")
    finally:
        assert served.stop() == 0, served.stderr
