"""RFC 6962 known answers (tests/vectors/rfc6962/merkle_tree_vectors.json, sources in its README).

Checks the hashing, the reference MTH/PATH/PROOF definitions and the RFC 9162 verifiers of
:mod:`rng_service.log.merkle` against the upstream google/certificate-transparency and
transparency-dev/merkle tables.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rng_service.log import merkle

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "rfc6962" / "merkle_tree_vectors.json"


def _load() -> dict[str, Any]:
    source: dict[str, Any] = json.loads(VECTORS.read_text())["source"]
    return source


SOURCE = _load()
LEAVES = [bytes.fromhex(h) for h in SOURCE["leaf_inputs_hex"]]
LEAF_HASHES = [merkle.leaf_hash(d) for d in LEAVES]


def _h(values: list[str]) -> list[bytes]:
    return [bytes.fromhex(v) for v in values]


def test_empty_root() -> None:
    assert merkle.EMPTY_ROOT.hex() == SOURCE["empty_tree_root"]
    assert merkle.root_from_leaf_hashes([]) == merkle.EMPTY_ROOT


def test_prefixes_are_rfc6962() -> None:
    assert merkle.LEAF_PREFIX == b"\x00"
    assert merkle.NODE_PREFIX == b"\x01"


def test_leaf_hashes() -> None:
    assert [h.hex() for h in LEAF_HASHES] == SOURCE["node_hashes_by_level"]["level0_leaf_hashes"]


@pytest.mark.parametrize("level", [1, 2, 3])
def test_interior_node_hashes(level: int) -> None:
    below = _h(
        SOURCE["node_hashes_by_level"]["level0_leaf_hashes" if level == 1 else f"level{level - 1}"]
    )
    expected = SOURCE["node_hashes_by_level"][f"level{level}"]
    computed = [merkle.node_hash(below[i], below[i + 1]).hex() for i in range(0, len(below), 2)]
    assert computed == expected


@pytest.mark.parametrize(("size", "root"), sorted(SOURCE["roots_by_tree_size"].items()))
def test_root_by_size(size: str, root: str) -> None:
    assert merkle.root_from_leaf_hashes(LEAF_HASHES[: int(size)]).hex() == root


@pytest.mark.parametrize(
    "case",
    SOURCE["inclusion_proofs"],
    ids=lambda c: f"leaf{c['leaf_index']}-size{c['tree_size']}",
)
def test_inclusion_vector(case: dict[str, Any]) -> None:
    index, size = case["leaf_index"], case["tree_size"]
    leaf = merkle.leaf_hash(bytes.fromhex(case["leaf_input_hex"]))
    assert leaf == LEAF_HASHES[index]
    proof, root = _h(case["proof"]), bytes.fromhex(case["root"])
    assert merkle.inclusion_proof(LEAF_HASHES[:size], index) == proof
    merkle.verify_inclusion(leaf, index, size, proof, root)
    assert merkle.root_from_inclusion_proof(leaf, index, size, proof) == root
    # The same proof must not verify for the neighbouring leaf.
    with pytest.raises(merkle.ProofError):
        merkle.verify_inclusion(leaf, index ^ 1, size, proof, root)


@pytest.mark.parametrize(
    "case",
    SOURCE["consistency_proofs"],
    ids=lambda c: f"{c['size1']}-{c['size2']}",
)
def test_consistency_vector(case: dict[str, Any]) -> None:
    size1, size2 = case["size1"], case["size2"]
    proof = _h(case["proof"])
    root1, root2 = bytes.fromhex(case["root1"]), bytes.fromhex(case["root2"])
    assert merkle.consistency_proof(LEAF_HASHES[:size2], size1) == proof
    merkle.verify_consistency(size1, size2, proof, root1, root2)
    if size1 != size2:
        with pytest.raises(merkle.ProofError):
            merkle.verify_consistency(size1, size2, proof, root2, root1)
