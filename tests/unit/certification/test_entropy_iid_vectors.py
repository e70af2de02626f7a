"""The section 5 IID tests against NIST's ``ea_iid -vvv`` on its sample files.

The known answers are ``tests/vectors/sp800_90b/*.iid.res``, printed by NIST's tool (README
there). The statistics of the unpermuted samples are deterministic: 18 of the 19 agree exactly;
the excursion (5.1.1) to a relative 1e-12, because the tool's compiler fuses
``running_sum - (i + 1) * mean`` into one rounding (an FMA) where numpy rounds the product
first. The chi-square and LRS figures agree to a relative 1e-9. The permutations are random
(xoshiro256** in the tool, numpy's PCG64 here): each statistic's verdict is compared, on files
whose counters are far from the decision line (the tool's counts are in the file).
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path

import numpy as np
import pytest

from certification.entropy._samples import Samples
from certification.entropy.iid import (
    STATISTICS,
    IidResult,
    chi_square_tests,
    iid_tests,
    lrs_test,
    permutation_statistics,
)

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "sp800_90b"
FILES = {"rand1_short": 1, "rand4_short": 4, "rand8_short": 8}


def _their_name(ours: str) -> str:
    m = re.fullmatch(r"(periodicity|covariance)(\d+)", ours)
    return f"{m[1]}({m[2]})" if m else ours


def reference(name: str) -> str:
    return (VECTORS / f"{name}.iid.res").read_text()


def samples(name: str) -> Samples:
    return Samples.from_bytes((VECTORS / f"{name}.bin").read_bytes(), FILES[name])


@functools.cache
def ours(name: str) -> IidResult:
    return iid_tests(samples(name), np.random.default_rng(90))


@pytest.mark.parametrize("name", list(FILES))
def test_unpermuted_statistics_agree(name: str) -> None:
    s = samples(name)
    got = permutation_statistics(s.raw, s.symbols, s.alphabet)
    want = dict(re.findall(r"Unpermuted result (\S+) = (\S+)", reference(name)))
    assert len(want) == len(STATISTICS) == 19
    for i, stat in enumerate(STATISTICS):
        expected = float(want[_their_name(stat)])
        if stat == "excursion":
            assert got[i] == pytest.approx(expected, rel=1e-12, abs=0)
        else:
            assert got[i] == expected, (stat, got[i], expected)


@pytest.mark.parametrize("name", list(FILES))
def test_chi_square_and_lrs_agree(name: str) -> None:
    text = reference(name)
    s = samples(name)
    independence, fit = chi_square_tests(s.symbols, s.alphabet)
    for mine, label in ((independence, "independence"), (fit, "goodness of fit")):
        t = float(re.search(rf"Chi square {label}: T = (\S+)", text)[1])  # type: ignore[index]
        df = int(re.search(rf"Chi square {label}: df = (\S+)", text)[1])  # type: ignore[index]
        p = float(re.search(rf"Chi square {label}: P-value = (\S+)", text)[1])  # type: ignore[index]
        assert mine.statistic == pytest.approx(t, rel=1e-9)
        assert mine.degrees_of_freedom == df
        assert mine.p_value == pytest.approx(p, rel=1e-9)
    chi_passed = "Chi square tests: Passed" in text
    assert (independence.passed and fit.passed) == chi_passed
    w, p_col, passed = lrs_test(s.symbols, s.alphabet)
    assert w == int(re.search(r"results: W = (\d+)", text)[1])  # type: ignore[index]
    assert p_col == pytest.approx(float(re.search(r"P_col = (\S+)", text)[1]), rel=1e-9)  # type: ignore[index]
    assert passed == ("Length of longest repeated substring test: Passed" in text)


def _their_counts(name: str) -> dict[str, tuple[int, int, int]]:
    rows = re.findall(r"^\s*(\S+?)\*?\s+(\d+)\s+(\d+)\s+(\d+)$", reference(name), re.M)
    return {stat: (int(a), int(b), int(c)) for stat, a, b, c in rows}


@pytest.mark.parametrize("name", list(FILES))
def test_permutation_verdicts_agree(name: str) -> None:
    theirs = _their_counts(name)
    result = ours(name)
    for p in result.permutations:
        c0, c1, c2 = theirs[_their_name(p.name)]
        assert p.passed == (c0 + c1 > 5 and c1 + c2 > 5), (p, (c0, c1, c2))
    assert ("IID permutation tests: Passed" in reference(name)) == all(
        p.passed for p in result.permutations
    )


@pytest.mark.parametrize("name", list(FILES))
def test_a_statistic_stops_counting_once_decided(name: str) -> None:
    # Section 5.1's counters decide a statistic when more than 5 permutations fall on each side;
    # like NIST's tool, counting stops there, so the later side holds exactly 6.
    result = ours(name)
    for p in result.permutations:
        above, below = p.greater + p.equal, p.equal + p.less
        if p.passed:
            assert min(above, below) == 6, p
        else:
            assert p.greater + p.equal + p.less == result.permutations_run == 10_000, p


def test_batches_of_permutations_match_one_at_a_time() -> None:
    # The statistics of many orderings at once (one row each) equal those of each row alone.
    from certification.entropy.iid import _setting, _statistics

    rng = np.random.default_rng(5)
    for bits in (1, 3, 8):
        raw = rng.integers(0, 1 << bits, 5003, dtype=np.uint8)
        s = Samples.from_bytes(raw.tobytes(), bits)
        rows = np.stack([rng.permutation(s.raw) for _ in range(7)])
        every = np.ones(len(STATISTICS), dtype=bool)
        together = _statistics(rows, _setting(s.raw, s.symbols, s.alphabet), every)
        for r in range(rows.shape[0]):
            alone = permutation_statistics(rows[r], Samples.from_bytes(rows[r], bits).symbols,
                                           s.alphabet)  # fmt: skip
            np.testing.assert_array_equal(together[r, :18], alone[:18])


def test_compression_length_is_bzip2_of_the_decimal_text() -> None:
    import bz2

    from certification.entropy.iid import compression_length

    rng = np.random.default_rng(6)
    for k, n in ((2, 120_000), (10, 60_000), (256, 60_000), (256, 1)):
        raw = rng.integers(0, k, n, dtype=np.uint8)
        want = len(bz2.compress(" ".join(str(v) for v in raw.tolist()).encode(), 5))
        assert compression_length(raw) == want
        assert compression_length(raw, above=want) == want
        assert compression_length(raw, above=want - 1) == want
    # Over one bzip2 block (500,000 bytes of text): the first block's output is already longer
    # than 1,000 bytes, so the answer is "longer than 1,000" without the rest.
    raw = rng.integers(0, 256, 300_000, dtype=np.uint8)
    assert compression_length(raw, above=1000) == 1001
    assert math.isfinite(float(compression_length(np.zeros(3, dtype=np.uint8))))
