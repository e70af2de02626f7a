"""Rendering of the ``rng-certify-rtp/v1`` document (``rng-certify rtp``): a text table for the
terminal, and the model of the "Return to player" section of the HTML evidence report (its
markup is the ``rtp`` macro of ``templates/sections.html``, autoescaped).

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

from collections.abc import Mapping
from typing import Any

__all__ = ["render_rtp_text", "rtp_passed", "rtp_section"]


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
        parts = row.get("mega_fire_blaze_returns")
        if parts is not None:
            text = (
                f"{'':<16} {'':<8} {'  base game (617b.7(h))':<26} {'':<44} "
                f"{float(parts['base']['decimal']):>10.6f}  (= {parts['base']['fraction']}); bonus "
                f"{float(parts['bonus']['decimal']):+.6f}; total "
                f"{float(parts['total']['decimal']):.6f}"
            )
            live_parts = (measured or {}).get("mega_fire_blaze_returns")
            if live_parts is not None:
                text += "; measured base {} [{}, {}], bonus {} [{}, {}]".format(
                    live_parts["base"]["measured"], *live_parts["base"]["ci99"],
                    live_parts["bonus"]["measured"], *live_parts["bonus"]["ci99"],
                )  # fmt: skip
            lines.append(text)
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


def rtp_section(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The model of the report's "Return to player" section (its template is ``rtp`` in
    ``certification/report/templates/sections.html``): every figure formatted here; the
    verdict, criteria and evidence are added by :mod:`certification.report.html`."""
    live = doc.get("live")
    games = []
    for game, info in {g["game"]: g for g in doc["games"]}.items():
        rows = [_rtp_row(r, live is not None) for r in doc["rows"] if r["game"] == game]
        if rows:
            games.append(
                {"game": game, "title": info["title"], "paytables": info["paytables"], "rows": rows}
            )
    measured = None
    if live is not None:
        family = live["family"]
        measured = {
            "wagers": family["wagers"],
            "judged": family["judged"],
            "target": live["target"],
            "outside": ", ".join(family["outside"]) or "none",
            "run_id": live["run_id"],
            "cpu_seconds": live["cpu_seconds"],
            "wall_seconds": live["wall_seconds"],
            "games": [
                {
                    "label": g["game"] + (f" ({g['wheel']})" if g["wheel"] else ""),
                    "rounds": g["rounds"],
                    "entries": g["entries"],
                    "log_indexes": g["log_indexes"],
                    "seconds": g["seconds"],
                }
                for g in live["games"]
            ],
        }
    return {"live": measured, "profile": doc["profile"], "games": games}


def _rtp_row(row: Mapping[str, Any], live: bool) -> dict[str, Any]:
    measured = row.get("live")
    shown = None
    if live and measured is not None:
        lo, hi = measured["ci99"]
        inside = "yes" if measured["exact_inside"] else "no"
        if not measured["judged"]:
            inside += f" (not judged: needs {row['rounds_for_interval']:,} rounds)"
        shown = {
            "rounds": measured["rounds"],
            "rtp": f"{float(measured['rtp']):.6f}",
            "low": f"{float(lo):.5f}",
            "high": f"{float(hi):.5f}",
            "inside": inside,
        }
    return {
        "key": row["key"],
        "failed": measured is not None
        and measured["judged"]
        and not measured["exact_inside_family"],
        "paytable": row["paytable"],
        "wager": row["wager"],
        "conditions": _conditions(row),
        "fraction": row["rtp"]["fraction"],
        "rtp": f"{float(row['rtp']['decimal']):.6f}",
        "house_edge": f"{float(row['house_edge']['decimal']):.6f}",
        "sd": f"{float(row['standard_deviation']):.4f}",
        "measured": shown,
    }
