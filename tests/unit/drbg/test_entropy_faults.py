"""Entropy sources that hang or repeat: deadlines, one continuous test stream, the repetition
check, and the worst-case detection delays docs/random-core.md ("Fault classes") promises.

The faulty sources are written here (tests/fakes.py), never taken from the code under test.
"""

from __future__ import annotations

import math
import threading
import time

import pytest

from rng_service.clock import FakeClock
from rng_service.drbg import (
    ENTROPY_READ_BLOCK,
    DeadlineEntropySource,
    EntropyHealthError,
    EntropyTimeoutError,
    FixedEntropySource,
    GeneratorConfig,
    HealthTestedEntropySource,
    OsEntropySource,
    ProductionGenerator,
    SeededEntropySource,
)
from rng_service.drbg.health import REPEAT_CHUNK, REPEAT_STRIDE
from rng_service.errors import GeneratorUnavailable
from tests.fakes import BlockingEntropy, FaultyEntropy


def healthy(n: int, seed: bytes = b"h") -> bytes:
    return SeededEntropySource(seed).get_entropy(n)


# --- a source that hangs -----------------------------------------------------------------------


def test_a_hung_read_fails_at_its_deadline_and_never_stacks_threads() -> None:
    src = BlockingEntropy()
    reader = DeadlineEntropySource(src, timeout_seconds=0.2)
    assert len(reader.get_entropy(32)) == 32
    src.block()
    try:
        started = time.monotonic()
        with pytest.raises(EntropyTimeoutError, match=r"did not answer within 0\.2 s"):
            reader.get_entropy(32)
        assert 0.2 <= time.monotonic() - started < 2.0
        started = time.monotonic()
        with pytest.raises(
            EntropyTimeoutError,
            match=r"did not answer within 0\.2 s \(an earlier read is still blocked\)",
        ):
            reader.get_entropy(32)  # fails at once: no second thread waits on the source
        assert time.monotonic() - started < 0.15
        assert src.blocked_reads == 1
        assert reader.timeouts == 2
    finally:
        src.release()
    deadline = time.monotonic() + 10  # the late read finishes on its own once released
    while reader._stuck is not None and reader._stuck.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(reader.get_entropy(32)) == 32  # a source that recovered is read again


def test_deadline_source_passes_bytes_and_errors_through() -> None:
    reader = DeadlineEntropySource(FixedEntropySource(b"abc"), timeout_seconds=1)
    assert reader.get_entropy(2) == b"ab"
    with pytest.raises(Exception, match="2 bytes requested, 1 left"):
        reader.get_entropy(2)
    with pytest.raises(ValueError, match="timeout_seconds"):
        DeadlineEntropySource(OsEntropySource(), timeout_seconds=0)


def test_status_answers_while_a_read_blocks_and_the_generator_fails_closed() -> None:
    """The finding: the writer held the generator lock while the read hung, and status()
    (health checks, metric scrapes, on the event loop) waited on the same lock."""
    src = BlockingEntropy()
    timeout = 1.0
    gen = ProductionGenerator(
        entropy=src, clock=FakeClock(), config=GeneratorConfig(entropy_timeout_seconds=timeout)
    )
    gen._requests_since_reseed = gen._config.reseed_interval_requests  # the next call reseeds
    src.block()
    outcome: list[BaseException | bytes] = []
    started = time.monotonic()

    def draw() -> None:
        try:
            outcome.append(gen.random_bytes(8))
        except BaseException as e:
            outcome.append(e)

    drawer = threading.Thread(target=draw)
    drawer.start()
    try:
        assert src.entered.wait(5), "the reseed never reached the entropy source"
        statuses: list[str] = []
        probe = threading.Thread(target=lambda: statuses.append(gen.status().state))
        probe.start()
        probe.join(0.5)  # well inside the read's deadline
        assert statuses == ["ok"], "status() waited for the blocked entropy read"
        drawer.join(timeout + 5)
        elapsed = time.monotonic() - started
    finally:
        src.release()
        drawer.join(10)
    assert not drawer.is_alive()
    assert len(outcome) == 1
    assert isinstance(outcome[0], GeneratorUnavailable)
    assert "did not answer within 1 s" in str(outcome[0])
    assert elapsed < timeout + 2  # the documented bound: the deadline, plus scheduling
    status = gen.status()
    assert status.state == "error"
    assert status.entropy_read_timeouts >= 1
    with pytest.raises(GeneratorUnavailable):
        gen.random_bytes(1)  # latched: a restart is needed, even though the source recovered


# --- one continuous stream ---------------------------------------------------------------------


def test_a_run_split_across_two_reads_is_one_run() -> None:
    src = HealthTestedEntropySource(
        FixedEntropySource(
            healthy(1024) + healthy(58, b"a") + b"\x07" * 6 + b"\x07" * 5 + healthy(59, b"b")
            + healthy(64, b"c")
        )
    )  # fmt: skip
    src.get_entropy(64)
    assert src.failures == 0
    assert src.get_entropy(64) == healthy(64, b"c")  # 6 + 5 = 11 sevens: the second read failed
    assert src.failures == 1


def test_an_apt_window_spans_reads() -> None:
    """A window opened in one read goes on in the next: 40 + 40 copies of its first sample in
    two reads fail it, though neither read has 78 on its own."""
    ref = 0xEE
    filler = bytes(x for x in healthy(4000, b"f") if x != ref)
    read1 = bytes(ref if i % 6 == 0 else filler[i] for i in range(240))
    read2 = bytes(ref if i % 6 == 0 else filler[300 + i] for i in range(240))
    assert read1.count(ref) == read2.count(ref) == 40
    data = healthy(1024) + read1 + read2 + healthy(240, b"g")  # 1,024 = two whole windows
    src = HealthTestedEntropySource(FixedEntropySource(data))
    assert src.get_entropy(240) == read1
    assert src.get_entropy(240) == healthy(240, b"g")
    assert src.failures == 1


def test_three_failures_among_the_last_16_reads_latch() -> None:
    """Failures need not be in a row: a source that fails every other read latches too."""
    bad = [bytes([i]) * 1024 for i in (1, 2, 3)]
    good = [healthy(1024, bytes([i])) for i in (4, 5)]
    src = HealthTestedEntropySource(
        FixedEntropySource(healthy(1024) + bad[0] + good[0] + bad[1] + good[1] + bad[2]),
        read_block=1024,
    )
    src.get_entropy(64)
    src.get_entropy(64)
    with pytest.raises(EntropyHealthError, match="3 times in the last 6 reads"):
        src.get_entropy(64)
    assert src.latched


# --- detection delays of each fault class (docs/random-core.md) --------------------------------


def _accepted_reseeds_after_fault(pattern: bytes, after: int) -> tuple[int, str]:
    """Reseeds of a ProductionGenerator (one entropy read each) that still succeed after its
    source switches to repeating ``pattern`` ``after`` bytes into the next read."""
    src = FaultyEntropy()
    clock = FakeClock()
    gen = ProductionGenerator(entropy=src, clock=clock, config=GeneratorConfig())
    gen.random_bytes(8)
    src.fail_with(pattern, after=after)
    for accepted in range(100):  # bounded: far beyond every documented delay
        clock.advance(60)  # the timer reseed: one entropy read per request at low load
        try:
            gen.random_bytes(8)
        except GeneratorUnavailable as e:
            return accepted, str(e)
    raise AssertionError(f"a source repeating {len(pattern)} bytes was never caught")


def documented_delay(k: int, after: int) -> int:
    """Reads of a period-k fault that can still pass (docs/random-core.md, "Fault classes"):
    the repetition check looks at offsets 0, 64, ..., 960 of each 1,024-byte read, and finds
    a string of the fault once the fault has already produced it k bytes earlier."""
    last_offset = ENTROPY_READ_BLOCK - REPEAT_STRIDE
    assert last_offset + REPEAT_CHUNK <= ENTROPY_READ_BLOCK
    return max(0, math.ceil((after + k - last_offset) / ENTROPY_READ_BLOCK))


PATTERNS = {
    "stuck": b"\x5a",
    "period-2": b"\xa5\x5a",
    "period-37-distinct": bytes(range(37)),
    "period-200-distinct": bytes((7 * i) % 256 for i in range(200)),
    "period-896": healthy(896, b"p896"),
    "period-5000": healthy(5000, b"p5000"),
    "period-60000": healthy(60_000, b"p60000"),
}


@pytest.mark.parametrize("after", [0, 63, 64, 700, 1023])
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_each_fault_class_is_caught_within_its_documented_delay(name: str, after: int) -> None:
    pattern = PATTERNS[name]
    accepted, reason = _accepted_reseeds_after_fault(pattern, after)
    bound = documented_delay(len(pattern), after)
    assert accepted <= bound, (name, after, accepted, bound)
    assert "entropy health tests failed 3 times" in reason
    if len(pattern) <= 896:
        # No faulty byte reaches the DRBG: only the read the fault starts in can pass, and
        # only when the fault starts after the first 64 bytes, which are all it uses of it.
        assert accepted <= (1 if after >= 64 else 0)


def test_what_caught_each_fault() -> None:
    assert "repetition count test" in _accepted_reseeds_after_fault(b"\x5a", 0)[1]
    assert "adaptive proportion test" in _accepted_reseeds_after_fault(b"\xa5\x5a", 0)[1]
    assert "repetition check" in _accepted_reseeds_after_fault(bytes(range(37)), 0)[1]
    assert "repetition check" in _accepted_reseeds_after_fault(healthy(5000, b"q"), 0)[1]


def test_no_false_alarm_on_healthy_sources() -> None:
    for source in (SeededEntropySource(b"healthy"), OsEntropySource()):
        src = HealthTestedEntropySource(source, read_block=ENTROPY_READ_BLOCK)
        for _ in range(300):  # 300 KiB: every check runs with a full 64 KiB history
            src.get_entropy(64)
        assert src.failures == 0
