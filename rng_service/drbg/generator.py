"""The service's random byte generators: production and lab (deterministic) mode.

This module owns the life cycle around one CTR_DRBG (SP 800-90A Rev.1 section 10.2.1, with
the derivation function of section 10.3.2): power-on self-test (section 11.3), instantiation
from a health-tested entropy source (SP 800-90B section 4.4) with a nonce and a
per-instance personalization string (section 8.7.1), reseeding on a request count and a
timer (section 9.2), reseeding in a forked child, thread safety, output buffering and the
latched error state. It imports only ``rng_service.errors`` and ``rng_service.clock`` from
the project, and never logs or shows secret state (``repr`` and :class:`GeneratorStatus`
carry counters only).

:class:`ProductionGenerator` is the only generator a production configuration may build.
:class:`DeterministicGenerator` reproduces a byte stream from caller-given seed material for
labs; its stream is specified in its docstring and in ``docs/random-core.md``.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Literal

from rng_service.clock import Clock
from rng_service.drbg.ctr_drbg import MAX_REQUEST_BYTES, MAX_RESEED_INTERVAL, CtrDrbg
from rng_service.drbg.entropy import DeadlineEntropySource, EntropySource
from rng_service.drbg.health import MIN_STARTUP_SAMPLES, HealthTestedEntropySource
from rng_service.drbg.selftest import CAVP_KAT, KnownAnswer, SelfTestError, power_on_self_test
from rng_service.errors import GeneratorUnavailable

__all__ = [
    "ENTROPY_READ_BLOCK",
    "LAB_GENERATE_BYTES",
    "DeterministicGenerator",
    "GeneratorConfig",
    "GeneratorStatus",
    "ProductionGenerator",
]

SECURITY_STRENGTH_BITS = 256
#: Bytes per generate() call of the lab-mode stream (the SP 800-90A maximum, 2**19 bits).
LAB_GENERATE_BYTES = MAX_REQUEST_BYTES
#: Bytes read (and health-tested) from the entropy source per entropy request: a whole
#: SP 800-90B start-up block, so that every read completes an APT window and the repetition
#: check sees a period of up to a kilobyte within one read; the first bytes are used.
ENTROPY_READ_BLOCK = 1024
_PERSONALIZATION_PREFIX = b"rng-service/ProductionGenerator/v1"
_instance_counter = itertools.count()


@dataclass(frozen=True, slots=True)
class GeneratorConfig:
    """Validated generator settings. Defaults and their reasons (``docs/random-core.md``):

    * ``reseed_interval_requests = 65_536`` DRBG generate calls. SP 800-90A allows 2**48; a
      reseed costs one 64-byte entropy read and a few AES blocks (tens of microseconds), so
      we bound the output of one seed to 65,536 requests of at most 64 KiB = 4 GiB.
    * ``reseed_interval_seconds = 60``: bounds to one minute the output an undetected state
      compromise would expose, at 64 bytes of entropy a minute.
    * ``buffer_bytes = 4096``: one DRBG call serves many small draws; at most 4 KiB of future
      output sits in memory, and it is dropped at every reseed.
    * ``min_entropy_bits = 4`` per byte and ``alpha_exponent = 40`` (alpha = 2**-40): the
      SP 800-90B claim and false-positive rate of the health tests. H = 4 is half what an
      OS CSPRNG delivers, so entropy inputs are twice the minimum length and the cut-offs
      (RCT 11, APT 78 of 512) sit far above what a healthy source reaches.
    * ``startup_samples = 1024``: the SP 800-90B section 4.3 minimum.
    * ``entropy_timeout_seconds = 2``: a read of the entropy source that takes longer is a
      source failure (``os.getrandom`` answers in microseconds once the kernel pool is
      initialised; a read that hangs must fail closed, not freeze the service).
    """

    reseed_interval_requests: int = 65_536
    reseed_interval_seconds: float = 60.0
    buffer_bytes: int = 4096
    min_entropy_bits: int = 4
    alpha_exponent: int = 40
    startup_samples: int = MIN_STARTUP_SAMPLES
    entropy_timeout_seconds: float = 2.0

    def __post_init__(self) -> None:
        _int_in("reseed_interval_requests", self.reseed_interval_requests, 1, MAX_RESEED_INTERVAL)
        seconds = self.reseed_interval_seconds
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            raise TypeError("reseed_interval_seconds must be a number")
        if not 0 < seconds <= 86_400:
            raise ValueError(f"reseed_interval_seconds must be in (0, 86400], got {seconds}")
        _int_in("buffer_bytes", self.buffer_bytes, 16, MAX_REQUEST_BYTES)
        _int_in("min_entropy_bits", self.min_entropy_bits, 1, 8)
        _int_in("alpha_exponent", self.alpha_exponent, 20, 40)
        _int_in("startup_samples", self.startup_samples, MIN_STARTUP_SAMPLES, 1 << 20)
        timeout = self.entropy_timeout_seconds
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise TypeError("entropy_timeout_seconds must be a number")
        if not 0 < timeout <= 60:
            raise ValueError(f"entropy_timeout_seconds must be in (0, 60], got {timeout}")

    @property
    def entropy_input_bytes(self) -> int:
        """Bytes per entropy input: 256 bits of claimed min-entropy (SP 800-90A 10.2.1)."""
        return -(-SECURITY_STRENGTH_BITS // self.min_entropy_bits)

    @property
    def nonce_bytes(self) -> int:
        """Bytes of nonce: 128 bits of claimed min-entropy (SP 800-90A section 8.6.7)."""
        return -(-(SECURITY_STRENGTH_BITS // 2) // self.min_entropy_bits)


def _int_in(name: str, value: object, lo: int, hi: int) -> None:
    if type(value) is not int:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be in [{lo}, {hi}], got {value}")


@dataclass(frozen=True, slots=True)
class GeneratorStatus:
    """A snapshot for health endpoints and metrics. Carries no secret.

    ``entropy_read_timeouts`` counts entropy reads that failed their deadline (each is also a
    health-test failure, since the tests count source failures)."""

    state: Literal["ok", "error"]
    reason: str
    instance_id: str
    lab_mode: bool
    reseeds: int
    last_reseed_ns: int
    health_test_failures: int
    entropy_bytes_read: int
    self_test: Literal["passed", "failed"]
    entropy_read_timeouts: int = 0


# Live generators, so that one at-fork hook can reach them all without keeping them alive
# (os.register_at_fork cannot unregister).
_live: weakref.WeakSet[ProductionGenerator | DeterministicGenerator] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for gen in list(_live):
        gen._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class ProductionGenerator:
    """Thread-safe, fork-safe, buffered CTR_DRBG (AES-256, derivation function) generator.

    Start-up order: the power-on self-test (SP 800-90A 11.3), then the SP 800-90B start-up
    health test over ``config.startup_samples`` entropy bytes, then the instance id (SHA-256
    of 16 bytes of entropy, pid, time and a counter; 32 hex digits), then instantiate with
    ``entropy_input_bytes`` of entropy input, ``nonce_bytes`` of nonce and the
    personalization string
    ``prefix || instance id || pid || clock ns || process-wide instance counter``.
    Any failure latches the error state: :meth:`random_bytes` then raises
    :class:`~rng_service.errors.GeneratorUnavailable` until the process restarts.

    Reseeds (fresh entropy input; additional input ``reason || epoch || pid || clock ns``)
    happen before a DRBG call once ``reseed_interval_requests`` calls or
    ``reseed_interval_seconds`` have passed, and before the first output in a forked child,
    which also takes a new instance id.
    """

    lab_mode = False

    def __init__(
        self,
        *,
        entropy: EntropySource,
        clock: Clock,
        config: GeneratorConfig,
        self_test_kat: KnownAnswer = CAVP_KAT,
    ) -> None:
        self._clock = clock
        self._config = config
        # Every read has a deadline (a hung source fails, it does not freeze the caller), and
        # everything read is health-tested as one stream, a whole block per read.
        self._deadline = DeadlineEntropySource(
            entropy, timeout_seconds=config.entropy_timeout_seconds
        )
        self._entropy = HealthTestedEntropySource(
            self._deadline,
            alpha_exponent=config.alpha_exponent,
            min_entropy_bits=config.min_entropy_bits,
            startup_samples=config.startup_samples,
            read_block=ENTROPY_READ_BLOCK,
        )
        self._lock = threading.Lock()
        self._drbg: CtrDrbg | None = None
        self._buf = b""
        self._pos = 0
        self._epoch = 0
        self._requests_since_reseed = 0
        self._last_reseed_mono = clock.monotonic()
        self._last_reseed_ns = 0
        self._error: str | None = None
        self._pid = os.getpid()
        self._fork_pending = False
        self._self_test: Literal["passed", "failed"] = "failed"
        self.instance_id = ""
        try:
            power_on_self_test(self_test_kat)
        except SelfTestError as e:
            self._error = f"power-on self-test failed: {e}"
        else:
            self._self_test = "passed"
            try:
                self.instance_id = self._new_instance_id()
                self._instantiate()
            except Exception as e:
                self._latch(e)
        if not self.instance_id:
            # No entropy for an id: still distinct per process and instance, never used as seed.
            material = f"{os.getpid()}/{clock.now_ns()}/{next(_instance_counter)}".encode()
            self.instance_id = hashlib.sha256(material).hexdigest()[:32]
        _live.add(self)

    def __repr__(self) -> str:
        state = "ok" if self._error is None else "error"
        return f"ProductionGenerator(instance_id={self.instance_id}, epoch={self._epoch}, {state})"

    @property
    def epoch(self) -> int:
        """The reseed counter of the DRBG state that produced the latest bytes."""
        return self._epoch

    def status(self) -> GeneratorStatus:
        """A snapshot, taken WITHOUT the generator's lock: a caller of :meth:`random_bytes` may
        hold that lock for up to ``entropy_timeout_seconds`` while it waits on the entropy
        source, and health checks and metric scrapes must still answer meanwhile. Each field
        is one attribute read (atomic); the snapshot as a whole may straddle a reseed. The
        health tests' latch shows at once, before ``random_bytes`` has recorded it."""
        error = self._error
        if error is None and self._entropy.latched:
            error = self._entropy.reason
        return GeneratorStatus(
            state="ok" if error is None else "error",
            reason=error or "",
            instance_id=self.instance_id,
            lab_mode=False,
            reseeds=self._epoch,
            last_reseed_ns=self._last_reseed_ns,
            health_test_failures=self._entropy.failures,
            entropy_bytes_read=self._entropy.bytes_read,
            self_test=self._self_test,
            entropy_read_timeouts=self._deadline.timeouts,
        )

    def random_bytes(self, n: int) -> bytes:
        """``n`` bytes of DRBG output; raises GeneratorUnavailable in the error state."""
        if type(n) is not int:
            raise TypeError(f"n must be an int, not {type(n).__name__}")
        if n < 0:
            raise ValueError(f"n must not be negative, got {n}")
        with self._lock:
            if self._error is not None:
                raise GeneratorUnavailable(f"random generator unavailable: {self._error}")
            try:
                if self._fork_pending or self._pid != os.getpid():
                    # A forked child is a new instance: a new public id keeps every
                    # (instance_id, epoch) pair in the log naming one DRBG state.
                    self.instance_id = self._new_instance_id()
                    self._reseed(b"fork/" + self.instance_id.encode())
                elif self._reseed_due():
                    self._reseed(b"scheduled")
                pos = self._pos
                avail = len(self._buf) - pos
                if n <= avail:
                    self._pos = pos + n
                    return self._buf[pos : pos + n]
                return self._slow_path(n, avail)
            except GeneratorUnavailable:
                raise
            except Exception as e:
                self._latch(e)
                raise GeneratorUnavailable(f"random generator unavailable: {self._error}") from e

    # --- internals (called with the lock held) ------------------------------------------

    def _slow_path(self, n: int, avail: int) -> bytes:
        parts = [self._buf[self._pos :]] if avail else []
        self._buf = b""
        self._pos = 0
        needed = n - avail
        size = self._config.buffer_bytes
        while needed >= size:
            chunk = self._generate(min(needed, MAX_REQUEST_BYTES))
            parts.append(chunk)
            needed -= len(chunk)
        if needed:
            self._buf = self._generate(size)
            self._pos = needed
            parts.append(self._buf[:needed])
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _generate(self, num_bytes: int) -> bytes:
        # The timer is checked once per random_bytes call; the count before every DRBG call.
        if self._requests_since_reseed >= self._config.reseed_interval_requests:
            self._reseed(b"scheduled")
        drbg = self._drbg
        if drbg is None:
            raise GeneratorUnavailable("random generator is not instantiated")
        self._requests_since_reseed += 1
        return drbg.generate(num_bytes)

    def _new_instance_id(self) -> str:
        """128 random bits, hashed with pid, time and a counter: unique even if a (fake or
        broken) entropy source repeats itself across instances or forked children."""
        material = b"/".join(
            [
                self._entropy.get_entropy(16),
                str(os.getpid()).encode(),
                str(self._clock.now_ns()).encode(),
                str(next(_instance_counter)).encode(),
            ]
        )
        return hashlib.sha256(material).hexdigest()[:32]

    def _reseed_due(self) -> bool:
        return (
            self._requests_since_reseed >= self._config.reseed_interval_requests
            or self._clock.monotonic() - self._last_reseed_mono
            >= self._config.reseed_interval_seconds
        )

    def _instantiate(self) -> None:
        cfg = self._config
        entropy_input = self._entropy.get_entropy(cfg.entropy_input_bytes)
        nonce = self._entropy.get_entropy(cfg.nonce_bytes)
        personalization = b"/".join(
            [
                _PERSONALIZATION_PREFIX,
                self.instance_id.encode(),
                str(os.getpid()).encode(),
                str(self._clock.now_ns()).encode(),
                str(next(_instance_counter)).encode(),
            ]
        )
        self._drbg = CtrDrbg.instantiate(
            entropy_input,
            nonce,
            personalization,
            derivation_function=True,
            reseed_interval=cfg.reseed_interval_requests,
        )
        self._mark_seeded()

    def _reseed(self, reason: bytes) -> None:
        drbg = self._drbg
        if drbg is None:
            raise GeneratorUnavailable("random generator is not instantiated")
        entropy_input = self._entropy.get_entropy(self._config.entropy_input_bytes)
        now_ns = self._clock.now_ns()
        additional = b"/".join(
            [reason, str(self._epoch + 1).encode(), str(os.getpid()).encode(), str(now_ns).encode()]
        )
        drbg.reseed(entropy_input, additional)
        self._epoch += 1
        self._pid = os.getpid()
        self._fork_pending = False
        self._mark_seeded()

    def _mark_seeded(self) -> None:
        self._buf = b""
        self._pos = 0
        self._requests_since_reseed = 0
        self._last_reseed_mono = self._clock.monotonic()
        self._last_reseed_ns = self._clock.now_ns()

    def _latch(self, cause: BaseException) -> None:
        if self._entropy.latched:
            self._error = self._entropy.reason
        elif self._error is None:
            self._error = f"{type(cause).__name__}: {cause}"
        self._buf = b""
        self._pos = 0
        if self._drbg is not None:
            self._drbg.uninstantiate()

    def _after_fork_in_child(self) -> None:
        # Another thread may have held the locks at fork time: the child gets fresh ones.
        self._lock = threading.Lock()
        self._entropy.reinit_lock_after_fork()
        self._buf = b""
        self._pos = 0
        self._fork_pending = True


class DeterministicGenerator:
    """Lab mode: the same interface, a byte stream fixed by caller-given seed material.

    The stream is, exactly: ``CTR_DRBG_Instantiate(entropy_input, nonce, personalization)``
    (AES-256, derivation function, SP 800-90A 10.2.1.3.2), then
    ``G1 || G2 || G3 || ...`` where each ``Gi`` is ``CTR_DRBG_Generate`` of 65,536 bytes
    (2**19 bits) with no additional input; there is no reseed. :meth:`random_bytes` returns
    the next bytes of that stream whatever the request sizes, so any CTR_DRBG
    implementation reproduces it. ``epoch`` stays 0. Never a production default: the seed
    is known to whoever chose it. A forked child continues the same stream (by design).
    """

    lab_mode = True
    epoch = 0

    def __init__(
        self,
        *,
        entropy_input: bytes,
        nonce: bytes,
        personalization: bytes = b"",
        self_test_kat: KnownAnswer = CAVP_KAT,
    ) -> None:
        self._lock = threading.Lock()
        self._buf = b""
        self._pos = 0
        self._error: str | None = None
        self._self_test: Literal["passed", "failed"] = "failed"
        self._bytes_in = len(entropy_input) + len(nonce)
        digest = hashlib.sha256()
        for part in (b"lab", entropy_input, nonce, personalization):
            digest.update(len(part).to_bytes(8, "big") + bytes(part))
        self.instance_id = digest.hexdigest()[:32]
        self._drbg: CtrDrbg | None = None
        try:
            power_on_self_test(self_test_kat)
        except SelfTestError as e:
            self._error = f"power-on self-test failed: {e}"
            return
        self._self_test = "passed"
        self._drbg = CtrDrbg.instantiate(
            entropy_input, nonce, personalization, derivation_function=True
        )
        _live.add(self)

    def __repr__(self) -> str:
        return f"DeterministicGenerator(instance_id={self.instance_id}, lab_mode=True)"

    def _after_fork_in_child(self) -> None:
        # Another thread may have held the lock at fork time; the stream itself continues.
        self._lock = threading.Lock()

    def status(self) -> GeneratorStatus:
        with self._lock:
            return GeneratorStatus(
                state="ok" if self._error is None else "error",
                reason=self._error or "",
                instance_id=self.instance_id,
                lab_mode=True,
                reseeds=0,
                last_reseed_ns=0,
                health_test_failures=0,
                entropy_bytes_read=self._bytes_in,
                self_test=self._self_test,
            )

    def random_bytes(self, n: int) -> bytes:
        """The next ``n`` bytes of the lab stream."""
        if type(n) is not int:
            raise TypeError(f"n must be an int, not {type(n).__name__}")
        if n < 0:
            raise ValueError(f"n must not be negative, got {n}")
        with self._lock:
            if self._error is not None or self._drbg is None:
                raise GeneratorUnavailable(f"random generator unavailable: {self._error}")
            pos = self._pos
            if n <= len(self._buf) - pos:
                self._pos = pos + n
                return self._buf[pos : pos + n]
            parts = [self._buf[pos:]]
            needed = n - (len(self._buf) - pos)
            while True:
                self._buf = self._drbg.generate(LAB_GENERATE_BYTES)
                if needed <= LAB_GENERATE_BYTES:
                    self._pos = needed
                    parts.append(self._buf[:needed])
                    return b"".join(parts)
                parts.append(self._buf)
                needed -= LAB_GENERATE_BYTES
