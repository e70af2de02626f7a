"""Buffer, then stream: the one switch every streamed outcome test makes (docs/certification.md,
"Streaming").

:class:`BufferedStream` owns the chunks of one group's outcomes (integer arrays: values in log
order, or shuffles as rows) while the group holds at most ``limit`` outcomes: they are kept, and
the batch tests run on all of them at the end, so a sample of that size gets exactly the batch
results. The first chunk that would pass the limit switches the stream, once, to running
tallies: the subclass takes the kept chunks (the stream keeps none after), feeds them to its
tallies in order and then each chunk as it comes, and forms the results from the tallies at the
end. From the switch on, memory is bounded by the tallies, not by the outcomes.

What the subclasses say: how outcomes are counted in a chunk, the batch tests, and how the
tallies start, take a chunk and give their results.

:class:`SampledHashes` is what the streamed repeat checks keep instead of the outcomes: a 64-bit
hash of each repeatable unit (a whole shuffle, a window of values) whose hash falls in a sampled
share 2^-s of the hash space, s raised and the kept hashes thinned whenever more than a limit
are held. Equal units have equal hashes, so a repeat is kept whole or not at all: the equal
pairs counted are a subset of all equal pairs (plus hash collisions, whose expectation
:meth:`SampledHashes.collisions` gives), so Markov's bound with the full expectation
(:func:`certification.outcomes._stats.markov_p`) stays valid.

Nothing here reads files or imports ``rng_service``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from certification.outcomes._stats import TestResult

__all__ = ["BufferedStream", "SampledHashes"]

IntArray = npt.NDArray[np.int64]
HashArray = npt.NDArray[np.uint64]


class BufferedStream(ABC):
    """Chunks kept and batch-tested up to ``limit`` outcomes, tallied past it (module docstring).

    ``n`` is the number of outcomes taken so far."""

    #: The shape of the empty sample the batch tests get when nothing was added.
    EMPTY_SHAPE: ClassVar[tuple[int, ...]] = (0,)

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.n = 0
        self._buffer: list[IntArray] = []
        self._streaming = False

    @property
    def streaming(self) -> bool:
        """Whether the stream has switched to its tallies."""
        return self._streaming

    def add(self, chunk: IntArray) -> None:
        chunk = np.asarray(chunk, dtype=np.int64)
        count = self._count(chunk)
        if not self._streaming and self.n + count <= self.limit:
            self._buffer.append(chunk)
            self.n += count
            return
        if not self._streaming:
            self._streaming = True
            self.n = 0  # counted again as the tallies take the kept chunks
            self._start(chunk)
        self._stream(chunk)

    def results(self) -> list[TestResult]:
        if not self._streaming:
            return self._batch(self._joined(self._buffer))
        return self._streamed()

    def _take_buffer(self) -> list[IntArray]:
        """The kept chunks, handed over once at the switch."""
        buffered, self._buffer = self._buffer, []
        return buffered

    def _joined(self, chunks: list[IntArray]) -> IntArray:
        """The chunks as one array (an empty sample of :attr:`EMPTY_SHAPE` for none)."""
        return np.concatenate(chunks) if chunks else np.zeros(self.EMPTY_SHAPE, np.int64)

    @abstractmethod
    def _count(self, chunk: IntArray) -> int:
        """The number of outcomes in ``chunk``."""

    @abstractmethod
    def _batch(self, outcomes: IntArray) -> list[TestResult]:
        """The batch tests of all the kept outcomes."""

    @abstractmethod
    def _start(self, chunk: IntArray) -> None:
        """Set up the tallies and feed them :meth:`_take_buffer`'s chunks; ``chunk``, the one
        that passed the limit, follows through :meth:`_stream`."""

    @abstractmethod
    def _stream(self, chunk: IntArray) -> None:
        """Feed one chunk to the tallies (after the switch)."""

    @abstractmethod
    def _streamed(self) -> list[TestResult]:
        """The tests formed from the tallies."""


class SampledHashes:
    """The hash-sampled units a streamed repeat check keeps, at most ``limit`` of them
    (module docstring), each with its position in the stream when one is given."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        #: s: a hash is kept when its s lowest bits are 0
        self.bits = 0
        self._hashes: list[HashArray] = []
        self._positions: list[IntArray] = []
        self._kept = 0

    def add(self, hashes: HashArray, first: int | None = None) -> None:
        """Keep the sampled ones of ``hashes`` (and, if ``first`` is given, their positions:
        ``first`` is the first hash's)."""
        keep = (hashes & np.uint64((1 << self.bits) - 1)) == 0
        if not keep.any():
            return
        self._hashes.append(hashes[keep])
        if first is not None:
            self._positions.append(first + np.flatnonzero(keep).astype(np.int64))
        self._kept += int(keep.sum())
        while self._kept > self.limit:
            self._thin()

    def _thin(self) -> None:
        self.bits += 1
        hashes = np.concatenate(self._hashes)
        keep = (hashes & np.uint64((1 << self.bits) - 1)) == 0
        self._hashes = [hashes[keep]]
        if self._positions:
            self._positions = [np.concatenate(self._positions)[keep]]
        self._kept = int(keep.sum())

    def kept(self) -> tuple[HashArray, IntArray]:
        """The kept hashes and their positions (none if no position was given), in order."""
        hashes = np.concatenate(self._hashes) if self._hashes else np.zeros(0, np.uint64)
        positions = np.concatenate(self._positions) if self._positions else np.zeros(0, np.int64)
        return hashes, positions

    def collisions(self) -> float:
        """The expected equal pairs among the kept hashes from 64-bit hash collisions alone."""
        return self._kept**2 / 2 * 2.0**-64
