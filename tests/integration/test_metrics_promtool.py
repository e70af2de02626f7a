"""promtool (Debian's ``prometheus`` package) on what the service exports and on deploy/prometheus.

- ``promtool check metrics`` lints a real scrape of an in-process service after a few spins;
- ``promtool check rules`` / ``promtool test rules`` check alerts.yml and run its unit tests, and
  the same for witness-alerts.yml (rng-witness's own rules; its scrape is linted in
  test_witness_metrics.py);
- ``promtool check config`` checks the Prometheus config of the compose file;
- every dashboard expression is parsed by promtool's PromQL engine.

A missing promtool fails these tests (``make test`` installs it through
scripts/install-system-deps.sh); they never skip.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.integration.conftest import make_config, start

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS_DIR = ROOT / "deploy" / "prometheus"
DASHBOARD = ROOT / "deploy" / "grafana" / "rng-service-dashboard.json"


@pytest.fixture(scope="module")
def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail(
            "promtool not found: install Debian's `prometheus` package "
            "(apt-get install prometheus; `make test` does it via scripts/install-system-deps.sh)"
        )
    return path


def run_promtool(promtool: str, *args: str, stdin: bytes | None = None, cwd: Path = ROOT) -> str:
    proc = subprocess.run(
        [promtool, *args], input=stdin, cwd=cwd, capture_output=True, timeout=120, check=False
    )
    output = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert proc.returncode == 0, f"promtool {' '.join(args)} failed:\n{output}"
    return output


def test_promtool_accepts_the_services_metrics(tmp_path: Path, promtool: str) -> None:
    running = start(make_config(tmp_path))
    try:
        for i in range(3):
            running.spin(f"promtool-{i}")
        running.spin("promtool-0")  # a replay, so rng_outcome_replays_total has a sample
        assert running.metrics_port is not None
        url = f"http://127.0.0.1:{running.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            body = response.read()
    finally:
        running.stop()
    text = body.decode("utf-8")
    assert 'rng_outcomes_total{client="default",game="roulette",kind="roulette_spin"} 3.0' in text
    assert 'rng_outcome_replays_total{kind="roulette_spin"} 1.0' in text
    assert "rng_generator_up 1.0" in text
    # Every (method, check) of the integrity counter is there at 0 before any error, so that
    # increase() in RngLogIntegrityError sees the first one (a series born at 1 shows none).
    from rng_service.rpc.log_servicer import LogServicer
    from rng_service.writer.columns import CHECKS

    for method in LogServicer.CHECKED_METHODS:
        for check in CHECKS:
            sample = f'rng_log_integrity_errors_total{{check="{check}",method="{method}"}} 0.0'
            assert sample in text, sample
    output = run_promtool(promtool, "check", "metrics", stdin=body)
    assert output.strip() == "", f"promtool check metrics reported problems:\n{output}"


#: Each rules file under deploy/prometheus and how many rules it holds: the service's, and
#: rng-witness's own (run by the witness's operator, docs/operations/witnesses.md "Monitoring a
#: witness").
RULE_FILES = [("alerts.yml", 15), ("witness-alerts.yml", 3)]


@pytest.mark.parametrize(("rules", "count"), RULE_FILES)
def test_promtool_checks_the_alerting_rules(promtool: str, rules: str, count: int) -> None:
    output = run_promtool(promtool, "check", "rules", rules, cwd=PROMETHEUS_DIR)
    assert f"SUCCESS: {count} rules found" in output


@pytest.mark.parametrize(("rules", "count"), RULE_FILES)
def test_promtool_runs_the_alert_unit_tests(promtool: str, rules: str, count: int) -> None:
    tests = rules.replace(".yml", "_test.yml")
    output = run_promtool(promtool, "test", "rules", tests, cwd=PROMETHEUS_DIR)
    assert "SUCCESS" in output


def test_promtool_checks_the_prometheus_config(promtool: str) -> None:
    output = run_promtool(promtool, "check", "config", "prometheus.yml", cwd=PROMETHEUS_DIR)
    assert "is valid prometheus config file syntax" in output


def test_promtool_parses_every_dashboard_expression(tmp_path: Path, promtool: str) -> None:
    # promtool has no "parse this expression" command; a rule unit test with expressions over no
    # series evaluates each one (a parse or type error fails the test) and expects no samples.
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    grafana_vars = {"$__rate_interval": "1m", "$__range": "1h", "$instance": ".*", "$log": ".*"}
    tests = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for var, value in grafana_vars.items():
                expr = expr.replace(var, value)
            assert "$" not in expr, f"{panel['title']}: unknown Grafana variable in {expr}"
            tests.append({"expr": expr, "eval_time": "0m", "exp_samples": []})
    assert len(tests) > 20
    (tmp_path / "rules.yml").write_text("groups: []\n", encoding="utf-8")
    spec = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": [], "promql_expr_test": tests}],
    }
    # JSON is YAML, so no YAML writer is needed.
    (tmp_path / "dashboard_test.yml").write_text(json.dumps(spec, indent=1), encoding="utf-8")
    run_promtool(promtool, "test", "rules", "dashboard_test.yml", cwd=tmp_path)
