"""Behaviour of the SP 800-22 tests: vectorised internals against plain transliterations of the
sts-2.1.2 loops, applicability rules, result shapes, and robustness on any input length."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy.special import gammaincc, ndtr

from certification.sp800_22 import REGISTRY, TEST_NAMES, TestResult, as_bits, run_tests
from certification.sp800_22.cumulative_sums import _c_div, cumulative_sums, cusum_p_value
from certification.sp800_22.linear_complexity import linear_complexities
from certification.sp800_22.longest_run import longest_run, longest_run_lengths
from certification.sp800_22.non_overlapping_template import non_overlapping_template
from certification.sp800_22.overlapping_template import class_probabilities
from certification.sp800_22.random_excursions import random_excursions
from certification.sp800_22.random_excursions_variant import random_excursions_variant
from certification.sp800_22.rank import gf2_ranks, rank_probabilities
from certification.sp800_22.runs import runs
from certification.sp800_22.templates import REFERENCE_COUNTS, aperiodic_templates, is_aperiodic
from certification.sp800_22.universal import block_length_for, universal
from tests.unit.certification.support import aes_bits, text_bits

# --- plain transliterations of the reference loops, used as oracles -------------------------


def berlekamp_massey_reference(block: list[int]) -> int:
    """linearComplexity.c's loop for one block."""
    M = len(block)
    C = [0] * (M + 1)
    B = [0] * (M + 1)
    C[0] = B[0] = 1
    L, m = 0, -1
    for n in range(M):
        d = block[n]
        for i in range(1, L + 1):
            d ^= C[i] & block[n - i]
        if d:
            T = C[:]
            for j in range(M + 1):
                if B[j] and j + n - m <= M:
                    C[j + n - m] ^= 1
            if n // 2 >= L:
                L = n + 1 - L
                m = n
                B = T
    return L


def gf2_rank_reference(rows: list[int]) -> int:
    rank = 0
    rows = rows[:]
    for bit in reversed(range(64)):
        pivot = next((r for r in rows if r >> bit & 1), None)
        if pivot is None:
            continue
        rows.remove(pivot)
        rows = [r ^ pivot if r >> bit & 1 else r for r in rows]
        rank += 1
    return rank


def excursion_counts_reference(bits: list[int]) -> tuple[int, list[list[int]]]:
    """randomExcursions.c: J and nu[k][state] for the 8 states."""
    n = len(bits)
    S = [0] * n
    S[0] = 2 * bits[0] - 1
    cycle = [0]
    for i in range(1, n):
        S[i] = S[i - 1] + 2 * bits[i] - 1
        if S[i] == 0:
            cycle.append(i)
    J = len(cycle) - 1
    if S[n - 1] != 0:
        J += 1
        cycle.append(n)
    else:
        cycle[J] = n
    nu = [[0] * 8 for _ in range(6)]
    start, stop = 0, cycle[1]
    for j in range(1, J + 1):
        counter = [0] * 8
        for i in range(start, stop):
            if 1 <= abs(S[i]) <= 4:
                counter[S[i] + (4 if S[i] < 0 else 3)] += 1
        start = cycle[j] + 1
        if j < J:
            stop = cycle[j + 1]
        for i in range(8):
            nu[min(counter[i], 5)][i] += 1
    return J, nu


# --- templates ----------------------------------------------------------------------------


def test_there_are_148_aperiodic_9_bit_templates_in_binary_order() -> None:
    templates = aperiodic_templates(9)
    assert len(templates) == 148
    assert list(templates) == sorted(templates)
    assert templates[:3] == ("000000001", "000000011", "000000101")
    assert templates[-1] == "111111110"


@pytest.mark.parametrize(("m", "count"), sorted(REFERENCE_COUNTS.items()))
def test_template_counts_match_the_reference_table(m: int, count: int) -> None:
    assert len(aperiodic_templates(m)) == count


def test_aperiodicity() -> None:
    assert all(map(is_aperiodic, ["001", "0001", "000000001"]))
    assert not any(map(is_aperiodic, ["010", "0000", "101101"]))


def test_periodic_template_is_refused() -> None:
    with pytest.raises(ValueError, match="aperiodic"):
        non_overlapping_template(aes_bits("t", 1000), m=3, templates=("010",))


def test_non_overlapping_counts_match_a_skipping_scan() -> None:
    bits = aes_bits("non-overlapping", 8 * 300)
    m, N = 4, 8
    M = bits.size // N
    result = non_overlapping_template(bits, m=m, N=N)
    mu = (M - m + 1) / 2**m
    variance = M * (1 / 2**m - (2 * m - 1) / 2 ** (2 * m))
    for template, p in zip(result.labels, result.p_values, strict=True):
        pattern = [int(c) for c in template]
        chi2 = 0.0
        for i in range(N):
            block = bits[i * M : (i + 1) * M].tolist()
            j = count = 0
            while j < M - m + 1:
                if block[j : j + m] == pattern:
                    count += 1
                    j += m
                else:
                    j += 1
            chi2 += (count - mu) ** 2 / variance
        assert p == pytest.approx(float(gammaincc(N / 2, chi2 / 2)), abs=1e-12)


# --- linear complexity, rank, longest run ---------------------------------------------------


@pytest.mark.parametrize("M", [1, 2, 7, 64, 65, 200])
def test_bit_parallel_berlekamp_massey_matches_the_reference_loop(M: int) -> None:
    blocks = aes_bits(f"bm-{M}", 130 * M).reshape(130, M)
    special = np.zeros((4, M), dtype=np.uint8)
    special[1, -1] = 1  # 0...01: complexity M
    special[2, 0] = 1  # 10...0: complexity 1
    special[3] = 1
    blocks = np.vstack([blocks, special])
    expected = [berlekamp_massey_reference(row.tolist()) for row in blocks]
    assert linear_complexities(blocks).tolist() == expected


def test_gf2_ranks_match_a_scalar_elimination() -> None:
    matrices = aes_bits("rank", 300 * 32 * 32).reshape(300, 32, 32)
    matrices[0] = 0
    matrices[1] = np.eye(32, dtype=np.uint8)
    matrices[2, 5] = matrices[2, 7] ^ matrices[2, 9]  # dependent row
    weights = 1 << np.arange(31, -1, -1, dtype=np.int64)
    expected = [gf2_rank_reference([int(r) for r in m @ weights]) for m in matrices]
    ranks = gf2_ranks(matrices)
    assert ranks.tolist() == expected
    assert ranks[:2].tolist() == [0, 32]
    assert ranks[2] <= 31


def test_rank_probabilities_are_the_papers() -> None:
    p32, p31, p30 = rank_probabilities()
    assert (round(p32, 4), round(p31, 4), round(p30, 4)) == (0.2888, 0.5776, 0.1336)


def test_longest_run_lengths() -> None:
    rows = aes_bits("runs", 50 * 128).reshape(50, 128)
    expected = [
        max((len(list(g)) for k, g in itertools.groupby(row.tolist()) if k == 1), default=0)
        for row in rows
    ]
    assert longest_run_lengths(rows).tolist() == expected


# --- cumulative sums --------------------------------------------------------------------------


def test_c_division_truncates_towards_zero() -> None:
    assert [_c_div(a, 4) for a in (-7, -4, -3, 0, 3, 7)] == [-1, -1, 0, 0, 0, 1]


@pytest.mark.parametrize("n", [10, 11, 99, 100, 1001])
def test_cusum_matches_a_transliteration(n: int) -> None:
    bits = aes_bits(f"cusum-{n}", n)
    walk = np.cumsum(2 * bits.astype(int) - 1)
    z = int(np.max(np.abs(walk)))

    def c_div(a: int, b: int) -> int:
        return int(a / b)

    total = 1.0
    for k in range(c_div(-(n // z) + 1, 4), c_div(n // z - 1, 4) + 1):
        total -= ndtr((4 * k + 1) * z / math.sqrt(n)) - ndtr((4 * k - 1) * z / math.sqrt(n))
    for k in range(c_div(-(n // z) - 3, 4), c_div(n // z - 1, 4) + 1):
        total += ndtr((4 * k + 3) * z / math.sqrt(n)) - ndtr((4 * k + 1) * z / math.sqrt(n))
    assert cusum_p_value(z, n) == pytest.approx(total, abs=1e-12)
    assert cumulative_sums(bits).p_values[0] == pytest.approx(total, abs=1e-12)


def test_cusum_reverse_is_forward_of_the_reversed_sequence() -> None:
    bits = aes_bits("reverse", 5000)
    forward, reverse = cumulative_sums(bits).p_values
    assert cumulative_sums(bits[::-1].copy()).p_values == (reverse, forward)


# --- random excursions --------------------------------------------------------------------------


def test_random_excursion_counts_match_the_reference_loop() -> None:
    bits = aes_bits("excursions", 1_000_000)
    J, nu = excursion_counts_reference(bits.tolist())
    assert J >= 500
    pi = [
        [0.5, 0.25, 0.125, 0.0625, 0.03125, 0.03125],
        [0.75, 0.0625, 0.046875, 0.03515625, 0.0263671875, 0.0791015625],
        [0.8333333333, 0.02777777778, 0.02314814815, 0.01929012346, 0.01607510288, 0.0803755143],
        [0.875, 0.015625, 0.013671875, 0.01196289063, 0.0104675293, 0.0732727051],
    ]
    result = random_excursions(bits)
    for i, x in enumerate((-4, -3, -2, -1, 1, 2, 3, 4)):
        expected = [J * p for p in pi[abs(x) - 1]]
        chi2 = sum((nu[k][i] - expected[k]) ** 2 / expected[k] for k in range(6))
        assert result.p_values[i] == pytest.approx(float(gammaincc(2.5, chi2 / 2)), abs=1e-12)


def test_excursion_tests_do_not_apply_with_fewer_than_500_cycles() -> None:
    # a walk that leaves zero at once and never returns: one cycle
    bits = np.ones(1_000_000, dtype=np.uint8)
    bits[::3] = 0
    for result in (random_excursions(bits), random_excursions_variant(bits)):
        assert set(result.p_values) == {None}
    assert random_excursions(aes_bits("short", 100_000)).p_values == (None,) * 8


def test_excursion_labels_are_in_reference_order() -> None:
    bits = aes_bits("labels", 1000)
    expected = ("x=-4", "x=-3", "x=-2", "x=-1", "x=+1", "x=+2", "x=+3", "x=+4")
    assert random_excursions(bits).labels == expected
    variant = random_excursions_variant(bits).labels
    assert variant == tuple(f"x={x:+d}" for x in [*range(-9, 0), *range(1, 10)])


# --- universal, runs, overlapping template -----------------------------------------------------


def test_universal_block_length_follows_the_reference() -> None:
    assert block_length_for(387_839) is None
    assert block_length_for(387_840) == 6
    assert block_length_for(1_000_000) == 7
    assert block_length_for(2_068_480) == 8
    assert universal(aes_bits("u", 300_000)).p_values == (None,)


def test_universal_distances_match_the_reference_table_loop() -> None:
    bits = aes_bits("universal", 400_000)
    L, Q = 6, 640
    K = bits.size // L - Q
    T = [0] * 2**L
    total = 0.0
    words = bits[: (Q + K) * L].reshape(-1, L) @ (1 << np.arange(L - 1, -1, -1))
    for i, word in enumerate(words.tolist(), start=1):
        if i > Q:
            total += math.log(i - T[word]) / math.log(2)
        T[word] = i
    phi = total / K
    c = 0.7 - 0.8 / L + (4 + 32 / L) * K ** (-3 / L) / 15
    sigma = c * math.sqrt(2.954 / K)
    expected = math.erfc(abs(phi - 5.2177052) / (math.sqrt(2) * sigma))
    assert universal(bits).p_value == pytest.approx(expected, abs=1e-9)


def test_runs_pre_test_failure_gives_zero() -> None:
    biased = (np.arange(1000) % 4 != 0).astype(np.uint8)  # 75 % ones
    assert runs(biased).p_value == 0.0
    assert runs(np.ones(10, dtype=np.uint8)).p_value == 0.0


def test_overlapping_class_probabilities_sum_to_one() -> None:
    pi = class_probabilities()
    assert math.fsum(pi) == pytest.approx(1.0)
    assert pi[0] == pytest.approx(0.367879, abs=1e-6)  # exp(-1): the code's value, not the paper's


def test_longest_run_is_not_applicable_below_128_bits() -> None:
    assert longest_run(aes_bits("lr", 127)).p_values == (None,)
    assert longest_run(aes_bits("lr", 128)).p_value is not None


# --- the whole battery ---------------------------------------------------------------------------


def test_registry_holds_the_15_tests_in_reference_order() -> None:
    assert TEST_NAMES == (
        "frequency",
        "block_frequency",
        "cumulative_sums",
        "runs",
        "longest_run",
        "rank",
        "fft",
        "non_overlapping_template",
        "overlapping_template",
        "universal",
        "approximate_entropy",
        "random_excursions",
        "random_excursions_variant",
        "serial",
        "linear_complexity",
    )


def test_results_name_their_test_and_sub_tests() -> None:
    results = run_tests(aes_bits("shape", 1_000_000))
    counts = {"cumulative_sums": 2, "non_overlapping_template": 148, "serial": 2}
    counts |= {"random_excursions": 8, "random_excursions_variant": 18}
    for name, result in results.items():
        assert result.name == name
        assert len(result.p_values) == counts.get(name, 1)
    assert results["cumulative_sums"].labels == ("forward", "reverse")
    assert results["serial"].labels == ("first", "second")
    assert results["non_overlapping_template"].labels == aperiodic_templates(9)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 9, 10, 17, 100, 127, 128, 1023, 1024, 1032, 4000])
def test_every_test_copes_with_any_length(n: int) -> None:
    for bits in (aes_bits(f"len-{n}", n), np.zeros(n, dtype=np.uint8), np.ones(n, np.uint8)):
        for name, result in run_tests(bits).items():
            assert isinstance(result, TestResult)
            for p in result.p_values:
                assert p is None or 0.0 <= p <= 1.0, (name, n, p)


@pytest.mark.parametrize(
    "pattern",
    ["zeros", "ones", "alternating", "period-3", "half-and-half"],
)
def test_degenerate_million_bit_streams_give_valid_p_values(pattern: str) -> None:
    n = 1_000_000
    index = np.arange(n)
    bits = {
        "zeros": np.zeros(n),
        "ones": np.ones(n),
        "alternating": index % 2,
        "period-3": index % 3 == 0,
        "half-and-half": index >= n // 2,
    }[pattern].astype(np.uint8)
    results = run_tests(bits)  # warnings are errors: no division by zero, no NaN
    for name, result in results.items():
        for p in result.p_values:
            assert p is None or 0.0 <= p <= 1.0, (name, p)
    assert results["linear_complexity"].p_value == pytest.approx(0.0, abs=1e-12)


def test_run_tests_refuses_unknown_names() -> None:
    with pytest.raises(ValueError, match="unknown test"):
        run_tests(aes_bits("x", 100), ("frequency", "nope"))


def test_as_bits_validates() -> None:
    assert as_bits([0, 1, 1]).dtype == np.uint8
    with pytest.raises(ValueError, match="other than 0 and 1"):
        as_bits([0, 2])
    with pytest.raises(ValueError, match="one-dimensional"):
        as_bits([[0, 1]])


def test_test_result_checks_its_shape() -> None:
    with pytest.raises(ValueError, match="labels"):
        TestResult(name="x", labels=("a",), p_values=(0.5, 0.5))
    with pytest.raises(ValueError, match="not one"):
        _ = TestResult(name="x", labels=("a", "b"), p_values=(0.5, 0.5)).p_value


def test_each_registered_test_is_deterministic_and_pure() -> None:
    bits = text_bits("1100100100001111110110101010001000100001011010001100001000110100" * 20)
    before = bits.copy()
    for name in TEST_NAMES:
        assert REGISTRY[name](bits) == REGISTRY[name](bits)
    assert np.array_equal(bits, before)


def test_the_battery_imports_nothing_of_the_service() -> None:
    code = (
        "import json, sys, certification.sp800_22, certification.report; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    forbidden = ("rng_service", "grpc", "sqlite3", "prometheus_client")
    assert not [m for m in loaded for f in forbidden if m == f or m.startswith(f + ".")]
