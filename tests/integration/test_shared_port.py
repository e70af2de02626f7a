"""One gRPC port for every log of a deployment (issue "Many logs"): two casino operators, two
SQLite logs, served by ``rng-service serve`` on ``server.port`` through the supervisor's shared
front ends (``rng_service.process.shared_frontend``), each call naming its log in the
``rng-origin`` metadata (docs/security.md, "Logs").

Run as an operator runs it (the ``rng-service`` command, mTLS, a development CA), on loopback.
Each operator's game server reaches its own log only (naming it, or naming none: a game server
is bound to exactly one); an identity bound to log A naming log B or a log that does not exist
gets the same PERMISSION_DENIED, word for word, and nothing is drawn; a caller bound to several
logs that names none gets INVALID_ARGUMENT naming the metadata; each log's health is a service
name on the shared port, told to its own identities only; each log's store checks alone with
``rng-service check-store --origin``; each log's metrics port counts the calls the shared port
served for it, labelled ``log``. Then one log's writer process is killed with SIGKILL while both
logs draw: the other log keeps answering on the shared port, the killed log's calls fail with
UNAVAILABLE (not a hang) until the supervisor has started it again, and every outcome it
acknowledged is in its log afterwards.
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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rng_service.log.entry import LogEntry
from rng_service.rpc.client import ClientError, ClientTls, RngClient
from tests.several_logs import client_lines, prepare, serve, server_lines

pytestmark = [pytest.mark.serial]

BIN = Path(sys.executable).parent
A, B = "casino-a.test/rng-log", "casino-b.test/rng-log"
NOWHERE = "no-such-log.test/rng-log"
GAME = {A: "game-a", B: "game-b"}
AUDITOR = {A: "auditor-a", B: "auditor-b"}
IDENTITIES = [*GAME.values(), *AUDITOR.values(), "operator"]
#: Bound on every wait of this test (start, restart), in seconds.
WAIT = 120.0
#: A call's deadline: a call for a log whose writer is gone must end well before it.
CALL_TIMEOUT = 10.0


@dataclass
class Deployment:
    d: Path
    proc: subprocess.Popen[str]
    port: int
    metrics: dict[str, int]
    stderr: Path
    acknowledged: dict[str, list[tuple[str, int]]] = field(default_factory=dict)

    def tls(self, identity: str) -> ClientTls:
        certs = self.d / "certs"
        return ClientTls.from_files(
            certs / "ca.pem", certs / f"{identity}.pem", certs / f"{identity}.key"
        )

    def client(self, identity: str, origin: str | None) -> RngClient:
        return RngClient(
            f"127.0.0.1:{self.port}", tls=self.tls(identity), origin=origin,
            timeout=CALL_TIMEOUT,
        )  # fmt: skip

    def spin(self, origin: str, request_id: str, *, name: bool = True) -> int:
        with self.client(GAME[origin], origin if name else None) as c:
            index = c.spin(
                wheel="double_zero", table_id="T1", round_id=f"R-{request_id}",
                request_id=request_id,
            ).receipt.index  # fmt: skip
        self.acknowledged.setdefault(origin, []).append((request_id, index))
        return index

    def events(self, name: str) -> list[dict[str, object]]:
        lines = self.stderr.read_text(encoding="utf-8").splitlines()
        found = [json.loads(x) for x in lines if x.startswith("{") and f'"{name}"' in x]
        return [e for e in found if e.get("event") == name]


def _config(d: Path) -> Path:
    text = server_lines(d)
    for origin in (A, B):
        name = origin.split(".")[0]
        text += ["[[logs]]", f'origin = "{origin}"', f'key_file = "{d}/{name}.pem"',
                 f'store = "{d}/{name}.sqlite3"', "metrics_port = 0"]  # fmt: skip
    text += client_lines(GAME, AUDITOR)
    text += ["[[clients]]", 'identity = "operator"', 'roles = ["operator", "auditor"]',
             'logs = ["*"]']  # fmt: skip
    path = d / "config.toml"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return path


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("RNG_SERVICE_", "GRPC_"))}


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    yield from _deploy(tmp_path)


@pytest.fixture
def two_front_ends(tmp_path: Path) -> Iterator[Deployment]:
    yield from _deploy(tmp_path, "--front-ends", "2")


def _deploy(d: Path, *options: str) -> Iterator[Deployment]:
    prepare(d, (A, B), IDENTITIES)
    with serve(d, _config(d), *options) as (proc, line):
        logs = line["logs"]
        assert isinstance(logs, dict)
        assert all(logs[o]["grpc_port"] is None for o in (A, B))  # no port of their own
        metrics = {o: int(logs[o]["metrics_port"]) for o in (A, B)}
        yield Deployment(d=d, proc=proc, port=int(str(line["grpc_port"])), metrics=metrics,
                         stderr=d / "stderr.jsonl")  # fmt: skip


def _entries(dep: Deployment, origin: str) -> list[LogEntry]:
    with dep.client("operator", origin) as op:
        op.publish_checkpoint()  # the checkpoint then covers the newest entry
        size = int(op.latest_checkpoint()["size"])
        return [LogEntry.decode(e["entry"]) for e in op.entries(0, size)]


def _refusal(dep: Deployment, identity: str, origin: str | None) -> tuple[str, str]:
    with dep.client(identity, origin) as c, pytest.raises(ClientError) as e:
        c.spin(wheel="double_zero", table_id="T1", round_id="R-x",
               request_id=f"refused-{identity}-{origin}")  # fmt: skip
    return e.value.code, e.value.details


def test_each_operator_reaches_its_own_log_on_one_port(deployment: Deployment) -> None:
    dep = deployment
    for origin in (A, B):
        dep.spin(origin, f"{GAME[origin]}-named")
        dep.spin(origin, f"{GAME[origin]}-unnamed", name=False)  # its one log
    for origin in (A, B):
        entries = _entries(dep, origin)
        assert {e.client for e in entries} == {GAME[origin]}
        assert sorted(e.request_id for e in entries) == sorted(
            rid for rid, _ in dep.acknowledged[origin]
        )
        # Each log's auditor reads its own log on the shared port, naming it, and keeps its
        # checkpoint (for check-store below).
        with dep.client(AUDITOR[origin], origin) as c:
            latest = c.latest_checkpoint()
        assert int(latest["size"]) == len(entries)
        (dep.d / f"kept-{GAME[origin]}.note").write_text(latest["note"], encoding="utf-8")
    # The command line names the log with --origin, as a person types it.
    certs = dep.d / "certs"
    tls = ["--ca", str(certs / "ca.pem"), "--cert", str(certs / "auditor-b.pem"),
           "--tls-key", str(certs / "auditor-b.key")]  # fmt: skip
    for origin, status in ((B, 0), (A, 1)):  # its own log; another: refused (exit status 1)
        call = subprocess.run(
            [str(BIN / "rng-service"), "call", "checkpoint", "--target",
             f"127.0.0.1:{dep.port}", *tls, "--origin", origin],
            capture_output=True, text=True, timeout=WAIT, check=False, cwd=dep.d, env=_env(),
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert call.returncode == status, call.stdout + call.stderr
        assert (status == 0) == (B in call.stdout), call.stdout
    # Each log's store checks alone, while the deployment serves, against the checkpoint its
    # auditor kept (of its whole size: exit status 0, nothing NOT CHECKED).
    for origin in (A, B):
        done = subprocess.run(
            [str(BIN / "rng-service"), "check-store", "--config", str(dep.d / "config.toml"),
             "--origin", origin, "--checkpoint", str(dep.d / f"kept-{GAME[origin]}.note")],
            capture_output=True, text=True, timeout=WAIT, check=False,
            cwd=dep.d, env=_env(), stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"{len(dep.acknowledged[origin])} entries" in done.stdout, done.stdout


def test_a_log_not_bound_is_refused_as_a_log_that_does_not_exist(deployment: Deployment) -> None:
    dep = deployment
    not_bound = _refusal(dep, "game-a", B)
    nowhere = _refusal(dep, "game-a", NOWHERE)
    assert not_bound == ("PERMISSION_DENIED",
                         "the requested log is not available to client 'game-a'")  # fmt: skip
    assert nowhere == not_bound
    # An auditor of A reading B, or a log that does not exist: the same refusal too.
    with dep.client("auditor-a", B) as c, pytest.raises(ClientError) as e1:
        c.latest_checkpoint()
    with dep.client("auditor-a", NOWHERE) as c, pytest.raises(ClientError) as e2:
        c.latest_checkpoint()
    assert (e1.value.code, e1.value.details) == (e2.value.code, e2.value.details)
    assert e1.value.code == "PERMISSION_DENIED"
    # A caller bound to several logs names one: INVALID_ARGUMENT naming the metadata key.
    with dep.client("operator", None) as c, pytest.raises(ClientError) as e3:
        c.publish_checkpoint()
    assert e3.value.code == "INVALID_ARGUMENT"
    assert e3.value.details.startswith("rng-origin: this port serves several logs")
    assert A in e3.value.details
    assert B in e3.value.details
    # Nothing was drawn for the refused calls.
    assert all(e.client != "game-a" for e in _entries(dep, B))
    assert _entries(dep, A) == []


def test_health_of_each_log_is_told_to_its_own_identities(deployment: Deployment) -> None:
    dep = deployment
    with dep.client("auditor-a", None) as c:
        assert c.health() == "SERVING"
        assert c.health(A) == "SERVING"
        with pytest.raises(ClientError) as other:
            c.health(B)
        with pytest.raises(ClientError) as nowhere:
            c.health(NOWHERE)
    assert (other.value.code, other.value.details) == (nowhere.value.code, nowhere.value.details)
    assert other.value.code == "NOT_FOUND"
    with dep.client("operator", None) as c:
        assert c.health(A) == c.health(B) == "SERVING"


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return str(r.read().decode())


def _spins_counted(text: str, origin: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if (line.startswith("rng_rpc_duration_seconds_count{") and 'method="SpinRoulette"' in line
                and 'code="OK"' in line and f'log="{origin}"' in line):  # fmt: skip
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_each_logs_metrics_count_its_calls_on_the_shared_port(deployment: Deployment) -> None:
    dep = deployment
    for i in range(3):
        dep.spin(A, f"metrics-a-{i}")
    dep.spin(B, "metrics-b-0")
    deadline = time.monotonic() + WAIT
    counted: dict[str, float] = {}
    while time.monotonic() < deadline:  # the front end pushes its series every second
        counted = {o: _spins_counted(_scrape(dep.metrics[o]), o) for o in (A, B)}
        if counted == {A: 3.0, B: 1.0}:
            break
        time.sleep(0.2)
    assert counted == {A: 3.0, B: 1.0}


def test_kill_9_of_one_writer_the_other_log_serves_on_the_shared_port(
    deployment: Deployment,
) -> None:
    dep = deployment
    (started,) = [e for e in dep.events("started") if "pids" in e]  # the supervisor's
    pids = started["pids"]
    assert isinstance(pids, dict)
    victim = int(pids[B])
    stop = threading.Event()
    failures: dict[str, list[tuple[str, float]]] = {A: [], B: []}

    def draw(origin: str) -> None:  # bounded: at most 2000 calls, and until told to stop
        for i in range(2000):
            if stop.is_set():
                return
            began = time.monotonic()
            try:
                dep.spin(origin, f"load-{i}")
            except ClientError as e:  # during the outage: not acknowledged
                failures[origin].append((e.code, time.monotonic() - began))
                time.sleep(0.05)

    loads = [threading.Thread(target=draw, args=(o,), daemon=True) for o in (A, B)]
    for t in loads:
        t.start()
    deadline = time.monotonic() + WAIT
    while len(dep.acknowledged.get(B, [])) < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(victim, signal.SIGKILL)
    killed = time.monotonic()
    a_before = len(dep.acknowledged.get(A, []))
    # While B is down: its health says so, and A answers on the same port.
    seen = set()
    with dep.client("operator", None) as c:
        while time.monotonic() - killed < 10.0 and "NOT_SERVING" not in seen:
            seen.add(c.health(B))
            time.sleep(0.01)
    assert "NOT_SERVING" in seen
    while len(dep.acknowledged[A]) < a_before + 10 and time.monotonic() - killed < WAIT:
        time.sleep(0.05)
    assert len(dep.acknowledged[A]) >= a_before + 10
    # B serves again.
    served_again = None
    with dep.client("operator", None) as c:
        while time.monotonic() - killed < WAIT:
            if c.health(B) == "SERVING":
                served_again = time.monotonic() - killed
                break
            time.sleep(0.05)
    assert served_again is not None, "log B did not serve again"
    before = len(dep.acknowledged[B])
    while len(dep.acknowledged[B]) < before + 20 and time.monotonic() - killed < WAIT:
        time.sleep(0.05)
    stop.set()
    for t in loads:
        t.join(WAIT)
    assert len(dep.acknowledged[B]) >= before + 20
    # B's calls during the outage failed with UNAVAILABLE, each well before its deadline.
    assert failures[B], "no call for B failed while its writer was down"
    assert {code for code, _ in failures[B]} == {"UNAVAILABLE"}, failures[B]
    assert max(seconds for _, seconds in failures[B]) < CALL_TIMEOUT / 2, failures[B]
    assert failures[A] == []
    (restarted,) = dep.events("log_process_restarted")
    assert restarted["log"] == B
    print(
        f"\nlog B serving again on the shared port {served_again:.2f} s after SIGKILL; the "
        f"supervisor's restart took {restarted['seconds']} s; {len(failures[B])} calls for B "
        f"refused meanwhile (UNAVAILABLE, longest {max(s for _, s in failures[B]):.3f} s), "
        f"{len(dep.acknowledged[A]) - a_before} calls for A answered"
    )
    # Everything acknowledged is in each log, at the index its receipt named.
    for origin in (A, B):
        logged = {e.request_id: i for i, e in enumerate(_entries(dep, origin))}
        for request_id, index in dep.acknowledged[origin]:
            assert logged.get(request_id) == index, (origin, request_id)
    assert dep.proc.poll() is None  # the supervisor serves on


#: server.shutdown_grace_seconds in this deployment (tests/several_logs.py) and the bound of a
#: stop beyond it: an operator's service manager stops the deployment and expects it gone.
GRACE, STOP_BOUND = 1.0, 10.0


def test_sigterm_stops_the_deployment_after_its_drain(deployment: Deployment) -> None:
    """SIGTERM: every process of the deployment drains and exits within the grace period and a
    bound (a shared front end once waited 30 s for its control reader, and was killed)."""
    dep = deployment
    dep.spin(A, "before-stop")
    (started,) = [e for e in dep.events("started") if "pids" in e]
    front_ends = started["front_ends"]
    assert isinstance(front_ends, list)
    began = time.monotonic()
    dep.proc.send_signal(signal.SIGTERM)
    dep.proc.wait(WAIT)
    took = time.monotonic() - began
    assert dep.proc.returncode == 0
    assert took < GRACE + STOP_BOUND, f"the deployment took {took:.1f} s to stop"
    assert not [e for e in dep.events("front_end_failed")]
    for pid in front_ends:  # gone, or a zombie its parent no longer waits for
        stat = Path(f"/proc/{int(pid)}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"


def test_kill_9_of_the_shared_front_end_it_and_every_log_serve_again(
    deployment: Deployment,
) -> None:
    """The front end's channels die with it; the supervisor starts it again and restarts every
    log process so that each hands it a new channel (docs/operations/deployment.md)."""
    dep = deployment
    for origin in (A, B):
        dep.spin(origin, f"before-{GAME[origin]}")
    (started,) = [e for e in dep.events("started") if "pids" in e]
    front_ends = started["front_ends"]
    assert isinstance(front_ends, list)
    os.kill(int(front_ends[0]), signal.SIGKILL)
    killed = time.monotonic()
    served: dict[str, float] = {}
    while len(served) < 2 and time.monotonic() - killed < WAIT:
        for origin in (A, B):
            if origin in served:
                continue
            try:
                dep.spin(origin, f"after-{GAME[origin]}-{len(dep.acknowledged[origin])}")
            except ClientError:
                time.sleep(0.1)
                continue
            served[origin] = time.monotonic() - killed
    assert set(served) == {A, B}, "the shared port did not serve both logs again"
    print(f"\nafter SIGKILL of the shared front end: served again after {served} s")
    for origin in (A, B):
        logged = {e.request_id: i for i, e in enumerate(_entries(dep, origin))}
        for request_id, index in dep.acknowledged[origin]:
            assert logged.get(request_id) == index, (origin, request_id)
    assert dep.proc.poll() is None


def test_two_shared_front_ends_serve_every_log_and_follow_a_restart(
    two_front_ends: Deployment,
) -> None:
    """``--front-ends 2``: two shared front ends on the one port (SO_REUSEPORT spreads the
    connections), each attached to both logs, and each attached again to a restarted log."""
    dep = two_front_ends
    (started,) = [e for e in dep.events("started") if "pids" in e]
    front_ends, pids = started["front_ends"], started["pids"]
    assert isinstance(front_ends, list)
    assert isinstance(pids, dict)
    assert len(front_ends) == 2
    attached = {(e["front_end"], e["log"]) for e in dep.events("log_attached")}
    assert attached == {(i, o) for i in (0, 1) for o in (A, B)}
    for i in range(8):  # a connection each: both front ends get some
        for origin in (A, B):
            dep.spin(origin, f"two-{i}")
    os.kill(int(pids[A]), signal.SIGKILL)
    deadline = time.monotonic() + WAIT
    again: set[object] = set()
    while len(again) < 2 and time.monotonic() < deadline:
        again = {e["front_end"] for e in dep.events("log_attached") if e["again"]}
        time.sleep(0.1)
    assert again == {0, 1}
    for i in range(8):
        dep.spin(A, f"after-{i}")
    for origin in (A, B):
        logged = {e.request_id: i for i, e in enumerate(_entries(dep, origin))}
        for request_id, index in dep.acknowledged[origin]:
            assert logged.get(request_id) == index, (origin, request_id)
