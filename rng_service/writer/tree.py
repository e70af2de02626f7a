"""The service's incremental RFC 6962 Merkle tree over stored complete-subtree nodes.

Owns the log's tree state (size, right-edge "frontier" of complete subtrees, root) and the
computation of roots and proofs at any size up to the current one (RFC 6962 section 2.1; MTH,
PATH and SUBPROOF of sections 2.1.1 and 2.1.2), with results identical to the reference
definitions in :mod:`rng_service.log.merkle`.

Storage keeps every complete-subtree node as ``NodeRecord(level, index, hash)``: node
``(level, i)`` covers leaves ``[i * 2**level, (i + 1) * 2**level)`` and level 0 is the leaf
hash. Every subtree that RFC 6962 hashes inside a tree of size ``n`` is either such a complete
node or a right-edge range whose hash folds a few complete nodes, so a root or proof costs
O(log n) node lookups and never rehashes the tree. An append hashes only the new leaves' path
to the frontier (amortised O(1) nodes per leaf); start-up reads the O(log n) frontier nodes.

Appends are two-phase because the storage transaction may fail: :meth:`MerkleTree.prepare`
computes the new nodes and root without changing anything (the pure
:func:`rng_service.writer.integrator.integrate`), and :meth:`MerkleTree.commit` adopts
them after the storage commit succeeded. When several writers (service replicas) share the
store, :meth:`MerkleTree.advance` adopts the larger tree another writer committed, after
checking that the store's tree begins with this one: it reads this tree's own frontier nodes
back from the store (not the cache) in the same request as the new ones, so a store that
was replaced by one with other entries (a failover to a standby that lacked some, which other
writers then appended to) is refused with :class:`StoreDiverged` instead of being mixed with
cached nodes into a forked tree. :meth:`MerkleTree.verify_stored` makes the same check at the
current size (after a reconnection).

Node lookups go through an in-process cache: all nodes at levels >= ``cache_min_level`` (a
2**-level fraction of the tree) plus an LRU of recent lower nodes, so that receipts for the
entries just committed cost no storage reads, and memory stays bounded (about 250 bytes per
cached node: some 50 MB for a 10**6-entry log with the defaults).

This module does no I/O itself: nodes come from an injected getter (``LogStorage.nodes``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from rng_service.errors import FailedPrecondition, IntegrityError, InvalidArgument, OutOfRange
from rng_service.log.merkle import EMPTY_ROOT, HASH_SIZE
from rng_service.writer.integrator import (
    Coord,
    PendingAppend,
    consistency_ranges,
    decompose,
    fold,
    inclusion_ranges,
    integrate,
)

__all__ = [
    "MerkleTree",
    "NodeGetter",
    "NodeSource",
    "PendingAppend",
    "StalePendingAppend",
    "StoreDiverged",
]

_Frontier = tuple[int, Sequence[tuple[int, int, bytes]]]  # a tree size and its frontier
NodeGetter = Callable[[Iterable[Coord]], dict[Coord, bytes]]
"""Returns the stored hashes of the requested ``(level, index)`` nodes (missing ones omitted)."""


class NodeSource(Protocol):
    """The part of :class:`~rng_service.storage.base.LogStorage` the tree loads from."""

    def tree_size(self) -> int: ...

    def nodes(self, coords: Iterable[Coord]) -> dict[Coord, bytes]: ...


class StalePendingAppend(FailedPrecondition):
    """A prepared append no longer continues the tree (another append was committed first)."""


class StoreDiverged(IntegrityError):
    """The store no longer holds the tree this process has seen (fewer entries, or other
    ones): appending to it, or signing a checkpoint of it, would fork the log."""


class MerkleTree:
    """The log's Merkle tree: thread-safe; one writer calls prepare/commit, anyone reads."""

    def __init__(
        self,
        *,
        size: int,
        get_nodes: NodeGetter,
        cache_min_level: int = 4,
        recent_nodes: int = 1 << 16,
    ) -> None:
        """Opens the tree of ``size`` leaves whose nodes ``get_nodes`` returns.

        Reads only the O(log size) frontier nodes; raises IntegrityError if one is missing.
        ``cache_min_level``: nodes at this level and above stay cached for good.
        ``recent_nodes``: capacity of the LRU cache of lower nodes (recent entries' paths).
        """
        if size < 0:
            raise InvalidArgument("size", f"{size} is negative", allowed=">= 0")
        if cache_min_level < 0:
            raise InvalidArgument("cache_min_level", "must not be negative", allowed=">= 0")
        if recent_nodes < 0:
            raise InvalidArgument("recent_nodes", "must not be negative", allowed=">= 0")
        self._get_nodes = get_nodes
        self._cache_min_level = cache_min_level
        self._recent_capacity = recent_nodes
        self._lock = threading.Lock()
        self._permanent: dict[Coord, bytes] = {}
        self._recent: OrderedDict[Coord, bytes] = OrderedDict()
        coords = decompose(0, size)
        hashes = self._fetch(coords)
        self._size = size
        self._frontier: tuple[tuple[int, int, bytes], ...] = tuple(
            (level, index, hashes[(level, index)]) for level, index in coords
        )
        self._root = fold([h for _, _, h in self._frontier]) if size else EMPTY_ROOT

    @classmethod
    def load(
        cls, storage: NodeSource, *, cache_min_level: int = 4, recent_nodes: int = 1 << 16
    ) -> MerkleTree:
        """The tree of everything ``storage`` holds (no rehashing: state = stored nodes)."""
        return cls(
            size=storage.tree_size(),
            get_nodes=storage.nodes,
            cache_min_level=cache_min_level,
            recent_nodes=recent_nodes,
        )

    def __repr__(self) -> str:
        return f"MerkleTree(size={self._size}, root={self._root.hex()})"

    @property
    def size(self) -> int:
        with self._lock:
            return self._size

    def cached_nodes(self) -> int:
        """How many node hashes the cache holds now (for memory accounting and tests)."""
        with self._lock:
            return len(self._permanent) + len(self._recent)

    # -- appending -------------------------------------------------------------------------

    def prepare(self, leaf_hashes: Sequence[bytes]) -> PendingAppend:
        """The nodes and root after appending ``leaf_hashes`` (:func:`integrate`); changes
        nothing."""
        with self._lock:
            start, frontier, root = self._size, self._frontier, self._root
        return integrate(start, frontier, root, leaf_hashes, self)

    def commit(self, pending: PendingAppend) -> None:
        """Adopts a prepared append once its nodes are durably stored.

        If :meth:`advance` already took the tree to ``pending.size`` or beyond (a reader saw
        the stored append first), only the new nodes are cached.
        """
        with self._lock:
            if pending.owner is not self or not (
                pending.start == self._size or pending.size <= self._size
            ):
                raise StalePendingAppend(
                    f"prepared append continues tree size {pending.start}, but the tree has "
                    f"{self._size} leaves (or belongs to another tree); prepare it again"
                )
            if pending.start == self._size:
                self._size = pending.size
                self._frontier = pending.frontier
                self._root = pending.root
            for node in pending.nodes:
                self._remember((node.level, node.index), node.hash)

    def advance(self, size: int) -> bool:
        """Adopts the stored tree of ``size`` leaves, appended by another writer of the store.

        Several service replicas share one log: each one's tree lags behind what the others
        committed. Reads the O(log size) frontier nodes of the new size (complete subtrees
        are immutable, so every cached node stays valid). A ``size`` not above the tree's is
        ignored (it may have been read before a later commit); returns whether the tree grew.
        """
        if size < 0:
            raise InvalidArgument("size", f"{size} is negative", allowed=">= 0")
        with self._lock:
            if size <= self._size:
                return False
            own_size, own = self._size, self._frontier
        coords = decompose(0, size)
        # This tree's frontier is read back from the store in the same request: the new size
        # must extend this tree, not another one (StoreDiverged otherwise).
        hashes = self._hashes(coords, extends=(own_size, own))
        frontier = tuple((level, index, hashes[(level, index)]) for level, index in coords)
        root = fold([h for _, _, h in frontier])
        with self._lock:
            if size <= self._size:  # someone else advanced it meanwhile
                return False
            self._size = size
            self._frontier = frontier
            self._root = root
        return True

    def verify_stored(self) -> None:
        """Checks that the store still holds this tree: reads its O(log n) frontier nodes from
        the store, not the cache; raises :class:`StoreDiverged` if they differ or are missing
        (then the store's first ``size`` entries are not the ones this tree was built from)."""
        with self._lock:
            size, own = self._size, self._frontier
        coords = [(level, index) for level, index, _ in own]
        try:
            got = self._get_nodes(coords)
        except IntegrityError as e:
            raise StoreDiverged(str(e)) from e
        _check_frontier(size, own, got)

    # -- reading ---------------------------------------------------------------------------

    def _check_size(self, size: int | None) -> int:
        current = self.size
        if size is None:
            return current
        if not 0 <= size <= current:
            raise OutOfRange(f"tree size {size} is outside 0..{current} (the current size)")
        return size

    def root(self, size: int | None = None) -> bytes:
        """MTH of the first ``size`` leaves (default: all)."""
        with self._lock:
            if size is None or size == self._size:
                return self._root
        size = self._check_size(size)
        if size == 0:
            return EMPTY_ROOT
        return self._range_hashes([(0, size)])[0]

    def leaf_hash(self, index: int) -> bytes:
        """The stored leaf hash of entry ``index``."""
        size = self.size
        if not 0 <= index < size:
            raise OutOfRange(f"leaf index {index} is outside a tree of size {size}")
        return self._hashes([(0, index)])[(0, index)]

    def leaf_hashes(self, indices: Sequence[int]) -> list[bytes]:
        """The stored leaf hashes (level-0 nodes) of ``indices``, in one read of the store
        for those the cache lacks. What is read here is not cached: a page of old entries
        (an export paging through the log) must not push out the recent entries' nodes that
        receipts use."""
        size = self.size
        for index in indices:
            if not 0 <= index < size:
                raise OutOfRange(f"leaf index {index} is outside a tree of size {size}")
        found: dict[Coord, bytes] = {}
        missing: list[Coord] = []
        with self._lock:
            frontier = {(level, index): h for level, index, h in self._frontier}
            for index in indices:
                c = (0, index)
                value = frontier.get(c) or self._permanent.get(c) or self._recent.get(c)
                if value is None:
                    missing.append(c)
                else:
                    found[c] = value
        if missing:
            wanted = list(dict.fromkeys(missing))
            found.update(_checked(wanted, self._get_nodes(wanted)))
        return [found[(0, index)] for index in indices]

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        """PATH(index, D[size]) (RFC 6962 section 2.1.1), leaf-to-root; size defaults to all."""
        size = self._check_size(size)
        if not 0 <= index < size:
            raise OutOfRange(f"leaf index {index} is outside a tree of size {size}")
        return self._range_hashes(inclusion_ranges(index, size))

    def leaf_and_inclusion_proof(self, index: int, size: int) -> tuple[bytes, list[bytes]]:
        """The stored leaf hash of ``index`` and PATH(index, D[size]), in one read of the
        store for the nodes the cache lacks (a replay checks the leaf against its row and
        returns the proof: one read instead of two)."""
        size = self._check_size(size)
        if not 0 <= index < size:
            raise OutOfRange(f"leaf index {index} is outside a tree of size {size}")
        decomposed = [decompose(lo, hi) for lo, hi in inclusion_ranges(index, size)]
        found = self._hashes([(0, index), *(c for coords in decomposed for c in coords)])
        return found[(0, index)], [fold([found[c] for c in coords]) for coords in decomposed]

    def inclusion_proofs(
        self, indices: Sequence[int], size: int | None = None
    ) -> list[list[bytes]]:
        """``inclusion_proof`` for many indices at one size, hashing each shared range once.

        The receipts of a commit group are proofs of neighbouring leaves at one size: they
        share most of their ranges, so this costs about one proof plus two hashes a leaf.
        """
        size = self._check_size(size)
        for index in indices:
            if not 0 <= index < size:
                raise OutOfRange(f"leaf index {index} is outside a tree of size {size}")
        per_index = [inclusion_ranges(index, size) for index in indices]
        unique = list(dict.fromkeys(r for ranges in per_index for r in ranges))
        hashes = dict(zip(unique, self._range_hashes(unique), strict=True))
        return [[hashes[r] for r in ranges] for ranges in per_index]

    def consistency_proof(self, size1: int, size2: int | None = None) -> list[bytes]:
        """PROOF(size1, D[size2]) (RFC 6962 section 2.1.2); empty if size1 is 0 or size2."""
        size2 = self._check_size(size2)
        if not 0 <= size1 <= size2:
            raise OutOfRange(f"tree sizes must satisfy 0 <= size1 <= size2, got {size1}, {size2}")
        if size1 in (0, size2):
            return []
        return self._range_hashes(consistency_ranges(size1, size2))

    def _range_hashes(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        decomposed = [decompose(lo, hi) for lo, hi in ranges]
        found = self._hashes([c for coords in decomposed for c in coords])
        return [fold([found[c] for c in coords]) for coords in decomposed]

    # -- node cache ------------------------------------------------------------------------

    def _remember(self, coord: Coord, value: bytes) -> None:
        # Caller holds the lock.
        if coord[0] >= self._cache_min_level:
            self._permanent[coord] = value
        elif self._recent_capacity:
            self._recent[coord] = value
            self._recent.move_to_end(coord)
            while len(self._recent) > self._recent_capacity:
                self._recent.popitem(last=False)

    def _hashes(
        self, coords: Sequence[Coord], *, extends: _Frontier | None = None
    ) -> dict[Coord, bytes]:
        """The hashes of ``coords``, from the cache where it has them. With ``extends`` (a
        tree size and its frontier), the store must hold that frontier: its nodes are read
        in the same request whatever the cache holds, and checked (:class:`StoreDiverged`)
        before anything read is cached."""
        found: dict[Coord, bytes] = {}
        missing: list[Coord] = []
        with self._lock:
            frontier = {(level, index): h for level, index, h in self._frontier}
            for c in coords:
                if c in found:
                    continue
                value = frontier.get(c) or self._permanent.get(c)
                if value is None:
                    value = self._recent.get(c)
                    if value is not None:
                        self._recent.move_to_end(c)
                if value is None:
                    missing.append(c)
                else:
                    found[c] = value
        own = [] if extends is None else [(level, index) for level, index, _ in extends[1]]
        if not missing and not own:
            return found
        fetched = self._get_nodes(list(dict.fromkeys([*missing, *own])))
        if extends is not None:
            _check_frontier(extends[0], extends[1], fetched)
        needed = _checked(missing, fetched)
        with self._lock:
            for c, value in needed.items():
                self._remember(c, value)
        found.update(needed)
        return found

    def _fetch(self, coords: Sequence[Coord]) -> dict[Coord, bytes]:
        wanted = list(dict.fromkeys(coords))
        if not wanted:
            return {}
        return _checked(wanted, self._get_nodes(wanted))


def _check_frontier(
    size: int, own: Sequence[tuple[int, int, bytes]], stored: dict[Coord, bytes]
) -> None:
    for level, index, value in own:
        found = stored.get((level, index))
        if found != value:
            what = "lacks" if found is None else "holds another"
            raise StoreDiverged(
                f"the log store {what} Merkle node (level {level}, index {index}) of the "
                f"tree of {size} entries this service has seen: its entries are not the ones "
                "acknowledged (a failover to a server that lacked some?); refusing to sign "
                "a fork"
            )


def _checked(wanted: Sequence[Coord], got: dict[Coord, bytes]) -> dict[Coord, bytes]:
    """``got``'s hashes of ``wanted``; IntegrityError if one is missing or malformed."""
    absent = [c for c in wanted if c not in got]
    if absent:
        raise IntegrityError(
            f"log storage lacks {len(absent)} Merkle node(s) the tree needs, e.g. "
            f"(level, index) {absent[0]}: the stored tree is incomplete or corrupt"
        )
    bad = [c for c in wanted if len(got[c]) != HASH_SIZE]
    if bad:
        raise IntegrityError(f"stored Merkle node {bad[0]} is not a {HASH_SIZE}-byte hash")
    return {c: got[c] for c in wanted}
