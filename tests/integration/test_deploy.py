"""The deployment files under deploy/: compose file, Prometheus config, alerts, Grafana dashboard.

Static checks that need no container runtime (none runs on the development machines): the files
parse, the compose file runs the service hardened (non-root, read-only root, read-only config and
keys, loopback-only ports) next to PostgreSQL and Prometheus, and every metric name that the
alerts and the dashboard use is one the service exports (or one of the few listed below that the
lead is adding). promtool's own checks are in test_metrics_promtool.py.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rng_service.app import Service
from rng_service.config import load_config
from rng_service.metrics import GeneratorCollector
from tests.integration.conftest import make_config, start

try:
    import yaml  # PyYAML, from the project's dev extra
except ImportError as e:  # pragma: no cover - a broken dev install, not a skip
    raise ImportError(
        "tests/integration/test_deploy.py needs PyYAML: pip install -e '.[dev]' (pyyaml)"
    ) from e

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "docker-compose.yml"
PROMETHEUS = DEPLOY / "prometheus" / "prometheus.yml"
ALERTS = DEPLOY / "prometheus" / "alerts.yml"
DASHBOARD = DEPLOY / "grafana" / "rng-service-dashboard.json"
OPERATIONS = ROOT / "docs" / "operations.md"

#: Metrics the alerts and the dashboard may use before the service exports them (each also listed
#: at the top of alerts.yml). Empty: everything used is exported.
FUTURE_METRICS: set[str] = set()
#: Series Prometheus itself makes for each scrape target.
PROMETHEUS_SERIES = {"up"}

_PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool"}
_PROMQL_WORDS |= {"and", "or", "unless", "offset", "inf", "nan"}


def _load_yaml(path: Path) -> Any:
    with path.open(encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def exported_metric_names(tmp_path: Path) -> set[str]:
    """Every sample name the service's registry can export (counters with _total, etc.).

    The registry of a real (unstarted) Service: the collectors of rng_service.metrics plus the
    process and platform collectors that rng_service.app adds; the generator's collector is
    registered at start, so it is added here with a fixed status.
    """
    registry = Service(make_config(tmp_path)).registry
    status = SimpleNamespace(
        state="ok", reseeds=1, health_test_failures=0, entropy_bytes_read=48, last_reseed_ns=1
    )
    registry.register(GeneratorCollector(lambda: status))
    names: set[str] = set()
    for family in registry.collect():
        suffixes = {
            "counter": ("_total",),
            "histogram": ("_bucket", "_count", "_sum"),
        }.get(family.type, ("",))
        names.update(family.name + s for s in suffixes)
        names.update(sample.name for sample in family.samples)
    return names


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression (or Grafana query) selects.

    Removes strings, label matchers, ranges and grouping clauses, then takes every identifier
    that is not a function call, a keyword or a number.
    """
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\$\w+", "", text)  # Grafana variables
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        following = text[m.end() :].lstrip()
        word = m.group(0)
        if following.startswith("(") or word.lower() in _PROMQL_WORDS:
            continue
        if m.start() > 0 and (text[m.start() - 1].isdigit() or text[m.start() - 1] == "."):
            continue  # 1e9, 0.5s and the like
        names.add(word)
    return names


def test_metric_names_parser() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (job, le) (rate(rng_x_bucket{method="a b"}[5m]))) > 0.25'
        " and on (job) (time() - rng_y_seconds > 1e3) unless rng_z <= on(job) rng_w"
    )
    assert metric_names(expr) == {"rng_x_bucket", "rng_y_seconds", "rng_z", "rng_w"}


# --- compose ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    doc = _load_yaml(COMPOSE)
    assert isinstance(doc, dict)
    return doc


def test_compose_has_service_postgres_and_prometheus(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"rng-service", "postgres", "prometheus"}
    assert services["postgres"]["image"].endswith("postgres:15")
    assert "prometheus" in services["prometheus"]["image"]
    assert services["rng-service"]["image"] == "localhost/rng-service:dev"
    assert services["rng-service"]["build"]["context"] == ".."
    assert (COMPOSE.parent / services["rng-service"]["build"]["context"] / "Dockerfile").is_file()


def test_compose_runs_the_service_hardened(compose: dict[str, Any]) -> None:
    svc = compose["services"]["rng-service"]
    uid, _, gid = str(svc["user"]).partition(":")
    assert uid.isdigit(), "the service must run as a numeric uid"
    assert int(uid) != 0, "the service must not run as root"
    assert gid.isdigit()
    assert int(gid) != 0
    assert svc["read_only"] is True
    assert any(str(t).split(":")[0] == "/tmp" for t in svc["tmpfs"])
    assert svc["cap_drop"] == ["ALL"]
    assert "no-new-privileges:true" in svc["security_opt"]
    for service in compose["services"].values():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{port} is not bound to loopback"


def _mounts(service: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Container path -> (source, options) of a service's short-form volumes."""
    mounts = {}
    for spec in service["volumes"]:
        source, target, *options = str(spec).split(":")
        mounts[target] = (source, options[0] if options else "rw")
    return mounts


def test_compose_mounts_config_and_keys_read_only(compose: dict[str, Any]) -> None:
    svc = compose["services"]["rng-service"]
    mounts = _mounts(svc)
    config_source, config_mode = mounts["/etc/rng-service/config.toml"]
    assert config_mode == "ro"
    assert (COMPOSE.parent / config_source).is_file()
    assert mounts["/etc/rng-service/keys"] == ("./keys", "ro")
    assert "./keys" not in compose.get("volumes", {})
    state_source, state_mode = mounts["/var/lib/rng-service"]
    assert state_mode == "rw"
    assert state_source in compose["volumes"]
    command = svc["command"]
    assert command[:2] == ["serve", "--config"]
    assert command[2] == "/etc/rng-service/config.toml"


def test_compose_config_points_storage_at_sqlite_on_the_volume(compose: dict[str, Any]) -> None:
    svc = compose["services"]["rng-service"]
    source, _ = _mounts(svc)["/etc/rng-service/config.toml"]
    config = load_config(COMPOSE.parent / source, environ={})
    assert config.storage.driver == "sqlite"  # the compose default; PostgreSQL is opt-in
    assert config.storage.path.parent == Path("/var/lib/rng-service")
    assert config.log.key_file.parent == Path("/etc/rng-service/keys")
    assert config.metrics.enabled
    assert config.metrics.port == 9464
    published = {str(p).rsplit(":", 1)[-1] for p in svc["ports"]}
    assert {str(config.server.port), str(config.metrics.port)} <= published
    # PostgreSQL is present for the coming driver, and the file says so
    assert "PostgreSQL storage" in COMPOSE.read_text(encoding="utf-8")


def test_compose_prometheus_loads_config_and_alerts(compose: dict[str, Any]) -> None:
    mounts = _mounts(compose["services"]["prometheus"])
    assert mounts["/etc/prometheus/prometheus.yml"] == ("./prometheus/prometheus.yml", "ro")
    assert mounts["/etc/prometheus/alerts.yml"] == ("./prometheus/alerts.yml", "ro")
    assert (
        "--config.file=/etc/prometheus/prometheus.yml"
        in compose["services"]["prometheus"]["command"]
    )


def test_prometheus_scrapes_the_service_and_loads_the_alerts() -> None:
    config = _load_yaml(PROMETHEUS)
    assert config["rule_files"] == ["alerts.yml"]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    targets = [t for sc in jobs["rng-service"]["static_configs"] for t in sc["targets"]]
    compose_config = tomllib.loads((DEPLOY / "config" / "rng-service.toml").read_text("utf-8"))
    assert targets == [f"rng-service:{compose_config['metrics']['port']}"]


# --- alerts -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def alert_rules() -> list[dict[str, Any]]:
    groups = _load_yaml(ALERTS)["groups"]
    return [rule for group in groups for rule in group["rules"]]


def test_alerts_cover_the_operations_issue(alert_rules: list[dict[str, Any]]) -> None:
    names = {rule["alert"] for rule in alert_rules}
    assert names == {
        "RngServiceDown",
        "RngGeneratorDown",
        "RngEntropyHealthTestFailures",
        "RngGeneratorNotReseeding",
        "RngLogStorageUnavailable",
        "RngCheckpointStale",
        "RngRpcErrorRate",
        "RngSpinRouletteLatencyHigh",
    }
    down = next(rule for rule in alert_rules if rule["alert"] == "RngGeneratorDown")
    assert down["expr"].strip() == "rng_generator_up == 0"
    assert "for" not in down
    assert down["labels"]["severity"] == "critical"


def test_every_alert_has_annotations_and_a_runbook_section(
    alert_rules: list[dict[str, Any]],
) -> None:
    doc = OPERATIONS.read_text(encoding="utf-8")
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in doc.splitlines()
        if line.startswith("#")
    }
    for rule in alert_rules:
        assert rule["labels"]["severity"] in {"critical", "warning"}, rule["alert"]
        annotations = rule["annotations"]
        assert annotations["summary"], rule["alert"]
        assert annotations["description"], rule["alert"]
        path, _, anchor = annotations["runbook_url"].partition("#")
        assert path == "docs/operations.md", rule["alert"]
        assert anchor == rule["alert"].lower(), rule["alert"]
        assert anchor in anchors, f"docs/operations.md has no section for {rule['alert']}"


def test_alerts_use_only_exported_metrics(
    alert_rules: list[dict[str, Any]], tmp_path: Path
) -> None:
    known = exported_metric_names(tmp_path) | FUTURE_METRICS | PROMETHEUS_SERIES
    header = ALERTS.read_text(encoding="utf-8").split("groups:")[0]
    for rule in alert_rules:
        unknown = metric_names(rule["expr"]) - known
        assert not unknown, f"{rule['alert']} uses unknown metrics {unknown}"
    for name in FUTURE_METRICS:
        assert name in header, f"alerts.yml does not list the future metric {name}"


# --- dashboard --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    doc = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def dashboard_queries(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, expression) of every panel target and templating query."""
    queries = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            queries.append((panel["title"], target["expr"]))
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            # label_values(SERIES, LABEL): only SERIES is PromQL
            m = re.fullmatch(r"label_values\((.*),\s*\w+\)", var["definition"].strip())
            assert m, var["definition"]
            queries.append((f"${var['name']}", m.group(1)))
    return queries


def test_dashboard_is_a_grafana_dashboard(dashboard: dict[str, Any]) -> None:
    assert 36 <= dashboard["schemaVersion"] <= 41
    assert dashboard["uid"] == "rng-service"
    assert dashboard["title"]
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        if panel["type"] != "row":
            assert panel["targets"], panel["title"]
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}


def test_dashboard_has_the_operations_panels(dashboard: dict[str, Any]) -> None:
    exprs = " ".join(expr for _, expr in dashboard_queries(dashboard))
    for metric in (
        "rng_outcomes_total",  # outcomes/s by kind
        "rng_rpc_duration_seconds_bucket",  # latency p50/p99 by method
        "rng_rpc_duration_seconds_count",  # errors by code
        "rng_log_commit_group_size_bucket",
        "rng_log_append_duration_seconds_bucket",
        "rng_log_entries",
        "rng_generator_state",
        "rng_generator_reseeds_total",
        "rng_entropy_health_test_failures_total",
        "rng_entropy_read_bytes_total",
        "rng_log_last_checkpoint_timestamp_seconds",
    ):
        assert metric in exprs, metric


def test_dashboard_uses_only_exported_metrics(dashboard: dict[str, Any], tmp_path: Path) -> None:
    known = exported_metric_names(tmp_path) | FUTURE_METRICS | PROMETHEUS_SERIES
    for title, expr in dashboard_queries(dashboard):
        unknown = metric_names(expr) - known
        assert not unknown, f"panel {title!r} uses unknown metrics {unknown}"


# --- backup and restore (docs/operations.md) ---------------------------------------------------


def test_online_sqlite_backup_while_serving_restores_the_log(tmp_path: Path) -> None:
    live_dir, restored_dir = tmp_path / "live", tmp_path / "restored"
    live_dir.mkdir()
    restored_dir.mkdir()
    config = make_config(live_dir)
    backup = tmp_path / "outcome-log.backup.sqlite3"
    running = start(config)
    try:
        first = [running.spin(f"backup-{i}") for i in range(5)]
        # The online-backup API that `sqlite3 DB ".backup FILE"` uses, while the service runs:
        # a consistent snapshot that includes the commits still in the -wal file.
        with sqlite3.connect(backup) as dst:
            src = sqlite3.connect(f"file:{config.storage.path}?mode=ro", uri=True)
            try:
                src.backup(dst)
            finally:
                src.close()
        running.spin("after-backup")  # issued after the snapshot: not in the backup
    finally:
        running.stop()
    with sqlite3.connect(backup) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT count(*) FROM entries").fetchone() == (5,)

    # Restore into an empty state directory (no stale -wal/-shm), with the same key.
    shutil.copyfile(backup, restored_dir / "log.sqlite3")
    shutil.copyfile(config.log.key_file, restored_dir / "key.pem")
    restored = start(make_config(restored_dir))
    try:
        assert restored.service.appender is not None
        assert restored.service.appender.tree_size == 5
        again = restored.spin("backup-2")
        assert again.receipt.replayed
        assert again.receipt.entry == first[2].receipt.entry
    finally:
        restored.stop()
