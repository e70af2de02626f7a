"""Power: every known-bad generator is rejected at its documented sample size
(``certification.power.TEST_SIZES``, docs/certification.md "Power study"), and our generator
(DeterministicGenerator, fixed seed) passes at the same sizes. Seeds are fixed, so the
verdicts are the same on every run."""

from __future__ import annotations

import pytest

from certification import power
from certification.outcomes.battery import render_summary
from certification.sources import lab_generator, random_source


@pytest.mark.parametrize("name", power.BAD_GENERATORS)
def test_bad_generator_is_rejected_at_its_documented_size(name: str) -> None:
    n = power.TEST_SIZES[name]
    result = power.run_at(name, n)
    assert not result.passed, f"{name} passed at n={n}:\n{render_summary(result)}"


@pytest.mark.parametrize("name", power.BAD_GENERATORS)
def test_our_generator_passes_at_the_same_size(name: str) -> None:
    outcome = power.SCENARIOS[name].outcome
    ours = "ours_spins" if outcome == "spins" else "ours_shuffles"
    n = power.TEST_SIZES[name]
    result = power.run_at(ours, n)
    assert result.passed, f"{ours} failed at n={n}:\n{render_summary(result)}"


def test_randu_low_byte_has_period_64() -> None:
    data = power.Randu(12345).random_bytes(256)
    assert data[:64] == data[64:128] == data[128:192]
    assert len(set(data[:64])) == 64
    assert all(b & 1 for b in data)


def test_stuck_bit_and_short_period() -> None:
    stuck = power.StuckBit(lab_generator("s")).random_bytes(1000)
    assert all(b & (1 << power.STUCK_BIT) for b in stuck)
    period = power.ShortPeriod(lab_generator("p"), period=100)
    data = period.random_bytes(250) + period.random_bytes(50)
    assert data[:100] == data[100:200] == data[200:300]


def test_naive_shuffle_is_a_permutation() -> None:
    deck = power.naive_shuffle(random_source(lab_generator("n")))
    assert sorted(deck) == list(range(52))


def test_study_document() -> None:
    rows = power.run_study(replicates=2)
    doc = power.study_json(rows, confidence=0.99, replicates=2)
    names = [g["name"] for g in doc["generators"]]
    assert names == [*power.BAD_GENERATORS, *power.GOOD_GENERATORS]
    for g in doc["generators"]:
        if g["bad"]:
            assert g["caught_at"] is not None, g
    assert doc["passed"] is True
