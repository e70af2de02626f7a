"""Fakes shared by the tests: deterministic entropy (healthy, blocking or faulty), a storage
that can be made to fail, and a store behind a connection that can be lost (a failover)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from typing import Any

from rng_service.errors import StorageUnavailable
from rng_service.storage.base import (
    AppendBatch,
    CheckpointRecord,
    CommitUnknown,
    EntryRecord,
    NodeRecord,
    StoreConnectionLost,
)
from rng_service.storage.memory import MemoryStorage
from rng_service.writer.tree import MerkleTree


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


class BlockingEntropy(CounterEntropy):
    """A healthy stream until :meth:`block`; then every read waits until :meth:`release` (or
    ``max_block_seconds``, so that a forgotten release never hangs a test run for ever), like
    a ``getrandom`` call that hangs. ``blocked_reads`` counts the reads that waited."""

    def __init__(self, seed: bytes = b"blocking-entropy", *, max_block_seconds: float = 30.0):
        super().__init__(seed)
        self._gate = threading.Event()
        self._gate.set()
        self._max = max_block_seconds
        self.blocked_reads = 0
        self.entered = threading.Event()  # set when a read starts waiting

    def block(self) -> None:
        self._gate.clear()

    def release(self) -> None:
        self._gate.set()

    def get_entropy(self, num_bytes: int) -> bytes:
        if not self._gate.is_set():
            self.blocked_reads += 1
            self.entered.set()
            self._gate.wait(self._max)
        return super().get_entropy(num_bytes)


class FaultyEntropy(CounterEntropy):
    """A healthy stream until :meth:`fail_with` switches it to a fault: after ``after`` more
    healthy bytes it repeats ``pattern`` for ever (``b"\\x5a"`` stuck, ``b"\\xa5\\x5a"``
    period 2, any k bytes period k), continuing the pattern across reads as a broken source
    would."""

    def __init__(self, seed: bytes = b"faulty-entropy") -> None:
        super().__init__(seed)
        self._pattern = b""
        self._good_left = 0
        self._offset = 0

    def fail_with(self, pattern: bytes, *, after: int = 0) -> None:
        self._pattern = bytes(pattern)
        self._good_left = after
        self._offset = 0

    def get_entropy(self, num_bytes: int) -> bytes:
        pattern = self._pattern
        if not pattern:
            return super().get_entropy(num_bytes)
        good = min(self._good_left, num_bytes)
        self._good_left -= good
        head = super().get_entropy(good) if good else b""
        n = num_bytes - good
        k = len(pattern)
        start = self._offset % k
        tail = (pattern * ((start + n) // k + 2))[start : start + n]
        self._offset += n
        return head + tail


class FlakyStorage(MemoryStorage):
    """In-memory storage whose writes fail while ``failing`` is set (a disk that went away):
    appends, and the health probe's ``set_meta``."""

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

    def set_meta(self, key: str, value: bytes) -> None:
        if self.failing:
            raise StorageUnavailable("injected: storage cannot commit")
        super().set_meta(key, value)


class ConnectedStore:
    """A store reached over a connection that can be lost, as the PostgreSQL driver reports
    it: every call goes to ``server`` (a MemoryStorage: the primary, or after :meth:`fail_over`
    another one) unless the connection is ``down``, when it raises StoreConnectionLost.
    :meth:`lose_next_commit` makes the next ``sequence`` build its batch, store it on the
    server or not (a COMMIT that did or did not reach the standby before the primary died),
    then raise CommitUnknown and go down. Several ConnectedStores over one server are replicas
    sharing one database. ``server_epoch`` (``ServerEpochs``) changes with each fail-over, as
    the PostgreSQL driver's does when its new connections reach another server."""

    def __init__(self, server: MemoryStorage) -> None:
        self.server = server
        self.server_epoch = 0
        self.down = False
        self.calls_while_down = 0
        self._lose: bool | None = None  # the next commit is lost: stored (True) or not (False)
        self._lock = threading.Lock()

    def lose_next_commit(self, *, stored: bool) -> None:
        self._lose = stored

    def fail_over(self, server: MemoryStorage) -> None:
        """The connection reaches ``server`` from now on (when it is up); no call fails if it
        is not down (a driver that reconnected by itself, retrying the call)."""
        self.server = server
        self.server_epoch += 1

    def _check(self) -> None:
        if self.down:
            with self._lock:
                self.calls_while_down += 1
            raise StoreConnectionLost("injected: the connection to the store is lost")

    def sequence(self, build: Callable[[int], AppendBatch | None]) -> None:
        self._check()
        stored, self._lose = self._lose, None
        if stored is None:
            self.server.sequence(build)
            return
        if stored:
            self.server.sequence(build)
        else:
            build(self.server.tree_size())
        self.down = True
        raise CommitUnknown("injected: connection lost during COMMIT; it may or may not be stored")

    def close(self) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.server, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            self._check()
            return getattr(self.server, name)(*args, **kwargs)

        return call if callable(method) else method


def copy_of_prefix(store: MemoryStorage, size: int) -> MemoryStorage:
    """A new store holding the first ``size`` entries of ``store``, their Merkle nodes, the
    table map's rows as of that size and the checkpoints up to that size (what a standby that
    lagged at ``size`` would hold)."""
    entries = store.entries(0, size)
    copy = MemoryStorage()
    pending = MerkleTree(size=0, get_nodes=copy.nodes).prepare([e.leaf_hash for e in entries])
    batch = AppendBatch(entries, pending.nodes, None, store.map_heads_at(size))
    copy.sequence(lambda _size: batch)
    for checkpoint in store.checkpoints(max_size=size):
        copy.add_checkpoint(checkpoint)
    return copy
