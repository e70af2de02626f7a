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
tallies start, take a chunk and give their results. Nothing here reads files or imports
``rng_service``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from certification.outcomes._stats import TestResult

__all__ = ["BufferedStream"]

IntArray = npt.NDArray[np.int64]


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
