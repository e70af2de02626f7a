"""The whole battery on deterministic streams: a good generator passes at the documented rate,
obviously bad streams fail."""

from __future__ import annotations

import numpy as np
import pytest

from certification.sp800_22 import Bits, assess, run_tests
from tests.unit.certification.support import aes_bits, aes_stream


@pytest.mark.slow
def test_good_generator_passes_at_the_documented_rate() -> None:
    sequences = 20
    results = [run_tests(aes_bits(f"good-{i}", 1_000_000)) for i in range(sequences)]
    p_values = np.array(
        [p for r in results for t in r.values() for p in t.p_values if p is not None]
    )
    # 20 x 162 always-applicable P-values plus the excursion ones
    assert p_values.size >= sequences * 162
    # about 1 % of single P-values below alpha, and P-values spread evenly over deciles
    assert 0.004 <= np.mean(p_values < 0.01) <= 0.02
    deciles = np.bincount(np.minimum((p_values * 10).astype(int), 9), minlength=10)
    assert deciles.min() >= 0.08 * p_values.size
    assert deciles.max() <= 0.12 * p_values.size
    assessment = assess(results)
    # documented: about 0.19 flagged sub-tests expected for 20 sequences; this stream has none
    assert assessment.expected_false_flags == pytest.approx(0.19, abs=0.05)
    assert assessment.passed, [f"{d.test}/{d.sub_test}" for d in assessment.failures]


def _stuck_bit(label: str, n: int) -> Bits:
    raw = np.frombuffer(aes_stream(label, n // 8), dtype=np.uint8) | np.uint8(0x80)
    return np.unpackbits(raw)


def _short_period(label: str, n: int) -> Bits:
    return np.tile(aes_bits(label, 4096), n // 4096 + 1)[:n]


def _biased(label: str, n: int) -> Bits:
    words = np.frombuffer(aes_stream(label, 2 * n), dtype=np.uint16)
    return (words < int(0.51 * 65536)).astype(np.uint8)


@pytest.mark.parametrize(
    ("make", "must_fail"),
    [
        (_stuck_bit, {"frequency", "block_frequency", "runs", "serial", "approximate_entropy"}),
        (_short_period, {"serial", "approximate_entropy", "fft", "rank"}),
        (_biased, {"frequency", "cumulative_sums", "runs"}),
    ],
    ids=["stuck-bit", "short-period", "biased-51-percent"],
)
def test_bad_streams_fail(make: object, must_fail: set[str]) -> None:
    assert callable(make)
    results = [run_tests(make(f"bad-{i}", 200_000)) for i in range(5)]
    assessment = assess(results)
    assert not assessment.passed
    failed_tests = {d.test for d in assessment.failures}
    assert must_fail <= failed_tests
