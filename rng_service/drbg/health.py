"""Continuous health tests on entropy input, per NIST SP 800-90B section 4.4.

This module owns the Repetition Count Test (section 4.4.1), the Adaptive Proportion Test
(section 4.4.2, window W = 512 for non-binary samples), the start-up test (section 4.3: the
same tests over at least 1,024 samples before any entropy input is used), their cut-offs, a
repetition check of our own (an entropy input that repeats earlier source output, or itself,
is refused: it catches period-k patterns of distinct bytes that neither SP 800-90B test
sees), and the policy on failure: the failing entropy input is discarded and requested again;
three failures among the last 16 reads latch the error state, after which
:class:`HealthTestedEntropySource` never returns entropy again (a restart is needed).

The tests see the source's output as ONE continuous stream: every byte read, accepted or
not, goes through both tests in order, across reads and reseeds (a run or a window that spans
two reads is judged as one). Each read takes at least ``read_block`` samples (1,024 in the
production generator) so that every read completes an APT window and the repetition check
sees periods up to a kilobyte at once; only the first bytes asked for are used.

These are sanity checks on the operating system's conditioned output, not an SP 800-90B
validation of a noise source (docs/random-core.md, "What these tests can and cannot catch on an
OS CSPRNG"). The module does no I/O of its own and keeps no sample values beyond the repetition
check's bounded history.

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
from collections import deque
from math import comb

from rng_service.drbg.entropy import EntropySource, EntropyTimeoutError

__all__ = [
    "APT_WINDOW",
    "LATCH_FAILURES",
    "LATCH_READS",
    "MIN_STARTUP_SAMPLES",
    "REPEAT_CHUNK",
    "REPEAT_HISTORY_BYTES",
    "REPEAT_STRIDE",
    "AdaptiveProportionTest",
    "EntropyHealthError",
    "HealthTestedEntropySource",
    "RepetitionCountTest",
    "adaptive_proportion_cutoff",
    "repetition_count_cutoff",
]

APT_WINDOW = 512  # section 4.4.2: W = 512 for non-binary samples
MIN_STARTUP_SAMPLES = 1024  # section 4.3: at least 1,024 consecutive samples at start-up
#: The error state latches when this many of the last ``LATCH_READS`` reads failed (so three
#: failures in a row latch within one request: the read and its two retries).
LATCH_FAILURES = 3
LATCH_READS = 16
#: The repetition check looks for the ``REPEAT_CHUNK``-byte strings at offsets 0,
#: ``REPEAT_STRIDE``, 2 * ``REPEAT_STRIDE``, ... of each read in the last
#: ``REPEAT_HISTORY_BYTES`` of source output before them (that read's earlier bytes included).
#: A healthy source repeats 16 given bytes by chance with probability 2**-128 per position:
#: 16 strings x 66,560 positions per 1 KiB read make a false alarm about 2**-108 per read.
REPEAT_CHUNK = 16
REPEAT_STRIDE = 64
REPEAT_HISTORY_BYTES = 65_536


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
    """Section 4.4.1: fails when ``cutoff`` consecutive samples are identical.

    The run carries over from one :meth:`feed` to the next and is not cleared by a failure:
    a stuck source keeps failing at every further sample, a healthy one passes again at its
    next different sample.
    """

    __slots__ = ("_count", "_last", "cutoff")

    def __init__(self, cutoff: int) -> None:
        if cutoff < 2:
            raise ValueError("RCT cut-off must be at least 2")
        self.cutoff = cutoff
        self._last = -1
        self._count = 0

    def feed(self, samples: bytes) -> bool:
        """Runs over all of ``samples``; False if a run reached the cut-off in them."""
        last, count, cutoff = self._last, self._count, self.cutoff
        ok = True
        for x in samples:
            if x == last:
                count += 1
                if count >= cutoff:
                    ok = False
            else:
                last, count = x, 1
        self._last, self._count = last, count
        return ok


class AdaptiveProportionTest:
    """Section 4.4.2: counts the first sample of each window of ``window`` samples.

    Windows run on across :meth:`feed` calls. A window fails at the sample that brings its
    reference's count to the cut-off, and the next sample opens a new window.
    """

    __slots__ = ("_count", "_reference", "_seen", "cutoff", "window")

    def __init__(self, cutoff: int, window: int = APT_WINDOW) -> None:
        if not 2 <= cutoff <= window:
            raise ValueError("APT cut-off must be in [2, window]")
        self.cutoff = cutoff
        self.window = window
        self._reference = -1
        self._count = 0
        self._seen = 0  # samples of the current window seen so far; 0 = no window open

    def feed(self, samples: bytes) -> bool:
        """Runs over all of ``samples``; False if a window failed in them."""
        ref, count, seen = self._reference, self._count, self._seen
        window, cutoff = self.window, self.cutoff
        ok = True
        for x in samples:
            if seen == 0:
                ref, count, seen = x, 1, 1
                continue
            seen += 1
            if x == ref:
                count += 1
                if count >= cutoff:
                    ok = False
                    seen = 0  # this window has failed; the next sample opens a new one
                    continue
            if seen == window:
                seen = 0
        self._reference, self._count, self._seen = ref, count, seen
        return ok


class HealthTestedEntropySource:
    """An :class:`EntropySource` that health-tests everything its inner source returns.

    The start-up test runs on the first request (or :meth:`startup`): ``startup_samples``
    bytes are read, tested and discarded. Every later request reads
    ``max(num_bytes, read_block)`` bytes, tests them all and returns the first ``num_bytes``.
    A read fails when the RCT or APT fails in it, when the repetition check finds one of its
    16-byte strings at offsets 0, 64, 128, ... earlier in the source output (the last 64 KiB,
    this read's earlier bytes included: a period of up to 64 KiB, whatever its bytes), or when
    the inner source raises or returns a short read. A failing read is discarded
    and requested again; ``LATCH_FAILURES`` failures among the last ``LATCH_READS`` reads latch
    the error state (:attr:`latched`), after which every request raises
    :class:`EntropyHealthError`. Thread-safe. ``failures``, ``bytes_read`` and ``latched`` are
    plain attributes that a status reader may read without the lock.
    """

    def __init__(
        self,
        source: EntropySource,
        *,
        alpha_exponent: int = 40,
        min_entropy_bits: int = 4,
        startup_samples: int = MIN_STARTUP_SAMPLES,
        read_block: int = 0,
    ) -> None:
        if type(startup_samples) is not int or startup_samples < MIN_STARTUP_SAMPLES:
            raise ValueError(f"startup_samples must be at least {MIN_STARTUP_SAMPLES}")
        if type(read_block) is not int or not 0 <= read_block <= REPEAT_HISTORY_BYTES:
            raise ValueError(f"read_block must be in [0, {REPEAT_HISTORY_BYTES}]")
        self._source = source
        self._rct = RepetitionCountTest(repetition_count_cutoff(alpha_exponent, min_entropy_bits))
        self._apt = AdaptiveProportionTest(
            adaptive_proportion_cutoff(alpha_exponent, min_entropy_bits)
        )
        self._startup_samples = startup_samples
        self._read_block = read_block
        self._history = bytearray()
        self._recent: deque[bool] = deque(maxlen=LATCH_READS)  # True = the read failed
        self._lock = threading.Lock()
        self._started = False
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

    def _check(self, data: bytes) -> str:
        """Feeds ``data`` to every test (all of them see every byte); the first problem."""
        rct_ok = self._rct.feed(data)
        apt_ok = self._apt.feed(data)
        repeat = self._repeat(data)
        self._history += data
        del self._history[:-REPEAT_HISTORY_BYTES]
        if not rct_ok:
            return "repetition count test (SP 800-90B 4.4.1) failed"
        if not apt_ok:
            return "adaptive proportion test (SP 800-90B 4.4.2) failed"
        if repeat >= 0:
            return (
                f"repetition check failed: the {REPEAT_CHUNK} bytes at offset {repeat} of the "
                "input occurred earlier in the source output"
            )
        return ""

    def _repeat(self, data: bytes) -> int:
        """The offset of the first checked string of ``data`` found earlier, else -1."""
        base = len(self._history)
        buf = bytes(self._history) + data
        for q in range(0, len(data) - REPEAT_CHUNK + 1, REPEAT_STRIDE):
            # An occurrence that starts before base + q ends before base + q + REPEAT_CHUNK.
            if buf.find(data[q : q + REPEAT_CHUNK], 0, base + q + REPEAT_CHUNK - 1) >= 0:
                return q
        return -1

    def _read_tested(self, num_bytes: int, what: str) -> bytes:
        wanted = max(num_bytes, self._read_block)
        while True:
            if self.latched:
                raise EntropyHealthError(self.reason)
            try:
                data = self._source.get_entropy(wanted)
            except Exception as e:
                problem = (
                    str(e)  # names the deadline; nothing secret in it
                    if isinstance(e, EntropyTimeoutError)
                    else f"entropy source raised {type(e).__name__}"
                )
            else:
                self.bytes_read += len(data)
                if len(data) != wanted:
                    problem = f"entropy source returned {len(data)} of {wanted} bytes"
                else:
                    problem = self._check(data)
                if not problem:
                    self._recent.append(False)
                    return data[:num_bytes]
            # The failing input is discarded and requested again.
            self.failures += 1
            self._recent.append(True)
            failed = sum(self._recent)
            if failed >= LATCH_FAILURES:
                self.latched = True
                recent = list(self._recent)
                how = (
                    f"{failed} times in a row"
                    if all(recent[-failed:])
                    else f"{failed} times in the last {len(recent)} reads"
                )
                self.reason = f"entropy health tests failed {how} ({what}; last: {problem})"
