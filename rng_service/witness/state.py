"""The witness's durable memory: per log origin, the latest checkpoint it cosigned.

C2SP tlog-witness, "add-checkpoint": "For each log, uniquely identified by its origin line, the
witness is only required to keep track of the latest checkpoint it observed and verified." and
"The witness MUST persist the new checkpoint before responding. Note that checking the old size
against the latest checkpoint and persisting the new checkpoint must be performed atomically"
(else two requests can roll the stored size back). :meth:`WitnessState.advance` is that atomic
step: one SQLite ``BEGIN IMMEDIATE`` transaction (SQLite's write lock serialises writers across
processes too; a lock serialises this process's threads) reads the stored size and root, makes
the spec's checks (old size, equal-size roots, the RFC 6962 section 2.1.2 consistency proof,
verified as RFC 9162 section 2.1.4.2 says) and stores the new checkpoint, or nothing. The
database is in WAL mode with ``synchronous=FULL``: a stored checkpoint survives a crash or power
loss, so a restarted witness never cosigns a smaller or inconsistent checkpoint.

The spec also allows: "If the origin is known, and the signature is valid, the witness MAY log
the request even if the consistency proof doesn't verify (but MUST NOT cosign the checkpoint) as
it might be proof of log misbehavior." Such requests (a log-signed checkpoint inconsistent with
one the witness cosigned) are kept in the ``evidence`` table, the newest
:data:`MAX_EVIDENCE_ROWS` of them.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rng_service.errors import FailedPrecondition, StorageUnavailable
from rng_service.log.merkle import EMPTY_ROOT, ProofError, verify_consistency
from rng_service.log.note import Checkpoint

__all__ = [
    "MAX_EVIDENCE_ROWS",
    "SCHEMA_VERSION",
    "Conflict",
    "Cosign",
    "Decision",
    "Evidence",
    "Inconsistent",
    "LogHead",
    "WitnessState",
]

SCHEMA_VERSION = 1
MAX_EVIDENCE_ROWS = 1000

_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE logs (
        origin     TEXT    PRIMARY KEY,
        size       INTEGER NOT NULL,
        root       BLOB    NOT NULL,
        note       BLOB    NOT NULL,
        updated_ns INTEGER NOT NULL
    )""",
    """CREATE TABLE evidence (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        origin      TEXT    NOT NULL,
        received_ns INTEGER NOT NULL,
        reason      TEXT    NOT NULL,
        request     BLOB    NOT NULL
    )""",
)


@dataclass(frozen=True, slots=True)
class LogHead:
    """The latest checkpoint cosigned for one origin."""

    origin: str
    size: int
    root: bytes
    note: bytes
    updated_ns: int


@dataclass(frozen=True, slots=True)
class Cosign:
    """The checks passed and the checkpoint is stored: cosign it."""

    previous_size: int


@dataclass(frozen=True, slots=True)
class Conflict:
    """409: the old size is not the latest cosigned size (``size``), or the sizes are equal and
    the roots differ (``fork``)."""

    size: int
    fork: bool = False


@dataclass(frozen=True, slots=True)
class Inconsistent:
    """422: the consistency proof does not verify from the stored checkpoint."""

    reason: str


Decision = Cosign | Conflict | Inconsistent


@dataclass(frozen=True, slots=True)
class Evidence:
    origin: str
    received_ns: int
    reason: str
    request: bytes


class WitnessState:
    """The witness's SQLite state file. Thread-safe; one or several processes may share it."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_ms: int = 5000) -> None:
        self._path = Path(path)
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(
                str(self._path), isolation_level=None, check_same_thread=False,
                timeout=busy_timeout_ms / 1000,
            )  # fmt: skip
            mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StorageUnavailable(f"witness state {self._path}: WAL mode refused ({mode})")
            self._conn.execute("PRAGMA synchronous = FULL")
            self._init_schema()
        except sqlite3.Error as e:
            raise StorageUnavailable(f"cannot open witness state {self._path}: {e}") from e

    def _init_schema(self) -> None:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            tables = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            if "meta" not in tables:
                if tables - {"sqlite_sequence"}:
                    raise FailedPrecondition(
                        f"{self._path} is an SQLite database but not a witness state file "
                        f"(tables {sorted(tables)}); refusing to use it"
                    )
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
            else:
                row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
                if row is None or row[0] != str(SCHEMA_VERSION):
                    raise FailedPrecondition(
                        f"witness state {self._path} has schema version "
                        f"{row[0] if row else 'none'}; this build reads {SCHEMA_VERSION}"
                    )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """The rows of one read; :class:`StorageUnavailable` when the file cannot be read."""
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as e:
                raise StorageUnavailable(f"witness state {self._path}: {e}") from e

    def head(self, origin: str) -> LogHead | None:
        rows = self._read(
            "SELECT origin, size, root, note, updated_ns FROM logs WHERE origin = ?", (origin,)
        )
        return next((_head(r) for r in rows), None)

    def heads(self) -> list[LogHead]:
        rows = self._read("SELECT origin, size, root, note, updated_ns FROM logs ORDER BY origin")
        return [_head(r) for r in rows]

    def probe(self) -> None:
        """Read the state file's schema version: :class:`StorageUnavailable` when it cannot be
        read (an I/O error, a damaged or replaced file). A read, so it never waits for a writer
        (WAL mode); a store that can be read but not written shows only in ``advance``."""
        rows = self._read("SELECT value FROM meta WHERE key = 'schema_version'")
        if not rows or rows[0][0] != str(SCHEMA_VERSION):
            raise StorageUnavailable(f"witness state {self._path}: schema version changed")

    def evidence(self) -> list[Evidence]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT origin, received_ns, reason, request FROM evidence ORDER BY id"
            ).fetchall()
        return [Evidence(r[0], r[1], r[2], bytes(r[3])) for r in rows]

    def advance(
        self,
        *,
        checkpoint: Checkpoint,
        old_size: int,
        proof: Sequence[bytes],
        note: bytes,
        request: bytes,
        now_ns: int,
    ) -> Decision:
        """The atomic check-and-store of one add-checkpoint request whose log signature
        verified and whose ``old_size <= checkpoint.size`` (checked by the caller: a 400).

        Returns :class:`Cosign` after the new checkpoint is durably stored, :class:`Conflict`
        (the stored size; nothing stored) or :class:`Inconsistent` (nothing stored but the
        request, as evidence).
        """
        origin = checkpoint.origin
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    decision = self._decide(conn, checkpoint, old_size, proof)
                    if isinstance(decision, Cosign):
                        conn.execute(
                            "INSERT INTO logs (origin, size, root, note, updated_ns) "
                            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (origin) DO UPDATE SET "
                            "size = excluded.size, root = excluded.root, note = excluded.note, "
                            "updated_ns = excluded.updated_ns",
                            (origin, checkpoint.size, checkpoint.root_hash, note, now_ns),
                        )
                    elif isinstance(decision, Inconsistent) or (
                        isinstance(decision, Conflict) and decision.fork
                    ):
                        reason = (
                            decision.reason
                            if isinstance(decision, Inconsistent)
                            else f"same size {checkpoint.size} as the cosigned checkpoint, "
                            f"another root"
                        )
                        conn.execute(
                            "INSERT INTO evidence (origin, received_ns, reason, request) "
                            "VALUES (?, ?, ?, ?)",
                            (origin, now_ns, reason, request),
                        )
                        conn.execute(
                            "DELETE FROM evidence WHERE id <= (SELECT MAX(id) FROM evidence) - ?",
                            (MAX_EVIDENCE_ROWS,),
                        )
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as e:
                raise StorageUnavailable(f"witness state {self._path}: {e}") from e
        return decision

    @staticmethod
    def _decide(
        conn: sqlite3.Connection, checkpoint: Checkpoint, old_size: int, proof: Sequence[bytes]
    ) -> Decision:
        row = conn.execute(
            "SELECT size, root FROM logs WHERE origin = ?", (checkpoint.origin,)
        ).fetchone()
        size, root = (row[0], bytes(row[1])) if row is not None else (0, EMPTY_ROOT)
        # "The witness MUST check that the old size matches the size of the latest checkpoint
        # it cosigned for the checkpoint's origin (or zero if it never cosigned a checkpoint
        # for that origin). If it doesn't match, the witness MUST respond with a 409."
        if old_size != size:
            return Conflict(size)
        # "If the old size matches the checkpoint size, the witness MUST check that the root
        # hashes are also identical. If they don't match, ... 409 Conflict."
        if old_size == checkpoint.size:
            if proof:
                return Inconsistent(f"a consistency proof between equal sizes {size} must be empty")
            if row is not None and root != checkpoint.root_hash:
                return Conflict(size, fork=True)
            if row is None and size == 0 and checkpoint.root_hash != EMPTY_ROOT:
                return Inconsistent("a checkpoint of size 0 must have the empty tree's root")
            return Cosign(previous_size=size)
        # "The consistency proof lines MUST encode a Merkle Consistency Proof from the old size
        # to the checkpoint size according to RFC 6962, Section 2.1.2. The proof MUST be empty
        # if the old size is zero. If the Merkle Consistency Proof doesn't verify, ... 422."
        try:
            verify_consistency(old_size, checkpoint.size, list(proof), root, checkpoint.root_hash)
        except ProofError as e:
            return Inconsistent(f"consistency proof from size {old_size}: {e}")
        return Cosign(previous_size=size)


def _head(row: Any) -> LogHead:
    return LogHead(row[0], row[1], bytes(row[2]), bytes(row[3]), row[4])
