"""Behaviour of :class:`rng_service.writer.tree.MerkleTree` against the RFC 6962 reference.

Roots, inclusion and consistency proofs equal those of :mod:`rng_service.log.merkle` for every
size the tree passed through (random batch sizes, seeded), verify with ``merkle.verify_*``, and
survive a restart from stored nodes; a prepared but uncommitted append changes nothing; nodes
emitted are exactly the complete subtrees; cache bounds hold and recent proofs read no storage.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

import pytest

from rng_service.errors import IntegrityError, InvalidArgument, OutOfRange, StorageUnavailable
from rng_service.log import merkle
from rng_service.storage.base import EntryRecord, NodeRecord
from rng_service.storage.memory import MemoryStorage
from rng_service.writer.tree import MerkleTree, StalePendingAppend, StoreDiverged

Coord = tuple[int, int]


def _leaf_hashes(n: int, seed: int = 9162) -> list[bytes]:
    rng = random.Random(seed)
    return [merkle.leaf_hash(rng.randbytes(16)) for _ in range(n)]


LEAVES = _leaf_hashes(1100)


class CountingNodes:
    """A node getter over a dict that counts storage reads."""

    def __init__(self) -> None:
        self.nodes: dict[Coord, bytes] = {}
        self.calls = 0
        self.coords_read = 0

    def __call__(self, coords: Iterable[Coord]) -> dict[Coord, bytes]:
        wanted = list(coords)
        self.calls += 1
        self.coords_read += len(wanted)
        return {c: self.nodes[c] for c in wanted if c in self.nodes}

    def store(self, nodes: Iterable[NodeRecord]) -> None:
        for n in nodes:
            assert (n.level, n.index) not in self.nodes
            self.nodes[(n.level, n.index)] = n.hash


def _grow(
    n: int, seed: int, *, store: CountingNodes | None = None, **kw: int
) -> tuple[MerkleTree, CountingNodes, list[int]]:
    """A tree of n leaves appended in random batches; returns it and the sizes it passed."""
    store = store or CountingNodes()
    tree = MerkleTree(size=0, get_nodes=store, **kw)
    rng = random.Random(seed)
    sizes = [0]
    while tree.size < n:
        batch = LEAVES[tree.size : min(n, tree.size + rng.choice([1, 1, 2, 3, 5, 8, 13, 32, 100]))]
        pending = tree.prepare(batch)
        store.store(pending.nodes)
        tree.commit(pending)
        sizes.append(tree.size)
        assert pending.root == merkle.root_from_leaf_hashes(LEAVES[: tree.size])
        assert tree.root() == pending.root
    return tree, store, sizes


def test_empty_tree() -> None:
    tree = MerkleTree(size=0, get_nodes=CountingNodes())
    assert tree.size == 0
    assert tree.root() == merkle.EMPTY_ROOT
    assert tree.root(0) == merkle.EMPTY_ROOT
    assert tree.consistency_proof(0, 0) == []
    with pytest.raises(OutOfRange):
        tree.inclusion_proof(0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_root_and_proof_equals_reference_up_to_70(seed: int) -> None:
    tree, _, _ = _grow(70, seed)
    for n in range(71):
        leaves = LEAVES[:n]
        root = merkle.root_from_leaf_hashes(leaves)
        assert tree.root(n) == root
        for i in range(n):
            proof = tree.inclusion_proof(i, n)
            assert proof == merkle.inclusion_proof(leaves, i)
            merkle.verify_inclusion(leaves[i], i, n, proof, root)
        for m in range(n + 1):
            proof = tree.consistency_proof(m, n)
            assert proof == merkle.consistency_proof(leaves, m)
            merkle.verify_consistency(m, n, proof, merkle.root_from_leaf_hashes(leaves[:m]), root)


def test_every_proof_up_to_256_verifies_against_reference_roots() -> None:
    tree, _, _ = _grow(256, 16)
    roots = [merkle.root_from_leaf_hashes(LEAVES[:n]) for n in range(257)]
    for n in range(1, 257):
        assert tree.root(n) == roots[n]
        for i in range(n):
            merkle.verify_inclusion(LEAVES[i], i, n, tree.inclusion_proof(i, n), roots[n])
        for m in range(n + 1):
            merkle.verify_consistency(m, n, tree.consistency_proof(m, n), roots[m], roots[n])


@pytest.mark.parametrize(("n", "seed"), [(257, 4), (1024, 5), (1100, 6)])
def test_random_proofs_in_larger_trees(n: int, seed: int) -> None:
    tree, _, sizes = _grow(n, seed)
    rng = random.Random(seed)
    for size in [*rng.sample(sizes[1:], 6), n]:
        leaves = LEAVES[:size]
        root = merkle.root_from_leaf_hashes(leaves)
        assert tree.root(size) == root
        for i in [0, size - 1, *rng.sample(range(size), min(size, 10))]:
            proof = tree.inclusion_proof(i, size)
            assert proof == merkle.inclusion_proof(leaves, i)
            merkle.verify_inclusion(leaves[i], i, size, proof, root)
        for m in [1, size - 1, *rng.sample(range(1, size + 1), min(size, 10))]:
            proof = tree.consistency_proof(m, size)
            assert proof == merkle.consistency_proof(leaves, m)
            merkle.verify_consistency(
                m, size, proof, merkle.root_from_leaf_hashes(leaves[:m]), root
            )


def test_nodes_are_exactly_the_complete_subtrees() -> None:
    n = 300
    _, store, _ = _grow(n, 7)
    expected = {
        (level, i): merkle.root_from_leaf_hashes(LEAVES[i << level : (i + 1) << level])
        for level in range(n.bit_length())
        for i in range(n >> level)
    }
    assert store.nodes == expected


def test_prepare_changes_nothing_until_commit() -> None:
    tree, store, _ = _grow(10, 8)
    root, proof = tree.root(), tree.inclusion_proof(3)
    pending = tree.prepare(LEAVES[10:15])
    assert (pending.start, pending.size) == (10, 15)
    assert pending.root == merkle.root_from_leaf_hashes(LEAVES[:15])
    assert tree.size == 10
    assert tree.root() == root
    assert tree.inclusion_proof(3) == proof
    with pytest.raises(OutOfRange):
        tree.root(11)
    # The storage transaction fails: the pending append is dropped and the tree still works.
    storage = MemoryStorage()
    storage.fail_next_append()
    with pytest.raises(StorageUnavailable):
        storage.append([], list(pending.nodes))
    again = tree.prepare(LEAVES[10:12])
    store.store(again.nodes)
    tree.commit(again)
    assert tree.root() == merkle.root_from_leaf_hashes(LEAVES[:12])


def test_stale_pending_is_refused() -> None:
    tree, store, _ = _grow(5, 9)
    first = tree.prepare(LEAVES[5:6])
    second = tree.prepare(LEAVES[5:7])
    store.store(first.nodes)
    tree.commit(first)
    with pytest.raises(StalePendingAppend, match="continues tree size 5"):
        tree.commit(second)
    other = MerkleTree(size=6, get_nodes=store)
    with pytest.raises(StalePendingAppend, match="another tree"):
        other.commit(tree.prepare([]))
    assert tree.size == 6


def test_empty_prepare_is_a_no_op() -> None:
    tree, _, _ = _grow(9, 10)
    pending = tree.prepare([])
    assert pending.nodes == ()
    assert pending.root == tree.root()
    tree.commit(pending)
    assert tree.size == 9


def test_rejects_bad_leaf_hash() -> None:
    tree = MerkleTree(size=0, get_nodes=CountingNodes())
    with pytest.raises(InvalidArgument, match="element 1 is 31 bytes"):
        tree.prepare([LEAVES[0], b"x" * 31])


def test_restart_from_stored_nodes_reads_only_the_frontier() -> None:
    n = 777
    tree, store, sizes = _grow(n, 11)
    store.calls = store.coords_read = 0
    restarted = MerkleTree(size=n, get_nodes=store)
    assert store.calls == 1
    assert store.coords_read == bin(n).count("1")
    assert restarted.root() == tree.root()
    rng = random.Random(11)
    for size in rng.sample(sizes[1:], 10):
        assert restarted.root(size) == tree.root(size)
        for i in rng.sample(range(size), min(size, 5)):
            assert restarted.inclusion_proof(i, size) == tree.inclusion_proof(i, size)
        m = rng.randrange(1, size + 1)
        assert restarted.consistency_proof(m, size) == tree.consistency_proof(m, size)
    # And it keeps appending where the old one left off.
    pending = restarted.prepare(LEAVES[n : n + 3])
    assert pending.root == merkle.root_from_leaf_hashes(LEAVES[: n + 3])


def test_load_from_log_storage() -> None:
    storage = MemoryStorage()
    tree = MerkleTree.load(storage)
    for start in range(0, 40, 7):
        hashes = LEAVES[start : min(40, start + 7)]
        pending = tree.prepare(hashes)
        entries = [
            EntryRecord(
                start + i,
                b"d",
                h,
                "c",
                f"r{start + i}",
                b"",
                "k",
                "t",
                "r",
                "s",
                0,
                0,
                f"s{start + i}",
                start + i + 1,
            )
            for i, h in enumerate(hashes)
        ]
        storage.append(entries, pending.nodes)
        tree.commit(pending)
    loaded = MerkleTree.load(storage)
    assert loaded.size == 40
    assert loaded.root() == merkle.root_from_leaf_hashes(LEAVES[:40])
    assert loaded.inclusion_proof(17) == merkle.inclusion_proof(LEAVES[:40], 17)
    assert loaded.leaf_hash(39) == LEAVES[39]


def test_missing_stored_node_is_an_integrity_error() -> None:
    _, store, _ = _grow(12, 12)
    del store.nodes[(1, 0)]
    restarted = MerkleTree(size=12, get_nodes=store)
    with pytest.raises(IntegrityError, match=r"lacks 1 Merkle node.*\(1, 0\)"):
        restarted.inclusion_proof(3, 8)
    del store.nodes[(3, 0)]  # on the frontier of size 12 = 8 + 4
    with pytest.raises(IntegrityError, match=r"lacks 1 Merkle node.*\(3, 0\)"):
        MerkleTree(size=12, get_nodes=store)


def test_recent_proofs_read_no_storage() -> None:
    tree, store, _ = _grow(1000, 13)
    for _ in range(5):
        pending = tree.prepare(LEAVES[tree.size : tree.size + 20])
        store.store(pending.nodes)
        tree.commit(pending)
    assert tree.size == 1100
    store.calls = 0
    size = tree.size
    for i in range(size - 20, size):
        tree.inclusion_proof(i)
    tree.consistency_proof(size - 20)
    tree.root(size - 20)
    assert store.calls == 0


def test_cache_is_bounded_and_misses_fall_back_to_storage() -> None:
    tree, store, _ = _grow(1024, 14, cache_min_level=6, recent_nodes=50)
    # Levels >= 6 of 1024 leaves: 16 + 8 + 4 + 2 + 1 nodes; plus at most 50 recent ones.
    assert tree.cached_nodes() <= 31 + 50
    store.calls = 0
    proof = tree.inclusion_proof(3)
    assert store.calls == 1
    assert proof == merkle.inclusion_proof(LEAVES[:1024], 3)
    assert tree.cached_nodes() <= 31 + 50


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t: t.root(11), "outside 0..10"),
        (lambda t: t.root(-1), "outside 0..10"),
        (lambda t: t.inclusion_proof(10), "leaf index 10"),
        (lambda t: t.inclusion_proof(3, 3), "leaf index 3"),
        (lambda t: t.inclusion_proof(0, 11), "outside 0..10"),
        (lambda t: t.consistency_proof(5, 4), "size1 <= size2"),
        (lambda t: t.consistency_proof(1, 11), "outside 0..10"),
        (lambda t: t.leaf_hash(10), "leaf index 10"),
    ],
)
def test_out_of_range(call: Callable[[MerkleTree], object], message: str) -> None:
    tree, _, _ = _grow(10, 15)
    with pytest.raises(OutOfRange, match=message):
        call(tree)


def test_invalid_construction() -> None:
    with pytest.raises(InvalidArgument, match="size"):
        MerkleTree(size=-1, get_nodes=CountingNodes())
    with pytest.raises(InvalidArgument, match="recent_nodes"):
        MerkleTree(size=0, get_nodes=CountingNodes(), recent_nodes=-1)


# -- advance(): another writer of the shared store appended ------------------------------------


def test_advance_adopts_what_another_writer_stored() -> None:
    """Two trees over one store (two replicas): each continues where the other left off."""
    store = CountingNodes()
    a = MerkleTree(size=0, get_nodes=store)
    b = MerkleTree(size=0, get_nodes=store)
    rng = random.Random(6962)
    size = 0
    while size < 300:
        writer = rng.choice([a, b])
        behind = writer.size < size
        assert writer.advance(size) is behind
        batch = LEAVES[size : size + rng.randint(1, 17)]
        pending = writer.prepare(batch)
        assert pending.start == size
        store.store(pending.nodes)
        writer.commit(pending)
        size = pending.size
        assert writer.root() == merkle.root_from_leaf_hashes(LEAVES[:size])
    b.advance(size)
    a.advance(size)
    for t in (a, b):
        assert t.size == size
        assert t.root() == merkle.root_from_leaf_hashes(LEAVES[:size])
        assert t.inclusion_proof(7, 200) == merkle.inclusion_proof(LEAVES[:200], 7)
        assert t.consistency_proof(50, size) == merkle.consistency_proof(LEAVES[:size], 50)


def test_advance_ignores_a_stale_size_and_reads_only_the_frontier() -> None:
    tree, store, _ = _grow(100, 13)
    behind = MerkleTree(size=40, get_nodes=store)
    assert behind.advance(30) is False  # read before a later commit: ignored
    assert behind.size == 40
    store.calls = store.coords_read = 0
    assert behind.advance(100) is True
    # One request: the new frontier, and this tree's own frontier read back to check it.
    assert store.calls == 1
    assert store.coords_read <= bin(100).count("1") + bin(40).count("1")
    assert behind.root() == tree.root()
    with pytest.raises(InvalidArgument):
        behind.advance(-1)


def test_commit_after_a_reader_advanced_past_it() -> None:
    """A reader's advance may adopt an append before its writer's commit(): no error."""
    tree, store, _ = _grow(10, 14)
    pending = tree.prepare(LEAVES[10:13])
    store.store(pending.nodes)
    tree.advance(13)  # a log read synced the tree from the store first
    tree.commit(pending)
    assert tree.size == 13
    assert tree.root() == merkle.root_from_leaf_hashes(LEAVES[:13])


def test_advance_to_a_size_whose_nodes_are_missing_is_an_integrity_error() -> None:
    tree, _, _ = _grow(10, 15)
    with pytest.raises(IntegrityError, match="lacks"):
        tree.advance(12)
    assert tree.size == 10


def _other_history(n: int, keep: int, seed: int) -> CountingNodes:
    """The nodes of a log whose first ``keep`` leaves are LEAVES' and the rest other ones (a
    standby that lacked the entries after ``keep``, to which other writers appended)."""
    other = _leaf_hashes(n, seed)
    store = CountingNodes()
    tree = MerkleTree(size=0, get_nodes=store)
    for leaf in [*LEAVES[:keep], *other[keep:n]]:
        pending = tree.prepare([leaf])
        store.store(pending.nodes)
        tree.commit(pending)
    return store


def test_advance_refuses_a_store_that_does_not_begin_with_this_tree() -> None:
    """A tree of 40 whose store now holds 100 entries of which only the first 37 are its own
    (an async standby promoted without entries 37-39, then appended to by other writers):
    advancing would mix cached nodes with the other history; it is refused and changes
    nothing. The same store truncated to exactly the tree's entries is accepted."""
    tree, _, _ = _grow(40, 21)
    root = tree.root()
    tree.inclusion_proof(3)  # caches low nodes too
    tree._get_nodes = _other_history(100, 37, 22)
    with pytest.raises(StoreDiverged, match="refusing to sign a fork"):
        tree.advance(100)
    assert (tree.size, tree.root()) == (40, root)
    tree._get_nodes = _other_history(100, 40, 23)
    assert tree.advance(100) is True
    assert tree.root() == merkle.root_from_leaf_hashes([*LEAVES[:40], *_leaf_hashes(100, 23)[40:]])


def test_verify_stored_reads_the_frontier_from_the_store_not_the_cache() -> None:
    tree, store, _ = _grow(40, 24)
    store.calls = 0
    tree.verify_stored()
    assert store.calls == 1  # even though the frontier is cached
    tree._get_nodes = _other_history(40, 39, 25)  # the same size, the last entry another
    with pytest.raises(StoreDiverged, match="holds another Merkle node"):
        tree.verify_stored()
    tree._get_nodes = _other_history(38, 38, 25)  # shorter: nodes of the frontier missing
    with pytest.raises(StoreDiverged, match="lacks Merkle node"):
        tree.verify_stored()


def test_leaf_hashes_are_the_stored_level_0_nodes_and_are_not_cached() -> None:
    leaves = [merkle.leaf_hash(b"entry %d" % i) for i in range(37)]
    pending = MerkleTree(size=0, get_nodes=lambda coords: {}).prepare(leaves)
    nodes = {(n.level, n.index): n.hash for n in pending.nodes}
    reads: list[int] = []

    def get(coords: Iterable[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        wanted = list(coords)
        reads.append(len(wanted))
        return {c: nodes[c] for c in wanted if c in nodes}

    tree = MerkleTree(size=37, get_nodes=get, cache_min_level=64, recent_nodes=16)
    cached = tree.cached_nodes()
    assert tree.leaf_hashes([3, 0, 36, 3]) == [leaves[3], leaves[0], leaves[36], leaves[3]]
    assert tree.cached_nodes() == cached  # a page of old entries pushes nothing out
    assert reads[-1] == 2  # 36 is on the frontier (size 37): only 3 and 0 read, once each
    with pytest.raises(OutOfRange):
        tree.leaf_hashes([37])
    del nodes[(0, 5)]
    with pytest.raises(IntegrityError, match="lacks 1 Merkle node"):
        tree.leaf_hashes([5])


def test_leaf_and_inclusion_proof_read_together() -> None:
    leaves = [merkle.leaf_hash(b"entry %d" % i) for i in range(21)]
    pending = MerkleTree(size=0, get_nodes=lambda coords: {}).prepare(leaves)
    nodes = {(n.level, n.index): n.hash for n in pending.nodes}
    reads: list[list[tuple[int, int]]] = []

    def get(coords: Iterable[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        reads.append(list(coords))
        return {c: nodes[c] for c in reads[-1] if c in nodes}

    tree = MerkleTree(size=21, get_nodes=get, cache_min_level=64, recent_nodes=0)
    reads.clear()
    for index, size in ((7, 21), (0, 9), (20, 21)):
        leaf, proof = tree.leaf_and_inclusion_proof(index, size)
        assert leaf == leaves[index]
        assert proof == merkle.inclusion_proof(leaves[:size], index)  # the reference PATH
    assert len(reads) <= 3  # at most one read each
    with pytest.raises(OutOfRange):
        tree.leaf_and_inclusion_proof(9, 9)
