"""The reader's own CTR_DRBG (tests/reader/ctr_drbg.py) against upstream and against the code.

The reader draws its bytes from its own SP 800-90A implementation, so it is checked first
against the NIST CAVP vectors (every AES-256 case in tests/vectors/ctr_drbg/, with and without
the derivation function), then its lab stream (docs/random-core.md section 4) against the
code's DeterministicGenerator across several 65,536-byte Generate calls.
"""

from __future__ import annotations

import random

import pytest

from rng_service.drbg import DeterministicGenerator
from tests.reader.ctr_drbg import LAB_BLOCK, CtrDrbg, LabStream
from tests.unit.drbg.test_ctr_drbg_vectors import CASES, CavpCase


def test_all_cavp_cases_are_here() -> None:
    assert len(CASES) == 8
    assert {c.derivation_function for c in CASES} == {True, False}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_readers_ctr_drbg_meets_the_cavp_vectors(case: CavpCase) -> None:
    f = case.fields
    n = int(case.header["ReturnedBitsLen"]) // 8
    drbg = CtrDrbg(
        f["EntropyInput"],
        f["Nonce"],
        f["PersonalizationString"],
        derivation_function=case.derivation_function,
    )
    drbg.reseed(f["EntropyInputReseed"], f["AdditionalInputReseed"])
    drbg.generate(n, case.additional_inputs[0])
    assert drbg.generate(n, case.additional_inputs[1]) == f["ReturnedBits"]


@pytest.mark.parametrize(
    "seed",
    [
        (bytes(32), bytes(16), b""),
        (bytes(range(32)), bytes(range(32, 48)), b"rng-service outcome known answers v1"),
        (bytes(range(64)), bytes(range(100, 132)), b"x" * 200),
    ],
)
def test_the_lab_stream_is_the_documented_one(seed: tuple[bytes, bytes, bytes]) -> None:
    code = DeterministicGenerator(entropy_input=seed[0], nonce=seed[1], personalization=seed[2])
    reader = LabStream(*seed)
    rng = random.Random(seed[2])
    total = 0
    sizes = [1, 15, 16, 17, 255, 256, LAB_BLOCK - 1, LAB_BLOCK, 2, LAB_BLOCK + 3, 200_000]
    sizes += [rng.randint(0, 5000) for _ in range(60)]
    for size in sizes:
        assert code.random_bytes(size) == reader.take(size), (size, total)
        total += size
    assert total > 5 * LAB_BLOCK
