"""PostgreSQL driver specifics: session durability settings, schema, version refusal and
migrations, two writers (threads and processes) serialised on the log head, recovery after the
server stops or drops a connection, the appender's UNAVAILABLE path, and start-up errors and
configuration that name the setting.

The conformance suite (``test_conformance.py``) covers the LogStorage contract itself.
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.clock import FakeClock
from rng_service.config import Config, ConfigError, StorageSettings, load_config
from rng_service.drbg import DeterministicGenerator
from rng_service.errors import InvalidArgument, StorageUnavailable
from rng_service.log.entry import JsonValue
from rng_service.log.note import Ed25519NoteSigner
from rng_service.log.receipt import verify_receipt
from rng_service.process.app import Service, StartupError
from rng_service.sampling import RandomSource
from rng_service.storage import (
    CheckpointRecord,
    CosignatureRecord,
    SchemaVersionMismatch,
    SequenceConflict,
    postgres,
)
from rng_service.storage.base import (
    MapRow,
    SlotRecord,
    StoreConnectionLost,
    TableHead,
    entry_to_row,
)
from rng_service.storage.postgres import SCHEMA_VERSION, Migration, PostgresStorage
from rng_service.writer.appender import Appender, DrawRequest
from rng_service.writer.tree import MerkleTree
from tests import postgres_cluster
from tests.postgres_cluster import PASSWORD, PASSWORD_ROLE, Cluster
from tests.unit.storage.drivers import leaf_nodes, make_entry

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def dsn(pg_cluster: Cluster, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database of the session cluster, dropped after the test."""
    yield pg_cluster.dsn(pg_cluster.database_for(tmp_path))
    pg_cluster.drop_database_for(tmp_path)


def _raw(dsn: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(dsn, autocommit=True)


def _append(store: PostgresStorage, start: int, count: int) -> None:
    batch = [make_entry(i) for i in range(start, start + count)]
    store.append(batch, leaf_nodes(batch))


def _wait_for(predicate: object, what: str, timeout: float = 20.0) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def _lock_waiters(dsn: str) -> list[int]:
    """Backends of the service (by application name) waiting for a lock."""
    with _raw(dsn) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'rng-service' "
            "AND wait_event_type = 'Lock' AND datname = current_database()"
        ).fetchall()
    return [int(str(r[0])) for r in rows]


# -- the throwaway cluster -------------------------------------------------------------------


def test_missing_postgresql_names_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("shutil.which", lambda _: None)
    with pytest.raises(postgres_cluster.PostgresNotInstalled, match="Debian package `postgresql`"):
        postgres_cluster.find_bindir(debian_root=tmp_path)
    # An incomplete installation (client tools only) is not enough either.
    (tmp_path / "15" / "bin").mkdir(parents=True)
    (tmp_path / "15" / "bin" / "initdb").touch()
    with pytest.raises(postgres_cluster.PostgresNotInstalled):
        postgres_cluster.find_bindir(debian_root=tmp_path)
    for tool in ("pg_ctl", "postgres"):
        (tmp_path / "15" / "bin" / tool).touch()
    assert postgres_cluster.find_bindir(debian_root=tmp_path) == tmp_path / "15" / "bin"


# -- session settings and schema -------------------------------------------------------------


@pytest.mark.postgres
def test_session_is_durable_and_read_committed(dsn: str) -> None:
    store = PostgresStorage(dsn, lock_timeout_ms=1234)
    try:
        with store._pool.connection() as conn:
            show = {
                name: conn.execute(f"SHOW {name}").fetchone()
                for name in ("synchronous_commit", "lock_timeout", "fsync")
            }
            assert show == {
                "synchronous_commit": ("on",),
                "lock_timeout": ("1234ms",),
                "fsync": ("on",),
            }
            assert conn.isolation_level == psycopg.IsolationLevel.READ_COMMITTED
            assert conn.autocommit  # reads are single statements; writes open a transaction
    finally:
        store.close()


@pytest.mark.postgres
def test_schema_version_migrations_and_indexes(dsn: str) -> None:
    store = PostgresStorage(dsn)
    try:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION).encode()
    finally:
        store.close()
    with _raw(dsn) as conn:
        applied = conn.execute("SELECT version, description FROM schema_migrations").fetchall()
        assert applied == [(m.version, m.description) for m in postgres.MIGRATIONS]
        indexes = {
            str(name): str(definition)
            for name, definition in conn.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
            )
        }
        assert (
            "UNIQUE INDEX entries_request ON public.entries USING btree (client_id, request_id)"
            in str(indexes["entries_request"])
        )
        assert "(level, idx)" in str(indexes["nodes_pkey"])
        for column in ("leaf_hash", "table_id", "round_id", "session_id", "timestamp_ns"):
            assert any(f"({column})" in str(d) for d in indexes.values()), column
        assert "UNIQUE INDEX entries_slot ON public.entries USING btree (client_id, table_id, " \
            "round_id, slot)" in indexes["entries_slot"]  # fmt: skip
        assert "UNIQUE INDEX entries_table_seq ON public.entries USING btree (client_id, " \
            "table_id, table_seq)" in indexes["entries_table_seq"]  # fmt: skip


@pytest.mark.postgres
def test_refuses_newer_schema_version(dsn: str) -> None:
    store = PostgresStorage(dsn)
    _append(store, 0, 1)
    store.close()
    newer = postgres.SCHEMA_VERSION + 1
    with _raw(dsn) as conn:
        conn.execute(
            "UPDATE meta SET value = %s WHERE key = 'schema_version'", (str(newer).encode(),)
        )
    pattern = rf"schema version {newer}.*version {postgres.SCHEMA_VERSION} only"
    with pytest.raises(SchemaVersionMismatch, match=pattern):
        PostgresStorage(dsn)
    with pytest.raises(SchemaVersionMismatch, match=pattern):
        PostgresStorage(dsn, migrate=True)  # never downgraded either


@pytest.mark.postgres
def test_refuses_foreign_database(dsn: str) -> None:
    with _raw(dsn) as conn:
        conn.execute("CREATE TABLE something (x integer)")
    with pytest.raises(SchemaVersionMismatch, match="not an rng-service log"):
        PostgresStorage(dsn)
    with _raw(dsn) as conn:
        tables = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        assert [r[0] for r in tables] == ["something"]  # nothing was created beside it


NEXT = Migration(
    postgres.SCHEMA_VERSION + 1, "entries by kind", ("CREATE INDEX entries_kind ON entries (kind)",)
)


@pytest.mark.postgres
def test_older_schema_is_migrated_only_when_asked(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PostgresStorage(dsn)
    _append(store, 0, 3)
    store.close()
    current, following = postgres.SCHEMA_VERSION, NEXT.version
    monkeypatch.setattr(postgres, "MIGRATIONS", (*postgres.MIGRATIONS, NEXT))
    with pytest.raises(
        SchemaVersionMismatch,
        match=rf"version {current}; .* version {following} .*postgres_migrate",
    ):
        PostgresStorage(dsn)
    store = PostgresStorage(dsn, migrate=True)
    try:
        assert store.migrated_from == current
        assert store.get_meta("schema_version") == str(following).encode()
        assert [e.index for e in store.entries(0, 10)] == [0, 1, 2]
        _append(store, 3, 1)
    finally:
        store.close()
    with _raw(dsn) as conn:
        assert conn.execute(
            "SELECT version FROM schema_migrations ORDER BY version"
        ).fetchall() == [(v,) for v in range(1, following + 1)]
        assert conn.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'entries_kind'").fetchone()
    PostgresStorage(dsn).close()  # now current: opens without migrate
    monkeypatch.setattr(postgres, "MIGRATIONS", postgres.MIGRATIONS[:-1])
    with pytest.raises(SchemaVersionMismatch, match=f"schema version {following}"):
        PostgresStorage(dsn)


_V1_INSERT = (
    "INSERT INTO entries (idx, data, leaf_hash, client_id, request_id, request_digest, kind, "
    "table_id, round_id, session_id, timestamp_ns, commit_size) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)


def _v1_row(i: int) -> tuple[object, ...]:
    e = make_entry(i, round_id=f"R{i // 2}", kind=("roulette_spin", "dice_roll")[i % 2])
    return (
        e.index, e.data, e.leaf_hash, e.client_id, e.request_id, e.request_digest, e.kind,
        e.table_id, e.round_id, e.session_id, e.timestamp_ns, e.commit_size,
    )  # fmt: skip


@pytest.mark.postgres
def test_a_schema_1_log_is_migrated_to_slots_and_chains(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres, "MIGRATIONS", postgres.MIGRATIONS[:1])
    PostgresStorage(dsn).close()  # the schema as release 1 made it
    monkeypatch.undo()
    with _raw(dsn) as conn, conn.transaction():
        for i in range(6):
            conn.execute(_V1_INSERT, _v1_row(i))
        conn.execute("UPDATE log_head SET tree_size = 6")
    with pytest.raises(SchemaVersionMismatch, match=r"version 1; .*postgres_migrate"):
        PostgresStorage(dsn)
    store = PostgresStorage(dsn, migrate=True)
    try:
        assert store.migrated_from == 1
        old = store.entries(0, 6)
        assert [(e.kind, e.slot, e.table_seq) for e in old] == [
            (k, None, None) for k in ("roulette_spin", "dice_roll") * 3
        ]
        c = "table-client-1"
        assert store.round_slots([(c, "T1", "R1")]) == [
            SlotRecord(c, "T1", "R1", 2, None),
            SlotRecord(c, "T1", "R1", 3, None),
        ]
        assert store.table_heads([(c, "T1")]) == {}
        new = [make_entry(6, round_id="R1", slot="spin", table_seq=1)]
        store.append(new, leaf_nodes(new))
        assert [r.slot for r in store.round_slots([(c, "T1", "R1")])] == [None, None, "spin"]
        assert store.table_heads([(c, "T1")]) == {(c, "T1"): TableHead(index=6, table_seq=1)}
        assert store.cosignatures() == []  # schema 3's table, made by the same run
    finally:
        store.close()
    with _raw(dsn) as conn:
        assert conn.execute(
            "SELECT version FROM schema_migrations ORDER BY version"
        ).fetchall() == [(m.version,) for m in postgres.MIGRATIONS]
    # A replica of the older release, still running, cannot add entries without slots.
    with _raw(dsn) as conn, pytest.raises(psycopg.errors.CheckViolation, match="entries_slotted"):
        conn.execute(_V1_INSERT, _v1_row(7))


@pytest.mark.postgres
def test_a_schema_2_log_migrates_to_one_with_the_cosignature_table(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres, "MIGRATIONS", postgres.MIGRATIONS[:2])
    store = PostgresStorage(dsn)  # as the release of entry format 2 made it
    _append(store, 0, 2)
    store.close()
    monkeypatch.undo()
    with _raw(dsn) as conn:
        assert conn.execute("SELECT to_regclass('cosignatures')").fetchone() == (None,)
    with pytest.raises(SchemaVersionMismatch, match=r"version 2; .*postgres_migrate"):
        PostgresStorage(dsn)
    store = PostgresStorage(dsn, migrate=True)
    try:
        assert store.migrated_from == 2
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION).encode()
        assert store.entries(0, 2) == [make_entry(0), make_entry(1)]
        assert store.cosignatures() == []
        assert store.latest_cosignatures() == []
        line = CosignatureRecord(2, b"\x01" * 32, "w1", 7, 100, b"-- w1 AAAA\n", 5)
        store.add_cosignatures([line])
        assert store.cosignatures() == [line]
        _append(store, 2, 1)  # the round columns of schema 2 still in force
        with pytest.raises(SequenceConflict):
            store.append([make_entry(3, slot="s0")], leaf_nodes([make_entry(3, slot="s0")]))
    finally:
        store.close()
    with _raw(dsn) as conn:
        assert conn.execute(
            "SELECT version, description FROM schema_migrations ORDER BY version"
        ).fetchall() == [(m.version, m.description) for m in postgres.MIGRATIONS]
    PostgresStorage(dsn).close()  # now current: opens without migrate


@pytest.mark.postgres
def test_a_schema_3_log_migrates_with_its_chains_in_the_table_map(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres, "MIGRATIONS", postgres.MIGRATIONS[:3])
    store = PostgresStorage(dsn)  # as the release of schema 3 (entry format 2) made it
    batch = [
        make_entry(0, table_seq=1), make_entry(1, table_id="T2", table_seq=1),
        make_entry(2, table_seq=2), make_entry(3, client_id="b", table_seq=1),
    ]  # fmt: skip
    store.append(batch, leaf_nodes(batch))
    store.close()
    monkeypatch.undo()
    with pytest.raises(SchemaVersionMismatch, match=r"version 3; .*postgres_migrate"):
        PostgresStorage(dsn)
    store = PostgresStorage(dsn, migrate=True)
    try:
        assert store.migrated_from == 3
        c = "table-client-1"
        assert store.map_rows() == [
            MapRow("b", "T1", 3, 1), MapRow(c, "T1", 2, 2), MapRow(c, "T2", 1, 1)
        ]  # fmt: skip
    finally:
        store.close()


@pytest.mark.postgres
def test_concurrent_opens_of_an_empty_database_create_one_schema(dsn: str) -> None:
    barrier = threading.Barrier(4)

    def open_one() -> int:
        barrier.wait()
        store = PostgresStorage(dsn)
        try:
            return store.tree_size()
        finally:
            store.close()

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda _: open_one(), range(4))) == [0, 0, 0, 0]
    with _raw(dsn) as conn:
        assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone() == (
            len(postgres.MIGRATIONS),
        )


@pytest.mark.postgres
def test_schema_from_search_path(pg_cluster: Cluster, dsn: str) -> None:
    with _raw(dsn) as conn:
        conn.execute("CREATE SCHEMA rng_log")
    store = PostgresStorage(dsn + " options=-csearch_path=rng_log")
    try:
        _append(store, 0, 2)
    finally:
        store.close()
    with _raw(dsn) as conn:
        assert conn.execute("SELECT count(*) FROM rng_log.entries").fetchone() == (2,)
        assert conn.execute("SELECT to_regclass('public.entries')").fetchone() == (None,)
    with pytest.raises(StorageUnavailable, match="no schema of the search_path"):
        PostgresStorage(dsn + " options=-csearch_path=missing")


def test_bad_connection_string_and_parameters() -> None:
    with pytest.raises(InvalidArgument, match="conninfo"):
        PostgresStorage("host=127.0.0.1 port")
    with pytest.raises(InvalidArgument, match="lock_timeout_ms"):
        PostgresStorage("host=127.0.0.1", lock_timeout_ms=0)
    with pytest.raises(InvalidArgument, match="connect_timeout_seconds"):
        PostgresStorage("host=127.0.0.1", connect_timeout_seconds=0)


# -- two writers -----------------------------------------------------------------------------


@pytest.mark.postgres
def test_writer_waiting_on_the_head_sees_the_committed_size(dsn: str) -> None:
    store = PostgresStorage(dsn)
    try:
        _append(store, 0, 2)
        with psycopg.connect(dsn) as other:  # another writer, mid-transaction
            other.execute("SELECT tree_size FROM log_head FOR UPDATE")
            e = make_entry(2, request_id="from-other-writer")
            other.execute(postgres._SQL.insert_entry, entry_to_row(e))
            other.execute("UPDATE log_head SET tree_size = 3")
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                mine = pool.submit(_append, store, 2, 2)
                _wait_for(lambda: _lock_waiters(dsn), "the append to wait for the log head")
                assert not mine.done()
                other.commit()
                with pytest.raises(SequenceConflict, match="index 2, expected 3"):
                    mine.result(timeout=30)
        assert store.tree_size() == 3
        assert store.entries(2, 3)[0].request_id == "from-other-writer"
        assert store.nodes([(0, 2), (0, 3)]) == {}
    finally:
        store.close()


_WRITER = """
import sys, time
from rng_service.storage import SequenceConflict
from rng_service.storage.postgres import PostgresStorage
from tests.unit.storage.drivers import leaf_nodes, make_entry
dsn, name, total, start_at = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
store = PostgresStorage(dsn, lock_timeout_ms=20000)
time.sleep(max(0.0, start_at - time.time()))
done = conflicts = 0
while done < total:
    size = store.tree_size()
    batch = [make_entry(size + k, client_id=name, request_id=f"{name}-{done + k}")
             for k in range(min(3, total - done))]
    try:
        store.append(batch, leaf_nodes(batch))
        done += len(batch)
    except SequenceConflict:
        conflicts += 1
store.close()
print(conflicts)
"""


@pytest.mark.postgres
def test_two_processes_append_concurrently_without_gaps_or_loss(dsn: str) -> None:
    PostgresStorage(dsn).close()
    per_writer = 150
    start_at = time.time() + 1.5  # both interpreters are up by then
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, dsn, name, str(per_writer), str(start_at)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("writer-a", "writer-b")
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    store = PostgresStorage(dsn)
    try:
        size = store.tree_size()
        assert size == 2 * per_writer
        stored = store.entries(0, size)
        assert [e.index for e in stored] == list(range(size))
        assert [n for n, _ in sorted(store.nodes([(0, i) for i in range(size)]).items())] == [
            (0, i) for i in range(size)
        ]
        for name in ("writer-a", "writer-b"):
            mine = [e.request_id for e in stored if e.client_id == name]
            assert mine == [f"{name}-{i}" for i in range(per_writer)]  # each once, in order
    finally:
        store.close()


# -- outages and recovery --------------------------------------------------------------------


@pytest.mark.postgres
def test_server_stop_fails_calls_then_recovers_without_loss(pg_cluster: Cluster, dsn: str) -> None:
    store = PostgresStorage(dsn)
    try:
        first = [make_entry(i) for i in range(3)]
        cp = CheckpointRecord(size=3, timestamp_ns=1, note=b"cp 3\n")
        store.append(first, leaf_nodes(first), cp)
        store.set_meta("origin", b"o")

        # A restart while the store is idle: its pooled connections are dead, yet no call fails;
        # the server epoch says that the store's server started again (the sequencer checks
        # its tree then), and only then.
        epoch = store.server_epoch
        assert store.entries(0, 3) == first
        assert store.server_epoch == epoch
        pg_cluster.stop("fast")
        pg_cluster.start()
        assert store.tree_size() == 3
        assert store.server_epoch == epoch + 1

        second = [make_entry(i) for i in range(3, 5)]
        pg_cluster.stop("fast")
        try:
            # The pool's connections broke, and no new one can be made: the store says it
            # lost the server (nothing was stored), naming libpq's reason, and fails fast.
            with pytest.raises(StoreConnectionLost, match=r"connection was lost|no connection"):
                store.append(second, leaf_nodes(second))
            started = time.monotonic()
            with pytest.raises(StoreConnectionLost, match=r"no connection within .*No such file"):
                store.append(second, leaf_nodes(second))
            with pytest.raises(StoreConnectionLost, match="no connection within"):
                store.entries(0, 3)
            assert time.monotonic() - started < 3  # not the 5 s connect timeout each
        finally:
            pg_cluster.start()
        store.append(second, leaf_nodes(second))
        assert store.entries(0, 5) == [*first, *second]
        assert store.latest_checkpoint() == cp
        assert store.get_meta("origin") == b"o"
    finally:
        store.close()


@pytest.mark.postgres
def test_connection_killed_before_commit_is_retried_once(dsn: str) -> None:
    store = PostgresStorage(dsn, lock_timeout_ms=20_000)
    try:
        _append(store, 0, 2)
        with psycopg.connect(dsn) as other:
            other.execute("LOCK TABLE log_head IN EXCLUSIVE MODE")
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                mine = pool.submit(_append, store, 2, 3)
                _wait_for(lambda: _lock_waiters(dsn), "the append to wait")
                (victim,) = _lock_waiters(dsn)
                other.execute("SELECT pg_terminate_backend(%s)", (victim,))
                # The append noticed the dead connection and waits again on a new one.
                _wait_for(
                    lambda: any(pid != victim for pid in _lock_waiters(dsn)),
                    "the retried append to wait",
                )
                other.rollback()
                mine.result(timeout=30)
        assert store.tree_size() == 5
        assert [e.index for e in store.entries(0, 10)] == list(range(5))
    finally:
        store.close()


SIGNER = Ed25519NoteSigner("pg-log", Ed25519PrivateKey.from_private_bytes(bytes(range(32))))


def _draw(n: int, src: RandomSource) -> dict[str, JsonValue]:
    return {"value": src.randbelow(n)}


def _request(rid: str) -> DrawRequest:
    return DrawRequest(
        client_id="c",
        request_id=rid,
        table_id="T",
        round_id=f"R-{rid}",
        session_id="",
        kind="test_draw",
        params={"n": 38},
        draw=functools.partial(_draw, 38),
    )


@pytest.mark.postgres
def test_appender_reports_unavailable_while_the_server_is_down(
    pg_cluster: Cluster, dsn: str
) -> None:
    store = PostgresStorage(dsn)
    appender = Appender(
        storage=store,
        tree=MerkleTree.load(store),
        generator=DeterministicGenerator(entropy_input=b"\x01" * 32, nonce=b"\x02" * 16),
        signer=SIGNER,
        origin="pg.example/log",
        clock=FakeClock(),
        publish_interval_seconds=10,
    )
    appender.start()
    try:
        before = [appender.submit(_request(f"r{i}")).result(timeout=30) for i in range(3)]
        pg_cluster.stop("fast")
        try:
            with pytest.raises(StorageUnavailable):
                appender.submit(_request("during-outage")).result(timeout=30)
            # The writer lost the store: it polls it, and refuses requests at once meanwhile.
            assert "connection was lost" in appender.recovering
            with pytest.raises(StorageUnavailable, match="nothing was drawn or logged"):
                appender.submit(_request("refused"))
        finally:
            pg_cluster.start()
        _wait_for(lambda: not appender.recovering, "the writer to reconnect", timeout=30)
        after = appender.submit(_request("after")).result(timeout=30)
        assert after.receipt.index == 3  # the failed request took no index
        for result in [*before, after]:
            verify_receipt(result.receipt, [SIGNER.verifier()])
        assert store.entry_by_request("c", "during-outage") is None
        assert MerkleTree.load(store).size == 4
    finally:
        appender.stop(publish=False)
        store.close()


# -- start-up and configuration --------------------------------------------------------------


def _service(storage: StorageSettings) -> Service:
    return Service(Config(storage=storage))


@pytest.mark.postgres
def test_startup_with_unreachable_server_names_the_setting(pg_cluster: Cluster) -> None:
    wrong_port = pg_cluster.dsn("postgres").replace(f"port={pg_cluster.port}", "port=1")
    settings = StorageSettings(driver="postgres", postgres_dsn=wrong_port)
    with pytest.raises(StartupError, match=r"^storage\.postgres_dsn: cannot connect .*port=1"):
        _service(settings)._open_storage()
    tcp = pg_cluster.tcp_dsn("postgres", user="postgres").replace(
        f"port={pg_cluster.port}", "port=1"
    )
    settings = StorageSettings(driver="postgres", postgres_dsn=tcp)
    with pytest.raises(StartupError, match=r"^storage\.postgres_dsn: cannot connect"):
        _service(settings)._open_storage()


@pytest.mark.postgres
def test_password_comes_from_the_named_environment_variable(
    pg_cluster: Cluster, dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pg_cluster.ensure_password_role()
    dbname = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    with _raw(dsn) as conn:
        conn.execute(f"GRANT CREATE ON SCHEMA public TO {PASSWORD_ROLE}")
    settings = StorageSettings(
        driver="postgres",
        postgres_dsn=pg_cluster.tcp_dsn(str(dbname), user=PASSWORD_ROLE),
        postgres_password_env="RNG_TEST_PG_PASSWORD",
    )
    monkeypatch.delenv("RNG_TEST_PG_PASSWORD", raising=False)
    monkeypatch.delenv("PGPASSWORD", raising=False)
    with pytest.raises(StartupError, match=r"postgres_password_env: .*RNG_TEST_PG_PASSWORD"):
        _service(settings)._open_storage()
    monkeypatch.setenv("RNG_TEST_PG_PASSWORD", "wrong")
    with pytest.raises(StartupError, match=r"^storage\.postgres_dsn: .*password authentication"):
        _service(settings)._open_storage()
    monkeypatch.setenv("RNG_TEST_PG_PASSWORD", PASSWORD)
    store = _service(settings)._open_storage()
    try:
        assert isinstance(store, PostgresStorage)
        _append(store, 0, 1)
        assert store.tree_size() == 1
    finally:
        store.close()


@pytest.mark.postgres
def test_service_starts_on_postgres_from_config(
    pg_cluster: Cluster, dsn: str, tmp_path: Path
) -> None:
    config = load_config(
        environ={
            "RNG_SERVICE__STORAGE__DRIVER": "postgres",
            "RNG_SERVICE__STORAGE__POSTGRES_DSN": dsn,
            "RNG_SERVICE__STORAGE__POSTGRES_LOCK_TIMEOUT_MS": "250",
        },
        base_dir=tmp_path,
    )
    assert config.storage.postgres_lock_timeout_ms == 250
    store = Service(config)._open_storage()
    try:
        assert isinstance(store, PostgresStorage)
        assert store.tree_size() == 0
    finally:
        store.close()


@pytest.mark.parametrize(
    ("kwargs", "setting"),
    [
        ({"driver": "postgres"}, "storage.postgres_dsn"),
        ({"driver": "postgres", "postgres_dsn": "  "}, "storage.postgres_dsn"),
        ({"driver": "postgres", "postgres_dsn": "host=db password=hunter2"}, "contains a password"),
        ({"driver": "postgres", "postgres_dsn": "host=db password = x"}, "contains a password"),
        ({"driver": "postgres", "postgres_dsn": "postgresql://u:pw@db/rng"}, "contains a password"),
        (
            {"driver": "postgres", "postgres_dsn": "postgres://u@db/x?password=p"},
            "contains a password",
        ),
        ({"postgres_password_env": "NOT-A-NAME"}, "storage.postgres_password_env"),
        ({"postgres_password_env": "1ABC"}, "storage.postgres_password_env"),
        ({"postgres_connect_timeout_seconds": 0}, "storage.postgres_connect_timeout_seconds"),
        ({"postgres_lock_timeout_ms": 0}, "storage.postgres_lock_timeout_ms"),
        ({"driver": "mysql"}, "'sqlite' or 'postgres'"),
    ],
)
def test_config_rejects(kwargs: dict[str, object], setting: str) -> None:
    with pytest.raises(ConfigError, match=setting):
        StorageSettings(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "dsn",
    [
        "host=127.0.0.1 port=5432 dbname=rng_log user=rng_service",
        "host=/var/run/postgresql dbname=password user=password",
        "postgresql://rng_service@127.0.0.1:5432/rng_log?sslmode=disable",
    ],
)
def test_config_accepts(dsn: str) -> None:
    settings = StorageSettings(
        driver="postgres", postgres_dsn=dsn, postgres_password_env="RNG_LOG_DB_PASSWORD"
    )
    assert settings.postgres_dsn == dsn
    assert StorageSettings().driver == "sqlite"  # make run keeps SQLite
