"""Shared helpers for benchmark modules.

A benchmark module ``bench/bench_<area>.py`` exposes ``run(*, short: bool) -> list[Row]``.
``short`` runs for a second or two (``make test`` proves the benchmarks still run, with no
assertion on speed); the long form is what ``make bench`` reports.
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Row:
    name: str
    value: float
    unit: str
    baseline_name: str
    baseline_value: float
    target: str = ""

    @property
    def ratio(self) -> float:
        return self.value / self.baseline_value if self.baseline_value else float("nan")

    def as_dict(self) -> dict[str, object]:
        d: dict[str, object] = asdict(self)
        d["ratio"] = self.ratio
        return d


def rate(fn: Callable[[], object], *, seconds: float, per_call: int = 1) -> float:
    """Calls ``fn`` repeatedly for about ``seconds`` (bounded) and returns units per second."""
    n = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        fn()
        n += 1
        now = time.perf_counter()
        if now >= deadline or n >= 100_000_000:
            return n * per_call / (now - start)


def machine() -> dict[str, object]:
    import os

    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }


def write_results(area: str, rows: list[Row], directory: Path | None = None) -> Path:
    directory = directory or RESULTS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{area}.json"
    path.write_text(
        json.dumps({"machine": machine(), "rows": [r.as_dict() for r in rows]}, indent=2)
    )
    return path


def _num(x: float) -> str:
    return f"{x:,.3f}" if abs(x) < 100 else f"{x:,.1f}"


def print_rows(rows: list[Row]) -> None:
    for r in rows:
        print(
            f"{r.name:<48} {_num(r.value):>14} {r.unit:<12} "
            f"baseline {r.baseline_name}: {_num(r.baseline_value):>14}  ratio {r.ratio:6.2f}"
            + (f"  (target {r.target})" if r.target else "")
        )
