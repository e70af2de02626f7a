"""The log writer's group rule, A/B in one session (``writer.queue.gather_group``).

Two rules, each a configuration of the same service: **fixed** is the rule before issue 39,
a group with company waits out the whole group wait (``log.group_lull_seconds`` =
``log.group_wait_seconds``, 2 ms); **default** is the service's default: such a group waits
(at most the group wait) for as many requests as the last group held, then closes at the first
lull of ``log.group_lull_seconds`` (0.3 ms) in which no request arrives. Each run starts
``rng-service serve`` on its defaults (SQLite WAL, synchronous=FULL, signed checkpoints and
receipts; a fresh key and log) with one rule, and drives it with ``bench._load_client`` at 32,
4 and 1 in flight and with the first lone spin after a burst of 32. The rules alternate, the
order swapped every round, so that the load of a shared machine falls on both alike; the rows
are medians over the rounds.

CPU: the CPU-seconds of the service's process tree per 1,000 answered spins
(``bench_service.tree_cpu_seconds``). Group: the mean entries per commit group over the run,
from the service's own metrics (``rng_log_commit_group_size``, scraped from its loopback
metrics port before and after). The machine's load average is reported with the rows.

``python -m bench group`` (3 rounds of 4 s a level); ``python -m bench.bench_group --rounds N
--seconds S`` prints every run as a JSON line too.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from bench._common import Row
from bench.bench_service import SPIN, _load, _measured, _stop, start_service

#: The rules, as the service's configuration (environment variables) selects them.
RULES: dict[str, dict[str, str]] = {
    "fixed": {"RNG_SERVICE__LOG__GROUP_LULL_SECONDS": "0.002"},
    "default": {},
}
LEVELS = (("32", 32), ("4", 4), ("1", 1))
#: Rounds of a burst of 32 then one lone spin, a run.
LONE_ROUNDS = 60


def _free_port() -> int:
    """A loopback port free now, for the service's metrics endpoint."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _groups(metrics_port: int) -> tuple[float, float]:
    """The commit group size histogram's (sum, count) from the service's metrics."""
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    found = {"sum": 0.0, "count": 0.0}
    for line in text.splitlines():
        for what in found:
            if line.startswith(f"rng_log_commit_group_size_{what} "):
                found[what] = float(line.split()[-1])
    return found["sum"], found["count"]


def one_run(rule: str, seconds: float, lone_rounds: int) -> dict[str, Any]:
    """One service with ``rule``: 32, 4 and 1 in flight, then the lone spin after a burst."""
    with tempfile.TemporaryDirectory(prefix="rng-bench-group-") as tmp:
        metrics_port = _free_port()
        metrics = {
            "RNG_SERVICE__METRICS__ENABLED": "true",
            "RNG_SERVICE__METRICS__PORT": str(metrics_port),
        }
        service, port = start_service(
            Path(tmp), {**os.environ, "PYTHONUNBUFFERED": "1"}, settings={**metrics, **RULES[rule]}
        )
        try:
            out: dict[str, Any] = {"rule": rule, "load_start": os.getloadavg()[0]}
            for level, n in LEVELS:
                s0, c0 = _groups(metrics_port)
                res = _measured(service.pid, port, SPIN, seconds, n, f"{rule}{level}")
                s1, c1 = _groups(metrics_port)
                res["group"] = (s1 - s0) / max(1.0, c1 - c0)
                out[level] = res
            out["lone"] = _load(
                port, SPIN, seconds * 2, 32, f"{rule}L", lone_after_burst=lone_rounds
            )
            out["load_end"] = os.getloadavg()[0]
        finally:
            _stop(service)
    errors = sum(out[k]["errors"] for k in ("32", "4", "1", "lone"))
    if errors:
        raise RuntimeError(f"{rule}: {errors} errors under load")
    return out


def alternate(rounds: int, seconds: float, lone_rounds: int, echo: bool) -> list[dict[str, Any]]:
    """``rounds`` rounds of both rules, the order swapped every round."""
    runs = []
    for r in range(rounds):
        for rule in ("fixed", "default") if r % 2 == 0 else ("default", "fixed"):
            run_ = one_run(rule, seconds, lone_rounds)
            runs.append(run_)
            if echo:
                print(json.dumps(_brief(run_)), flush=True)
    return runs


def _brief(run_: dict[str, Any]) -> dict[str, Any]:
    keep = ("rate", "p50", "p99", "cpu_per_1000", "group")
    return {
        k: ({m: round(x, 5) for m, x in v.items() if m in keep} if isinstance(v, dict) else v)
        for k, v in run_.items()
    }


def _median(runs: list[dict[str, Any]], rule: str, level: str, measure: str) -> float:
    return float(statistics.median(r[level][measure] for r in runs if r["rule"] == rule))


def rows(runs: list[dict[str, Any]]) -> list[Row]:
    """Medians of the default rule against the fixed wait, and the issue's ratios for it."""

    def m(rule: str, level: str, measure: str) -> float:
        return _median(runs, rule, level, measure)

    out = []
    for level, _ in LEVELS:
        cpu_target = "<= 1 + noise" if level == "32" else ""
        out += [
            Row(f"spins/s, {level} in flight, default rule", m("default", level, "rate"),
                "calls/s", "fixed wait", m("fixed", level, "rate")),
            Row(f"spin p50, {level} in flight, default rule", m("default", level, "p50") * 1000,
                "ms", "fixed wait", m("fixed", level, "p50") * 1000),
            Row(f"CPU-s per 1,000 spins, {level} in flight, default rule",
                m("default", level, "cpu_per_1000"), "CPU-s", "fixed wait",
                m("fixed", level, "cpu_per_1000"), cpu_target),
            Row(f"mean commit group, {level} in flight, default rule",
                m("default", level, "group"), "entries", "fixed wait", m("fixed", level, "group")),
        ]  # fmt: skip
    loads = [r[k] for r in runs for k in ("load_start", "load_end")]
    out += [
        Row("first lone spin after a burst of 32, p50, default rule",
            m("default", "lone", "p50") * 1000, "ms", "fixed wait",
            m("fixed", "lone", "p50") * 1000),
        Row("default rule: spins/s, 4 in flight", m("default", "4", "rate"), "calls/s",
            "1 in flight", m("default", "1", "rate"), ">= 1.8"),
        Row("default rule: spin p50, 4 in flight", m("default", "4", "p50") * 1000, "ms",
            "1 in flight", m("default", "1", "p50") * 1000, "<= 1.5"),
        Row("fixed wait: spins/s, 4 in flight", m("fixed", "4", "rate"), "calls/s",
            "1 in flight", m("fixed", "1", "rate")),
        Row("fixed wait: spin p50, 4 in flight", m("fixed", "4", "p50") * 1000, "ms",
            "1 in flight", m("fixed", "1", "p50") * 1000),
        Row("machine load average (1 min), highest of the runs", max(loads), "load",
            "lowest", min(loads)),
    ]  # fmt: skip
    return out


def run(*, short: bool) -> list[Row]:
    if short:
        return rows(alternate(1, 1.0, 4, echo=False))
    return rows(alternate(3, 4.0, LONE_ROUNDS, echo=True))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_group")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0, help="of load a level")
    parser.add_argument("--json", type=Path, help="write every run here")
    args = parser.parse_args()
    if not 1 <= args.rounds <= 20 or not 0.5 <= args.seconds <= 60:
        parser.error("--rounds must be 1-20 and --seconds 0.5-60")
    runs = alternate(args.rounds, args.seconds, LONE_ROUNDS, echo=True)
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))
    from bench._common import print_rows

    print_rows(rows(runs))


if __name__ == "__main__":
    main()
