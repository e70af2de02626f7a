"""Injected time.

Only :class:`SystemClock` reads the real clocks; everything else takes a :class:`Clock` so that
tests are deterministic (house style: time and entropy are injected).
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

__all__ = ["Clock", "FakeClock", "SystemClock"]


class Clock(Protocol):
    def now_ns(self) -> int:
        """Wall-clock time, nanoseconds since the Unix epoch (UTC)."""
        ...

    def monotonic(self) -> float:
        """Monotonic seconds, for intervals only."""
        ...


class SystemClock:
    def now_ns(self) -> int:
        return time.time_ns()

    def monotonic(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, start_ns: int = 1_767_225_600 * 10**9) -> None:
        self._lock = threading.Lock()
        self._now_ns = start_ns
        self._mono = 0.0

    def now_ns(self) -> int:
        with self._lock:
            return self._now_ns

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now_ns += int(seconds * 1e9)
            self._mono += seconds
