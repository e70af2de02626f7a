"""Rendering of the ``rng-certify-rtp/v1`` document (``rng-certify rtp``): a text table for the
terminal, and the "Return to player" section of the HTML evidence report.

The section has one table per game: paytable, wager, the conditions the return depends on
(wheel, reading of ambiguous text, profile), the exact RTP (decimal, with the fraction in the
cell's title and a ``data-fraction`` attribute), house edge and standard deviation per unit
staked, and, when rounds were played through a live service, the rounds, the measured RTP, its
99 % confidence interval and whether the exact figure lies inside (rows outside are marked);
then the live run's games with the log indexes of their entries, and the family verdict.
Rows of a reading the project did not adopt (docs/games.md) are marked "other reading".

Pure: no ``rng_service`` import, no I/O.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

__all__ = ["render_rtp_page", "render_rtp_section", "render_rtp_text", "rtp_passed"]


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _conditions(row: Mapping[str, Any]) -> str:
    text = ", ".join(f"{k} {v}" for k, v in sorted(row["conditions"].items()))
    if not row["decided"]:
        text += " (other reading)"
    return text


def rtp_passed(doc: Mapping[str, Any]) -> bool:
    """For a document without a ``verdict`` member (made before verdicts): True unless a live
    run found an exact RTP outside its family-wise interval."""
    live = doc.get("live")
    return live is None or bool(live["family"]["passed"])


def render_rtp_text(doc: Mapping[str, Any]) -> str:
    """A plain-text table of every row (and the live verdict)."""
    lines = []
    live = doc.get("live")
    head = (
        f"{'game':<16} {'paytable':<8} {'wager':<26} {'conditions':<44} "
        f"{'RTP':>10} {'edge':>9} {'SD':>9}"
    )
    if live is not None:
        head += f" {'rounds':>7} {'measured':>9} {'99% interval':>21}  in"
    lines.append(head)
    for row in doc["rows"]:
        line = (
            f"{row['game']:<16} {row['paytable']:<8} {row['wager']:<26} {_conditions(row):<44} "
            f"{float(row['rtp']['decimal']):>10.6f} {float(row['house_edge']['decimal']):>9.6f} "
            f"{float(row['standard_deviation']):>9.4f}"
        )
        measured = row.get("live")
        if measured is not None:
            lo, hi = measured["ci99"]
            inside = "yes" if measured["exact_inside"] else "NO"
            if not measured["judged"]:
                inside += f" (not judged: needs {row['rounds_for_interval']} rounds)"
            line += (
                f" {measured['rounds']:>7} {float(measured['rtp']):>9.6f} "
                f"[{float(lo):>8.5f}, {float(hi):>8.5f}]  {inside}"
            )
        lines.append(line)
    if live is not None:
        for g in live["games"]:
            wheel = f" ({g['wheel']})" if g["wheel"] else ""
            lines.append(
                f"live {g['game']}{wheel}: {g['rounds']} rounds, {g['entries']} log entries "
                f"(indexes {g['log_indexes']})"
            )
        family = live["family"]
        lines.append(
            f"family check: {family['wagers']} measured wagers, {family['judged']} with rounds "
            f"enough for a normal interval (z = {family['z']}); outside: "
            + (", ".join(family["outside"]) or "none")
        )
        lines.append(f"CPU {live['cpu_seconds']} s, wall {live['wall_seconds']} s")
    return "\n".join(lines) + "\n"


def render_rtp_section(doc: Mapping[str, Any], verdict_html: str = "", appendix: str = "") -> str:
    """The report's "Return to player" section; ``verdict_html`` opens it and ``appendix``
    (criteria and evidence, from :mod:`certification.report.html`) closes it."""
    live = doc.get("live")
    out = ['<section id="rtp"><h2>Return to player</h2>', verdict_html]
    if live is not None:
        family = live["family"]
        out.append(
            f'<p class="note">{family["wagers"]} wagers measured on rounds played through '
            f"{_e(live['target'])}, {family['judged']} with rounds enough for a normal "
            "interval; outside their family-wise 99 % interval: "
            f"{_e(', '.join(family['outside']) or 'none')}.</p>"
        )
    profile = doc["profile"]
    out.append(
        f'<p class="note">Mega Fire Blaze bonus under profile {_e(profile["name"])} '
        f"v{_e(profile['version'])} (sha256 <code>{_e(profile['sha256'])}</code>"
        f"{', EXAMPLE' if profile['example'] else ''}). Exact figures per unit staked from the "
        "exact outcome distributions; SD is the standard deviation of the return.</p>"
    )
    games = {g["game"]: g for g in doc["games"]}
    for game, info in games.items():
        rows = [r for r in doc["rows"] if r["game"] == game]
        if not rows:
            continue
        pt = info["paytables"]
        out.append(
            f'<h3 id="rtp-{_e(game)}">{_e(info["title"])}</h3>'
            f'<p class="note">Paytables {_e(pt["name"])} v{_e(pt["version"])}, '
            f"{_e(pt['citation'])}, sha256 <code>{_e(pt['sha256'])}</code></p>"
        )
        head = (
            "<tr><th class='l'>Paytable</th><th class='l'>Wager</th><th class='l'>Conditions</th>"
            "<th>RTP</th><th>House edge</th><th>SD</th>"
        )
        if live is not None:
            head += "<th>Rounds</th><th>Measured</th><th>99 % interval</th><th>Exact inside</th>"
        out.append(f'<table class="rtp-table" data-game="{_e(game)}">{head}</tr>')
        for row in rows:
            measured = row.get("live")
            failed = (
                measured is not None and measured["judged"] and not measured["exact_inside_family"]
            )
            fraction = _e(row["rtp"]["fraction"])
            cells = (
                f"<td class='l'>{_e(row['paytable'])}</td><td class='l'>{_e(row['wager'])}</td>"
                f"<td class='l'>{_e(_conditions(row))}</td>"
                f'<td title="{fraction}" data-fraction="{fraction}">'
                f"{float(row['rtp']['decimal']):.6f}</td>"
                f"<td>{float(row['house_edge']['decimal']):.6f}</td>"
                f"<td>{float(row['standard_deviation']):.4f}</td>"
            )
            if live is not None:
                if measured is None:
                    cells += "<td colspan='4' class='l note'>not played live</td>"
                else:
                    lo, hi = measured["ci99"]
                    cells += (
                        f"<td>{measured['rounds']}</td><td>{float(measured['rtp']):.6f}</td>"
                        f"<td>[{float(lo):.5f}, {float(hi):.5f}]</td>"
                        f"<td>{'yes' if measured['exact_inside'] else 'no'}"
                        + (
                            ""
                            if measured["judged"]
                            else f" (not judged: needs {row['rounds_for_interval']:,} rounds)"
                        )
                        + "</td>"
                    )
            row_class = " class='fail'" if failed else ""
            out.append(f'<tr data-key="{_e(row["key"])}"{row_class}>{cells}</tr>')
        out.append("</table>")
    if live is not None:
        out.append("<h3>Live rounds and their log entries</h3><table><tr><th class='l'>Game</th>")
        out.append(
            "<th>Rounds</th><th>Entries</th><th class='l'>Log indexes</th><th>Seconds</th></tr>"
        )
        for g in live["games"]:
            wheel = f" ({g['wheel']})" if g["wheel"] else ""
            out.append(
                f"<tr><td class='l'>{_e(g['game'] + wheel)}</td><td>{g['rounds']}</td>"
                f"<td>{g['entries']}</td><td class='l'>{_e(g['log_indexes'])}</td>"
                f"<td>{g['seconds']}</td></tr>"
            )
        out.append(
            f"</table><p class='note'>Run id {_e(live['run_id'])}; CPU {live['cpu_seconds']} s, "
            f"wall {live['wall_seconds']} s (client and, in process, server).</p>"
        )
    out.append(appendix)
    out.append("</section>")
    return "".join(out)


def render_rtp_page(doc: Mapping[str, Any]) -> str:
    """A report page holding the section alone."""
    from certification.report.html import render_html

    return render_html(rtp=doc, generated_at=str(doc.get("generated_at", "")))
