"""ProductionGenerator and DeterministicGenerator: seeding, reseeding, fork and thread safety,
buffering, the latched error state, and the documented lab stream."""

from __future__ import annotations

import os
import re
import signal
import threading
import warnings
from collections import Counter

import pytest

from rng_service.clock import FakeClock
from rng_service.drbg import (
    ENTROPY_READ_BLOCK,
    LAB_GENERATE_BYTES,
    CtrDrbg,
    DeterministicGenerator,
    FixedEntropySource,
    GeneratorConfig,
    OsEntropySource,
    ProductionGenerator,
    SeededEntropySource,
)
from rng_service.errors import GeneratorUnavailable

# Start-up test, then instance id, entropy input and nonce: each read is a whole block.
STARTUP = 1024 + 3 * ENTROPY_READ_BLOCK
BLOCK = ENTROPY_READ_BLOCK


def make(
    *, seed: bytes = b"seed", clock: FakeClock | None = None, **cfg: int | float
) -> ProductionGenerator:
    return ProductionGenerator(
        entropy=SeededEntropySource(seed),
        clock=clock or FakeClock(),
        config=GeneratorConfig(**cfg),  # type: ignore[arg-type]
    )


def healthy(n: int, seed: bytes = b"h") -> bytes:
    return SeededEntropySource(seed).get_entropy(n)


# --- config ------------------------------------------------------------------------------


def test_config_defaults() -> None:
    cfg = GeneratorConfig()
    assert cfg.reseed_interval_requests == 65_536
    assert cfg.reseed_interval_seconds == 60.0
    assert cfg.buffer_bytes == 4096
    assert (cfg.entropy_input_bytes, cfg.nonce_bytes) == (64, 32)
    assert (GeneratorConfig(min_entropy_bits=8).entropy_input_bytes, 32)[0] == 32
    assert GeneratorConfig(min_entropy_bits=3).entropy_input_bytes == 86


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("reseed_interval_requests", 0, ValueError),
        ("reseed_interval_requests", 2**48 + 1, ValueError),
        ("reseed_interval_requests", 1.0, TypeError),
        ("reseed_interval_seconds", 0, ValueError),
        ("reseed_interval_seconds", 86_401, ValueError),
        ("reseed_interval_seconds", True, TypeError),
        ("buffer_bytes", 15, ValueError),
        ("buffer_bytes", 65_537, ValueError),
        ("min_entropy_bits", 0, ValueError),
        ("min_entropy_bits", 9, ValueError),
        ("alpha_exponent", 19, ValueError),
        ("alpha_exponent", 41, ValueError),
        ("startup_samples", 1023, ValueError),
    ],
)
def test_config_validation(field: str, value: object, error: type[Exception]) -> None:
    with pytest.raises(error, match=field):
        GeneratorConfig(**{field: value})  # type: ignore[arg-type]


# --- production generator ---------------------------------------------------------------------


def test_start_up_status_and_identity() -> None:
    clock = FakeClock()
    gen = make(clock=clock)
    status = gen.status()
    assert status.state == "ok"
    assert status.reason == ""
    assert status.self_test == "passed"
    assert status.entropy_bytes_read == STARTUP
    assert status.reseeds == 0
    assert status.health_test_failures == 0
    assert status.last_reseed_ns == clock.now_ns()
    assert status.lab_mode is False
    assert gen.lab_mode is False
    assert re.fullmatch(r"[0-9a-f]{32}", gen.instance_id)
    assert status.instance_id == gen.instance_id
    assert gen.epoch == 0


def test_two_instances_never_share_a_stream_even_with_identical_entropy() -> None:
    a, b = make(seed=b"same"), make(seed=b"same")  # the (fake) entropy is identical ...
    assert a.instance_id != b.instance_id  # ... but not the ids
    assert a.random_bytes(64) != b.random_bytes(64)  # ... nor the personalization


def test_real_os_entropy_instances_differ() -> None:
    clock = FakeClock()
    a = ProductionGenerator(entropy=OsEntropySource(), clock=clock, config=GeneratorConfig())
    b = ProductionGenerator(entropy=OsEntropySource(), clock=clock, config=GeneratorConfig())
    assert a.instance_id != b.instance_id
    assert a.random_bytes(32) != b.random_bytes(32)


def test_small_draws_are_buffered() -> None:
    gen = make(buffer_bytes=64, reseed_interval_requests=1000)
    drbg = gen._drbg
    assert drbg is not None
    calls: list[int] = []

    class Counting:
        """Delegates to the real CtrDrbg and records each generate request size."""

        def generate(self, n: int, additional_input: bytes = b"") -> bytes:
            calls.append(n)
            assert drbg is not None
            return drbg.generate(n, additional_input)

        def __getattr__(self, name: str) -> object:
            return getattr(drbg, name)

    gen._drbg = Counting()  # type: ignore[assignment]
    out = b"".join(gen.random_bytes(1) for _ in range(64))
    assert calls == [64]
    assert len(set(out)) > 32
    gen.random_bytes(1)
    assert calls == [64, 64]
    assert len(gen.random_bytes(100_000)) == 100_000  # beyond one DRBG request
    assert calls[2:] == [65_536, 34_401]  # 63 buffered, then direct requests; buffer empty
    assert gen.random_bytes(0) == b""


def test_reseed_every_n_requests() -> None:
    gen = make(buffer_bytes=16, reseed_interval_requests=2)
    gen.random_bytes(16)
    gen.random_bytes(16)
    assert gen.epoch == 0
    gen.random_bytes(16)
    assert gen.epoch == 1
    assert gen.status().entropy_bytes_read == STARTUP + BLOCK
    for _ in range(4):
        gen.random_bytes(16)
    assert gen.epoch == 3
    assert gen.status().reseeds == 3


def test_reseed_every_t_seconds_discards_the_buffer() -> None:
    clock = FakeClock()
    gen = make(clock=clock, buffer_bytes=256, reseed_interval_seconds=30)
    gen.random_bytes(10)
    clock.advance(29.9)
    gen.random_bytes(10)
    assert gen.epoch == 0
    assert len(gen._buf) - gen._pos == 236
    clock.advance(0.1)
    gen.random_bytes(10)
    assert gen.epoch == 1
    assert len(gen._buf) - gen._pos == 246  # a fresh buffer: the old 236 bytes were dropped
    assert gen.status().last_reseed_ns == clock.now_ns()


def test_large_requests_reseed_by_count_mid_request() -> None:
    gen = make(reseed_interval_requests=2)
    assert len(gen.random_bytes(5 * 65_536)) == 5 * 65_536
    assert gen.epoch == 2


def test_argument_checks() -> None:
    gen = make()
    with pytest.raises(ValueError, match="negative"):
        gen.random_bytes(-1)
    with pytest.raises(TypeError):
        gen.random_bytes(1.0)  # type: ignore[arg-type]


def test_repr_and_status_hold_no_secret() -> None:
    gen = make()
    gen.random_bytes(1)
    drbg = gen._drbg
    assert drbg is not None
    key, v = drbg._require_state()
    text = repr(gen) + repr(gen.status())
    assert bytes(key).hex() not in text
    assert bytes(v).hex() not in text
    assert gen._buf[gen._pos :].hex()[:16] not in text


def test_stuck_entropy_at_start_up_latches() -> None:
    gen = ProductionGenerator(
        entropy=FixedEntropySource(bytes(4096)), clock=FakeClock(), config=GeneratorConfig()
    )
    status = gen.status()
    assert status.state == "error"
    assert "repetition count test" in status.reason
    assert status.health_test_failures == 3
    assert status.self_test == "passed"
    assert re.fullmatch(r"[0-9a-f]{32}", gen.instance_id)
    with pytest.raises(GeneratorUnavailable, match="3 times in a row"):
        gen.random_bytes(1)


def test_stuck_entropy_at_reseed_latches_and_stays_latched() -> None:
    clock = FakeClock()
    data = (
        healthy(STARTUP) + bytes(BLOCK) + healthy(BLOCK, b"x") + bytes(BLOCK) * 3
        + healthy(640, b"y")
    )  # fmt: skip
    gen = ProductionGenerator(
        entropy=FixedEntropySource(data), clock=clock, config=GeneratorConfig()
    )
    gen.random_bytes(8)
    clock.advance(60)
    gen.random_bytes(8)  # one failed input, retried with good bytes
    assert gen.epoch == 1
    assert gen.status().health_test_failures == 1
    clock.advance(60)
    # The third failure among the last 16 reads latches: here the second of this reseed.
    with pytest.raises(GeneratorUnavailable, match="health tests failed 3 times in the last"):
        gen.random_bytes(8)
    status = gen.status()
    assert status.state == "error"
    assert status.health_test_failures == 3
    assert gen._drbg is not None
    assert not gen._drbg.instantiated  # zeroised
    with pytest.raises(GeneratorUnavailable):
        gen.random_bytes(8)  # good entropy is available again, but the error is latched


def test_exhausted_entropy_is_an_error_state() -> None:
    gen = ProductionGenerator(
        entropy=FixedEntropySource(healthy(STARTUP)), clock=FakeClock(), config=GeneratorConfig()
    )
    assert gen.status().state == "ok"
    gen._requests_since_reseed = gen._config.reseed_interval_requests
    with pytest.raises(GeneratorUnavailable, match="EntropyExhaustedError"):
        gen.random_bytes(1)
    assert gen.status().state == "error"


def _fork_and_draw(
    gen: ProductionGenerator | DeterministicGenerator, n: int
) -> tuple[bytes, int, str]:
    """Draws ``n`` bytes in a real forked child; returns them, its epoch and instance id."""
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        pid = os.fork()
    if pid == 0:  # child
        try:
            signal.alarm(10)  # a deadlocked child dies instead of hanging the test
            os.close(read_fd)
            out = gen.random_bytes(n)
            os.write(write_fd, out + gen.epoch.to_bytes(4, "big") + gen.instance_id.encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    data = b""
    while chunk := os.read(read_fd, 65_536):
        data += chunk
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    id_len = len(gen.instance_id)
    return data[:n], int.from_bytes(data[n : n + 4], "big"), data[n + 4 :].decode()[:id_len]


@pytest.mark.parametrize("seed_source", ["fixed", "os"])
def test_forked_child_never_repeats_parent_output(seed_source: str) -> None:
    entropy = SeededEntropySource(b"fork") if seed_source == "fixed" else OsEntropySource()
    gen = ProductionGenerator(entropy=entropy, clock=FakeClock(), config=GeneratorConfig())
    gen.random_bytes(5)  # the buffer now holds 4,091 bytes the parent will serve next
    parent_id = gen.instance_id
    child_bytes, child_epoch, child_id = _fork_and_draw(gen, 8192)
    parent_bytes = gen.random_bytes(8192)
    assert child_epoch == 1  # the child reseeded before its first output
    assert gen.epoch == 0
    assert re.fullmatch(r"[0-9a-f]{32}", child_id)
    assert child_id != parent_id == gen.instance_id  # the child is a new instance
    assert len(child_bytes) == 8192
    # No 16-byte window of the child's output appears in the parent's.
    parent_windows = {parent_bytes[i : i + 16] for i in range(len(parent_bytes) - 15)}
    assert not any(child_bytes[i : i + 16] in parent_windows for i in range(0, 8192 - 15, 16))
    # ... and two children of the same parent differ from each other too.
    second_child, _, second_id = _fork_and_draw(gen, 64)
    assert second_id not in (child_id, parent_id)
    assert second_child != child_bytes[:64]


def test_fork_while_another_thread_holds_the_locks() -> None:
    gen = make()
    gen.random_bytes(1)
    locks = [gen._lock, gen._entropy._lock]
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        for lock in locks:
            lock.acquire()
        held.set()
        release.wait()
        for lock in reversed(locks):
            lock.release()

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    try:
        child_bytes, child_epoch, _ = _fork_and_draw(gen, 32)
    finally:
        release.set()
        holder.join()
    assert len(child_bytes) == 32
    assert child_epoch == 1  # the child reseeded, taking the entropy lock it was given afresh


def test_lab_generator_child_continues_the_stream() -> None:
    gen = lab_gen()
    gen.random_bytes(10)
    child_bytes, _, child_id = _fork_and_draw(gen, 32)
    assert child_id == gen.instance_id  # lab mode: same seed, same stream, same id
    assert child_bytes == gen.random_bytes(32) == reference_lab_stream(42)[10:]


def test_thread_safety() -> None:
    gen = make(buffer_bytes=64, reseed_interval_requests=7)
    results: list[list[bytes]] = [[] for _ in range(8)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def work(slot: int) -> None:
        try:
            barrier.wait()
            for i in range(1500):
                results[slot].append(gen.random_bytes(5 + i % 20))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    draws = [d for r in results for d in r]
    assert len(draws) == 12_000
    assert all(len(d) == 5 + i % 20 for r in results for i, d in enumerate(r))
    assert len(set(draws)) == len(draws)  # no byte string served twice
    assert gen.epoch > 0


# --- lab mode --------------------------------------------------------------------------------

LAB_ENTROPY, LAB_NONCE = bytes(range(32)), bytes(range(16))


def lab_gen(personalization: bytes = b"lab") -> DeterministicGenerator:
    return DeterministicGenerator(
        entropy_input=LAB_ENTROPY, nonce=LAB_NONCE, personalization=personalization
    )


def reference_lab_stream(n: int) -> bytes:
    """The documented stream: generate(65,536) blocks of one CTR_DRBG, no additional input."""
    drbg = CtrDrbg.instantiate(LAB_ENTROPY, LAB_NONCE, b"lab")
    out = b""
    while len(out) < n:
        out += drbg.generate(LAB_GENERATE_BYTES)
    return out[:n]


def test_lab_stream_is_independent_of_request_sizes() -> None:
    sizes = [1, 0, 15, 65_536, 3, 200_000, 7, 65_535]
    gen = lab_gen()
    got = b"".join(gen.random_bytes(n) for n in sizes)
    assert got == reference_lab_stream(sum(sizes))
    assert lab_gen().random_bytes(sum(sizes)) == got


def test_lab_generator_interface() -> None:
    gen = lab_gen()
    assert gen.lab_mode is True
    assert gen.epoch == 0
    assert re.fullmatch(r"[0-9a-f]{32}", gen.instance_id)
    assert gen.instance_id == lab_gen().instance_id
    other = lab_gen(b"other")
    assert other.instance_id != gen.instance_id
    status = gen.status()
    assert (status.state, status.lab_mode, status.self_test) == ("ok", True, "passed")
    assert LAB_ENTROPY.hex() not in repr(gen) + repr(status)
    with pytest.raises(ValueError, match="negative"):
        gen.random_bytes(-1)
    with pytest.raises(ValueError, match="nonce"):
        DeterministicGenerator(entropy_input=bytes(32), nonce=b"")


def test_lab_generator_thread_safety_keeps_the_stream() -> None:
    gen = lab_gen()
    pieces: list[bytes] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(2000):
            piece = gen.random_bytes(7)
            with lock:
                pieces.append(piece)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stream = reference_lab_stream(7 * 8000)
    assert Counter(pieces) == Counter(stream[i : i + 7] for i in range(0, len(stream), 7))
