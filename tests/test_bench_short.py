"""The benchmarks still run (short form, seconds each). No assertion on speed: figures are
ratios measured by `make bench`, never timed assertions in tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.__main__ import areas

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("area", areas())
def test_benchmark_runs_in_short_form(area: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--short", "--results", str(tmp_path), area],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads((tmp_path / f"{area}.json").read_text())
    assert data["rows"], "a benchmark must report at least one row"
    for row in data["rows"]:
        assert row["value"] > 0, row
