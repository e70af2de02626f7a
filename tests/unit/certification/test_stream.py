"""Streaming: the outcome tests accumulated in one pass (certification/outcomes/stream.py) give
the batch tests' results, whatever the chunking, in memory bounded by the cells; and
``rng-certify outcomes`` reads a file, a pipe or standard input (``--input -``) once, its
evidence holding the size and SHA-256 of exactly the bytes it read."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from certification.cli import main
from certification.outcomes.sequence import run_sequence_tests
from certification.outcomes.stream import KS_BINS, IntegerStream
from rng_service.outcomes.roulette import WHEEL_ORDER, WheelType

EXACT = {
    "runs_up_and_down", "runs_up", "runs_down", "lag_correlation", "gap", "poker",
    "coupon_collector", "repeats", "values_max_cell", "pairs_max_cell", "triples_max_cell",
    "gap_per_value",
}  # fmt: skip


def _streamed(values: np.ndarray, d: int, chunk: int, buffer_values: int) -> dict[str, object]:
    stream = IntegerStream(d, "g", buffer_values=buffer_values)
    for start in range(0, values.size, chunk):
        stream.add(values[start : start + chunk])
    assert stream.streaming
    return {r.name: r for r in stream.results()}


@pytest.mark.parametrize(("d", "chunk"), [(6, 777), (38, 1000), (38, 4093)])
def test_streamed_tests_equal_the_batch_tests(d: int, chunk: int) -> None:
    values = np.random.default_rng(d + chunk).integers(0, d, 30_000)
    batch = {r.name: r for r in run_sequence_tests(values, d, "g")}
    streamed = _streamed(values, d, chunk, buffer_values=1_000)
    assert set(streamed) == set(batch)
    for name in EXACT:
        b, s = batch[name], streamed[name]
        assert s.statistic == pytest.approx(b.statistic, rel=1e-9, abs=1e-9), name
        assert s.p_value == pytest.approx(b.p_value, rel=1e-6, abs=1e-12), name
    ks_b, ks_s = batch["uniformity_ks"], streamed["uniformity_ks"]
    assert ks_b.statistic is not None
    assert ks_s.statistic is not None
    assert ks_b.statistic - 1 / KS_BINS <= ks_s.statistic <= ks_b.statistic + 1e-12
    for name in ("overlapping_pairs", "overlapping_triples"):
        if d == 6:  # the full alphabet in both: the same statistic
            assert streamed[name].statistic == pytest.approx(batch[name].statistic, rel=1e-9)
        else:  # coarsened for the 1,000 buffered values: still its null distribution's df
            alphabet = streamed[name].details["alphabet"]
            k = streamed[name].details["k"]
            assert isinstance(alphabet, int)
            assert isinstance(k, int)
            assert streamed[name].df == alphabet**k - alphabet ** (k - 1)


def test_streamed_repeat_detector_sees_a_period() -> None:
    block = np.random.default_rng(1).integers(0, 38, 3_000)
    values = np.tile(block, 20)
    streamed = _streamed(values, 38, 5_000, buffer_values=1_000)
    repeats = streamed["repeats"]
    assert repeats.p_value is not None
    assert repeats.p_value < 1e-6
    assert repeats.details["period"] == 3_000
    fair = _streamed(np.random.default_rng(2).integers(0, 38, 60_000), 38, 5_000, 1_000)
    assert fair["repeats"].p_value == 1.0


def _records(n: int) -> bytes:
    order = WHEEL_ORDER[WheelType.DOUBLE_ZERO]
    rng = np.random.default_rng(9)
    lines = []
    for start in range(0, n, 1_000):
        numbers = [order[k] for k in rng.integers(0, 38, min(1_000, n - start)).tolist()]
        lines.append(json.dumps({"kind": "roulette_spin_batch", "params": {"wheel":
                     "double_zero"}, "outcome": {"numbers": numbers}}))  # fmt: skip
    return ("\n".join(lines) + "\n").encode()


def test_input_dash_reads_standard_input_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _records(5_000)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    out = tmp_path / "o.json"
    assert main(["outcomes", "--input", "-", "--json", str(out)]) == 3  # below power size
    doc = json.loads(out.read_text())
    (facts,) = doc["evidence"]["inputs"]
    assert facts == {"path": "-", "size_bytes": len(data),
                     "sha256": hashlib.sha256(data).hexdigest()}  # fmt: skip
    assert doc["outcome_count"] == 5_000
    assert doc["input"]["records"] == 5


def test_a_pipe_through_dev_stdin_is_hashed_as_read(tmp_path: Path) -> None:
    """The issue's reproduction: ``--input /dev/stdin`` recorded size 0 and the SHA-256 of
    nothing, because the evidence read the pipe a second time."""
    data = _records(3_000)
    out = tmp_path / "o.json"
    done = subprocess.run(
        [sys.executable, "-m", "certification.entry", "outcomes", "--input", "/dev/stdin",
         "--json", str(out)],
        input=data, capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr.decode()
    (facts,) = json.loads(out.read_text())["evidence"]["inputs"]
    assert facts["size_bytes"] == len(data)
    assert facts["sha256"] == hashlib.sha256(data).hexdigest()


def test_standard_input_cannot_be_given_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["outcomes", "--input", "-", "--input", "-", "--json", str(tmp_path / "o")])
    assert status == 2
    assert "standard input can be given once" in capsys.readouterr().err


def test_dice_are_tallied_not_kept() -> None:
    """Dice groups hold counts (at most 6^3 ordered tuples for Sic Bo) and the faces' stream,
    whose tests equal the batch tests of the same faces; the ordered tuples' chi-square is
    recomputed here from the rolls."""
    from collections import Counter

    from certification import sources, tallies
    from certification.outcomes.battery import all_tests

    records = sources.generate_records(sources.lab_generator("dice-tally"), {"sic_bo": 3000})
    rolls = [tuple(r["outcome"]["faces"]) for r in records]
    (group,) = tallies.build_sample(records).dice
    assert group.outcomes == 3000
    assert len(group.tuple_counts) <= 216
    faces = np.asarray([f for roll in rolls for f in roll], dtype=np.int64) - 1
    batch = {r.name: r for r in run_sequence_tests(faces, 6, "dice/3d6")}
    streamed = {r.name: r for r in group.stream.results()}
    assert {n: r.statistic for n, r in streamed.items()} == {
        n: r.statistic for n, r in batch.items()
    }
    counts = Counter(rolls)
    x2 = sum((counts.get(k, 0) - 3000 / 216) ** 2 / (3000 / 216)
             for k in [(a, b, c) for a in range(1, 7) for b in range(1, 7)
                       for c in range(1, 7)])  # fmt: skip
    tests = {r.name: r for r in all_tests(tallies.build_sample(records))}
    assert tests["ordered_tuples"].statistic == pytest.approx(x2)


@pytest.mark.parametrize("shoe", [list(range(52)), [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]])
def test_streamed_shuffle_tests_equal_the_batch_tests(shoe: list[int]) -> None:
    """One deck and a shoe with repeated labels: past the buffer, the tallied tables give the
    batch tests' statistics; a repeated shuffle is still found."""
    from fractions import Fraction

    from certification.outcomes.shuffles import ShuffleStream, run_shuffle_tests

    rng = np.random.default_rng(len(shoe))
    rows = np.array([rng.permutation(shoe) for _ in range(3_000)], dtype=np.int64)
    labels = sorted(set(shoe))
    top = {c: Fraction(shoe.count(c), len(shoe)) for c in labels}
    distinct = len(labels) == len(shoe)
    batch = {r.name: r for r in run_shuffle_tests(rows, top, distinct=distinct, group="g")}
    stream = ShuffleStream(top, distinct=distinct, group="g", buffer_shuffles=500)
    for start in range(0, 3_000, 700):
        stream.add(rows[start : start + 700])
    assert stream.streaming
    streamed = {r.name: r for r in stream.results()}
    assert set(streamed) == set(batch)
    for name in set(batch) - {"repeats"}:
        assert streamed[name].statistic == pytest.approx(batch[name].statistic), name
        assert streamed[name].p_value == pytest.approx(batch[name].p_value), name
    if distinct:
        assert streamed["repeats"].p_value == 1.0
        again = ShuffleStream(top, distinct=True, group="g", buffer_shuffles=500)
        again.add(np.concatenate((rows, rows[:1])))
        assert (again.results()[-1].p_value or 1.0) < 1e-9
