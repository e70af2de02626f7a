"""The [tls], [rate_limit] and [[clients]] settings: what loads, and errors naming the entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from rng_service.config import Config, ConfigError, check_transport, load_config
from rng_service.process.startup import _client_policies
from rng_service.security.policy import ANY, RateLimit, Role

GOOD = """
[tls]
cert_file = "tls/server.pem"
key_file = "tls/server.key"
client_ca_file = "/etc/ca.pem"

[rate_limit]
enabled = true
rate_per_second = 5
burst = 10

[[clients]]
identity = "game-1"
roles = ["game_server"]
tables = ["T1", "T2"]
kinds = ["roulette_spin"]

[[clients]]
identity = "auditor-1"
roles = ["auditor", "operator"]
rate_per_second = 0.5
burst = 1
"""


def load(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> Config:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return load_config(path, environ=env or {}, base_dir=tmp_path)


def test_a_full_security_config_loads(tmp_path: Path) -> None:
    config = load(tmp_path, GOOD, {"RNG_SERVICE__SERVER__HOST": "0.0.0.0"})
    assert config.tls.enabled
    assert config.tls.cert_file == str(tmp_path / "tls/server.pem")
    assert config.tls.client_ca_file == "/etc/ca.pem"
    check_transport(config)  # mTLS may listen off loopback
    game, auditor = _client_policies(config)
    assert game.identity == "game-1"
    assert game.roles == frozenset({Role.GAME_SERVER})
    assert game.tables == frozenset({"T1", "T2"})
    assert game.kinds == frozenset({"roulette_spin"})
    assert game.profiles == frozenset({ANY})
    assert game.rate_limit == RateLimit(5.0, 10)  # the [rate_limit] default
    assert auditor.roles == frozenset({Role.AUDITOR, Role.OPERATOR})
    assert auditor.rate_limit == RateLimit(0.5, 1)  # its own


def test_without_rate_limit_enabled_only_own_limits_apply(tmp_path: Path) -> None:
    config = load(tmp_path, GOOD.replace("enabled = true", "enabled = false"))
    game, auditor = _client_policies(config)
    assert game.rate_limit is None
    assert auditor.rate_limit == RateLimit(0.5, 1)


def test_rate_limit_from_the_environment(tmp_path: Path) -> None:
    config = load_config(
        None,
        environ={"RNG_SERVICE__RATE_LIMIT__RATE_PER_SECOND": "2.5"},
        base_dir=tmp_path,
    )
    assert config.rate_limit.rate_per_second == 2.5
    assert config.clients == ()


def test_plaintext_off_loopback_is_a_config_error_naming_server_host(tmp_path: Path) -> None:
    config = load_config(None, environ={"RNG_SERVICE__SERVER__HOST": "0.0.0.0"}, base_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"^server\.host: '0\.0\.0\.0' is not a loopback"):
        check_transport(config)
    for host in ("127.0.0.1", "::1", "localhost"):
        env = {"RNG_SERVICE__SERVER__HOST": host}
        check_transport(load_config(None, environ=env, base_dir=tmp_path))


CLIENT = '[[clients]]\nidentity = "g"\nroles = ["game_server"]\ntables = ["T1"]\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[tls]\ncert_file = "s.pem"\n', "tls.key_file: '' is not allowed"),
        ('[tls]\ncert_file = "s.pem"\nkey_file = "s.key"\n', "tls.client_ca_file"),
        ("[rate_limit]\nrate_per_second = 0\n", "rate_limit.rate_per_second: 0.0 is not allowed"),
        ("[rate_limit]\nrate_per_second = -1.5\n", "rate_limit.rate_per_second: -1.5"),
        ("[rate_limit]\nburst = 0\n", "rate_limit.burst: 0 is not allowed"),
        ('clients = "game-1"\n', "clients: must be an array of tables"),
        ("clients = [1]\n", "clients[0]: must be a table"),
        ('[[clients]]\nroles = ["auditor"]\n', "clients[0].identity: None is not allowed"),
        ('[[clients]]\nidentity = ""\nroles = ["auditor"]\n', "clients[0].identity: ''"),
        ('[[clients]]\nidentity = " g"\nroles = ["auditor"]\n', "clients[0].identity"),
        ('[[clients]]\nidentity = "g"\n', "clients[0] (g).roles: None is not allowed"),
        ('[[clients]]\nidentity = "g"\nroles = []\n', "clients[0] (g).roles: [] is not allowed"),
        ('[[clients]]\nidentity = "g"\nroles = "auditor"\n', "clients[0] (g).roles"),
        (
            '[[clients]]\nidentity = "g"\nroles = ["admin"]\n',
            "clients[0] (g).roles: 'admin' is not allowed "
            "(allowed: game_server, auditor, lab, operator)",
        ),
        ('[[clients]]\nidentity = "g"\nroles = ["auditor"]\nbogus = 1\n', "clients[0].bogus"),
        (
            '[[clients]]\nidentity = "g"\nroles = ["auditor"]\ntables = ["T1"]\n',
            "clients[0] (g).tables: only for role game_server",
        ),
        ('[[clients]]\nidentity = "g"\nroles = ["game_server"]\n', "clients[0] (g).tables"),
        (CLIENT.replace('["T1"]', "[]"), "clients[0] (g).tables: [] is not allowed"),
        (CLIENT + 'kinds = ["poker"]\n', "clients[0] (g).kinds: 'poker' is not allowed"),
        (CLIENT + "profiles = [1]\n", "clients[0] (g).profiles"),
        (CLIENT + "rate_per_second = 0\nburst = 1\n", "clients[0] (g).rate_per_second: 0.0"),
        (CLIENT + "rate_per_second = -3\nburst = 1\n", "clients[0] (g).rate_per_second"),
        (CLIENT + "rate_per_second = 1\nburst = 0\n", "clients[0] (g).burst: 0 is not allowed"),
        (CLIENT + "rate_per_second = 1\n", "clients[0] (g).burst: required with the other"),
        (CLIENT + 'burst = "5"\nrate_per_second = 1\n', "clients[0] (g).burst: '5'"),
        (
            CLIENT + CLIENT.replace('"game_server"', '"auditor"').replace('tables = ["T1"]\n', ""),
            "clients[1].identity: 'g' is already configured by clients[0]",
        ),
    ],
)
def test_bad_security_settings_name_the_entry(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    assert str(info.value).startswith(expected)


def _server(identity: str, *tables: str, roles: str = '"game_server"') -> str:
    listed = ", ".join(f'"{t}"' for t in tables)
    return f'[[clients]]\nidentity = "{identity}"\nroles = [{roles}]\ntables = [{listed}]\n'


AUDITOR = '[[clients]]\nidentity = "a"\nroles = ["auditor"]\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            _server("g1", "T1", "T2") + AUDITOR + _server("g2", "T3", "T2"),
            "clients[2] (g2).tables: table 'T2' is also granted to game server clients[0] (g1); "
            "one physical table has one game server (allowed: tables no other game_server "
            "client is granted)",
        ),
        (
            _server("g1", "*") + _server("g2", "T9"),
            "clients[1] (g2).tables: table 'T9' is also granted to game server clients[0] (g1) "
            'by its "*"; one physical table',
        ),
        (
            _server("g1", "T9") + _server("g2", "*"),
            'clients[1] (g2).tables: "*" (every table) overlaps the tables of game server '
            "clients[0] (g1); one physical table",
        ),
        (
            _server("g1", "*") + _server("g2", "*"),
            'clients[1] (g2).tables: "*" (every table) overlaps the tables of game server '
            "clients[0] (g1)",
        ),
        (  # a client with the game_server role among others is a game server too
            _server("g1", "T1") + _server("g2", "T1", roles='"auditor", "game_server"'),
            "clients[1] (g2).tables: table 'T1' is also granted to game server clients[0] (g1)",
        ),
    ],
    ids=["one-table", "star-first", "star-second", "two-stars", "with-another-role"],
)
def test_a_table_granted_to_two_game_servers_is_refused(
    tmp_path: Path, text: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    assert str(info.value).startswith(expected)
    assert "\n" not in str(info.value)


def test_game_servers_with_tables_of_their_own_are_fine(tmp_path: Path) -> None:
    text = _server("g1", "T1", "T2") + _server("g2", "T3") + AUDITOR + _server("g3", "t1")
    assert [c.identity for c in load(tmp_path, text).clients] == ["g1", "g2", "a", "g3"]
    # a sole game server may have every table; other roles have none
    text = _server("g1", "*") + AUDITOR + '[[clients]]\nidentity = "l"\nroles = ["lab"]\n'
    assert len(load(tmp_path, text).clients) == 3


def test_the_policy_refuses_two_game_servers_on_one_table() -> None:
    from rng_service.clock import FakeClock
    from rng_service.security.policy import ClientPolicy, Policy

    game = frozenset({Role.GAME_SERVER})
    with pytest.raises(ValueError, match=r"'g1' and 'g2' are both granted table '\*'"):
        Policy(
            [ClientPolicy("g1", game, frozenset({"T1"})), ClientPolicy("g2", game)],
            clock=FakeClock(),
        )
    lab = ClientPolicy("l", frozenset({Role.LAB}))  # tables "*" by default, but no game server
    Policy([ClientPolicy("g1", game, frozenset({"T1"})), lab], clock=FakeClock())


@pytest.mark.parametrize("roles", ['"game_server", "lab"', '"lab", "auditor", "game_server"'])
def test_a_client_cannot_be_both_game_server_and_lab(tmp_path: Path, roles: str) -> None:
    # A lab's DrawMultiBall is not held to 617c.2(e) (its round's spin on 7, 17 or 27); a
    # game server holding the lab role too would escape the rule at its own tables.
    with pytest.raises(ConfigError) as info:
        load(tmp_path, _server("g1", "T1", roles=roles))
    assert str(info.value).startswith(
        "clients[0] (g1).roles: game_server and lab together; a game server's draws are held "
        "to the round rules"
    )
    assert "(allowed: game_server, or lab, each with auditor or operator)" in str(info.value)
