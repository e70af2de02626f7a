"""The SQL the SQLite and PostgreSQL drivers share (schema of docs/storage.md).

Both drivers keep the same tables and columns, so the statements that read and write them are
the same text but for the parameter mark (``?`` for sqlite3, ``%s`` for psycopg):
:func:`statements` writes them once for a mark. Also shared: the filters of ``find_entries``
and ``checkpoints``, and ``group_state``'s row shape and its decoding (each driver builds its
own statement for it: VALUES lists in SQLite, built per call; ``unnest`` of arrays in
PostgreSQL, :data:`POSTGRES_GROUP_STATE`).

Everything here is a fixed fragment: no caller text ever becomes SQL (values are parameters).
Entry bytes and hashes are opaque; nothing here reads them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rng_service.storage.base import (
    EntryRecord,
    GroupState,
    MapRow,
    SlotRecord,
    TableHead,
    entry_from_row,
)

__all__ = [
    "CHECKPOINT_ORDER",
    "COSIGNATURE_COLUMNS",
    "ENTRY_COLUMNS",
    "GROUP_LOGGED",
    "GROUP_LOGGED_ON",
    "GROUP_ROUND_SLOTS",
    "GROUP_ROUND_SLOTS_ON",
    "GROUP_TABLE_HEAD",
    "GROUP_TABLE_HEAD_WHERE",
    "POSTGRES_GROUP_STATE",
    "Statements",
    "checkpoint_conditions",
    "entry_conditions",
    "group_state_from_rows",
    "map_rows_from",
    "statements",
]

#: The entries columns in the order of ``entry_from_row`` / ``entry_to_row``.
ENTRY_COLUMNS = (
    "idx, data, leaf_hash, client_id, request_id, request_digest, kind, table_id, "
    "round_id, session_id, timestamp_ns, commit_size, slot, table_seq"
)
#: The order ``checkpoints`` lists checkpoints in.
CHECKPOINT_ORDER = "ORDER BY size, timestamp_ns, id"
#: The cosignatures columns in the order of ``cosignature_from_row``.
COSIGNATURE_COLUMNS = "size, body_sha256, witness, key_id, cosigned_at, line, received_ns"

# group_state's three parts share one row shape: the part (0, 1, 2), then the entry columns in
# the order of entry_from_row (as columns 1-14), then a head's table_seq again (column 15).
# A driver selects these columns from its own sources of keys: q(c, rid) for the requests,
# k(c, t, r) for the rounds, h(c, t) for the tables, each joined to entries AS e.
#: Part 0, a logged request: the whole entry (the driver adds column 15, a NULL it may type).
GROUP_LOGGED = "0, " + ", ".join("e." + c for c in ENTRY_COLUMNS.split(", "))
#: Part 1, a round's slot taken: its entry index, keys and slot (no entry bytes).
GROUP_ROUND_SLOTS = (
    "1, e.idx, NULL, NULL, k.c, NULL, NULL, NULL, k.t, k.r, NULL, NULL, NULL, e.slot, NULL, NULL"
)
#: Part 2, a table's head: the entry index and table_seq of its highest table_seq.
GROUP_TABLE_HEAD = (
    "2, e.idx, NULL, NULL, h.c, NULL, NULL, NULL, h.t, NULL, NULL, NULL, NULL, NULL, NULL, "
    "e.table_seq"
)
#: How part 0 joins entries (one probe of entries_request per request).
GROUP_LOGGED_ON = "e.client_id = q.c AND e.request_id = q.rid"
#: How part 1 joins entries (one probe of the covering index entries_slot per round).
GROUP_ROUND_SLOTS_ON = "e.client_id = k.c AND e.table_id = k.t AND e.round_id = k.r"
#: Part 2's entry, from entries: one backward probe of entries_table_seq per table.
GROUP_TABLE_HEAD_WHERE = (
    "client_id = h.c AND table_id = h.t AND table_seq IS NOT NULL ORDER BY table_seq DESC LIMIT 1"
)


def group_state_from_rows(rows: Iterable[tuple[Any, ...]]) -> GroupState:
    """The :class:`GroupState` of ``group_state``'s rows (the shape above), slots in index
    order; a key found twice (a large group read in several statements) keeps the last row."""
    logged: dict[tuple[str, str], EntryRecord] = {}
    slots: dict[int, SlotRecord] = {}
    heads: dict[tuple[str, str], TableHead] = {}
    for row in rows:
        if row[0] == 0:
            record = entry_from_row(row[1:])
            logged[(record.client_id, record.request_id)] = record
        elif row[0] == 1:
            slots[row[1]] = SlotRecord(row[4], row[8], row[9], row[1], row[13])
        else:
            heads[(row[4], row[8])] = TableHead(index=row[1], table_seq=row[15])
    return GroupState(logged, [slots[i] for i in sorted(slots)], heads)


@dataclass(frozen=True)
class Statements:
    """The statements both drivers run, written with one parameter mark."""

    select_entries: str  # "SELECT <entry columns> FROM entries ", a WHERE clause follows
    insert_entry: str
    insert_node: str
    insert_checkpoint: str
    insert_cosignature: str
    set_meta: str
    get_meta: str
    entries_range: str
    entry_by_request: str
    entry_by_leaf_hash: str
    table_history: str
    latest_checkpoint: str
    cosignatures: str
    latest_cosignatures: str
    upsert_map_row: str
    map_rows: str
    map_heads_at: str


def _marks(mark: str, n: int) -> str:
    return "(" + ", ".join([mark] * n) + ")"


def statements(mark: str) -> Statements:
    """The shared statements with ``mark`` (``?`` or ``%s``) for each parameter."""
    select = f"SELECT {ENTRY_COLUMNS} FROM entries "
    m = mark
    return Statements(
        select_entries=select,
        insert_entry=f"INSERT INTO entries ({ENTRY_COLUMNS}) VALUES {_marks(m, 14)}",
        insert_node=f"INSERT INTO nodes (level, idx, hash) VALUES {_marks(m, 3)}",
        insert_checkpoint=(
            f"INSERT INTO checkpoints (size, timestamp_ns, note) VALUES {_marks(m, 3)}"
        ),
        insert_cosignature=(
            f"INSERT INTO cosignatures ({COSIGNATURE_COLUMNS}) VALUES {_marks(m, 7)} "
            "ON CONFLICT (size, body_sha256, witness, key_id) DO UPDATE SET "
            "cosigned_at = excluded.cosigned_at, line = excluded.line, "
            "received_ns = excluded.received_ns "
            "WHERE excluded.cosigned_at > cosignatures.cosigned_at"
        ),
        set_meta=(
            f"INSERT INTO meta (key, value) VALUES ({m}, {m}) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        ),
        get_meta=f"SELECT value FROM meta WHERE key = {m}",
        entries_range=select + f"WHERE idx >= {m} AND idx < {m} ORDER BY idx",
        entry_by_request=select + f"WHERE client_id = {m} AND request_id = {m}",
        entry_by_leaf_hash=select + f"WHERE leaf_hash = {m} ORDER BY idx LIMIT 1",
        # A range scan of entries_table_seq (client_id, table_id, table_seq).
        table_history=select + f"WHERE client_id = {m} AND table_id = {m} AND table_seq >= {m} "
        f"AND table_seq <= {m} ORDER BY table_seq, idx LIMIT {m}",
        latest_checkpoint=(
            "SELECT size, timestamp_ns, note FROM checkpoints "
            "ORDER BY size DESC, timestamp_ns DESC, id DESC LIMIT 1"
        ),
        cosignatures=(
            f"SELECT {COSIGNATURE_COLUMNS} FROM cosignatures "
            f"WHERE size >= {m} AND size <= {m} ORDER BY size, witness, key_id, body_sha256"
        ),
        latest_cosignatures=(
            f"SELECT {', '.join('c.' + c for c in COSIGNATURE_COLUMNS.split(', '))} "
            "FROM cosignatures AS c JOIN (SELECT witness, key_id, MAX(size) AS size "
            "FROM cosignatures GROUP BY witness, key_id) AS m ON c.witness = m.witness "
            "AND c.key_id = m.key_id AND c.size = m.size "
            "ORDER BY c.witness, c.key_id, c.cosigned_at DESC"
        ),
        upsert_map_row=(
            f"INSERT INTO table_map (client_id, table_id, head_index, head_seq) VALUES "
            f"{_marks(m, 4)} ON CONFLICT (client_id, table_id) DO UPDATE SET "
            "head_index = excluded.head_index, head_seq = excluded.head_seq"
        ),
        map_rows=(
            "SELECT client_id, table_id, head_index, head_seq FROM table_map "
            "ORDER BY client_id, table_id"
        ),
        # The rows already below the size as stored; for the others, one backward probe of
        # entries_table_seq per chain (its newest entry below the size, by the columns).
        map_heads_at=(
            "SELECT client_id, table_id, head_index, head_seq FROM table_map "
            f"WHERE head_index < {m} UNION ALL "
            "SELECT m.client_id, m.table_id, e.idx, e.table_seq FROM table_map AS m "
            "JOIN entries AS e ON e.idx = (SELECT x.idx FROM entries AS x WHERE "
            "x.client_id = m.client_id AND x.table_id = m.table_id AND x.table_seq IS NOT NULL "
            f"AND x.idx < {m} ORDER BY x.table_seq DESC LIMIT 1) WHERE m.head_index >= {m} "
            "ORDER BY 1, 2"
        ),
    )


def map_rows_from(rows: Iterable[tuple[Any, ...]]) -> list[MapRow]:
    """:class:`MapRow` s of (client_id, table_id, head_index, head_seq) rows."""
    return [MapRow(r[0], r[1], r[2], r[3]) for r in rows]


def entry_conditions(
    mark: str,
    *,
    client_id: str | None,
    table_id: str | None,
    round_id: str | None,
    session_id: str | None,
    request_id: str | None,
    since_ns: int | None,
    until_ns: int | None,
) -> tuple[list[str], list[Any]]:
    """``find_entries``' conditions (to be joined with AND) and their parameters, in order."""
    return _conditions(
        (
            (f"client_id = {mark}", client_id),
            (f"table_id = {mark}", table_id),
            (f"round_id = {mark}", round_id),
            (f"session_id = {mark}", session_id),
            (f"request_id = {mark}", request_id),
            (f"timestamp_ns >= {mark}", since_ns),
            (f"timestamp_ns < {mark}", until_ns),
        )
    )


def checkpoint_conditions(
    mark: str,
    *,
    min_size: int | None,
    max_size: int | None,
    since_ns: int | None,
    until_ns: int | None,
) -> tuple[list[str], list[Any]]:
    """``checkpoints``' conditions (to be joined with AND) and their parameters, in order."""
    return _conditions(
        (
            (f"size >= {mark}", min_size),
            (f"size <= {mark}", max_size),
            (f"timestamp_ns >= {mark}", since_ns),
            (f"timestamp_ns < {mark}", until_ns),
        )
    )


def _conditions(pairs: Iterable[tuple[str, Any]]) -> tuple[list[str], list[Any]]:
    conditions: list[str] = []
    params: list[Any] = []
    for condition, value in pairs:
        if value is not None:
            conditions.append(condition)
            params.append(value)
    return conditions, params


# PostgreSQL's group_state: one statement for its three parts (the row shape above), the keys
# as arrays: one probe of entries_request per request, of
# entries_slot per round (no entry bytes), and one backward probe of entries_table_seq per table.
POSTGRES_GROUP_STATE = (
    f"SELECT {GROUP_LOGGED}, NULL::bigint FROM unnest(%s::text[], %s::text[]) AS q(c, rid) "
    f"JOIN entries AS e ON {GROUP_LOGGED_ON} "
    "UNION ALL "
    f"SELECT {GROUP_ROUND_SLOTS} FROM unnest(%s::text[], %s::text[], %s::text[]) AS k(c, t, r) "
    f"JOIN entries AS e ON {GROUP_ROUND_SLOTS_ON} "
    "UNION ALL "
    f"SELECT {GROUP_TABLE_HEAD} FROM unnest(%s::text[], %s::text[]) AS h(c, t) "
    "CROSS JOIN LATERAL (SELECT idx, table_seq FROM entries "
    f"WHERE {GROUP_TABLE_HEAD_WHERE}) AS e"
)
