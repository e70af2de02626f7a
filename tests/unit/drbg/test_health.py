"""SP 800-90B section 4.4 health tests and the failure policy of HealthTestedEntropySource."""

from __future__ import annotations

import pytest

from rng_service.drbg import (
    EntropyHealthError,
    FixedEntropySource,
    HealthTestedEntropySource,
    SeededEntropySource,
)
from rng_service.drbg.health import (
    AdaptiveProportionTest,
    RepetitionCountTest,
    adaptive_proportion_cutoff,
    repetition_count_cutoff,
)


@pytest.mark.parametrize(
    ("h", "rct", "apt"),
    # SP 800-90B section 4.4.1 formula and section 4.4.2 Table 2 (W = 512, alpha = 2**-20).
    [(1, 21, 311), (2, 11, 177), (4, 6, 62), (8, 4, 13)],
)
def test_cutoffs_match_sp800_90b_at_alpha_2_pow_20(h: int, rct: int, apt: int) -> None:
    assert repetition_count_cutoff(20, h) == rct
    assert adaptive_proportion_cutoff(20, h) == apt


def test_default_cutoffs() -> None:
    assert repetition_count_cutoff(40, 4) == 11
    assert adaptive_proportion_cutoff(40, 4) == 78


@pytest.mark.parametrize(("a", "h"), [(19, 4), (41, 4), (40, 0), (40, 9), (40, True)])
def test_parameter_bounds(a: int, h: int) -> None:
    with pytest.raises(ValueError, match="must be an int"):
        repetition_count_cutoff(a, h)


def test_rct_trips_at_cutoff_across_calls() -> None:
    rct = RepetitionCountTest(4)
    assert rct.feed(b"\x01\x02\x02\x02")
    assert not rct.feed(b"\x02")  # fourth identical sample in a row, split across calls
    assert not rct.feed(b"\x02")  # the run goes on: a stuck source keeps failing
    assert rct.feed(b"\x03\x02\x02\x02")  # a new value starts a new run
    assert rct.feed(b"\x05" * 3 + b"\x06" * 3)


def test_apt_counts_first_sample_of_each_window() -> None:
    apt = AdaptiveProportionTest(cutoff=3, window=8)
    assert apt.feed(b"\x07\x00\x07\x01\x02\x03\x04\x05")  # two 7s in the window: pass
    assert apt.feed(b"\x07\x07\x00\x00\x00\x00\x00\x00")  # 7 is the reference; two in total
    assert not apt.feed(b"\x09\x00\x09\x01\x09")  # third 9 in the window
    assert apt.feed(b"\x00\x01\x02\x03\x04\x05\x06\x00")  # a new window after the failed one


def test_apt_window_boundary() -> None:
    apt = AdaptiveProportionTest(cutoff=3, window=4)
    # Windows [1,1,0,0] and [1,1,0,0]: each holds two 1s only.
    assert apt.feed(b"\x01\x01\x00\x00\x01\x01\x00\x00")
    assert not apt.feed(b"\x02\x02\x02")


def healthy(n: int, seed: bytes = b"h") -> bytes:
    return SeededEntropySource(seed).get_entropy(n)


def test_startup_reads_1024_samples_first() -> None:
    src = HealthTestedEntropySource(FixedEntropySource(healthy(1024 + 64)))
    assert src.get_entropy(64) == healthy(1024 + 64)[1024:]
    assert src.bytes_read == 1024 + 64
    assert src.failures == 0
    with pytest.raises(ValueError, match="startup_samples"):
        HealthTestedEntropySource(SeededEntropySource(b""), startup_samples=1023)


def test_failing_input_is_discarded_and_retried() -> None:
    stuck = bytes(64)
    good = healthy(64, b"g")
    src = HealthTestedEntropySource(FixedEntropySource(healthy(1024) + stuck + stuck + good))
    assert src.get_entropy(64) == good
    assert src.failures == 2
    assert not src.latched
    assert src.bytes_read == 1024 + 3 * 64


def test_three_failures_in_a_row_latch() -> None:
    stuck = bytes(64)
    src = HealthTestedEntropySource(
        FixedEntropySource(healthy(1024) + stuck * 3 + healthy(64, b"later"))
    )
    with pytest.raises(EntropyHealthError, match=r"3 times in a row.*repetition count"):
        src.get_entropy(64)
    assert src.latched
    with pytest.raises(EntropyHealthError):
        src.get_entropy(64)  # good bytes remain in the source, but the state stays latched
    assert src.failures == 3


def test_apt_failure_latches_with_reason() -> None:
    # One value in every other position: never 11 in a row, but 256 of each 512-sample window.
    biased = bytes([0, 1, 0, 2] * 256)
    src = HealthTestedEntropySource(FixedEntropySource(biased * 3))
    with pytest.raises(EntropyHealthError, match="start-up test; last: adaptive proportion"):
        src.startup()


def test_source_errors_count_as_failures() -> None:
    src = HealthTestedEntropySource(FixedEntropySource(healthy(1024)))
    src.startup()
    with pytest.raises(EntropyHealthError, match="raised EntropyExhaustedError"):
        src.get_entropy(8)
    assert src.failures == 3


def test_short_reads_count_as_failures() -> None:
    class Short:
        def get_entropy(self, num_bytes: int) -> bytes:
            return healthy(num_bytes - 1)

    src = HealthTestedEntropySource(Short())
    with pytest.raises(EntropyHealthError, match="returned 1023 of 1024"):
        src.startup()


def test_repr_has_no_samples() -> None:
    data = healthy(1024 + 32)
    src = HealthTestedEntropySource(FixedEntropySource(data))
    src.get_entropy(32)
    assert data[1024:].hex()[:16] not in repr(src)
    assert "rct_cutoff=11" in repr(src)
    assert src.rct_cutoff == 11
    assert src.apt_cutoff == 78
