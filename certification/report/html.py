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
* **SP 800-90B entropy** (``rng-certify entropy``): the verdict, every estimator's figure (the
  lowest marked), H_original, N x H_bitstring, the assessed minimum, the claim, the IID tests'
  outcome and the restart sanity check and validation.

Each section states its verdict (PASS, FAIL or INCONCLUSIVE, with the reason), every criterion
the verdict used (the document's ``criteria``: alpha, intervals, thresholds, minimum sample,
multiple-testing rule), and the evidence record: software version and git commit, command
line, time, every input's size and SHA-256, and for live runs each raw-output session's
request id, log index and receipt (the receipt JSON in a ``<details>`` element).

Every plot is an ``<svg>`` with the class ``plot`` and a kind class (``p-value-histogram``,
``frequency-chart``, ``residual-chart``, ``power-chart``) so a reader, or a test, can find
them. The page states when and from what inputs it was made; the clock is the caller's.

The markup is Jinja2 templates (``certification/report/templates``: ``report.html``,
``sections.html``, ``charts.svg``, installed with the package) rendered with autoescaping on for
both ``.html`` and ``.svg`` and ``StrictUndefined``, so every value from a document or the
command line (source and file names, test names, notes, receipts, titles) is escaped in text and
attributes alike, and a name a template uses but the model lacks fails the render. This module
builds the models: every figure (coordinates, P-values, counts, proportions) is formatted here
in Python with the format the page has always used, and the templates only place the strings.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import jinja2

from certification.report.rtp import rtp_passed, rtp_section

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

#: What a template is handed: names to strings (figures already formatted), flags, nested models.
Model = dict[str, Any]


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("certification.report", "templates"),
        autoescape=jinja2.select_autoescape(
            enabled_extensions=("html", "svg"), default_for_string=True, default=True
        ),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["receipt_json"] = lambda receipt: json.dumps(receipt, indent=1)
    return env


_ENV = _environment()


def _fmt(x: float | int | None, digits: int = 6) -> str:
    if x is None:
        return "----"
    if isinstance(x, int):
        return str(x)
    return f"{x:.{digits}f}"


def _fmt_p(x: float | None, digits: int = 6) -> str:
    """A P-value for people: fixed point down to 1e-4, scientific notation below it (0.000000
    hides how small a P-value is)."""
    if x is None:
        return "----"
    if 0 < x < 1e-4:
        return f"{x:.3e}"
    return f"{x:.{digits}f}"


def _number(value: Any) -> str:
    """A criterion's value as given: floats without binary noise (1 - 0.99 is
    0.010000000000000009 in binary floating point; it was given as 0.01)."""
    if isinstance(value, float):
        return f"{value:.12g}"
    return str(value)


def _tick(v: float) -> str:
    if v >= 100 or v == int(v):
        return f"{v:.0f}"
    return f"{v:.2g}"


def _count_axis_max(y_max: float) -> float:
    """The top of a count axis: four equal integer steps at least ``y_max`` high, so every
    tick of a count is a whole number."""
    return 4.0 * max(1, math.ceil(y_max / 4))


def _chart(kind: str, title: str, width: int, height: int) -> Model:
    return {
        "kind": kind,
        "title": title,
        "width": width,
        "height": height,
        "centre": f"{width / 2:.0f}",
    }


def _axes(width: int, height: int, y_max: float, y_label: str) -> Model:
    x0, y0 = _PAD_L, height - _PAD_B
    ticks = []
    for i in range(5):
        v = y_max * i / 4
        y = y0 - (y0 - _PAD_T) * i / 4
        ticks.append(
            {"x1": x0 - 4, "y": f"{y:.1f}", "tx": x0 - 6, "ty": f"{y + 4:.1f}", "label": _tick(v)}
        )
    return {
        "x0": x0,
        "top": _PAD_T,
        "y0": y0,
        "right": width - _PAD_R,
        "ticks": ticks,
        "mid": f"{(_PAD_T + y0) / 2:.0f}",
        "label": y_label,
    }


def p_value_histogram(title: str, p_values: Sequence[float], width: int = _W) -> Model:
    """Ten-bin histogram of P-values; the dashed line is the count a fair generator expects
    (the model of ``histogram`` in ``charts.svg``)."""
    counts = [0] * 10
    for p in p_values:
        counts[min(int(p * 10), 9)] += 1
    expected = len(p_values) / 10
    y_max = _count_axis_max(max([*counts, expected, 1]) * 1.15)
    height = _H
    chart = _chart("p-value-histogram", title, width, height)
    x0, y0 = _PAD_L, height - _PAD_B
    bw = (width - _PAD_L - _PAD_R) / 10
    bars = []
    for i, c in enumerate(counts):
        h = (y0 - _PAD_T) * c / y_max
        bars.append(
            {
                "x": f"{x0 + i * bw + 2:.1f}",
                "y": f"{y0 - h:.1f}",
                "w": f"{bw - 4:.1f}",
                "h": f"{h:.1f}",
                "lo": f"{i / 10:.1f}",
                "hi": f"{(i + 1) / 10:.1f}",
                "count": c,
                "lx": f"{x0 + (i + 0.5) * bw:.1f}",
            }
        )
    ye = y0 - (y0 - _PAD_T) * expected / y_max
    chart.update(
        axes=_axes(width, height, y_max, "count"),
        bars=bars,
        tick_y=y0 + 14,
        ye=f"{ye:.1f}",
        caption_y=height - 12,
        n=len(p_values),
        expected=f"{expected:.1f}",
    )
    return chart


def frequency_chart(title: str, cells: Sequence[Mapping[str, Any]]) -> Model:
    """Observed (bars) against expected (red marks) counts per cell (``frequency``)."""
    width, height = _W, _H
    labels = [str(c["label"]) for c in cells]
    observed = [float(c["observed"]) for c in cells]
    expected = [float(c["expected"]) for c in cells]
    y_max = _count_axis_max(max([*observed, *expected, 1.0]) * 1.15)
    chart = _chart("frequency-chart", title, width, height)
    x0, y0 = _PAD_L, height - _PAD_B
    n = len(cells)
    bw = (width - _PAD_L - _PAD_R) / max(n, 1)
    every = max(1, math.ceil(n / 30))
    bars = []
    for i in range(n):
        h = (y0 - _PAD_T) * observed[i] / y_max
        he = (y0 - _PAD_T) * expected[i] / y_max
        x = x0 + i * bw
        bars.append(
            {
                "x": f"{x + 1:.1f}",
                "y": f"{y0 - h:.1f}",
                "w": f"{max(bw - 2, 1):.1f}",
                "h": f"{h:.1f}",
                "label": labels[i],
                "observed": f"{observed[i]:.0f}",
                "expected": f"{expected[i]:.1f}",
                "ex1": f"{x:.1f}",
                "ex2": f"{x + bw:.1f}",
                "ey": f"{y0 - he:.1f}",
                "tick": f"{x + bw / 2:.1f}" if i % every == 0 else None,
                "short": labels[i][:14],
            }
        )
    chart.update(
        axes=_axes(width, height, y_max, "count"), bars=bars, tick_y=y0 + 12, caption_y=height - 4
    )
    return chart


def residual_chart(title: str, cells: Sequence[Mapping[str, Any]]) -> Model:
    """Standardised residuals (O - E) / sqrt(E) per cell, with the +-3 band (``residual``)."""
    width, height = _W, _H
    res = [
        (float(c["observed"]) - float(c["expected"])) / math.sqrt(float(c["expected"]))
        for c in cells
    ]
    bound = max([3.5, *(abs(r) for r in res)]) * 1.1
    chart = _chart("residual-chart", title, width, height)
    x0, y0, y1 = _PAD_L, height - _PAD_B, _PAD_T
    mid = (y0 + y1) / 2

    def y(v: float) -> float:
        return mid - (y0 - y1) / 2 * v / bound

    n = len(res)
    step = (width - _PAD_L - _PAD_R) / max(n, 1)
    chart.update(
        x0=x0,
        top=y1,
        y0=y0,
        mid=f"{mid:.1f}",
        right=width - _PAD_R,
        bands=[{"y": f"{y(v):.1f}", "ty": f"{y(v) + 4:.1f}", "label": f"{v:+d}"} for v in (-3, 3)],
        points=[
            {
                "x": f"{x0 + (i + 0.5) * step:.1f}",
                "y": f"{y(r):.1f}",
                "colour": "#d62728" if abs(r) > 3 else "#4c78a8",
            }
            for i, r in enumerate(res)
        ],
        caption_y=height - 12,
        n=n,
    )
    return chart


def power_chart(generators: Sequence[Mapping[str, Any]], power_target: float) -> Model:
    """Share of replicates rejected against sample size (log scale), one line per generator
    (``power``)."""
    width, height = _W, 320
    sizes = [t["size"] for g in generators for t in g["trials"]] or [1]
    lo, hi = math.log10(min(sizes)), math.log10(max(sizes))
    hi = hi if hi > lo else lo + 1
    chart = _chart("power-chart", "Rejection rate against sample size", width, height)
    x0, y0 = _PAD_L, height - _PAD_B
    plot_w = width - _PAD_L - _PAD_R - 150

    def px(n: int) -> float:
        return x0 + 10 + plot_w * (math.log10(n) - lo) / (hi - lo)

    def py(v: float) -> float:
        return y0 - (y0 - _PAD_T) * v

    series = []
    for i, g in enumerate(generators):
        pts = [(px(t["size"]), py(t["rejections"] / t["replicates"])) for t in g["trials"]]
        if not pts:
            continue
        series.append(
            {
                "name": g["name"],
                "colour": _COLOURS[i % len(_COLOURS)],
                "dashed": not g["bad"],
                "points": " ".join(f"{x:.1f},{y:.1f}" for x, y in pts),
                "dots": [{"x": f"{x:.1f}", "y": f"{y:.1f}"} for x, y in pts],
                "lx": x0 + plot_w + 30,
                "ly": _PAD_T + 14 * i + 10,
            }
        )
    chart.update(
        axes=_axes(width, height, 1.0, "share of replicates rejected"),
        size_ticks=[{"x": f"{px(n):.1f}", "label": f"{n:,}"} for n in sorted(set(sizes))],
        tick_y=y0 + 14,
        target_y=f"{py(power_target):.1f}",
        target_x2=f"{x0 + plot_w + 20:.1f}",
        series=series,
        caption_x=f"{x0 + plot_w / 2:.0f}",
        caption_y=height - 10,
        target=f"{power_target:g}",
    )
    return chart


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


def _verdict(verdict: str, text: str) -> Model:
    word = "No verdict" if verdict == NO_VERDICT else verdict
    return {"css": _VERDICT_CLASS.get(verdict, "failv"), "word": word, "text": text}


def _flatten(prefix: str, value: Any, rows: list[tuple[str, str]]) -> None:
    if isinstance(value, Mapping):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), inner, rows)
    elif isinstance(value, list | tuple):
        rows.append((prefix, ", ".join(_number(v) for v in value)))
    else:
        rows.append((prefix, _number(value)))


def _criteria(doc: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    """Every criterion the document's verdict used, flattened (None: it states none)."""
    criteria = doc.get("criteria")
    if not isinstance(criteria, Mapping):
        return None
    rows: list[tuple[str, str]] = []
    _flatten("", criteria, rows)
    return rows


def _evidence(doc: Mapping[str, Any]) -> Model | None:
    """Software, command line, time, inputs (size, SHA-256) and raw-output sessions."""
    evidence = doc.get("evidence")
    if not isinstance(evidence, Mapping):
        return None
    software = evidence.get("software") or {}
    commit = software.get("git_commit") or software.get("git_note") or "unknown"
    if software.get("git_dirty"):
        commit = f"{commit} (with uncommitted changes)"
    inputs = [
        {
            "name": item.get("path") or item.get("live") or item.get("lab_seed") or "?",
            "size": item.get("size_bytes", item.get("bytes_fed", "")),
            "digest": item.get("sha256", item.get("sha256_fed", "")),
            "sessions": item.get("raw_output_sessions") or [],
            "rounds": _live_rounds(item) if item.get("rounds") else None,
        }
        for item in evidence.get("inputs") or []
    ]
    return {
        "software_name": software.get("name"),
        "software_version": software.get("version"),
        "commit": commit,
        "command_line": " ".join(evidence.get("command_line", [])),
        "generated_at": evidence.get("generated_at"),
        "inputs": inputs,
    }


def _live_rounds(item: Mapping[str, Any]) -> Model:
    """``rng-certify rtp --live``: per game, the log indexes of its rounds' entries and the
    receipt of the last one (its checkpoint covers them all)."""
    games = []
    for g in item["rounds"]:
        receipt = g.get("receipt")
        ranges = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in g["log_index_ranges"])
        wheel = f" ({g['wheel']})" if g.get("wheel") else ""
        games.append(
            {
                "label": g["game"] + wheel,
                "rounds": g["rounds"],
                "entries": g["entries"],
                "ranges": ranges,
                "receipt": receipt,
                "summary": None if receipt is None else f"receipt of index {receipt.get('index')}",
            }
        )
    profile = item.get("service_profile") or {}
    return {
        "run_id": item.get("run_id"),
        "live": item.get("live"),
        "games": games,
        "profile_name": profile.get("name"),
        "profile_sha256": profile.get("sha256"),
    }


def _outcomes_section(doc: Mapping[str, Any]) -> Model:
    tests = doc["tests"]
    suite = doc["suite"]
    failed = ", ".join(suite["failed"]) or "none"
    reason = doc.get("verdict_reason") or (
        f"{doc['outcome_count']} outcomes, {len(tests)} tests at confidence "
        f"{doc['confidence']:g} ({doc['correction']}); failed: {failed}"
    )
    untested = doc.get("untested_kinds") or {}
    # the repeat detectors' P-values are 1 unless something repeats: not in the histogram
    p_values = [
        t["p_value"] for t in tests if t["p_value"] is not None and t.get("second_level", True)
    ]
    level2 = doc.get("second_level")
    rows = [
        {
            "failed": t["passed"] is False,
            "group": t["group"],
            "name": t["name"],
            "method": t["method"],
            "sample_size": t["sample_size"],
            "statistic": _fmt(t["statistic"], 4),
            "df": _fmt(t["df"]),
            "p_value": _fmt_p(t["p_value"]),
            "adjusted_p_value": _fmt_p(t["adjusted_p_value"]),
            "decision": {True: "pass", False: "FAIL", None: "n/a"}[t["passed"]],
            "note": f" ({t['note']})" if t["note"] else "",
        }
        for t in tests
    ]
    charts = []
    for t in tests:
        if not t["cells"]:
            continue
        title = f"{t['group']} / {t['name']} (P = {_fmt_p(t['p_value'], 4)})"
        if len(t["cells"]) > MAX_BARS:
            charts.append(residual_chart(title, t["cells"]))
        else:
            charts.append(frequency_chart(title, t["cells"]))
    return {
        "verdict": _verdict(document_verdict(doc), reason),
        "outcome_count": doc["outcome_count"],
        "test_count": len(tests),
        "confidence": f"{doc['confidence']:g}",
        "correction": doc["correction"],
        "failed": failed,
        "untested": ", ".join(f"{n} {k}" for k, n in sorted(untested.items())),
        "histogram": p_value_histogram(f"Outcome tests: P-values ({len(p_values)})", p_values),
        "second_level": None
        if level2 is None
        else {
            "method": level2["method"],
            "statistic": _fmt(level2["statistic"]),
            "p_value": _fmt_p(level2["p_value"]),
            "passed": level2["passed"],
        },
        "tests": rows,
        "criteria": _criteria(doc),
        "evidence": _evidence(doc),
        "cell_charts": charts,
    }


def _nist_section(doc: Mapping[str, Any]) -> Model:
    suite = doc["suite"]
    info = doc.get("input", {})
    all_p: list[float] = []
    per_test: dict[str, list[float]] = {}
    for name, test in doc["tests"].items():
        values = [p for row in test["p_values"] for p in row if p is not None]
        per_test[name] = values
        all_p += values
    rows = []
    for name, decisions in doc["decisions"].items():
        ds = [d for d in decisions if d is not None]
        bad = sum(1 for d in ds if not d["ok"])
        uni = [d["uniformity_p_value"] for d in ds if d.get("uniformity_p_value") is not None]
        lowest = min(
            (d for d in ds if d.get("sample_size")),
            key=lambda d: d["passed"] / d["sample_size"],
            default=None,
        )
        proportion = "----" if lowest is None else f"{lowest['passed']}/{lowest['sample_size']}"
        rows.append(
            {
                "name": name,
                "sub_tests": len(ds),
                "failed": bad,
                "proportion": proportion,
                "uniformity": _fmt(min(uni) if uni else None),
            }
        )
    rule = suite.get("rule")
    rejected = []
    if isinstance(rule, Mapping) and rule.get("rejected"):
        rejected = [
            {
                "test": c["test"],
                "sub_test": c["sub_test"],
                "check": c["check"],
                "p_value": _fmt_p(c["p_value"], 3),
                "sample_size": c["sample_size"],
            }
            for c in rule["rejected"][:40]
        ]
    return {
        "verdict": _verdict(document_verdict(doc), doc.get("verdict_reason") or ""),
        "sequences": info.get("sequences", "?"),
        "bits_per_sequence": info.get("bits_per_sequence", "?"),
        "source": info.get("path") or info.get("live") or "?",
        "failed": ", ".join(suite["failed_sub_tests"]) or "none",
        "expected_flags": f"{suite.get('expected_false_flags', 0):.2f}",
        "histogram": p_value_histogram(f"SP 800-22: all P-values ({len(all_p)})", all_p),
        "per_test": [p_value_histogram(n, v, width=360) for n, v in per_test.items() if v],
        "rows": rows,
        "rejected": rejected,
        "criteria": _criteria(doc),
        "evidence": _evidence(doc),
    }


def _power_section(doc: Mapping[str, Any]) -> Model:
    gens = doc["generators"]
    rows = []
    for g in gens:
        trials = ", ".join(
            f"{t['size']:,}: {t['rejections']}/{t['replicates']}" for t in g["trials"]
        )
        caught = g["caught_at"]
        ok = (caught is not None) if g["bad"] else True
        rows.append(
            {
                "failed": not ok,
                "name": g["name"],
                "outcome": g["outcome"],
                "description": g["description"],
                "first_rejection_at": _fmt(g["first_rejection_at"]),
                "caught_at": _fmt(caught),
                "trials": trials,
            }
        )
    reason = (
        f"{doc['replicates']} replicates per size, confidence {doc['confidence']:g}; a "
        f"generator is caught at the first size rejected in at least "
        f"{doc['power_target']:.0%} of replicates"
    )
    return {
        "verdict": _verdict(document_verdict(doc), reason),
        "chart": power_chart(gens, doc["power_target"]),
        "generators": rows,
        "criteria": _criteria(doc),
        "evidence": _evidence(doc),
    }


def _rtp_section(doc: Mapping[str, Any]) -> Model:
    judged = document_verdict(doc)
    return {
        **rtp_section(doc),
        "verdict": _verdict(judged, doc.get("verdict_reason") or ""),
        "criteria_shown": judged != NO_VERDICT,
        "criteria": _criteria(doc),
        "evidence": _evidence(doc),
    }


def _dieharder_section(doc: Mapping[str, Any]) -> Model:
    results = [
        {
            "failed": r["assessment"] != "PASSED",
            "test": r["test"],
            "name": r["name"],
            "ntuple": r["ntuple"],
            "tsamples": r["tsamples"],
            "psamples": r["psamples"],
            "p_value": _fmt_p(r["p_value"], 8),
            "assessment": r["assessment"],
        }
        for r in doc.get("results", [])
    ]
    return {
        "verdict": _verdict(document_verdict(doc), doc.get("verdict_reason") or ""),
        "tool": doc.get("tool"),
        "source": doc.get("source"),
        "results": results,
        "sessions": doc.get("raw_output_sessions") or [],
        "criteria": _criteria(doc),
        "evidence": _evidence(doc),
    }


#: The documents' names in ``document_hashes`` (the keywords of :func:`render_html`).
_SECTION_KEYS = ("outcomes", "nist", "power", "dieharder", "rtp", "entropy")
_SEVERITY = {"FAIL": 3, "INCONCLUSIVE": 2, "PASS": 1, NO_VERDICT: 0}


def _overall(named: Sequence[tuple[str, Mapping[str, Any]]]) -> Model:
    """The worst verdict of the sections, with the section and its reason."""
    name, doc = max(named, key=lambda nd: _SEVERITY.get(document_verdict(nd[1]), 3))
    verdict = document_verdict(doc)
    reason = str(doc.get("verdict_reason") or "")
    if verdict == NO_VERDICT:
        text = "no section judges anything"
    else:
        text = f"{name}: {reason}" if reason else name
    return _verdict(verdict, text)


def _versions() -> list[tuple[str, str]]:
    """The versions the page's P-values depend on (scipy computes them)."""
    import platform

    import numpy
    import scipy

    return [("Python", platform.python_version()), ("numpy", numpy.__version__),
            ("scipy", scipy.__version__)]  # fmt: skip


def _input_hashes(docs: Sequence[Mapping[str, Any]]) -> list[Model]:
    """Every input named in the documents' evidence, with its size and SHA-256."""
    seen: dict[tuple[str, str], Model] = {}
    for doc in docs:
        evidence = doc.get("evidence")
        if not isinstance(evidence, Mapping):
            continue
        for item in evidence.get("inputs") or []:
            name = str(item.get("path") or item.get("live") or item.get("lab_seed")
                       or item.get("generated") or "?")  # fmt: skip
            digest = str(item.get("sha256", item.get("sha256_fed", "")) or "none (generated)")
            size = item.get("size_bytes", item.get("bytes_fed", ""))
            seen.setdefault((name, digest), {"name": name, "size": size, "sha256": digest})
    return list(seen.values())


def _entropy_section(doc: Mapping[str, Any]) -> Model:
    """``rng-certify entropy``: each estimator's figure, the minimum, the claim, the verdict."""
    figures = [e["min_entropy"] for e in doc["estimates"] if e["min_entropy"] is not None]
    bits = doc["samples"]["bits_per_symbol"]

    def scaled(e: Mapping[str, Any]) -> float | None:
        value = e["min_entropy"]
        return None if value is None else value * (bits if e["track"] == "bitstring" else 1)

    lowest = min((v for v in map(scaled, doc["estimates"]) if v is not None), default=None)
    restart = doc.get("restart")
    iid = doc.get("iid")
    return {
        "verdict": _verdict(document_verdict(doc), doc.get("verdict_reason") or ""),
        "track": doc["criteria"]["track"],
        "samples": f"{doc['samples']['count']:,}",
        "bits": bits,
        "distinct": doc["samples"]["distinct_symbols"],
        "estimates": [
            {
                "name": e["name"],
                "section": e["section"],
                "track": e["track"],
                "value": "not run (too few samples)" if e["min_entropy"] is None
                else _fmt(e["min_entropy"], 6),
                "lowest": figures and scaled(e) == lowest,
            }
            for e in doc["estimates"]
        ],
        "h_original": _fmt(doc["H_original"], 6),
        "h_bitstring": None if doc["H_bitstring"] is None
        else _fmt(doc["H_bitstring"] * bits, 6),
        "assessed": _fmt(doc["min_entropy"], 6),
        "claim": "none" if doc["criteria"]["claim"] is None else _fmt(doc["criteria"]["claim"], 6),
        "iid": None if iid is None else ("passed" if iid["passed"] else "reject IID"),
        "restart": None if restart is None else (
            f"{'passed' if restart['sanity_check_passed'] else 'FAILED'}: largest count "
            f"{max(restart['max_row_count'], restart['max_column_count'])}, "
            f"cutoff {restart['cutoff']} (H_I {_fmt(restart['H_I'], 6)})"
        ),
        "restart_validation": None if restart is None or restart["H_r"] is None else (
            f"{'passed' if restart['validation_passed'] else 'FAILED'}: H_r "
            f"{_fmt(restart['H_r'], 6)}, H_c {_fmt(restart['H_c'], 6)}"
        ),
        "criteria": _criteria(doc),
        "evidence": _evidence(doc),
    }  # fmt: skip


def render_html(
    *,
    outcomes: Mapping[str, Any] | None = None,
    nist: Mapping[str, Any] | None = None,
    power: Mapping[str, Any] | None = None,
    rtp: Mapping[str, Any] | None = None,
    dieharder: Mapping[str, Any] | None = None,
    entropy: Mapping[str, Any] | None = None,
    generated_at: str,
    inputs: Sequence[str] = (),
    title: str = "RNG certification evidence",
    lab: str | None = None,
    generator: str | None = None,
    document_hashes: Mapping[str, str] | None = None,
) -> str:
    """The report page for the given documents (at least one): a header with the overall
    verdict (the worst section's, with its reason), the laboratory and generator when given,
    the versions of Python, numpy and scipy, and the SHA-256 of every input (from the
    documents' evidence) and of every JSON document (``document_hashes``: section name ->
    SHA-256 of the document's bytes as read or written), then a section per document."""
    named = (("Outcome-level tests", outcomes), ("NIST SP 800-22", nist),
             ("Power study", power), ("dieharder", dieharder),
             ("Return to player", rtp), ("SP 800-90B entropy", entropy))  # fmt: skip
    if all(doc is None for _, doc in named):
        raise ValueError("render_html needs at least one document")
    summary = [
        {"name": name, "word": v, "css": _VERDICT_CLASS[v]}
        for name, v in ((name, document_verdict(doc)) for name, doc in named if doc is not None)
    ]
    overall = _overall([(name, doc) for name, doc in named if doc is not None])
    hashes = dict(document_hashes or {})
    return _ENV.get_template("report.html").render(
        title=title,
        generated_at=generated_at,
        summary=summary,
        overall=overall,
        lab=lab,
        generator=generator,
        versions=_versions(),
        input_hashes=_input_hashes([doc for _, doc in named if doc is not None]),
        document_hashes=[
            {"name": name, "sha256": hashes.get(key, "not given")}
            for (name, doc), key in zip(named, _SECTION_KEYS, strict=True)
            if doc is not None
        ],
        inputs=list(inputs),
        outcomes=None if outcomes is None else _outcomes_section(outcomes),
        nist=None if nist is None else _nist_section(nist),
        power=None if power is None else _power_section(power),
        rtp=None if rtp is None else _rtp_section(rtp),
        dieharder=None if dieharder is None else _dieharder_section(dieharder),
        entropy=None if entropy is None else _entropy_section(entropy),
    )


def render_rtp_page(doc: Mapping[str, Any]) -> str:
    """A report page holding the return-to-player section alone (``rng-certify rtp --html``)."""
    return render_html(rtp=doc, generated_at=str(doc.get("generated_at", "")))
