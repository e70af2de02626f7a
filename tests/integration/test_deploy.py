"""The deployment files under deploy/: compose file, Prometheus config, alerts, Grafana dashboard.

Static checks that need no container runtime (none runs on the development machines): the files
parse, the compose file runs the service hardened (non-root, read-only root, read-only config,
keys and TLS material, loopback-only ports) next to PostgreSQL and Prometheus, and every metric name
that the alerts and the dashboard use is one the service exports (or one of the few listed below
that the lead is adding). promtool's own checks are in test_metrics_promtool.py.

The TLS set-up is checked across the Dockerfile, the compose file and the compose config (every
path one of them names is one the others provide), and then for real: a service with the
compose config's [tls] and [[clients]] (development certificates) answers the Dockerfile's own
HEALTHCHECK command, and the healthcheck identity can do nothing else.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import socket
import sqlite3
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

from rng_service.cli.service import main as rng_service_main
from rng_service.config import Config, check_transport, load_config
from rng_service.metrics import GeneratorCollector, StoreCollector
from rng_service.process.app import Service
from tests.integration.conftest import make_config, start
from tests.integration.dockerfile import instructions as dockerfile_instructions

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
WITNESS_ALERTS = DEPLOY / "prometheus" / "witness-alerts.yml"
DASHBOARD = DEPLOY / "grafana" / "rng-service-dashboard.json"
DOCKERFILE = ROOT / "Dockerfile"
DEPLOY_CONFIG = DEPLOY / "config" / "rng-service.toml"
TLS_DIR = "/etc/rng-service/tls"

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
    process and platform collectors that rng_service.process.app adds; the generator's collector is
    registered at start, so it is added here with a fixed status, as is the log store's.
    """
    registry = Service(make_config(tmp_path)).registry
    status = SimpleNamespace(
        state="ok", reseeds=1, health_test_failures=0, entropy_bytes_read=48, last_reseed_ns=1
    )
    registry.register(GeneratorCollector(lambda: status))
    store = SimpleNamespace(state="up", probes=0, probe_failures=0)
    registry.register(StoreCollector(lambda: store))
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
    # PostgreSQL is there for the postgres driver, and both files say how to switch to it
    # (with the compose service's host, database and user), never that it is missing
    compose_text = COMPOSE.read_text(encoding="utf-8")
    config_text = (COMPOSE.parent / source).read_text(encoding="utf-8")
    postgres = compose["services"]["postgres"]["environment"]
    db, user = postgres["POSTGRES_DB"], postgres["POSTGRES_USER"]
    dsn = f'postgres_dsn = "host=postgres dbname={db} user={user}"'
    for text in (compose_text, config_text):
        assert 'driver = "postgres"' in text
        assert dsn in text
        assert "not written yet" not in text
        assert "once that issue lands" not in text
    # the commented settings are valid as they stand
    switched = load_config(
        None,
        environ={
            "RNG_SERVICE__STORAGE__DRIVER": "postgres",
            "RNG_SERVICE__STORAGE__POSTGRES_DSN": dsn.split('"')[1],
            "RNG_SERVICE__STORAGE__POSTGRES_PASSWORD_ENV": "RNG_LOG_DB_PASSWORD",
        },
    )
    assert switched.storage.driver == "postgres"


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


# --- TLS: Dockerfile, compose file and compose config agree ---------------------------------


def dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for word, rest in dockerfile_instructions():
        if word == "ENV":
            for item in rest.split():
                key, _, value = item.partition("=")
                env[key] = value
    return env


def dockerfile_exec_form(instruction: str) -> list[str]:
    """The exec-form argv of the last CMD or of the HEALTHCHECK's CMD."""
    found: list[str] = []
    for word, rest in dockerfile_instructions():
        if word == instruction == "CMD":
            found = json.loads(rest)
        elif word == instruction == "HEALTHCHECK":
            found = json.loads(rest[rest.index("CMD ") + 4 :])
    assert found, f"no {instruction} in exec form in the Dockerfile"
    return found


def _option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_dockerfile_healthcheck_uses_mtls_and_the_image_expects_tls() -> None:
    env = dockerfile_env()
    assert env["RNG_SERVICE__SERVER__HOST"] == "0.0.0.0"
    assert env["RNG_SERVICE__TLS__CERT_FILE"] == f"{TLS_DIR}/server.pem"
    assert env["RNG_SERVICE__TLS__KEY_FILE"] == f"{TLS_DIR}/server.key"
    assert env["RNG_SERVICE__TLS__CLIENT_CA_FILE"] == f"{TLS_DIR}/ca.pem"
    # The image's own environment starts with mTLS on 0.0.0.0 (no plaintext refusal).
    image_config = load_config(None, environ=env)
    assert image_config.tls.enabled
    check_transport(image_config)
    health = dockerfile_exec_form("HEALTHCHECK")
    assert health[:2] == ["rng-service", "call"]
    assert health[-1] == "health"
    # The check reads the CMD's own config file (and the same RNG_SERVICE__* variables), so it
    # follows the configured port; a fixed --target would not.
    assert "--target" not in health
    cmd = dockerfile_exec_form("CMD")
    assert cmd == ["serve", "--config", "/etc/rng-service/config.toml"]
    assert _option(health, "--config") == _option(cmd, "--config")
    assert _option(health, "--ca") == f"{TLS_DIR}/ca.pem"
    assert _option(health, "--cert") == f"{TLS_DIR}/healthcheck.pem"
    assert _option(health, "--tls-key") == f"{TLS_DIR}/healthcheck.key"


@pytest.fixture(scope="module")
def deploy_config() -> Config:
    return load_config(DEPLOY_CONFIG, environ={})


def test_compose_config_has_tls_and_least_privilege_clients(deploy_config: Config) -> None:
    config = deploy_config
    assert config.server.host == "0.0.0.0"
    assert config.tls.enabled
    check_transport(config)  # 0.0.0.0 is allowed because the port is mTLS
    env = dockerfile_env()
    # The image's RNG_SERVICE__TLS__* variables override the file: they must say the same.
    assert config.tls.cert_file == env["RNG_SERVICE__TLS__CERT_FILE"]
    assert config.tls.key_file == env["RNG_SERVICE__TLS__KEY_FILE"]
    assert config.tls.client_ca_file == env["RNG_SERVICE__TLS__CLIENT_CA_FILE"]
    clients = {c.identity: c for c in config.clients}
    assert clients["game-1"].roles == ("game_server",)
    assert clients["game-1"].tables
    assert "*" not in clients["game-1"].tables
    assert clients["auditor-1"].roles == ("auditor",)
    # The health service is not role-checked: the healthcheck identity needs no entry, and
    # without one it may call nothing else.
    assert "healthcheck" not in clients


def test_compose_mounts_exactly_the_tls_files_read_only(
    compose: dict[str, Any], deploy_config: Config
) -> None:
    mounts = _mounts(compose["services"]["rng-service"])
    tls_mounts = {t: m for t, m in mounts.items() if t.startswith(TLS_DIR)}
    health = dockerfile_exec_form("HEALTHCHECK")
    wanted = {
        deploy_config.tls.cert_file,
        deploy_config.tls.key_file,
        deploy_config.tls.client_ca_file,
        _option(health, "--ca"),
        _option(health, "--cert"),
        _option(health, "--tls-key"),
    }
    # File by file: never the whole ./tls directory (the development CA's key and the other
    # clients' keys are there too).
    assert set(tls_mounts) == wanted
    for target, (source, mode) in tls_mounts.items():
        assert mode == "ro", target
        assert source == "./tls/" + target.removeprefix(TLS_DIR + "/"), target
    assert not any(source.endswith("ca.key") for source, _ in mounts.values())
    gitignore = (DEPLOY / ".gitignore").read_text(encoding="utf-8").split()
    assert "/tls/" in gitignore, "deploy/tls/ holds private keys: keep it out of git"
    # The documented command makes every mounted file (dev-ca's names: <name>.pem, <name>.key).
    text = COMPOSE.read_text(encoding="utf-8") + DEPLOY_CONFIG.read_text(encoding="utf-8")
    assert "rng-service dev-ca --out tls" in text
    made = {"ca.pem", "server.pem", "server.key"}
    for m in re.finditer(r"--client ([^:\s]+)", text):  # NAME[:ROLE[:TABLES]]
        made |= {f"{m.group(1)}.pem", f"{m.group(1)}.key"}
    assert {source.removeprefix("./tls/") for source, _ in tls_mounts.values()} <= made


def test_the_healthcheck_works_over_mtls_with_the_compose_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The compose config's [tls] and [[clients]], with development certificates in place of
    /etc/rng-service/tls and the gRPC port changed in the file: the Dockerfile's HEALTHCHECK
    command (its --config naming that file) finds the port and answers SERVING, the healthcheck
    identity may not draw, the game server draws for its tables only, plaintext is refused."""
    from rng_service.rpc.client import ClientError, ClientTls, RngClient
    from rng_service.security.certs import write_dev_ca

    certs = tmp_path / "tls"
    write_dev_ca(certs, ["game-1", "auditor-1", "healthcheck"], now=dt.datetime.now(dt.UTC))
    with socket.socket() as probe:  # a free loopback port, not the default 50051
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    text = DEPLOY_CONFIG.read_text(encoding="utf-8")
    assert text.count("port = 50051\n") == 1
    config_file = tmp_path / "config.toml"
    config_file.write_text(text.replace("port = 50051\n", f"port = {port}\n"), encoding="utf-8")
    base = make_config(tmp_path)
    environ = {
        "RNG_SERVICE__SERVER__HOST": "127.0.0.1",  # tests listen on loopback only
        "RNG_SERVICE__METRICS__ENABLED": "false",
        "RNG_SERVICE__STORAGE__PATH": str(base.storage.path),
        "RNG_SERVICE__LOG__KEY_FILE": str(base.log.key_file),
        "RNG_SERVICE__LOG__KEY_NAME": base.log.key_name,
    }
    local = {TLS_DIR + "/" + p.name: str(p) for p in certs.iterdir()}
    tls = load_config(DEPLOY_CONFIG, environ={}).tls
    config = load_config(
        config_file,
        environ={
            **environ,
            "RNG_SERVICE__TLS__CERT_FILE": local[tls.cert_file],
            "RNG_SERVICE__TLS__KEY_FILE": local[tls.key_file],
            "RNG_SERVICE__TLS__CLIENT_CA_FILE": local[tls.client_ca_file],
        },
    )
    assert config.server.port == port
    running = start(config)
    try:
        target = f"127.0.0.1:{running.port}"
        health = dockerfile_exec_form("HEALTHCHECK")[2:]  # after "rng-service call"
        # As in the container: the CMD's config file (here with 0.0.0.0, so 127.0.0.1 is called)
        health[health.index("--config") + 1] = str(config_file)
        for option in ("--ca", "--cert", "--tls-key"):
            health[health.index(option) + 1] = local[_option(health, option)]
        capsys.readouterr()
        assert rng_service_main(["call", *health]) == 0
        assert capsys.readouterr().out.strip() == "SERVING"

        def client(identity: str) -> RngClient:
            tls = ClientTls.from_files(
                certs / "ca.pem", certs / f"{identity}.pem", certs / f"{identity}.key"
            )
            return RngClient(target, tls=tls, timeout=10)

        spin = {"wheel": "double_zero", "round_id": "R1"}
        with client("healthcheck") as c:
            with pytest.raises(ClientError) as denied:
                c.spin(table_id="T1", request_id="hc-1", **spin)
            assert denied.value.code == "UNAUTHENTICATED"
        with client("game-1") as c:
            assert c.spin(table_id="T1", request_id="g-1", **spin).receipt.index == 0
            with pytest.raises(ClientError) as denied:
                c.spin(table_id="T9", request_id="g-2", **spin)
            assert denied.value.code == "PERMISSION_DENIED"
        with RngClient(target, timeout=5) as plain, pytest.raises(ClientError) as refused:
            plain.health()
        assert refused.value.code == "UNAVAILABLE"
    finally:
        running.stop()


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
        "RngLogStoreDown",
        "RngLogIntegrityError",
        "RngLogStoreFailover",
        "RngCheckpointStale",
        "RngRpcErrorRate",
        "RngRpcRefusals",
        "RngSpinRouletteLatencyHigh",
        "RngWitnessConflict",
        "RngWitnessDown",
        "RngWitnessQuorumLost",
    }
    down = next(rule for rule in alert_rules if rule["alert"] == "RngGeneratorDown")
    assert down["expr"].strip() == "rng_generator_up == 0"
    assert "for" not in down
    assert down["labels"]["severity"] == "critical"
    conflict = next(rule for rule in alert_rules if rule["alert"] == "RngWitnessConflict")
    assert conflict["expr"].strip() == "increase(rng_witness_conflicts_total[15m]) > 0"
    assert "for" not in conflict  # an alarm: at once
    assert conflict["labels"]["severity"] == "critical"
    store = next(rule for rule in alert_rules if rule["alert"] == "RngLogStoreDown")
    assert store["expr"].strip() == "rng_log_store_up == 0"
    assert store["labels"]["severity"] == "critical"


def test_every_alert_has_annotations_and_a_runbook_section(
    alert_rules: list[dict[str, Any]],
) -> None:
    for rule in alert_rules:
        assert rule["labels"]["severity"] in {"critical", "warning"}, rule["alert"]
        annotations = rule["annotations"]
        assert annotations["summary"], rule["alert"]
        assert annotations["description"], rule["alert"]
        path, _, anchor = annotations["runbook_url"].partition("#")
        assert path == "docs/operations/monitoring.md", rule["alert"]
        assert anchor == rule["alert"].lower(), rule["alert"]
        assert anchor in _anchors(ROOT / path), f"{path} has no section for {rule['alert']}"


def _anchors(doc: Path) -> set[str]:
    """The GitHub anchors of ``doc``'s headings (outside code blocks)."""
    anchors, fence = set(), False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        elif line.startswith("#") and not fence:
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^a-z0-9 -]", "", title).replace(" ", "-"))
    return anchors


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


def witness_metric_names() -> set[str]:
    """Every sample name rng-witness's registry exports (rng_service.witness.metrics)."""
    from prometheus_client import CollectorRegistry

    from rng_service.witness.metrics import StateCollector, WitnessMetrics

    registry = CollectorRegistry()
    WitnessMetrics(registry, name="w.example/w", version="1", origins=["o"], heads=[])
    registry.register(StateCollector(lambda: None))
    names: set[str] = set()
    for family in registry.collect():
        names.update(sample.name for sample in family.samples)
    return names


def test_witness_alerts_use_its_series_and_have_runbooks() -> None:
    """witness-alerts.yml: the witness's own series only (never the service's view of its
    witnesses, rng_witness_up and the like), each rule with a runbook section in
    docs/operations/witnesses.md, and the fork alert critical and at once."""
    rules = [r for g in _load_yaml(WITNESS_ALERTS)["groups"] for r in g["rules"]]
    assert {r["alert"] for r in rules} == {
        "RngWitnessServerLogForked", "RngWitnessServerStateUnavailable", "RngWitnessServerDown",
    }  # fmt: skip
    known = witness_metric_names() | PROMETHEUS_SERIES
    for rule in rules:
        used = metric_names(rule["expr"])
        assert used, rule["alert"]
        assert not used - known, (rule["alert"], used - known)
        assert rule["labels"]["service"] == "rng-witness"
        path, _, anchor = rule["annotations"]["runbook_url"].partition("#")
        assert path == "docs/operations/witnesses.md", rule["alert"]
        assert anchor == rule["alert"].lower()
        assert anchor in _anchors(ROOT / path), f"{path}: no section {rule['alert']}"
    forked = next(r for r in rules if r["alert"] == "RngWitnessServerLogForked")
    assert forked["labels"]["severity"] == "critical"
    assert "for" not in forked  # an alarm: at once


_SERIES = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)\{(?P<labels>.*)\}$")


def _series_labels(series: str) -> tuple[str, dict[str, str]]:
    m = _SERIES.match(series.strip())
    assert m, series
    labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group("labels")))
    return m.group("name"), labels


def _rpc_matchers(expr: str) -> list[str]:
    """The label matchers of every rng_rpc_duration_seconds selector in an expression."""
    return re.findall(r"rng_rpc_duration_seconds_\w+\{([^}]*)\}", expr)


def test_rpc_rules_and_panels_class_calls_by_the_tables_class_label(
    alert_rules: list[dict[str, Any]], dashboard: dict[str, Any]
) -> None:
    """Refusal or failure is decided by the one table (the ``class`` label), never by a list of
    status codes in a rule or a panel, which would drift from it."""
    exprs = [(r["alert"], r["expr"]) for r in alert_rules] + dashboard_queries(dashboard)
    classes = set()
    for where, expr in exprs:
        for matchers in _rpc_matchers(expr):
            assert "code" not in re.findall(r"(\w+)\s*[!=]~?", matchers), (where, matchers)
            classes.update(re.findall(r'class="(\w+)"', matchers))
    assert classes == {"failure", "refusal"}
    rules = {r["alert"]: r["expr"] for r in alert_rules}
    assert 'class="failure"' in rules["RngRpcErrorRate"]
    assert 'class="refusal"' in rules["RngRpcRefusals"]


def test_alert_unit_tests_show_a_refusal_burst_quiet_and_an_error_burst_firing() -> None:
    """The promtool scenario itself (run by test_metrics_promtool.py): its RPC series carry
    the labels the service exports, each with the class the table gives, and the error alert
    fires for the instance with failures and not for the one with (many more) refusals."""
    from rng_service.rpc.errors import classify

    spec = _load_yaml(DEPLOY / "prometheus" / "alerts_test.yml")
    group = next(
        t
        for t in spec["tests"]
        if any(a["alertname"] == "RngRpcErrorRate" for a in t["alert_rule_test"])
    )
    per_instance: dict[str, dict[str, float]] = {}
    for item in group["input_series"]:
        name, labels = _series_labels(item["series"])
        assert name == "rng_rpc_duration_seconds_count"
        assert set(labels) == {"job", "instance", "method", "code", "cause", "class"}
        row = classify(grpc.StatusCode[labels["code"]], labels["cause"])
        assert (row.cause, row.call_class.value) == (labels["cause"], labels["class"]), labels
        step = float(item["values"].split("+")[1].split("x")[0])
        klass = per_instance.setdefault(labels["instance"], {})
        klass[labels["class"]] = klass.get(labels["class"], 0.0) + step
    fired = [
        {a["exp_labels"]["instance"] for a in test["exp_alerts"]}
        for test in group["alert_rule_test"]
        if test["alertname"] == "RngRpcErrorRate" and test["exp_alerts"]
    ]
    assert fired
    refusal_burst = [
        i for i, c in per_instance.items() if c.get("refusal", 0) > 0.3 * sum(c.values())
    ]
    error_burst = [
        i for i, c in per_instance.items() if c.get("failure", 0) > 0.01 * sum(c.values())
    ]
    assert refusal_burst
    assert error_burst
    for instances in fired:
        assert set(error_burst) <= instances
        assert not set(refusal_burst) & instances


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
        "rng_auth_denials_total",  # refusals by client
    ):
        assert metric in exprs, metric


def test_dashboard_uses_only_exported_metrics(dashboard: dict[str, Any], tmp_path: Path) -> None:
    known = exported_metric_names(tmp_path) | FUTURE_METRICS | PROMETHEUS_SERIES
    for title, expr in dashboard_queries(dashboard):
        unknown = metric_names(expr) - known
        assert not unknown, f"panel {title!r} uses unknown metrics {unknown}"


# --- backup and restore (docs/operations/backup-and-upgrades.md)
# -----------------------------------------------


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
