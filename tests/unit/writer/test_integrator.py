"""The writer's integrator (``rng_service.writer.integrator``): a pure function from a tree's
frontier and a group's leaf hashes to the new nodes, root and the group's inclusion proofs.

Known answers from two independent sources: the upstream RFC 6962 vectors of
tests/vectors/rfc6962/ (google/certificate-transparency, transparency-dev/merkle), and the
simple recursive definitions of RFC 6962 sections 2.1 and 2.1.1 in ``rng_service.log.merkle``
(MTH and PATH over the whole leaf list, sharing no code with the integrator's frontier walk).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rng_service.errors import InvalidArgument
from rng_service.log import merkle
from rng_service.writer.integrator import PendingAppend, inclusion_proofs, integrate

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "rfc6962" / "merkle_tree_vectors.json"
SOURCE: dict[str, Any] = json.loads(VECTORS.read_text())["source"]
VECTOR_LEAVES = [merkle.leaf_hash(bytes.fromhex(h)) for h in SOURCE["leaf_inputs_hex"]]
LEAVES = [merkle.leaf_hash(i.to_bytes(4, "big")) for i in range(140)]


def _after(leaves: list[bytes], start: int, count: int) -> PendingAppend:
    """The tree of ``start`` leaves (integrated from the empty tree), then ``count`` more."""
    before = integrate(0, (), merkle.EMPTY_ROOT, leaves[:start], owner=None)
    return integrate(start, before.frontier, before.root, leaves[start : start + count], None)


@pytest.mark.parametrize("vector", SOURCE["inclusion_proofs"], ids=lambda v: str(v["leaf_index"]))
def test_upstream_inclusion_proofs(vector: dict[str, Any]) -> None:
    """Every upstream PATH(m, D[n]), as the proof of leaf m appended in a group ending at n."""
    index, size = vector["leaf_index"], vector["tree_size"]
    pending = _after(VECTOR_LEAVES, index, size - index)
    assert pending.root.hex() == vector["root"]
    assert [h.hex() for h in inclusion_proofs(pending, [index])[0]] == vector["proof"]


@pytest.mark.parametrize("size", range(1, len(VECTOR_LEAVES) + 1))
def test_upstream_roots(size: int) -> None:
    expected = SOURCE["roots_by_tree_size"][str(size)]
    for start in range(size):
        assert _after(VECTOR_LEAVES, start, size - start).root.hex() == expected


@pytest.mark.parametrize("count", [1, 2, 3, 5, 8, 17, 32, 33])
def test_every_group_against_the_reference(count: int) -> None:
    """For every start up to 100: the root, the new nodes and every appended leaf's proof
    equal RFC 6962's recursive definitions over the whole leaf list."""
    for start in range(101):
        size = start + count
        pending = _after(LEAVES, start, count)
        assert (pending.start, pending.size) == (start, size)
        assert pending.root == merkle.root_from_leaf_hashes(LEAVES[:size])
        for node in pending.nodes:
            lo, hi = node.index << node.level, (node.index + 1) << node.level
            assert node.hash == merkle.root_from_leaf_hashes(LEAVES[lo:hi]), (start, node)
        indices = list(range(start, size))
        proofs = inclusion_proofs(pending, indices)
        assert proofs == [merkle.inclusion_proof(LEAVES[:size], i) for i in indices], start


def test_proofs_only_for_the_appended_leaves() -> None:
    pending = _after(LEAVES, 10, 4)
    for index in (9, 14):
        with pytest.raises(InvalidArgument, match="indices"):
            inclusion_proofs(pending, [index])


def test_leaf_hashes_of_the_wrong_size_are_refused() -> None:
    with pytest.raises(InvalidArgument, match="element 1 is 31 bytes"):
        integrate(0, (), merkle.EMPTY_ROOT, [LEAVES[0], b"\0" * 31], None)
