"""The export walk of ``rng-audit verify``: one streaming pass over an export's entries.

Owns the pass :func:`rng_service.audit.verify.verify_export` makes over the entries: each
line's index and leaf hash (RFC 6962 section 2.1, SHA-256(0x00 || entry)), the tree's right
edge and its root at every checkpoint's size (:class:`TreeCheck`), and with ``check_entries``
each entry's own bytes (:class:`EntryFields`: canonical form by the reference check of
:mod:`rng_service.audit.verify` through :class:`~rng_service.audit.fast_check.EntryChecker`,
the format's order, the (client, table) chains of :class:`ChainTracker` and the table map
roots format 3 entries commit to (:mod:`rng_service.audit.map_check`), the round rules of
:mod:`rng_service.audit.rounds_check`). docs/log-format.md, "Entries", "Slots and chains" and
"Table map".
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NoReturn

from rng_service.audit.export import ENTRY_FORMATS_HELD, ExportFormatError, ExportReader
from rng_service.audit.fast_check import EntryChecker, EntryShape
from rng_service.audit.map_check import (
    DIAGNOSE_LIMIT,
    HeadMap,
    chain_key,
    diagnose,
    head_leaf_hash,
)
from rng_service.audit.results import VerificationFailure, VerifiedHead, at
from rng_service.audit.rounds_check import RoundTracker
from rng_service.log.entry import EntryFormatError
from rng_service.log.merkle import EMPTY_ROOT, LEAF_PREFIX, NODE_PREFIX, node_hash
from rng_service.log.table_map import LEAF_PREFIX as _LEAF

_sha256 = hashlib.sha256
_U64_PAIR = struct.Struct(">QQ").pack

__all__ = ["ChainTracker", "EntryFields", "TreeCheck", "fold", "walk_entries"]


def fold(stack: Sequence[bytes]) -> bytes:
    """The root of a tree from its right edge (complete subtrees, largest first)."""
    if not stack:
        return EMPTY_ROOT
    root = stack[-1]
    for h in reversed(stack[:-1]):
        root = node_hash(h, root)
    return root


def _beyond(position: int, line: int, tree_size: int, covered: int) -> NoReturn:
    where = f"entry {position} (line {line})"
    if position >= tree_size:
        raise VerificationFailure(
            f"{where}: the export has more entries than the {tree_size} its header "
            f"declares: an entry was inserted",
            index=position,
        )
    raise VerificationFailure(
        f"{where}: no signed checkpoint covers it (the newest one is for tree size "
        f"{covered}): the entry cannot be verified, it may have been forged",
        index=position,
    )


def _chain_name(chain: tuple[bytes, bytes]) -> str:
    client, table = (json.loads(part) for part in chain)
    return f"table {table!r} of client {client!r}"


class ChainTracker:
    """Follows every (client, table) chain of a log read in index order, from its first entry
    (docs/log-format.md, "Slots and chains"): each chain starts at table_seq 1 and goes on by 1,
    each entry naming the chain's previous entry as its table_prev. From the first format 3
    entry on it also keeps the table map of the chains' heads (:class:`HeadMap`, built from
    every head then, format 2 entries' included) and checks the root each format 3 entry
    commits to (docs/log-format.md, "Table map"). Memory: three integers and a key per chain,
    and the map's nodes (about two per chain) once a format 3 entry was read."""

    def __init__(self) -> None:
        # chain -> [index, table_seq, table_prev, map key] of its last entry, updated in place
        # (one dict lookup an entry)
        self._heads: dict[tuple[bytes, bytes], list[Any]] = {}
        self._map: HeadMap | None = None
        self.roots = 0
        """How many committed table map roots were checked (one per format 3 entry)."""

    @property
    def chains(self) -> int:
        return len(self._heads)

    def add(self, position: int, line: int, shape: EntryShape) -> None:
        """The next format 2 or 3 entry; raises :class:`VerificationFailure` at a break or a
        wrong table map root."""
        chain, seq, prev = shape.chain, shape.seq, shape.prev
        if chain is None or seq is None:  # not reached: the caller passes format 2 shapes
            raise RuntimeError(f"entry {position} has no table chain")
        head = self._heads.get(chain)
        if head is None:
            if seq != 1:
                raise VerificationFailure(
                    f"{at(position, line)} is seq {seq} of the chain of {_chain_name(chain)} "
                    f"(its predecessor: entry {prev}), but the log has no earlier entry of that "
                    f"chain: {'seq 1 is' if seq == 2 else f'seq 1 to {seq - 1} are'} missing",
                    index=position,
                )
            head = self._heads[chain] = [position, seq, None, chain_key(*chain)]
            self._apply(position, line, shape, head)
            return
        if seq == 1:
            raise VerificationFailure(
                f"{at(position, line)} starts the chain of {_chain_name(chain)} again (seq 1), "
                f"but it already has seq {head[1]} at entry {head[0]}: the sequencer numbered "
                f"a table twice",
                index=position,
            )
        if seq != head[1] + 1 or prev != head[0]:
            raise VerificationFailure(
                f"{at(position, line)} is seq {seq} of the chain of {_chain_name(chain)} and "
                f"names entry {prev} as its predecessor, but the chain's previous entry is entry "
                f"{head[0]} (seq {head[1]}): the chain is broken",
                index=position,
            )
        head[0], head[1], head[2] = position, seq, prev
        self._apply(position, line, shape, head)

    def _apply(self, position: int, line: int, shape: EntryShape, head: list[Any]) -> None:
        """The entry's head into the map (once there is one), and a format 3 entry's committed
        root checked against it."""
        tables = self._map
        if tables is not None:
            key = head[3]
            tables.set(key, _sha256(_LEAF + key + _U64_PAIR(position, head[1])).digest())
        committed = shape.table_map
        if committed is None:
            return
        if tables is None:  # the first format 3 entry: the map of every head so far
            tables = self._map = HeadMap(
                (key, head_leaf_hash(key, index, seq))
                for index, seq, _, key in self._heads.values()
            )
        self.roots += 1
        if tables.root != committed:
            raise self._wrong_root(position, line, committed, head, tables)

    def _wrong_root(
        self, position: int, line: int, committed: bytes, head: list[Any], tables: HeadMap
    ) -> VerificationFailure:
        """A committed root that is not the map's: names the first table whose head differs,
        found by trying the entry's own table at its previous head (or absent), then each other
        table absent or at its previous head, newest head first (:func:`diagnose`)."""
        order = [head, *sorted((h for h in self._heads.values() if h is not head),
                               key=lambda h: -h[0])]  # fmt: skip
        chains = {id(h): c for c, h in self._heads.items()}
        tried: list[list[Any]] = []

        def candidates() -> Iterator[tuple[bytes, bytes, tuple[int, int] | None]]:
            for h in order:
                index, seq, prev, key = h
                leaf = head_leaf_hash(key, index, seq)
                before = None if seq == 1 else (prev, seq - 1)
                if h is not head:
                    tried.append(h)
                    yield key, leaf, None
                    if before is None:
                        continue
                tried.append(h)
                yield key, leaf, before

        found = diagnose(tables, committed, candidates())
        where = (
            f"{at(position, line)} commits the table map root {committed.hex()}, but the "
            f"heads of the entries up to it give {tables.root.hex()}"
        )
        if found is None:
            return VerificationFailure(
                f"{where}: no single table's head explains the difference (tried: this "
                f"entry's own table at its previous head, then every table absent or at its "
                f"previous head, newest first, at most {DIAGNOSE_LIMIT}): the committed root "
                f"is of another map",
                index=position,
            )
        h = tried[found[0]]
        instead = found[1]
        index, seq = h[0], h[1]
        committed_head = (
            "has no head for it" if instead is None
            else f"has its head at entry {instead[0]} (seq {instead[1]})"
        )  # fmt: skip
        own = " (this entry's own table: its head was not applied)" if h is head else ""
        return VerificationFailure(
            f"{where}: the first table whose head differs is {_chain_name(chains[id(h)])}"
            f"{own}: the committed root {committed_head}, the entries put it at entry {index} "
            f"(seq {seq})",
            index=position,
        )


class TreeCheck:
    """The RFC 6962 tree of the entries read so far (its right edge: the roots of the complete
    subtrees, largest first, one for each 1 bit of their number; RFC 6962 section 2.1) and its
    root at every checkpoint's size against the checkpoints of that size."""

    def __init__(self, by_size: dict[int, list[VerifiedHead]], want_sizes: Iterable[int]) -> None:
        self.by_size = by_size
        self.covered = max(by_size, default=0)
        """The newest checkpoint's size: no entry at or beyond it is signed."""
        self.check_at = set(by_size).union(want_sizes)
        self.roots: dict[int, bytes] = {}
        self.stack: list[bytes] = []
        self.size = 0
        self._last_ok = 0
        if 0 in self.check_at:
            self.check_root(0, EMPTY_ROOT)

    def root(self) -> bytes:
        return fold(self.stack)

    def check_root(self, size: int, root: bytes) -> None:
        """The root of the first ``size`` entries against every checkpoint of that size."""
        self.roots[size] = root
        for head in self.by_size.get(size, ()):
            if head.checkpoint.root_hash != root:
                raise VerificationFailure(
                    f"{head.source} (tree size {size}) does not match the entries: they hash "
                    f"to root {root.hex()}, the checkpoint says "
                    f"{head.checkpoint.root_hash.hex()}. An entry in [{self._last_ok}, {size}) "
                    f"was changed, inserted, deleted or reordered, or the checkpoint is from a "
                    f"fork (not consistent with the checkpoints before it)",
                    index=self._last_ok,
                )
        if size in self.by_size:
            self._last_ok = size


def walk_entries(
    reader: ExportReader,
    tree_size: int,
    tree: TreeCheck,
    fields: EntryFields | None,
    wanted: set[int],
) -> tuple[dict[int, bytes], bytes | None]:
    """Step 4 of ``verify_export``, the one pass over the entries: each line's index, its
    coverage by a checkpoint, its leaf hash and (with ``fields``) the entry itself; each leaf
    onto the tree's right edge, and the root at every size the tree checks. Returns the leaf
    hashes of the ``wanted`` indices and the newest entry's bytes (None if there is none).
    This loop is the verifier's hot path: its state stays in local variables."""
    leaves: dict[int, bytes] = {}
    stack = tree.stack
    check_at = tree.check_at
    limit = min(tree_size, tree.covered)
    sha256 = hashlib.sha256
    check_fields = None if fields is None else fields.check
    position = 0
    data: bytes | None = None
    for line, index, leaf_hash, data in reader.entry_rows():
        if index != position:
            raise VerificationFailure(
                f"entry {position} (line {line}): its index field is {index}, expected "
                f"{position}: entries were deleted, inserted or reordered",
                index=position,
            )
        if position >= limit:
            _beyond(position, line, tree_size, tree.covered)
        leaf = sha256(LEAF_PREFIX + data).digest()
        if leaf != leaf_hash:
            raise VerificationFailure(
                f"entry {position} (line {line}): leaf_hash {leaf_hash.hex()} is not "
                f"SHA-256(0x00 || entry) = {leaf.hex()}: the entry bytes were changed",
                index=position,
            )
        if check_fields is not None:
            check_fields(position, line, data)
        if position in wanted:
            leaves[position] = leaf
        # Push the leaf onto the right edge, merging equal-sized complete subtrees
        # (RFC 6962 section 2.1: MTH of a power-of-two range): one merge for each trailing
        # 1 bit of the leaf's index.
        value, bits = leaf, position
        while bits & 1:
            value = sha256(NODE_PREFIX + stack.pop() + value).digest()
            bits >>= 1
        stack.append(value)
        position += 1
        if position in check_at:
            tree.check_root(position, fold(stack))
    tree.size = position
    if position != tree_size:
        raise VerificationFailure(
            f"the export ends after {position} entries (line {reader.line}) but its header "
            f"declares {tree_size}: the export is truncated",
            index=position,
        )
    return leaves, data


class EntryFields:
    """Step 4's check of each entry's own bytes (``verify_export``'s ``check_entries``):
    canonical form and the fields of its format (:class:`EntryChecker`), its own index, a
    format that never goes back (from 3 to 2 or 1, from 2 to 1), the (client, table) chains of
    formats 2 and 3 and the table map roots of format 3 (:class:`ChainTracker`), and the round
    rules across the whole log (:class:`RoundTracker`)."""

    def __init__(self, export_format: str, reference: Callable[[bytes], dict[str, Any]]) -> None:
        self._inspect = EntryChecker(reference).inspect
        self._export_format = export_format
        self._export_holds = ENTRY_FORMATS_HELD[export_format]
        self._newest_version = 1
        self.chains = ChainTracker()
        self._chain = self.chains.add
        self._rounds = RoundTracker().add
        self.first_format_2: int | None = None
        """The first entry of format 2 or later: where the table chains start."""
        self.first_format_3: int | None = None
        """The first format 3 entry: where the committed table map roots start."""
        self._first_version = 0

    def check(self, position: int, line: int, data: bytes) -> None:
        try:
            shape = self._inspect(data)
        except EntryFormatError as e:
            raise VerificationFailure(
                f"entry {position} (line {line}): not a canonical entry ({e}): the entry "
                f"was changed",
                index=position,
            ) from e
        if shape[0] != position:
            raise VerificationFailure(
                f"entry {position} (line {line}): the entry's own index field says "
                f"{shape.entry_index}: it was moved or forged",
                index=position,
            )
        # The log's format never goes back: format 2 from the first format-2 entry on
        # (where every table chain starts; docs/log-format.md).
        version = shape[1]
        if version >= 2:
            if version > self._newest_version:
                self._newer_format(position, line, version)
            elif version == 2 and self.first_format_3 is not None:
                raise self._back(position, line, version, 3, self.first_format_3)
            self._chain(position, line, shape)
        elif self.first_format_2 is not None:
            raise self._back(position, line, version, self._first_version, self.first_format_2)
        self._rounds(position, line, shape, data)

    def _newer_format(self, position: int, line: int, version: int) -> None:
        """The first entry of format 2 (where the chains start) or of format 3 (where the map
        roots start); in a file of an export version that cannot hold it, bad input."""
        if version > self._export_holds:
            raise ExportFormatError(
                line, "entry", f"a format {version} entry in an {self._export_format} file"
            )
        if self.first_format_2 is None:
            self.first_format_2 = position
            self._first_version = version
        if version >= 3 and self.first_format_3 is None:
            self.first_format_3 = position
        self._newest_version = version

    @staticmethod
    def _back(
        position: int, line: int, version: int, newer: int, first: int
    ) -> VerificationFailure:
        return VerificationFailure(
            f"entry {position} (line {line}): a format {version} entry after the format "
            f"{newer} entry {first}: the log's entry format never goes back, so it was "
            "inserted or forged",
            index=position,
        )
