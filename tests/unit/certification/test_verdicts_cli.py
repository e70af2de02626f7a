"""Verdicts a lab can sign, through the command line, on generators written here (not the
project's power-study generators): defective input FAILs at one sequence, a good generator
with a fixed seed PASSes at the documented minimum (55 sequences for SP 800-22, 320 spins for
a wheel) and is INCONCLUSIVE below it, RANDU's high bits, a short period and a lag
correlation FAIL at the documented sample sizes; the evidence names the software, the
command line and the input's SHA-256 and size."""

from __future__ import annotations

import hashlib
import io
import json
import random
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from certification import power
from certification.bitfile import file_sequences, inspect_bit_file
from certification.cli import main
from certification.errors import InputError
from certification.report import render_json, write_json
from certification.sp800_22 import assess, run_tests
from certification.sp800_22.assessment import MIN_SEQUENCES, suite_verdict
from certification.sp800_22.table import PValueTable
from rng_service.outcomes.roulette import WHEEL_ORDER, WheelType

ONE_SEQUENCE = 125_000  # bytes: 10^6 bits, the default sequence length
SHORT_N = 20_000  # bits per sequence for the many-sequence runs (fast)


# --- generators written for this test ---------------------------------------------------------


def sha256_counter(seed: bytes, n_bytes: int) -> bytes:
    """A good generator: SHA-256(seed || counter) blocks."""
    blocks = (
        hashlib.sha256(seed + i.to_bytes(8, "big")).digest() for i in range(n_bytes // 32 + 1)
    )
    return b"".join(blocks)[:n_bytes]


def stuck_bit(n_bytes: int, bit: int = 2) -> bytes:
    data = np.frombuffer(sha256_counter(b"stuck", n_bytes), dtype=np.uint8)
    return (data | np.uint8(1 << bit)).tobytes()


def randu_words(n_bytes: int, seed: int = 1) -> bytes:
    """RANDU x' = 65539 x mod 2^31, each state as a 4-byte big-endian word (top bit 0)."""
    x, out = seed, bytearray()
    while len(out) < n_bytes:
        x = (65539 * x) % 2**31
        out += x.to_bytes(4, "big")
    return bytes(out[:n_bytes])


def periodic(n_bytes: int, period: int = 1_000) -> bytes:
    block = sha256_counter(b"period", period)
    return (block * (n_bytes // period + 1))[:n_bytes]


# --- SP 800-22 --------------------------------------------------------------------------------


def _nist(tmp_path: Path, data: bytes, *extra: str) -> tuple[int, dict[str, Any], list[str]]:
    path = tmp_path / "input.bin"
    path.write_bytes(data)
    out = tmp_path / "nist.json"
    argv = ["nist", "--input", str(path), "--format", "binary", "--json", str(out), *extra]
    code = main(argv)
    return code, json.loads(out.read_text()), argv


@pytest.mark.parametrize(
    "make",
    [lambda: bytes(ONE_SEQUENCE), lambda: stuck_bit(ONE_SEQUENCE),
     lambda: randu_words(ONE_SEQUENCE), lambda: periodic(ONE_SEQUENCE)],
    ids=["all-zero", "stuck-bit", "randu-31-bit-words", "period-1000-bytes"],
)  # fmt: skip
def test_defective_input_fails_at_one_sequence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any
) -> None:
    """The issue's reproduction: `head -c 125000 /dev/zero` used to PASS (the proportion
    range truncates to 0..1 at one sequence). Decisive first-level P-values FAIL it."""
    code, report, _ = _nist(tmp_path, make())
    assert code == 1
    assert report["verdict"] == "FAIL"
    assert report["input"]["sequences"] == 1
    assert "RESULT: FAIL" in capsys.readouterr().out
    checks = {c["check"] for c in report["suite"]["rule"]["rejected"]}
    assert checks == {"extreme"}  # one sequence: only the first-level P-values can be decisive
    page = tmp_path / "report.html"
    assert main(["report", "--nist", str(tmp_path / "nist.json"), "--html", str(page)]) == 1
    assert "FAIL:" in page.read_text()


def test_good_generator_passes_at_the_minimum_and_is_inconclusive_below(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert MIN_SEQUENCES == 55
    data = sha256_counter(b"good-seed-2026", MIN_SEQUENCES * SHORT_N // 8)
    code, report, _ = _nist(tmp_path, data, "--bits-per-sequence", str(SHORT_N))
    assert (code, report["verdict"]) == (0, "PASS"), report["verdict_reason"]
    assert report["input"]["sequences"] == 55
    capsys.readouterr()
    code, report, _ = _nist(tmp_path, data[: -SHORT_N // 8], "--bits-per-sequence", str(SHORT_N))
    assert (code, report["verdict"]) == (3, "INCONCLUSIVE")
    assert "at least 55 sequences" in report["verdict_reason"]
    assert "137,500 bytes" in report["verdict_reason"]  # 55 x 20,000 bits
    assert "RESULT: INCONCLUSIVE" in capsys.readouterr().out


def test_two_sequences_with_one_failing_are_not_a_pass(tmp_path: Path) -> None:
    """Issue: with two sequences one failing sequence used to pass."""
    data = sha256_counter(b"two", SHORT_N // 8) + stuck_bit(SHORT_N // 8, bit=7)
    code, report, _ = _nist(tmp_path, data, "--bits-per-sequence", str(SHORT_N))
    assert report["verdict"] != "PASS"
    assert code in (1, 3)


def test_report_states_criteria_and_evidence(tmp_path: Path) -> None:
    data = sha256_counter(b"evidence", 3 * SHORT_N // 8)
    _, report, argv = _nist(tmp_path, data, "--bits-per-sequence", str(SHORT_N))
    criteria = report["criteria"]
    assert criteria["alpha"] == 0.01
    assert criteria["minimum_sequences"] == 55
    assert criteria["uniformity"]["threshold"] == 0.0001
    assert criteria["uniformity"]["bins"] == 10
    assert "3 sqrt" in criteria["proportion"]["rule"]
    assert criteria["suite_rule"]["suite_alpha"] == 0.01
    assert "Bonferroni" in criteria["suite_rule"]["method"]
    evidence = report["evidence"]
    assert evidence["command_line"] == ["rng-certify", *argv]
    software = evidence["software"]
    assert software["version"] == metadata.version("rng-service")
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True,
        check=False,
    ).stdout.strip()  # fmt: skip
    assert software["git_commit"] == (head or None)
    (facts,) = evidence["inputs"]
    assert facts["sha256"] == hashlib.sha256(data).hexdigest()
    assert facts["size_bytes"] == len(data)
    page = tmp_path / "r.html"
    main(["report", "--nist", str(tmp_path / "nist.json"), "--html", str(page)])
    html = page.read_text()
    for text in (facts["sha256"], "Bonferroni", "minimum_sequences", "0.0001", argv[2]):
        assert text in html, text


def test_ascii_is_streamed_in_pieces(tmp_path: Path) -> None:
    """Sequences cut across pieces of 7 bytes (and odd whitespace) are the same bits."""
    data = sha256_counter(b"pieces", 400)
    bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8))
    text = "".join(("01"[b] + (" " if i % 13 == 0 else "") + ("\n" if i % 61 == 0 else ""))
                   for i, b in enumerate(bits))  # fmt: skip
    path = tmp_path / "bits.txt"
    path.write_text(text)
    facts = inspect_bit_file(path, "ascii", piece=7)
    assert facts.bits == bits.size
    sequences = list(file_sequences(facts, 999, piece=7))
    assert len(sequences) == bits.size // 999
    assert np.array_equal(np.concatenate(sequences), bits[: len(sequences) * 999])


def test_the_streamed_report_is_the_rendered_document() -> None:
    """``write_json`` (one row per line, no copy of the whole report) writes exactly the
    document ``render_json`` builds, ``null`` for what does not apply included."""
    rng = np.random.default_rng(12)
    results = [run_tests(rng.integers(0, 2, 5_000).astype(np.uint8)) for _ in range(3)]
    table = PValueTable.from_results(results)
    assessment = assess(table)
    verdict = suite_verdict(assessment)
    info = {"path": "x", "sequences": 3}
    out = io.StringIO()
    write_json(out, table, assessment, verdict, input_info=info, evidence={"e": 1})
    expected = render_json(results, assessment, verdict, input_info=info, evidence={"e": 1})
    assert json.loads(out.getvalue()) == json.loads(json.dumps(expected))
    assert json.loads(out.getvalue())["tests"]["universal"]["p_values"] == [[None]] * 3


def test_a_file_that_changes_while_tested_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bits.bin"
    path.write_bytes(sha256_counter(b"change", 10_000))
    facts = inspect_bit_file(path, "binary")
    path.write_bytes(sha256_counter(b"other", 10_000))
    with pytest.raises(InputError, match="changed while it was being tested"):
        list(file_sequences(facts, 8_000))


# --- the outcome battery ------------------------------------------------------------------------


def _spin_records(path: Path, compartments: list[int], wheel: str = "double_zero") -> Path:
    """roulette_spin_batch entries (the compact log form) of the given compartment indices,
    taken in wheel order as the service maps randbelow(38) to a number."""
    order = WHEEL_ORDER[WheelType(wheel)]
    with path.open("w") as out:
        for start in range(0, len(compartments), 10_000):
            numbers = [order[k] for k in compartments[start : start + 10_000]]
            record = {"kind": "roulette_spin_batch", "params": {"wheel": wheel},
                      "outcome": {"numbers": numbers}, "index": start}  # fmt: skip
            out.write(json.dumps(record) + "\n")
    return path


def _outcomes(tmp_path: Path, records: Path) -> tuple[int, dict[str, Any]]:
    out = tmp_path / "outcomes.json"
    code = main(["outcomes", "--input", str(records), "--json", str(out)])
    return code, json.loads(out.read_text())


def randu_high(n: int, seed: int = 12345) -> list[int]:
    x, out = seed, []
    for _ in range(n):
        x = (65539 * x) % 2**31
        out.append(38 * x // 2**31)
    return out


def short_period(n: int, period: int) -> list[int]:
    rng = random.Random(77)
    block = [rng.randrange(38) for _ in range(period)]
    return [block[i % period] for i in range(n)]


def lag_correlated(n: int, lag: int = 7, share: float = 0.05) -> list[int]:
    rng = random.Random(78)
    out: list[int] = []
    for i in range(n):
        repeat = i >= lag and rng.random() < share
        out.append(out[i - lag] if repeat else rng.randrange(38))
    return out


@pytest.mark.parametrize(
    ("name", "make", "caught_by"),
    [
        ("randu_high", lambda n: randu_high(n), "overlapping_triples"),
        ("short_period", lambda n: short_period(n, 3_600), "repeats"),
        ("lag_correlated", lambda n: lag_correlated(n), "lag_correlation"),
    ],
)
def test_bad_generators_fail_at_the_documented_size(
    tmp_path: Path, name: str, make: Any, caught_by: str
) -> None:
    """At the size where the power study catches the study's own version of each defect with
    99 % power (certification.power.TEST_SIZES, docs/certification.md)."""
    n = power.TEST_SIZES[name]
    code, report = _outcomes(tmp_path, _spin_records(tmp_path / "r.jsonl", make(n)))
    assert (code, report["verdict"]) == (1, "FAIL"), report["verdict_reason"]
    assert f"wheel/double_zero/{caught_by}" in report["suite"]["failed"]


def test_good_spins_pass_at_the_power_size_and_are_inconclusive_below(tmp_path: Path) -> None:
    """320 spins (every test applies) used to PASS; the wheel's reference defects need about
    44,000 double zero spins for 99 % power: one spin fewer is INCONCLUSIVE, naming the size."""
    rng = random.Random(2026)
    code, report = _outcomes(
        tmp_path, _spin_records(tmp_path / "r.jsonl", [rng.randrange(38) for _ in range(320)])
    )
    assert (code, report["verdict"]) == (3, "INCONCLUSIVE")
    (group,) = report["power"]
    needed = group["needed"]
    assert 40_000 < needed < 50_000
    assert f"needs {needed:,} to see {group['deciding_defect']}" in report["verdict_reason"]
    spins = [rng.randrange(38) for _ in range(needed)]
    code, report = _outcomes(tmp_path, _spin_records(tmp_path / "r.jsonl", spins))
    assert (code, report["verdict"]) == (0, "PASS"), report["verdict_reason"]
    code, report = _outcomes(tmp_path, _spin_records(tmp_path / "r.jsonl", spins[:-1]))
    assert (code, report["verdict"]) == (3, "INCONCLUSIVE"), report["verdict_reason"]
