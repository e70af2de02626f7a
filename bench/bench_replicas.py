"""Two service replicas sharing one PostgreSQL log vs one replica on it.

The load is the ``service`` area's unary row: durable, Ed25519-signed ``SpinRoulette`` calls,
32 in flight, every call a fresh request id, driven by the same load client process
(bench/_load_client.py) on 127.0.0.1 only.

- Baseline: one replica (``storage.driver = "postgres"``) on a fresh database, 32 in flight.
- Measured: two replicas on another fresh database of the same cluster, with the same signing
  key, key name and origin (docs/operations/postgresql.md, "Several service instances sharing one
  log"); the one load client process holds a channel to each and deals its 32 workers round robin
  over them, so each replica has 16 calls in flight (32 in all).

The cluster is a throwaway one, started the way the tests start theirs
(``tests/postgres_cluster.py``: ``fsync = on``, ``synchronous_commit = on``, the replicas on its
unix socket). Without PostgreSQL installed the area reports no rows and says which Debian package
is missing.

After each run the replicas are stopped (each publishes a final checkpoint) and the log is
checked before any figure is reported: ``log_head.tree_size`` equals the calls acknowledged plus
the warm-up calls; the entry indexes are exactly 0..size-1; each entry's stored leaf hash is the
hash of its bytes and its level-0 node; and the RFC 6962 root of those leaves equals the root of
the latest stored checkpoint, whose signature verifies with the key's verifier key and whose
origin and size are the run's. The per-replica split is read from the entries' generator
instance ids.

On this 2-vCPU machine the two replicas, PostgreSQL and the load client share the same two cores,
so the question is whether sharing the log's head row collapses throughput, not how it scales.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench._common import Row
from bench.bench_service import _start, _stop

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
CONCURRENCY = 32
ORIGIN = "bench.rng-service.local/replicas"
KEY_NAME = "bench-replicas"
SPIN = "/rng.v1.OutcomeService/SpinRoulette"
#: Most calls a second the load may make (bounds the requests built before the clock starts).
_MAX_CALL_RATE = 20_000


def _load(ports: list[int], seconds: float, tag: str) -> dict[str, Any]:
    """One load client process: ``CONCURRENCY`` workers dealt round robin over ``ports``."""
    targets = [a for port in ports for a in ("--target", f"127.0.0.1:{port}")]
    out = subprocess.run(
        [PY, "-m", "bench._load_client", *targets, "--path", SPIN, "--kind", "spin",
         "--seconds", str(seconds), "--concurrency", str(CONCURRENCY), "--tag", tag,
         "--max-calls", str(int(seconds * _MAX_CALL_RATE) + CONCURRENCY)],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=seconds + 120,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds used so far by ``pids`` (those still alive)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / tick


def _postgres_pids(datadir: Path) -> list[int]:
    """The postmaster and its children (backends, WAL writer, checkpointer...)."""
    try:
        postmaster = int((datadir / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return []
    pids = [postmaster]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == postmaster:
            pids.append(int(stat.parent.name))
    return pids


def check_log(dsn: str, vkey: str, *, expected: int) -> tuple[int, int, Counter[str]]:
    """Checks the stored log (see the module docstring); returns its size, its number of
    commit groups and its entries per generator instance. Raises RuntimeError naming the first
    inconsistency."""
    import psycopg

    from rng_service.log.entry import LogEntry
    from rng_service.log.merkle import leaf_hash, root_from_leaf_hashes
    from rng_service.log.note import NoteVerifier, open_checkpoint

    def fail(what: str) -> RuntimeError:
        return RuntimeError(f"the log after the run is inconsistent: {what}")

    with psycopg.connect(dsn, autocommit=True) as conn:
        head = conn.execute("SELECT tree_size FROM log_head").fetchone()
        size = int(head[0]) if head else -1
        if size != expected:
            raise fail(f"tree size {size}, but {expected} calls were acknowledged (with warm-up)")
        span = conn.execute(
            "SELECT count(*), min(idx), max(idx), count(DISTINCT commit_size) FROM entries"
        ).fetchone()
        if span is None or tuple(span[:3]) != (size, 0, size - 1):
            raise fail(f"(entries, first, last index) {span}, expected ({size}, 0, {size - 1})")
        groups = int(span[3])  # every entry of a group records the size the group committed
        leaves: list[bytes] = []
        generators: Counter[str] = Counter()
        for idx, data, stored_hash in conn.execute(
            "SELECT idx, data, leaf_hash FROM entries ORDER BY idx"
        ):
            data = bytes(data)
            if idx != len(leaves) or leaf_hash(data) != bytes(stored_hash):
                raise fail(f"entry {idx}: stored leaf hash is not the hash of its bytes")
            entry = LogEntry.decode(data)
            if entry.index != idx:
                raise fail(f"entry {idx} says it is entry {entry.index}")
            generators[entry.generator.instance] += 1
            leaves.append(bytes(stored_hash))
        nodes = conn.execute(
            "SELECT count(*) FROM entries e JOIN nodes n "
            "ON n.level = 0 AND n.idx = e.idx AND n.hash = e.leaf_hash"
        ).fetchone()
        if nodes is None or nodes[0] != size:
            raise fail(f"{nodes} level-0 nodes match the entries' leaf hashes, expected {size}")
        latest = conn.execute(
            "SELECT note FROM checkpoints ORDER BY size DESC, id DESC LIMIT 1"
        ).fetchone()
    if latest is None:
        raise fail("no checkpoint was stored")
    checkpoint, _ = open_checkpoint(
        bytes(latest[0]), [NoteVerifier.from_verifier_key(vkey)], origin=ORIGIN
    )
    if checkpoint.size != size:
        raise fail(f"the latest signed checkpoint is of size {checkpoint.size}, not {size}")
    if checkpoint.root_hash != root_from_leaf_hashes(leaves):
        raise fail("the latest signed checkpoint's root is not the root of the stored entries")
    return size, groups, generators


def _measure(
    cluster: Any, dbname: str, replicas: int, key: Path, seconds: float, tag: str
) -> dict[str, Any]:
    """Starts ``replicas`` services on a fresh database, loads them, stops them, checks the
    log; returns the load client's result with ``cpu`` (CPU-seconds a second of load of the
    services and of PostgreSQL), ``log_size``, ``groups`` (commits) and ``generators`` (entries
    per replica's generator)."""
    cluster.create_database(dbname)
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "RNG_SERVICE__SERVER__PORT": "0",
        "RNG_SERVICE__METRICS__ENABLED": "false",
        "RNG_SERVICE__STORAGE__DRIVER": "postgres",
        "RNG_SERVICE__STORAGE__POSTGRES_DSN": cluster.dsn(dbname),
        "RNG_SERVICE__LOG__KEY_FILE": str(key),
        "RNG_SERVICE__LOG__KEY_NAME": KEY_NAME,
        "RNG_SERVICE__LOG__ORIGIN": ORIGIN,
    }
    procs: list[subprocess.Popen[str]] = []
    try:
        ports = []
        for _ in range(replicas):  # one after the other: the first creates the schema
            proc, port = _start(
                [PY, "-m", "rng_service.cli.service", "serve"], env, '{"event": "listening"'
            )
            procs.append(proc)
            ports.append(port)
        service_pids = [p.pid for p in procs]
        pg_pids = _postgres_pids(cluster.datadir)
        cpu0 = (_cpu_seconds(service_pids), _cpu_seconds(pg_pids))
        result = _load(ports, seconds, tag)
        pg_pids = sorted(set(pg_pids) | set(_postgres_pids(cluster.datadir)))
        # Per second of measured load: the servers idle while the client builds its requests,
        # and the 32 sequential warm-up calls add little.
        result["cpu"] = {
            "services": (_cpu_seconds(service_pids) - cpu0[0]) / result["seconds"],
            "postgres": (_cpu_seconds(pg_pids) - cpu0[1]) / result["seconds"],
        }
    finally:
        for proc in procs:
            _stop(proc)
    if result["errors"]:
        raise RuntimeError(f"{result['errors']} calls failed under load ({replicas} replicas)")
    vkey = Path(f"{key}.vkey").read_text().strip()
    result["log_size"], result["groups"], result["generators"] = check_log(
        cluster.dsn(dbname), vkey, expected=result["calls"] + CONCURRENCY
    )
    if len(result["generators"]) != replicas:
        raise RuntimeError(
            f"entries came from {len(result['generators'])} generators, expected {replicas}"
        )
    return result


def _describe(label: str, r: dict[str, Any]) -> None:
    split = "/".join(str(n) for n in r["calls_by_target"])
    print(
        f"   {label}: {r['rate']:,.0f} calls/s, p50 {r['p50'] * 1000:.1f} ms, "
        f"p99 {r['p99'] * 1000:.1f} ms; calls per replica {split}; CPU-s a second: "
        f"services {r['cpu']['services']:.2f}, PostgreSQL {r['cpu']['postgres']:.2f}; "
        f"log verified: {r['log_size']} entries in {r['groups']} commits "
        f"({r['log_size'] / r['groups']:.1f} a commit), "
        f"per generator {sorted(r['generators'].values(), reverse=True)}"
    )


def run(*, short: bool) -> list[Row]:
    from tests.postgres_cluster import Cluster, PostgresNotInstalled, find_bindir

    seconds = 1.0 if short else 10.0
    try:
        cluster = Cluster(find_bindir())
    except PostgresNotInstalled as e:
        print(f"   skipped: every row of this area needs PostgreSQL: {e}")
        return []
    try:
        cluster.init()
        cluster.start()
        with tempfile.TemporaryDirectory(prefix="rng-bench-replicas-") as tmp:
            key = Path(tmp) / "key.pem"
            subprocess.run(
                [PY, "-m", "rng_service.cli.service", "keygen", "--out", str(key),
                 "--name", KEY_NAME],
                cwd=ROOT, check=True, capture_output=True, timeout=60,
            )  # fmt: skip
            one = _measure(cluster, "bench_one_replica", 1, key, seconds, "one")
            two = _measure(cluster, "bench_two_replicas", 2, key, seconds, "two")
    finally:
        cluster.remove()
    _describe("1 replica ", one)
    _describe("2 replicas", two)
    return [
        Row("2 replicas, 1 PostgreSQL: unary spins/s, 32 in flight", two["rate"], "calls/s",
            "1 replica on PostgreSQL", one["rate"], ">= 0.9 (no collapse on 2 vCPUs)"),
        Row("2 replicas, 1 PostgreSQL: unary spin p99", two["p99"] * 1000, "ms",
            "1 replica p99", one["p99"] * 1000),
        Row("2 replicas, 1 PostgreSQL: unary spin p50", two["p50"] * 1000, "ms",
            "1 replica p50", one["p50"] * 1000),
        Row("2 replicas: log entries verified after the run", two["log_size"], "entries",
            "calls acknowledged + warm-up", two["calls"] + CONCURRENCY, "== 1"),
    ]  # fmt: skip
