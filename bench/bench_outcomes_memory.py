"""Peak memory of ``rng-certify outcomes --input -`` against the number of spins:
``python -m bench outcomes_memory`` (``--short``: 10^4 spins).

Each row pipes ``python -m bench.spin_records --spins N`` (fair double zero spins, one
``roulette_spin`` entry a spin) into ``rng-certify outcomes --input -`` in a child process and
reads the child's peak resident set size (``ru_maxrss`` of ``RUSAGE_CHILDREN`` in a fresh
process per row). Baseline, measured in the same run: ``rng-certify --help`` (the interpreter
with the command's imports). The streamed battery keeps the ratio flat as N grows
(docs/certification.md, "Streaming").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench._common import Row

__all__ = ["run"]

_BIN = Path(sys.executable).parent
_PEAK = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1], shell=True, check=False, stdout=subprocess.DEVNULL)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def _peak_kib(command: str) -> int:
    """Peak RSS in KiB of the largest process ``command`` starts."""
    done = subprocess.run([sys.executable, "-c", _PEAK, command], capture_output=True,
                          text=True, check=True, timeout=3600)  # fmt: skip
    return int(done.stdout.strip())


def run(*, short: bool) -> list[Row]:
    baseline = _peak_kib(f"{_BIN / 'rng-certify'} --help") / 1024
    sizes = (10_000,) if short else (100_000, 1_000_000)
    rows = []
    for n in sizes:
        command = (
            f"{sys.executable} -m bench.spin_records --spins {n} | "
            f"{_BIN / 'rng-certify'} outcomes --input - --json /dev/null"
        )
        peak = _peak_kib(command) / 1024
        rows.append(Row(f"rng-certify outcomes, {n:,} spins, peak RSS", peak, "MiB",
                        "rng-certify --help", baseline))  # fmt: skip
    return rows
