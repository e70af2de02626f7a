"""The HTML evidence report: its structure, and its rendering in headless Chromium (Debian's
``chromium``; missing Chromium is a failure, not a skip, because the report's plots are part
of what a lab receives)."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from certification import power, sources
from certification.evidence import evidence_record
from certification.outcomes import run_battery
from certification.outcomes.battery import render_json as outcomes_json
from certification.report import render_json as nist_json
from certification.report.html import render_html
from certification.sp800_22 import assess, run_tests
from certification.sp800_22.assessment import suite_verdict

PLOT_KINDS = ("p-value-histogram", "frequency-chart", "residual-chart", "power-chart")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


class _Plots(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.kinds: dict[str, int] = {}
        self.bars = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "svg" and "plot" in classes:
            for c in classes:
                if c != "plot":
                    self.kinds[c] = self.kinds.get(c, 0) + 1
        if tag == "rect" and "bar" in classes:
            self.bars += 1


def plots_in(markup: str) -> _Plots:
    parser = _Plots()
    parser.feed(markup)
    return parser


def chromium_render(page: Path, work: Path) -> tuple[str, bytes]:
    """(DOM after parsing, PNG screenshot) of ``page`` in headless Chromium."""
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail(
            "chromium is not installed; the HTML report test renders the page in headless "
            "Chromium: apt-get install chromium (add 'chromium chromium' to "
            "scripts/install-system-deps.sh)"
        )
    common = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={work / 'chromium-profile'}"]
    url = page.resolve().as_uri()
    dom = subprocess.run(
        [*common, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    shot = work / "screenshot.png"
    subprocess.run(
        [*common, f"--screenshot={shot}", "--window-size=1200,2000", url],
        capture_output=True,
        timeout=120,
        check=True,
    )
    return dom, shot.read_bytes()


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


@pytest.fixture(scope="module")
def documents() -> dict[str, Any]:
    records = sources.generate_records(
        sources.lab_generator("html-report"),
        {"roulette_double_zero": 3000, "sic_bo": 1000, "card_shuffle": 300},
    )
    evidence = evidence_record(
        argv=["outcomes", "--input", "records.jsonl"],
        inputs=[{"path": "records.jsonl", "size_bytes": 123, "sha256": "ab" * 32}],
    )
    outcome_doc = outcomes_json(
        run_battery(sources.build_sample(records)), input_info={}, evidence=evidence
    )
    rng = np.random.default_rng(3)
    results = [run_tests(rng.integers(0, 2, 20_000).astype(np.uint8)) for _ in range(10)]
    assessment = assess(results)
    nist_doc = nist_json(
        results, assessment, suite_verdict(assessment),
        input_info={"path": "test", "sequences": 10}, evidence=evidence,
    )  # fmt: skip
    rows = power.run_study(replicates=1)
    power_doc = power.study_json(rows, confidence=0.99, replicates=1)
    return json.loads(json.dumps({"outcomes": outcome_doc, "nist": nist_doc, "power": power_doc}))


def test_report_has_every_kind_of_plot(documents: dict[str, Any]) -> None:
    page = render_html(**documents, generated_at="2026-11-29T00:00:00Z", inputs=["a.jsonl"])
    found = plots_in(page)
    assert set(found.kinds) == set(PLOT_KINDS)
    charted = [t for t in documents["outcomes"]["tests"] if t["cells"]]
    assert found.kinds["frequency-chart"] + found.kinds["residual-chart"] == len(charted)
    assert found.kinds["power-chart"] == 1
    assert found.bars > 100
    assert "PASS" in page
    assert "INCONCLUSIVE" in page  # ten SP 800-22 sequences are below the minimum of 55
    assert page.count("<h3>Criteria</h3>") == 3
    assert "ab" * 32 in page  # the input's SHA-256 from the evidence record


def test_report_marks_failures(documents: dict[str, Any]) -> None:
    outcomes = json.loads(json.dumps(documents["outcomes"]))
    outcomes["suite"] = {"passed": False, "failed": ["wheel/double_zero/numbers"]}
    outcomes["verdict"] = "FAIL"
    outcomes["tests"][0]["passed"] = False
    page = render_html(outcomes=outcomes, generated_at="t")
    assert "FAIL:" in page
    assert '<tr class="fail">' in page
    del outcomes["verdict"]  # a document of an earlier version: suite.passed decides
    assert "FAIL:" in render_html(outcomes=outcomes, generated_at="t")


def test_report_shows_dieharder_with_its_sessions_and_receipts() -> None:
    receipt = {"format": "rng-service-receipt/v1", "index": 7, "checkpoint": "note"}
    session = {"request_id": "lab-raw-0", "log_index": 7, "generator_instance": "ab12",
               "generator_epoch": 0, "num_bytes": 4096, "receipt": receipt}  # fmt: skip
    doc = {
        "tool": "dieharder", "source": "live", "verdict": "INCONCLUSIVE",
        "verdict_reason": "1 of 2 rows WEAK", "criteria": {"weak_threshold": 0.005},
        "results": [{"test": 0, "name": "diehard_birthdays", "ntuple": 0, "tsamples": 100,
                     "psamples": 100, "p_value": 0.003, "assessment": "WEAK"}],
        "raw_output_sessions": [session],
        "evidence": evidence_record(argv=["dieharder"], inputs=[
            {"live": "127.0.0.1:1", "bytes_fed": 4096, "sha256_fed": "cd" * 32,
             "raw_output_sessions": [session]}]),
    }  # fmt: skip
    page = render_html(dieharder=doc, generated_at="t")
    assert 'class="verdict inconclusive"' in page
    assert "lab-raw-0" in page
    assert "rng-service-receipt/v1" in page
    assert "cd" * 32 in page


def test_report_needs_a_document() -> None:
    with pytest.raises(ValueError, match="at least one"):
        render_html(generated_at="t")


def test_report_escapes_text(documents: dict[str, Any]) -> None:
    page = render_html(power=documents["power"], generated_at="t", inputs=["<script>x</script>"])
    assert "<script>" not in page


def test_report_renders_in_headless_chromium(documents: dict[str, Any], tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_html(**documents, generated_at="t"))
    dom, png = chromium_render(page, tmp_path)
    rendered = plots_in(dom)
    expected = plots_in(page.read_text())
    assert rendered.kinds == expected.kinds, "Chromium's DOM lost plots"
    assert rendered.bars == expected.bars
    width, height = png_size(png)
    assert (width, height) == (1200, 2000)
    assert len(png) > 50_000, "the screenshot is nearly empty"
