"""Fixtures for the SP 800-22 tests.

``pi_bits`` is the first 10^6 bits of pi (integer part included, most significant first),
computed once with mpmath and cached in the pytest cache directory (a session temporary
directory when the cache plugin is off), and checked against E100 of the vector file.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from certification.sp800_22 import Bits, TestResult, run_tests
from tests.unit.certification.support import load_vectors, text_bits

PI_BITS = 1_000_000


def _compute_pi_bits(n: int) -> bytes:
    with mpmath.workprec(n + 64):
        value = int(mpmath.floor(mpmath.pi * mpmath.mpf(2) ** (n - 2)))
    return value.to_bytes(n // 8, "big")


@pytest.fixture(scope="session")
def pi_bits(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Bits:
    cache = getattr(request.config, "cache", None)
    directory = cache.mkdir("sp800_22") if cache is not None else tmp_path_factory.mktemp("pi")
    path = directory / "pi_1e6_bits.bin"
    e100 = text_bits(load_vectors()["E100"])
    if path.exists() and path.stat().st_size == PI_BITS // 8:
        bits = np.unpackbits(np.frombuffer(path.read_bytes(), dtype=np.uint8))
        if np.array_equal(bits[:100], e100):
            return bits
    packed = _compute_pi_bits(PI_BITS)
    path.write_bytes(packed)
    bits = np.unpackbits(np.frombuffer(packed, dtype=np.uint8))
    assert np.array_equal(bits[:100], e100), "computed pi expansion disagrees with E100"
    return bits


@pytest.fixture(scope="session")
def pi_results(pi_bits: Bits) -> dict[str, TestResult]:
    """The whole battery with the reference defaults on the first 10^6 bits of pi."""
    return run_tests(pi_bits)
