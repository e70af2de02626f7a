"""Configuration: defaults, TOML, environment overrides, and errors that name the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from rng_service.config import ConfigError, load_config


def test_defaults_are_loopback_and_sqlite(tmp_path: Path) -> None:
    config = load_config(None, environ={}, base_dir=tmp_path)
    assert config.server.host == "127.0.0.1"
    assert config.server.port == 50051
    assert config.storage.driver == "sqlite"
    assert config.storage.path == tmp_path / "var/outcome-log.sqlite3"
    assert config.log.key_file.is_absolute()


def test_toml_then_environment(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[server]\nport = 6000\n[log]\norigin = "casino.example/log"\n')
    config = load_config(
        path,
        environ={"RNG_SERVICE__SERVER__PORT": "6001", "RNG_SERVICE__METRICS__ENABLED": "false"},
        base_dir=tmp_path,
    )
    assert config.server.port == 6001
    assert config.metrics.enabled is False
    assert config.log.origin == "casino.example/log"


def test_shipped_dev_config_loads() -> None:
    root = Path(__file__).resolve().parents[2]
    config = load_config(root / "config/dev.toml", environ={}, base_dir=root)
    assert config.server.port == 50051
    # The README's `rng-service pubkey --name rng-service.local-dev` names the dev log's key.
    assert config.log.key_name == config.log.origin == "rng-service.local-dev"
    assert config.profiles.allow_examples is True  # development serves the example profile


def test_the_key_is_named_by_the_origin_unless_named(tmp_path: Path) -> None:
    config = load_config(None, environ={}, base_dir=tmp_path)
    assert config.log.key_name == config.log.origin == "rng-service.local/log"
    assert config.log.cosign_key_name == config.log.origin
    assert config.log.startup_check == "incremental"
    assert config.server.lock_dir == tmp_path / "var/run"
    path = tmp_path / "c.toml"
    path.write_text('[log]\norigin = "casino.example/rng-log"\n')
    assert load_config(path, environ={}).log.key_name == "casino.example/rng-log"
    path.write_text('[log]\norigin = "casino.example/rng-log"\nkey_name = "old-name"\n')
    assert load_config(path, environ={}).log.key_name == "old-name"
    path.write_text('[log]\norigin = "a log with spaces"\n')
    with pytest.raises(ConfigError, match=r"log\.key_name: .*defaults to log\.origin"):
        load_config(path, environ={})


def test_profiles_section(tmp_path: Path) -> None:
    default = load_config(None, environ={}, base_dir=tmp_path)
    assert (default.profiles.directory, default.profiles.allow_examples) == ("", False)
    path = tmp_path / "c.toml"
    path.write_text('[profiles]\ndirectory = "approved"\n')
    config = load_config(
        path, environ={"RNG_SERVICE__PROFILES__ALLOW_EXAMPLES": "true"}, base_dir=tmp_path
    )
    assert config.profiles.directory == str(tmp_path / "approved")
    assert config.profiles.allow_examples is True


@pytest.mark.parametrize(
    ("toml", "env", "expected"),
    [
        ("[server]\nport = 70000\n", {}, "server.port"),
        ('[server]\nport = "x"\n', {}, "server.port"),
        ('[server]\nhost = "example.com"\n', {}, "server.host"),
        ("[server]\nbogus = 1\n", {}, "server.bogus: unknown setting"),
        ("[nope]\n", {}, "nope: unknown section"),
        ('[storage]\ndriver = "mysql"\n', {}, "storage.driver"),
        ('[log]\nkey_name = "a b"\n', {}, "log.key_name"),
        ('[log]\nstartup_check = "never"\n', {}, "log.startup_check"),
        ("[log]\nmax_group_size = 0\n", {}, "log.max_group_size"),
        ("[log]\ngroup_lull_seconds = -0.001\n", {}, "log.group_lull_seconds"),
        ("", {"RNG_SERVICE__LOG__GROUP_LULL_SECONDS": "0.5"}, "log.group_lull_seconds"),
        ("[generator]\nreseed_interval_requests = 0\n", {}, "generator.reseed_interval_requests"),
        ("", {"RNG_SERVICE__SERVER__PORT": "abc"}, "server.port"),
        ("", {"RNG_SERVICE__BOGUS": "1"}, "RNG_SERVICE__BOGUS"),
        ("not toml [", {}, "not valid TOML"),
        ('[profiles]\nallow_examples = "yes"\n', {}, "profiles.allow_examples"),
        ("[profiles]\ndirectory = 1\n", {}, "profiles.directory"),
        ('[profiles]\nfolder = "x"\n', {}, "profiles.folder: unknown setting"),
    ],
)
def test_errors_name_the_setting_and_allowed_values(
    tmp_path: Path, toml: str, env: dict[str, str], expected: str
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError, match=expected.replace(".", r"\.")) as info:
        load_config(path, environ=env, base_dir=tmp_path)
    text = str(info.value)
    assert "allowed" in text or "TOML" in text


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.toml", environ={})


@pytest.mark.parametrize(
    ("name", "wanted", "setting"),
    [
        # The usual slip: single underscores everywhere.
        ("RNG_SERVICE_SERVER_PORT", "RNG_SERVICE__SERVER__PORT", "server.port"),
        # Section and key names that hold underscores themselves.
        ("RNG_SERVICE_RATE_LIMIT_BURST", "RNG_SERVICE__RATE_LIMIT__BURST", "rate_limit.burst"),
        (
            "RNG_SERVICE_LOG_PUBLISH_INTERVAL_SECONDS",
            "RNG_SERVICE__LOG__PUBLISH_INTERVAL_SECONDS",
            "log.publish_interval_seconds",
        ),
        # Half right: the double underscore after the prefix but not between section and key,
        # or the other way round.
        ("RNG_SERVICE__STORAGE_PATH", "RNG_SERVICE__STORAGE__PATH", "storage.path"),
        ("RNG_SERVICE_METRICS__ENABLED", "RNG_SERVICE__METRICS__ENABLED", "metrics.enabled"),
    ],
)
def test_single_underscore_environment_names_are_refused_naming_the_right_one(
    tmp_path: Path, name: str, wanted: str, setting: str
) -> None:
    # A valid value: the name alone is the mistake. Silently ignoring it would leave the
    # service on its default (the port, the storage path) with nobody told.
    value = {"server.port": "6001", "storage.path": "x.sqlite3", "metrics.enabled": "false"}
    env = {name: value.get(setting, "1")}
    with pytest.raises(ConfigError) as info:
        load_config(None, environ=env, base_dir=tmp_path)
    text = str(info.value)
    assert text.startswith(f"{name}: not a setting; use {wanted} for {setting} ")
    assert "allowed: RNG_SERVICE__<SECTION>__<KEY>" in text
    # The name it suggests is one the loader accepts.
    load_config(None, environ={wanted: env[name]}, base_dir=tmp_path)


def test_unknown_service_environment_name_lists_the_form_and_sections(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, environ={"RNG_SERVICE_PORTT": "1"}, base_dir=tmp_path)
    text = str(info.value)
    assert text.startswith("RNG_SERVICE_PORTT: not a setting (allowed: RNG_SERVICE__<SECTION>")
    assert "use " not in text  # nothing close enough to suggest
    assert "SERVER" in text
    assert "RATE_LIMIT" in text


def test_other_environment_names_are_left_alone(tmp_path: Path) -> None:
    # Only the service's own family is checked: RNG_SERVICES_X or RNGSERVICE are not ours.
    env = {"RNG_SERVICES_PORT": "1", "RNG_KEY_PASSPHRASE": "x", "RNG_LOG_DB_PASSWORD": "y"}
    assert load_config(None, environ=env, base_dir=tmp_path).server.port == 50051


# -- [witnessing] and [[witnesses]] ----------------------------------------------------------

WITNESS_KEY = "w1.example/w+dee2524c+BAQg64lb5zm1hrouqThNb0L2YrGJc5K9b+cgMSUZ/yZO"


def _witness_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_witnesses_and_their_policy(tmp_path: Path) -> None:
    path = _witness_config(
        tmp_path,
        f"[witnessing]\nmin_witnesses = 2\ninterval_seconds = 0.5\n"
        f'[[witnesses]]\nurl = "https://w1.example:7380/"\nkey = "{WITNESS_KEY}"\n'
        f'[[witnesses]]\nurl = "http://127.0.0.1:7381"\nkey = "w2.vkey"\nname = "lab"\n',
    )
    config = load_config(path, environ={}, base_dir=tmp_path)
    assert [w.url for w in config.witnesses] == ["https://w1.example:7380", "http://127.0.0.1:7381"]
    assert config.witnesses[0].key == WITNESS_KEY  # a key, kept as it is
    assert config.witnesses[1].key == str(tmp_path / "w2.vkey")  # a file, resolved
    assert config.witnessing.min_witnesses == 2
    # Without [witnessing]: one witness must cosign when there are witnesses, none without.
    one = _witness_config(tmp_path, f'[[witnesses]]\nurl = "http://w"\nkey = "{WITNESS_KEY}"\n')
    assert load_config(one, environ={}).witnessing.min_witnesses == 1
    assert load_config(None, environ={}).witnessing.min_witnesses == 0
    env = {"RNG_SERVICE__WITNESSING__TIMEOUT_SECONDS": "2.5"}
    assert load_config(one, environ=env).witnessing.timeout_seconds == 2.5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[witnesses]]\nurl = "ftp://w"\nkey = "k+1+2"\n', "witnesses[0].url"),
        ('[[witnesses]]\nurl = "http://w"\n', "witnesses[0].key"),
        ('[[witnesses]]\nurl = "http://w"\nkey = "k+1+2"\nca_file = "ca.pem"\n',
         "witnesses[0].ca_file"),
        ('[[witnesses]]\nurl = "http://w"\nkey = "k+1+2"\nport = 1\n', "witnesses[0].port"),
        ('[[witnesses]]\nurl = "http://w"\nkey = "k+1+2"\n[[witnesses]]\nurl = "http://w/"\n'
         'key = "k+1+2"\n', "witnesses[1].url"),
        ('[witnessing]\nmin_witnesses = 2\n[[witnesses]]\nurl = "http://w"\nkey = "k+1+2"\n',
         "witnessing.min_witnesses"),
        ("[witnessing]\nrequire_at_startup = true\n", "witnessing.require_at_startup"),
        ("[witnessing]\ntimeout_seconds = 0\n", "witnessing.timeout_seconds"),
        ("[witnessing]\ninterval_seconds = 0.01\n", "witnessing.interval_seconds"),
        ("witnesses = 3\n", "witnesses: must be an array of tables"),
    ],
)  # fmt: skip
def test_witness_settings_errors_name_the_setting(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_config(_witness_config(tmp_path, text), environ={})
