"""Fakes shared by the tests: deterministic entropy, a storage that can be made to fail."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence

from rng_service.errors import StorageUnavailable
from rng_service.storage.base import AppendBatch, CheckpointRecord, EntryRecord, NodeRecord
from rng_service.storage.memory import MemoryStorage


class CounterEntropy:
    """A deterministic, health-test-passing entropy stream: SHA-256(seed || counter) blocks.

    ``stuck = True`` makes it return a constant byte, a gross fault the SP 800-90B tests catch.
    """

    def __init__(self, seed: bytes = b"test-entropy") -> None:
        self._seed = seed
        self._counter = 0
        self._lock = threading.Lock()
        self.stuck = False

    def get_entropy(self, num_bytes: int) -> bytes:
        if self.stuck:
            return b"\x5a" * num_bytes
        out = bytearray()
        with self._lock:
            while len(out) < num_bytes:
                out += hashlib.sha256(self._seed + self._counter.to_bytes(8, "big")).digest()
                self._counter += 1
        return bytes(out[:num_bytes])


class FlakyStorage(MemoryStorage):
    """In-memory storage whose appends fail while ``failing`` is set (a disk that went away)."""

    def __init__(self) -> None:
        super().__init__()
        self.failing = False

    def append(
        self,
        entries: Sequence[EntryRecord],
        nodes: Sequence[NodeRecord],
        checkpoint: CheckpointRecord | None = None,
    ) -> None:
        if self.failing:
            raise StorageUnavailable("injected: storage cannot commit")
        super().append(entries, nodes, checkpoint)

    def sequence(self, build: Callable[[int], AppendBatch | None]) -> None:
        if self.failing:
            build(self.tree_size())  # the batch is made, then the commit fails
            raise StorageUnavailable("injected: storage cannot commit")
        super().sequence(build)
