"""The writer's table map: every table chain's committed head, and the root each entry carries.

Owns what the log writer decides from committed state (issue 40; docs/log-format.md, "Table
map"; docs/security.md, "An edited database"):

- :class:`MapReplay`: the map rebuilt from entries' signed fields in log order, checking each
  format 3 entry's ``table_map`` root, each chain link (``table_seq`` one more than the head's,
  ``table_prev`` the head's index) and that format 3 never goes back to 2. The store's own
  check (:mod:`rng_service.writer.storecheck`) and the writer's start-up use it.
- :func:`load_map`: the writer's map at start-up. The store's ``table_map`` rows are read and
  their root compared with the root signed in the newest entry (O(tables), after the
  incremental store check); a mismatch refuses the start, naming the first table whose row
  differs from the heads the signed entries give (found by replaying every entry, only then).
  Before the first format 3 entry (a store migrated from format 2, whose rows schema
  migration built from the columns), no root commits the rows yet: they are compared with a
  replay of every entry's signed bytes, whose RFC 6962 root must be the tree's.
- :class:`WriterMap`: the committed map, a draft per commit group (``TableMap.copy`` is O(1):
  a group that is not stored leaves the committed map as it was), the catch-up over entries
  another writer sharing the store appended, and each chain's *tail*: its newest entries of
  one round, walked back from the committed head by their signed ``table_prev``, which the
  sequencer requires among the rows its round lookup returns.

Entries read from the store are checked against their signed bytes and the tree the
checkpoints commit to (:mod:`rng_service.writer.columns`) before anything is taken from them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rng_service.errors import IntegrityError
from rng_service.log.merkle import verify_inclusion
from rng_service.log.table_map import MapHead, TableMap
from rng_service.storage.base import EntryRecord, LogStorage, MapRow
from rng_service.writer.columns import (
    LookupIntegrityError,
    SignedFields,
    check_nodes,
    check_range,
    check_record,
)
from rng_service.writer.tree import MerkleTree, StoreDiverged

__all__ = [
    "TAIL_LIMIT",
    "MapReplay",
    "TableMapMismatch",
    "Tail",
    "WriterMap",
    "describe_difference",
    "load_map",
    "replay_entries",
]

TAIL_LIMIT = 64
"""Entries of one round at a chain's tail that the writer keeps (newest first): a round with
more entries than this at the tail has only its newest ones checked by the writer."""
_KEPT_TAILS = 100_000  # tails kept in memory (forgotten all at once beyond it)
_PAGE = 4096

Chain = tuple[str, str]


class TableMapMismatch(StoreDiverged):
    """The store's table map (its rows, or the heads its entries give) is not the map the log
    signed: the writer refuses to append to it. ``index``: the entry at fault, if known;
    ``table``: the (client_id, table_id) whose head differs, if known."""

    def __init__(
        self, message: str, *, index: int | None = None, table: Chain | None = None
    ) -> None:
        super().__init__(message)
        self.index = index
        self.table = table


def _name(chain: Chain) -> str:
    return f"table {chain[1]!r} of client {chain[0]!r}"


class MapReplay:
    """The table map rebuilt from signed entries in log order (see the module docstring)."""

    __slots__ = ("format3_from", "heads", "map", "size")

    def __init__(self) -> None:
        self.map = TableMap()
        self.heads: dict[Chain, tuple[int, int]] = {}  # chain -> (index, seq)
        self.size = 0
        self.format3_from: int | None = None

    def apply(self, index: int, signed: SignedFields) -> None:
        """Entry ``index`` (the next one) with its signed fields; raises
        :class:`TableMapMismatch` at a wrong root, a broken chain link, or format 3 -> 2."""
        version = signed.version
        if version < 3 and self.format3_from is not None:
            raise TableMapMismatch(
                f"entry {index} is of format {version}, but format 3 started at entry "
                f"{self.format3_from}: a log never goes back to an older format",
                index=index,
            )
        seq = signed.table_seq
        if seq is not None:
            chain = (signed.client, signed.table_id)
            head = self.heads.get(chain)
            expected = (1, None) if head is None else (head[1] + 1, head[0])
            if (seq, signed.table_prev) != expected:
                raise TableMapMismatch(
                    f"entry {index} is seq {seq} of {_name(chain)} after entry "
                    f"{signed.table_prev}, but the chain's head before it is "
                    f"{'nothing' if head is None else f'seq {head[1]} at entry {head[0]}'}",
                    index=index,
                    table=chain,
                )
            self.heads[chain] = (index, seq)
            self.map.set(chain[0], chain[1], index, seq)
        if version >= 3:
            if self.format3_from is None:
                self.format3_from = index
            root = self.map.root()
            if root != signed.table_map:
                signed_root = signed.table_map.hex() if signed.table_map else None
                raise TableMapMismatch(
                    f"entry {index}'s signed table_map is {signed_root}, but the heads of "
                    f"entries [0, {index}] give the root {root.hex()}: the log committed a "
                    f"wrong map root at entry {index}",
                    index=index,
                )
        self.size = index + 1


def replay_entries(storage: LogStorage, tree: MerkleTree, size: int) -> MapReplay:
    """Every entry of ``[0, size)`` replayed (:class:`MapReplay`) after checking each row
    against its bytes, and all their leaves against the tree's root at ``size`` (so that the
    bytes are the ones the checkpoints commit to). Raises an IntegrityError at the first
    fault."""
    replay = MapReplay()
    check_tree = MerkleTree(size=0, get_nodes=storage.nodes, cache_min_level=64, recent_nodes=0)
    for start in range(0, size, _PAGE):
        end = min(start + _PAGE, size)
        records = storage.entries(start, end)
        check_range(records, start, end)
        leaves = []
        for record in records:
            replay.apply(record.index, check_record(record))
            leaves.append(record.leaf_hash)
        check_tree.commit(check_tree.prepare(leaves))
    if size and check_tree.root() != tree.root(size):
        raise TableMapMismatch(
            f"the stored entries [0, {size}) do not hash to the tree the checkpoints commit "
            f"to: entries were changed together with their leaf hashes (run rng-service "
            f"check-store)"
        )
    return replay


def describe_difference(rows: Iterable[MapRow], heads: Mapping[Chain, tuple[int, int]]) -> str:
    """The first table (by client, table) whose stored row differs from ``heads`` (chain ->
    (index, seq)), in words; "" if none does."""
    stored = {(r.client_id, r.table_id): (r.head_index, r.head_seq) for r in rows}
    for chain in sorted(stored.keys() | heads.keys()):
        row, signed = stored.get(chain), heads.get(chain)
        if row == signed:
            continue
        said = "no row" if row is None else f"entry {row[0]} (seq {row[1]})"
        truth = "no entry" if signed is None else f"entry {signed[0]} (seq {signed[1]})"
        return (
            f"the table map's row of {_name(chain)} says its head is {said}, but the signed "
            f"entries say {truth}: the store's table_map rows were edited"
        )
    return ""


def read_verified(storage: LogStorage, tree: MerkleTree, index: int) -> SignedFields:
    """Entry ``index``'s signed fields, after checking its row against its bytes and its leaf
    against the tree's root (an inclusion proof from the stored nodes). LookupIntegrityError
    (or the proof's IntegrityError) if the store was edited."""
    size = tree.size
    found = storage.entries(index, index + 1)
    check_range(found, index, index + 1)
    signed = check_record(found[0])
    leaf, proof = tree.leaf_and_inclusion_proof(index, size)
    check_nodes(found, [leaf])
    try:
        verify_inclusion(leaf, index, size, proof, tree.root(size))
    except IntegrityError as e:
        raise LookupIntegrityError(
            f"entry {index}: its leaf node is not in the tree the checkpoints commit to ({e}): "
            f"the store's nodes were edited",
            check="node",
            index=index,
        ) from e
    return signed


def load_map(storage: LogStorage, tree: MerkleTree) -> WriterMap:
    """The writer's map at start-up (see the module docstring); raises
    :class:`TableMapMismatch` (or another IntegrityError) if the store's map is not the signed
    one."""
    size = tree.size
    rows = storage.map_rows()
    for row in rows:
        if not 0 <= row.head_index < size:
            raise TableMapMismatch(
                f"the table map's row of {_name((row.client_id, row.table_id))} names entry "
                f"{row.head_index} as its head, but the log holds {size} entries: the store's "
                f"table_map rows were edited (or its entries deleted)",
                index=row.head_index,
                table=(row.client_id, row.table_id),
            )
    if size == 0:
        if rows:
            raise TableMapMismatch(
                f"the store holds table map rows but no entry: {describe_difference(rows, {})}"
            )
        return WriterMap(storage, tree, TableMap(), {}, 0)
    newest = read_verified(storage, tree, size - 1)
    heads = {(r.client_id, r.table_id): (r.head_index, r.head_seq) for r in rows}
    if newest.version >= 3:
        table_map = TableMap(
            MapHead(r.client_id, r.table_id, r.head_index, r.head_seq) for r in rows
        )
        if table_map.root() == newest.table_map:
            loaded = WriterMap(storage, tree, table_map, heads, size)
            loaded.format3 = True
            return loaded
        # Only now the whole log: which table's row is wrong (or which root).
        replay = replay_entries(storage, tree, size)
        why = describe_difference(rows, replay.heads)
        raise TableMapMismatch(
            f"the table map's rows give the root {table_map.root().hex()}, but the newest "
            f"entry ({size - 1}) signed {newest.table_map.hex() if newest.table_map else None}"
            + (f": {why}" if why else ""),
            index=size - 1,
        )
    # No root signed yet: the rows (built from the columns by schema migration, or written
    # with format 2 entries' appends) against the signed bytes of every entry.
    replay = replay_entries(storage, tree, size)
    why = describe_difference(rows, replay.heads)
    if why:
        raise TableMapMismatch(why + " (before the first format 3 entry)")
    return WriterMap(storage, tree, replay.map, replay.heads, size)


@dataclass(slots=True)
class Tail:
    """A chain's newest entries that are of one round (``round_id``): their indexes, newest
    first (at most :data:`TAIL_LIMIT`)."""

    round_id: str
    indexes: list[int]


class WriterMap:
    """The writer's committed table map (see the module docstring). Used by the writer thread
    only."""

    def __init__(
        self,
        storage: LogStorage,
        tree: MerkleTree,
        table_map: TableMap,
        heads: dict[Chain, tuple[int, int]],
        size: int,
    ) -> None:
        self._storage = storage
        self._tree = tree
        self.map = table_map
        self.heads = heads  # chain -> (index, seq), as committed
        self.size = size  # the tree size the map is of
        self.tails: dict[Chain, Tail] = {}
        #: The newest committed entry is of format 3 (then no format 2 entry may follow).
        self.format3 = False

    def root(self) -> bytes:
        return self.map.root()

    def catch_up(self, size: int) -> None:
        """Adds the heads of the entries ``[self.size, size)`` another writer sharing the store
        appended (read and checked as :func:`replay_entries` does, each format 3 root against
        the map), after the tree was advanced to ``size``. TableMapMismatch if they do not
        continue this map."""
        if size <= self.size:
            return
        replay = MapReplay()
        replay.map, replay.heads, replay.size = self.map.copy(), dict(self.heads), self.size
        replay.format3_from = self.size - 1 if self.format3 else None
        for start in range(self.size, size, _PAGE):
            end = min(start + _PAGE, size)
            records = self._storage.entries(start, end)
            check_range(records, start, end)
            check_nodes(records, self._tree.leaf_hashes([r.index for r in records]))
            for record in records:
                signed = check_record(record)
                replay.apply(record.index, signed)
                self.tails.pop((signed.client, signed.table_id), None)
        self.map, self.heads, self.size = replay.map, replay.heads, size
        self.format3 = replay.format3_from is not None

    def adopt(self, base: int, table_map: TableMap, entries: Sequence[EntryRecord]) -> None:
        """A stored group's map: ``table_map`` (its draft), made from this map at ``base``
        entries with ``entries`` (the group's records, in index order)."""
        if base != self.size:  # another path caught up meanwhile: read what was stored
            self.catch_up(base + len(entries))
            return
        self.map = table_map
        tails = self.tails
        if len(tails) >= _KEPT_TAILS:
            tails.clear()
        for record in entries:
            chain = (record.client_id, record.table_id)
            seq = record.table_seq or 1
            previous = self.heads.get(chain)
            self.heads[chain] = (record.index, seq)
            tail = tails.get(chain)
            if tail is not None and tail.round_id == record.round_id:
                tail.indexes.insert(0, record.index)
                del tail.indexes[TAIL_LIMIT:]
            elif tail is not None or previous is None:
                tails[chain] = Tail(record.round_id, [record.index])
            else:  # the chain's earlier entries may be of this round: read them when needed
                tails.pop(chain, None)
        self.size = base + len(entries)
        self.format3 = True  # the writer writes format 3 only

    def tail(self, chain: Chain) -> Tail | None:
        """The chain's tail (newest entries of its newest round), walked back from the
        committed head by the entries' signed ``table_prev`` (each read entry checked against
        its bytes and the tree); None for a chain without entries."""
        tail = self.tails.get(chain)
        if tail is not None:
            return tail
        head = self.heads.get(chain)
        if head is None:
            return None
        index: int | None = head[0]
        round_id: str | None = None
        indexes: list[int] = []
        while index is not None and len(indexes) < TAIL_LIMIT:
            signed = read_verified(self._storage, self._tree, index)
            if (signed.client, signed.table_id) != chain or signed.table_seq is None:
                raise LookupIntegrityError(
                    f"entry {index} is in the committed chain of {_name(chain)}, but its "
                    f"signed bytes are of table {signed.table_id!r} of client {signed.client!r}",
                    check="chain",
                    index=index,
                )
            if round_id is None:
                round_id = signed.round_id
            elif signed.round_id != round_id:
                break
            indexes.append(index)
            index = signed.table_prev
        tail = self.tails[chain] = Tail(round_id or "", indexes)  # the head's round
        return tail
