"""The one buffer-then-stream switch (certification/outcomes/_buffered.py), through both of its
callers: :class:`IntegerStream` (values) and :class:`ShuffleStream` (shuffles as rows). Up to
the limit the kept outcomes get exactly the batch tests; one outcome more switches once to the
tallies, whatever the chunking, and the tallies count every outcome once. The batch functions
(``run_sequence_tests``, ``run_shuffle_tests``) on the whole sample are the reference. The
hash-sampled repeat checks (``SampledHashes``) keep what their sampled share says, within their
limit, through both callers too."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest

from certification.outcomes import _stats
from certification.outcomes import shuffles as shuffles_module
from certification.outcomes import stream as stream_module
from certification.outcomes._buffered import BufferedStream, SampledHashes
from certification.outcomes.sequence import run_sequence_tests
from certification.outcomes.shuffles import ShuffleStream, run_shuffle_tests
from certification.outcomes.stream import IntegerStream

LIMIT = 600
TOP = {c: Fraction(1, 20) for c in range(20)}


def _values(n: int) -> np.ndarray:
    return np.random.default_rng(11).integers(0, 6, n)


def _shuffles(n: int) -> np.ndarray:
    rng = np.random.default_rng(12)
    return np.array([rng.permutation(20) for _ in range(n)], dtype=np.int64)


#: name -> (outcomes of a sample of n, a fresh stream with LIMIT, the batch tests of a sample)
KINDS: dict[str, tuple[Callable[[int], np.ndarray], Callable[[], BufferedStream],
                       Callable[[np.ndarray], list[_stats.TestResult]]]] = {
    "values": (_values, lambda: IntegerStream(6, "g", buffer_values=LIMIT),
               lambda v: run_sequence_tests(v, 6, "g")),
    "shuffles": (_shuffles, lambda: ShuffleStream(TOP, distinct=True, group="g",
                                                  buffer_shuffles=LIMIT),
                 lambda s: run_shuffle_tests(s, TOP, distinct=True, group="g")),
}  # fmt: skip


def _fed(stream: BufferedStream, outcomes: np.ndarray, chunk: int) -> BufferedStream:
    for start in range(0, len(outcomes), chunk):
        stream.add(outcomes[start : start + chunk])
    return stream


@pytest.mark.parametrize("kind", KINDS)
def test_up_to_the_limit_the_batch_tests_run_on_the_kept_outcomes(kind: str) -> None:
    make, new, batch = KINDS[kind]
    outcomes = make(LIMIT)
    stream = _fed(new(), outcomes, 97)
    assert not stream.streaming
    assert stream.n == LIMIT
    assert stream.results() == batch(outcomes)


#: Tests formed from the tallies with the batch test's very statistic (test_stream.py: the
#: Kolmogorov-Smirnov histogram and the sampled repeats are bounds, checked there).
EXACT = {
    "values": {"runs_up_and_down", "runs_up", "runs_down", "lag_correlation", "gap", "poker",
               "coupon_collector", "values_max_cell", "pairs_max_cell", "triples_max_cell",
               "gap_per_value", "overlapping_pairs", "overlapping_triples"},
    "shuffles": {"top_card", "card_by_position", "card_by_position_max_cell", "adjacent_pairs",
                 "rising_sequences"},
}  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("chunk", [1, 97, LIMIT + 1, 3_000])
def test_one_outcome_past_the_limit_switches_once_whatever_the_chunking(
    kind: str, chunk: int
) -> None:
    """``chunk`` 1: the switch on the limit's next outcome; ``LIMIT + 1`` and more: the first
    chunk alone passes the limit, nothing kept before the switch."""
    make, new, batch = KINDS[kind]
    outcomes = make(3_000)
    stream = _fed(new(), outcomes[: LIMIT + 1], chunk)
    assert stream.streaming
    assert stream.n == LIMIT + 1
    _fed(stream, outcomes[LIMIT + 1 :], chunk)
    assert stream.n == 3_000
    streamed = {r.name: r for r in stream.results()}
    expected = {r.name: r for r in batch(outcomes)}
    assert set(streamed) == set(expected)
    for name in EXACT[kind]:
        s, b = streamed[name], expected[name]
        assert (s.sample_size, s.df) == (b.sample_size, b.df), name
        assert s.statistic == pytest.approx(b.statistic, rel=1e-9, abs=1e-9), name
        assert s.p_value == pytest.approx(b.p_value, rel=1e-6, abs=1e-12), name


def test_sampled_hashes_keep_exactly_the_sampled_share_within_the_limit() -> None:
    """Reference computed here with Python integers: the kept hashes are those whose s lowest
    bits are 0, s the least for which at most ``limit`` of all the hashes added qualify
    (whatever the pieces they came in), each with its own position."""
    rng = np.random.default_rng(13)
    hashes = rng.integers(0, 2**63, 5_000, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    hashes[::7] = hashes[::7] & np.uint64(~0xFF & (2**64 - 1))  # some with low bits 0
    sampled = SampledHashes(100)
    for start in range(0, 5_000, 1_234):
        sampled.add(hashes[start : start + 1_234], start)
    values = [int(h) for h in hashes]
    s = next(b for b in range(65) if sum(v % 2**b == 0 for v in values) <= 100)
    kept, positions = sampled.kept()
    assert sampled.bits == s
    assert positions.tolist() == [i for i, v in enumerate(values) if v % 2**s == 0]
    assert kept.tolist() == [values[i] for i in positions.tolist()]
    assert sampled.collisions() == kept.size**2 / 2 / 2**64


def _thinned(kind: str, outcomes: np.ndarray, chunk: int) -> _stats.TestResult:
    stream = _fed(KINDS[kind][1](), outcomes, chunk)
    assert stream.streaming
    (result,) = [r for r in stream.results() if r.name == "repeats"]
    return result


@pytest.mark.parametrize("kind", KINDS)
def test_thinned_repeat_checks_stay_within_their_limit_and_still_see_a_period(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The streamed repeat checks of both callers with their limit of kept hashes lowered to
    150: a fair stream keeps at most 150 and sees no repeat, even when 20,000 hashes come at
    once; the same stream twice over, fed in chunks, is still caught (its repeats are kept
    whole)."""
    monkeypatch.setattr(stream_module, "REPEAT_KEPT", 150)
    monkeypatch.setattr(shuffles_module, "REPEAT_KEPT_SHUFFLES", 150)
    make = KINDS[kind][0]
    fair = _thinned(kind, make(20_000), 20_000)
    assert fair.details["sampled_share"] != "2^-0"
    kept = fair.details["kept_windows" if kind == "values" else "kept"]
    assert isinstance(kept, int)
    assert 0 < kept <= 150
    assert fair.p_value == 1.0
    once = make(10_000)
    periodic = _thinned(kind, np.concatenate((once, once)), 1_000)
    assert periodic.p_value is not None
    assert periodic.p_value < 1e-9
