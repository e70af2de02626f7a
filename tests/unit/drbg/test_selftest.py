"""Power-on self-test (SP 800-90A Rev.1 section 11.3) and its effect on the generators."""

from __future__ import annotations

import dataclasses

import pytest

from rng_service.clock import FakeClock
from rng_service.drbg import (
    CAVP_KAT,
    DeterministicGenerator,
    GeneratorConfig,
    ProductionGenerator,
    SeededEntropySource,
    SelfTestError,
    power_on_self_test,
)
from rng_service.errors import GeneratorUnavailable

CORRUPTED = dataclasses.replace(
    CAVP_KAT, returned_bits=CAVP_KAT.returned_bits[:-1] + bytes([CAVP_KAT.returned_bits[-1] ^ 1])
)


def test_self_test_passes_with_the_cavp_vector() -> None:
    power_on_self_test()


def test_corrupted_expectation_fails() -> None:
    with pytest.raises(SelfTestError, match="differs from CAVP"):
        power_on_self_test(CORRUPTED)


def test_malformed_vector_fails_closed() -> None:
    with pytest.raises(SelfTestError, match="raised DrbgInputError"):
        power_on_self_test(dataclasses.replace(CAVP_KAT, nonce=b""))


def test_production_generator_latches_on_self_test_failure() -> None:
    entropy = SeededEntropySource(b"e")
    gen = ProductionGenerator(
        entropy=entropy, clock=FakeClock(), config=GeneratorConfig(), self_test_kat=CORRUPTED
    )
    status = gen.status()
    assert status.state == "error"
    assert status.self_test == "failed"
    assert "power-on self-test failed" in status.reason
    assert status.entropy_bytes_read == 0  # no entropy is touched before the self-test passes
    assert len(gen.instance_id) == 32
    with pytest.raises(GeneratorUnavailable, match="self-test failed"):
        gen.random_bytes(1)


def test_lab_generator_latches_on_self_test_failure() -> None:
    gen = DeterministicGenerator(entropy_input=bytes(32), nonce=bytes(16), self_test_kat=CORRUPTED)
    assert gen.status().state == "error"
    assert gen.status().self_test == "failed"
    with pytest.raises(GeneratorUnavailable, match="self-test failed"):
        gen.random_bytes(1)
