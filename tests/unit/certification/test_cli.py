"""``rng-certify nist`` through ``main(argv)``: formats, errors, JSON shape, exit codes.

Three sequences are below the 55 the section 4.2 decisions need, so a good stream is
INCONCLUSIVE here (exit 3); test_verdicts_cli.py has the PASS/FAIL/INCONCLUSIVE cases."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from certification.cli import main
from certification.sp800_22 import TEST_NAMES, run_tests
from certification.sp800_22.templates import aperiodic_templates
from tests.unit.certification.support import aes_stream

N = 20_000
SEQUENCES = 3


def _binary_file(tmp_path: Path, data: bytes, name: str = "bits.bin") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _ascii_of(data: bytes) -> str:
    digits = "".join(np.unpackbits(np.frombuffer(data, dtype=np.uint8)).astype(str))
    lines = [digits[i : i + 64] for i in range(0, len(digits), 64)]
    return " \n".join(lines) + "\r\n\t"


def _run(tmp_path: Path, path: Path, fmt: str, *extra: str) -> tuple[int, dict[str, Any]]:
    out = tmp_path / f"report-{fmt}-{len(extra)}.json"
    argv = ["nist", "--input", str(path), "--format", fmt, "--json", str(out)]
    code = main([*argv, "--bits-per-sequence", str(N), *extra])
    report: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    return code, report


@pytest.fixture
def good_data() -> bytes:
    return aes_stream("cli-good", SEQUENCES * N // 8 + 100)  # 800 bits left over


def test_binary_input_reports(
    tmp_path: Path, good_data: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = _run(tmp_path, _binary_file(tmp_path, good_data), "binary")
    assert code == 3
    out, err = capsys.readouterr()
    assert "RESULT: INCONCLUSIVE" in out
    assert "non_overlapping_template/000000001" in out
    assert err == ""  # no progress bar when stderr is not a terminal
    assert report["input"] == {
        "path": str(tmp_path / "bits.bin"),
        "format": "binary",
        "bits_per_sequence": N,
        "sequences": SEQUENCES,
        "bits_discarded": 800,
        "size_bytes": len(good_data),
        "sha256": hashlib.sha256(good_data).hexdigest(),
    }
    assert report["verdict"] == "INCONCLUSIVE"
    assert report["suite"]["passed"] is False
    assert report["suite"]["failed_sub_tests"] == []


def test_json_shape(tmp_path: Path, good_data: bytes) -> None:
    _, report = _run(tmp_path, _binary_file(tmp_path, good_data), "binary")
    assert list(report["tests"]) == list(TEST_NAMES)
    assert list(report["decisions"]) == list(TEST_NAMES)
    tests = report["tests"]
    assert tests["cumulative_sums"]["sub_tests"] == ["forward", "reverse"]
    assert tests["serial"]["sub_tests"] == ["first", "second"]
    assert tests["non_overlapping_template"]["sub_tests"] == list(aperiodic_templates(9))
    assert tests["random_excursions"]["sub_tests"][:4] == ["x=-4", "x=-3", "x=-2", "x=-1"]
    assert len(tests["random_excursions_variant"]["sub_tests"]) == 18
    for name, entry in tests.items():
        assert len(entry["p_values"]) == SEQUENCES, name
        for row in entry["p_values"]:
            assert len(row) == len(entry["sub_tests"]), name
    # 20,000 bits: too short for the universal test and too few cycles for the excursions
    assert tests["universal"]["p_values"] == [[None]] * SEQUENCES
    assert tests["random_excursions"]["p_values"][0] == [None] * 8
    frequency = report["decisions"]["frequency"][0]
    assert frequency["sample_size"] == SEQUENCES
    assert frequency["proportion_min"] == 2
    assert frequency["uniformity_p_value"] is None
    assert report["decisions"]["universal"][0]["sample_size"] == 0
    assert report["suite"]["expected_false_flags"] > 0


def test_ascii_input_gives_the_same_p_values(tmp_path: Path, good_data: bytes) -> None:
    _, binary = _run(tmp_path, _binary_file(tmp_path, good_data), "binary")
    text = tmp_path / "bits.txt"
    text.write_text(_ascii_of(good_data))
    code, ascii_report = _run(tmp_path, text, "ascii")
    assert code == 3
    assert ascii_report["tests"] == binary["tests"]
    assert ascii_report["input"]["sha256"] == hashlib.sha256(text.read_bytes()).hexdigest()


@pytest.mark.parametrize("fmt", ["binary", "ascii"])
def test_sequences_are_consecutive_slices_of_the_file(tmp_path: Path, fmt: str) -> None:
    n = 10_007  # not a whole number of bytes
    data = aes_stream("cli-slices", 3 * n // 8 + 5)
    path = tmp_path / "bits"
    if fmt == "binary":
        path.write_bytes(data)
    else:
        path.write_text(_ascii_of(data))
    out = tmp_path / "r.json"
    argv = ["nist", "--input", str(path), "--format", fmt, "--json", str(out)]
    assert main([*argv, "--bits-per-sequence", str(n)]) == 3
    report = json.loads(out.read_text())
    bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8))
    assert report["input"]["sequences"] == 3
    assert report["input"]["bits_discarded"] == bits.size - 3 * n
    for i in range(3):
        expected = run_tests(bits[i * n : (i + 1) * n])
        for name, result in expected.items():
            assert report["tests"][name]["p_values"][i] == list(result.p_values), (i, name)


def test_bad_stream_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    biased = bytes(b | 0x80 for b in aes_stream("cli-bad", SEQUENCES * N // 8))
    code, report = _run(tmp_path, _binary_file(tmp_path, biased), "binary")
    assert code == 1
    assert "RESULT: FAIL" in capsys.readouterr().out
    assert report["verdict"] == "FAIL"
    assert report["suite"]["passed"] is False
    assert "frequency" in report["suite"]["failed_sub_tests"]
    rejected = {(c["test"], c["check"]) for c in report["suite"]["rule"]["rejected"]}
    assert ("frequency", "extreme") in rejected


def test_progress_bar_on_a_terminal(
    tmp_path: Path, good_data: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    code, _ = _run(tmp_path, _binary_file(tmp_path, good_data), "binary")
    assert code == 3
    assert f"{SEQUENCES}/{SEQUENCES} sequences" in terminal.getvalue()


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_ascii_with_other_characters_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("0101 1100\n01x1\n")
    code, report = _run(tmp_path, path, "ascii")
    assert (code, report) == (2, {})
    err = _error(capsys)
    assert "byte offset 12" in err
    assert "'x'" in err


def test_too_short_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = _run(tmp_path, _binary_file(tmp_path, b"\x55" * (N // 8 - 1)), "binary")
    assert code == 2
    assert "fewer than one sequence" in _error(capsys)


def test_missing_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = _run(tmp_path, tmp_path / "absent.bin", "binary")
    assert code == 2
    assert "cannot read" in _error(capsys)


def test_unwritable_report_is_refused(
    tmp_path: Path, good_data: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _binary_file(tmp_path, good_data)
    out = tmp_path / "no-such-dir" / "r.json"
    argv = ["nist", "--input", str(path), "--format", "binary", "--json", str(out)]
    assert main([*argv, "--bits-per-sequence", str(N)]) == 2
    assert "cannot write" in _error(capsys)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["nist"],
        ["nist", "--input", "x", "--format", "hex", "--json", "o"],
        ["nist", "--input", "x", "--format", "binary", "--json", "o", "--bits-per-sequence", "0"],
        ["nist", "--input", "x", "--format", "binary", "--json", "o", "--bits-per-sequence", "a"],
        ["nist", "--input", "x", "--format", "binary", "--json", "o", "--jobs", "0"],
        ["dieharder"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """One line naming the problem and pointing to --help (issue 35), no usage block."""
    assert main(argv) == 2
    err = _error(capsys)
    assert err.count("\n") == 1, err
    assert "error:" in err
    assert "--help)" in err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nist", "--help"]) == 0
    assert "--bits-per-sequence" in capsys.readouterr().out


@pytest.mark.slow
def test_jobs_give_the_same_report(tmp_path: Path, good_data: bytes) -> None:
    path = _binary_file(tmp_path, good_data)
    _, serial_report = _run(tmp_path, path, "binary")
    code, parallel_report = _run(tmp_path, path, "binary", "--jobs", "2")
    assert code == 3
    for report in (serial_report, parallel_report):
        del report["evidence"]  # the command lines and times differ
    assert parallel_report == serial_report
