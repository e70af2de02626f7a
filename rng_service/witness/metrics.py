"""Every Prometheus series of ``rng-witness`` (its ``[metrics]`` endpoint), in one module.

The witness's own view, named ``rng_witness_server_*`` so that it is never mistaken for the
service's view of the witnesses it asks (``rng_witness_up{witness}``,
``rng_witness_conflicts_total{witness}``: rng_service.metrics). The series, their labels and the
alerts on them are docs/operations/witnesses.md, "Witnesses"; the rules are
deploy/prometheus/witness-alerts.yml.

Labels are bounded: ``origin`` takes only the configured origins, and ``""`` for a request that
names none of them (unparseable, or an unknown log), never text from a request. Every
``(origin, result)`` pair that can occur is exported at 0 from the start, so that
``increase()`` sees the first fork; the cosigned size and time of each configured origin come
from the persisted state at start-up, so a restarted witness shows what it cosigned. Nothing
here sees the witness's key: its name (public, the cosignature's key name) is the one label of
``rng_witness_server_info``.

The server tells :meth:`WitnessMetrics.answered` of each answer (the
:class:`~rng_service.witness.server.AnswerSink` protocol); the decision code imports nothing from
here. Registered on an injected :class:`~prometheus_client.CollectorRegistry`, never the global
one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from rng_service.errors import StorageUnavailable
from rng_service.witness.core import Answer, Result
from rng_service.witness.state import LogHead

__all__ = ["NO_ORIGIN", "RESULTS_WITHOUT_ORIGIN", "StateCollector", "WitnessMetrics"]

#: The ``origin`` label of requests that name no configured origin.
NO_ORIGIN = ""
#: The results a request without a configured origin can come to (a body that does not parse,
#: a log the witness does not cosign, or a 400 before the body is read).
RESULTS_WITHOUT_ORIGIN = (Result.MALFORMED, Result.UNKNOWN_LOG)


class StateCollector(Collector):
    """``rng_witness_server_state_up``: 1 when the state file could be read at this scrape."""

    def __init__(self, probe: Callable[[], None]) -> None:
        self._probe = probe

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            self._probe()
            up = 1.0
        except StorageUnavailable:
            up = 0.0
        yield GaugeMetricFamily(
            "rng_witness_server_state_up",
            "1 when the witness's state file could be read at this scrape, else 0 (a state "
            'that cannot be written shows as result="unavailable" requests)',
            value=up,
        )


class WitnessMetrics:
    """The witness's counters and gauges on ``registry``, for the configured ``origins``, with
    the latest cosigned checkpoint of each as the state holds it (``heads``)."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        name: str,
        version: str,
        origins: Collection[str],
        heads: Iterable[LogHead],
    ) -> None:
        self._origins = frozenset(origins)
        self._lock = threading.Lock()
        self._latest: dict[str, tuple[int, int]] = {}
        self.requests = Counter(
            "rng_witness_server_requests",
            'add-checkpoint requests answered, by configured log origin ("" for a request '
            "naming none) and result",
            ["origin", "result"],
            registry=registry,
        )
        self.cosigned_size = Gauge(
            "rng_witness_server_cosigned_size",
            "Size of the latest checkpoint this witness cosigned, per configured log (0: none)",
            ["origin"],
            registry=registry,
        )
        self.cosigned_timestamp = Gauge(
            "rng_witness_server_cosigned_timestamp_seconds",
            "Unix time of this witness's latest cosignature, per configured log (0: none)",
            ["origin"],
            registry=registry,
        )
        info = Gauge(
            "rng_witness_server_info",
            "Always 1: the witness's key name (public: it names its cosignatures) and version",
            ["name", "version"],
            registry=registry,
        )
        info.labels(name=name, version=version).set(1)
        for origin in sorted(self._origins):
            for result in Result:
                self.requests.labels(origin=origin, result=result.value)
            self.cosigned_size.labels(origin=origin).set(0)
            self.cosigned_timestamp.labels(origin=origin).set(0)
        for result in RESULTS_WITHOUT_ORIGIN:
            self.requests.labels(origin=NO_ORIGIN, result=result.value)
        for head in heads:
            if head.origin in self._origins:
                # The cosignature's timestamp is the same clock reading in whole seconds.
                self._cosigned(head.origin, head.size, head.updated_ns // 1_000_000_000)

    def answered(self, answer: Answer) -> None:
        if answer.result is None:
            return
        origin = answer.log if answer.log in self._origins else NO_ORIGIN
        if origin == NO_ORIGIN and answer.result not in RESULTS_WITHOUT_ORIGIN:
            # Not reached: the witness names the configured origin of every other result.
            # Counted as malformed rather than growing a series no rule or test expects.
            self.requests.labels(origin=NO_ORIGIN, result=Result.MALFORMED.value).inc()
            return
        self.requests.labels(origin=origin, result=answer.result.value).inc()
        if answer.result is Result.COSIGNED and answer.size is not None:
            self._cosigned(origin, answer.size, answer.timestamp or 0)

    def _cosigned(self, origin: str, size: int, timestamp: int) -> None:
        # Two requests may be answered in another order than the state stored them; the state
        # never lets an origin's size go down, so neither does the gauge, and the time shown
        # is the newest cosignature's.
        with self._lock:
            old_size, old_time = self._latest.get(origin, (0, 0))
            size, timestamp = max(size, old_size), max(timestamp, old_time)
            self._latest[origin] = (size, timestamp)
            self.cosigned_size.labels(origin=origin).set(size)
            self.cosigned_timestamp.labels(origin=origin).set(timestamp)
