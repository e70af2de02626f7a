"""The table map's cost to the whole service (issue 40, "Performance"): CPU per spin of this
tree's service with and without the map, and against the tree before the map, side by side in
one run.

``python -m bench.bench_map_service [--before TREE]`` (or ``RNG_BENCH_BEFORE=TREE python -m
bench map_service``). Each round starts fresh services on their embedded defaults, as
``bench/bench_service.py`` does (a new dev key and SQLite log in a temporary directory,
plaintext on a free loopback port), one after the other, the order rotated each round, so that
the load of a shared machine falls on every side alike:

- ``this``: this tree's service;
- ``without``: the same tree and interpreter with the writer's table map work taken out
  (``python -m bench._without_map serve``: no map path rehashed per entry, no round tail walk,
  no map rows in the append; the entries keep their size). ``this`` over ``without`` is what
  the map costs the service, the issue's "with and without the map" (target <= 1.10);
- ``before`` (with ``--before TREE``): a checkout of the tree before the map with its own
  ``.venv`` (its service runs with ``TREE/.venv/bin/python``, in TREE). ``this`` over
  ``before`` also holds every other change made since that tree (reported, no target).

The load client of THIS tree (``bench/_load_client.py``; the API is the same) drives each with
32 SpinRoulette calls in flight dealt round robin over 1,000 tables, for a bounded time and
count. Per side and round: the server process tree's CPU-seconds (user + system, ``/proc``) per
1,000 spins, spins/s and p50 latency; reported: each round's figures (stdout), the medians of
each side, the ratios of the medians, and the load average.

Short form (what ``make test`` runs): one round of 1.5 s a side, ``this`` against ``without``
(and ``before`` if given).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench._common import Row, print_rows, write_results
from bench.bench_service import SPIN, _load, _start, _stop, tree_cpu_seconds

__all__ = ["run"]

ROOT = Path(__file__).resolve().parent.parent
ENV_BEFORE = "RNG_BENCH_BEFORE"
CONCURRENCY = 32
TABLES = 1_000
_TARGET = "<= 1.10"


class Tree:
    """A checkout whose service is started: its Python and its directory."""

    def __init__(
        self, label: str, root: Path, python: str, serve: str = "rng_service.cli.service"
    ) -> None:
        self.label, self.root, self.python = label, root, python
        self.serve = serve  # the module run as ``python -m MODULE serve``

    @classmethod
    def before(cls, root: Path) -> Tree:
        python = root / ".venv" / "bin" / "python"
        if not python.is_file():
            raise SystemExit(f"bench map_service: no {python} (the tree before needs its .venv)")
        tree = cls("before", root.resolve(), str(python))
        tree.check_imports_itself()
        return tree

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def check_imports_itself(self) -> None:
        """The service that runs is the tree's own (its editable install, not this one)."""
        out = subprocess.run(
            [self.python, "-c", "import rng_service; print(rng_service.__file__)"],
            cwd=self.root, env=self.env(), capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip
        found = Path(out.stdout.strip()).resolve()
        if not found.is_relative_to(self.root):
            raise SystemExit(f"bench map_service: {self.python} imports {found}, not {self.root}")

    def start(self, tmp: Path) -> tuple[subprocess.Popen[str], int]:
        key = tmp / "key.pem"
        subprocess.run(
            [self.python, "-m", "rng_service.cli.service", "keygen", "--out", str(key),
             "--name", "bench"],
            cwd=self.root, env=self.env(), check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        env = {
            **self.env(),
            "RNG_SERVICE__SERVER__PORT": "0",
            "RNG_SERVICE__METRICS__ENABLED": "false",
            "RNG_SERVICE__STORAGE__PATH": str(tmp / "log.sqlite3"),
            "RNG_SERVICE__LOG__KEY_FILE": str(key),
            "RNG_SERVICE__LOG__KEY_NAME": "bench",
        }
        return _start(
            [self.python, "-m", self.serve, "serve"],
            env,
            '{"event": "listening"',
            cwd=self.root,
        )


def _one(tree: Tree, seconds: float, tag: str) -> dict[str, float]:
    """A fresh service of ``tree`` under the load; its CPU per 1,000 spins, spins/s, p50."""
    with tempfile.TemporaryDirectory(prefix="rng-bench-map-") as tmp:
        proc, port = tree.start(Path(tmp))
        try:
            before = tree_cpu_seconds(proc.pid)
            result = _load(port, SPIN, seconds, CONCURRENCY, tag, tables=TABLES)
            used = tree_cpu_seconds(proc.pid) - before
        finally:
            _stop(proc)
    if result["errors"]:
        raise RuntimeError(f"{tree.label}: {result['errors']} errors under load")
    # the warm-up calls (one per worker) are counted with the answered ones, as bench_service
    return {
        "cpu_per_1000": used / (result["calls"] + CONCURRENCY) * 1000,
        "rate": result["rate"],
        "p50": result["p50"],
        "calls": result["calls"],
    }


def measure(trees: dict[str, Tree], *, rounds: int, seconds: float) -> dict[str, Any]:
    """``rounds`` rounds of every side in ``trees`` (the order rotated each round); every
    figure of every round."""
    if not 1 <= rounds <= 20 or not 0.5 <= seconds <= 60:
        raise ValueError("rounds must be 1-20 and seconds 0.5-60")
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in trees}
    loads = [os.getloadavg()[0]]
    order = list(trees)
    for r in range(rounds):
        shift = r % len(order)
        for side in order[shift:] + order[:shift]:
            got = _one(trees[side], seconds, f"m{r}{side[0]}")
            runs[side].append(got)
            print(
                f"  round {r + 1} {side:<7} CPU {got['cpu_per_1000']:.3f} s/1,000 spins  "
                f"{got['rate']:,.0f} spins/s  p50 {got['p50'] * 1000:.2f} ms  "
                f"({got['calls']:,.0f} spins, load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
            loads.append(os.getloadavg()[0])
    for other in order[:-1]:
        pairs = [
            t["cpu_per_1000"] / o["cpu_per_1000"]
            for t, o in zip(runs["this"], runs[other], strict=True)
        ]
        print(f"  CPU per spin, this / {other}, round by round: "
              + ", ".join(f"{p:.2f}" for p in pairs))  # fmt: skip
    return {"runs": runs, "loads": loads}


def rows(measured: dict[str, Any], *, before_name: str | None) -> list[Row]:
    """The medians of ``this`` against ``without`` (the map's cost, with its target) and,
    when measured, against ``before`` (``before_name``)."""

    def median(side: str, key: str) -> float:
        return float(statistics.median(x[key] for x in measured["runs"][side]))

    n = len(measured["runs"]["this"])
    without = "this tree with the map's work taken out (bench._without_map)"
    out = [
        Row(f"service CPU-s per 1,000 spins with the table map, 32 in flight, {TABLES:,} "
            f"tables (median of {n})", median("this", "cpu_per_1000"), "CPU-s",
            without, median("without", "cpu_per_1000"), _TARGET),
        Row(f"spins/s with the table map, same load (median of {n})", median("this", "rate"),
            "calls/s", without, median("without", "rate")),
        Row(f"spin p50 with the table map, same load (median of {n})",
            median("this", "p50") * 1000, "ms", without, median("without", "p50") * 1000),
    ]  # fmt: skip
    if before_name is not None:
        out += [
            Row(f"service CPU-s per 1,000 spins, this tree (median of {n})",
                median("this", "cpu_per_1000"), "CPU-s", before_name,
                median("before", "cpu_per_1000"), "report: every change since that tree"),
            Row(f"service CPU-s per 1,000 spins, this tree without the map (median of {n})",
                median("without", "cpu_per_1000"), "CPU-s", before_name,
                median("before", "cpu_per_1000"), "report: the changes other than the map"),
        ]  # fmt: skip
    loads = measured["loads"]
    out.append(Row("machine load average (1 min), highest during the run", max(loads), "load",
                   "lowest", min(loads)))  # fmt: skip
    return out


def _before_root(given: Path | None) -> Path | None:
    if given is not None:
        return given
    env = os.environ.get(ENV_BEFORE)
    return Path(env) if env else None


def run(*, short: bool, before: Path | None = None, rounds: int | None = None) -> list[Row]:
    rounds = rounds or (1 if short else 6)
    seconds = 1.5 if short else 10.0
    trees: dict[str, Tree] = {}
    root = _before_root(before)
    if root is not None:
        trees["before"] = Tree.before(root)
    trees["without"] = Tree("without", ROOT, sys.executable, serve="bench._without_map")
    trees["this"] = Tree("this", ROOT, sys.executable)
    measured = measure(trees, rounds=rounds, seconds=seconds)
    name = None if root is None else f"the tree before the map ({root})"
    return rows(measured, before_name=name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_map_service")
    parser.add_argument("--before", type=Path, help=f"the tree before the map (or {ENV_BEFORE})")
    parser.add_argument("--rounds", type=int, help="rounds a side (default 6; short 1), 1-20")
    parser.add_argument("--short", action="store_true", help="one round of 1.5 s a side")
    parser.add_argument("--results", type=Path, help="directory for the JSON results")
    args = parser.parse_args(argv)
    if args.rounds is not None and not 1 <= args.rounds <= 20:
        parser.error("--rounds must be 1-20")
    result = run(short=args.short, before=args.before, rounds=args.rounds)
    print_rows(result)
    print(f"   -> {write_results('map_service', result, args.results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
