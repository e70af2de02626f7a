"""The HTML evidence report: its structure, and its rendering in headless Chromium (Debian's
``chromium``; missing Chromium is a failure, not a skip, because the report's plots are part
of what a lab receives)."""

from __future__ import annotations

import json
import random
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from certification import power, sources, tallies
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
        run_battery(tallies.build_sample(records)), input_info={}, evidence=evidence
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


def test_a_name_missing_from_a_model_fails_the_render() -> None:
    """StrictUndefined: a template that uses a name its model lacks raises instead of printing
    an empty string into the evidence."""
    import jinja2

    from certification.report import html

    verdict = html._ENV.get_template("sections.html").module.verdict  # type: ignore[attr-defined]
    assert "PASS: all good" in verdict({"css": "pass", "word": "PASS", "text": "all good"})
    with pytest.raises(jinja2.UndefinedError, match="text"):
        verdict({"css": "pass", "word": "PASS"})


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


# --- escaping: every text a document, the command line or an input file can carry ------------

#: Markup, quotes of both kinds and an ampersand: as text it must show as written; as markup it
#: would open a script, a bold element and (through the quotes) new attributes.
HOSTILE = """<script>alert("x")</script><b onmouseover='y'>&amp;"""

#: Strings the renderer decides on (not shown as text) stay as they are.
_DECIDED = {"verdict", "format", "assessment"}

#: Maps whose keys are names the report shows (tests, decisions, criteria, untested kinds).
_NAMED_KEYS = {"tests", "decisions", "criteria", "untested_kinds"}


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _hostile(value: Any, key: str = "", *, named: bool = True) -> Any:
    """Every string of a document made hostile (suffix HOSTILE), except figures the renderer
    parses and the words it decides on; the keys of the maps whose keys it shows too."""
    if isinstance(value, dict):
        rename = named and key in _NAMED_KEYS
        return {(k + HOSTILE if rename else k): _hostile(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_hostile(v, key, named=False) for v in value]
    if isinstance(value, str) and key not in _DECIDED and not _is_number(value):
        return value + HOSTILE
    return value


class _Page(HTMLParser):
    """Elements, attributes, and text with where it stood (in an ``svg`` or not)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.values: list[tuple[str, str, str, bool]] = []  # (tag, attribute, value, in svg)
        self.texts: list[tuple[str, str, bool]] = []  # (enclosing tag, text, in svg)
        self._stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag not in {"meta", "line", "rect", "circle", "polyline"} or tag in self._stack:
            self._stack.append(tag)
        for name, value in attrs:
            self.attributes.add(name)
            self.values.append((tag, name, value or "", "svg" in self._stack))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        for name, value in attrs:
            self.attributes.add(name)
            self.values.append((tag, name, value or "", "svg" in self._stack))

    def handle_endtag(self, tag: str) -> None:
        if tag in self._stack:
            while self._stack and self._stack.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        where = self._stack[-1] if self._stack else ""
        self.texts.append((where, data, "svg" in self._stack))


@pytest.fixture(scope="module")
def hostile_documents(documents: dict[str, Any]) -> dict[str, Any]:
    from certification.rtp import build
    from tests.unit.certification import test_rtp

    fair = random.Random(5)
    saved = build._client
    build._client = lambda target, tls: test_rtp.FakeLab(lambda: fair.randint(1, 6))
    try:
        rtp = build.build_document(live="127.0.0.1:1", games=[("sic_bo", 1200)], run_id="r")
    finally:
        build._client = saved
    receipt = {"format": "rng-service-receipt/v1", "index": 7, "checkpoint": "note"}
    session = {"request_id": "raw-0", "log_index": 7, "generator_instance": "ab12",
               "generator_epoch": 0, "num_bytes": 4096, "receipt": receipt}  # fmt: skip
    dieharder = {
        "tool": "dieharder", "source": "live", "verdict": "FAIL", "verdict_reason": "1 FAILED",
        "criteria": {"weak_threshold": 0.005},
        "results": [{"test": 0, "name": "diehard_birthdays", "ntuple": 0, "tsamples": 100,
                     "psamples": 100, "p_value": 0.003, "assessment": "FAILED"}],
        "raw_output_sessions": [session], "evidence": documents["outcomes"]["evidence"],
    }  # fmt: skip
    docs = json.loads(json.dumps({**documents, "rtp": rtp, "dieharder": dieharder}))
    docs["power"]["evidence"] = docs["outcomes"]["evidence"]
    for name in ("outcomes", "nist", "power", "dieharder"):
        docs[name]["evidence"]["inputs"][0]["raw_output_sessions"] = [session]
    return {name: _hostile(doc) for name, doc in docs.items()}


def test_every_shown_text_is_escaped_in_html_text_attributes_and_svg(
    hostile_documents: dict[str, Any],
) -> None:
    page = render_html(
        **hostile_documents,
        generated_at="2026-12-01" + HOSTILE,
        inputs=["records.jsonl" + HOSTILE],
        title="Lab report" + HOSTILE,
    )
    # As markup nothing of it survives: no script or b element, no new attribute.
    assert "<script" not in page
    assert "<b " not in page
    parsed = _Page()
    parsed.feed(page)
    assert not {"script", "b"} & parsed.tags
    assert "onmouseover" not in parsed.attributes
    # As text it shows as written: in HTML text, in HTML attributes, in SVG text and attributes.
    shown = [(tag, text, svg) for tag, text, svg in parsed.texts if HOSTILE in text]
    attrs = [(tag, name, value, svg) for tag, name, value, svg in parsed.values if HOSTILE in value]
    html_text = {tag for tag, _, svg in shown if not svg}
    svg_text = {tag for tag, _, svg in shown if svg}
    assert {"title", "h1", "code", "td", "p", "h3"} <= html_text
    # receipts are shown as JSON (whose own escaping turns " into \\")
    json_form = json.dumps(HOSTILE)[1:-1]
    assert any(tag == "pre" and json_form in text for tag, text, _ in parsed.texts)
    assert {"title", "text"} <= svg_text  # plot titles, axis and legend labels
    html_attrs = {(t, n) for t, n, _, svg in attrs if not svg}
    assert {("td", "title"), ("td", "data-fraction"), ("tr", "data-key"),
            ("table", "data-game"), ("h3", "id")} <= html_attrs  # fmt: skip
    svg_attrs = {(t, n) for t, n, _, svg in attrs if svg}
    assert {("svg", "aria-label"), ("svg", "data-title")} <= svg_attrs
    # Every field kind that is shown: test names (HTML and SVG), sources, notes, receipts ...
    for needle in ("Lab report", "records.jsonl", "2026-12-01", "diehard_birthdays", "raw-0",
                   "sic_bo", "Sic Bo", "Mega Fire Blaze"):  # fmt: skip
        assert any(needle in text and HOSTILE in text for _, text, _ in shown) or any(
            needle in value for *_, value, _ in attrs
        ), needle
    names = {t["name"] for t in hostile_documents["outcomes"]["tests"] if t["cells"]}
    titles = {value for t, n, value, _ in attrs if (t, n) == ("svg", "data-title")}
    assert all(any(name in title for title in titles) for name in names)
    tested = {
        name
        for name, test in hostile_documents["nist"]["tests"].items()
        if any(p is not None for row in test["p_values"] for p in row)
    }
    assert len(tested) >= 10
    assert tested <= titles  # one histogram per SP 800-22 test with P-values, titled by name


# --- the header a lab files (issue 37, item 4) --------------------------------------------------


def test_the_report_header_a_lab_files(tmp_path: Path) -> None:
    """``rng-certify report``: one overall verdict line at the top (the worst section's, with
    its reason), the laboratory and generator given, Python, numpy and scipy versions, the
    SHA-256 of every input and of every JSON document rendered (hashed here from the files),
    alpha as given, small P-values in scientific notation, whole-number ticks on count axes;
    and the page renders in headless Chromium."""
    import hashlib
    import platform
    import re

    import scipy

    from certification.cli import main

    records = tmp_path / "records.jsonl"
    assert main(["collect", "--lab-seed", "header", "--output", str(records),
                 "--kind", "roulette_double_zero=500", "--kind", "sic_bo=400"]) == 0  # fmt: skip
    outcomes = tmp_path / "outcomes.json"
    assert main(["outcomes", "--input", str(records), "--json", str(outcomes)]) == 3
    doc = json.loads(outcomes.read_text())
    assert doc["alpha"] == 0.01
    small = next(t for t in doc["tests"] if t["name"] == "numbers")
    small["p_value"] = 3.2e-7  # a P-value far below 1e-4, as a FAILing test has
    broken = tmp_path / "outcomes-edited.json"
    broken.write_text(json.dumps(doc))
    page = tmp_path / "report.html"
    status = main(["report", "--outcomes", str(broken), "--html", str(page),
                   "--lab", "Lab <North> & Co", "--generator", "RNG-9000 fw 1.2"])  # fmt: skip
    assert status == 3
    html = page.read_text()
    header = html[: html.index("<h2")]
    assert "Overall verdict: INCONCLUSIVE (Outcome-level tests: no test rejects" in header
    assert "Lab &lt;North&gt; &amp; Co" in header
    assert "RNG-9000 fw 1.2" in header
    assert platform.python_version() in header
    assert np.__version__ in header
    assert scipy.__version__ in header
    assert hashlib.sha256(broken.read_bytes()).hexdigest() in header
    assert hashlib.sha256(records.read_bytes()).hexdigest() in header
    assert "0.010000000000000009" not in html
    assert "3.200e-07" in html
    assert "0.000000" not in html.replace("0.0000000", "")  # no P-value shown as zero
    ticks = re.findall(r'text-anchor="end" font-size="10">([^<]*)</text>', html)
    assert ticks
    for label in ticks:  # count axes of the frequency charts and histograms: integers
        assert re.fullmatch(r"\d+", label), label
    dom, png = chromium_render(page, tmp_path)
    assert "Overall verdict: INCONCLUSIVE" in dom
    assert "RNG-9000 fw 1.2" in dom
    assert png_size(png) == (1200, 2000)
    assert len(png) > 50_000, "the screenshot is nearly empty"
