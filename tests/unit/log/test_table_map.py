"""The map of table heads (rng_service.log.table_map): the incremental root against the
reference definition, and proofs of presence and absence, honest and tampered."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from typing import Any

import pytest

from rng_service.errors import IntegrityError
from rng_service.log.table_map import (
    EMPTY,
    MapHead,
    MapProof,
    MapProofError,
    TableMap,
    head_leaf,
    map_key,
    map_root,
    verify_map_proof,
)


def _independent_key(client: str, table: str) -> bytes:
    """The key from docs/log-format.md with the standard library's JSON (no control
    characters or non-ASCII here, where it writes RFC 8785's bytes)."""
    text = json.dumps([client, table], separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(b"\x04" + text.encode()).digest()


def test_key_and_leaf_bytes_are_those_of_the_definition() -> None:
    key = map_key("default", "T1")
    assert key == hashlib.sha256(b'\x04["default","T1"]').digest()
    assert key == _independent_key("default", "T1")
    leaf = head_leaf(key, 7, 3)
    assert leaf == hashlib.sha256(b"\x02" + key + bytes(7) + b"\x07" + bytes(7) + b"\x03").digest()


@pytest.mark.parametrize("bad", [-1, 2**64, True, "1"])
def test_a_head_must_fit_u64(bad: object) -> None:
    with pytest.raises(ValueError, match="index"):
        head_leaf(bytes(32), bad, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seq"):
        TableMap().set("c", "t", 1, bad)  # type: ignore[arg-type]


def test_empty_and_single_head_roots() -> None:
    assert TableMap().root() == EMPTY == map_root([])
    m = TableMap()
    m.set("c", "t", 5, 1)
    assert m.root() == head_leaf(map_key("c", "t"), 5, 1) == map_root([MapHead("c", "t", 5, 1)])


def _names(rnd: random.Random, tables: int) -> tuple[str, str]:
    return rnd.choice(["default", "lab", "c\u00e9"]), f"T{rnd.randrange(tables)}"


@pytest.mark.parametrize("seed", range(40))
def test_incremental_root_equals_the_reference_after_random_sets(seed: int) -> None:
    rnd = random.Random(seed)
    m = TableMap()
    reference: dict[tuple[str, str], MapHead] = {}
    tables = rnd.choice([1, 3, 20, 200])
    for index in range(rnd.randrange(1, 120)):
        client, table = _names(rnd, tables)
        old = reference.get((client, table))
        seq = 1 if old is None else old.seq + 1
        m.set(client, table, index, seq)
        reference[(client, table)] = MapHead(client, table, index, seq)
        if rnd.random() < 0.2 or index < 3:
            assert m.root() == map_root(reference.values())
            assert len(m) == len(reference)
    assert m.root() == map_root(reference.values())
    assert sorted(m.heads(), key=lambda h: (h.client_id, h.table_id)) == sorted(
        reference.values(), key=lambda h: (h.client_id, h.table_id)
    )
    # The root depends on the heads, not on the order they were set in.
    shuffled = list(reference.values())
    rnd.shuffle(shuffled)
    assert TableMap(shuffled).root() == m.root()


def test_a_copy_is_independent() -> None:
    m = TableMap([MapHead("c", f"T{i}", i, 1) for i in range(10)])
    before = m.root()
    twin = m.copy()
    assert twin.root() == before  # the copy's root is the map's, before any set
    assert twin.heads() == m.heads()
    twin.set("c", "T3", 11, 2)
    twin.set("c", "new", 12, 1)
    assert m.root() == before
    assert len(m) == 10
    assert m.head("c", "T3") == MapHead("c", "T3", 3, 1)
    assert twin.root() != before
    assert len(twin) == 11
    assert twin.root() == map_root(twin.heads())


def test_two_heads_for_one_chain_are_refused() -> None:
    heads = [MapHead("c", "t", 1, 1), MapHead("c", "t", 2, 2)]
    with pytest.raises(ValueError, match="two heads"):
        TableMap(heads)
    with pytest.raises(ValueError, match="two heads"):
        map_root(heads)


def _map_with_every_kind(seed: int) -> tuple[TableMap, list[tuple[str, str]]]:
    """A map, and chains of it and not in it whose proofs cover the three kinds."""
    rnd = random.Random(seed)
    m = TableMap()
    for i in range(rnd.randrange(2, 60)):
        m.set("c", f"T{rnd.randrange(40)}", i, 1 + i)
    probes = [("c", f"T{i}") for i in range(80)]
    return m, probes


@pytest.mark.parametrize("seed", range(10))
def test_proofs_of_every_kind_verify(seed: int) -> None:
    m, probes = _map_with_every_kind(seed)
    root = m.root()
    kinds = set()
    for client, table in probes:
        proof = m.prove(client, table)
        kinds.add(proof.kind)
        proven = verify_map_proof(root, client, table, proof)
        assert proven == m.head(client, table)
        if proof.kind == "absent_other":
            assert proof.other_key != map_key(client, table)
    assert kinds == {"present", "absent_empty", "absent_other"}


def test_proofs_in_the_empty_and_one_head_maps() -> None:
    empty = TableMap()
    proof = empty.prove("c", "t")
    assert proof == MapProof(siblings=())
    assert verify_map_proof(EMPTY, "c", "t", proof) is None
    one = TableMap([MapHead("c", "t", 4, 2)])
    assert verify_map_proof(one.root(), "c", "t", one.prove("c", "t")) == MapHead("c", "t", 4, 2)
    other = one.prove("c", "u")
    assert other.kind == "absent_other"
    assert other.siblings == ()
    assert verify_map_proof(one.root(), "c", "u", other) is None


def _proofs(kind: str) -> tuple[bytes, str, str, MapProof]:
    for seed in range(50):
        m, probes = _map_with_every_kind(seed)
        for client, table in probes:
            proof = m.prove(client, table)
            if proof.kind == kind and proof.siblings:
                return m.root(), client, table, proof
    raise AssertionError(f"no {kind} proof with siblings")


def _flip(b: bytes, bit: int = 0) -> bytes:
    return bytes([b[0] ^ (0x80 >> bit)]) + b[1:]


_KINDS = ["present", "absent_empty", "absent_other"]


@pytest.mark.parametrize("kind", _KINDS)
@pytest.mark.parametrize("where", ["deepest", "top"])
def test_a_flipped_sibling_is_refused(kind: str, where: str) -> None:
    root, client, table, proof = _proofs(kind)
    s = list(proof.siblings)
    at = 0 if where == "deepest" else len(s) - 1
    s[at] = _flip(s[at], 7)
    with pytest.raises(MapProofError, match="leads to root"):
        verify_map_proof(root, client, table, dataclasses.replace(proof, siblings=tuple(s)))


@pytest.mark.parametrize("kind", _KINDS)
def test_too_many_or_too_few_siblings_are_refused(kind: str) -> None:
    root, client, table, proof = _proofs(kind)
    longer = dataclasses.replace(proof, siblings=(EMPTY, *proof.siblings))
    with pytest.raises(MapProofError):
        verify_map_proof(root, client, table, longer)
    shorter = dataclasses.replace(proof, siblings=proof.siblings[1:])
    with pytest.raises(MapProofError):
        verify_map_proof(root, client, table, shorter)
    huge = dataclasses.replace(proof, siblings=(EMPTY,) * 257)
    with pytest.raises(MapProofError, match="at most 256"):
        verify_map_proof(root, client, table, huge)


def test_a_wrong_head_is_refused() -> None:
    root, client, table, proof = _proofs("present")
    assert proof.head is not None
    for changed in (
        dataclasses.replace(proof.head, index=proof.head.index + 1),
        dataclasses.replace(proof.head, seq=proof.head.seq + 1),
    ):
        with pytest.raises(MapProofError, match="leads to root"):
            verify_map_proof(root, client, table, dataclasses.replace(proof, head=changed))
    # Another chain's head, or this proof checked for another chain.
    with pytest.raises(MapProofError, match="another chain"):
        verify_map_proof(root, client, table + "x", proof)
    renamed = dataclasses.replace(proof.head, table_id=table + "x")
    with pytest.raises(MapProofError, match="another chain"):
        verify_map_proof(root, client, table, dataclasses.replace(proof, head=renamed))


def test_a_presence_cannot_pass_as_an_absence_or_the_reverse() -> None:
    root, client, table, proof = _proofs("present")
    with pytest.raises(MapProofError):
        verify_map_proof(root, client, table, MapProof(siblings=proof.siblings))
    root, client, table, absent = _proofs("absent_empty")
    fake = MapHead(client, table, 0, 1)
    with pytest.raises(MapProofError):
        verify_map_proof(root, client, table, dataclasses.replace(absent, head=fake))


def test_a_wrong_other_key_is_refused() -> None:
    root, client, table, proof = _proofs("absent_other")
    assert proof.other_key is not None
    assert proof.other_index is not None
    # A key that still shares the prefix but is not the leaf's: the hash differs.
    with pytest.raises(MapProofError, match="leads to root"):
        verify_map_proof(root, client, table, dataclasses.replace(
            proof, other_key=proof.other_key[:-1] + bytes([proof.other_key[-1] ^ 1])
        ))  # fmt: skip
    with pytest.raises(MapProofError, match="leads to root"):
        verify_map_proof(
            root, client, table, dataclasses.replace(proof, other_index=proof.other_index + 1)
        )
    with pytest.raises(MapProofError, match="own key"):
        verify_map_proof(
            root, client, table, dataclasses.replace(proof, other_key=map_key(client, table))
        )
    with pytest.raises(MapProofError, match="32 bytes"):
        verify_map_proof(root, client, table, dataclasses.replace(proof, other_key=b"\x01" * 31))
    with pytest.raises(MapProofError, match="index and seq"):
        verify_map_proof(root, client, table, dataclasses.replace(proof, other_seq=None))


def test_an_other_key_off_the_path_is_refused_even_with_a_matching_root() -> None:
    """The other leaf must agree with the key on the bits of its place: a leaf placed where
    its own key could never be proves nothing (here a root made up to match the proof)."""
    key = map_key("c", "t")
    depth = 3
    other = _flip(key, depth - 1)  # differs on bit 2, inside the path's prefix
    siblings = (b"\x11" * 32, b"\x22" * 32, b"\x33" * 32)
    proof = MapProof(siblings=siblings, other_key=other, other_index=9, other_seq=1)
    # The root this path would give, computed by hand from the definition.
    h = head_leaf(other, 9, 1)
    bits = int.from_bytes(key, "big")
    for i, s in enumerate(siblings):
        d = depth - 1 - i
        pair = (s, h) if (bits >> (255 - d)) & 1 else (h, s)
        h = hashlib.sha256(b"\x03" + pair[0] + pair[1]).digest()
    with pytest.raises(MapProofError, match="agrees with the chain's key on 2 bits"):
        verify_map_proof(h, "c", "t", proof)
    # On the prefix (bit 3 differs instead), the same construction verifies: the check above
    # is what refused it.
    on_path = dataclasses.replace(proof, other_key=_flip(key, depth))
    h2 = head_leaf(_flip(key, depth), 9, 1)
    for i, s in enumerate(siblings):
        d = depth - 1 - i
        pair = (s, h2) if (bits >> (255 - d)) & 1 else (h2, s)
        h2 = hashlib.sha256(b"\x03" + pair[0] + pair[1]).digest()
    assert verify_map_proof(h2, "c", "t", on_path) is None


def test_malformed_proofs_and_roots_are_refused() -> None:
    root, client, table, proof = _proofs("present")
    with pytest.raises(MapProofError, match="32 bytes"):
        verify_map_proof(root[:31], client, table, proof)
    with pytest.raises(MapProofError, match="32 bytes"):
        verify_map_proof(root, client, table, dataclasses.replace(
            proof, siblings=(proof.siblings[0][:31], *proof.siblings[1:])
        ))  # fmt: skip
    both = dataclasses.replace(proof, other_key=bytes(32))
    with pytest.raises(MapProofError, match="no other chain"):
        verify_map_proof(root, client, table, both)
    assert issubclass(MapProofError, IntegrityError)


def test_a_set_hashes_one_path_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer sets one head per entry: a set (and the root after it) costs the leaf, the
    nodes of the head's path and those of a split, never a pass over the map (counted, not
    timed: every hash of the module goes through ``_sha256``)."""
    from rng_service.log import table_map as module

    m = TableMap(MapHead("c", f"T{i}", i, 1) for i in range(4096))
    calls = 0
    real = module._sha256

    def counting(data: bytes = b"") -> Any:
        nonlocal calls
        calls += 1
        return real(data)

    monkeypatch.setattr(module, "_sha256", counting)
    for i, table in enumerate(["T7", "T4000", "new-1", "new-2", "T7"]):
        depth = len(m.prove("c", table).siblings)
        calls = 0
        m.set("c", table, 5000 + i, 2)
        root = m.root()
        hashed = calls
        after = len(m.prove("c", table).siblings)
        # the key (unless cached), the leaf, and one node a level of the new path (which for
        # a new key may go deeper than the old one, where it splits another chain's leaf)
        assert 1 + after <= hashed <= 2 + after, (table, hashed, depth, after)
        assert root == m.root()
    assert 8 < depth < 30  # a map of 4096 random keys is about log2(4096) = 12 deep
