"""Entropy sources: the :class:`EntropySource` protocol, the OS adapter and test fakes.

This module owns where entropy input comes from (SP 800-90A Rev.1 section 8.6.5: the DRBG's
entropy input is requested from an approved source; here the operating system's CSPRNG,
tested on the way in by ``rng_service.drbg.health`` per SP 800-90B section 4.4).
:class:`OsEntropySource` is the only class in the random core that reads ``os.getrandom`` or
``os.urandom`` (house style: entropy is injected). The fakes are deterministic and exist for
tests and lab runs; nothing chooses them by default. :class:`DeadlineEntropySource` bounds how
long a read may take: a source that hangs is a source failure within a known time, never a
frozen service.
"""

from __future__ import annotations

import hashlib
import os
import threading
from typing import Protocol

__all__ = [
    "DeadlineEntropySource",
    "EntropyExhaustedError",
    "EntropySource",
    "EntropyTimeoutError",
    "FixedEntropySource",
    "OsEntropySource",
    "SeededEntropySource",
]


class EntropySource(Protocol):
    """Returns ``num_bytes`` bytes of entropy input (one health-test sample per byte)."""

    def get_entropy(self, num_bytes: int) -> bytes: ...


class EntropyExhaustedError(Exception):
    """A :class:`FixedEntropySource` was asked for more bytes than it holds."""


class EntropyTimeoutError(Exception):
    """A read of the entropy source did not finish within its deadline (or an earlier one is
    still blocked): a source failure, counted by the health tests like any other."""


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


class DeadlineEntropySource:
    """Wraps a source so that no read takes longer than ``timeout_seconds``.

    Each read runs in a short-lived helper thread; the caller waits for it at most
    ``timeout_seconds`` and then raises :class:`EntropyTimeoutError`. A thread blocked in a
    system call cannot be stopped, so the late read is left to finish on its own and its bytes
    are dropped; while it is still blocked, every further read fails at once with the same error
    (at most one thread is ever stuck, never one per attempt). ``timeouts`` counts the reads
    that failed this way. Thread-safe (callers serialise on the health tests' lock anyway), and
    fork-safe: nothing but the stuck thread outlives a read, and a forked child has none.
    """

    def __init__(self, source: EntropySource, *, timeout_seconds: float) -> None:
        if isinstance(timeout_seconds, bool) or not isinstance(timeout_seconds, int | float):
            raise TypeError("timeout_seconds must be a number")
        if not 0 < timeout_seconds <= 3600:
            raise ValueError(f"timeout_seconds must be in (0, 3600], got {timeout_seconds}")
        self._source = source
        self._timeout = float(timeout_seconds)
        self._lock = threading.Lock()
        self._stuck: threading.Thread | None = None
        self.timeouts = 0

    def __repr__(self) -> str:
        return f"DeadlineEntropySource({self._source!r}, timeout_seconds={self._timeout:g})"

    @property
    def timeout_seconds(self) -> float:
        return self._timeout

    def get_entropy(self, num_bytes: int) -> bytes:
        _check_count(num_bytes)
        with self._lock:
            stuck = self._stuck
            if stuck is not None and stuck.is_alive():
                self.timeouts += 1
                raise EntropyTimeoutError(
                    f"the entropy source did not answer within {self._timeout:g} s "
                    "(an earlier read is still blocked)"
                )
            self._stuck = None
            done = threading.Event()
            box: list[bytes | BaseException] = []

            def read() -> None:
                try:
                    box.append(self._source.get_entropy(num_bytes))
                except BaseException as e:  # handed to the caller, never lost in the thread
                    box.append(e)
                finally:
                    done.set()

            thread = threading.Thread(target=read, name="entropy-read", daemon=True)
            thread.start()
            if not done.wait(self._timeout):
                self._stuck = thread
                self.timeouts += 1
                raise EntropyTimeoutError(
                    f"the entropy source did not answer within {self._timeout:g} s"
                )
        result = box[0]
        if isinstance(result, BaseException):
            raise result
        return result
