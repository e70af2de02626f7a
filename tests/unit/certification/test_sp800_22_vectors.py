"""Agreement with sts-2.1.2: the SP 800-22 worked examples and Appendix B (pi), to 1e-6.

Parametrized from ``tests/vectors/sp800_22/worked_examples.json``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from certification.sp800_22 import REGISTRY, Bits, TestResult
from certification.sp800_22.approximate_entropy import approximate_entropy
from certification.sp800_22.block_frequency import block_frequency
from certification.sp800_22.cumulative_sums import cumulative_sums
from certification.sp800_22.longest_run import longest_run, parameters_for
from certification.sp800_22.non_overlapping_template import non_overlapping_template
from certification.sp800_22.random_excursions_variant import random_excursions_variant
from certification.sp800_22.serial import serial
from tests.unit.certification.support import load_vectors, text_bits

TOLERANCE = 1e-6
VECTORS = load_vectors()

# Appendix B key -> (test, sub-test label); the parameters in the keys are the reference
# defaults, checked in test_appendix_b_keys_name_the_defaults.
APPENDIX_B = {
    "frequency": ("frequency", "frequency"),
    "block_frequency_M128": ("block_frequency", "block_frequency"),
    "cumulative_sums_forward": ("cumulative_sums", "forward"),
    "cumulative_sums_reverse": ("cumulative_sums", "reverse"),
    "runs": ("runs", "runs"),
    "longest_run_M10000": ("longest_run", "longest_run"),
    "rank": ("rank", "rank"),
    "fft": ("fft", "fft"),
    "non_overlapping_template_m9_000000001": ("non_overlapping_template", "000000001"),
    "overlapping_template_m9": ("overlapping_template", "overlapping_template"),
    "universal": ("universal", "universal"),
    "approximate_entropy_m10": ("approximate_entropy", "approximate_entropy"),
    "random_excursions_x+1": ("random_excursions", "x=+1"),
    "random_excursions_variant_x-1": ("random_excursions_variant", "x=-1"),
    "linear_complexity_M500": ("linear_complexity", "linear_complexity"),
    "serial_m16_first": ("serial", "first"),
}


WITH_PARAMETERS: dict[str, Callable[..., TestResult]] = {
    "block_frequency": block_frequency,
    "approximate_entropy": approximate_entropy,
    "serial": serial,
}


def _example_id(example: dict[str, Any]) -> str:
    return f"{example['section']}-{example['test']}-{example['input'][:8]}"


def _run_example(example: dict[str, Any]) -> tuple[float | None, ...]:
    """The P-values our implementation gives for one worked example, in the vector's order."""
    bits = text_bits(VECTORS.get(example["input"], example["input"]))
    params = dict(example["params"])
    name = example["test"]
    if name == "cumulative_sums":
        result = cumulative_sums(bits)
        return (result.p_values[result.labels.index(params["mode"])],)
    if name == "longest_run":
        chosen = parameters_for(bits.size)
        assert (params["M"], params["K"]) == (chosen.M, chosen.K)
        return longest_run(bits).p_values
    if name == "non_overlapping_template":
        assert bits.size // params["N"] == params["M"]
        templates = (params["template"],)
        return non_overlapping_template(
            bits, m=params["m"], templates=templates, N=params["N"]
        ).p_values
    if name == "random_excursions_variant":
        # the example is below the test's applicability bound (see its note)
        result = random_excursions_variant(bits, min_cycles=1)
        return (result.p_values[result.labels.index(f"x={params['x']:+d}")],)
    if name in WITH_PARAMETERS:
        return WITH_PARAMETERS[name](bits, **params).p_values
    assert params == {}
    return REGISTRY[name](bits).p_values


@pytest.mark.parametrize("example", VECTORS["examples"], ids=_example_id)
def test_worked_example_matches_reference(example: dict[str, Any]) -> None:
    expected = example["p_values"] if "p_values" in example else [example["p_value"]]
    got = _run_example(example)
    assert len(got) == len(expected)
    for value, reference in zip(got, expected, strict=True):
        assert value is not None
        assert value == pytest.approx(reference, abs=TOLERANCE)


def test_vector_file_covers_every_appendix_b_value() -> None:
    assert set(VECTORS["appendix_b_pi"]["p_values"]) == set(APPENDIX_B)
    assert VECTORS["appendix_b_pi"]["n"] == 1_000_000


@pytest.mark.parametrize("key", sorted(APPENDIX_B))
def test_appendix_b_pi_matches_reference(key: str, pi_results: dict[str, TestResult]) -> None:
    test, label = APPENDIX_B[key]
    result = pi_results[test]
    value = result.p_values[result.labels.index(label)]
    assert value is not None
    assert value == pytest.approx(VECTORS["appendix_b_pi"]["p_values"][key], abs=TOLERANCE)


@pytest.mark.parametrize(
    ("name", "parameter", "default"),
    [
        ("block_frequency", "M", 128),
        ("non_overlapping_template", "m", 9),
        ("overlapping_template", "m", 9),
        ("approximate_entropy", "m", 10),
        ("linear_complexity", "M", 500),
        ("serial", "m", 16),
    ],
)
def test_registry_runs_the_reference_defaults(name: str, parameter: str, default: int) -> None:
    assert inspect.signature(REGISTRY[name]).parameters[parameter].default == default


def test_longest_run_uses_m_10000_for_a_million_bits(pi_bits: Bits) -> None:
    assert parameters_for(pi_bits.size).M == 10000
