"""Behaviour and known answers of rng_service.sampling (byte consumption as documented)."""

from __future__ import annotations

import contextlib
import hashlib
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from rng_service.sampling import DEFAULT_READAHEAD, RandomSource, randbelow_plan


class Exhausted(Exception):
    """The scripted source has no more bytes: the code under test asked for another attempt."""


class ScriptedBytes:
    """Serves exactly the given bytes, then raises :class:`Exhausted`."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.requests: list[int] = []

    def random_bytes(self, n: int) -> bytes:
        self.requests.append(n)
        if n > len(self.data):
            if not self.data:
                raise Exhausted
            n = len(self.data)
        out, self.data = self.data[:n], self.data[n:]
        return out


class HashStream:
    """A deterministic byte *stream* (SHA-256 in counter mode): independent of request sizes."""

    def __init__(self, seed: bytes = b"") -> None:
        self.seed = seed
        self.counter = 0
        self.pending = b""
        self.consumed = 0

    def random_bytes(self, n: int) -> bytes:
        while len(self.pending) < n:
            block = self.seed + self.counter.to_bytes(8, "big")
            self.pending += hashlib.sha256(block).digest()
            self.counter += 1
        out, self.pending = self.pending[:n], self.pending[n:]
        self.consumed += n
        return out


def exact(data: bytes) -> RandomSource:
    """A RandomSource that reads exactly ``data``, one request at a time (no read-ahead)."""
    return RandomSource(_Exact(data), readahead=1)


class _Exact(ScriptedBytes):
    def random_bytes(self, n: int) -> bytes:
        if n > len(self.data):
            raise Exhausted
        return super().random_bytes(n)


# --- plans and known answers -------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "plan"),
    [
        (1, (0, 1)),
        (2, (1, 256)),
        (37, (1, 222)),
        (38, (1, 228)),
        (52, (1, 208)),
        (216, (1, 216)),
        (256, (1, 256)),
        (257, (2, 65536 - 65536 % 257)),
        (1000, (2, 65000)),
        (2**64, (8, 2**64)),
        (2**64 + 1, (9, 2**72 - 2**72 % (2**64 + 1))),
    ],
)
def test_randbelow_plan(n: int, plan: tuple[int, int]) -> None:
    assert randbelow_plan(n) == plan


def test_randbelow_rejects_then_accepts_big_endian() -> None:
    # 228 is the first rejected byte for n = 38; 227 -> 227 mod 38 = 37.
    assert exact(bytes([228, 255, 227])).randbelow(38) == 37
    # n = 1000: k = 2, limit = 65000 = 0xFDE8 (rejected); 0x03E9 = 1001 -> 1.
    assert exact(bytes([0xFD, 0xE8, 0x03, 0xE9])).randbelow(1000) == 1
    assert exact(bytes([0xFD, 0xE7])).randbelow(1000) == 64999 % 1000


def test_randbelow_one_consumes_nothing() -> None:
    rs = exact(b"\x07")
    assert rs.randbelow(1) == 0
    assert rs.random_bytes(1) == b"\x07"


def test_randint_and_weighted_index_known_answers() -> None:
    assert exact(bytes([5])).randint(10, 15) == 10 + 5 % 6
    assert exact(bytes([0, 3])).randint(-(2**8), 2**8 - 1) == -256 + 3
    # weights (1, 2, 3): r = randbelow(6); r=0 -> 0; r in {1, 2} -> 1; r in {3, 4, 5} -> 2.
    assert [exact(bytes([b])).weighted_index([1, 2, 3]) for b in range(6)] == [0, 1, 1, 2, 2, 2]


def test_shuffle_and_sample_draw_order() -> None:
    # Draws randbelow(4), randbelow(3), randbelow(2) with bytes 2, 0, 1:
    # i=0: j=2 -> [c, b, a, d]; i=1: j=1 -> same; i=2: j=3 -> [c, b, d, a].
    assert exact(bytes([2, 0, 1])).shuffle("abcd") == ["c", "b", "d", "a"]
    assert exact(bytes([2, 0])).sample("abcd", 2) == ["c", "b"]
    assert exact(b"").shuffle("x") == ["x"]
    assert exact(b"").shuffle([]) == []
    assert exact(b"").sample("abc", 0) == []


def test_shuffle_equals_full_sample_on_the_same_stream() -> None:
    a = RandomSource(HashStream(b"s"))
    b = RandomSource(HashStream(b"s"))
    for m in range(0, 60, 7):
        assert a.shuffle(range(m)) == b.sample(range(m), m)


def test_readahead_requests() -> None:
    src = ScriptedBytes(bytes(range(256)) * 40)
    rs = RandomSource(src)
    rs.randbelow(38)
    rs.random_bytes(1000)
    assert src.requests == [DEFAULT_READAHEAD, 1000 - (DEFAULT_READAHEAD - 1)]


def test_random_bytes_follows_the_stream() -> None:
    rs = RandomSource(HashStream(b"x"), readahead=7)
    got = b"".join(rs.random_bytes(n) for n in (0, 1, 5, 30, 2))
    assert got == HashStream(b"x").random_bytes(38)


def test_short_source_is_an_error() -> None:
    class Short:
        def random_bytes(self, n: int) -> bytes:
            return b"\x00" * (n - 1)

    with pytest.raises(RuntimeError, match="returned"):
        RandomSource(Short()).randbelow(10)


# --- validation ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -5])
def test_randbelow_rejects_non_positive(bad: int) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RandomSource(HashStream()).randbelow(bad)


@pytest.mark.parametrize("bad", [True, 38.0, "38", None])
def test_randbelow_rejects_non_int(bad: object) -> None:
    rs = RandomSource(HashStream())
    rs.randbelow(38)
    rs.randbelow(1)
    with pytest.raises(TypeError):
        rs.randbelow(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        rs.randbelow_batch(bad, 3)  # type: ignore[arg-type]


def test_other_validation() -> None:
    rs = RandomSource(HashStream())
    with pytest.raises(ValueError, match="a <= b"):
        rs.randint(3, 2)
    with pytest.raises(TypeError):
        rs.randint(0, 2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="exceeds"):
        rs.sample([1, 2], 3)
    with pytest.raises(ValueError, match="negative"):
        rs.sample([1, 2], -1)
    with pytest.raises(ValueError, match="empty"):
        rs.weighted_index([])
    with pytest.raises(ValueError, match="positive"):
        rs.weighted_index([1, 0])
    with pytest.raises(TypeError):
        rs.weighted_index([1, True])
    with pytest.raises(TypeError):
        rs.weighted_index([1, 0.5])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="2\\*\\*63"):
        rs.randbelow_batch(2**63 + 1, 1)
    with pytest.raises(ValueError, match="negative"):
        rs.randbelow_batch(10, -1)
    with pytest.raises(ValueError, match="negative"):
        rs.random_bytes(-1)
    with pytest.raises(ValueError, match="readahead"):
        RandomSource(HashStream(), readahead=0)


# --- exhaustive unbiasedness ----------------------------------------------------------------


@pytest.mark.parametrize("n", [37, 38, 52, 216, 255, 256, 1000])
def test_randbelow_exhaustive_one_attempt(n: int) -> None:
    """Every byte string of one attempt: accepted ones split equally over the outcomes."""
    k, limit = randbelow_plan(n)
    counts: Counter[int] = Counter()
    rejected = 0
    for value in range(256**k):
        try:
            counts[exact(value.to_bytes(k, "big")).randbelow(n)] += 1
        except Exhausted:
            rejected += 1
    assert sorted(counts) == list(range(n))
    assert set(counts.values()) == {limit // n}
    assert rejected == 256**k - limit
    assert rejected < n  # fewer rejected strings than outcomes: the least possible waste


def _attempt_sequences(ranges: list[int]) -> list[bytes]:
    """Every sequence of one accepted single-byte attempt per draw ``randbelow(m)``, m in ranges."""
    seqs = [b""]
    for m in ranges:
        _, limit = randbelow_plan(m)
        seqs = [s + bytes([b]) for s in seqs for b in range(limit)]
    return seqs


@pytest.mark.parametrize(("m", "k"), [(4, 2), (5, 2), (6, 2), (3, 3), (4, 1)])
def test_sample_exhaustive_over_every_attempt_sequence(m: int, k: int) -> None:
    population = tuple(range(m))
    draws = [m - i for i in range(min(k, m - 1))]
    seqs = _attempt_sequences(draws)
    counts = Counter(tuple(exact(s).sample(population, k)) for s in seqs)
    expected_outcomes = 1
    for i in range(k):
        expected_outcomes *= m - i
    assert len(counts) == expected_outcomes  # every ordered k-subset occurs
    assert len(set(counts.values())) == 1  # ... equally often
    assert sum(counts.values()) == len(seqs)


@pytest.mark.parametrize("m", [4, 5, 6])
def test_shuffle_every_permutation_equally_often(m: int) -> None:
    """Shuffle of 4-6 items over the finite set of attempt sequences.

    The full product of accepted bytes is 256*255*256 sequences for m = 4 (and ~1e12 for
    m = 6), too many to run one by one. The per-draw exhaustive test above shows each accepted
    byte acts only through ``b mod (m - i)`` with equal class sizes, measured here with the
    real randbelow; so one representative byte per residue, weighted by its class size, counts
    every sequence. Each representative sequence is run through the real shuffle.
    """
    class_size = {}
    for j in range(2, m + 1):
        per_outcome: Counter[int] = Counter()
        for b in range(256):
            with contextlib.suppress(Exhausted):
                per_outcome[exact(bytes([b])).randbelow(j)] += 1
        assert len(set(per_outcome.values())) == 1
        class_size[j] = per_outcome[0]
    counts: Counter[tuple[int, ...]] = Counter()
    seqs = [(b"", 1)]
    for j in range(m, 1, -1):
        seqs = [(s + bytes([r]), w * class_size[j]) for s, w in seqs for r in range(j)]
    for s, weight in seqs:
        counts[tuple(exact(s).shuffle(range(m)))] += weight
    assert len(counts) == len(seqs)  # m! distinct permutations from m! residue sequences
    assert len(set(counts.values())) == 1
    # Also run a few thousand full (non-representative) byte sequences through the real code.
    rng_bytes = HashStream(b"spot").random_bytes(3 * 4000)
    for i in range(0, len(rng_bytes), 3):
        head = rng_bytes[i : i + 3]
        if all(b < randbelow_plan(j)[1] for b, j in zip(head, range(m, 1, -1), strict=False)):
            full = head + bytes(max(0, m - 1 - 3))
            residues = bytes(b % j for b, j in zip(full, range(m, 1, -1), strict=True))
            assert exact(full).shuffle(range(m)) == exact(residues).shuffle(range(m))


@pytest.mark.parametrize("weights", [[1, 2, 3], [5, 1], [7, 7, 7, 7, 7, 7, 1], [250, 6]])
def test_weighted_index_exhaustive(weights: list[int]) -> None:
    total = sum(weights)
    k, limit = randbelow_plan(total)
    counts: Counter[int] = Counter()
    for value in range(limit):
        counts[exact(value.to_bytes(k, "big")).weighted_index(weights)] += 1
    per_unit = limit // total
    assert counts == Counter({i: w * per_unit for i, w in enumerate(weights)})


# --- batch equals scalar ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "n",
    [1, 2, 3, 37, 38, 129, 256, 257, 1000, 65536, 65537, 2**24 - 3, 2**40 + 5, 2**62 + 1, 2**63],
)
def test_batch_matches_scalar_and_consumes_identically(n: int) -> None:
    scalar = RandomSource(HashStream(b"b"))
    batch = RandomSource(HashStream(b"b"), readahead=33)
    expected = [scalar.randbelow(n) for _ in range(700)]
    got: list[int] = []
    for count in (1, 0, 300, 1, 398):
        arr = batch.randbelow_batch(n, count)
        assert arr.dtype == np.int64
        assert arr.shape == (count,)
        got += [int(v) for v in arr]
    assert got == expected
    assert scalar.random_bytes(16) == batch.random_bytes(16)


def test_batch_rejection_rounds() -> None:
    # n = 129 rejects nearly half of all bytes: exercise several refill rounds.
    a = RandomSource(HashStream(b"r"), readahead=1)
    b = RandomSource(HashStream(b"r"))
    assert [int(v) for v in a.randbelow_batch(129, 5000)] == [b.randbelow(129) for _ in range(5000)]


# --- statistics (deterministic seeds, so they cannot flake) ---------------------------------


def test_chi_square_randbelow_batch() -> None:
    rs = RandomSource(HashStream(b"chi"))
    for n in (37, 38, 216, 1000):
        observed = np.bincount(rs.randbelow_batch(n, 200_000), minlength=n)
        assert stats.chisquare(observed).pvalue > 1e-4


def test_chi_square_shuffle_positions() -> None:
    rs = RandomSource(HashStream(b"perm"))
    counts = Counter(tuple(rs.shuffle(range(4))) for _ in range(24_000))
    assert len(counts) == 24
    assert stats.chisquare(list(counts.values())).pvalue > 1e-4
