"""The PostgreSQL driver's schema (:mod:`rng_service.storage.postgres`): its versioned
migrations, oldest first, and the version this build reads and writes. The driver applies them
(each step one transaction, recorded in ``schema_migrations``) and refuses a newer database
(docs/operations/postgresql.md).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration"]


@dataclass(frozen=True)
class Migration:
    """One schema step: ``statements`` bring a database from ``version - 1`` to ``version``."""

    version: int
    description: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "log entries, Merkle nodes, checkpoints, meta and the log head",
        (
            """CREATE TABLE schema_migrations (
                version     INTEGER     PRIMARY KEY,
                description TEXT        NOT NULL,
                applied_at  TIMESTAMPTZ NOT NULL DEFAULT now()
            )""",
            """CREATE TABLE meta (
                key   TEXT  PRIMARY KEY,
                value BYTEA NOT NULL
            )""",
            """CREATE TABLE log_head (
                singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
                tree_size BIGINT  NOT NULL CHECK (tree_size >= 0)
            )""",
            "INSERT INTO log_head (singleton, tree_size) VALUES (TRUE, 0)",
            """CREATE TABLE entries (
                idx            BIGINT NOT NULL,
                data           BYTEA  NOT NULL,
                leaf_hash      BYTEA  NOT NULL,
                client_id      TEXT   NOT NULL,
                request_id     TEXT   NOT NULL,
                request_digest BYTEA  NOT NULL,
                kind           TEXT   NOT NULL,
                table_id       TEXT   NOT NULL,
                round_id       TEXT   NOT NULL,
                session_id     TEXT   NOT NULL,
                timestamp_ns   BIGINT NOT NULL,
                commit_size    BIGINT NOT NULL,
                CONSTRAINT entries_pkey PRIMARY KEY (idx),
                CONSTRAINT entries_request UNIQUE (client_id, request_id)
            )""",
            "CREATE INDEX entries_leaf_hash ON entries (leaf_hash)",
            "CREATE INDEX entries_table ON entries (table_id)",
            "CREATE INDEX entries_round ON entries (round_id)",
            "CREATE INDEX entries_session ON entries (session_id)",
            "CREATE INDEX entries_timestamp ON entries (timestamp_ns)",
            """CREATE TABLE nodes (
                level INTEGER NOT NULL,
                idx   BIGINT  NOT NULL,
                hash  BYTEA   NOT NULL,
                CONSTRAINT nodes_pkey PRIMARY KEY (level, idx)
            )""",
            """CREATE TABLE checkpoints (
                id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                size         BIGINT NOT NULL,
                timestamp_ns BIGINT NOT NULL,
                note         BYTEA  NOT NULL
            )""",
            "CREATE INDEX checkpoints_size ON checkpoints (size, timestamp_ns)",
            "CREATE INDEX checkpoints_timestamp ON checkpoints (timestamp_ns)",
        ),
    ),
    Migration(
        2,
        "entry format 2: each entry's round slot and table sequence number",
        (
            "ALTER TABLE entries ADD COLUMN slot TEXT, ADD COLUMN table_seq BIGINT",
            "CREATE UNIQUE INDEX entries_slot ON entries (client_id, table_id, round_id, slot)",
            "CREATE UNIQUE INDEX entries_table_seq ON entries (client_id, table_id, table_seq)",
            # Rows written from now on need both (NOT VALID: the rows of schema 1 keep NULL).
            # A replica of an older release that still runs fails its commits instead of
            # writing entries without them.
            "ALTER TABLE entries ADD CONSTRAINT entries_slotted "
            "CHECK (slot IS NOT NULL AND table_seq IS NOT NULL) NOT VALID",
        ),
    ),
    Migration(
        3,
        "witness cosignatures of published checkpoints",
        (
            """CREATE TABLE cosignatures (
                size        BIGINT NOT NULL,
                body_sha256 BYTEA  NOT NULL,
                witness     TEXT   NOT NULL,
                key_id      BIGINT NOT NULL,
                cosigned_at BIGINT NOT NULL,
                line        BYTEA  NOT NULL,
                received_ns BIGINT NOT NULL,
                CONSTRAINT cosignatures_pkey PRIMARY KEY (size, body_sha256, witness, key_id)
            )""",
            "CREATE INDEX cosignatures_witness ON cosignatures (witness, key_id, size)",
        ),
    ),
    Migration(
        4,
        "entry format 3: the table map's rows, each chain's head, first built from the entries",
        (
            """CREATE TABLE table_map (
                client_id  TEXT   NOT NULL,
                table_id   TEXT   NOT NULL,
                head_index BIGINT NOT NULL,
                head_seq   BIGINT NOT NULL,
                CONSTRAINT table_map_pkey PRIMARY KEY (client_id, table_id)
            )""",
            "CREATE INDEX table_map_head_index ON table_map (head_index)",
            # Each stored chain's newest entry by its columns (rows of schema 1 are in no
            # chain); the writer checks them against the signed bytes before the first
            # format 3 entry commits their root.
            "INSERT INTO table_map (client_id, table_id, head_index, head_seq) "
            "SELECT DISTINCT ON (client_id, table_id) client_id, table_id, idx, table_seq "
            "FROM entries WHERE table_seq IS NOT NULL "
            "ORDER BY client_id, table_id, table_seq DESC",
        ),
    ),
)
"""Every schema step, oldest first; a new schema version is a new entry here, never an edit."""

SCHEMA_VERSION = MIGRATIONS[-1].version
"""The version this build reads and writes."""
