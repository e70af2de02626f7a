"""Several logs in one deployment (``[[logs]]``, issue "Many logs"): three casino operators, two
SQLite logs and one PostgreSQL log, served by ``rng-service serve`` as a process per log.

The deployment runs as an operator starts it (the ``rng-service`` command, mTLS, a development
CA, a real ``rng-witness`` for log A's regulator and one for log C's, each trusting its own log
only). Each operator's game server draws on its own log; each log's export (``rng-audit
export`` by that log's auditor) verifies alone with its own key and witness, and with no other
log's key or witness; no entry of one
operator is in another's log; an identity bound to log A is refused on log B with the same
status and words as on a log that does not exist. Then one log's process is killed with
SIGKILL while its game server draws: every outcome it acknowledged is in its log afterwards,
the other two logs keep serving meanwhile, and the killed log serves again (the supervisor's
restart time is printed, and it is asserted only that it happens: no timed assertion).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rng_service.log.entry import LogEntry
from rng_service.rpc.client import ClientError, ClientTls, RngClient
from rng_service.rpc.log_servicer import LogClient
from tests.integration.test_witnesses import ORIGIN as WITNESS_TEST_ORIGIN
from tests.integration.test_witnesses import WitnessProc, free_port
from tests.postgres_cluster import Cluster
from tests.several_logs import client_lines, prepare, serve, server_lines

pytestmark = [pytest.mark.postgres, pytest.mark.serial]

BIN = Path(sys.executable).parent
A, B, C = "casino-a.test/rng-log", "casino-b.test/rng-log", "casino-c.test/rng-log"
GAME = {A: "game-a", B: "game-b", C: "game-c"}
AUDITOR = {A: "auditor-a", B: "auditor-b", C: "auditor-c"}
IDENTITIES = [*GAME.values(), *AUDITOR.values(), "operator"]
#: Bound on every wait of this test (start, restart), in seconds.
WAIT = 120.0


#: Each regulator's witness: log A's and log C's (log B has none).
WITNESSED = {A: "wa", C: "wc"}


@dataclass
class Deployment:
    d: Path
    proc: subprocess.Popen[str]
    ports: dict[str, int]
    stderr: Path
    witnesses: dict[str, WitnessProc]
    #: server.port: every log, each call naming its log (tests/integration/test_shared_port.py)
    shared_port: int = 0
    acknowledged: dict[str, list[tuple[str, int]]] = field(default_factory=dict)

    def tls(self, identity: str) -> ClientTls:
        certs = self.d / "certs"
        return ClientTls.from_files(
            certs / "ca.pem", certs / f"{identity}.pem", certs / f"{identity}.key"
        )

    def client(self, identity: str, origin: str, *, at: str | None = None) -> RngClient:
        return RngClient(
            f"127.0.0.1:{self.ports[at or origin]}", tls=self.tls(identity), origin=origin
        )

    def spin(self, origin: str, request_id: str) -> int:
        with self.client(GAME[origin], origin) as c:
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


def _config(d: Path, pg_dsn: str, witnesses: dict[str, WitnessProc]) -> Path:
    stores = {A: f'"{d}/a.sqlite3"', B: f'"{d}/b.sqlite3"', C: json.dumps(pg_dsn)}
    text = ["[witnessing]", "interval_seconds = 0.3", "timeout_seconds = 2"]
    text += server_lines(d)  # server.port = 0: the shared port of every log (test_shared_port)
    text += ["[storage]", "postgres_migrate = true"]
    for origin in (A, B, C):
        name = origin.split(".")[0]
        text += [
            "[[logs]]",
            f'origin = "{origin}"',
            f'key_file = "{d}/{name}.pem"',
            f"store = {stores[origin]}",
            "port = 0",
            "metrics_port = 0",
        ]
        if origin in witnesses:
            text.append(f'witnesses = ["{WITNESSED[origin]}"]')
    for origin, w in witnesses.items():
        text += ["[[witnesses]]", f'url = "{w.url}"', f'key = "{w.vkey_file}"',
                 f'name = "{WITNESSED[origin]}"']  # fmt: skip
    text += client_lines(GAME, AUDITOR)
    text += ["[[clients]]", 'identity = "operator"', 'roles = ["operator"]', 'logs = ["*"]']
    path = d / "config.toml"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def deployment(tmp_path: Path, pg_cluster: Cluster) -> Iterator[Deployment]:
    d = tmp_path
    prepare(d, (A, B, C), IDENTITIES)
    witnesses = {}
    for origin, name in WITNESSED.items():  # each trusts its own log only
        log_vkey = d / f"{origin.split('.')[0]}.pem.vkey"
        w = WitnessProc(d / name, f"{name}.witness.test/w", log_vkey, free_port())
        w.config.write_text(
            w.config.read_text().replace(f'"{WITNESS_TEST_ORIGIN}"', f'"{origin}"'),
            encoding="utf-8",
        )
        witnesses[origin] = w.start()
    pg_dsn = pg_cluster.dsn(pg_cluster.database_for(d))
    config = _config(d, pg_dsn, witnesses)
    try:
        with serve(d, config) as (proc, line):
            logs = line["logs"]
            assert isinstance(logs, dict)
            ports = {origin: int(logs[origin]["grpc_port"]) for origin in (A, B, C)}
            shared = int(str(line["grpc_port"]))
            yield Deployment(d=d, proc=proc, ports=ports, stderr=d / "stderr.jsonl",
                             witnesses=witnesses, shared_port=shared)  # fmt: skip
    finally:
        for w in witnesses.values():
            w.stop()
        pg_cluster.drop_database_for(d)


def _entries(dep: Deployment, origin: str) -> list[LogEntry]:
    with dep.client("operator", origin) as op:
        op.publish_checkpoint()  # the export then ends at the newest entry
    with dep.client(AUDITOR[origin], origin) as c:
        size = int(c.latest_checkpoint()["size"])
        return [LogEntry.decode(e["entry"]) for e in c.entries(0, size)]


def _rng_audit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "rng-audit"), *args], capture_output=True, text=True, timeout=WAIT,
        check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_three_operators_three_logs(deployment: Deployment) -> None:
    dep = deployment
    for origin in (A, B, C):
        for i in range(3):
            dep.spin(origin, f"{GAME[origin]}-{i}")
    # Each log holds its own operator's entries and nobody else's.
    for origin in (A, B, C):
        entries = _entries(dep, origin)
        assert {e.client for e in entries} == {GAME[origin]}
        assert sorted(e.request_id for e in entries) == sorted(
            rid for rid, _ in dep.acknowledged[origin]
        )
    # A and C are witnessed by their own regulator's witness, each up to their last entry.
    for origin in WITNESSED:
        size = len(dep.acknowledged[origin])
        deadline = time.monotonic() + WAIT
        with LogClient(f"127.0.0.1:{dep.ports[origin]}", tls=dep.tls(AUDITOR[origin])) as c:
            while time.monotonic() < deadline:
                try:
                    note = c.latest_checkpoint(witnessed=True)
                except Exception:  # NOT_FOUND until the first cosignature
                    note = ""
                if note and int(note.splitlines()[1]) >= size:
                    break
                time.sleep(0.1)
            else:
                pytest.fail(f"no witnessed checkpoint of {origin} covers its {size} entries")
    # Each log's export verifies alone, with its own key and witness, and with no other's.
    certs = dep.d / "certs"
    for origin in (A, B, C):
        name = origin.split(".")[0]
        out = dep.d / f"{name}.export"
        auditor = AUDITOR[origin]
        witnessed = ["--witnessed"] if origin in WITNESSED else []
        done = _rng_audit(
            "--ca", str(certs / "ca.pem"), "--cert", str(certs / f"{auditor}.pem"),
            "--tls-key", str(certs / f"{auditor}.key"),
            "export", "--target", f"127.0.0.1:{dep.ports[origin]}", "--out", str(out),
            *witnessed,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        key = ["--key", str(dep.d / f"{name}.pem.vkey")]
        own = (["--witness", str(dep.witnesses[origin].vkey_file)] if origin in WITNESSED
               else [])  # fmt: skip
        ok = _rng_audit("verify", str(out), *key, *own)
        # a witnessed export ends at a checkpoint its witness cosigned: nothing left unchecked;
        # without a witness no checkpoint covers the newest entry: truncation NOT CHECKED
        assert ok.returncode == (0 if own else 4), ok.stdout + ok.stderr
        assert ok.stdout.startswith("OK"), ok.stdout
        assert ("NOT CHECKED: truncation" in ok.stdout) == (not own), ok.stdout
        other = "casino-b" if name != "casino-b" else "casino-c"
        wrong = _rng_audit("verify", str(out), "--key", str(dep.d / f"{other}.pem.vkey"))
        assert wrong.returncode != 0, wrong.stdout
    # A's checkpoints carry no cosignature of C's witness, and the other way round.
    for origin, other in ((A, C), (C, A)):
        name = origin.split(".")[0]
        foreign = _rng_audit(
            "verify", str(dep.d / f"{name}.export"), "--key", str(dep.d / f"{name}.pem.vkey"),
            "--witness", str(dep.witnesses[other].vkey_file),
        )  # fmt: skip
        assert foreign.returncode != 0, foreign.stdout


def test_the_shared_port_serves_the_sqlite_and_postgresql_logs(deployment: Deployment) -> None:
    """server.port beside the logs' own ports: each game server, naming no log, reaches its
    own (the PostgreSQL log C too), and log B's auditor reads B there, naming it."""
    dep = deployment
    for origin in (A, B, C):
        with RngClient(f"127.0.0.1:{dep.shared_port}", tls=dep.tls(GAME[origin])) as c:
            index = c.spin(wheel="double_zero", table_id="T1", round_id="R-shared",
                           request_id=f"shared-{GAME[origin]}").receipt.index  # fmt: skip
        dep.acknowledged.setdefault(origin, []).append((f"shared-{GAME[origin]}", index))
    for origin in (A, B, C):
        entries = _entries(dep, origin)
        assert [e.request_id for e in entries] == [f"shared-{GAME[origin]}"]
        assert {e.client for e in entries} == {GAME[origin]}
    with RngClient(f"127.0.0.1:{dep.shared_port}", tls=dep.tls(AUDITOR[B]), origin=B) as c:
        assert int(c.latest_checkpoint()["size"]) == 1
        assert c.health(B) == "SERVING"


def test_a_log_not_bound_is_refused_as_a_log_that_does_not_exist(deployment: Deployment) -> None:
    dep = deployment
    refusals = []
    for origin, at in ((B, B), ("no-such-log.test/rng-log", A), ("no-such-log.test/rng-log", B),
                       (B, A)):  # fmt: skip
        with dep.client("game-a", origin, at=at) as c, pytest.raises(ClientError) as e:
            c.spin(wheel="double_zero", table_id="T1", round_id="R", request_id=f"x-{origin}{at}")
        refusals.append((e.value.code, e.value.details))
    for origin in (B, "no-such-log.test/rng-log"):  # the shared port: the same refusal
        with RngClient(f"127.0.0.1:{dep.shared_port}", tls=dep.tls("game-a"),
                       origin=origin) as c, pytest.raises(ClientError) as e:  # fmt: skip
            c.spin(wheel="double_zero", table_id="T1", round_id="R",
                   request_id=f"s-{origin.split('/')[0]}")  # fmt: skip
        refusals.append((e.value.code, e.value.details))
    assert refusals[0] == ("PERMISSION_DENIED", "the requested log is not available to client "
                           "'game-a'")  # fmt: skip
    assert len(set(refusals)) == 1, refusals
    # Nothing was drawn for the refused calls: log B holds none of game-a's requests.
    assert all(e.client != "game-a" for e in _entries(dep, B))


def test_kill_9_of_one_log_loses_nothing_acknowledged_and_others_serve(
    deployment: Deployment,
) -> None:
    dep = deployment
    (started,) = [e for e in dep.events("started") if "pids" in e]  # the supervisor's
    pids = started["pids"]
    assert isinstance(pids, dict)
    victim = int(pids[B])
    stop = threading.Event()
    failures: list[str] = []

    def draw_on_b() -> None:  # bounded: at most 2000 calls, and until told to stop
        for i in range(2000):
            if stop.is_set():
                return
            try:
                dep.spin(B, f"load-{i}")
            except ClientError as e:
                failures.append(e.code)  # during the outage: not acknowledged
                time.sleep(0.05)

    load = threading.Thread(target=draw_on_b, daemon=True)
    load.start()
    deadline = time.monotonic() + WAIT
    while len(dep.acknowledged.get(B, [])) < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(victim, signal.SIGKILL)
    killed = time.monotonic()
    # The other logs serve meanwhile.
    for origin in (A, C):
        with dep.client(AUDITOR[origin], origin) as c:
            assert c.health() == "SERVING"
        dep.spin(origin, f"during-outage-{origin.split('.')[0]}")
    # The killed log serves again.
    served_again = None
    while time.monotonic() - killed < WAIT:
        try:
            with dep.client(AUDITOR[B], B) as c:
                if c.health() == "SERVING":
                    served_again = time.monotonic() - killed
                    break
        except ClientError:
            pass
        time.sleep(0.05)
    assert served_again is not None, "log B did not serve again"
    before = len(dep.acknowledged[B])
    while len(dep.acknowledged[B]) < before + 20 and time.monotonic() - killed < WAIT:
        time.sleep(0.05)
    stop.set()
    load.join(WAIT)
    (restarted,) = dep.events("log_process_restarted")
    assert restarted["log"] == B
    print(
        f"\nlog B serving again {served_again:.2f} s after SIGKILL (seen by a client); the "
        f"supervisor's restart took {restarted['seconds']} s; {len(failures)} calls refused "
        "meanwhile"
    )
    # Everything acknowledged is in the log, at the index its receipt named.
    entries = _entries(dep, B)
    logged = {e.request_id: i for i, e in enumerate(entries)}
    for request_id, index in dep.acknowledged[B]:
        assert logged.get(request_id) == index, request_id
    assert dep.proc.poll() is None  # the supervisor serves on


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_log_processes_stop_with_the_supervisor(deployment: Deployment) -> None:
    dep = deployment
    (started,) = [e for e in dep.events("started") if "pids" in e]
    pids = started["pids"]
    assert isinstance(pids, dict)
    front_ends = started["front_ends"]  # the shared port's: they stop with it too
    assert isinstance(front_ends, list)
    log_pids = [int(p) for p in [*pids.values(), *front_ends]]
    assert all(_alive(p) for p in log_pids)
    dep.proc.kill()  # SIGKILL: the supervisor cannot stop them itself
    dep.proc.wait(WAIT)
    deadline = time.monotonic() + WAIT
    while any(_alive(p) for p in log_pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in log_pids), "log processes outlived their supervisor"
    # Their locks and ports are free: the same deployment starts again (serve() asserts its
    # listening line).
    with serve(dep.d, dep.d / "config.toml"):
        pass
