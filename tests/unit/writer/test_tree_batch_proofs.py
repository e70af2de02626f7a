"""MerkleTree.inclusion_proofs: the group form of inclusion_proof gives the same proofs."""

from __future__ import annotations

import hashlib

import pytest

from rng_service.errors import OutOfRange
from rng_service.log.merkle import inclusion_proof
from rng_service.storage.memory import MemoryStorage
from rng_service.writer.tree import MerkleTree


def _leaves(n: int) -> list[bytes]:
    return [hashlib.sha256(b"leaf %d" % i).digest() for i in range(n)]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 8, 33, 100])
def test_group_proofs_equal_single_proofs_and_the_reference(size: int) -> None:
    store = MemoryStorage()
    tree = MerkleTree.load(store)
    leaves = _leaves(size)
    pending = tree.prepare(leaves)
    tree.commit(pending)
    indices = list(range(size))
    group = tree.inclusion_proofs(indices, size)
    assert group == [tree.inclusion_proof(i, size) for i in indices]
    assert group == [inclusion_proof(leaves, i) for i in indices]
    smaller = max(1, size // 2)
    assert tree.inclusion_proofs([0, smaller - 1], smaller) == [
        inclusion_proof(leaves[:smaller], 0),
        inclusion_proof(leaves[:smaller], smaller - 1),
    ]


def test_group_proofs_reject_indices_outside_the_tree() -> None:
    tree = MerkleTree.load(MemoryStorage())
    tree.commit(tree.prepare(_leaves(4)))
    with pytest.raises(OutOfRange):
        tree.inclusion_proofs([0, 4], 4)
