"""The PostgreSQL primary is lost under load, and the service rides through a failover to its
synchronous standby with nothing lost and no restart (docs/operations/postgresql.md, "Failover").

Two throwaway clusters, started as the postgres user (``tests/postgres_cluster.py``), set up as
docs/operations/postgresql.md sets them up: a primary, and a standby made by ``pg_basebackup -X
stream -C
-S standby1 -R`` with ``application_name=standby1``, then ``synchronous_standby_names = 'FIRST
1 (standby1)'`` on the primary once it streams. Two ``rng-service serve`` replicas (one key, one
origin) with the multi-host connection string ``host=<primary>,<standby> ...
target_session_attrs=read-write``, under 32 requests in flight with unique request ids, dealt
over both. Mid-load the primary is crashed (``pg_ctl stop -m immediate``) and stays down
(fenced); ``PROMOTE_AFTER`` seconds later (an operator's, or a tool's, detection) the standby is
promoted (``pg_ctl promote``). Then:

- every replica answers again by itself (same process: no restart), and its health is
  NOT_SERVING while its writer recovers, SERVING at the end;
- every acknowledged outcome is in the new primary's log with the same entry bytes, and its
  receipt verifies against the tree stored there;
- every checkpoint published before the loss (the stored ones, read from the primary just
  before it was crashed, and every receipt's) is consistent with the log on the new primary:
  its root is the root of that log's first ``size`` leaves (computed here from the stored leaf
  hashes), and ``rng-audit verify --checkpoint`` accepts the export with them;
- every request that got no outcome (UNAVAILABLE) retried with its request id returns either
  the outcome a commit of unknown fate had logged (replayed) or a fresh one, once: the log holds
  each request id once, and a second retry replays the first;
- the replicas count the failover and the ambiguous commits they resolved (metrics).

``make test`` runs the short form (one failover); ``make soak`` the long one
(``SOAK_FAILOVERS`` failovers in a row, the old primary rebuilt each time as a standby of the
new one, runbook step 5). Each prints what it measured: the time from the primary's loss to
the first acknowledged outcome on the new primary (recovery), the same from the promotion, and
the ambiguous commits resolved.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest
from grpc_health.v1 import health_pb2

from rng_service.log.note import Checkpoint, NoteVerifier, open_note
from tests.integration.test_replicas_postgres import (
    KINDS,
    ORIGIN,
    Replica,
    Req,
    _audit,
    _check_final_checkpoint,
    _check_receipts,
    _env,
    _make_key,
    _read_log,
    _replicas,
    _roots,
    _stop,
)
from tests.postgres_cluster import Cluster, find_bindir

# serial: make test runs these after the parallel part, alone (a PostgreSQL outage under
# load must not share the two cores with another test worker; see the Makefile).
pytestmark = [pytest.mark.postgres, pytest.mark.serial]

IN_FLIGHT = 32  # client threads, each with one call in flight
PER_THREAD = 5000  # calls per client thread at most
PROMOTE_AFTER = 2.0  # seconds from the crash to the promotion
WARM_ACKS = 120  # acknowledged outcomes before the primary is crashed
AFTER_SECONDS = 1.0  # load on the new primary before the next failover or the end
RECOVERY_LIMIT = 30.0  # every replica must answer again this soon after the promotion
SOAK_FAILOVERS = 5
SOAK_WARM_ACKS = 1500
SOAK_AFTER_SECONDS = 5.0
STANDBY = "standby1"
SERVING = health_pb2.HealthCheckResponse.SERVING


# -- the load --------------------------------------------------------------------------------


@dataclass
class Ack:
    req: Req
    replica: int
    sent: float
    at: float
    response: Any


@dataclass
class Miss:
    req: Req
    replica: int
    sent: float
    at: float


@dataclass
class Load:
    """IN_FLIGHT client threads, each sending one call at a time with a new request id, dealt
    over the replicas; UNAVAILABLE is recorded (retried at the end) and backed off from."""

    replicas: list[Replica]
    acks: dict[str, Ack] = field(default_factory=dict)
    misses: list[Miss] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    prefix: str = "f0-"
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self, hard_stop: float) -> None:
        for n in range(IN_FLIGHT):
            t = threading.Thread(target=self._client, args=(n, hard_stop), daemon=True)
            self.threads.append(t)
            t.start()

    def _client(self, n: int, hard_stop: float) -> None:
        for i in range(PER_THREAD):
            if self.stopping.is_set() or time.monotonic() > hard_stop:
                return
            with self.lock:
                prefix = self.prefix
            req = Req(f"{prefix}{n}-{i}", KINDS[i % len(KINDS)], f"T{n}", f"{prefix}R{i}")
            which = (n + i) % len(self.replicas)
            sent = time.monotonic()
            try:
                response = req.call(self.replicas[which], timeout=15)
            except grpc.RpcError as e:
                with self.lock:
                    if e.code() == grpc.StatusCode.UNAVAILABLE:
                        self.misses.append(Miss(req, which, sent, time.monotonic()))
                    else:
                        self.errors.append(f"{req.rid}: {e.code()} {e.details()}")
                time.sleep(0.2)  # as a client backs off
                continue
            with self.lock:
                self.acks[req.rid] = Ack(req, which, sent, time.monotonic(), response)

    def acked_since(self, t: float) -> list[Ack]:
        with self.lock:
            return [a for a in self.acks.values() if a.sent >= t]

    def stop(self) -> None:
        self.stopping.set()
        for t in self.threads:
            t.join(60)
        assert not any(t.is_alive() for t in self.threads), "a client thread hangs"


@dataclass
class HealthWatch:
    """Polls every replica's gRPC health every 50 ms: (time, replica, status)."""

    replicas: list[Replica]
    seen: list[tuple[float, int, int]] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping.wait(0.05):
            for which, r in enumerate(self.replicas):
                try:
                    status = r.health.Check(health_pb2.HealthCheckRequest(), timeout=2).status
                except grpc.RpcError:
                    status = -1  # no answer: recorded as such, asserted against below
                self.seen.append((time.monotonic(), which, int(status)))

    def stop(self) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(10)

    def statuses(self, which: int, since: float) -> set[int]:
        return {status for t, w, status in list(self.seen) if w == which and t >= since}


# -- the clusters ----------------------------------------------------------------------------


@pytest.fixture
def clusters() -> Iterator[tuple[Cluster, Cluster]]:
    """A primary with a database ``rng_log`` and its synchronous standby, both removed after."""
    bindir = find_bindir()
    primary, standby = Cluster(bindir), Cluster(bindir)
    try:
        primary.init()
        primary.start()
        primary.create_database("rng_log")
        standby.init_standby_of(primary, name=STANDBY)
        standby.start()
        primary.make_synchronous(STANDBY)
        yield primary, standby
    finally:
        primary.remove()
        standby.remove()


def _multi_host_dsn(a: Cluster, b: Cluster) -> str:
    return (
        f"host={a.base},{b.base} port={a.port},{b.port} dbname=rng_log user=postgres "
        "target_session_attrs=read-write"
    )


def _published(primary: Cluster) -> list[bytes]:
    with psycopg.connect(primary.dsn("rng_log"), autocommit=True) as conn:
        return [bytes(r[0]) for r in conn.execute("SELECT note FROM checkpoints ORDER BY id")]


def _metrics(r: Replica) -> dict[str, float]:
    port = json.loads(r.out.read_text().splitlines()[0])["metrics_port"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(
            ("rng_log_store_failovers", "rng_log_ambiguous_commits", "rng_log_store_recovery")
        ):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def _events(r: Replica, event: str) -> list[dict[str, Any]]:
    found = []
    for line in r.err.read_text(errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if record.get("event") == event:
                found.append(record)
    return found


# -- one failover ----------------------------------------------------------------------------


@dataclass
class Failover:
    lost_at: float
    promoted_at: float
    first_ack: float  # seconds from the loss to the first outcome acknowledged after it
    per_replica: list[float]  # the same for each replica


def _fail_over(
    load: Load, health: HealthWatch, primary: Cluster, standby: Cluster, warm: int
) -> tuple[Failover, list[bytes]]:
    """Crashes ``primary`` once ``warm`` outcomes were acknowledged since the call, promotes
    ``standby`` PROMOTE_AFTER s later, and waits until every replica acknowledged an outcome
    sent after the crash and says SERVING. Returns what it measured and the checkpoints
    published before the crash."""
    started = time.monotonic()
    deadline = started + 120
    while len(load.acked_since(started)) < warm:
        assert time.monotonic() < deadline, f"too little load: {len(load.acked_since(started))}"
        assert not load.errors, load.errors[:5]
        time.sleep(0.02)
    published = _published(primary)
    lost_at = time.monotonic()
    primary.stop("immediate")  # and it stays down: fenced
    time.sleep(max(0.0, lost_at + PROMOTE_AFTER - time.monotonic()))
    standby.promote()
    promoted_at = time.monotonic()
    replicas = range(len(load.replicas))
    while True:
        after = load.acked_since(lost_at)
        answered = {a.replica for a in after}
        serving = all(
            health.statuses(w, time.monotonic() - 0.2) == {int(SERVING)} for w in replicas
        )
        if answered == set(replicas) and serving:
            break
        assert time.monotonic() < promoted_at + RECOVERY_LIMIT, (
            f"no recovery within {RECOVERY_LIMIT} s of the promotion: answered {answered}, "
            f"errors {load.errors[:5]}" + "".join(r.log() for r in load.replicas)
        )
        time.sleep(0.02)
    per_replica = [min(a.at for a in after if a.replica == w) - lost_at for w in replicas]
    return Failover(lost_at, promoted_at, min(per_replica), per_replica), published


# -- the test --------------------------------------------------------------------------------


def _run(tmp_path: Path, clusters: tuple[Cluster, Cluster], failovers: int, *, soak: bool) -> None:
    primary, standby = clusters
    key = _make_key(tmp_path)
    verifier = NoteVerifier.from_verifier_key(key.verifier_key)
    dsn = _multi_host_dsn(primary, standby)
    env = _env(
        tmp_path, dsn,
        RNG_SERVICE__METRICS__ENABLED="true",
        RNG_SERVICE__METRICS__PORT="0",
    )  # fmt: skip
    published: list[bytes] = []
    receipts_before: list[str] = []
    done: list[Failover] = []
    with _replicas(tmp_path, env, ["replica0", "replica1"]) as replicas:
        pids = [r.proc.pid for r in replicas]
        load = Load(replicas)
        health = HealthWatch(replicas)
        hard_stop = time.monotonic() + (60 + 90 * failovers if soak else 90)
        load.start(hard_stop)
        health.start()
        try:
            for n in range(failovers):
                with load.lock:
                    load.prefix = f"f{n}-"
                failover, before = _fail_over(
                    load, health, primary, standby, SOAK_WARM_ACKS if soak else WARM_ACKS
                )
                done.append(failover)
                published += before
                receipts_before += [
                    a.response.receipt.checkpoint
                    for a in list(load.acks.values())
                    if a.at < failover.lost_at
                ]
                for w in range(len(replicas)):
                    statuses = health.statuses(w, failover.lost_at)
                    assert -1 not in statuses, f"replica{w}'s health did not answer"
                time.sleep(SOAK_AFTER_SECONDS if soak else AFTER_SECONDS)
                if n + 1 < failovers:  # runbook step 5: the old primary, rebuilt as a standby
                    primary.init_standby_of(standby, name=STANDBY)
                    primary.start()
                    standby.make_synchronous(STANDBY)
                    primary, standby = standby, primary
        finally:
            load.stop()
            health.stop()
        assert not load.errors, "\n".join(load.errors[:10]) + "".join(r.log() for r in replicas)
        for r, pid in zip(replicas, pids, strict=True):
            assert r.proc.poll() is None, f"{r.name} exited\n{r.log()}"
            assert r.proc.pid == pid
            assert len(r.out.read_text().splitlines()) == 1, "it started more than once"

        # Every request that got no outcome, again with its request id on the other replica:
        # a commit of unknown fate that was logged is replayed; anything else is drawn now.
        # Then once more on the first: the same entry, replayed.
        retried: dict[str, Any] = {}
        for miss in load.misses:
            first = miss.req.call(replicas[1 - miss.replica], timeout=15)
            again = miss.req.call(replicas[miss.replica], timeout=15)
            assert again.receipt.replayed
            assert again.receipt.entry == first.receipt.entry
            retried[miss.req.rid] = first

        metrics = [_metrics(r) for r in replicas]
        lost = [len(_events(r, "store_lost")) for r in replicas]
        recovered = [_events(r, "store_recovered") for r in replicas]
        resolved = [_events(r, "ambiguous_commit_resolved") for r in replicas]
        for w, r in enumerate(replicas):
            # A replica whose writer lost the store for a second or more said NOT_SERVING
            # (health is re-evaluated every 0.5 s: a shorter loss, the store reached again at
            # the first poll after a promotion, may fall between two evaluations).
            if any(e["seconds"] >= 1.0 for e in recovered[w]):
                assert int(health_pb2.HealthCheckResponse.NOT_SERVING) in health.statuses(
                    w, done[0].lost_at
                ), f"{r.name} lost its store but never said NOT_SERVING"
            assert len(recovered[w]) <= lost[w]
            # One store_lost line per loss, not one per connection attempt of the pool.
            assert '"logger": "psycopg.pool"' not in r.err.read_text(errors="replace")
            assert metrics[w]["rng_log_store_failovers_total"] == len(recovered[w]), metrics[w]
            for resolution in ("stored", "not_stored", "unresolved"):
                count = sum(1 for e in resolved[w] if e["resolution"] == resolution)
                label = f'rng_log_ambiguous_commits_total{{resolution="{resolution}"}}'
                assert metrics[w][label] == count, (label, metrics[w])
            assert not any(e["resolution"] == "unresolved" for e in resolved[w]), resolved[w]
        # Every replica checked its tree against the new primary before appending to it:
        # after a recovery, or (a call that its driver retried on a new connection after the
        # promotion: no call failed) because the store's server changed.
        checked = [_events(r, "store_server_changed") for r in replicas]
        assert all(
            len(recovered[w]) + len(checked[w]) >= failovers for w in range(len(replicas))
        ), (recovered, checked)
        assert sum(len(r) for r in recovered) >= failovers, recovered

        export = tmp_path / "log.export"
        _audit("export", "--target", f"127.0.0.1:{replicas[0].port}", "--out", str(export))
        _stop(replicas)

    # The log on the (last) new primary.
    stored = _read_log(dsn)
    size = len(stored.entries)
    assert set(stored.by_request) == set(load.acks) | set(retried)
    answers = {rid: [("", a.response)] for rid, a in load.acks.items()}
    answers.update({rid: [("", response)] for rid, response in retried.items()})
    _check_receipts(stored, answers, verifier)  # same bytes, same index, proofs verify
    _check_final_checkpoint(stored, verifier)

    # Consistent with every checkpoint published before a loss: the stored ones and the
    # receipts'. Roots computed here from the stored leaf hashes.
    before = [Checkpoint.parse(open_note(note, [verifier]).text) for note in published]
    before += [
        Checkpoint.parse(open_note(note.encode(), [verifier]).text) for note in set(receipts_before)
    ]
    assert before, "no checkpoint was published before the failover"
    roots = _roots([e.leaf_hash for e in stored.entries], {c.size for c in before})
    for c in before:
        assert c.origin == ORIGIN
        assert c.root_hash == roots[c.size], f"checkpoint of size {c.size} is not in the log"
    kept = []
    for n, note in enumerate(dict.fromkeys(published)):
        path = tmp_path / f"published-{n}.note"
        path.write_bytes(note)
        kept.append(str(path))
    verified = _audit("verify", str(export), "--key", key.verifier_key, "--checkpoint", *kept)
    assert verified.stdout.startswith(f"OK: {size} entries of {ORIGIN}"), verified.stdout

    ambiguous = {
        resolution: sum(
            m[f'rng_log_ambiguous_commits_total{{resolution="{resolution}"}}'] for m in metrics
        )
        for resolution in ("stored", "not_stored")
    }
    # Every UNAVAILABLE meant "nothing was logged": a commit in flight at the crash that the
    # new primary holds gave its callers their outcomes (none was left unresolved, above), so
    # no retry finds its request already logged.
    replayed = sum(1 for response in retried.values() if response.receipt.replayed)
    assert replayed == 0, f"{replayed} requests answered UNAVAILABLE were logged"
    writers = [f"{e['seconds']:.2f}" for events in recovered for e in events]
    recoveries = ", ".join(
        f"{f.first_ack:.2f} s (per replica {', '.join(f'{s:.2f}' for s in f.per_replica)}; "
        f"{f.first_ack - (f.promoted_at - f.lost_at):.2f} s after the promotion)"
        for f in done
    )
    print(
        f"\n{failovers} failover(s); recovery (primary lost -> first acknowledged outcome on the "
        f"new primary, promotion {PROMOTE_AFTER:g} s after the loss): {recoveries}; ambiguous "
        f"commits resolved: {ambiguous['stored']:g} stored, {ambiguous['not_stored']:g} not "
        f"stored; {len(load.acks)} acknowledged, {len(load.misses)} UNAVAILABLE retried "
        f"({replayed} replayed a logged outcome, {len(retried) - replayed} drew); log size "
        f"{size}; {len(set(published))} stored checkpoints and "
        f"{len(set(receipts_before))} receipt checkpoints from before a loss checked; the "
        f"writers' own recoveries (noticing the loss -> taking groups): "
        f"{', '.join(writers)} s"
    )


def test_failover_to_a_synchronous_standby_under_load(
    tmp_path: Path, clusters: tuple[Cluster, Cluster]
) -> None:
    _run(tmp_path, clusters, 1, soak=False)


@pytest.mark.soak
def test_repeated_failovers_under_load(tmp_path: Path, clusters: tuple[Cluster, Cluster]) -> None:
    _run(tmp_path, clusters, SOAK_FAILOVERS, soak=True)
