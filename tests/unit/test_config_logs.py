"""``[[logs]]``: several logs in one configuration, their bindings, and the one-line refusals
of what one deployment cannot mean (docs/operations/configuration.md, "Several logs")."""

from __future__ import annotations

from pathlib import Path

import pytest

from rng_service.config import Config, ConfigError, load_config

W1 = "witness.a/w1+01020304+AAAA"
W2 = "witness.c/w2+05060708+BBBB"


def _logs(d: Path) -> str:
    return f"""
[[witnesses]]
url = "http://127.0.0.1:9/a"
key = "{W1}"
[[witnesses]]
url = "http://127.0.0.1:9/c"
key = "{W2}"

[[logs]]
origin = "casino-a.example/log"
key_file = "keys/a.pem"
store = "var/a.sqlite3"
witnesses = ["witness.a/w1"]
port = 50061
metrics_port = 9561
profiles = ["mega-fire-blaze"]
retired_keys = ["casino-a.example/log+0a0b0c0d+CCCC"]

[[logs]]
origin = "casino-b.example/log"
key_file = "{d}/keys/b.pem"
store = "{d}/var/b.sqlite3"
port = 50062
metrics_port = 9562
publish_interval_seconds = 2.5

[[logs]]
origin = "casino-c.example/log"
key_file = "keys/c.pem"
store = "postgresql://rng@db-c.example:5433/rng_c"
postgres_password_env = "RNG_C_DB_PASSWORD"
witnesses = ["witness.c/w2"]
min_witnesses = 1
port = 50063
metrics_port = 9563

[[clients]]
identity = "game-a"
roles = ["game_server"]
tables = ["T1"]
logs = ["casino-a.example/log"]

[[clients]]
identity = "game-b"
roles = ["game_server"]
tables = ["T1"]
logs = ["casino-b.example/log"]

[[clients]]
identity = "auditor-ac"
roles = ["auditor"]
logs = ["casino-a.example/log", "casino-c.example/log"]

[[clients]]
identity = "operator"
roles = ["operator"]
logs = ["*"]
"""


def _load(d: Path, text: str) -> Config:
    path = d / "c.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path, environ={}, base_dir=d)


def _refused(d: Path, text: str) -> str:
    with pytest.raises(ConfigError) as e:
        _load(d, text)
    message = str(e.value)
    assert "\n" not in message
    return message


def test_the_single_log_sections_are_one_log(tmp_path: Path) -> None:
    config = _load(tmp_path, '[log]\norigin = "casino.example/log"\n')
    assert config.logs == ()
    assert config.origins == ("casino.example/log",)
    assert config.select(None) is config
    assert config.for_log("casino.example/log") is config
    with pytest.raises(ConfigError, match=r"^origin: 'other' is not a configured log"):
        config.select("other")


def test_three_logs_each_as_its_own_single_log(tmp_path: Path) -> None:
    config = _load(tmp_path, _logs(tmp_path))
    assert config.origins == (
        "casino-a.example/log", "casino-b.example/log", "casino-c.example/log"
    )  # fmt: skip
    assert config.serving == ""
    a = config.for_log("casino-a.example/log")
    assert a.serving == a.log.origin == a.log.key_name == "casino-a.example/log"
    assert a.log.key_file == tmp_path / "keys/a.pem"
    assert a.storage.driver == "sqlite"
    assert a.storage.path == tmp_path / "var/a.sqlite3"
    assert [w.key for w in a.witnesses] == [W1]
    assert a.witnessing.min_witnesses == 1  # -1: one, as it has a witness
    assert a.server.port == 50061
    assert a.metrics.port == 9561
    assert a.profiles.names == ("mega-fire-blaze",)
    assert a.log.retired_key_items() == ("casino-a.example/log+0a0b0c0d+CCCC",)
    b = config.for_log("casino-b.example/log")
    assert b.storage.path == tmp_path / "var/b.sqlite3"
    assert b.witnesses == ()
    assert b.log.publish_interval_seconds == 2.5
    assert a.log.publish_interval_seconds == 10.0  # [log]'s, shared
    c = config.for_log("casino-c.example/log")
    assert c.storage.driver == "postgres"
    assert c.storage.postgres_dsn == "postgresql://rng@db-c.example:5433/rng_c"
    assert c.storage.postgres_password_env == "RNG_C_DB_PASSWORD"
    assert [w.key for w in c.witnesses] == [W2]
    by_identity = {cl.identity: config.client_logs(cl) for cl in config.clients}
    assert by_identity == {
        "game-a": {"casino-a.example/log"},
        "game-b": {"casino-b.example/log"},
        "auditor-ac": {"casino-a.example/log", "casino-c.example/log"},
        "operator": set(config.origins),
    }
    with pytest.raises(ConfigError, match=r"^origin: 3 \[\[logs\]\] are configured; name one"):
        config.select(None)
    assert config.select("casino-b.example/log") == b


def test_one_logs_entry_is_served_as_the_log(tmp_path: Path) -> None:
    config = _load(
        tmp_path,
        '[[logs]]\norigin = "only.example/log"\nkey_file = "k.pem"\nstore = "only.sqlite3"\n',
    )
    assert config.serving == config.log.origin == "only.example/log"
    assert config.storage.path == tmp_path / "only.sqlite3"
    assert config.select(None) is config


def test_a_witness_of_the_only_logs_entry_must_be_named_by_it(tmp_path: Path) -> None:
    entry = '[[logs]]\norigin = "only.example/log"\nkey_file = "k.pem"\nstore = "o.sqlite3"\n'
    witness = f'[[witnesses]]\nurl = "http://127.0.0.1:9/a"\nkey = "{W1}"\n'
    assert _refused(tmp_path, entry + witness).startswith(
        "witnesses[0]: 'witness.a/w1' is not allowed (allowed: a witness that a [[logs]] entry "
        "names in its witnesses)"
    )
    named = entry.replace(
        'store = "o.sqlite3"', 'store = "o.sqlite3"\nwitnesses = ["witness.a/w1"]'
    )
    assert [w.key for w in _load(tmp_path, named + witness).witnesses] == [W1]


def test_clients_default_to_the_only_log(tmp_path: Path) -> None:
    config = _load(
        tmp_path,
        '[[clients]]\nidentity = "g"\nroles = ["game_server"]\ntables = ["T1"]\n',
    )
    assert config.client_logs(config.clients[0]) == {"rng-service.local/log"}


def test_a_table_id_may_recur_in_another_log_but_not_in_one(tmp_path: Path) -> None:
    _load(tmp_path, _logs(tmp_path))  # game-a and game-b both hold T1, in two logs
    text = _logs(tmp_path).replace(
        'logs = ["casino-b.example/log"]', 'logs = ["casino-a.example/log"]'
    )
    assert _refused(tmp_path, text) == (
        "clients[1] (game-b).tables: table 'T1' is also granted to game server clients[0] "
        "(game-a); one physical table has one game server (allowed: tables no other "
        "game_server client of the same log is granted)"
    )


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        (
            ('origin = "casino-b.example/log"', 'origin = "casino-a.example/log"'),
            "logs[1] (casino-a.example/log).origin: 'casino-a.example/log' is already the "
            "origin of logs[0] (allowed: each origin once)",
        ),
        (  # the same file, once relative and once absolute
            ('store = "{d}/var/b.sqlite3"', 'store = "{d}/var/../var/a.sqlite3"'),
            "logs[1] (casino-b.example/log).store: the same store as logs[0] "
            "(casino-a.example/log); one store holds one log",
        ),
        (  # the same database as a URI and as key=value pairs
            ('store = "{d}/var/b.sqlite3"', 'store = "host=db-c.example port=5433 dbname=rng_c"'),
            "logs[2] (casino-c.example/log).store: the same store as logs[1] "
            "(casino-b.example/log); one store holds one log",
        ),
        (
            ('key_file = "keys/c.pem"', 'key_file = "{d}/keys/a.pem"'),
            "logs[2] (casino-c.example/log).key_file: the same signing key as logs[0] "
            "(casino-a.example/log)",
        ),
        (  # server.port serves every log: a log's own port is another one
            ("port = 50062", "port = 50051"),
            "logs[1] (casino-b.example/log).port: 50051 is not allowed (allowed: a port of its "
            "own, not server.port (50051), which serves every log",
        ),
        (
            ("port = 50062", "port = 50061"),
            "logs[1] (casino-b.example/log).port: 50061 is already the port of logs[0]",
        ),
        (
            ("metrics_port = 9562\n", ""),
            "logs[1] (casino-b.example/log).metrics_port: None is not allowed (allowed: a port "
            "of its own for each log's metrics",
        ),
        (
            ("metrics_port = 9562", "metrics_port = 50061"),
            "logs[1] (casino-b.example/log).metrics_port: 50061 is already the port of logs[0]",
        ),
        (
            ("[[logs]]", "[verify_page]\nenabled = true\n[[logs]]"),
            "verify_page.enabled: True is not allowed (allowed: false when several [[logs]]",
        ),
        (
            ('logs = ["casino-a.example/log"]', 'logs = ["casino-z.example/log"]'),
            "clients[0] (game-a).logs: 'casino-z.example/log' is not allowed (allowed: origins "
            "of the configured logs:",
        ),
        (
            (
                'logs = ["casino-a.example/log"]',
                'logs = ["casino-a.example/log", "casino-b.example/log"]',
            ),
            "clients[0] (game-a).logs: ['casino-a.example/log', 'casino-b.example/log'] is not "
            "allowed (allowed: exactly one log for a game_server identity",
        ),
        (
            ('logs = ["casino-a.example/log"]', 'logs = ["*"]'),
            "clients[0] (game-a).logs: '*' is not allowed (allowed: origins of the configured "
            "logs:",
        ),
        (
            ('tables = ["T1"]\nlogs = ["casino-b.example/log"]', 'tables = ["T1"]'),
            "clients[1] (game-b).logs: required when several [[logs]] are configured "
            "(allowed: one of 'casino-a.example/log'",
        ),
        (
            ('witnesses = ["witness.c/w2"]', 'witnesses = ["witness.x/w9"]'),
            "logs[2] (casino-c.example/log).witnesses: 'witness.x/w9' is not allowed "
            "(allowed: names of [[witnesses]] entries ('witness.a/w1', 'witness.c/w2'))",
        ),
        (
            ('witnesses = ["witness.c/w2"]\n', ""),
            "witnesses[1]: 'witness.c/w2' is not allowed (allowed: a witness that a [[logs]] "
            "entry names in its witnesses)",
        ),
        (
            ("min_witnesses = 1", "min_witnesses = 2"),
            "logs[2] (casino-c.example/log).min_witnesses: 2 is not allowed (allowed: 0 to the "
            "number of [[witnesses]] (1))",
        ),
        (
            (
                'store = "postgresql://rng@db-c.example:5433/rng_c"',
                'store = "postgresql://rng:secret@db-c.example:5433/rng_c"',
            ),
            "logs[2] (casino-c.example/log).store: contains a password",
        ),
        (
            ('store = "{d}/var/b.sqlite3"\n', ""),
            "logs[1].store: required in every [[logs]] entry",
        ),
        (
            ("port = 50061", "port = 50061\nkey = 1"),
            "logs[0].key: unknown setting (allowed in [[logs]]: origin,",
        ),
        (
            ("[[logs]]", '[log]\norigin = "x.example"\n[[logs]]'),
            "log.origin: set in each [[logs]] entry when [[logs]] is configured (allowed: no "
            "log.origin beside [[logs]])",
        ),
        (
            ("[[logs]]", '[storage]\npath = "x.sqlite3"\n[[logs]]'),
            "storage.path: set in each [[logs]] entry when [[logs]] is configured",
        ),
    ],
)
def test_what_several_logs_cannot_mean_is_refused_naming_the_setting(
    tmp_path: Path, change: tuple[str, str], refusal: str
) -> None:
    text = _logs(tmp_path)
    old, new = (part.replace("{d}", str(tmp_path)) for part in change)
    assert old in text
    assert _refused(tmp_path, text.replace(old, new, 1)).startswith(refusal)


@pytest.mark.parametrize(
    ("store", "driver"),
    [
        ("var/a.sqlite3", "sqlite"),
        ("/data/a=b.sqlite3", "sqlite"),  # an "=" in a path is not a connection string
        ("postgresql://rng@db:5432/rng_a", "postgres"),
        ("postgres://db/rng_a", "postgres"),
        ("host=db port=5432 dbname=rng_a", "postgres"),
        ("dbname=rng_a", "postgres"),
    ],
)
def test_a_store_is_an_sqlite_file_or_a_postgresql_connection_string(
    store: str, driver: str
) -> None:
    from rng_service.config.logs import is_postgres_dsn

    assert ("postgres" if is_postgres_dsn(store) else "sqlite") == driver
