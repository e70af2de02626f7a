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
    assert data["rows"], "a benchmark must report at least one row\n" + result.stdout
    for row in data["rows"]:
        assert row["value"] > 0, row


def test_storage_benchmark_skips_postgres_rows_without_postgresql(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import bench_storage
    from tests import postgres_cluster

    find_bindir = postgres_cluster.find_bindir
    monkeypatch.setenv("PATH", str(tmp_path))  # no pg_config, no initdb
    monkeypatch.setattr(postgres_cluster, "find_bindir", lambda: find_bindir(debian_root=tmp_path))
    rows = bench_storage.run(short=True)
    assert rows
    assert all(r.name.startswith("sqlite ") for r in rows)
    out = capsys.readouterr().out
    assert "skipped" in out, out
    assert "Debian package `postgresql`" in out, out


def test_replicas_benchmark_reports_nothing_without_postgresql(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import bench_replicas
    from tests import postgres_cluster

    find_bindir = postgres_cluster.find_bindir
    monkeypatch.setenv("PATH", str(tmp_path))  # no pg_config, no initdb
    monkeypatch.setattr(postgres_cluster, "find_bindir", lambda: find_bindir(debian_root=tmp_path))
    assert bench_replicas.run(short=True) == []
    out = capsys.readouterr().out
    assert "skipped" in out, out
    assert "Debian package `postgresql`" in out, out


def test_the_hot_path_harness_runs_and_reports_per_call_cpu() -> None:
    """``bench/hotpath.py`` (the callgrind harness of docs/performance.md) still runs the
    service's real parts: 64 spins answered, the per-call figures printed."""
    result = subprocess.run(
        [sys.executable, "-m", "bench.hotpath", "64"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "calls 64 in " in result.stdout, result.stdout
    assert "the writer thread user" in result.stdout, result.stdout
