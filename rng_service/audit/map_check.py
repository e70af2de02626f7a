"""The table map of ``rng-audit verify``: rebuilt from an export's entries, each root checked.

Owns :class:`HeadMap`, the verifier's incremental copy of the map of table heads
(docs/log-format.md, "Table map": a sparse Merkle tree over SHA-256 keys with single-leaf
subtrees collapsed), with the hashes of :mod:`rng_service.log.table_map`: setting or removing
one head costs O(depth) hashes. It is built from the heads the export walk follows
(:class:`rng_service.audit.walk.ChainTracker`) at the first format 3 entry and updated by every
entry after it, and it names the first table whose head differs when a committed root is not
the map's (:func:`diagnose`). tests/unit/audit/test_map_check.py holds it to the reference
``map_root`` and to the independent reader in tests/reader/.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Iterator
from typing import Any

from rng_service.log.table_map import EMPTY, KEY_PREFIX, LEAF_PREFIX, NODE_PREFIX

__all__ = ["DIAGNOSE_LIMIT", "HeadMap", "chain_key", "diagnose", "head_leaf_hash"]

_sha256 = hashlib.sha256
_U64_PAIR = struct.Struct(">QQ").pack

DIAGNOSE_LIMIT = 100_000
"""At most this many tables (the newest heads first) are tried by :func:`diagnose`."""


def chain_key(client: bytes, table: bytes) -> bytes:
    """The map key of a chain from its client and table id as canonical JSON strings (the
    bytes an entry holds, quotes included): ``SHA-256(0x04 || canonical_json([client,
    table]))``, since the canonical JSON of an array of two strings is the two strings between
    ``[`` and ``]`` with a comma."""
    return _sha256(KEY_PREFIX + b"[" + client + b"," + table + b"]").digest()


def head_leaf_hash(key: bytes, index: int, seq: int) -> bytes:
    """``L(K, index, seq) = SHA-256(0x02 || K || u64be(index) || u64be(seq))``."""
    return _sha256(LEAF_PREFIX + key + _U64_PAIR(index, seq)).digest()


# Nodes: None (an empty subtree), a leaf (a tuple: its key, None, its leaf hash) or a branch
# (a list: left child, right child, its hash; a branch holds at least two leaves, as the
# definition's collapsed single-leaf subtrees require). A node's hash is its item 2 either way.
_Node = Any


def _hash(node: _Node) -> bytes:
    if node is None:
        return EMPTY
    h: bytes = node[2]
    return h


class HeadMap:
    """The map of table heads, kept incrementally: :meth:`set` and :meth:`remove` recompute
    only the path of one key (O(depth) hashes, depth about log2 of the number of tables), and
    :attr:`root` is then known. Its shape depends only on the set of keys, so a remove undoes
    a set of a new key and a set of the old value undoes a change.

    The path of each key set is kept (for up to ``PATHS`` keys, about 15 pointers a key at 10^4
    tables), so that a changed head, the common case, costs its hashes and no descent. A path
    changes only when a leaf moves: the leaf a new key splits from moves down, the leaf left
    alone by a removal moves up; those two forget theirs."""

    PATHS = 1 << 16

    __slots__ = ("_paths", "_root", "root")

    def __init__(self, leaves: Iterable[tuple[bytes, bytes]] = ()) -> None:
        self._root: _Node = None
        self._paths: dict[bytes, list[tuple[list[Any], int]]] = {}
        self.root: bytes = EMPTY
        """The map's root hash."""
        for key, leaf in leaves:
            self.set(key, leaf)

    def get(self, key: bytes) -> bytes | None:
        """The leaf hash held for ``key``, or None."""
        node, depth = self._root, 0
        while type(node) is list:
            node = node[(key[depth >> 3] >> (7 - (depth & 7))) & 1]
            depth += 1
        if node is None or node[0] != key:
            return None
        leaf: bytes = node[2]
        return leaf

    def set(self, key: bytes, leaf: bytes) -> None:
        """Holds ``leaf`` (a head's leaf hash) for ``key``, a new key or a changed head."""
        up = self._paths.get(key)
        if up is not None:
            self._rehash(up, (key, None, leaf), leaf)
            return
        path = []
        node, depth = self._root, 0
        while type(node) is list:
            bit = (key[depth >> 3] >> (7 - (depth & 7))) & 1
            path.append((node, bit))
            node = node[bit]
            depth += 1
        if node is not None and node[0] != key:
            # Another key's leaf: branches down to the first bit where the keys differ.
            other = node[0]
            self._paths.pop(other, None)  # its leaf moves down
            while True:
                shift = 7 - (depth & 7)
                bit = (key[depth >> 3] >> shift) & 1
                branch = [None, None, EMPTY]
                path.append((branch, bit))
                if bit != (other[depth >> 3] >> shift) & 1:
                    branch[1 - bit] = node
                    break
                depth += 1
        path.reverse()
        self._rehash(path, (key, None, leaf), leaf)
        if len(self._paths) < self.PATHS:
            self._paths[key] = path

    def remove(self, key: bytes) -> None:
        """Removes ``key``'s head, if held; a branch left with one leaf becomes that leaf."""
        path = []
        node, depth = self._root, 0
        while type(node) is list:
            bit = (key[depth >> 3] >> (7 - (depth & 7))) & 1
            path.append((node, bit))
            node = node[bit]
            depth += 1
        if node is None or node[0] != key:
            return
        self._paths.pop(key, None)
        child: _Node = None
        while path:
            branch, bit = path[-1]
            sibling = branch[1 - bit]
            if type(sibling) is list or (child is not None and sibling is not None):
                break
            child = child if sibling is None else sibling  # one leaf left below: it is the node
            path.pop()
        if child is not None:
            self._paths.pop(child[0], None)  # the leaf left alone moves up (or stays)
        path.reverse()
        self._rehash(path, child, _hash(child))

    def _rehash(self, up: list[tuple[list[Any], int]], child: _Node, value: bytes) -> None:
        """Puts ``child`` (hash ``value``) under the first branch of ``up`` (a path from the
        deepest branch up to the root: (branch, which child)) and recomputes the hashes of the
        path's branches up to the root."""
        sha256, empty, node = _sha256, EMPTY, NODE_PREFIX
        for branch, bit in up:
            branch[bit] = child
            sibling = branch[1 - bit]
            other = empty if sibling is None else sibling[2]
            value = sha256(node + other + value if bit else node + value + other).digest()
            branch[2] = value
            child = branch
        self._root = child
        self.root = value

    def __iter__(self) -> Iterator[tuple[bytes, bytes]]:
        """The (key, leaf hash) pairs held, in key order."""
        stack = [self._root]
        while stack:
            node = stack.pop()
            if type(node) is list:
                stack.append(node[1])
                stack.append(node[0])
            elif node is not None:
                yield node[0], node[2]


def diagnose(
    tables: HeadMap,
    committed: bytes,
    candidates: Iterable[tuple[bytes, bytes, tuple[int, int] | None]],
    *,
    limit: int = DIAGNOSE_LIMIT,
) -> tuple[int, tuple[int, int] | None] | None:
    """Which single table's head, changed, gives the ``committed`` root: tries each candidate
    (its key, its head's leaf hash in ``tables``, and the head to try instead: (index, seq), or
    None for the table's absence) in the order given, at most ``limit`` of them, and returns
    the position of the first that explains it and its head, or None. ``tables`` is left as it
    was. Each try costs two paths of hashes (the change and its undo)."""
    for n, (key, leaf, instead) in enumerate(candidates):
        if n >= limit:
            break
        if instead is None:
            tables.remove(key)
        else:
            tables.set(key, head_leaf_hash(key, *instead))
        found = tables.root == committed
        tables.set(key, leaf)
        if found:
            return n, instead
    return None
