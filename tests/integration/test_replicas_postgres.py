"""Service replicas sharing one PostgreSQL log, end to end.

Real ``rng-service serve`` subprocesses (one signing key, one database of the session's
throwaway cluster, ``tests/postgres_cluster.py``) under concurrent client load from threads of
this process, all on loopback:

- three replicas, requests round-robin across them, a share of them retried with the same
  request id on a different replica, some sent to two replicas at once (first calls racing, and
  retries racing): every request id is in the log once, every answer to it (the first and the
  replays) is the same entry and receipt, the log is contiguous, ``rng-audit export`` through
  one replica and ``rng-audit verify`` accept it, and every receipt, whichever replica issued
  it, verifies against the one stored tree;
- the PostgreSQL server stopped under load and started again: outcome calls fail with
  UNAVAILABLE meanwhile (never hang, never another status), the replicas recover by themselves,
  nothing acknowledged is lost, and the failed requests retried with their request ids either
  replay what a commit of unknown outcome stored or draw once.

Each test has its own database; the stopped cluster is always started again (``finally``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from rng_service._proto.rng.v1 import common_pb2, outcomes_pb2, outcomes_pb2_grpc
from rng_service.log.entry import LogEntry
from rng_service.log.keys import KeyPairInfo, generate_key_pair
from rng_service.log.merkle import node_hash, root_from_leaf_hashes
from rng_service.log.note import Checkpoint, NoteVerifier, open_note
from rng_service.log.receipt import Receipt, verify_receipt
from rng_service.storage.base import EntryRecord
from rng_service.storage.postgres import PostgresStorage
from tests.postgres_cluster import Cluster

# serial: make test runs these after the parallel part, alone (a PostgreSQL outage under
# load must not share the two cores with another test worker; see the Makefile).
pytestmark = [pytest.mark.postgres, pytest.mark.serial]

REPO = Path(__file__).resolve().parents[2]
ORIGIN = "replicas.test.example/log"
KEY_NAME = ORIGIN  # a log's key is named by its origin (C2SP tlog-checkpoint)
KINDS = ("spin", "dice", "uniform")


# -- replicas ----------------------------------------------------------------------------------


@dataclass
class Replica:
    name: str
    proc: subprocess.Popen[bytes]
    out: Path
    err: Path
    port: int = 0
    channel: grpc.Channel | None = None
    stub: Any = None
    health: Any = None

    def log(self, lines: int = 40) -> str:
        try:
            text = self.err.read_text(errors="replace")
        except OSError:
            return ""
        return f"--- {self.name} stderr (last {lines} lines) ---\n" + "\n".join(
            text.splitlines()[-lines:]
        )


def _make_key(tmp_path: Path) -> KeyPairInfo:
    return generate_key_pair(tmp_path / "key.pem", name=KEY_NAME)


def _env(tmp_path: Path, dsn: str, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "RNG_SERVICE__SERVER__PORT": "0",
        "RNG_SERVICE__SERVER__SHUTDOWN_GRACE_SECONDS": "5",
        "RNG_SERVICE__METRICS__ENABLED": "false",
        "RNG_SERVICE__STORAGE__DRIVER": "postgres",
        "RNG_SERVICE__STORAGE__POSTGRES_DSN": dsn,
        "RNG_SERVICE__STORAGE__POSTGRES_CONNECT_TIMEOUT_SECONDS": "2",
        "RNG_SERVICE__LOG__KEY_FILE": str(tmp_path / "key.pem"),
        "RNG_SERVICE__LOG__KEY_NAME": KEY_NAME,
        "RNG_SERVICE__LOG__ORIGIN": ORIGIN,
        # Often, so that every replica stores published checkpoints during the load.
        "RNG_SERVICE__LOG__PUBLISH_INTERVAL_SECONDS": "0.5",
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


@contextlib.contextmanager
def _replicas(
    tmp_path: Path, env: dict[str, str], names: Sequence[str], args: Sequence[str] = ()
) -> Iterator[list[Replica]]:
    """``rng-service serve ARGS`` processes, started together; killed on the way out if a test
    did not stop them itself (``_stop``)."""
    replicas: list[Replica] = []
    try:
        for name in names:
            out, err = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
            with open(out, "wb") as o, open(err, "wb") as e:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "rng_service.cli.service", "serve", *args],
                    env=env, cwd=REPO, stdout=o, stderr=e, stdin=subprocess.DEVNULL,
                )  # fmt: skip
            replicas.append(Replica(name, proc, out, err))
        deadline = time.monotonic() + 60
        for r in replicas:
            while True:
                text = r.out.read_text(errors="replace")
                if "\n" in text:
                    line = text.splitlines()[0]
                    assert line.startswith('{"event": "listening"'), line + r.log()
                    r.port = int(json.loads(line)["grpc_port"])
                    break
                assert r.proc.poll() is None, f"{r.name} exited at start\n{r.log()}"
                assert time.monotonic() < deadline, f"{r.name} did not start\n{r.log()}"
                time.sleep(0.05)
            r.channel = grpc.insecure_channel(f"127.0.0.1:{r.port}")
            r.stub = outcomes_pb2_grpc.OutcomeServiceStub(r.channel)
            r.health = health_pb2_grpc.HealthStub(r.channel)
        yield replicas
    finally:
        for r in replicas:
            if r.channel is not None:
                r.channel.close()
            if r.proc.poll() is None:
                r.proc.kill()
                r.proc.wait(30)


def _stop(replicas: Sequence[Replica]) -> None:
    """SIGTERM to all at once; each must exit 0 after its graceful shutdown."""
    for r in replicas:
        r.proc.send_signal(signal.SIGTERM)
    for r in replicas:
        try:
            code = r.proc.wait(30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{r.name} did not exit within 30 s of SIGTERM\n{r.log()}")
        assert code == 0, f"{r.name} exited {code}\n{r.log()}"
        assert '"event": "stopped"' in r.err.read_text(errors="replace"), r.log()


def _audit(*args: str) -> subprocess.CompletedProcess[str]:
    """``rng-audit ARGS`` (export through a replica, verify an export), which must succeed:
    exit 0, or for ``verify`` exit 4 with truncation the one thing NOT CHECKED (no kept
    checkpoint covers the export's newest entry: these tests check what the log holds, not
    that it is not longer)."""
    done = subprocess.run(
        [sys.executable, "-m", "rng_service.cli.audit", *args],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if args[0] == "verify" and done.returncode == 4:
        not_checked = [x for x in done.stdout.splitlines() if x.startswith("NOT CHECKED")]
        assert [x.split(".")[0] for x in not_checked] == ["NOT CHECKED: truncation"], done.stdout
        return done
    assert done.returncode == 0, done.stdout + done.stderr
    return done


# -- requests ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Req:
    """One outcome request; a retry sends exactly the same message."""

    rid: str
    kind: str
    table: str
    round: str

    def call(self, r: Replica, *, timeout: float, future: bool = False) -> Any:
        ctx = common_pb2.RequestContext(
            table_id=self.table, round_id=self.round, request_id=self.rid
        )
        if self.kind == "spin":
            method = r.stub.SpinRoulette
            message: Any = outcomes_pb2.SpinRouletteRequest(
                context=ctx, wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO
            )
        elif self.kind == "dice":
            method = r.stub.RollDice
            message = outcomes_pb2.RollDiceRequest(context=ctx, count=3, sides=6)
        else:
            method = r.stub.DrawUniformIntegers
            message = outcomes_pb2.DrawUniformIntegersRequest(
                context=ctx, low=1, high=1_000_000, count=5
            )
        if future:
            return method.future(message, timeout=timeout)
        return method(message, timeout=timeout)


def _req(n: int, i: int, prefix: str = "c") -> Req:
    return Req(f"{prefix}{n}-{i}", KINDS[i % len(KINDS)], f"T{n}", f"{prefix}R{i}")


def _receipt(response: Any) -> Receipt:
    r = response.receipt
    return Receipt(
        index=r.index,
        entry=r.entry,
        leaf_hash=r.leaf_hash,
        inclusion_proof=tuple(r.inclusion_proof),
        tree_size=r.tree_size,
        checkpoint=r.checkpoint,
        replayed=r.replayed,
    )


def _without_replayed(response: Any) -> bytes:
    copy = type(response)()
    copy.CopyFrom(response)
    copy.receipt.replayed = False
    data: bytes = copy.SerializeToString(deterministic=True)
    return data


# -- the stored log ----------------------------------------------------------------------------


def _roots(leaf_hashes: Sequence[bytes], sizes: set[int]) -> dict[int, bytes]:
    """RFC 6962 roots of the tree at each of ``sizes``, in one pass (a stack of the complete
    subtrees, largest first; the root folds them from the right)."""
    out: dict[int, bytes] = {}
    stack: list[tuple[int, bytes]] = []
    for n, leaf in enumerate(leaf_hashes, 1):
        height, node = 0, leaf
        while stack and stack[-1][0] == height:
            node = node_hash(stack.pop()[1], node)
            height += 1
        stack.append((height, node))
        if n in sizes:
            root = stack[-1][1]
            for _, left in reversed(stack[:-1]):
                root = node_hash(left, root)
            out[n] = root
    return out


@dataclass
class Stored:
    entries: list[EntryRecord]
    latest_note: bytes | None
    checkpoints: int
    by_request: dict[str, EntryRecord] = field(default_factory=dict)


def _read_log(dsn: str) -> Stored:
    store = PostgresStorage(dsn)
    try:
        size = store.tree_size()
        entries = store.entries(0, size)
        latest = store.latest_checkpoint()
        checkpoints = len(store.checkpoints())
    finally:
        store.close()
    assert [e.index for e in entries] == list(range(size)), "indices not contiguous from 0"
    by_request = {e.request_id: e for e in entries}
    assert len(by_request) == size, "a request id is in the log more than once"
    return Stored(entries, latest.note if latest else None, checkpoints, by_request)


def _check_receipts(
    stored: Stored, answers: dict[str, list[tuple[str, Any]]], verifier: NoteVerifier
) -> None:
    """Every answer is the stored entry at its index, and its receipt verifies against the
    stored tree: signed checkpoint, inclusion proof, root at its size."""
    leaves = [e.leaf_hash for e in stored.entries]
    receipts = {rid: [_receipt(resp) for _, resp in got] for rid, got in answers.items()}
    sizes = {r.tree_size for rs in receipts.values() for r in rs}
    assert max(sizes) <= len(leaves)
    roots = _roots(leaves, sizes)
    assert roots[len(leaves)] == root_from_leaf_hashes(leaves)  # the one-pass roots are right
    verified: set[tuple[int, int, str]] = set()
    for rid, rs in receipts.items():
        record = stored.by_request.get(rid)
        assert record is not None, f"acknowledged request {rid} is not in the log"
        for receipt in rs:
            assert receipt.index == record.index, rid
            assert receipt.entry == record.data, rid
            assert receipt.leaf_hash == record.leaf_hash, rid
            assert receipt.tree_size == record.commit_size, rid
            key = (receipt.index, receipt.tree_size, receipt.checkpoint)
            if key in verified:
                continue
            checked = verify_receipt(receipt, [verifier])
            assert checked.checkpoint.root_hash == roots[receipt.tree_size], rid
            assert checked.entry.request_id == rid
            verified.add(key)


def _check_final_checkpoint(stored: Stored, verifier: NoteVerifier) -> None:
    assert stored.latest_note is not None, "no published checkpoint"
    checkpoint = Checkpoint.parse(open_note(stored.latest_note, [verifier]).text)
    assert checkpoint.origin == ORIGIN
    assert checkpoint.size == len(stored.entries), "the final checkpoint does not cover the log"
    assert checkpoint.root_hash == root_from_leaf_hashes([e.leaf_hash for e in stored.entries])


@pytest.fixture
def dsn(pg_cluster: Cluster, tmp_path: Path) -> Iterator[str]:
    """A fresh database of the session cluster for this test, dropped afterwards."""
    yield pg_cluster.dsn(pg_cluster.database_for(tmp_path))
    if pg_cluster.running:
        pg_cluster.drop_database_for(tmp_path)


# -- three replicas, retries across them -------------------------------------------------------

THREADS = 6
PER_THREAD = 250  # requests per client thread at most
LOAD_SECONDS = 6.0


def test_three_replicas_share_one_log(tmp_path: Path, dsn: str) -> None:
    key = _make_key(tmp_path)
    verifier = NoteVerifier.from_verifier_key(key.verifier_key)
    answers: dict[str, list[tuple[str, Any]]] = {}  # request id -> (replica, response) each
    errors: list[str] = []
    lock = threading.Lock()
    # Publishing as often as allowed: every replica stores published checkpoints during the
    # load (the export holds checkpoints of each), and the third replica starts while the
    # other two append and publish.
    env = _env(tmp_path, dsn, RNG_SERVICE__LOG__PUBLISH_INTERVAL_SECONDS="0.1")

    def client(prefix: str, n: int, replicas: list[Replica], until: Callable[[], bool]) -> None:
        count = len(replicas)
        for i in range(PER_THREAD):
            if until():
                return
            req = _req(n, i, prefix)
            first = replicas[(n + i) % count]
            other = replicas[(n + i + 1) % count]
            third = replicas[(n + i + 2) % count]
            got: list[tuple[str, Any]] = []
            try:
                if i % 6 == 5:  # the first call, on two replicas at once
                    calls = [(r, req.call(r, timeout=20, future=True)) for r in (first, other)]
                    got += [(r.name, c.result()) for r, c in calls]
                else:
                    got.append((first.name, req.call(first, timeout=20)))
                if i % 6 == 1:  # a retry on another replica
                    got.append((other.name, req.call(other, timeout=20)))
                elif i % 6 == 3:  # a retry on two others at once (of two: and the first)
                    calls = [(r, req.call(r, timeout=20, future=True)) for r in (other, third)]
                    got += [(r.name, c.result()) for r, c in calls]
            except grpc.RpcError as e:
                with lock:
                    errors.append(f"{req.rid}: {e.code()} {e.details()}")
                return
            with lock:
                answers[req.rid] = got

    def run(threads: list[threading.Thread]) -> None:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads), "a client thread hangs"

    with _replicas(tmp_path, env, ["replica0", "replica1"]) as two:
        # The third replica joins a log that the first two are appending to and publishing.
        joined = threading.Event()
        warm_up = [
            threading.Thread(target=client, args=("w", n, two, joined.is_set)) for n in range(2)
        ]
        for t in warm_up:
            t.start()
        try:
            with _replicas(tmp_path, env, ["replica2"]) as late:
                joined.set()
                for t in warm_up:
                    t.join(60)
                replicas = [*two, *late]
                warmed = len(answers)
                stop_at = time.monotonic() + LOAD_SECONDS
                run(
                    [
                        threading.Thread(
                            target=client,
                            args=("c", n, replicas, lambda: time.monotonic() > stop_at),
                        )
                        for n in range(THREADS)
                    ]
                )
                assert not errors, "\n".join(errors[:10]) + "".join(r.log() for r in replicas)
                assert warmed >= 5, f"too little load while the third replica started: {warmed}"
                assert len(answers) - warmed >= 60, f"too little load: {len(answers) - warmed}"

                # The export through one replica covers what the others appended.
                export = tmp_path / "log.export"
                exported = _audit("export", "--target", f"127.0.0.1:{late[0].port}",
                                  "--out", str(export))  # fmt: skip
                _stop(replicas)
        finally:
            joined.set()

    verified = _audit("verify", str(export), "--key", key.verifier_key)

    stored = _read_log(dsn)
    size = len(stored.entries)
    assert f"exported {size} entries" in exported.stdout, exported.stdout
    assert verified.stdout.startswith(f"OK: {size} entries of {ORIGIN}"), verified.stdout
    # Each request id once, and nothing in the log that nobody asked for.
    assert set(stored.by_request) == set(answers)

    by_replica = {r.name: 0 for r in replicas}
    replays = 0
    for rid, got in answers.items():
        first = [name for name, resp in got if not resp.receipt.replayed]
        assert len(first) == 1, f"{rid}: {len(first)} answers were not replays: {first}"
        by_replica[first[0]] += 1
        replays += len(got) - 1
        same = {_without_replayed(resp) for _, resp in got}
        assert len(same) == 1, f"{rid}: the answers differ beyond the replayed flag"
    assert all(by_replica.values()), f"a replica appended nothing: {by_replica}"
    assert replays >= len(answers) // 3, replays
    _check_receipts(stored, answers, verifier)
    _check_final_checkpoint(stored, verifier)
    assert stored.checkpoints >= 3, stored.checkpoints
    print(
        f"\n{size} entries ({warmed} while the third replica started), first answers by "
        f"replica {by_replica}, {replays} replays, {stored.checkpoints} published checkpoints"
    )


# -- the PostgreSQL server stops under load, and comes back ------------------------------------

OUTAGE_THREADS = 4
OUTAGE_PER_THREAD = 2000  # requests per client thread at most
OUTAGE_SECONDS = 3.0
OUTAGE_SECONDS_MAX = 12.0  # the outage ends by then even if a replica never says NOT_SERVING
RECOVERY_SECONDS = 20.0  # the replicas must answer again this soon after the restart


@dataclass
class Failed:
    req: Req
    replica: int
    at: float
    seconds: float


@pytest.mark.parametrize(
    "args", [(), ("--front-ends", "2")], ids=["one-process", "writer-and-2-front-ends"]
)
def test_postgres_restart_under_load_recovers_without_loss(
    tmp_path: Path, pg_cluster: Cluster, dsn: str, args: tuple[str, ...]
) -> None:
    key = _make_key(tmp_path)
    verifier = NoteVerifier.from_verifier_key(key.verifier_key)
    acked: dict[str, tuple[float, int, Any]] = {}  # request id -> (time, replica, response)
    unavailable: list[Failed] = []
    other_errors: list[str] = []
    lock = threading.Lock()
    stopping = threading.Event()

    with _replicas(tmp_path, _env(tmp_path, dsn), ["replica0", "replica1"], args) as replicas:
        hard_stop = time.monotonic() + 45

        def send(req: Req, which: int) -> Failed | None:
            """One call, recorded: acknowledged, UNAVAILABLE (returned), or another error."""
            started = time.monotonic()
            try:
                response = req.call(replicas[which], timeout=15)
            except grpc.RpcError as e:
                now = time.monotonic()
                with lock:
                    if e.code() != grpc.StatusCode.UNAVAILABLE:
                        other_errors.append(f"{req.rid}: {e.code()} {e.details()}")
                        return None
                    failed = Failed(req, which, now, now - started)
                    unavailable.append(failed)
                    return failed
            with lock:
                acked[req.rid] = (time.monotonic(), which, response)
            return None

        def client(n: int) -> None:
            for i in range(OUTAGE_PER_THREAD):
                if stopping.is_set() or time.monotonic() > hard_stop:
                    return
                req = _req(n, i)
                if send(req, (n + i) % len(replicas)) is not None or req.rid not in acked:
                    time.sleep(0.05)  # as a client would back off

        def successes_since(t: float) -> set[int]:
            with lock:
                return {which for at, which, _ in acked.values() if at > t}

        threads = [threading.Thread(target=client, args=(n,)) for n in range(OUTAGE_THREADS)]
        for t in threads:
            t.start()
        not_serving: set[int] = set()  # replicas whose health said NOT_SERVING in the outage

        def probe(which: int) -> None:
            """A new call to a replica that says NOT_SERVING: it fails at once with
            UNAVAILABLE (the writer takes no group while the store is lost), even when every
            client thread's call is held in the commit that was in flight at the loss (held
            until the store can be read: then no client call fails during the outage)."""
            req = _req(100 + which, 0, prefix="probe")
            failed = send(req, which)
            if failed is not None:
                probes.append(failed.seconds)
            elif req.rid in acked:
                with lock:
                    other_errors.append(
                        f"{req.rid} was answered while its replica said NOT_SERVING"
                    )

        probes: list[float] = []  # seconds each probe took to fail

        def health_of(which: int) -> int:
            request = health_pb2.HealthCheckRequest()
            return int(replicas[which].health.Check(request, timeout=5).status)

        try:
            deadline = time.monotonic() + 15
            while len(acked) < 40:
                assert time.monotonic() < deadline, "no load before the outage"
                time.sleep(0.02)
            down_at = time.monotonic()
            try:
                pg_cluster.stop("immediate")
                # Health follows the store (HealthMonitor, StoreHealth): after 3 failed
                # commits in a row each replica says NOT_SERVING, so that a load balancer
                # stops sending it calls. It must keep answering meanwhile.
                # At least OUTAGE_SECONDS; longer (bounded) until each replica has said it:
                # under load a writer can notice the loss a second or two late.
                while time.monotonic() < down_at + OUTAGE_SECONDS or (
                    not_serving != set(range(len(replicas)))
                    and time.monotonic() < down_at + OUTAGE_SECONDS_MAX
                ):
                    for which in range(len(replicas)):
                        if which in not_serving:
                            continue
                        if health_of(which) == health_pb2.HealthCheckResponse.NOT_SERVING:
                            not_serving.add(which)
                            probe(which)
                    time.sleep(0.1)
            finally:
                pg_cluster.start()
            up_at = time.monotonic()
            serving = health_pb2.HealthCheckResponse.SERVING
            while successes_since(up_at) != set(range(len(replicas))) or any(
                health_of(which) != serving for which in range(len(replicas))
            ):
                assert time.monotonic() < up_at + RECOVERY_SECONDS, (
                    f"the replicas did not recover within {RECOVERY_SECONDS} s of the restart; "
                    f"answered since: {successes_since(up_at)}" + "".join(r.log() for r in replicas)
                )
                time.sleep(0.02)
            recovered_after = time.monotonic() - up_at
            time.sleep(1.0)  # some load on the recovered replicas
        finally:
            stopping.set()
            for t in threads:
                t.join(60)
        assert not any(t.is_alive() for t in threads), "a client thread hangs"
        assert not other_errors, "\n".join(other_errors[:10]) + "".join(r.log() for r in replicas)
        assert not_serving == set(range(len(replicas))), not_serving
        during = [f for f in unavailable if down_at <= f.at]
        assert during, "no outcome call failed while PostgreSQL was down"
        assert len(probes) == len(replicas), probes  # each NOT_SERVING replica refused at once
        assert max(probes) < 5, f"a call to a NOT_SERVING replica took {max(probes):.1f} s"
        slowest = max(f.seconds for f in unavailable)
        assert slowest < 10, f"a failing call took {slowest:.1f} s"
        assert len({f.req.rid for f in unavailable}) == len(unavailable)
        assert not {f.req.rid for f in unavailable} & set(acked)

        # The failed requests again, with their ids, on the other replica: a commit whose
        # outcome was unknown to the service is replayed; anything else is drawn now, once.
        retried: dict[str, Any] = {}
        for f in unavailable:
            retried[f.req.rid] = f.req.call(replicas[(f.replica + 1) % len(replicas)], timeout=15)
        _stop(replicas)

    stored = _read_log(dsn)
    assert set(stored.by_request) == set(acked) | set(retried)
    answers = {rid: [("", resp)] for rid, (_, _, resp) in acked.items()}
    answers.update({rid: [("", resp)] for rid, resp in retried.items()})
    _check_receipts(stored, answers, verifier)
    _check_final_checkpoint(stored, verifier)
    replayed = sorted(rid for rid, resp in retried.items() if resp.receipt.replayed)
    print(
        f"\n{len(acked)} acknowledged, {len(unavailable)} UNAVAILABLE "
        f"({len(during)} after the stop; slowest {slowest:.2f} s), recovered "
        f"{recovered_after:.2f} s after the restart; of the retries {len(replayed)} replayed a "
        f"stored entry {replayed}, {len(retried) - len(replayed)} drew; log size "
        f"{len(stored.entries)}"
    )


# -- round integrity across replicas -----------------------------------------------------------

RACERS = 16  # concurrent requests for one slot, each under its own request id
PROFILE = "mega_fire_blaze_example"
SZ = outcomes_pb2.WHEEL_TYPE_SINGLE_ZERO


def _race(replicas: list[Replica], method: str, make: Callable[[str], Any]) -> list[Any]:
    """RACERS calls of ``method`` released together, dealt over the replicas: the answers (or
    the RpcErrors)."""
    barrier = threading.Barrier(RACERS)
    results: list[Any] = [None] * RACERS

    def one(i: int) -> None:
        request = make(f"race-{method}-{i}")
        barrier.wait(10)
        try:
            results[i] = getattr(replicas[i % len(replicas)].stub, method)(request, timeout=30)
        except grpc.RpcError as e:
            results[i] = e

    threads = [threading.Thread(target=one, args=(i,)) for i in range(RACERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def _one_winner(results: list[Any], slot: str) -> Any:
    """Exactly one answer; every other call FAILED_PRECONDITION naming its request and index."""
    won = [r for r in results if not isinstance(r, grpc.RpcError)]
    lost = [r for r in results if isinstance(r, grpc.RpcError)]
    assert len(won) == 1, [e.details() for e in lost]
    winner = won[0].receipt
    rid = LogEntry.decode(winner.entry).request_id
    for e in lost:
        assert e.code() == grpc.StatusCode.FAILED_PRECONDITION, e.details()
        assert f"slot '{slot}' is already filled by request '{rid}' at log index " \
            f"{winner.index}" in (e.details() or ""), e.details()  # fmt: skip
    return won[0]


def _ctx(rid: str, round_id: str) -> common_pb2.RequestContext:
    return common_pb2.RequestContext(table_id="RACE", round_id=round_id, request_id=rid)


def test_one_slot_raced_on_two_replicas_is_filled_once(tmp_path: Path, dsn: str) -> None:
    """The round rules are checked under the store's writers' lock: requests for one slot
    under different request ids, sent at once to two replicas, give exactly one outcome; every
    other gets FAILED_PRECONDITION naming it and logs nothing. The same for a round's bonus
    game (once per round, after a spin on one of its Fire Numbers)."""
    _make_key(tmp_path)
    env = _env(tmp_path, dsn, RNG_SERVICE__PROFILES__ALLOW_EXAMPLES="true")
    with _replicas(tmp_path, env, ["replica0", "replica1"]) as two:
        spin = _one_winner(
            _race(two, "SpinRoulette",
                  lambda rid: outcomes_pb2.SpinRouletteRequest(context=_ctx(rid, "R1"), wheel=SZ)),
            "spin",
        )  # fmt: skip
        # A Mega Fire Blaze round whose spin lands on one of its Fire Numbers (about 1 in 27).
        for i in range(3000):
            round_id = f"M{i}"
            fire = two[0].stub.SelectFireNumbers(
                outcomes_pb2.SelectFireNumbersRequest(
                    context=_ctx(f"fire-{i}", round_id), profile=PROFILE
                ),
                timeout=30,
            )
            landed = two[1].stub.SpinRoulette(
                outcomes_pb2.SpinRouletteRequest(context=_ctx(f"spin-{i}", round_id), wheel=SZ),
                timeout=30,
            )
            if int(landed.result.number) in fire.numbers:
                break
        size = landed.receipt.index + 1
        bonus = _one_winner(
            _race(two, "PlayMegaFireBlazeBonus",
                  lambda rid: outcomes_pb2.PlayMegaFireBlazeBonusRequest(
                      context=_ctx(rid, round_id), profile=PROFILE)),
            "bonus",
        )  # fmt: skip
        assert (bonus.fire_numbers_index, bonus.spin_index) == (
            fire.receipt.index,
            landed.receipt.index,
        )
        _stop(two)
    stored = _read_log(dsn)
    assert len(stored.entries) == size + 1  # one bonus game, nothing else
    assert [e.index for e in stored.entries if e.round_id == "R1"] == [spin.receipt.index]
    chain = [LogEntry.decode(e.data) for e in stored.entries]
    assert [e.table_seq for e in chain] == list(range(1, len(chain) + 1))  # one table: RACE
