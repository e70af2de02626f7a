"""docs/random-core.md section 5, read as a specification: bytes to integers.

``Source`` is the reader's RandomSource: it takes bytes from a byte stream (anything with
``take(n)``) with the documented read-ahead, and maps them with the documented primitives.
Plain Python integers throughout; nothing here is fast or clever, on purpose.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

T = TypeVar("T")

READAHEAD = 256


class ByteStream(Protocol):
    def take(self, n: int) -> bytes: ...


def attempt_width(n: int) -> tuple[int, int]:
    """``(k, limit)`` of randbelow(n): ``k`` bytes per attempt, accept ``r < limit``."""
    k = -(-(n - 1).bit_length() // 8)
    r = 256**k
    return k, r - r % n


class Source:
    """One RandomSource over ``stream`` (a fresh one per outcome, as the log appender makes)."""

    def __init__(self, stream: ByteStream, readahead: int = READAHEAD) -> None:
        self._stream = stream
        self._readahead = readahead
        self._buf = b""
        self._pos = 0
        self.read = 0  # bytes taken from the stream (read-ahead included)
        self.used = 0  # bytes consumed by draws

    # -- the stream -----------------------------------------------------------------------

    def _available(self) -> int:
        return len(self._buf) - self._pos

    def _fill(self, k: int) -> None:
        """When the buffer runs short of ``k`` bytes, read ``max(readahead, shortfall)``."""
        shortfall = k - self._available()
        if shortfall > 0:
            n = max(self._readahead, shortfall)
            self._buf = self._buf[self._pos :] + self._stream.take(n)
            self._pos = 0
            self.read += n

    def next_bytes(self, k: int) -> bytes:
        self._fill(k)
        out = self._buf[self._pos : self._pos + k]
        self._pos += k
        self.used += k
        return out

    # -- the primitives -------------------------------------------------------------------

    def randbelow(self, n: int) -> int:
        if n < 1:
            raise ValueError(n)
        if n == 1:
            return 0
        k, limit = attempt_width(n)
        while True:
            r = int.from_bytes(self.next_bytes(k), "big")
            if r < limit:
                return r % n

    def randint(self, a: int, b: int) -> int:
        return a + self.randbelow(b - a + 1)

    def sample(self, population: Sequence[T], k: int) -> list[T]:
        """The first ``k`` steps of forward Fisher-Yates on a copy ``x`` of ``population``.

        A large population's copy is held as its changed positions only (the same algorithm:
        a range of 2**20 values need not be listed for a draw of five).
        """
        m = len(population)
        if not 0 <= k <= m:
            raise ValueError(k)
        if m <= 1 << 12:
            x = list(population)
            for i in range(min(k, m - 1)):
                j = i + self.randbelow(m - i)
                x[i], x[j] = x[j], x[i]
            return x[:k]
        changed: dict[int, T] = {}

        def at(i: int) -> T:
            return changed[i] if i in changed else population[i]

        for i in range(min(k, m - 1)):
            j = i + self.randbelow(m - i)
            changed[i], changed[j] = at(j), at(i)
        return [at(i) for i in range(k)]

    def shuffle(self, items: Sequence[T]) -> list[T]:
        return self.sample(items, len(items))

    def weighted_index(self, weights: Sequence[int]) -> int:
        r = self.randbelow(sum(weights))
        acc = 0
        for i, w in enumerate(weights):
            acc += w
            if r < acc:
                return i
        raise AssertionError("unreachable: r < sum(weights)")

    def randbelow_batch(self, n: int, count: int) -> list[int]:
        """What ``count`` successive ``randbelow(n)`` return, consuming the same bytes, but
        reading ahead in rounds of ``need * R // limit + 16 + need // 64`` attempts."""
        if n < 1:
            raise ValueError(n)
        if n == 1:
            return [0] * count
        k, limit = attempt_width(n)
        out: list[int] = []
        while len(out) < count:
            need = count - len(out)
            attempts = need * 256**k // limit + 16 + need // 64
            self._fill(attempts * k)
            for _ in range(attempts):
                r = int.from_bytes(self.next_bytes(k), "big")
                if r < limit:
                    out.append(r % n)
                    if len(out) == count:
                        break
        return out
