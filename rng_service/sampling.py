"""Unbiased mappings from a random byte stream to integers, permutations and choices.

This module owns every conversion of random bytes into game-relevant values: ``randbelow``,
``randint``, ``shuffle``, ``sample``, ``weighted_index`` and the numpy ``randbelow_batch``. It
uses exact integer arithmetic only: no floating point, and no reduction of a random value
modulo a range that does not divide the range the value is uniform on. ``randbelow`` is a
rejection (discard) method in the sense of NIST SP 800-90A Rev.1 Appendix A.5: it works on
whole bytes and accepts below the largest multiple of the range, so its output is exactly
uniform, with no negligible-bias step.
It imports nothing from the project but the standard library and numpy, and it does no I/O:
its bytes come from a :class:`ByteSource` (in production ``rng_service.drbg.ProductionGenerator``,
in lab mode ``rng_service.drbg.DeterministicGenerator``).

Byte-consumption specification (a lab can re-implement every mapping from the stream alone;
``docs/random-core.md`` gives worked examples):

* **The stream.** A :class:`RandomSource` consumes the bytes of its source strictly in order;
  every mapping below takes the next unused bytes of that one stream. It reads ahead: when its
  buffer runs short it calls ``source.random_bytes(max(readahead, shortfall))`` (``readahead``
  defaults to 256). Bytes read but unused when the RandomSource is discarded are never used.
* **randbelow(n)**, ``n >= 1``. ``n == 1`` returns 0 and consumes nothing. Otherwise let
  ``k = ceil(bitlen(n - 1) / 8)`` (the fewest bytes that can express ``n - 1``),
  ``R = 256**k`` and ``limit = R - (R mod n)`` (the largest multiple of ``n`` not above ``R``).
  One *attempt* takes the next ``k`` bytes as a big-endian unsigned integer ``r``. If
  ``r < limit`` the result is ``r mod n`` (exact: ``r`` is uniform on ``[0, limit)`` and ``n``
  divides ``limit``); otherwise the attempt is discarded and the next ``k`` bytes are tried.
  Attempts per result are geometric with mean ``R / limit`` (below 2; 1.123 for ``n = 38``, so
  1.123 bytes per draw), and each result costs ``k * R / limit`` bytes on average.
* **randint(a, b)** = ``a + randbelow(b - a + 1)``.
* **shuffle(items)** (forward Fisher-Yates): copy to a list ``x`` of length ``m``; for
  ``i = 0, 1, ..., m - 2``: ``j = i + randbelow(m - i)``, swap ``x[i]`` and ``x[j]``. So the
  draws are ``randbelow(m), randbelow(m - 1), ..., randbelow(2)``, in that order.
* **sample(population, k)**: the first ``k`` steps of the same loop on a copy of the population,
  returning ``x[:k]`` (the i-th element is the i-th one drawn). ``shuffle(items)`` equals
  ``sample(items, len(items))`` for the same stream.
* **weighted_index(weights)**, positive integers: ``r = randbelow(sum(weights))``; the result is
  the least ``i`` with ``r < weights[0] + ... + weights[i]``. So ``P(i) = w_i / sum(w)`` exactly.
* **randbelow_batch(n, count)** returns exactly what ``count`` successive ``randbelow(n)`` calls
  would return and consumes exactly the same bytes (vectorised with numpy), so scalar and batch
  known answers agree. It reads ahead by its own rule, in rounds of
  ``need * 256**k // limit + 16 + need // 64`` attempts (``docs/random-core.md`` section 5
  spells it out): what it reads, not what it consumes, is where the next outcome of a
  per-outcome RandomSource starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["DEFAULT_READAHEAD", "ByteSource", "RandomSource", "randbelow_plan"]

T = TypeVar("T")

#: Bytes a RandomSource requests from its source at a time when its buffer runs short.
#: 256 bytes cover about 228 draws of randbelow(38) for one source call, while a per-request
#: RandomSource wastes at most 255 bytes of generator output.
DEFAULT_READAHEAD = 256

#: randbelow_batch returns int64, so its ranges are limited to [1, 2**63].
_BATCH_MAX_N = 2**63

_PLAN_CACHE_MAX = 4096
_plans: dict[int, tuple[int, int]] = {}


class ByteSource(Protocol):
    """Anything that returns ``n`` random bytes: the generators of ``rng_service.drbg``."""

    def random_bytes(self, n: int) -> bytes: ...


def randbelow_plan(n: int) -> tuple[int, int]:
    """Returns ``(k, limit)`` for ``randbelow(n)``: bytes per attempt and the acceptance bound.

    An attempt's big-endian ``k``-byte value ``r`` is accepted iff ``r < limit``; the result is
    then ``r % n``. ``limit`` is the largest multiple of ``n`` not above ``256**k``.
    """
    if type(n) is not int:
        raise TypeError(f"n must be an int, not {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    k = ((n - 1).bit_length() + 7) // 8
    span = 1 << (8 * k)
    plan = (k, span - span % n)
    if len(_plans) < _PLAN_CACHE_MAX:
        _plans[n] = plan
    return plan


def _check_count(name: str, value: int) -> None:
    if type(value) is not int:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value}")


class RandomSource:
    """Unbiased sampling over a :class:`ByteSource`, with an internal read-ahead buffer.

    Not thread-safe: use one RandomSource from one thread at a time (one per request or per
    worker). The underlying generator is thread-safe, so several RandomSources may share it.
    """

    __slots__ = ("_buf", "_pos", "_readahead", "_source")

    def __init__(self, source: ByteSource, *, readahead: int = DEFAULT_READAHEAD) -> None:
        _check_count("readahead", readahead)
        if readahead < 1:
            raise ValueError("readahead must be at least 1")
        self._source = source
        self._readahead = readahead
        self._buf = b""
        self._pos = 0

    def __repr__(self) -> str:
        return f"RandomSource(source={type(self._source).__name__}, readahead={self._readahead})"

    def _fill(self, need: int) -> None:
        """Makes at least ``need`` unused bytes available in the buffer."""
        have = len(self._buf) - self._pos
        if have >= need:
            return
        want = max(self._readahead, need - have)
        fresh = self._source.random_bytes(want)
        if len(fresh) != want:
            raise RuntimeError(f"byte source returned {len(fresh)} bytes, {want} requested")
        self._buf = self._buf[self._pos :] + fresh
        self._pos = 0

    def random_bytes(self, n: int) -> bytes:
        """The next ``n`` bytes of the stream."""
        _check_count("n", n)
        self._fill(n)
        pos = self._pos
        self._pos = pos + n
        return self._buf[pos : pos + n]

    def randbelow(self, n: int) -> int:
        """Uniform on ``[0, n)`` by rejection sampling (see the module docstring)."""
        plan = _plans.get(n)
        if plan is None or type(n) is not int:
            plan = randbelow_plan(n)
        k, limit = plan
        buf = self._buf
        pos = self._pos
        if k == 1:
            while True:
                if pos >= len(buf):
                    self._pos = pos
                    self._fill(1)
                    buf = self._buf
                    pos = self._pos
                r = buf[pos]
                pos += 1
                if r < limit:
                    self._pos = pos
                    return r % n
        if k == 0:
            return 0
        while True:
            end = pos + k
            if end > len(buf):
                self._pos = pos
                self._fill(k)
                buf = self._buf
                pos = self._pos
                end = pos + k
            r = int.from_bytes(buf[pos:end], "big")
            pos = end
            if r < limit:
                self._pos = pos
                return r % n

    def randint(self, a: int, b: int) -> int:
        """Uniform on ``[a, b]`` (both ends included)."""
        if type(a) is not int or type(b) is not int:
            raise TypeError("randint bounds must be ints")
        if b < a:
            raise ValueError(f"randint needs a <= b, got a={a}, b={b}")
        return a + self.randbelow(b - a + 1)

    def shuffle(self, items: Sequence[T]) -> list[T]:
        """A uniformly random permutation of ``items`` as a new list (forward Fisher-Yates)."""
        return self._fisher_yates(items, len(items))

    def sample(self, population: Sequence[T], k: int) -> list[T]:
        """``k`` distinct positions of ``population``, uniformly, in the order drawn."""
        _check_count("k", k)
        if k > len(population):
            raise ValueError(f"sample size {k} exceeds population size {len(population)}")
        return self._fisher_yates(population, k)

    def _fisher_yates(self, items: Sequence[T], k: int) -> list[T]:
        x = list(items)
        m = len(x)
        randbelow = self.randbelow
        for i in range(min(k, m - 1)):
            j = i + randbelow(m - i)
            x[i], x[j] = x[j], x[i]
        return x[:k]

    def weighted_index(self, weights: Sequence[int]) -> int:
        """Index ``i`` with probability exactly ``weights[i] / sum(weights)``."""
        if len(weights) == 0:
            raise ValueError("weights must not be empty")
        total = 0
        for i, w in enumerate(weights):
            if type(w) is not int:
                raise TypeError(f"weights[{i}] must be an int, not {type(w).__name__}")
            if w <= 0:
                raise ValueError(f"weights[{i}] must be positive, got {w}")
            total += w
        r = self.randbelow(total)
        for i, w in enumerate(weights):
            r -= w
            if r < 0:
                return i
        raise AssertionError("unreachable: r < sum(weights)")  # pragma: no cover

    def randbelow_batch(self, n: int, count: int) -> npt.NDArray[np.int64]:
        """``count`` values of ``randbelow(n)`` as int64, consuming the stream identically.

        ``n`` is limited to ``[1, 2**63]`` so that every value fits an int64.
        """
        k, limit = randbelow_plan(n)
        _check_count("count", count)
        if n > _BATCH_MAX_N:
            raise ValueError(f"randbelow_batch supports n <= 2**63, got {n}")
        out = np.empty(count, dtype=np.int64)
        if k == 0:
            out.fill(0)
            return out
        filled = 0
        span = 1 << (8 * k)
        while filled < count:
            need = count - filled
            # Enough attempts that one round almost always suffices: mean plus a margin.
            attempts = (need * span) // limit + 16 + need // 64
            self._fill(attempts * k)
            values = _as_uints(self._buf, self._pos, attempts, k)
            if limit == span:
                accepted = values[:need]
                used = len(accepted)
            else:
                mask = values < limit
                accepted = values[mask]
                if len(accepted) >= need:
                    accepted = accepted[:need]
                    used = _index_of_nth_true(mask, need) + 1
                else:
                    used = attempts
            got = len(accepted)
            # n == span (a whole number of bytes) means r itself; n would not fit the dtype.
            out[filled : filled + got] = accepted if n == span else accepted % n
            filled += got
            self._pos += used * k
        return out


def _index_of_nth_true(mask: npt.NDArray[np.bool_], nth: int) -> int:
    """Index of the ``nth`` (1-based) True in ``mask``, which holds at least ``nth`` Trues.

    Searches a short tail first: the accepted attempts beyond the ``nth`` are few.
    """
    total = int(np.count_nonzero(mask))
    excess = total - nth
    window = min(len(mask), 4 * excess + 64)
    while True:
        tail = np.flatnonzero(mask[len(mask) - window :])
        if len(tail) > excess:
            return len(mask) - window + int(tail[len(tail) - 1 - excess])
        window = min(len(mask), window * 4)


_NATIVE: dict[int, np.dtype[np.unsignedinteger[Any]]] = {
    1: np.dtype(">u1"),
    2: np.dtype(">u2"),
    4: np.dtype(">u4"),
    8: np.dtype(">u8"),
}


def _as_uints(buf: bytes, pos: int, count: int, k: int) -> npt.NDArray[np.unsignedinteger[Any]]:
    """``count`` big-endian ``k``-byte unsigned integers from ``buf[pos:]`` (``1 <= k <= 8``)."""
    dtype = _NATIVE.get(k)
    if dtype is not None:
        return np.frombuffer(buf, dtype=dtype, count=count, offset=pos)
    groups = np.frombuffer(buf, dtype=np.uint8, count=count * k, offset=pos).reshape(count, k)
    padded = np.zeros((count, 8), dtype=np.uint8)
    padded[:, 8 - k :] = groups
    return padded.view(">u8").reshape(count).astype(np.uint64)
