"""The log's integrator: a pure function from the tree's state and a group's leaf hashes to
the new nodes, the new root and the group's inclusion proofs (RFC 6962 section 2.1: MTH, and
PATH of section 2.1.1), as Tessera integrates sequenced entries into its tree.

A tree of ``size`` leaves is described by its frontier: the complete subtrees, left to right,
whose hashes fold into its root. Node ``(level, i)`` covers leaves ``[i * 2**level,
(i + 1) * 2**level)`` and level 0 is the leaf hash. :func:`integrate` hashes only the new
leaves' paths to the frontier (amortised O(1) nodes per leaf); :func:`inclusion_proofs` needs
nothing but that frontier and the new nodes. No I/O, no lock, no state: the stored tree
(:mod:`rng_service.writer.tree`) calls these and keeps the results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rng_service.errors import InvalidArgument
from rng_service.log.merkle import HASH_SIZE, largest_power_of_two_below, node_hash
from rng_service.storage.base import NodeRecord

__all__ = [
    "Coord",
    "Frontier",
    "PendingAppend",
    "consistency_ranges",
    "decompose",
    "fold",
    "inclusion_proofs",
    "inclusion_ranges",
    "integrate",
]

Coord = tuple[int, int]
Frontier = tuple[tuple[int, int, bytes], ...]
"""A tree's complete subtrees, left to right, as ``(level, index, hash)``."""


@dataclass(frozen=True, slots=True)
class PendingAppend:
    """The result of :func:`integrate` (``MerkleTree.prepare``): what to store, and the tree
    after it."""

    start: int
    """Tree size the append continues."""
    size: int
    """Tree size after the append."""
    nodes: tuple[NodeRecord, ...]
    """New complete-subtree nodes to store with the entries (leaf hashes included)."""
    root: bytes
    """Root hash of the tree of ``size`` leaves."""
    frontier: Frontier = field(repr=False)
    owner: object = field(repr=False, compare=False)
    before: Frontier = field(default=(), repr=False, compare=False)
    """The frontier of the tree of ``start`` leaves (the proofs of the new leaves need it)."""


def decompose(lo: int, hi: int) -> list[Coord]:
    """The complete subtrees, left to right, whose fold is MTH(D[lo:hi]); ``lo`` is aligned."""
    coords: list[Coord] = []
    pos, remaining = lo, hi - lo
    for level in range(remaining.bit_length() - 1, -1, -1):
        if remaining >> level & 1:
            coords.append((level, pos >> level))
            pos += 1 << level
    return coords


def fold(hashes: Sequence[bytes]) -> bytes:
    """MTH of consecutive complete subtrees of decreasing size: H(c1, H(c2, ... cj))."""
    result = hashes[-1]
    for h in reversed(hashes[:-1]):
        result = node_hash(h, result)
    return result


def inclusion_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """Leaf ranges whose MTH form PATH(index, D[size]), leaf-to-root (RFC 6962 2.1.1)."""
    ranges: list[tuple[int, int]] = []
    lo, hi = 0, size
    while hi - lo > 1:
        # largest_power_of_two_below(hi - lo), inline: this runs O(log n) times per receipt
        k = 1 << ((hi - lo - 1).bit_length() - 1)
        if index < lo + k:
            ranges.append((lo + k, hi))
            hi = lo + k
        else:
            ranges.append((lo, lo + k))
            lo += k
    ranges.reverse()
    return ranges


def consistency_ranges(m: int, size: int) -> list[tuple[int, int]]:
    """Leaf ranges whose MTH form PROOF(m, D[size]) (RFC 6962 2.1.2), 0 < m < size."""
    descent: list[tuple[int, int]] = []
    lo, hi, complete = 0, size, True
    while True:
        n = hi - lo
        if m == n:
            first = [] if complete else [(lo, hi)]
            return first + descent[::-1]
        k = largest_power_of_two_below(n)
        if m <= k:
            descent.append((lo + k, hi))
            hi = lo + k
        else:
            descent.append((lo, lo + k))
            m -= k
            lo += k
            complete = False


def integrate(
    start: int, frontier: Frontier, root: bytes, leaf_hashes: Sequence[bytes], owner: object
) -> PendingAppend:
    """The tree of ``start`` leaves (its ``frontier`` and ``root``) after appending
    ``leaf_hashes``: the new complete-subtree nodes (leaf hashes included), the new frontier
    and the new root. ``owner``: the tree the result may be committed to."""
    for position, h in enumerate(leaf_hashes):
        if len(h) != HASH_SIZE:
            raise InvalidArgument(
                "leaf_hashes", f"element {position} is {len(h)} bytes, expected {HASH_SIZE}"
            )
    stack = list(frontier)
    nodes: list[NodeRecord] = []
    for offset, h in enumerate(leaf_hashes):
        level, index, value = 0, start + offset, h
        nodes.append(NodeRecord(level, index, value))
        while stack and stack[-1][0] == level:
            _, _, left = stack.pop()
            level, index, value = level + 1, index >> 1, node_hash(left, value)
            nodes.append(NodeRecord(level, index, value))
        stack.append((level, index, value))
    if leaf_hashes:
        root = fold([h for _, _, h in stack])
    return PendingAppend(
        start=start,
        size=start + len(leaf_hashes),
        nodes=tuple(nodes),
        root=root,
        frontier=tuple(stack),
        owner=owner,
        before=frontier,
    )


def inclusion_proofs(pending: PendingAppend, indices: Sequence[int]) -> list[list[bytes]]:
    """PATH(index, D[pending.size]) (RFC 6962 section 2.1.1) of each of the appended leaves
    ``indices``, from the appended tree's own nodes alone: every sibling of a new leaf is a
    node of the tree's frontier before the append (left of it) or a new node. Each range the
    proofs share is hashed once."""
    size = pending.size
    known: dict[Coord, bytes] = {(level, i): h for level, i, h in pending.before}
    for node in pending.nodes:
        known[(node.level, node.index)] = node.hash
    for index in indices:
        if not pending.start <= index < size:
            raise InvalidArgument(
                "indices", f"{index} is not one of the leaves appended, {pending.start}..{size - 1}"
            )
    per_index = [inclusion_ranges(index, size) for index in indices]
    hashes: dict[tuple[int, int], bytes] = {}
    for ranges in per_index:
        for r in ranges:
            if r not in hashes:
                hashes[r] = _range_hash(known, r)
    return [[hashes[r] for r in ranges] for ranges in per_index]


def _range_hash(known: Mapping[Coord, bytes], leaves: tuple[int, int]) -> bytes:
    return fold([known[c] for c in decompose(*leaves)])
