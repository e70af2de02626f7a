"""SP 800-22 battery timings: ``python -m bench sp800_22`` (``--short`` for a smoke run).

Long form: all 15 tests on 100 sequences of 10^6 bits (an AES-256-CTR keystream), one process,
after one untimed warm-up run of each test.
Rows: the battery's wall time for all sequences, then each test's mean time per sequence. The
baseline of every row is the time to unpack the same bits from bytes (the floor any test pays
to look at its input), so a ratio reads "this costs N unpacks". Short form: 2 sequences of 10^5
bits. The C reference sts-2.1.2 is not run here; it is compared separately.
"""

from __future__ import annotations

import time

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from bench._common import Row
from certification.sp800_22 import REGISTRY, TEST_NAMES

__all__ = ["run"]


def _keystream(n_bytes: int) -> bytes:
    encryptor = Cipher(algorithms.AES(bytes(range(32))), modes.CTR(bytes(16))).encryptor()
    return encryptor.update(bytes(n_bytes))


def run(*, short: bool) -> list[Row]:
    sequences, bits = (2, 100_000) if short else (100, 1_000_000)
    packed = [
        np.frombuffer(chunk, dtype=np.uint8)
        for chunk in (
            _keystream(sequences * bits // 8)[i * bits // 8 : (i + 1) * bits // 8]
            for i in range(sequences)
        )
    ]
    start = time.perf_counter()
    unpacked = [np.unpackbits(p) for p in packed]
    unpack_total = time.perf_counter() - start
    for name in TEST_NAMES:  # warm-up: one-time costs (imports, FFT plans) are not timed
        REGISTRY[name](unpacked[0])
    per_test = dict.fromkeys(TEST_NAMES, 0.0)
    start = time.perf_counter()
    for sequence in unpacked:
        for name in TEST_NAMES:
            t0 = time.perf_counter()
            REGISTRY[name](sequence)
            per_test[name] += time.perf_counter() - t0
    wall = time.perf_counter() - start
    label = f"{sequences} x {bits:,} bits"
    rows = [
        Row(
            name=f"sp800_22 battery wall time, {label}",
            value=wall,
            unit="s",
            baseline_name="unpack the same bits",
            baseline_value=unpack_total,
        )
    ]
    unpack_ms = 1000 * unpack_total / sequences
    rows += [
        Row(
            name=f"sp800_22 {name} per sequence",
            value=1000 * total / sequences,
            unit="ms",
            baseline_name="unpack one sequence",
            baseline_value=unpack_ms,
        )
        for name, total in per_test.items()
    ]
    return rows
