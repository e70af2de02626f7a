"""The committed map of table heads: a sparse Merkle tree over (client, table) chains.

Owns the map's byte-level hashing (docs/log-format.md, "Table map"): the key
``SHA-256(0x04 || canonical_json([client_id, table_id]))``, the head leaf
``SHA-256(0x02 || key || u64be(index) || u64be(seq))``, the node ``SHA-256(0x03 || left ||
right)`` and the empty subtree (32 zero bytes), with single-leaf subtrees collapsed into the leaf
(the construction of Diem/Aptos' sparse Merkle tree, domain-separated from RFC 6962's 0x00/0x01).
It holds the reference root (:func:`map_root`, straight from the definition), the incremental
map the writer keeps (:class:`TableMap`: a set and its root cost O(depth) hashes, a copy O(1))
and proofs of presence and absence with their verification. Pure: no store, no clock.
"""

from __future__ import annotations

import functools
import hashlib
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from rng_service import canonical
from rng_service.errors import IntegrityError

__all__ = [
    "EMPTY",
    "KEY_PREFIX",
    "LEAF_PREFIX",
    "MAX_DEPTH",
    "NODE_PREFIX",
    "MapHead",
    "MapProof",
    "MapProofError",
    "TableMap",
    "head_leaf",
    "map_key",
    "map_root",
    "node_hash",
    "verify_map_proof",
]

KEY_PREFIX = b"\x04"
"""Domain prefix of a chain's key (RFC 6962 uses 0x00 and 0x01)."""
LEAF_PREFIX = b"\x02"
"""Domain prefix of a head leaf."""
NODE_PREFIX = b"\x03"
"""Domain prefix of an interior node."""
EMPTY = bytes(32)
"""The hash of an empty subtree, and the root of the empty map."""
MAX_DEPTH = 256
"""Bits of a key: no proof has more siblings."""

_U64 = 1 << 64
_U64_PAIR = struct.Struct(">QQ").pack
_sha256 = hashlib.sha256


class MapProofError(IntegrityError):
    """A map proof that does not prove what it claims against the root it is checked with."""


def map_key(client_id: str, table_id: str) -> bytes:
    """The 32-byte key of the (client, table) chain: SHA-256(0x04 || RFC 8785 canonical JSON
    of ``[client_id, table_id]``). ValueError for what is not a string of Unicode text."""
    return _key_of(client_id, table_id)[0]


def _key_of(client_id: str, table_id: str) -> tuple[bytes, int, bytes]:
    """The chain's key, its bits as an integer, and the start of its head leaf's hashed bytes
    (``0x02 || key``)."""
    if type(client_id) is not str or type(table_id) is not str:
        raise ValueError("a map key is made of two strings (client_id, table_id)")
    return _cached_key(client_id, table_id)


@functools.lru_cache(maxsize=1 << 15)
def _cached_key(client_id: str, table_id: str) -> tuple[bytes, int, bytes]:
    """Cached: the writer sets the heads of the same tables over and over (a pure function
    of the two strings; ValueError, never cached, for text that is not Unicode)."""
    key = _sha256(KEY_PREFIX + canonical.dumps([client_id, table_id])).digest()
    return key, int.from_bytes(key, "big"), LEAF_PREFIX + key


def head_leaf(key: bytes, index: int, seq: int) -> bytes:
    """The leaf of a chain's head: SHA-256(0x02 || key || u64be(index) || u64be(seq))."""
    if type(key) is not bytes or len(key) != 32:
        raise ValueError("a map key is 32 bytes")
    _check_u64("index", index)
    _check_u64("seq", seq)
    return _sha256(LEAF_PREFIX + key + _U64_PAIR(index, seq)).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """An interior node: SHA-256(0x03 || left || right)."""
    return _sha256(NODE_PREFIX + left + right).digest()


def _check_u64(name: str, value: object) -> None:
    if type(value) is not int or not 0 <= value < _U64:
        raise ValueError(f"map head {name} must be an integer from 0 to 2^64 - 1, not {value!r}")


def _bit(key_int: int, depth: int) -> int:
    """Bit ``depth`` of a key (bit 0 the most significant bit of byte 0)."""
    return (key_int >> (255 - depth)) & 1


@dataclass(frozen=True, slots=True)
class MapHead:
    """A chain's head: the log index of its newest entry and that entry's ``table_seq``."""

    client_id: str
    table_id: str
    index: int
    seq: int


@dataclass(frozen=True, slots=True)
class MapProof:
    """A proof about one chain against a map root.

    ``siblings``: 32-byte hashes from the deepest (the terminal's sibling) up to the root's
    child. The terminal is, for a proof of presence, the chain's own ``head``; for an absence
    at another chain's leaf (``absent_other``), that chain's ``other_key``, ``other_index``
    and ``other_seq``; for an absence at an empty subtree (``absent_empty``), EMPTY (``head``
    and ``other_key`` both None).
    """

    siblings: tuple[bytes, ...]
    head: MapHead | None = None
    other_key: bytes | None = None
    other_index: int | None = None
    other_seq: int | None = None

    @property
    def kind(self) -> str:
        """``present``, ``absent_other`` or ``absent_empty``."""
        if self.head is not None:
            return "present"
        return "absent_empty" if self.other_key is None else "absent_other"


def _terminal(key: bytes, client_id: str, table_id: str, proof: MapProof) -> bytes:
    """The hash the proof's path starts from; MapProofError for an inconsistent proof."""
    head, other = proof.head, proof.other_key
    depth = len(proof.siblings)
    if head is not None:
        if other is not None or proof.other_index is not None or proof.other_seq is not None:
            raise MapProofError("a proof of presence carries no other chain's leaf")
        if type(head) is not MapHead or (head.client_id, head.table_id) != (client_id, table_id):
            raise MapProofError(
                f"the proof is of another chain's head, not of ({client_id!r}, {table_id!r})"
            )
        return head_leaf(key, head.index, head.seq)
    if other is None:
        if proof.other_index is not None or proof.other_seq is not None:
            raise MapProofError("an absence at an empty subtree carries no other leaf")
        return EMPTY
    if type(other) is not bytes or len(other) != 32:
        raise MapProofError("the other chain's key must be 32 bytes")
    if other == key:
        raise MapProofError("a proof of absence names the chain's own key as the other leaf")
    shared = 256 - (int.from_bytes(other, "big") ^ int.from_bytes(key, "big")).bit_length()
    if shared < depth:
        raise MapProofError(
            f"the other leaf's key agrees with the chain's key on {shared} bits, not on the "
            f"{depth} bits of its place in the tree"
        )
    if proof.other_index is None or proof.other_seq is None:
        raise MapProofError("an absence at another chain's leaf needs its index and seq")
    return head_leaf(other, proof.other_index, proof.other_seq)


def verify_map_proof(root: bytes, client_id: str, table_id: str, proof: MapProof) -> MapHead | None:
    """Checks ``proof`` for the chain (client_id, table_id) against ``root``: the proven head,
    or None for a proven absence. Raises :class:`MapProofError` if it proves neither."""
    if type(root) is not bytes or len(root) != 32:
        raise MapProofError("a map root is 32 bytes")
    siblings = proof.siblings
    if len(siblings) > MAX_DEPTH:
        raise MapProofError(f"a map proof has at most {MAX_DEPTH} siblings, not {len(siblings)}")
    if any(type(s) is not bytes or len(s) != 32 for s in siblings):
        raise MapProofError("every sibling of a map proof is 32 bytes")
    try:
        key = map_key(client_id, table_id)
        h = _terminal(key, client_id, table_id, proof)
    except ValueError as e:
        raise MapProofError(f"malformed map proof: {e}") from e
    key_int = int.from_bytes(key, "big")
    count = len(siblings)
    for i, sibling in enumerate(siblings):
        h = node_hash(sibling, h) if _bit(key_int, count - 1 - i) else node_hash(h, sibling)
    if h != root:
        raise MapProofError(
            f"the map proof ({proof.kind}) for ({client_id!r}, {table_id!r}) leads to root "
            f"{h.hex()}, not to {root.hex()}"
        )
    return proof.head


def map_root(heads: Iterable[MapHead]) -> bytes:
    """The root of the map holding ``heads``, straight from the definition (the reference)."""
    leaves: dict[bytes, bytes] = {}
    for h in heads:
        key = map_key(h.client_id, h.table_id)
        if key in leaves:
            raise ValueError(f"two heads for the chain ({h.client_id!r}, {h.table_id!r})")
        leaves[key] = head_leaf(key, h.index, h.seq)

    def subtree(keys: list[bytes], depth: int) -> bytes:
        if not keys:
            return EMPTY
        if len(keys) == 1:
            return leaves[keys[0]]
        zero = [k for k in keys if not _bit(int.from_bytes(k, "big"), depth)]
        one = [k for k in keys if _bit(int.from_bytes(k, "big"), depth)]
        return node_hash(subtree(zero, depth + 1), subtree(one, depth + 1))

    return subtree(list(leaves), 0)


class _Leaf:
    """A collapsed single-leaf subtree: one chain's head (immutable once made; its hash is
    kept by its parent, see :data:`_Tree`)."""

    __slots__ = ("client_id", "index", "key", "key_int", "seq", "table_id")

    def __init__(self, key: bytes, key_int: int, client_id: str, table_id: str, index: int,
                 seq: int) -> None:  # fmt: skip
        self.key, self.key_int = key, key_int
        self.client_id, self.table_id, self.index, self.seq = client_id, table_id, index, seq

    @property
    def head(self) -> MapHead:
        """The chain's head (made on demand: a set makes none)."""
        return MapHead(self.client_id, self.table_id, self.index, self.seq)


# A subtree is None (empty), a _Leaf, or a branch: the tuple (left, right, left_hash,
# right_hash), with at least two leaves below it. A subtree's own hash is kept by its parent
# (the root's by the map), so a level of a path costs one SHA-256 and one tuple, without a
# test of what the sibling is. Tuples, not objects with an __init__: a set rebuilds about 11
# of them at 1,000 tables, and node objects (and a MapHead per set) made a set and its root
# 13.5 us instead of 9.7 (docs/performance.md, "What the table map costs"). Branches are
# immutable and shared between copies.
_Branch = tuple["_Tree", "_Tree", bytes, bytes]
_Tree = _Branch | _Leaf | None


def _join(a: _Leaf, hash_a: bytes, b: _Leaf, hash_b: bytes, depth: int) -> tuple[_Branch, bytes]:
    """The subtree at ``depth`` holding the two leaves (their keys differ), and its hash."""
    bit_a = _bit(a.key_int, depth)
    if bit_a != _bit(b.key_int, depth):
        if bit_a:
            a, hash_a, b, hash_b = b, hash_b, a, hash_a
        return (a, b, hash_a, hash_b), _sha256(NODE_PREFIX + hash_a + hash_b).digest()
    child, h = _join(a, hash_a, b, hash_b, depth + 1)
    if bit_a:
        return (None, child, EMPTY, h), _sha256(NODE_PREFIX + EMPTY + h).digest()
    return (child, None, h, EMPTY), _sha256(NODE_PREFIX + h + EMPTY).digest()


def _rehash_path(node: _Tree, h: bytes, path: list[tuple[_Branch, int]]) -> tuple[_Tree, bytes]:
    """The root (and its hash) after ``node`` (hash ``h``) replaced the subtree at the end of
    ``path`` (the branches from the root down, with the bit taken at each): one node a level,
    the unchanged sibling's hash taken from the old branch."""
    sha256, prefix = _sha256, NODE_PREFIX
    for branch, bit in reversed(path):
        if bit:
            left_hash = branch[2]
            node = (branch[0], node, left_hash, h)
            h = sha256(prefix + left_hash + h).digest()
        else:
            right_hash = branch[3]
            node = (node, branch[1], h, right_hash)
            h = sha256(prefix + h + right_hash).digest()
    return node, h


class TableMap:
    """The incremental map of table heads. Nodes are immutable and shared between copies:
    :meth:`set` rebuilds one path (O(depth) hashes, the root included), :meth:`copy` is O(1)."""

    __slots__ = ("_count", "_root", "_root_hash")

    def __init__(self, heads: Iterable[MapHead] = ()) -> None:
        self._root: _Tree = None
        self._root_hash = EMPTY
        self._count = 0
        for h in heads:
            if not self._set(h.client_id, h.table_id, h.index, h.seq):
                raise ValueError(f"two heads for the chain ({h.client_id!r}, {h.table_id!r})")

    def set(self, client_id: str, table_id: str, index: int, seq: int) -> None:
        """Makes (index, seq) the head of the chain (client_id, table_id)."""
        self._set(client_id, table_id, index, seq)

    def _set(self, client_id: str, table_id: str, index: int, seq: int) -> bool:
        """:meth:`set`; True if the chain is new to the map."""
        _check_u64("index", index)
        _check_u64("seq", seq)
        key, key_int, leaf_prefix = _key_of(client_id, table_id)
        leaf = _Leaf(key, key_int, client_id, table_id, index, seq)
        leaf_hash = _sha256(leaf_prefix + _U64_PAIR(index, seq)).digest()
        path: list[tuple[_Branch, int]] = []
        node, found_hash, depth = self._root, self._root_hash, 0
        while isinstance(node, tuple):
            bit = (key_int >> (255 - depth)) & 1
            path.append((node, bit))
            node, found_hash = (node[1], node[3]) if bit else (node[0], node[2])
            depth += 1
        added = node is None or node.key != key
        new: _Tree = leaf
        h = leaf_hash
        if node is not None and added:  # another chain's leaf: split down to where they differ
            new, h = _join(node, found_hash, leaf, leaf_hash, depth)
        self._root, self._root_hash = _rehash_path(new, h, path)
        self._count += added
        return added

    def _find(self, key_int: int) -> tuple[list[bytes], _Leaf | None]:
        """The siblings' hashes (root's child first) of the path to the place of the key
        ``key_int``, and what is there: None, the chain's leaf, or another chain's."""
        siblings: list[bytes] = []
        node = self._root
        depth = 0
        while isinstance(node, tuple):
            if _bit(key_int, depth):
                siblings.append(node[2])
                node = node[1]
            else:
                siblings.append(node[3])
                node = node[0]
            depth += 1
        return siblings, node

    def head(self, client_id: str, table_id: str) -> MapHead | None:
        """The chain's head, None if the map has none."""
        key, key_int, _ = _key_of(client_id, table_id)
        _, found = self._find(key_int)
        return found.head if found is not None and found.key == key else None

    def root(self) -> bytes:
        """The map's root (kept up to date by :meth:`set`)."""
        return self._root_hash

    def prove(self, client_id: str, table_id: str) -> MapProof:
        """The proof of the chain's head, or of its absence, against :meth:`root`."""
        key, key_int, _ = _key_of(client_id, table_id)
        siblings, found = self._find(key_int)
        path = tuple(reversed(siblings))
        if found is None:
            return MapProof(siblings=path)
        if found.key == key:
            return MapProof(siblings=path, head=found.head)
        return MapProof(
            siblings=path, other_key=found.key, other_index=found.index, other_seq=found.seq
        )

    def heads(self) -> list[MapHead]:
        """Every head, in the order of their keys."""
        out: list[MapHead] = []
        stack: list[_Tree] = [self._root]
        while stack:
            node = stack.pop()
            if isinstance(node, tuple):
                stack.append(node[1])
                stack.append(node[0])
            elif node is not None:
                out.append(node.head)
        return out

    def copy(self) -> TableMap:
        """An independent map with the same heads (nodes are shared: O(1))."""
        twin = TableMap()
        twin._root, twin._root_hash, twin._count = self._root, self._root_hash, self._count
        return twin

    def __len__(self) -> int:
        return self._count
