"""Conformance of the service's MerkleTree over a real LogStorage (MemoryStorage) to RFC 6962.

Adds to tests/unit/writer/test_tree.py (which checks the tree over a bare node dict: reference
equality up to size 70, verification up to 256): the upstream known answers of
tests/vectors/rfc6962/ served by a MerkleTree whose nodes went through ``LogStorage.append``,
before and after reloading it from storage; and for EVERY size up to 260, appended in random
batch sizes, roots, every inclusion proof and every consistency proof equal to the simple
recursive definitions of RFC 6962 sections 2.1, 2.1.1 and 2.1.2 (``merkle`` reference
functions) and verifying with the RFC 9162 section 2.1.3.2 / 2.1.4.2 verifiers.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from rng_service.log import merkle
from rng_service.storage.base import EntryRecord
from rng_service.storage.memory import MemoryStorage
from rng_service.writer.tree import MerkleTree

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "rfc6962" / "merkle_tree_vectors.json"
SOURCE: dict[str, Any] = json.loads(VECTORS.read_text())["source"]
VECTOR_LEAVES = [merkle.leaf_hash(bytes.fromhex(h)) for h in SOURCE["leaf_inputs_hex"]]
MAX_SIZE = 260


def _append(storage: MemoryStorage, tree: MerkleTree, leaf_hashes: Sequence[bytes]) -> None:
    """One group commit as the appender does it: prepare, store entries and nodes, commit."""
    start = tree.size
    pending = tree.prepare(leaf_hashes)
    entries = [
        EntryRecord(
            index=start + i, data=b"", leaf_hash=h, client_id="c", request_id=f"r{start + i}",
            request_digest=b"", kind="k", table_id="t", round_id="r", session_id="",
            timestamp_ns=0, commit_size=pending.size, slot=f"s{start + i}",
            table_seq=start + i + 1,
        )
        for i, h in enumerate(leaf_hashes)
    ]  # fmt: skip
    storage.append(entries, pending.nodes)
    tree.commit(pending)


def _vector_tree(batches: Sequence[int]) -> tuple[MemoryStorage, MerkleTree]:
    storage = MemoryStorage()
    tree = MerkleTree.load(storage)
    done = 0
    for b in batches:
        _append(storage, tree, VECTOR_LEAVES[done : done + b])
        done += b
    assert done == len(VECTOR_LEAVES)
    return storage, tree


@pytest.mark.parametrize("batches", [(1,) * 8, (3, 5), (8,), (2, 1, 4, 1)])
@pytest.mark.parametrize("reload", [False, True])
def test_vectors_through_storage(batches: tuple[int, ...], reload: bool) -> None:
    storage, tree = _vector_tree(batches)
    if reload:
        tree = MerkleTree.load(storage)
    assert tree.root(0).hex() == SOURCE["empty_tree_root"]
    for size, root in SOURCE["roots_by_tree_size"].items():
        assert tree.root(int(size)).hex() == root
    for case in SOURCE["inclusion_proofs"]:
        proof = tree.inclusion_proof(case["leaf_index"], case["tree_size"])
        assert [p.hex() for p in proof] == case["proof"]
        assert tree.leaf_hash(case["leaf_index"]) == merkle.leaf_hash(
            bytes.fromhex(case["leaf_input_hex"])
        )
    for case in SOURCE["consistency_proofs"]:
        proof = tree.consistency_proof(case["size1"], case["size2"])
        assert [p.hex() for p in proof] == case["proof"]
        assert tree.root(case["size1"]).hex() == case["root1"]
        assert tree.root(case["size2"]).hex() == case["root2"]


@pytest.fixture
def memoized_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """Memoizes MTH inside the reference functions (same recursive definitions, keyed by the
    leaves themselves), so that comparing every proof up to size 260 stays fast."""
    original = merkle.root_from_leaf_hashes  # its recursion goes through the patched name
    cached = functools.lru_cache(maxsize=None)(lambda leaves: original(list(leaves)))
    monkeypatch.setattr(merkle, "root_from_leaf_hashes", lambda leaves: cached(tuple(leaves)))


@pytest.mark.usefixtures("memoized_reference")
@pytest.mark.parametrize("seed", [6962, 9162])
def test_every_size_up_to_260_equals_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    leaves = [merkle.leaf_hash(rng.randbytes(rng.randrange(0, 40))) for _ in range(MAX_SIZE)]
    storage = MemoryStorage()
    tree = MerkleTree.load(storage)
    while tree.size < MAX_SIZE:
        batch = rng.choice([1, 1, 2, 3, 4, 7, 8, 9, 16, 31, 64])
        _append(storage, tree, leaves[tree.size : tree.size + batch])
        if rng.random() < 0.2:  # restart from stored nodes now and then
            tree = MerkleTree.load(storage, recent_nodes=rng.choice([0, 16, 1 << 16]))
    roots = [merkle.root_from_leaf_hashes(leaves[:n]) for n in range(MAX_SIZE + 1)]
    assert roots[0] == merkle.EMPTY_ROOT
    for n in range(MAX_SIZE + 1):
        assert tree.root(n) == roots[n]
        prefix = leaves[:n]
        for i in range(n):
            proof = tree.inclusion_proof(i, n)
            assert proof == merkle.inclusion_proof(prefix, i), (i, n)
            merkle.verify_inclusion(leaves[i], i, n, proof, roots[n])
        for m in range(n + 1):
            proof = tree.consistency_proof(m, n)
            assert proof == merkle.consistency_proof(prefix, m), (m, n)
            merkle.verify_consistency(m, n, proof, roots[m], roots[n])
