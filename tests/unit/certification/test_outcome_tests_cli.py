"""``rng-certify`` outcomes, collect, power, report, all and dieharder: exit statuses, files
written, input errors as one-line messages; the sources' file formats."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from certification import dieharder, power, sources
from certification.cli import main, read_bits
from rng_service.audit.export import write_export
from tests.unit.certification.test_html_report import plots_in


@pytest.fixture(scope="module")
def records_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("records") / "records.jsonl"
    status = main([
        "collect", "--lab-seed", "cli-test", "--output", str(path),
        "--kind", "roulette_single_zero=4000", "--kind", "sic_bo=1000",
        "--kind", "fire_numbers=1000", "--kind", "card_shuffle=300",
    ])  # fmt: skip
    assert status == 0
    return path


def test_outcomes_on_lab_records_below_the_power_size(records_file: Path, tmp_path: Path) -> None:
    """4,000 spins and 300 shuffles pass every test but are fewer than the reference defects
    need (docs/certification.md, "Verdict by power"): INCONCLUSIVE, with the sizes needed."""
    out, page = tmp_path / "o.json", tmp_path / "o.html"
    status = main(["outcomes", "--input", str(records_file), "--json", str(out),
                   "--html", str(page)])  # fmt: skip
    assert status == 3
    doc = json.loads(out.read_text())
    assert doc["verdict"] == "INCONCLUSIVE"
    assert doc["suite"]["failed"] == []
    short = {g["group"]: g for g in doc["power"] if not g["enough"]}
    assert set(short) == {"wheel/single_zero", "shuffle/1deck+0j"}
    assert short["wheel/single_zero"]["outcomes"] == 4000
    needed = short["wheel/single_zero"]["needed"]
    assert f"wheel/single_zero has 4,000 outcomes, needs {needed:,}" in doc["verdict_reason"]
    assert doc["outcome_count"] == 6300
    facts = doc["evidence"]["inputs"][0]
    assert facts["sha256"] == hashlib.sha256(records_file.read_bytes()).hexdigest()
    assert facts["size_bytes"] == records_file.stat().st_size
    assert plots_in(page.read_text()).kinds["frequency-chart"] > 10


def test_outcomes_fails_tampered_records(records_file: Path, tmp_path: Path) -> None:
    lines = records_file.read_text().splitlines()
    tampered = []
    for i, line in enumerate(lines):
        r = json.loads(line)
        if r["kind"] == "dice_roll" and i % 3 == 0:
            r["outcome"]["faces"] = [6, 6, 6]
        tampered.append(json.dumps(r))
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(tampered) + "\n")
    status = main(["outcomes", "--input", str(bad), "--json", str(tmp_path / "o.json")])
    assert status == 1
    failed = json.loads((tmp_path / "o.json").read_text())["suite"]["failed"]
    assert "dice/3d6/faces" in failed


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json\n", "not JSON"),
        ('{"kind": "roulette_spin"}\n', "'outcome'"),
        ('{"kind": "bingo", "params": {}, "outcome": {"balls": [1]}}\n', "no testable"),
        ('{"kind": "uniform_int", "params": {}, "outcome": {"values": [1]}}\n', "malformed"),
    ],
)
def test_outcomes_input_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(content)
    assert main(["outcomes", "--input", str(path), "--json", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_outcomes_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["outcomes", "--input", str(tmp_path / "nope"), "--json", str(tmp_path / "o")])
    assert status == 2
    assert "cannot read" in capsys.readouterr().err


def test_export_file_is_read_like_entry_lines(records_file: Path, tmp_path: Path) -> None:
    entries = [line.encode() for line in records_file.read_text().splitlines()[:50]]
    buf = io.StringIO()
    write_export(
        buf,
        origin="test.example/log",
        checkpoints=[("note", 1)],
        entries=[(i, hashlib.sha256(b"\0" + e).digest(), e) for i, e in enumerate(entries)],
        tree_size=len(entries),
    )
    export = tmp_path / "export.jsonl"
    export.write_text(buf.getvalue())
    got = list(sources.read_records(export))
    assert got == [json.loads(e) for e in entries]


def test_entries_that_are_not_outcomes_are_counted_not_tested(
    records_file: Path, tmp_path: Path
) -> None:
    """A log holds entries that are no outcome: profile registrations, raw-output sessions and
    an operator's voided rounds (entry shapes as the service logs them). They are listed, and
    neither tested nor reported as untested outcomes."""
    extra = [
        {"kind": "round_void", "params": {"reason": "dealer error", "operator": "pit-1"},
         "outcome": {}},
        {"kind": "raw_output_session",
         "params": {"num_bytes": 1024, "chunk_size": 1024, "chunks": 1},
         "outcome": {"generator": {"instance": "lab", "epoch": 0}}},
    ]  # fmt: skip
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(records_file.read_text() + "".join(json.dumps(e) + "\n" for e in extra))
    out = tmp_path / "o.json"
    assert main(["outcomes", "--input", str(mixed), "--json", str(out)]) == 3  # below power
    doc = json.loads(out.read_text())
    assert doc["not_outcome_kinds"] == {"round_void": 1, "raw_output_session": 1}
    assert doc["untested_kinds"] == {}
    assert doc["outcome_count"] == 6300


def test_collect_refuses_a_remote_service(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["collect", "--live", "192.0.2.1:50051", "--output", str(tmp_path / "r")])
    assert status == 2
    assert "loopback" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["binary", "ascii"])
def test_lab_bits_round_trip(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"bits.{fmt}"
    data = sources.lab_generator("bits").random_bytes(1000)
    sources.write_bit_file(path, data, fmt)
    bits = read_bits(path, fmt)
    assert bits.size == 8000
    assert np.array_equal(bits.sequence(0, 8000), np.unpackbits(np.frombuffer(data, np.uint8)))


def test_all_and_report(records_file: Path, tmp_path: Path) -> None:
    bits = tmp_path / "bits.bin"
    sources.write_bit_file(bits, sources.lab_generator("nist").random_bytes(25_000), "binary")
    out = tmp_path / "evidence"
    status = main([
        "all", "--records", str(records_file), "--bits", str(bits),
        "--bits-per-sequence", "100000", "--out", str(out),
    ])  # fmt: skip
    # two sequences of 10^5 bits: below the 55 sequences SP 800-22 needs, and spins and
    # shuffles below their power sizes: INCONCLUSIVE (exit 3)
    assert status == 3
    assert {p.name for p in out.iterdir()} == {"outcomes.json", "nist.json", "report.html"}
    kinds = plots_in((out / "report.html").read_text()).kinds
    assert kinds["p-value-histogram"] >= 2
    nist_doc = json.loads((out / "nist.json").read_text())
    assert nist_doc["evidence"]["command_line"][:2] == ["rng-certify", "all"]
    assert nist_doc["evidence"]["effective_command_line"][:2] == ["rng-certify", "nist"]

    failing = json.loads((out / "outcomes.json").read_text())
    failing["verdict"] = "FAIL"
    (tmp_path / "failing.json").write_text(json.dumps(failing))
    page = tmp_path / "r.html"
    assert main(["report", "--outcomes", str(out / "outcomes.json"), "--html", str(page)]) == 3
    assert main(["report", "--nist", str(out / "nist.json"), "--html", str(page)]) == 3
    status = main(["report", "--outcomes", str(tmp_path / "failing.json"),
                   "--nist", str(out / "nist.json"), "--html", str(page)])  # fmt: skip
    assert status == 1
    assert "FAIL:" in page.read_text()


def test_power_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "power.json"
    assert main(["power", "--replicates", "1", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["verdict"] == "PASS"
    assert [g["name"] for g in doc["generators"]] == [*power.BAD_GENERATORS, *power.GOOD_GENERATORS]
    assert all(g["caught_at"] is not None for g in doc["generators"] if g["bad"])
    assert {"randu_high", "lag_correlated", "short_period"} <= {
        g["name"] for g in doc["generators"]
    }
    assert doc["criteria"]["caught_at"].startswith("the first ladder size")
    assert "modulo_wheel" in capsys.readouterr().out


def _dieharder() -> None:
    if shutil.which("dieharder") is None:
        pytest.fail(
            "dieharder is not installed: apt-get install dieharder (add 'dieharder dieharder' "
            "to scripts/install-system-deps.sh)"
        )


def test_dieharder_quick_tests_on_the_lab_generator(tmp_path: Path) -> None:
    _dieharder()
    out = tmp_path / "dh.json"
    assert main(["dieharder", "--lab-seed", "dh", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [r["name"] for r in doc["results"]] == ["diehard_birthdays", "sts_monobit"]
    assert doc["verdict"] == "PASS"
    assert doc["passed"] is True
    assert doc["criteria"]["fail_threshold"] == 1e-6
    assert doc["evidence"]["inputs"][0]["lab_seed"] == "dh"
    assert doc["evidence"]["inputs"][0]["bytes_fed"] > 0


def test_dieharder_fails_a_stream_of_zeros() -> None:
    _dieharder()
    zeros = itertools.repeat(bytes(dieharder.CHUNK))
    results = dieharder.run(zeros, [100], psamples=10)
    assert [r.assessment for r in results] == ["FAILED"]
    doc = dieharder.to_json(results, source="zeros")
    assert (doc["verdict"], doc["passed"]) == ("FAIL", False)


@pytest.mark.parametrize(
    ("assessments", "verdict"),
    [(["PASSED", "PASSED"], "PASS"), (["PASSED", "WEAK"], "INCONCLUSIVE"),
     (["WEAK", "FAILED"], "FAIL"), ([], "INCONCLUSIVE")],
)  # fmt: skip
def test_dieharder_weak_is_inconclusive(assessments: list[str], verdict: str) -> None:
    rows = [dieharder.DieharderResult(0, "t", 0, 100, 100, 0.5, a) for a in assessments]
    assert dieharder.verdict(rows)[0].value == verdict


def test_dieharder_refuses_a_short_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _dieharder()
    short = tmp_path / "short.bin"
    short.write_bytes(sources.lab_generator("short").random_bytes(100_000))
    assert main(["dieharder", "--input", str(short), "--test", "0"]) == 2
    assert "does not rewind" in capsys.readouterr().err
