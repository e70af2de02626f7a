"""Continuous health tests on entropy input, per NIST SP 800-90B section 4.4.

This module owns the Repetition Count Test (section 4.4.1), the Adaptive Proportion Test
(section 4.4.2, window W = 512 for non-binary samples), the start-up test (section 4.3: the
same tests over at least 1,024 samples before any entropy input is used), their cut-offs,
and the policy on failure: the failing entropy input is discarded and requested again; three
failures in a row latch the error state, after which :class:`HealthTestedEntropySource`
never returns entropy again (a restart is needed). It does no I/O of its own and never
records sample values.

Samples are bytes. With a claimed min-entropy of ``H`` bits per sample and a false-positive
probability ``alpha = 2**-a``:

* RCT cut-off ``C = 1 + ceil(a / H)``: a run of ``C`` identical samples fails.
* APT cut-off ``C = 1 + CRITBINOM(W, 2**-H, 1 - alpha)``: the least ``C`` with
  ``P(X >= C) <= alpha`` for ``X ~ Binomial(W, 2**-H)``; ``C`` occurrences of a window's first
  sample within the window fail. Computed here in exact integer arithmetic.

``docs/random-core.md`` derives the defaults (``a = 40``, ``H = 4``) and the false-alarm rate.
"""

from __future__ import annotations

import threading
from math import comb

from rng_service.drbg.entropy import EntropySource

__all__ = [
    "APT_WINDOW",
    "MAX_CONSECUTIVE_FAILURES",
    "MIN_STARTUP_SAMPLES",
    "AdaptiveProportionTest",
    "EntropyHealthError",
    "HealthTestedEntropySource",
    "RepetitionCountTest",
    "adaptive_proportion_cutoff",
    "repetition_count_cutoff",
]

APT_WINDOW = 512  # section 4.4.2: W = 512 for non-binary samples
MIN_STARTUP_SAMPLES = 1024  # section 4.3: at least 1,024 consecutive samples at start-up
MAX_CONSECUTIVE_FAILURES = 3


class EntropyHealthError(Exception):
    """The health tests latched the error state: no entropy until restart."""


def _check_params(alpha_exponent: int, min_entropy_bits: int) -> None:
    if type(alpha_exponent) is not int or not 20 <= alpha_exponent <= 40:
        raise ValueError(f"alpha_exponent must be an int in [20, 40], got {alpha_exponent!r}")
    if type(min_entropy_bits) is not int or not 1 <= min_entropy_bits <= 8:
        raise ValueError(f"min_entropy_bits must be an int in [1, 8], got {min_entropy_bits!r}")


def repetition_count_cutoff(alpha_exponent: int, min_entropy_bits: int) -> int:
    """RCT cut-off ``1 + ceil(a / H)`` (section 4.4.1) for ``alpha = 2**-a``."""
    _check_params(alpha_exponent, min_entropy_bits)
    return 1 + -(-alpha_exponent // min_entropy_bits)


def adaptive_proportion_cutoff(
    alpha_exponent: int, min_entropy_bits: int, window: int = APT_WINDOW
) -> int:
    """APT cut-off (section 4.4.2): least ``C`` with ``P(Binomial(W, 2**-H) >= C) <= 2**-a``.

    With ``p = 2**-H`` every probability is an integer over ``2**(H W)``, so the comparison
    ``tail(C) * 2**a <= 2**(H W)`` is exact.
    """
    _check_params(alpha_exponent, min_entropy_bits)
    q = (1 << min_entropy_bits) - 1  # (1 - p) * 2**H
    denominator = 1 << (min_entropy_bits * window)
    tail = denominator  # P(X >= 0) = 1, scaled by the denominator
    for c in range(window + 1):
        if tail << alpha_exponent <= denominator:
            return c
        tail -= comb(window, c) * q ** (window - c)  # remove P(X = c)
    return window + 1


class RepetitionCountTest:
    """Section 4.4.1: fails when ``cutoff`` consecutive samples are identical."""

    __slots__ = ("_count", "_last", "cutoff")

    def __init__(self, cutoff: int) -> None:
        if cutoff < 2:
            raise ValueError("RCT cut-off must be at least 2")
        self.cutoff = cutoff
        self._last = -1
        self._count = 0

    def reset(self) -> None:
        self._last = -1
        self._count = 0

    def feed(self, samples: bytes) -> bool:
        """Runs over ``samples``; False (and a reset) on failure."""
        last, count, cutoff = self._last, self._count, self.cutoff
        for x in samples:
            if x == last:
                count += 1
                if count >= cutoff:
                    self.reset()
                    return False
            else:
                last, count = x, 1
        self._last, self._count = last, count
        return True


class AdaptiveProportionTest:
    """Section 4.4.2: counts the first sample of each window of ``window`` samples."""

    __slots__ = ("_count", "_reference", "_seen", "cutoff", "window")

    def __init__(self, cutoff: int, window: int = APT_WINDOW) -> None:
        if not 2 <= cutoff <= window:
            raise ValueError("APT cut-off must be in [2, window]")
        self.cutoff = cutoff
        self.window = window
        self._reference = -1
        self._count = 0
        self._seen = 0  # samples of the current window seen so far; 0 = no window open

    def reset(self) -> None:
        self._reference = -1
        self._count = 0
        self._seen = 0

    def feed(self, samples: bytes) -> bool:
        """Runs over ``samples``; False (and a reset) on failure."""
        ref, count, seen = self._reference, self._count, self._seen
        window, cutoff = self.window, self.cutoff
        for x in samples:
            if seen == 0:
                ref, count, seen = x, 1, 1
                continue
            seen += 1
            if x == ref:
                count += 1
                if count >= cutoff:
                    self.reset()
                    return False
            if seen == window:
                seen = 0
        self._reference, self._count, self._seen = ref, count, seen
        return True


class HealthTestedEntropySource:
    """An :class:`EntropySource` that health-tests everything its inner source returns.

    The start-up test runs on the first request (or :meth:`startup`): ``startup_samples``
    bytes are read, tested and discarded. Each entropy input that fails a test is discarded
    and requested again; ``MAX_CONSECUTIVE_FAILURES`` failures in a row latch the error state
    (:attr:`latched`), after which every request raises :class:`EntropyHealthError`.
    Exceptions of the inner source count as failures too. Thread-safe.
    """

    def __init__(
        self,
        source: EntropySource,
        *,
        alpha_exponent: int = 40,
        min_entropy_bits: int = 4,
        startup_samples: int = MIN_STARTUP_SAMPLES,
    ) -> None:
        if type(startup_samples) is not int or startup_samples < MIN_STARTUP_SAMPLES:
            raise ValueError(f"startup_samples must be at least {MIN_STARTUP_SAMPLES}")
        self._source = source
        self._rct = RepetitionCountTest(repetition_count_cutoff(alpha_exponent, min_entropy_bits))
        self._apt = AdaptiveProportionTest(
            adaptive_proportion_cutoff(alpha_exponent, min_entropy_bits)
        )
        self._startup_samples = startup_samples
        self._lock = threading.Lock()
        self._started = False
        self._consecutive = 0
        self.failures = 0
        self.bytes_read = 0
        self.latched = False
        self.reason = ""

    def __repr__(self) -> str:
        return (
            f"HealthTestedEntropySource(rct_cutoff={self._rct.cutoff}, "
            f"apt_cutoff={self._apt.cutoff}, failures={self.failures}, latched={self.latched})"
        )

    def reinit_lock_after_fork(self) -> None:
        """For a forked child: another parent thread may have held the lock at fork time."""
        self._lock = threading.Lock()

    @property
    def rct_cutoff(self) -> int:
        return self._rct.cutoff

    @property
    def apt_cutoff(self) -> int:
        return self._apt.cutoff

    def startup(self) -> None:
        """Runs the start-up test if it has not passed yet."""
        with self._lock:
            self._startup_locked()

    def get_entropy(self, num_bytes: int) -> bytes:
        with self._lock:
            self._startup_locked()
            return self._read_tested(num_bytes, "entropy input")

    def _startup_locked(self) -> None:
        if not self._started:
            self._read_tested(self._startup_samples, "start-up test")
            self._started = True

    def _read_tested(self, num_bytes: int, what: str) -> bytes:
        while True:
            if self.latched:
                raise EntropyHealthError(self.reason)
            try:
                data = self._source.get_entropy(num_bytes)
            except Exception as e:
                problem = f"entropy source raised {type(e).__name__}"
            else:
                self.bytes_read += len(data)
                if len(data) != num_bytes:
                    problem = f"entropy source returned {len(data)} of {num_bytes} bytes"
                elif not self._rct.feed(data):
                    problem = "repetition count test (SP 800-90B 4.4.1) failed"
                elif not self._apt.feed(data):
                    problem = "adaptive proportion test (SP 800-90B 4.4.2) failed"
                else:
                    self._consecutive = 0
                    return data
            # The failing input is discarded; both tests restart on fresh samples.
            self._rct.reset()
            self._apt.reset()
            self.failures += 1
            self._consecutive += 1
            if self._consecutive >= MAX_CONSECUTIVE_FAILURES:
                self.latched = True
                self.reason = (
                    f"entropy health tests failed {self._consecutive} times in a row "
                    f"({what}; last: {problem})"
                )
