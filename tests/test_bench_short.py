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


def test_the_load_client_deals_spins_round_robin_over_tables() -> None:
    """``--tables N``: call ``i`` is on table ``i % N``; the default keeps one table."""
    import argparse

    from bench._load_client import _bodies
    from rng_service._proto.rng.v1 import outcomes_pb2

    def tables(n: int) -> list[str]:
        args = argparse.Namespace(kind="spin", items=1, tables=n)
        return [
            outcomes_pb2.SpinRouletteRequest.FromString(b).context.table_id
            for b in _bodies(args, 7, "t")
        ]

    assert tables(3) == [f"bench-table-{k}" for k in (0, 1, 2, 0, 1, 2, 0)]
    assert tables(1) == ["bench-table"] * 7


def test_map_service_rows_are_medians_with_and_without_the_map_and_before() -> None:
    from bench.bench_map_service import rows

    def run(cpu: float) -> dict[str, float]:
        return {"cpu_per_1000": cpu, "rate": 1000 / cpu, "p50": cpu / 10, "calls": 100.0}

    measured = {
        "runs": {"this": [run(x) for x in (0.9, 0.5, 0.7)],
                 "without": [run(x) for x in (0.4, 0.8, 0.6)],
                 "before": [run(x) for x in (0.3, 0.2, 0.1)]},
        "loads": [3.0, 5.0, 4.0],
    }  # fmt: skip
    got = rows(measured, before_name="before")
    assert (got[0].value, got[0].baseline_value, got[0].target) == (0.7, 0.6, "<= 1.10")
    assert "taken out" in got[0].baseline_name
    assert (got[3].value, got[3].baseline_value, got[3].baseline_name) == (0.7, 0.2, "before")
    assert (got[4].value, got[4].baseline_value) == (0.6, 0.2)
    assert (got[-1].value, got[-1].baseline_value) == (5.0, 3.0)
    alone = rows(measured, before_name=None)
    assert len(alone) == 4
    assert all(r.baseline_name != "before" for r in alone)


def test_map_service_refuses_a_tree_before_without_its_venv(tmp_path: Path) -> None:
    from bench import bench_map_service

    with pytest.raises(SystemExit, match=r"\.venv"):
        bench_map_service.run(short=False, before=tmp_path)


def test_the_service_without_the_map_writes_the_empty_maps_root() -> None:
    """The "without" side of the A/B really takes the map's work out (else the ratio would
    compare the map with itself), in its own process only."""
    from rng_service.log.table_map import EMPTY, TableMap

    code = (
        "from bench._without_map import take_out_the_map; take_out_the_map(); "
        "from rng_service.log.table_map import TableMap; m = TableMap(); "
        "m.set('c', 't', 0, 1); print(m.root().hex())"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True, timeout=60)  # fmt: skip
    assert out.stdout.strip() == EMPTY.hex()
    m = TableMap()
    m.set("c", "t", 0, 1)
    assert m.root() != EMPTY
