"""Behaviour of :mod:`rng_service.log.merkle`: verifiers against the recursive reference.

For every tree size up to 256 (seeded leaves, so deterministic): every inclusion proof and every
consistency proof produced by the RFC 6962 reference verifies with the RFC 9162 verifiers, and
tampered proofs (changed hash or root, wrong index, truncated, extended) are rejected.
"""

from __future__ import annotations

import random

import pytest

from rng_service.errors import IntegrityError
from rng_service.log import merkle
from rng_service.log.merkle import ProofError

MAX_SIZE = 256


def _leaves(n: int, seed: int = 6962) -> list[bytes]:
    rng = random.Random(seed)
    return [merkle.leaf_hash(rng.randbytes(rng.randrange(0, 40))) for _ in range(n)]


LEAVES = _leaves(MAX_SIZE)
PREFIX_ROOTS = [merkle.root_from_leaf_hashes(LEAVES[:n]) for n in range(MAX_SIZE + 1)]


def _flip(h: bytes, bit: int = 0) -> bytes:
    return bytes([h[0] ^ (1 << bit)]) + h[1:]


def test_proof_error_is_integrity_error() -> None:
    assert issubclass(ProofError, IntegrityError)


def test_root_of_one_leaf_is_the_leaf_hash() -> None:
    assert merkle.root_from_leaf_hashes([LEAVES[0]]) == LEAVES[0]


def test_root_matches_explicit_structure_for_five() -> None:
    a, b, c, d, e = LEAVES[:5]
    expected = merkle.node_hash(merkle.node_hash(merkle.node_hash(a, b), merkle.node_hash(c, d)), e)
    assert merkle.root_from_leaf_hashes(LEAVES[:5]) == expected


@pytest.mark.parametrize(("n", "k"), [(2, 1), (3, 2), (4, 2), (5, 4), (8, 4), (9, 8), (256, 128)])
def test_largest_power_of_two_below(n: int, k: int) -> None:
    assert merkle.largest_power_of_two_below(n) == k


def test_all_inclusion_proofs_up_to_256() -> None:
    rng = random.Random(1)
    for n in range(1, MAX_SIZE + 1):
        leaves, root = LEAVES[:n], PREFIX_ROOTS[n]
        for i in range(n):
            proof = merkle.inclusion_proof(leaves, i)
            assert len(proof) <= n.bit_length()
            merkle.verify_inclusion(leaves[i], i, n, proof, root)
        i = rng.randrange(n)
        proof = merkle.inclusion_proof(leaves, i)
        _assert_inclusion_tampering_fails(leaves[i], i, n, proof, root)


def _assert_inclusion_tampering_fails(
    leaf: bytes, i: int, n: int, proof: list[bytes], root: bytes
) -> None:
    with pytest.raises(ProofError):
        merkle.verify_inclusion(_flip(leaf), i, n, proof, root)
    with pytest.raises(ProofError):
        merkle.verify_inclusion(leaf, i, n, proof, _flip(root))
    for j in range(len(proof)):
        bad = [*proof[:j], _flip(proof[j], 3), *proof[j + 1 :]]
        with pytest.raises(ProofError):
            merkle.verify_inclusion(leaf, i, n, bad, root)
    if proof:
        with pytest.raises(ProofError):
            merkle.verify_inclusion(leaf, i, n, proof[:-1], root)
    with pytest.raises(ProofError):
        merkle.verify_inclusion(leaf, i, n, [*proof, root], root)
    if n > 1:
        with pytest.raises(ProofError):
            merkle.verify_inclusion(leaf, (i + 1) % n, n, proof, root)


def test_all_consistency_proofs_up_to_256() -> None:
    rng = random.Random(2)
    for n in range(1, MAX_SIZE + 1):
        leaves = LEAVES[:n]
        for m in range(n + 1):
            proof = merkle.consistency_proof(leaves, m)
            merkle.verify_consistency(m, n, proof, PREFIX_ROOTS[m], PREFIX_ROOTS[n])
        m = rng.randrange(1, n + 1)
        proof = merkle.consistency_proof(leaves, m)
        _assert_consistency_tampering_fails(m, n, proof)


def _assert_consistency_tampering_fails(m: int, n: int, proof: list[bytes]) -> None:
    r1, r2 = PREFIX_ROOTS[m], PREFIX_ROOTS[n]
    with pytest.raises(ProofError):
        merkle.verify_consistency(m, n, proof, _flip(r1), r2)
    with pytest.raises(ProofError):
        merkle.verify_consistency(m, n, proof, r1, _flip(r2))
    for j in range(len(proof)):
        bad = [*proof[:j], _flip(proof[j], 5), *proof[j + 1 :]]
        with pytest.raises(ProofError):
            merkle.verify_consistency(m, n, bad, r1, r2)
    if proof:
        with pytest.raises(ProofError):
            merkle.verify_consistency(m, n, proof[:-1], r1, r2)
    with pytest.raises(ProofError):
        merkle.verify_consistency(m, n, [*proof, r2], r1, r2)


@pytest.mark.parametrize(
    ("size1", "size2", "proof_len", "root1", "root2"),
    [
        (0, 0, 0, merkle.EMPTY_ROOT, merkle.EMPTY_ROOT),
        (0, 5, 0, merkle.EMPTY_ROOT, PREFIX_ROOTS[5]),
        (3, 3, 0, PREFIX_ROOTS[3], PREFIX_ROOTS[3]),
    ],
)
def test_trivial_consistency_accepted(
    size1: int, size2: int, proof_len: int, root1: bytes, root2: bytes
) -> None:
    merkle.verify_consistency(size1, size2, [LEAVES[0]] * proof_len, root1, root2)


@pytest.mark.parametrize(
    ("size1", "size2", "proof", "root1", "root2", "message"),
    [
        (3, 3, [], PREFIX_ROOTS[3], PREFIX_ROOTS[4], "roots differ"),
        (3, 3, [LEAVES[0]], PREFIX_ROOTS[3], PREFIX_ROOTS[3], "must be empty"),
        (0, 5, [], PREFIX_ROOTS[1], PREFIX_ROOTS[5], "empty-tree root"),
        (0, 5, [LEAVES[0]], merkle.EMPTY_ROOT, PREFIX_ROOTS[5], "must be empty"),
        (4, 3, [], PREFIX_ROOTS[4], PREFIX_ROOTS[3], "size1 <= size2"),
        (3, 5, [], PREFIX_ROOTS[3], PREFIX_ROOTS[5], "is empty"),
        (3, 5, [b"short"], PREFIX_ROOTS[3], PREFIX_ROOTS[5], "expected 32"),
        (3, 5, [], b"", PREFIX_ROOTS[5], "expected 32"),
    ],
)
def test_bad_consistency_inputs(
    size1: int, size2: int, proof: list[bytes], root1: bytes, root2: bytes, message: str
) -> None:
    with pytest.raises(ProofError, match=message):
        merkle.verify_consistency(size1, size2, proof, root1, root2)


@pytest.mark.parametrize(
    ("index", "size", "proof", "message"),
    [
        (0, 0, [], "outside a tree of size 0"),
        (5, 5, [], "outside"),
        (-1, 5, [], "outside"),
        (0, 4, [LEAVES[1]], "too short"),
        (0, 1, [LEAVES[1]], "too long"),
        (0, 2, [b"x" * 31], "expected 32"),
    ],
)
def test_bad_inclusion_inputs(index: int, size: int, proof: list[bytes], message: str) -> None:
    with pytest.raises(ProofError, match=message):
        merkle.verify_inclusion(LEAVES[0], index, size, proof, PREFIX_ROOTS[max(size, 0)])


def test_reference_rejects_out_of_range() -> None:
    with pytest.raises(ValueError, match="outside"):
        merkle.inclusion_proof(LEAVES[:3], 3)
    with pytest.raises(ValueError, match="outside"):
        merkle.consistency_proof(LEAVES[:3], 4)
