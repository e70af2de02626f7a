"""Whether the log store can take a commit: the health of the one dependency every outcome needs
besides the generator (nothing is returned before it is durable in the store).

:class:`StoreHealth` learns it from two sources:

* the sequencer's group commits: it is the :class:`~rng_service.writer.appender.AppendObserver`
  the appender reports to (and forwards every report to the next observer, the metrics).
  ``FAILURE_THRESHOLD`` (3) group commits failing in a row mark the store **down**; any commit
  that succeeds marks it **up**;
* the sequencer's recovery from a lost store (``store_lost``, ``store_recovered``: a
  connection lost, a failover): the store is **down** from the loss until the first commit
  or probe that succeeds after the writer recovered (it checked the store and resolved any
  commit in flight), whatever the failure count; no probe runs while it recovers, and one is
  due at once when it has;
* a probe: one small durable write through the store's ordinary write path
  (``set_meta(PROBE_META_KEY, <time>)``: a transaction that needs the store reachable, writable
  and with space for a row), run by the health monitor in a worker thread. It runs every
  ``PROBE_INTERVAL_SECONDS`` while the store is down (until one succeeds, which marks it up), and
  while it is up but no commit has succeeded for that long (an idle service still notices a
  store that went away). A probe that fails, or runs longer than ``PROBE_TIMEOUT_SECONDS``,
  marks the store down.

It does no I/O of its own except in :meth:`StoreHealth.probe` and reads time from the injected
clock only. The meta key it writes holds the probe's time in nanoseconds and nothing else.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Literal, Protocol

from rng_service.clock import Clock
from rng_service.errors import RngServiceError
from rng_service.writer.appender import AppendObserver

__all__ = [
    "FAILURE_THRESHOLD",
    "PROBE_INTERVAL_SECONDS",
    "PROBE_META_KEY",
    "PROBE_TIMEOUT_SECONDS",
    "ProbeTarget",
    "StoreHealth",
    "StoreStatus",
]

_log = logging.getLogger("rng_service.log.store_health")  # the JSON log's logger field, unchanged

#: Group commits failing in a row that mark the store down.
FAILURE_THRESHOLD = 3
#: Seconds between probes while the store is down, or up with no successful commit.
PROBE_INTERVAL_SECONDS = 5.0
#: A probe still running after this long counts as failed (a store that hangs is down).
PROBE_TIMEOUT_SECONDS = 10.0
#: The ``meta`` key the probe writes (its value: the probe's time, decimal nanoseconds).
PROBE_META_KEY = "health_probe_ns"


class ProbeTarget(Protocol):
    """What the probe needs of a :class:`~rng_service.storage.base.LogStorage`."""

    def set_meta(self, key: str, value: bytes) -> None: ...


@dataclass(frozen=True, slots=True)
class StoreStatus:
    """A snapshot for health checks and metrics."""

    state: Literal["up", "down"]
    reason: str
    consecutive_failures: int
    probes: int
    probe_failures: int


class StoreHealth:
    """Tracks whether the store can commit. Thread-safe: the writer thread reports commits, the
    event loop asks for :meth:`status` and starts probes, a worker thread runs them."""

    def __init__(
        self,
        storage: ProbeTarget,
        *,
        clock: Clock,
        forward: AppendObserver | None = None,
        failure_threshold: int = FAILURE_THRESHOLD,
        probe_interval_seconds: float = PROBE_INTERVAL_SECONDS,
        probe_timeout_seconds: float = PROBE_TIMEOUT_SECONDS,
    ) -> None:
        if failure_threshold < 1:
            raise ValueError("failure_threshold must be at least 1")
        self._storage = storage
        self._clock = clock
        self._forward = forward
        self._threshold = failure_threshold
        self._interval = probe_interval_seconds
        self._probe_timeout = probe_timeout_seconds
        self._lock = threading.Lock()
        self._down_reason = ""
        self._recovering = ""  # why the log writer is recovering from a lost store, if it is
        self._consecutive = 0
        self._last_ok = clock.monotonic()  # the store was opened and read at start-up
        self._last_probe = clock.monotonic()
        self._probe_started: float | None = None
        self.probes = 0
        self.probe_failures = 0

    # -- AppendObserver (the writer thread) --------------------------------------------------

    def committed(
        self,
        *,
        entries: int,
        replays_by_kind: dict[str, int],
        kinds: dict[tuple[str, str], int],
        seconds: float,
        tree_size: int,
        published: bool,
    ) -> None:
        with self._lock:
            self._consecutive = 0
            self._last_ok = self._clock.monotonic()
            self._down_reason = ""
        if self._forward is not None:
            self._forward.committed(
                entries=entries, replays_by_kind=replays_by_kind, kinds=kinds, seconds=seconds,
                tree_size=tree_size, published=published,
            )  # fmt: skip

    def append_failed(self) -> None:
        with self._lock:
            self._consecutive += 1
            if self._consecutive >= self._threshold and not self._down_reason:
                self._down_reason = f"{self._consecutive} group commits failed in a row"
        if self._forward is not None:
            self._forward.append_failed()

    def store_lost(self, *, reason: str) -> None:
        with self._lock:
            self._recovering = reason
        if self._forward is not None:
            self._forward.store_lost(reason=reason)

    def ambiguous_commit(self, *, resolution: str, entries: int) -> None:
        if self._forward is not None:
            self._forward.ambiguous_commit(resolution=resolution, entries=entries)

    def integrity_error(self, method: str, check: str) -> None:
        # An edited row refuses the requests relying on it; the store itself can still
        # commit, so health does not change: the metric and its alert say it.
        if self._forward is not None:
            self._forward.integrity_error(method, check)

    def store_recovered(self, *, seconds: float) -> None:
        with self._lock:
            self._recovering = ""
            self._down_reason = (
                "the log writer recovered from a lost store; no commit or probe has succeeded since"
            )
            self._last_probe = float("-inf")  # a probe is due at once
        if self._forward is not None:
            self._forward.store_recovered(seconds=seconds)

    # -- the probe (started by the health monitor) -----------------------------------------

    def probe_due(self) -> bool:
        """True when a probe should start now (none is running)."""
        with self._lock:
            if self._probe_started is not None or self._recovering:
                return False  # the log writer polls the store itself while it recovers
            now = self._clock.monotonic()
            if now - self._last_probe < self._interval:
                return False
            return bool(self._down_reason) or now - self._last_ok >= self._interval

    def probe(self) -> bool:
        """One durable write to the store (blocking: run it in a worker thread). True if the
        store took it; either way the status follows."""
        with self._lock:
            if self._probe_started is not None:
                return False
            self._probe_started = self._last_probe = self._clock.monotonic()
            self.probes += 1
        try:
            self._storage.set_meta(PROBE_META_KEY, str(self._clock.now_ns()).encode())
        except (RngServiceError, OSError) as e:
            with self._lock:
                self._probe_started = None
                self.probe_failures += 1
                self._down_reason = f"store probe failed: {e}"
            return False
        with self._lock:
            self._probe_started = None
            self._consecutive = 0
            self._last_ok = self._clock.monotonic()
            self._down_reason = ""
        return True

    def status(self) -> StoreStatus:
        with self._lock:
            reason = self._recovering or self._down_reason
            started = self._probe_started
            if started is not None and self._clock.monotonic() - started > self._probe_timeout:
                reason = f"store probe has not answered for over {self._probe_timeout:g} s"
            return StoreStatus(
                state="down" if reason else "up",
                reason=reason,
                consecutive_failures=self._consecutive,
                probes=self.probes,
                probe_failures=self.probe_failures,
            )
