"""Entropy sources: the :class:`EntropySource` protocol, the OS adapter and test fakes.

This module owns where entropy input comes from (SP 800-90A Rev.1 section 8.6.5: the DRBG's
entropy input is requested from an approved source; here the operating system's CSPRNG,
tested on the way in by ``rng_service.drbg.health`` per SP 800-90B section 4.4).
:class:`OsEntropySource` is the only class in the random core that reads ``os.getrandom`` or
``os.urandom`` (house style: entropy is injected). The fakes are deterministic and exist for
tests and lab runs; nothing chooses them by default.
"""

from __future__ import annotations

import hashlib
import os
import threading
from typing import Protocol

__all__ = [
    "EntropyExhaustedError",
    "EntropySource",
    "FixedEntropySource",
    "OsEntropySource",
    "SeededEntropySource",
]


class EntropySource(Protocol):
    """Returns ``num_bytes`` bytes of entropy input (one health-test sample per byte)."""

    def get_entropy(self, num_bytes: int) -> bytes: ...


class EntropyExhaustedError(Exception):
    """A :class:`FixedEntropySource` was asked for more bytes than it holds."""


def _check_count(num_bytes: object) -> int:
    if type(num_bytes) is not int:
        raise TypeError(f"num_bytes must be an int, not {type(num_bytes).__name__}")
    if num_bytes < 0:
        raise ValueError(f"num_bytes must not be negative, got {num_bytes}")
    return num_bytes


class OsEntropySource:
    """The kernel CSPRNG: ``os.getrandom`` (blocks until the pool is initialised) where the
    platform has it, otherwise ``os.urandom``."""

    def __repr__(self) -> str:
        return "OsEntropySource()"

    def get_entropy(self, num_bytes: int) -> bytes:
        _check_count(num_bytes)
        getrandom = getattr(os, "getrandom", None)
        if getrandom is None:
            return os.urandom(num_bytes)
        parts: list[bytes] = []
        remaining = num_bytes
        while remaining:
            # getrandom may return fewer bytes than asked (a signal during a large read).
            chunk: bytes = getrandom(remaining)
            parts.append(chunk)
            remaining -= len(chunk)
        return b"".join(parts)


class FixedEntropySource:
    """Serves the given bytes in order, then raises :class:`EntropyExhaustedError`.

    For tests that script exactly what the generator sees (including stuck or repeating
    bytes to trip the health tests). Thread-safe.
    """

    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)
        self._pos = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FixedEntropySource(remaining={self.remaining})"

    @property
    def remaining(self) -> int:
        return len(self._data) - self._pos

    def get_entropy(self, num_bytes: int) -> bytes:
        _check_count(num_bytes)
        with self._lock:
            if num_bytes > len(self._data) - self._pos:
                raise EntropyExhaustedError(
                    f"{num_bytes} bytes requested, {len(self._data) - self._pos} left"
                )
            out = self._data[self._pos : self._pos + num_bytes]
            self._pos += num_bytes
            return out


class SeededEntropySource:
    """A deterministic, non-repeating stream: SHA-256(seed || counter) blocks. Thread-safe.

    Not entropy: for tests and for reproducible lab runs only.
    """

    def __init__(self, seed: bytes) -> None:
        self._seed = bytes(seed)
        self._counter = 0
        self._pending = b""
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "SeededEntropySource(...)"

    def get_entropy(self, num_bytes: int) -> bytes:
        _check_count(num_bytes)
        with self._lock:
            parts = [self._pending]
            have = len(self._pending)
            while have < num_bytes:
                block = hashlib.sha256(self._seed + self._counter.to_bytes(8, "big")).digest()
                self._counter += 1
                parts.append(block)
                have += len(block)
            stream = b"".join(parts)
            self._pending = stream[num_bytes:]
            return stream[:num_bytes]
