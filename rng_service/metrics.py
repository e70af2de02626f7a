"""Every Prometheus collector of the service, declared in one place with explicit buckets.

The registry is injected (tests use a fresh one). The log layer reports through the small
:class:`rng_service.writer.appender.AppendObserver` protocol, which :class:`Metrics` implements;
the generator is read at scrape time through its ``status()``. No label ever carries a secret or
an unbounded value (request ids, table ids): labels are outcome kinds, RPC method names, gRPC
status codes, fixed causes and states; refused calls add a reason, the caller's roles and, for
configured clients only (a bounded set from the config), the client identity.

Every RPC is counted with its status code, ``cause`` and ``class`` (``ok``, ``refusal`` or
``failure``), from the one table :data:`rng_service.rpc.errors.STATUS_CAUSES`; the alert
rules select on ``class``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = [
    "GAMES",
    "GeneratorCollector",
    "LogLabelCollector",
    "MergedCollector",
    "Metrics",
    "StoreCollector",
    "game_of",
]

_LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.002,
    0.005,
    0.01,
    0.02,
    0.05,
    0.1,
    0.2,
    0.5,
    1.0,
    2.0,
    5.0,
)
_GROUP_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
_RECOVERY_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
#: How an ambiguous commit was resolved (rng_service.writer.appender.RESOLUTIONS; the metrics
#: module imports nothing of the log layer).
RESOLUTIONS = ("stored", "not_stored", "unresolved")


#: The game (regulation chapter family) each outcome kind serves, for the ``game`` label.
GAMES: dict[str, str] = {
    "roulette_spin": "roulette",
    "multiball": "blazing_7s",
    "fire_numbers": "mega_fire_blaze",
    "mega_fire_blaze_bonus": "mega_fire_blaze",
    "jackpot_tier": "jackpot",
    "dice_roll": "dice",
    "card_shuffle": "cards",
    "uniform_int": "generic",
    "weighted_choice": "generic",
    "raw_output_session": "lab",
}


class RpcStatus(Protocol):
    """A row of :data:`rng_service.rpc.errors.STATUS_CAUSES` (hashable, a singleton)."""

    @property
    def labels(self) -> tuple[str, str, str]: ...


def game_of(kind: str) -> str:
    """The ``game`` label of an outcome kind; batch kinds are the lab's; others "other"."""
    if kind.endswith("_batch"):
        return "lab"
    return GAMES.get(kind, "other")


class Metrics:
    """The service's own collectors."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.outcomes = Counter(
            "rng_outcomes",
            "Outcomes issued (durably logged and returned), by outcome kind, game and client "
            "(configured client identities only: a bounded set).",
            ["kind", "game", "client"],
            registry=registry,
        )
        self.replays = Counter(
            "rng_outcome_replays",
            "Retried requests answered with an outcome already in the log, by outcome kind.",
            ["kind"],
            registry=registry,
        )
        self.rpc_duration = Histogram(
            "rng_rpc_duration_seconds",
            "gRPC call latency, by method, status code, cause (a fixed word) and class (ok, "
            "refusal: the caller's side, failure: the service's side).",
            ["method", "code", "cause", "class"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self._rpc_children: dict[tuple[str, RpcStatus], Histogram] = {}
        self.undecodable_requests = Counter(
            "rng_rpc_undecodable_requests",
            "Requests whose body is not a valid protobuf message of the method's request type "
            "(refused with INVALID_ARGUMENT before anything ran), by method.",
            ["method"],
            registry=registry,
        )
        self.append_duration = Histogram(
            "rng_log_append_duration_seconds",
            "Time to make one commit group durable (storage transaction).",
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.group_size = Histogram(
            "rng_log_commit_group_size",
            "Entries per group commit.",
            buckets=_GROUP_BUCKETS,
            registry=registry,
        )
        self.log_size = Gauge(
            "rng_log_entries", "Entries in the log (the tree size).", registry=registry
        )
        self.append_failures = Counter(
            "rng_log_append_failures",
            "Group commits that failed (storage unavailable); nothing of them was returned.",
            registry=registry,
        )
        self.last_checkpoint = Gauge(
            "rng_log_last_checkpoint_timestamp_seconds",
            "Unix time of the latest published checkpoint (0 before the first).",
            registry=registry,
        )
        self.auth_denials = Counter(
            "rng_auth_denials",
            "Calls refused before running (nothing drawn or logged), by method, reason "
            "(unconfigured_identity, ambiguous_identity, no_identity, role, table, kind, "
            "profile, client, rate_limit), the caller's roles and configured client "
            "('unconfigured' for an identity not in the config).",
            ["method", "reason", "role", "client"],
            registry=registry,
        )
        self.checkpoints_published = Counter(
            "rng_log_checkpoints_published",
            "Checkpoints stored as published checkpoints.",
            registry=registry,
        )
        self.store_failovers = Counter(
            "rng_log_store_failovers",
            "Times the log writer lost its store (a connection lost: a server restart, a "
            "failover to a promoted standby; or a store found diverged) and took groups again "
            "without a restart, after checking the store and resolving any commit in flight.",
            registry=registry,
        )
        self.store_recovery = Histogram(
            "rng_log_store_recovery_seconds",
            "Time from the log writer noticing the loss of its store to taking groups again.",
            buckets=_RECOVERY_BUCKETS,
            registry=registry,
        )
        self.ambiguous_commits = Counter(
            "rng_log_ambiguous_commits",
            "Group commits whose COMMIT was in flight when the store was lost, by how they were "
            "resolved from the store reached next: stored (their callers got their outcomes), "
            "not_stored (UNAVAILABLE, nothing logged), unresolved (the service stopped or the "
            "store diverged first).",
            ["resolution"],
            registry=registry,
        )
        for resolution in RESOLUTIONS:
            self.ambiguous_commits.labels(resolution=resolution)
        self.witness_up = Gauge(
            "rng_witness_up",
            "1 while the witness cosigns the log's checkpoints, 0 after a round in which it "
            "did not (unreachable, refused, a bad answer or a conflict), by configured witness.",
            ["witness"],
            registry=registry,
        )
        self.witness_requests = Counter(
            "rng_witness_requests",
            "Checkpoints sent to a witness, by witness and result (cosigned, conflict, stale, "
            "unreachable, refused, bad_answer).",
            ["witness", "result"],
            registry=registry,
        )
        self.witness_conflicts = Counter(
            "rng_witness_conflicts",
            "Times a witness refused the log's checkpoint as inconsistent with one it cosigned "
            "(the log was cut back or forked): an alarm.",
            ["witness"],
            registry=registry,
        )
        self.witness_last_cosignature = Gauge(
            "rng_witness_last_cosignature_timestamp_seconds",
            "The timestamp (in the witness's own clock) of the newest cosignature of the "
            "witness, 0 before the first.",
            ["witness"],
            registry=registry,
        )
        self.witness_cosigned_size = Gauge(
            "rng_witness_cosigned_size",
            "Tree size of the newest checkpoint the witness cosigned.",
            ["witness"],
            registry=registry,
        )
        self.witnesses_cosigned = Gauge(
            "rng_witnesses_cosigned",
            "Witnesses that cosigned the checkpoint of the latest round.",
            registry=registry,
        )
        self.witnesses_required = Gauge(
            "rng_witnesses_required",
            "witnessing.min_witnesses: how many witnesses must cosign a checkpoint.",
            registry=registry,
        )
        self.integrity_errors = Counter(
            "rng_log_integrity_errors",
            "Log reads, and outcome requests the sequencer refused (method sequencer), that "
            "got DATA_LOSS because stored entries failed their checks, by method and check "
            "(leaf_hash, entry, columns: a lookup column differs from the "
            "entry's signed bytes; gap: a row of an index range is missing; chain: a table's "
            "chain is broken). Any is a changed or damaged store: stop and investigate.",
            ["method", "check"],
            registry=registry,
        )

    def witnesses_configured(self, names: list[str], required: int) -> None:
        """Creates every witness's series before the first round (up 0 until it cosigns)."""
        for name in names:
            self.witness_up.labels(witness=name).set(0)
            self.witness_conflicts.labels(witness=name)
            self.witness_last_cosignature.labels(witness=name)
            for result in ("cosigned", "conflict", "unreachable"):
                self.witness_requests.labels(witness=name, result=result)
        self.witnesses_required.set(required)

    # rng_service.writer.publisher.WitnessObserver
    def witness_outcome(
        self, *, witness: str, result: str, size: int, timestamp: int | None
    ) -> None:
        self.witness_requests.labels(witness=witness, result=result).inc()
        if result == "conflict":
            self.witness_conflicts.labels(witness=witness).inc()
        if result in ("cosigned", "stale"):
            self.witness_up.labels(witness=witness).set(1)
        else:
            self.witness_up.labels(witness=witness).set(0)
        if result == "cosigned" and timestamp is not None:
            self.witness_last_cosignature.labels(witness=witness).set(timestamp)
            self.witness_cosigned_size.labels(witness=witness).set(size)

    def witness_quorum(self, *, cosigned: int, required: int) -> None:
        self.witnesses_cosigned.set(cosigned)
        self.witnesses_required.set(required)

    # AppendObserver
    def committed(
        self, *, entries: int, replays_by_kind: dict[str, int],
        kinds: dict[tuple[str, str], int],
        seconds: float, tree_size: int, published: bool,
    ) -> None:  # fmt: skip
        self.append_duration.observe(seconds)
        if entries:
            self.group_size.observe(entries)
        for (kind, client), n in kinds.items():
            self.outcomes.labels(kind=kind, game=game_of(kind), client=client).inc(n)
        for kind, n in replays_by_kind.items():
            self.replays.labels(kind=kind).inc(n)
        self.log_size.set(tree_size)
        if published:
            self.checkpoints_published.inc()
            self.last_checkpoint.set_to_current_time()

    def append_failed(self) -> None:
        self.append_failures.inc()

    def expect_integrity_errors(self, methods: Iterable[str], checks: Iterable[str]) -> None:
        """Exports ``rng_log_integrity_errors_total`` at 0 for every (method, check) from the
        start: Prometheus' ``increase()`` sees nothing in a series whose first sample is
        already 1, so without this the first integrity error after a start (the one that
        matters) would never fire RngLogIntegrityError."""
        for method in methods:
            for check in checks:
                self.integrity_errors.labels(method=method, check=check)

    # IntegrityObserver (rng_service.rpc.log_servicer) and AppendObserver (the sequencer)
    def integrity_error(self, method: str, check: str) -> None:
        self.integrity_errors.labels(method=method, check=check).inc()

    def store_lost(self, *, reason: str) -> None:
        pass  # rng_log_store_up (StoreCollector) shows it

    def ambiguous_commit(self, *, resolution: str, entries: int) -> None:
        self.ambiguous_commits.labels(resolution=resolution).inc()

    def store_recovered(self, *, seconds: float) -> None:
        self.store_failovers.inc()
        self.store_recovery.observe(seconds)

    # DenialObserver (rng_service.rpc.auth)
    def denied(self, *, method: str, reason: str, role: str, client: str) -> None:
        self.auth_denials.labels(method=method, reason=reason, role=role, client=client).inc()

    # rng_service.rpc.decoding.DecodeObserver
    def undecodable(self, method: str) -> None:
        self.undecodable_requests.labels(method=method).inc()

    # RpcObserver
    def rpc_finished(self, method: str, status: RpcStatus, seconds: float) -> None:
        # One labels() lookup per (method, status row), not per call: children are never
        # removed, and rows are singletons hashed by identity.
        child = self._rpc_children.get((method, status))
        if child is None:
            child = self.rpc_duration.labels(method, *status.labels)
            self._rpc_children[(method, status)] = child
        child.observe(seconds)


class GeneratorCollector(Collector):
    """Reads a generator's status at scrape time (state, reseeds, health-test failures)."""

    def __init__(self, status: Callable[[], Any]) -> None:
        self._status = status

    def collect(self) -> Iterator[Any]:
        s = self._status()
        ok = s.state == "ok"
        up = GaugeMetricFamily(
            "rng_generator_up",
            "1 when the generator may issue outcomes, 0 in its latched error state.",
        )
        up.add_metric([], 1.0 if ok else 0.0)
        yield up
        state = GaugeMetricFamily(
            "rng_generator_state", "Generator state (1 for the current one).", labels=["state"]
        )
        for name in ("ok", "error"):
            state.add_metric([name], 1.0 if s.state == name else 0.0)
        yield state
        reseeds = CounterMetricFamily("rng_generator_reseeds", "DRBG reseeds from fresh entropy.")
        reseeds.add_metric([], float(s.reseeds))
        yield reseeds
        failures = CounterMetricFamily(
            "rng_entropy_health_test_failures",
            "SP 800-90B health-test failures of the entropy source (each discards its input).",
        )
        failures.add_metric([], float(s.health_test_failures))
        yield failures
        entropy = CounterMetricFamily(
            "rng_entropy_read_bytes", "Bytes read from the entropy source."
        )
        entropy.add_metric([], float(s.entropy_bytes_read))
        yield entropy
        timeouts = CounterMetricFamily(
            "rng_entropy_read_timeouts",
            "Entropy source reads that passed their deadline (generator.entropy_timeout_seconds); "
            "each is a source failure.",
        )
        timeouts.add_metric([], float(getattr(s, "entropy_read_timeouts", 0)))
        yield timeouts
        if s.last_reseed_ns:
            last = GaugeMetricFamily(
                "rng_generator_last_reseed_timestamp_seconds",
                "Unix time of the last reseed (or instantiation).",
            )
            last.add_metric([], s.last_reseed_ns / 1e9)
            yield last


class StoreCollector(Collector):
    """Reads the log store's health at scrape time (``rng_service.writer.store_health``)."""

    def __init__(self, status: Callable[[], Any]) -> None:
        self._status = status

    def collect(self) -> Iterator[Any]:
        s = self._status()
        up = GaugeMetricFamily(
            "rng_log_store_up",
            "1 while the log store can commit, 0 after 3 group commits failed in a row or a "
            "failed store probe, until a commit or a probe succeeds, and from the loss of the "
            "store's connection until the first commit or probe after the writer recovered.",
        )
        up.add_metric([], 1.0 if s.state == "up" else 0.0)
        yield up
        probes = CounterMetricFamily(
            "rng_log_store_probes",
            "Store probes (one small durable write) run while the store was down or idle, by "
            "result.",
            labels=["result"],
        )
        probes.add_metric(["ok"], float(s.probes - s.probe_failures))
        probes.add_metric(["failed"], float(s.probe_failures))
        yield probes


class MergedCollector(Collector):
    """The writer process's metrics with its front ends' (``serve --front-ends N``), summed.

    What prometheus-client's multiprocess mode does, without its files and its limits
    (custom collectors, gauges): ``own`` is the writer's registry (generator, store, log
    writer, its process); ``front_ends()`` gives each front end's latest metric families (it
    pushes them every second over the writer's channel: RPC counts and latencies, decode
    errors, the drain). Samples with the same name and labels are added (counters, histogram
    buckets, sums and counts; the front ends' gauges are in-progress counts, which add up);
    a ``_created`` sample keeps the earliest time. The front ends' process metrics are left
    out (the writer's own process is reported)."""

    def __init__(self, own: CollectorRegistry, front_ends: Callable[[], list[list[Any]]]) -> None:
        self._own = own
        self._front_ends = front_ends

    def collect(self) -> Iterator[Any]:
        from prometheus_client.metrics_core import Metric

        families: dict[str, Any] = {}
        merged: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], Any]] = {}
        sources: list[tuple[bool, list[Any]]] = [(True, list(self._own.collect()))]
        sources += [(False, fams) for fams in self._front_ends()]
        for own, fams in sources:
            for fam in fams:
                if not own and fam.name.startswith(("process_", "python_")):
                    continue
                if fam.name not in families:
                    families[fam.name] = Metric(fam.name, fam.documentation, fam.type, fam.unit)
                    merged[fam.name] = {}
                samples = merged[fam.name]
                for s in fam.samples:
                    key = (s.name, tuple(sorted(s.labels.items())))
                    prev = samples.get(key)
                    if prev is None:
                        samples[key] = s
                    elif s.name.endswith("_created"):
                        samples[key] = prev._replace(value=min(prev.value, s.value))
                    else:
                        samples[key] = prev._replace(value=prev.value + s.value)
        for name, fam in families.items():
            fam.samples = list(merged[name].values())
            yield fam


class LogLabelCollector(Collector):
    """Another collector's series with the label ``log`` = the origin of the log this process
    serves (several ``[[logs]]``: one log process each, docs/operations/monitoring.md, "Several
    logs"). The values are the configured origins only, so the label set stays bounded by the
    configuration. The process's own ``process_*`` and ``python_*`` series are left as they are
    (they describe the process; Prometheus's ``instance`` tells the processes apart)."""

    def __init__(self, source: Collector, origin: str) -> None:
        self._source = source
        self._origin = origin

    def collect(self) -> Iterator[Any]:
        from prometheus_client.metrics_core import Metric

        for fam in self._source.collect():
            if fam.name.startswith(("process_", "python_")):
                yield fam
                continue
            out = Metric(fam.name, fam.documentation, fam.type, fam.unit)
            out.samples = [
                s._replace(labels={**s.labels, "log": self._origin}) for s in fam.samples
            ]
            yield out
