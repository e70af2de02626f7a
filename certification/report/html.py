"""The HTML evidence report: one self-contained page (inline SVG plots, inline CSS, no script,
no external resources) rendered from the JSON documents the batteries write.

Sections, each present when its document is given:

* **Outcome-level tests** (``rng-certify outcomes``): the verdict, a table of every test
  (statistic, degrees of freedom, P-value, Holm-adjusted P-value, decision), the histogram of
  the P-values (ten bins, the dashed line is what a fair generator expects), and, for each
  chi-square test, observed against expected counts per (pooled) cell; tests with more than
  :data:`MAX_BARS` cells show standardised residuals (O - E) / sqrt(E) instead, with the +-3
  band.
* **NIST SP 800-22** (``rng-certify nist``): the verdict, the P-value histogram of all sub-tests
  and one per test, and a table of the section 4.2 decisions per test.
* **Power study** (``rng-certify power``): the rejection rate against sample size per
  generator (log scale) and the table of sizes at which each bad generator is caught.
* **Return to player** (``rng-certify rtp``): rendered by
  :func:`certification.report.rtp.render_rtp_section`.
* **dieharder** (``rng-certify dieharder``): the verdict and every result row.

Each section states its verdict (PASS, FAIL or INCONCLUSIVE, with the reason), every criterion
the verdict used (the document's ``criteria``: alpha, intervals, thresholds, minimum sample,
multiple-testing rule), and the evidence record: software version and git commit, command
line, time, every input's size and SHA-256, and for live runs each raw-output session's
request id, log index and receipt (the receipt JSON in a ``<details>`` element).

Every plot is an ``<svg>`` with the class ``plot`` and a kind class (``p-value-histogram``,
``frequency-chart``, ``residual-chart``, ``power-chart``) so a reader, or a test, can find
them. The page states when and from what inputs it was made; the clock is the caller's.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from certification.report.rtp import render_rtp_section, rtp_passed

#: The verdict shown for a document that judges nothing (``rng-certify rtp`` without --live).
NO_VERDICT = "NO VERDICT"

__all__ = ["MAX_BARS", "NO_VERDICT", "document_verdict", "render_html"]

MAX_BARS = 60
_W = 760
_H = 260
_PAD_L = 56
_PAD_R = 16
_PAD_T = 28
_PAD_B = 52
_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")

_CSS = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; max-width: 1100px; }
h1 { font-size: 1.6em; } h2 { border-bottom: 2px solid #ccc; padding-bottom: 4px; }
table { border-collapse: collapse; font-size: 0.85em; margin: 8px 0 16px; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: right; }
th { background: #f0f0f0; } td.l, th.l { text-align: left; }
tr.fail td { background: #fde0e0; } .verdict { font-size: 1.2em; font-weight: bold; }
.pass { color: #1a7f37; } .failv { color: #c62828; } .inconclusive { color: #b26a00; }
.noverdict { color: #555; }
table.criteria td, table.evidence td { text-align: left; vertical-align: top; }
pre.receipt { font-size: 0.75em; white-space: pre-wrap; word-break: break-all; }
svg.plot { display: block; margin: 6px 0 18px; background: #fff; border: 1px solid #ddd; }
.charts { display: flex; flex-wrap: wrap; gap: 8px; }
.note { color: #666; font-size: 0.85em; }
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _fmt(x: float | int | None, digits: int = 6) -> str:
    if x is None:
        return "----"
    if isinstance(x, int):
        return str(x)
    return f"{x:.{digits}f}"


def _svg_open(kind: str, title: str, width: int = _W, height: int = _H) -> list[str]:
    return [
        f'<svg class="plot {kind}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{_e(title)}" data-title="{_e(title)}">',
        f"<title>{_e(title)}</title>",
        f'<text x="{width / 2:.0f}" y="18" text-anchor="middle" font-size="13" '
        f'font-weight="bold">{_e(title)}</text>',
    ]


def _axes(parts: list[str], width: int, height: int, y_max: float, y_label: str) -> None:
    x0, y0 = _PAD_L, height - _PAD_B
    parts.append(
        f'<line x1="{x0}" y1="{_PAD_T}" x2="{x0}" y2="{y0}" stroke="#333"/>'
        f'<line x1="{x0}" y1="{y0}" x2="{width - _PAD_R}" y2="{y0}" stroke="#333"/>'
    )
    for i in range(5):
        v = y_max * i / 4
        y = y0 - (y0 - _PAD_T) * i / 4
        parts.append(
            f'<line x1="{x0 - 4}" y1="{y:.1f}" x2="{x0}" y2="{y:.1f}" stroke="#333"/>'
            f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="10">'
            f"{_e(_tick(v))}</text>"
        )
    parts.append(
        f'<text x="12" y="{(_PAD_T + y0) / 2:.0f}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 12 {(_PAD_T + y0) / 2:.0f})">{_e(y_label)}</text>'
    )


def _fmt_p(x: float | None) -> str:
    return "----" if x is None else f"{x:.3g}"


def _tick(v: float) -> str:
    if v >= 100 or v == int(v):
        return f"{v:.0f}"
    return f"{v:.2g}"


def p_value_histogram(title: str, p_values: Sequence[float], width: int = _W) -> str:
    """Ten-bin histogram of P-values; the dashed line is the count a fair generator expects."""
    counts = [0] * 10
    for p in p_values:
        counts[min(int(p * 10), 9)] += 1
    expected = len(p_values) / 10
    y_max = max([*counts, expected, 1]) * 1.15
    height = _H
    parts = _svg_open("p-value-histogram", title, width, height)
    _axes(parts, width, height, y_max, "count")
    x0, y0 = _PAD_L, height - _PAD_B
    bw = (width - _PAD_L - _PAD_R) / 10
    for i, c in enumerate(counts):
        h = (y0 - _PAD_T) * c / y_max
        parts.append(
            f'<rect class="bar" x="{x0 + i * bw + 2:.1f}" y="{y0 - h:.1f}" width="{bw - 4:.1f}" '
            f'height="{h:.1f}" fill="#4c78a8"><title>[{i / 10:.1f}, {(i + 1) / 10:.1f}): '
            f"{c}</title></rect>"
            f'<text x="{x0 + (i + 0.5) * bw:.1f}" y="{y0 + 14}" font-size="10" '
            f'text-anchor="middle">{i / 10:.1f}</text>'
        )
    ye = y0 - (y0 - _PAD_T) * expected / y_max
    parts.append(
        f'<line class="expected" x1="{x0}" y1="{ye:.1f}" x2="{width - _PAD_R}" y2="{ye:.1f}" '
        f'stroke="#d62728" stroke-dasharray="6 4"/>'
        f'<text x="{width / 2:.0f}" y="{height - 12}" font-size="11" text-anchor="middle">'
        f"P-value ({len(p_values)} values; dashed: expected {expected:.1f} per bin)</text>"
    )
    parts.append("</svg>")
    return "".join(parts)


def frequency_chart(title: str, cells: Sequence[Mapping[str, Any]]) -> str:
    """Observed (bars) against expected (red marks) counts per cell."""
    width, height = _W, _H
    labels = [str(c["label"]) for c in cells]
    observed = [float(c["observed"]) for c in cells]
    expected = [float(c["expected"]) for c in cells]
    y_max = max([*observed, *expected, 1.0]) * 1.15
    parts = _svg_open("frequency-chart", title, width, height)
    _axes(parts, width, height, y_max, "count")
    x0, y0 = _PAD_L, height - _PAD_B
    n = len(cells)
    bw = (width - _PAD_L - _PAD_R) / max(n, 1)
    every = max(1, math.ceil(n / 30))
    for i in range(n):
        h = (y0 - _PAD_T) * observed[i] / y_max
        he = (y0 - _PAD_T) * expected[i] / y_max
        x = x0 + i * bw
        parts.append(
            f'<rect class="bar observed" x="{x + 1:.1f}" y="{y0 - h:.1f}" '
            f'width="{max(bw - 2, 1):.1f}" height="{h:.1f}" fill="#4c78a8">'
            f"<title>{_e(labels[i])}: observed {observed[i]:.0f}, expected {expected[i]:.1f}"
            f"</title></rect>"
            f'<line class="expected" x1="{x:.1f}" y1="{y0 - he:.1f}" x2="{x + bw:.1f}" '
            f'y2="{y0 - he:.1f}" stroke="#d62728" stroke-width="2"/>'
        )
        if i % every == 0:
            lx = x + bw / 2
            parts.append(
                f'<text x="{lx:.1f}" y="{y0 + 12}" font-size="9" text-anchor="end" '
                f'transform="rotate(-45 {lx:.1f} {y0 + 12})">{_e(labels[i][:14])}</text>'
            )
    parts.append(
        f'<text x="{width / 2:.0f}" y="{height - 4}" font-size="11" text-anchor="middle">'
        "bars: observed; red: expected</text></svg>"
    )
    return "".join(parts)


def residual_chart(title: str, cells: Sequence[Mapping[str, Any]]) -> str:
    """Standardised residuals (O - E) / sqrt(E) per cell, with the +-3 band."""
    width, height = _W, _H
    res = [
        (float(c["observed"]) - float(c["expected"])) / math.sqrt(float(c["expected"]))
        for c in cells
    ]
    bound = max([3.5, *(abs(r) for r in res)]) * 1.1
    parts = _svg_open("residual-chart", title, width, height)
    x0, y0, y1 = _PAD_L, height - _PAD_B, _PAD_T
    mid = (y0 + y1) / 2

    def y(v: float) -> float:
        return mid - (y0 - y1) / 2 * v / bound

    parts.append(
        f'<line x1="{x0}" y1="{y1}" x2="{x0}" y2="{y0}" stroke="#333"/>'
        f'<line x1="{x0}" y1="{mid:.1f}" x2="{width - _PAD_R}" y2="{mid:.1f}" stroke="#333"/>'
    )
    for v in (-3, 3):
        parts.append(
            f'<line class="band" x1="{x0}" y1="{y(v):.1f}" x2="{width - _PAD_R}" '
            f'y2="{y(v):.1f}" stroke="#d62728" stroke-dasharray="6 4"/>'
            f'<text x="{x0 - 6}" y="{y(v) + 4:.1f}" font-size="10" text-anchor="end">{v:+d}</text>'
        )
    n = len(res)
    step = (width - _PAD_L - _PAD_R) / max(n, 1)
    for i, r in enumerate(res):
        parts.append(
            f'<circle class="residual" cx="{x0 + (i + 0.5) * step:.1f}" cy="{y(r):.1f}" r="1.6" '
            f'fill="{"#d62728" if abs(r) > 3 else "#4c78a8"}"/>'
        )
    parts.append(
        f'<text x="{width / 2:.0f}" y="{height - 12}" font-size="11" text-anchor="middle">'
        f"{n} cells in order; (O - E) / sqrt(E), dashed: +-3</text></svg>"
    )
    return "".join(parts)


def power_chart(generators: Sequence[Mapping[str, Any]], power_target: float) -> str:
    """Share of replicates rejected against sample size (log scale), one line per generator."""
    width, height = _W, 320
    sizes = [t["size"] for g in generators for t in g["trials"]] or [1]
    lo, hi = math.log10(min(sizes)), math.log10(max(sizes))
    hi = hi if hi > lo else lo + 1
    parts = _svg_open("power-chart", "Rejection rate against sample size", width, height)
    _axes(parts, width, height, 1.0, "share of replicates rejected")
    x0, y0 = _PAD_L, height - _PAD_B
    plot_w = width - _PAD_L - _PAD_R - 150

    def px(n: int) -> float:
        return x0 + 10 + plot_w * (math.log10(n) - lo) / (hi - lo)

    def py(v: float) -> float:
        return y0 - (y0 - _PAD_T) * v

    for n in sorted(set(sizes)):
        parts.append(
            f'<text x="{px(n):.1f}" y="{y0 + 14}" font-size="9" text-anchor="middle">{n:,}</text>'
        )
    parts.append(
        f'<line x1="{x0}" y1="{py(power_target):.1f}" x2="{x0 + plot_w + 20:.1f}" '
        f'y2="{py(power_target):.1f}" stroke="#888" stroke-dasharray="6 4"/>'
    )
    for i, g in enumerate(generators):
        colour = _COLOURS[i % len(_COLOURS)]
        pts = [(px(t["size"]), py(t["rejections"] / t["replicates"])) for t in g["trials"]]
        if not pts:
            continue
        dash = "" if g["bad"] else ' stroke-dasharray="2 3"'
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        parts.append(
            f'<polyline class="series" points="{path}" fill="none" stroke="{colour}" '
            f'stroke-width="2"{dash}><title>{_e(g["name"])}</title></polyline>'
        )
        for x, y in pts:
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>')
        ly = _PAD_T + 14 * i + 10
        lx = x0 + plot_w + 30
        parts.append(
            f'<line x1="{lx}" y1="{ly}" x2="{lx + 16}" y2="{ly}" stroke="{colour}" '
            f'stroke-width="2"{dash}/><text x="{lx + 20}" y="{ly + 4}" font-size="10">'
            f"{_e(g['name'])}</text>"
        )
    parts.append(
        f'<text x="{x0 + plot_w / 2:.0f}" y="{height - 10}" font-size="11" '
        f'text-anchor="middle">sample size (outcomes; log scale); dashed grey: power target '
        f"{power_target:g}</text></svg>"
    )
    return "".join(parts)


_VERDICT_CLASS = {
    "PASS": "pass",
    "FAIL": "failv",
    "INCONCLUSIVE": "inconclusive",
    NO_VERDICT: "noverdict",
}


def document_verdict(doc: Mapping[str, Any]) -> str:
    """A document's verdict: its ``verdict`` member (null: :data:`NO_VERDICT`, an ``rtp``
    document of exact figures only), or (earlier documents) PASS/FAIL from ``suite.passed`` /
    ``passed``."""
    value = doc.get("verdict")
    if isinstance(value, str) and value in _VERDICT_CLASS:
        return value
    if doc.get("format") == "rng-certify-rtp/v1":
        if doc.get("live") is None:  # exact figures only: nothing was measured
            return NO_VERDICT
        return "PASS" if rtp_passed(doc) else "FAIL"
    suite = doc.get("suite")
    passed = suite.get("passed") if isinstance(suite, Mapping) else doc.get("passed")
    return "PASS" if passed is True else "FAIL"


def _verdict(verdict: str, text: str) -> str:
    cls = _VERDICT_CLASS.get(verdict, "failv")
    word = "No verdict" if verdict == NO_VERDICT else verdict
    return f'<p class="verdict {cls}">{_e(word)}: {_e(text)}</p>'


def _flatten(prefix: str, value: Any, rows: list[tuple[str, str]]) -> None:
    if isinstance(value, Mapping):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), inner, rows)
    elif isinstance(value, list | tuple):
        rows.append((prefix, ", ".join(str(v) for v in value)))
    else:
        rows.append((prefix, str(value)))


def _criteria(doc: Mapping[str, Any]) -> str:
    """The table of every criterion the document's verdict used."""
    criteria = doc.get("criteria")
    if not isinstance(criteria, Mapping):
        return '<p class="note">This document states no criteria (an earlier version).</p>'
    rows: list[tuple[str, str]] = []
    _flatten("", criteria, rows)
    body = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in rows)
    return (
        '<h3>Criteria</h3><table class="criteria"><tr><th class="l">criterion</th>'
        f'<th class="l">value</th></tr>{body}</table>'
    )


def _sessions(sessions: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for s in sessions:
        receipt = s.get("receipt")
        shown = (
            f'<details><summary>receipt</summary><pre class="receipt">'
            f"{_e(json.dumps(receipt, indent=1))}</pre></details>"
            if receipt is not None
            else "----"
        )
        rows.append(
            f"<tr><td>{_e(s.get('request_id'))}</td><td>{_e(s.get('log_index'))}</td>"
            f"<td>{_e(s.get('generator_instance'))} / {_e(s.get('generator_epoch'))}</td>"
            f"<td>{_e(s.get('num_bytes'))}</td><td>{shown}</td></tr>"
        )
    return (
        '<table class="evidence sessions"><tr><th class="l">request id</th>'
        '<th class="l">log index</th><th class="l">generator instance / epoch</th>'
        f'<th class="l">bytes</th><th class="l">receipt</th></tr>{"".join(rows)}</table>'
    )


def _evidence(doc: Mapping[str, Any]) -> str:
    """Software, command line, time, inputs (size, SHA-256) and raw-output sessions."""
    evidence = doc.get("evidence")
    if not isinstance(evidence, Mapping):
        return '<p class="note">This document carries no evidence record (an earlier version).</p>'
    software = evidence.get("software") or {}
    commit = software.get("git_commit") or software.get("git_note") or "unknown"
    if software.get("git_dirty"):
        commit = f"{commit} (with uncommitted changes)"
    out = [
        '<h3>Evidence</h3><table class="evidence">',
        f"<tr><td>software</td><td>{_e(software.get('name'))} {_e(software.get('version'))}"
        f"</td></tr><tr><td>git commit</td><td><code>{_e(commit)}</code></td></tr>",
        f"<tr><td>command line</td><td><code>{_e(' '.join(evidence.get('command_line', [])))}"
        f"</code></td></tr><tr><td>generated at</td><td>{_e(evidence.get('generated_at'))}"
        "</td></tr></table>",
    ]
    inputs = evidence.get("inputs") or []
    if inputs:
        out.append(
            '<table class="evidence inputs"><tr><th class="l">input</th><th>size (bytes)</th>'
            '<th class="l">SHA-256</th></tr>'
        )
        for item in inputs:
            name = item.get("path") or item.get("live") or item.get("lab_seed") or "?"
            size = item.get("size_bytes", item.get("bytes_fed", ""))
            digest = item.get("sha256", item.get("sha256_fed", ""))
            out.append(
                f"<tr><td class='l'><code>{_e(name)}</code></td><td>{_e(size)}</td>"
                f"<td class='l'><code>{_e(digest)}</code></td></tr>"
            )
        out.append("</table>")
        for item in inputs:
            if item.get("raw_output_sessions"):
                out.append(_sessions(item["raw_output_sessions"]))
            if item.get("rounds"):
                out.append(_live_rounds(item))
    return "".join(out)


def _live_rounds(item: Mapping[str, Any]) -> str:
    """``rng-certify rtp --live``: per game, the log indexes of its rounds' entries and the
    receipt of the last one (its checkpoint covers them all)."""
    rows = []
    for g in item["rounds"]:
        receipt = g.get("receipt")
        shown = (
            f"<details><summary>receipt of index {_e(receipt.get('index'))}</summary>"
            f'<pre class="receipt">{_e(json.dumps(receipt, indent=1))}</pre></details>'
            if receipt is not None
            else "----"
        )
        ranges = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in g["log_index_ranges"])
        wheel = f" ({g['wheel']})" if g.get("wheel") else ""
        rows.append(
            f"<tr><td>{_e(g['game'] + wheel)}</td><td>{_e(g['rounds'])}</td>"
            f"<td>{_e(g['entries'])}</td><td class='l'>{_e(ranges)}</td><td>{shown}</td></tr>"
        )
    profile = item.get("service_profile") or {}
    return (
        f'<p class="note">Rounds of run {_e(item.get("run_id"))} drawn through '
        f"{_e(item.get('live'))} under profile {_e(profile.get('name'))} (sha256 "
        f"<code>{_e(profile.get('sha256'))}</code>).</p>"
        '<table class="evidence rounds"><tr><th class="l">game</th><th>rounds</th>'
        '<th>entries</th><th class="l">log indexes</th><th class="l">receipt</th></tr>'
        f"{''.join(rows)}</table>"
    )


def _outcomes_section(doc: Mapping[str, Any]) -> str:
    tests = doc["tests"]
    suite = doc["suite"]
    out = ['<section id="outcomes"><h2>Outcome-level tests</h2>']
    failed = ", ".join(suite["failed"]) or "none"
    reason = doc.get("verdict_reason") or (
        f"{doc['outcome_count']} outcomes, {len(tests)} tests at confidence "
        f"{doc['confidence']:g} ({doc['correction']}); failed: {failed}"
    )
    out.append(_verdict(document_verdict(doc), reason))
    out.append(
        f'<p class="note">{doc["outcome_count"]} outcome records, {len(tests)} tests at '
        f"confidence {doc['confidence']:g} ({_e(doc['correction'])}); failed: {_e(failed)}.</p>"
    )
    untested = doc.get("untested_kinds") or {}
    if untested:
        listed = ", ".join(f"{n} {k}" for k, n in sorted(untested.items()))
        out.append(f'<p class="note">Records read but not tested: {_e(listed)}.</p>')
    # the repeat detectors' P-values are 1 unless something repeats: not in the histogram
    p_values = [
        t["p_value"] for t in tests if t["p_value"] is not None and t.get("second_level", True)
    ]
    out.append(p_value_histogram(f"Outcome tests: P-values ({len(p_values)})", p_values))
    level2 = doc.get("second_level")
    if level2 is not None:
        out.append(
            f'<p class="note">Second level ({_e(level2["method"])}): statistic '
            f"{_fmt(level2['statistic'])}, P = {_fmt(level2['p_value'])}"
            f"{'' if level2['passed'] else ' (FAILED)'}.</p>"
        )
    out.append(
        '<table class="tests"><tr><th class="l">group</th><th class="l">test</th>'
        '<th class="l">method</th><th>n</th><th>statistic</th><th>df</th><th>P-value</th>'
        '<th>Holm P</th><th class="l">decision</th></tr>'
    )
    for t in tests:
        decision = {True: "pass", False: "FAIL", None: "n/a"}[t["passed"]]
        note = f" ({t['note']})" if t["note"] else ""
        cls = ' class="fail"' if t["passed"] is False else ""
        out.append(
            f"<tr{cls}><td class='l'>{_e(t['group'])}</td><td class='l'>{_e(t['name'])}</td>"
            f"<td class='l'>{_e(t['method'])}</td><td>{t['sample_size']}</td>"
            f"<td>{_fmt(t['statistic'], 4)}</td><td>{_fmt(t['df'])}</td>"
            f"<td>{_fmt(t['p_value'])}</td><td>{_fmt(t['adjusted_p_value'])}</td>"
            f"<td class='l'>{decision}{_e(note)}</td></tr>"
        )
    out.append("</table>")
    out.append(_criteria(doc))
    out.append(_evidence(doc))
    out.append("<h3>Observed against expected</h3>")
    for t in tests:
        if not t["cells"]:
            continue
        title = f"{t['group']} / {t['name']} (P = {_fmt(t['p_value'], 4)})"
        if len(t["cells"]) > MAX_BARS:
            out.append(residual_chart(title, t["cells"]))
        else:
            out.append(frequency_chart(title, t["cells"]))
    out.append("</section>")
    return "".join(out)


def _nist_section(doc: Mapping[str, Any]) -> str:
    out = ['<section id="nist"><h2>NIST SP 800-22 Rev.1a</h2>']
    suite = doc["suite"]
    info = doc.get("input", {})
    failed = ", ".join(suite["failed_sub_tests"]) or "none"
    source = info.get("path") or info.get("live") or "?"
    out.append(_verdict(document_verdict(doc), doc.get("verdict_reason") or ""))
    out.append(
        f'<p class="note">{_e(info.get("sequences", "?"))} sequences of '
        f"{_e(info.get('bits_per_sequence', '?'))} bits from {_e(source)}; section 4.2 flags: "
        f"{_e(failed)}; an ideal generator shows {suite.get('expected_false_flags', 0):.2f} "
        "flags on average (the verdict follows the suite rule below, not the flag count).</p>"
    )
    all_p: list[float] = []
    per_test: dict[str, list[float]] = {}
    for name, test in doc["tests"].items():
        values = [p for row in test["p_values"] for p in row if p is not None]
        per_test[name] = values
        all_p += values
    out.append(p_value_histogram(f"SP 800-22: all P-values ({len(all_p)})", all_p))
    out.append('<div class="charts">')
    for name, values in per_test.items():
        if values:
            out.append(p_value_histogram(name, values, width=360))
    out.append("</div>")
    out.append(
        '<table><tr><th class="l">test</th><th>sub-tests</th><th>failed</th>'
        "<th>lowest proportion</th><th>lowest uniformity P</th></tr>"
    )
    for name, decisions in doc["decisions"].items():
        ds = [d for d in decisions if d is not None]
        bad = sum(1 for d in ds if not d["ok"])
        uni = [d["uniformity_p_value"] for d in ds if d.get("uniformity_p_value") is not None]
        lowest = min(
            (d for d in ds if d.get("sample_size")),
            key=lambda d: d["passed"] / d["sample_size"],
            default=None,
        )
        cls = ' class="fail"' if bad else ""
        proportion = "----" if lowest is None else f"{lowest['passed']}/{lowest['sample_size']}"
        out.append(
            f"<tr{cls}><td class='l'>{_e(name)}</td><td>{len(ds)}</td><td>{bad}</td>"
            f"<td>{_e(proportion)}</td><td>{_fmt(min(uni) if uni else None)}</td></tr>"
        )
    out.append("</table>")
    rule = suite.get("rule")
    if isinstance(rule, Mapping) and rule.get("rejected"):
        rows = "".join(
            f"<tr class='fail'><td class='l'>{_e(c['test'])}/{_e(c['sub_test'])}</td>"
            f"<td class='l'>{_e(c['check'])}</td><td>{_fmt_p(c['p_value'])}</td>"
            f"<td>{_e(c['sample_size'])}</td></tr>"
            for c in rule["rejected"][:40]
        )
        out.append(
            "<h3>Checks rejected by the suite rule</h3><table><tr><th class='l'>sub-test</th>"
            "<th class='l'>check</th><th>P-value</th><th>sequences</th></tr>"
            f"{rows}</table>"
        )
    out.append(_criteria(doc))
    out.append(_evidence(doc))
    out.append("</section>")
    return "".join(out)


def _power_section(doc: Mapping[str, Any]) -> str:
    gens = doc["generators"]
    out = ['<section id="power"><h2>Power study</h2>']
    out.append(
        _verdict(
            document_verdict(doc),
            f"{doc['replicates']} replicates per size, confidence {doc['confidence']:g}; a "
            f"generator is caught at the first size rejected in at least "
            f"{doc['power_target']:.0%} of replicates",
        )
    )
    out.append(power_chart(gens, doc["power_target"]))
    out.append(
        '<table><tr><th class="l">generator</th><th class="l">judged on</th>'
        '<th class="l">what it is</th><th>first rejection</th><th>caught at</th>'
        '<th class="l">rejections per size</th></tr>'
    )
    for g in gens:
        trials = ", ".join(
            f"{t['size']:,}: {t['rejections']}/{t['replicates']}" for t in g["trials"]
        )
        caught = g["caught_at"]
        ok = (caught is not None) if g["bad"] else True
        cls = "" if ok else ' class="fail"'
        out.append(
            f"<tr{cls}><td class='l'>{_e(g['name'])}</td><td class='l'>{_e(g['outcome'])}</td>"
            f"<td class='l'>{_e(g['description'])}</td>"
            f"<td>{_fmt(g['first_rejection_at'])}</td><td>{_fmt(caught)}</td>"
            f"<td class='l'>{_e(trials)}</td></tr>"
        )
    out.append("</table>")
    out.append(_criteria(doc))
    out.append(_evidence(doc))
    out.append("</section>")
    return "".join(out)


def _dieharder_section(doc: Mapping[str, Any]) -> str:
    out = ['<section id="dieharder"><h2>dieharder</h2>']
    out.append(_verdict(document_verdict(doc), doc.get("verdict_reason") or ""))
    out.append(f'<p class="note">{_e(doc.get("tool"))} on {_e(doc.get("source"))}.</p>')
    out.append(
        '<table><tr><th>test</th><th class="l">name</th><th>ntup</th><th>tsamples</th>'
        '<th>psamples</th><th>P-value</th><th class="l">assessment</th></tr>'
    )
    for r in doc.get("results", []):
        cls = ' class="fail"' if r["assessment"] != "PASSED" else ""
        out.append(
            f"<tr{cls}><td>{_e(r['test'])}</td><td class='l'>{_e(r['name'])}</td>"
            f"<td>{_e(r['ntuple'])}</td><td>{_e(r['tsamples'])}</td><td>{_e(r['psamples'])}</td>"
            f"<td>{_fmt(r['p_value'], 8)}</td><td class='l'>{_e(r['assessment'])}</td></tr>"
        )
    out.append("</table>")
    if doc.get("raw_output_sessions"):
        out.append("<h3>Raw-output sessions</h3>")
        out.append(_sessions(doc["raw_output_sessions"]))
    out.append(_criteria(doc))
    out.append(_evidence(doc))
    out.append("</section>")
    return "".join(out)


def render_html(
    *,
    outcomes: Mapping[str, Any] | None = None,
    nist: Mapping[str, Any] | None = None,
    power: Mapping[str, Any] | None = None,
    rtp: Mapping[str, Any] | None = None,
    dieharder: Mapping[str, Any] | None = None,
    generated_at: str,
    inputs: Sequence[str] = (),
    title: str = "RNG certification evidence",
) -> str:
    """The report page for the given documents (at least one)."""
    named = (("Outcome-level tests", outcomes), ("NIST SP 800-22", nist),
             ("Power study", power), ("dieharder", dieharder),
             ("Return to player", rtp))  # fmt: skip
    if all(doc is None for _, doc in named):
        raise ValueError("render_html needs at least one document")
    verdicts = [(name, document_verdict(doc)) for name, doc in named if doc is not None]
    summary = "".join(
        f"<li>{_e(name)}: <span class='{_VERDICT_CLASS[v]}'>{_e(v)}</span></li>"
        for name, v in verdicts
    )
    listed = "".join(f"<li><code>{_e(i)}</code></li>" for i in inputs)
    body = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="note">Generated {_e(generated_at)} by rng-certify.</p>',
        f'<ul class="summary">{summary}</ul>',
        f"<p>Inputs:</p><ul>{listed}</ul>" if listed else "",
    ]
    if outcomes is not None:
        body.append(_outcomes_section(outcomes))
    if nist is not None:
        body.append(_nist_section(nist))
    if power is not None:
        body.append(_power_section(power))
    if rtp is not None:
        judged = document_verdict(rtp)
        body.append(
            render_rtp_section(
                rtp,
                verdict_html=_verdict(judged, rtp.get("verdict_reason") or ""),
                appendix=(_criteria(rtp) if judged != NO_VERDICT else "") + _evidence(rtp),
            )
        )
    if dieharder is not None:
        body.append(_dieharder_section(dieharder))
    body.append("</body></html>\n")
    return "\n".join(body)
