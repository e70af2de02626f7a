"""RFC 6962 Merkle tree hashing and proof verification: the pure verification core.

Owns the hash functions of RFC 6962 section 2.1 (identical in RFC 9162 section 2.1): leaf hash
``SHA-256(0x00 || data)``, interior node hash ``SHA-256(0x01 || left || right)`` and the empty-tree
hash ``SHA-256("")``; the reference (simple recursive) definitions of MTH, PATH and
PROOF/SUBPROOF (RFC 6962 sections 2.1, 2.1.1, 2.1.2), used as the reference in tests and by the
offline verifier; and proof verification as specified in RFC 9162 section 2.1.3.2 (inclusion)
and section 2.1.4.2 (consistency).

Everything here is a pure function over bytes: no I/O, no storage, no clock. The service computes
proofs from stored nodes in :mod:`rng_service.writer.tree`; this module must stay small enough to be
audited on its own and shared with verifiers that never see the service.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from rng_service.errors import IntegrityError

__all__ = [
    "EMPTY_ROOT",
    "HASH_SIZE",
    "LEAF_PREFIX",
    "NODE_PREFIX",
    "ProofError",
    "consistency_proof",
    "inclusion_proof",
    "largest_power_of_two_below",
    "leaf_hash",
    "node_hash",
    "root_from_inclusion_proof",
    "root_from_leaf_hashes",
    "verify_consistency",
    "verify_inclusion",
]

LEAF_PREFIX = b"\x00"
"""Domain-separation prefix of a leaf hash (RFC 6962 section 2.1)."""
NODE_PREFIX = b"\x01"
"""Domain-separation prefix of an interior node hash (RFC 6962 section 2.1)."""
HASH_SIZE = 32
"""SHA-256 output size in bytes."""
EMPTY_ROOT = hashlib.sha256(b"").digest()
"""MTH({}) = SHA-256() (RFC 6962 section 2.1)."""


class ProofError(IntegrityError):
    """A Merkle inclusion or consistency proof does not verify. Never retried."""


def leaf_hash(data: bytes) -> bytes:
    """MTH({d0}) = SHA-256(0x00 || d0)."""
    return hashlib.sha256(LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """SHA-256(0x01 || left || right)."""
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def largest_power_of_two_below(n: int) -> int:
    """The largest power of two k with k < n (RFC 6962 section 2.1: "k < n <= 2k"); n >= 2."""
    if n < 2:
        raise ValueError(f"n must be at least 2, got {n}")
    return 1 << ((n - 1).bit_length() - 1)


# -- Reference definitions (RFC 6962 sections 2.1, 2.1.1, 2.1.2) -----------------------------
#
# These follow the recursive text of the RFC literally, over a list of leaf hashes. They cost
# O(n) hashes per call and are meant for tests and offline verification, not for the service.


def root_from_leaf_hashes(leaf_hashes: Sequence[bytes]) -> bytes:
    """MTH(D[n]) computed from the n leaf hashes (RFC 6962 section 2.1)."""
    n = len(leaf_hashes)
    if n == 0:
        return EMPTY_ROOT
    if n == 1:
        return leaf_hashes[0]
    k = largest_power_of_two_below(n)
    return node_hash(root_from_leaf_hashes(leaf_hashes[:k]), root_from_leaf_hashes(leaf_hashes[k:]))


def inclusion_proof(leaf_hashes: Sequence[bytes], index: int) -> list[bytes]:
    """PATH(m, D[n]) (RFC 6962 section 2.1.1), leaf-to-root order; ``index`` is 0-based."""
    n = len(leaf_hashes)
    if not 0 <= index < n:
        raise ValueError(f"index {index} is outside a tree of size {n}")
    if n == 1:
        return []
    k = largest_power_of_two_below(n)
    if index < k:
        return [
            *inclusion_proof(leaf_hashes[:k], index),
            root_from_leaf_hashes(leaf_hashes[k:]),
        ]
    return [
        *inclusion_proof(leaf_hashes[k:], index - k),
        root_from_leaf_hashes(leaf_hashes[:k]),
    ]


def consistency_proof(leaf_hashes: Sequence[bytes], m: int) -> list[bytes]:
    """PROOF(m, D[n]) (RFC 6962 section 2.1.2) between the first ``m`` leaves and all of them.

    An empty list for ``m == 0`` and for ``m == n`` (RFC 9162 section 2.1.4).
    """
    n = len(leaf_hashes)
    if not 0 <= m <= n:
        raise ValueError(f"size {m} is outside 0..{n}")
    if m in (0, n):
        return []
    return _subproof(m, leaf_hashes, True)


def _subproof(m: int, leaves: Sequence[bytes], complete: bool) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if complete else [root_from_leaf_hashes(leaves)]
    k = largest_power_of_two_below(n)
    if m <= k:
        return [*_subproof(m, leaves[:k], complete), root_from_leaf_hashes(leaves[k:])]
    return [*_subproof(m - k, leaves[k:], False), root_from_leaf_hashes(leaves[:k])]


# -- Verification (RFC 9162 sections 2.1.3.2 and 2.1.4.2) ------------------------------------


def _check_hash(value: bytes, what: str) -> None:
    if len(value) != HASH_SIZE:
        raise ProofError(f"{what} is {len(value)} bytes, expected {HASH_SIZE}")


def root_from_inclusion_proof(
    leaf_hash: bytes, index: int, size: int, proof: Sequence[bytes]
) -> bytes:
    """The root that ``proof`` implies for leaf ``index`` of a tree of ``size`` leaves.

    RFC 9162 section 2.1.3.2, steps 1-5 without the final comparison. Raises
    :class:`ProofError` if the proof cannot belong to such a tree (wrong length, bad index).
    """
    if size <= 0 or not 0 <= index < size:
        raise ProofError(f"leaf index {index} is outside a tree of size {size}")
    _check_hash(leaf_hash, "leaf hash")
    fn, sn = index, size - 1
    r = leaf_hash
    for position, p in enumerate(proof):
        _check_hash(p, f"inclusion proof element {position}")
        if sn == 0:
            raise ProofError(
                f"inclusion proof for leaf {index} of tree size {size} is too long "
                f"({len(proof)} hashes)"
            )
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError(
            f"inclusion proof for leaf {index} of tree size {size} is too short "
            f"({len(proof)} hashes)"
        )
    return r


def verify_inclusion(
    leaf_hash: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> None:
    """Checks that ``leaf_hash`` is leaf ``index`` of the tree of ``size`` with ``root``.

    RFC 9162 section 2.1.3.2. Returns None on success, raises :class:`ProofError` otherwise.
    """
    _check_hash(root, "root hash")
    computed = root_from_inclusion_proof(leaf_hash, index, size, proof)
    if computed != root:
        raise ProofError(
            f"inclusion proof for leaf {index} of tree size {size} does not lead to the "
            f"expected root: computed {computed.hex()}, expected {root.hex()}"
        )


def verify_consistency(
    size1: int, size2: int, proof: Sequence[bytes], root1: bytes, root2: bytes
) -> None:
    """Checks that the tree of ``size2`` with ``root2`` extends the one of ``size1``/``root1``.

    RFC 9162 section 2.1.4.2. The proof between equal sizes is empty and the roots must match;
    from the empty tree the proof is empty and ``root1`` must be :data:`EMPTY_ROOT`. Returns
    None on success, raises :class:`ProofError` otherwise.
    """
    _check_hash(root1, "first root hash")
    _check_hash(root2, "second root hash")
    for position, p in enumerate(proof):
        _check_hash(p, f"consistency proof element {position}")
    if not 0 <= size1 <= size2:
        raise ProofError(f"tree sizes must satisfy 0 <= size1 <= size2, got {size1}, {size2}")
    if size1 == size2 or size1 == 0:
        _check_trivial_consistency(size1, size2, proof, root1, root2)
        return
    if not proof:
        raise ProofError(f"consistency proof from size {size1} to {size2} is empty")
    fr, sr = _roots_from_consistency_proof(size1, size2, proof, root1)
    if fr != root1:
        raise ProofError(
            f"consistency proof does not lead to the first root for size {size1}: "
            f"computed {fr.hex()}, expected {root1.hex()}"
        )
    if sr != root2:
        raise ProofError(
            f"consistency proof does not lead to the second root for size {size2}: "
            f"computed {sr.hex()}, expected {root2.hex()}"
        )


def _check_trivial_consistency(
    size1: int, size2: int, proof: Sequence[bytes], root1: bytes, root2: bytes
) -> None:
    """Between equal sizes, or from the empty tree: an empty proof and the roots it implies."""
    if size1 == size2:
        if proof:
            raise ProofError(f"consistency proof between equal sizes {size1} must be empty")
        if root1 != root2:
            raise ProofError(f"roots differ for the same tree size {size1}")
        return
    if proof:
        raise ProofError("consistency proof from the empty tree must be empty")
    if root1 != EMPTY_ROOT:
        raise ProofError("first root is not the empty-tree root for size 0")


def _roots_from_consistency_proof(
    size1: int, size2: int, proof: Sequence[bytes], root1: bytes
) -> tuple[bytes, bytes]:
    """The two roots a non-empty ``proof`` implies for sizes 0 < ``size1`` < ``size2`` (RFC
    9162 section 2.1.4.2, steps 2-7 without the final comparisons)."""
    path = list(proof)
    # Step 2: if size1 is a power of two, the old root is itself the first node of the path.
    if size1 & (size1 - 1) == 0:
        path.insert(0, root1)
    fn, sn = size1 - 1, size2 - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError(
                f"consistency proof from size {size1} to {size2} is too long ({len(proof)} hashes)"
            )
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError(
            f"consistency proof from size {size1} to {size2} is too short ({len(proof)} hashes)"
        )
    return fr, sr
