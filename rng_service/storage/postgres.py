"""PostgreSQL driver of :class:`~rng_service.storage.base.LogStorage` (psycopg 3).

Owns the PostgreSQL schema, its versioned migrations (:data:`MIGRATIONS`; the version is kept in
the ``meta`` table, every applied step in ``schema_migrations``), the durability settings of its
sessions and the reconnect logic. It follows the same contract as the SQLite driver (the storage
conformance suite runs against memory, SQLite and PostgreSQL):

- ``sequence`` (and ``append``, a ready batch) is one ``READ COMMITTED`` transaction with
  ``synchronous_commit = on`` (a returned append has been flushed to the WAL on disk, and to a
  synchronous standby when the server has ``synchronous_standby_names``). It first locks the
  single row of ``log_head``, which holds the tree size (``SELECT ... FOR UPDATE``, held until
  COMMIT), then calls ``build`` with that size and writes what it returns with the new size:
  writers, in one process or in several service replicas, are serialised on that row, and each
  sees the size the one before it committed (``build`` reads the store on other connections,
  which see every committed append). A batch that does not continue that size gets
  :class:`SequenceConflict`. Entry index,
  ``(client_id, request_id)`` and node coordinates are also enforced by constraints:
  ``entries_request`` -> :class:`DuplicateRequest`, ``nodes_pkey`` or ``entries_pkey`` ->
  :class:`SequenceConflict`. Any other database or connection failure rolls the transaction back
  and raises :class:`~rng_service.errors.StorageUnavailable`.
- Connections come from a ``psycopg_pool.ConnectionPool`` (one connection per concurrent
  caller: readers never share one with the writer; each read is one autocommit statement and
  sees only committed transactions). The pool opens them in the background, and again after
  they break, each time through the whole connection string: with several hosts and
  ``target_session_attrs=read-write``, libpq finds whichever server accepts writes now (a
  promoted standby after a failover). A call waits at most ``connect_timeout_seconds`` for a
  connection, then fails with :class:`~rng_service.storage.base.StoreConnectionLost` naming
  the last connection error. A connection that breaks makes the pool drop every other one
  (``drain``: after a server restart or a failover they are all dead), and the call is retried
  once on a new connection if nothing could have been committed yet (reads, or a write before
  its ``COMMIT``), so a restart while the service is idle costs no failed call; otherwise it
  fails with ``StoreConnectionLost``. A connection lost during ``COMMIT`` is never retried: it
  raises :class:`~rng_service.storage.base.CommitUnknown` (the write may or may not be
  stored), which the sequencer resolves by reading the store back. Each new connection notes
  the server it reached (host, port, the postmaster's start time): ``server_epoch``
  (:class:`~rng_service.storage.base.ServerEpochs`) changes when that is another server or
  another start of it, so that the sequencer checks its tree against the store even when a
  retried call hid the reconnection.
- A write is pipelined (psycopg pipeline mode): BEGIN goes with the head lock, and the inserts
  go with COMMIT, so an append costs about two round trips whatever the batch size.
- Writes wait at most ``lock_timeout_ms`` for a lock held by another session, then fail with
  StorageUnavailable rather than hang.
- The schema lives in the first schema of the session's ``search_path`` (``public`` unless the
  connection string sets ``options=-csearch_path=...``). Opening an empty schema creates the log
  (all migrations); a log of an older version is migrated only when ``migrate=True`` is given;
  a newer version, or tables that are not an rng-service log, are refused
  (:class:`SchemaVersionMismatch`), never changed.

Plain SQL throughout (``SELECT ... FOR UPDATE``, ``ON CONFLICT``), except three
PostgreSQL-specific pieces: ``pg_advisory_xact_lock`` (so that two processes opening an empty
database do not both create the schema; there is no table to lock yet), ``set_config`` for the
session settings (``SET`` takes no bind parameters), and ``unnest`` of array parameters (node
coordinates and request ids looked up in one query).

Entry bytes, node hashes (RFC 6962 section 2.1 complete subtrees) and checkpoint notes (C2SP
tlog-checkpoint) are opaque here; ``rng_service.log`` interprets them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Self, TypeVar

import psycopg
import psycopg.conninfo
import psycopg.errors
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from rng_service.errors import InvalidArgument, StorageUnavailable
from rng_service.storage._sql import (
    CHECKPOINT_ORDER,
    POSTGRES_GROUP_STATE,
    checkpoint_conditions,
    entry_conditions,
    group_state_from_rows,
    map_rows_from,
    statements,
)
from rng_service.storage.base import (
    AppendBatch,
    CheckpointRecord,
    CommitUnknown,
    CosignatureRecord,
    DuplicateRequest,
    EntryRecord,
    GroupState,
    MapRow,
    NodeRecord,
    SchemaVersionMismatch,
    SequenceConflict,
    SlotRecord,
    StoreConnectionLost,
    TableHead,
    check_append_batch,
    check_entry_range,
    check_limit,
    check_meta_key,
    checkpoint_from_row,
    cosignature_from_row,
    entry_from_row,
    entry_to_row,
    first_per_witness,
)
from rng_service.storage.postgres_schema import MIGRATIONS, SCHEMA_VERSION, Migration

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration", "PostgresStorage", "describe_conninfo"]

T = TypeVar("T")
_Query = str | sql.SQL | sql.Composed


# Any constant works as long as every process of the service uses the same one.
_INIT_LOCK_KEY = 0x726E675F6C6F67  # "rng_log"

_SQL = statements("%s")
_MAX_INT64 = 2**63 - 1
_POOL_MIN = 2  # connections kept open: the log writer's and one for reads
_POOL_MAX = 16  # at most this many at once; a caller beyond waits for one
_POOL_NAME = "rng-log"
_WAIT_WHILE_DOWN = 1.0  # seconds a call waits for a connection while the server is unreachable
_WAIT_SLICE = 0.25  # a caller waiting for a connection asks the pool again this often
_LOCATION_KEYS = ("host", "hostaddr", "port", "dbname", "user")


def describe_conninfo(conninfo: str) -> str:
    """``conninfo`` reduced to where it points (host, port, database, user), never a password."""
    try:
        params = psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.Error:
        return "(unparsable connection string)"
    shown = [f"{k}={params[k]}" for k in _LOCATION_KEYS if params.get(k) not in (None, "")]
    return " ".join(shown) if shown else "(libpq defaults)"


_REPORT = "rng_report_attempt"  # the key of _LogConnection's report in the pool's kwargs


class _LogConnection(psycopg.Connection[tuple[Any, ...]]):
    """psycopg's connection, reporting each connection attempt to its store (the pool connects
    in its worker threads, so a caller waiting for a connection would otherwise only see a
    timeout, not why the server could not be reached)."""

    @classmethod
    def connect(cls, conninfo: str = "", **kwargs: Any) -> Self:
        report: Callable[[psycopg.Error | None], None] | None = kwargs.pop(_REPORT, None)
        try:
            conn = super().connect(conninfo, **kwargs)
        except psycopg.Error as e:
            if report is not None:
                report(e)
            raise
        if report is not None:
            report(None)
        return conn


class PostgresStorage:
    """A durable log store in a PostgreSQL database; safe to share between threads, and
    between processes as far as sequencing goes (see the module docstring)."""

    def __init__(
        self,
        conninfo: str,
        *,
        password: str | None = None,
        connect_timeout_seconds: int = 5,
        lock_timeout_ms: int = 5000,
        migrate: bool = False,
    ) -> None:
        """Connects to the database named by ``conninfo`` (a libpq connection string or URI)
        and opens the log in it, creating the schema in an empty database.

        ``password``: used unless None (then libpq's own sources apply: the connection string,
        ``PGPASSWORD``, ``~/.pgpass``). ``connect_timeout_seconds``: libpq ``connect_timeout``
        for every (re)connection. ``lock_timeout_ms``: how long a write waits for a lock held
        by another session before failing with StorageUnavailable. ``migrate``: apply pending
        migrations to a log of an older schema version instead of refusing it.

        Raises StorageUnavailable if the server cannot be reached, SchemaVersionMismatch if the
        database holds something else, InvalidArgument for a bad parameter.
        """
        try:
            psycopg.conninfo.conninfo_to_dict(conninfo)
        except psycopg.Error as e:
            raise InvalidArgument("conninfo", f"not a libpq connection string: {e}") from None
        if connect_timeout_seconds < 1:
            raise InvalidArgument(
                "connect_timeout_seconds", "must be positive", allowed=">= 1 (libpq uses >= 2)"
            )
        if lock_timeout_ms < 1:
            raise InvalidArgument("lock_timeout_ms", "must be positive", allowed=">= 1")
        self._conninfo = conninfo
        self._password = password
        self._connect_timeout = int(connect_timeout_seconds)
        self._lock_timeout_ms = int(lock_timeout_ms)
        self._where = describe_conninfo(conninfo)
        self._connect_error = ""  # why the last connection attempt failed ("" if it did not)
        self._server_lock = threading.Lock()
        self._server: tuple[str, int, str] | None = None  # host, port, start of the last server
        self._server_epoch = 0
        self.migrated_from: int | None = None
        """The schema version this open migrated the database from, if it did."""
        # The first connection is made here, not by the pool, so that a start-up that cannot
        # reach the server says why (the pool connects in its worker threads).
        conn = self._connect()
        try:
            self._init_schema(conn, migrate=migrate)
        finally:
            conn.close()
        self._pool: ConnectionPool[_LogConnection] = ConnectionPool(
            conninfo,
            connection_class=_LogConnection,
            kwargs=self._connect_kwargs(),
            min_size=_POOL_MIN,
            max_size=_POOL_MAX,
            configure=self._configure,
            name=_POOL_NAME,
            timeout=float(self._connect_timeout),
            # The pool retries a connection it cannot make with a growing delay (1, 2, 4 s
            # ...) until reconnect_timeout, and a caller only starts a new attempt when none is
            # under way. Kept short (below _WAIT_WHILE_DOWN), callers drive the reconnection:
            # the first call after the server is back (or a standby is promoted) connects,
            # instead of waiting out a backoff of many seconds.
            reconnect_timeout=_WAIT_WHILE_DOWN / 2,
            open=True,
        )

    def __repr__(self) -> str:
        return f"PostgresStorage({self._where})"

    # -- connections -----------------------------------------------------------------------

    def _connect_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": self._connect_timeout,
            "fallback_application_name": "rng-service",
            _REPORT: self._connection_attempt,
        }
        if self._password is not None:
            kwargs["password"] = self._password
        return kwargs

    def _connection_attempt(self, error: psycopg.Error | None) -> None:
        self._connect_error = "" if error is None else _one_line(error)

    def _configure(self, conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        """Every session's settings, whatever the server's defaults or the connection string's
        options say: they must not weaken durability or change how appends are serialised.
        Also notes which server (and which start of it) the connection reached."""
        conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
        row = conn.execute(
            "SELECT set_config('synchronous_commit', 'on', false), "
            "set_config('lock_timeout', %s, false), pg_postmaster_start_time()::text",
            (f"{self._lock_timeout_ms}ms",),
        ).fetchone()
        started = "" if row is None else str(row[2])
        server = (conn.info.host, conn.info.port, started)
        with self._server_lock:
            if self._server is not None and server != self._server:
                self._server_epoch += 1
            self._server = server

    @property
    def server_epoch(self) -> int:
        """:class:`~rng_service.storage.base.ServerEpochs`: it changes when a new connection
        reaches another server (host and port: with several hosts in the connection string,
        libpq picks whichever accepts writes now) or another start of it (the postmaster's
        start time) than the connection made before it."""
        with self._server_lock:
            return self._server_epoch

    def _connect(self) -> _LogConnection:
        """One connection outside the pool (start-up), with the error libpq gave."""
        try:
            conn = _LogConnection.connect(self._conninfo, **self._connect_kwargs())
        except psycopg.Error as e:
            raise StorageUnavailable(
                f"cannot connect to the PostgreSQL log ({self._where}): {_one_line(e)}"
            ) from e
        try:
            self._configure(conn)
        except psycopg.Error as e:
            conn.close()
            raise StorageUnavailable(
                f"cannot set up a session on the PostgreSQL log ({self._where}): {_one_line(e)}"
            ) from e
        return conn

    def _getconn(self, *, after_loss: bool = False) -> _LogConnection:
        """A connection for this caller alone, from the pool. It waits at most
        ``connect_timeout`` for one, and at most ``_WAIT_WHILE_DOWN`` once a connection
        attempt has failed (the server is down: the last attempt failed, or one fails while
        the caller waits) or right after a connection broke (``after_loss``). It asks in
        slices of ``_WAIT_SLICE``: each one lets the pool start a new connection attempt, so
        that a server back (or a standby promoted) is found within a slice."""
        started = time.monotonic()
        while True:
            down = bool(self._connect_error) or after_loss
            wait = min(float(self._connect_timeout), _WAIT_WHILE_DOWN if down else float("inf"))
            remaining = started + wait - time.monotonic()
            try:
                if remaining <= 0:
                    raise PoolTimeout()
                return self._pool.getconn(min(remaining, _WAIT_SLICE))
            except PoolClosed:
                raise StorageUnavailable(f"PostgreSQL log ({self._where}) is closed") from None
            except PoolTimeout:
                if time.monotonic() < started + wait:
                    continue
            error = self._connect_error
            if not error:  # connecting works: every connection is busy
                raise StorageUnavailable(
                    f"PostgreSQL log ({self._where}): all {_POOL_MAX} connections stayed busy "
                    f"for {wait:g} s"
                )
            raise StoreConnectionLost(
                f"PostgreSQL log ({self._where}): no connection within {wait:g} s (last "
                f"connection error: {error})"
            )

    def _run(
        self,
        what: str,
        work: Callable[[psycopg.Connection[tuple[Any, ...]]], T],
        *,
        write: bool,
        on_integrity_error: Callable[[psycopg.IntegrityError], Exception] | None = None,
    ) -> T:
        """Runs ``work`` on a pooled connection: a write in one transaction, a read as is.

        Translates database errors to the storage errors (see the module docstring). A
        connection found broken drains the pool (the others are most likely dead too: a server
        restart or a failover), and the call is retried once on a new connection unless a
        COMMIT may have been sent.
        """
        for attempt in (1, 2):
            conn = self._getconn(after_loss=attempt == 2)
            committing = False
            try:
                if write:
                    # Pipelined: BEGIN, the statements up to the first result read, and later
                    # the inserts and COMMIT travel together instead of one round trip each.
                    with conn.pipeline(), conn.transaction():
                        result = work(conn)
                        committing = True
                else:
                    result = work(conn)
            except psycopg.Error as e:
                lost = conn.closed or conn.broken
                self._pool.putconn(conn)
                if lost:
                    self._pool.drain()
                    if not committing and attempt == 1:
                        continue
                if isinstance(e, psycopg.IntegrityError) and on_integrity_error is not None:
                    raise on_integrity_error(e) from e
                if committing and lost:
                    raise CommitUnknown(
                        f"PostgreSQL log ({self._where}): connection lost during the commit of "
                        f"{what}; it may or may not be stored: {_one_line(e)}"
                    ) from e
                if lost:
                    raise StoreConnectionLost(
                        f"PostgreSQL log ({self._where}): {what} failed, the connection was "
                        f"lost (nothing was stored): {_one_line(e)}"
                    ) from e
                outcome = " and was rolled back" if write else ""
                raise StorageUnavailable(
                    f"PostgreSQL log ({self._where}): {what} failed{outcome}: {_one_line(e)}"
                ) from e
            except BaseException:
                self._pool.putconn(conn)
                raise
            self._pool.putconn(conn)
            return result
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _read(
        self, what: str, query: _Query, params: Sequence[Any] = (), *, prepare: bool | None = None
    ) -> list[tuple[Any, ...]]:
        """``prepare=False`` for a query whose best plan depends on its parameters: psycopg
        prepares a statement after a few executions, and PostgreSQL may then keep a generic
        plan made while the table was nearly empty."""

        def run(conn: psycopg.Connection[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
            return conn.execute(query, params, prepare=prepare).fetchall()

        return self._run(what, run, write=False)

    # -- schema ----------------------------------------------------------------------------

    def _init_schema(self, conn: psycopg.Connection[tuple[Any, ...]], *, migrate: bool) -> None:
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_INIT_LOCK_KEY,))
                row = conn.execute("SELECT current_schema()").fetchone()
                schema = row[0] if row else None
                if schema is None:
                    raise StorageUnavailable(
                        f"PostgreSQL log ({self._where}): no schema of the search_path exists "
                        "to hold the log; create it or fix options=-csearch_path"
                    )
                tables = {
                    r[0]
                    for r in conn.execute(
                        "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = %s",
                        (schema,),
                    )
                }
                found = self._stored_version(conn, schema, tables)
                target = MIGRATIONS[-1].version
                if found > target:
                    raise SchemaVersionMismatch(
                        f"PostgreSQL log ({self._where}, schema {schema}) has schema version "
                        f"{found}; this build reads version {target} only. Refusing to open it "
                        "(use the matching release)"
                    )
                if 0 < found < target and not migrate:
                    raise SchemaVersionMismatch(
                        f"PostgreSQL log ({self._where}, schema {schema}) has schema version "
                        f"{found}; this build reads version {target} only. Refusing to open it "
                        "(back the database up, then open it once with migrations enabled: "
                        "storage.postgres_migrate = true, or `rng-service migrate-store`)"
                    )
                if 0 < found < target:
                    self.migrated_from = found
                for step in MIGRATIONS:
                    if step.version <= found:
                        continue
                    for statement in step.statements:
                        conn.execute(statement)
                    conn.execute(
                        "INSERT INTO schema_migrations (version, description) VALUES (%s, %s)",
                        (step.version, step.description),
                    )
                    conn.execute(
                        "INSERT INTO meta (key, value) VALUES ('schema_version', %s) "
                        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        (str(step.version).encode(),),
                    )
        except psycopg.Error as e:
            raise StorageUnavailable(
                f"cannot open the PostgreSQL log ({self._where}): {_one_line(e)}"
            ) from e

    def _stored_version(
        self, conn: psycopg.Connection[tuple[Any, ...]], schema: str, tables: set[str]
    ) -> int:
        """0 for an empty schema, else the version in ``meta``; refuses anything else."""
        if not tables:
            return 0
        foreign = SchemaVersionMismatch(
            f"schema {schema} of the PostgreSQL database ({self._where}) holds tables "
            f"{sorted(tables)} but not an rng-service log; refusing to open it"
        )
        if "meta" not in tables:
            raise foreign
        row = conn.execute(
            sql.SQL("SELECT value FROM {}.meta WHERE key = 'schema_version'").format(
                sql.Identifier(schema)
            )
        ).fetchone()
        if row is None:
            raise foreign
        text = bytes(row[0]).decode(errors="replace")
        if not text.isdigit():
            raise SchemaVersionMismatch(
                f"PostgreSQL log ({self._where}, schema {schema}) has schema version {text!r}, "
                "which is not a number; refusing to open it"
            )
        return int(text)

    # -- writes ----------------------------------------------------------------------------

    def sequence(self, build: Callable[[int], AppendBatch | None]) -> None:
        stored: list[EntryRecord] = []

        def work(conn: psycopg.Connection[tuple[Any, ...]]) -> None:
            stored.clear()
            # Locks the head row until COMMIT: every writer, in this process or another
            # replica, queues here, and then reads the size the one before it committed.
            row = conn.execute("SELECT tree_size FROM log_head FOR UPDATE").fetchone()
            if row is None:
                raise StorageUnavailable(f"PostgreSQL log ({self._where}): log_head is empty")
            size: int = row[0]
            batch = build(size)
            if batch is None or not (
                batch.entries or batch.nodes or batch.checkpoint or batch.heads
            ):
                return
            entries = batch.entries
            check_append_batch(size, entries, batch.heads)
            stored.extend(entries)
            with conn.cursor() as cur:
                if entries:
                    cur.execute(
                        "UPDATE log_head SET tree_size = %s WHERE tree_size = %s",
                        (size + len(entries), size),
                    )
                    cur.executemany(_SQL.insert_entry, [entry_to_row(e) for e in entries])
                if batch.nodes:
                    cur.executemany(
                        _SQL.insert_node, [(n.level, n.index, n.hash) for n in batch.nodes]
                    )
                if batch.checkpoint is not None:
                    cp = batch.checkpoint
                    cur.execute(_SQL.insert_checkpoint, (cp.size, cp.timestamp_ns, cp.note))
                if batch.heads:
                    cur.executemany(
                        _SQL.upsert_map_row,
                        [(h.client_id, h.table_id, h.head_index, h.head_seq) for h in batch.heads],
                    )

        def conflict(e: psycopg.IntegrityError) -> Exception:
            constraint = e.diag.constraint_name
            if constraint in ("entries_slot", "entries_table_seq", "entries_slotted"):
                return SequenceConflict(
                    f"a slot or table sequence number of the batch is refused ({_one_line(e)})"
                )
            if constraint == "entries_request":
                found = self._first_stored_request(stored)
                if found is not None:
                    return DuplicateRequest(*found)
            if constraint == "nodes_pkey":
                return SequenceConflict(
                    f"a Merkle node of the batch is already stored ({_one_line(e)})"
                )
            if constraint == "entries_pkey":
                return SequenceConflict(
                    f"an entry index of the batch is already stored ({_one_line(e)})"
                )
            return StorageUnavailable(
                f"PostgreSQL log ({self._where}): append rejected: {_one_line(e)}"
            )

        self._run("an append", work, write=True, on_integrity_error=conflict)

    def append(
        self,
        entries: Sequence[EntryRecord],
        nodes: Sequence[NodeRecord],
        checkpoint: CheckpointRecord | None = None,
    ) -> None:
        self.sequence(lambda _size: AppendBatch(entries, nodes, checkpoint))

    def _first_stored_request(self, entries: Sequence[EntryRecord]) -> tuple[str, str] | None:
        """The first ``(client_id, request_id)`` of ``entries``, in batch order, already stored."""
        rows = self._read(
            "duplicate lookup",
            "SELECT b.ord FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS b(c, r, ord) "
            "JOIN entries AS e ON e.client_id = b.c AND e.request_id = b.r ORDER BY b.ord LIMIT 1",
            ([e.client_id for e in entries], [e.request_id for e in entries]),
        )
        if not rows:
            return None
        first = entries[int(rows[0][0]) - 1]
        return first.client_id, first.request_id

    def _write(self, what: str, query: _Query, params: Sequence[Any]) -> None:
        def work(conn: psycopg.Connection[tuple[Any, ...]]) -> None:
            conn.execute(query, params)

        self._run(what, work, write=True)

    def add_checkpoint(self, checkpoint: CheckpointRecord) -> None:
        self._write(
            "storing a checkpoint",
            _SQL.insert_checkpoint,
            (checkpoint.size, checkpoint.timestamp_ns, checkpoint.note),
        )

    def add_cosignatures(self, records: Sequence[CosignatureRecord]) -> None:
        if not records:
            return

        def work(conn: psycopg.Connection[tuple[Any, ...]]) -> None:
            with conn.cursor() as cur:
                cur.executemany(
                    _SQL.insert_cosignature,
                    [(r.size, r.body_sha256, r.witness, r.key_id, r.timestamp, r.line,
                      r.received_ns) for r in records],
                )  # fmt: skip

        self._run("storing cosignatures", work, write=True)

    def set_meta(self, key: str, value: bytes) -> None:
        check_meta_key(key)
        self._write(f"setting meta {key!r}", _SQL.set_meta, (key, bytes(value)))

    # -- reads -----------------------------------------------------------------------------

    def tree_size(self) -> int:
        rows = self._read("reading the tree size", "SELECT tree_size FROM log_head")
        if not rows:
            raise StorageUnavailable(f"PostgreSQL log ({self._where}): log_head is empty")
        size: int = rows[0][0]
        return size

    def entries(self, start: int, end: int) -> list[EntryRecord]:
        check_entry_range(start, end)
        rows = self._read("reading entries", _SQL.entries_range, (start, end))
        return [entry_from_row(r) for r in rows]

    def entries_by_requests(
        self, client_id: str, request_ids: Sequence[str]
    ) -> dict[str, EntryRecord]:
        if not request_ids:
            return {}
        rows = self._read(
            "looking up requests",
            _SQL.select_entries + "WHERE client_id = %s AND request_id = ANY(%s::text[])",
            (client_id, list(dict.fromkeys(request_ids))),
            # A generic plan made on a young log matches client_id only and filters every
            # entry of the client: 3 to 7 ms a lookup after seconds of load (bench replicas).
            prepare=False,
        )
        return {r[4]: entry_from_row(r) for r in rows}

    def round_slots(self, rounds: Sequence[tuple[str, str, str]]) -> list[SlotRecord]:
        return self.group_state((), rounds, ()).slots

    def table_heads(self, tables: Sequence[tuple[str, str]]) -> dict[tuple[str, str], TableHead]:
        return self.group_state((), (), tables).heads

    def group_state(
        self,
        requests: Sequence[tuple[str, str]],
        rounds: Sequence[tuple[str, str, str]],
        tables: Sequence[tuple[str, str]],
    ) -> GroupState:
        """One statement, one round trip (the sequencer makes it under the log head's lock):
        a UNION ALL whose first column says which part a row is of."""
        asked = list(dict.fromkeys(requests))
        wanted = list(dict.fromkeys(rounds))
        pairs = list(dict.fromkeys(tables))
        if not asked and not wanted and not pairs:
            return GroupState({}, [], {})
        rows = self._read(
            "looking up requests, rounds and table chains",
            POSTGRES_GROUP_STATE,
            (
                [c for c, _ in asked],
                [r for _, r in asked],
                [c for c, _, _ in wanted],
                [t for _, t, _ in wanted],
                [r for _, _, r in wanted],
                [c for c, _ in pairs],
                [t for _, t in pairs],
            ),
            # A generic plan made on a young log would scan (see entries_by_requests).
            prepare=False,
        )
        return group_state_from_rows(rows)

    def entry_by_request(self, client_id: str, request_id: str) -> EntryRecord | None:
        rows = self._read("looking up a request", _SQL.entry_by_request, (client_id, request_id))
        return entry_from_row(rows[0]) if rows else None

    def entry_by_leaf_hash(self, leaf_hash: bytes) -> EntryRecord | None:
        rows = self._read("looking up a leaf hash", _SQL.entry_by_leaf_hash, (leaf_hash,))
        return entry_from_row(rows[0]) if rows else None

    def find_entries(
        self,
        *,
        client_id: str | None = None,
        table_id: str | None = None,
        round_id: str | None = None,
        session_id: str | None = None,
        request_id: str | None = None,
        since_ns: int | None = None,
        until_ns: int | None = None,
        limit: int = 1000,
    ) -> list[EntryRecord]:
        check_limit(limit)
        conditions, params = entry_conditions(
            "%s",
            client_id=client_id,
            table_id=table_id,
            round_id=round_id,
            session_id=session_id,
            request_id=request_id,
            since_ns=since_ns,
            until_ns=until_ns,
        )
        params.append(limit)
        query = sql.SQL("{select} {where} ORDER BY idx LIMIT %s").format(
            select=sql.SQL(_SQL.select_entries),
            where=_where(conditions),
        )
        return [entry_from_row(r) for r in self._read("searching entries", query, params)]

    def table_history(
        self,
        client_id: str,
        table_id: str,
        *,
        first_seq: int = 1,
        last_seq: int | None = None,
        limit: int = 1000,
    ) -> list[EntryRecord]:
        check_limit(limit)
        rows = self._read(
            "reading a table's chain",
            _SQL.table_history,
            (client_id, table_id, first_seq, _MAX_INT64 if last_seq is None else last_seq, limit),
        )
        return [entry_from_row(r) for r in rows]

    def nodes(self, coords: Iterable[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        wanted = list(dict.fromkeys(coords))
        if not wanted:
            return {}
        rows = self._read(
            "reading Merkle nodes",
            "SELECT n.level, n.idx, n.hash "
            "FROM unnest(%s::integer[], %s::bigint[]) AS c(level, idx) "
            "JOIN nodes AS n ON n.level = c.level AND n.idx = c.idx",
            ([c[0] for c in wanted], [c[1] for c in wanted]),
        )
        return {(level, idx): bytes(value) for level, idx, value in rows}

    def map_rows(self) -> list[MapRow]:
        return map_rows_from(self._read("reading the table map", _SQL.map_rows))

    def map_heads_at(self, size: int) -> list[MapRow]:
        return map_rows_from(
            self._read("reading the table map's heads", _SQL.map_heads_at, (size, size, size))
        )

    def latest_checkpoint(self) -> CheckpointRecord | None:
        rows = self._read("reading the latest checkpoint", _SQL.latest_checkpoint)
        return checkpoint_from_row(rows[0]) if rows else None

    def checkpoints(
        self,
        *,
        min_size: int | None = None,
        max_size: int | None = None,
        since_ns: int | None = None,
        until_ns: int | None = None,
    ) -> list[CheckpointRecord]:
        conditions, params = checkpoint_conditions(
            "%s", min_size=min_size, max_size=max_size, since_ns=since_ns, until_ns=until_ns
        )
        query = sql.SQL("SELECT size, timestamp_ns, note FROM checkpoints {where} {order}").format(
            where=_where(conditions), order=sql.SQL(CHECKPOINT_ORDER)
        )
        return [checkpoint_from_row(r) for r in self._read("reading checkpoints", query, params)]

    def get_meta(self, key: str) -> bytes | None:
        rows = self._read("reading meta", _SQL.get_meta, (key,))
        return bytes(rows[0][0]) if rows else None

    def cosignatures(
        self, *, min_size: int | None = None, max_size: int | None = None
    ) -> list[CosignatureRecord]:
        rows = self._read(
            "reading cosignatures",
            _SQL.cosignatures,
            (0 if min_size is None else min_size, 2**63 - 1 if max_size is None else max_size),
        )
        return [cosignature_from_row(r) for r in rows]

    def latest_cosignatures(self) -> list[CosignatureRecord]:
        rows = self._read("reading the latest cosignatures", _SQL.latest_cosignatures)
        return first_per_witness(cosignature_from_row(r) for r in rows)

    def close(self) -> None:
        self._pool.close()


def _where(conditions: list[str]) -> sql.Composable:
    if not conditions:
        return sql.SQL("")
    return sql.SQL("WHERE ") + sql.SQL(" AND ").join(sql.SQL(c) for c in conditions)


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__
