"""The documented misconfigurations: each one a one-line refusal naming the setting, exit 2.

Owns :data:`MISCONFIGURATIONS`, the list of configuration mistakes an operator can make with
``rng-service serve``, ``dev-run``, ``check-store``, ``migrate-store`` and ``rng-witness
serve``, and what each command answers: one line (``serve``, ``dev-run`` and the witness: one
``startup_failed`` JSON event) that starts with the setting at fault, exit status 2, no
traceback (docs/operations/configuration.md, "Misconfigurations").
``scripts/render_status_table.py`` writes the list into docs/operations/configuration.md, and
``tests/integration/test_misconfigurations.py`` runs every row through the real commands against a
working configuration it builds (whose own start is the test's control). A mistake the code refuses
but this list lacks is undocumented: add it here.

A row changes the working configuration by ``set`` (``"section.key"``, or a top-level
``"key"`` in the witness's file; the value ``None`` deletes it), ``toml`` (text appended
verbatim: a malformed file, an unknown section, an array-of-tables entry), ``env`` (the
process environment) or ``config_file="missing"``. ``{dir}`` in a value is the test's
directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "MISCONFIGURATIONS",
    "SERVICE_COMMANDS",
    "WITNESS_SERVE",
    "Misconfiguration",
    "misconfigurations_markdown",
]

#: The service's commands that read its configuration (``rng-service COMMAND --config FILE``).
SERVICE_COMMANDS = ("serve", "dev-run", "check-store", "migrate-store")
WITNESS_SERVE = "rng-witness serve"
_ALL = SERVICE_COMMANDS
_RUN = ("serve", "dev-run")


@dataclass(frozen=True)
class Misconfiguration:
    """One documented mistake and the setting its refusal names (the message's start)."""

    mistake: str
    setting: str
    commands: tuple[str, ...]
    set: Mapping[str, object] = field(default_factory=dict)
    toml: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    config_file: str = ""

    def example(self) -> str:
        """The mistake as the operator writes it (the docs table's example column)."""
        parts = [f"`{k} = {_toml_value(v)}`" if v is not None else f"no `{k}`"
                 for k, v in self.set.items()]  # fmt: skip
        parts += [f"`{k}={v}`" for k, v in self.env.items()]
        if self.toml:
            parts.append("`" + " ".join(self.toml.split()) + "`")
        if self.config_file == "missing":
            parts.append("`--config` naming a file that does not exist")
        return "; ".join(parts).replace("{dir}/", "").replace("|", "\\|")


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


#: The working configuration's single log, removed where a row configures ``[[logs]]``.
_NO_SINGLE_LOG = {"log.origin": None, "log.key_file": None, "storage.path": None}


def _two_logs(second_origin: str, second_store: str) -> str:
    """Two ``[[logs]]`` entries: the working configuration's log, and a second one."""
    return (
        '[[logs]]\norigin = "misconfig.test"\nkey_file = "{dir}/log.pem"\n'
        'store = "{dir}/log.sqlite3"\nport = 0\n\n'
        f'[[logs]]\n{second_origin}\nkey_file = "{{dir}}/log-b.pem"\n{second_store}\n'
        "port = 0\n"
    )


MISCONFIGURATIONS: tuple[Misconfiguration, ...] = (
    # -- the file and the environment (every command) --
    Misconfiguration(
        "the configuration file does not exist", "config file", _ALL, config_file="missing"
    ),
    Misconfiguration("the file is not valid TOML", "config file", _ALL, toml="[server\n"),
    Misconfiguration("an unknown section (a typo)", "sever", _ALL, toml="[sever]\nport = 1\n"),
    Misconfiguration(
        "an unknown setting (a typo)", "server.prot", _ALL, set={"server.prot": 50051}
    ),
    Misconfiguration(
        "a value of the wrong type", "server.port", _ALL, set={"server.port": "50051"}
    ),
    Misconfiguration("a value out of range", "server.port", _ALL, set={"server.port": 70000}),
    Misconfiguration(
        "an environment variable of the service's family that is not a setting (single "
        "underscores)",
        "RNG_SERVICE_SERVER_PORT",
        _ALL,
        env={"RNG_SERVICE_SERVER_PORT": "50051"},
    ),
    Misconfiguration(
        "an environment variable with a bad value",
        "server.port",
        _ALL,
        env={"RNG_SERVICE__SERVER__PORT": "fifty"},
    ),
    # -- transport and TLS --
    Misconfiguration(
        "plaintext gRPC on an address that is not loopback (no `[tls]`)",
        "server.host",
        _RUN,
        set={"server.host": "0.0.0.0"},  # noqa: S104 (the mistake itself)
    ),
    Misconfiguration(
        "one TLS file without the other two",
        "tls.key_file",
        _ALL,
        set={"tls.cert_file": "{dir}/server.pem"},
    ),
    Misconfiguration(
        "a TLS file that does not exist",
        "tls.key_file",
        _RUN,
        set={
            "tls.cert_file": "{dir}/server.pem",
            "tls.key_file": "{dir}/no-server.key",
            "tls.client_ca_file": "{dir}/ca.pem",
        },
    ),
    # -- the log store --
    Misconfiguration(
        "an SQLite log in a directory that does not exist (a typo would start a second log)",
        "storage.path",
        _ALL,
        set={"storage.path": "{dir}/no-such-dir/log.sqlite3"},
    ),
    Misconfiguration(
        "an unknown storage driver", "storage.driver", _ALL, set={"storage.driver": "mysql"}
    ),
    Misconfiguration(
        "the PostgreSQL password's environment variable is not set",
        "storage.postgres_password_env",
        _ALL,
        set={
            "storage.driver": "postgres",
            "storage.postgres_dsn": "host=127.0.0.1 dbname=rng",
            "storage.postgres_password_env": "RNG_TEST_UNSET_DB_PASSWORD",
        },
    ),
    # -- keys --
    Misconfiguration(
        "the checkpoint-signing key file does not exist",
        "log.key_file",
        ("serve", "check-store"),
        set={"log.key_file": "{dir}/no-key.pem"},
    ),
    Misconfiguration(
        "the signing key's passphrase variable is not set",
        "log.key_passphrase_env",
        _RUN,
        set={"log.key_passphrase_env": "RNG_TEST_UNSET_PASSPHRASE"},
    ),
    # -- profiles, clients, witnesses --
    Misconfiguration(
        "the profiles directory does not exist",
        "profiles.directory",
        _RUN,
        set={"profiles.directory": "{dir}/no-profiles"},
    ),
    Misconfiguration(
        "a `[[clients]]` entry with an unknown role",
        "clients[0] (game-1).roles",
        _ALL,
        toml='[[clients]]\nidentity = "game-1"\nroles = ["admin"]\n',
    ),
    Misconfiguration(
        "a `[[witnesses]]` entry whose key is not a verifier key",
        "witnesses[0].key",
        _RUN,
        toml='[[witnesses]]\nurl = "http://127.0.0.1:9/"\nkey = "not-a-key"\n',
    ),
    # -- several logs ([[logs]]) --
    Misconfiguration(
        "two `[[logs]]` with one origin",
        "logs[1] (misconfig.test).origin",
        _ALL,
        set=_NO_SINGLE_LOG,
        toml=_two_logs('origin = "misconfig.test"', 'store = "{dir}/b.sqlite3"'),
    ),
    Misconfiguration(
        "two `[[logs]]` in one store",
        "logs[1] (b.test).store",
        _ALL,
        set=_NO_SINGLE_LOG,
        toml=_two_logs('origin = "b.test"', 'store = "{dir}/log.sqlite3"'),
    ),
    Misconfiguration(
        "`[log]` settings beside `[[logs]]` (which one counts?)",
        "log.origin",
        _ALL,
        set={"log.key_file": None, "storage.path": None},
        toml=_two_logs('origin = "b.test"', 'store = "{dir}/b.sqlite3"'),
    ),
    Misconfiguration(
        "a client bound to a log that is not configured",
        "clients[0] (game-1).logs",
        _ALL,
        toml='[[clients]]\nidentity = "game-1"\nroles = ["game_server"]\ntables = ["T1"]\n'
        'logs = ["no-such-log.test"]\n',
    ),
    Misconfiguration(
        "a game server bound to no log when several are configured",
        "clients[0] (game-1).logs",
        _ALL,
        set=_NO_SINGLE_LOG,
        toml=_two_logs('origin = "b.test"', 'store = "{dir}/b.sqlite3"')
        + '[[clients]]\nidentity = "game-1"\nroles = ["game_server"]\ntables = ["T1"]\n',
    ),
    Misconfiguration(
        "one log's checkpoint-signing key file does not exist (several `[[logs]]`)",
        "logs[1] (b.test).key_file",
        ("serve",),
        set=_NO_SINGLE_LOG,
        toml=_two_logs('origin = "b.test"', 'store = "{dir}/b.sqlite3"'),
    ),
    Misconfiguration(
        "a log's own port is `server.port`, which serves every log (several `[[logs]]`)",
        "logs[1] (b.test).port",
        _ALL,
        set={**_NO_SINGLE_LOG, "server.port": 50061},
        toml=_two_logs('origin = "b.test"', 'store = "{dir}/b.sqlite3"').removesuffix("port = 0\n")
        + "port = 50061\n",
    ),
    Misconfiguration(
        "`[verify_page]` with several `[[logs]]` (serve the static page elsewhere)",
        "verify_page.enabled",
        _ALL,
        set={**_NO_SINGLE_LOG, "verify_page.enabled": True},
        toml=_two_logs('origin = "b.test"', 'store = "{dir}/b.sqlite3"'),
    ),
    Misconfiguration(
        "several `[[logs]]` and no `--origin` naming the one to work on",
        "origin",
        ("check-store", "migrate-store"),
        set=_NO_SINGLE_LOG,
        toml=_two_logs('origin = "b.test"', 'store = "{dir}/b.sqlite3"'),
    ),
    # -- the witness (rng-witness serve) --
    Misconfiguration(
        "the witness's configuration file does not exist",
        "config file",
        (WITNESS_SERVE,),
        config_file="missing",
    ),
    Misconfiguration(
        "an unknown witness setting (a typo)", "nmae", (WITNESS_SERVE,), set={"nmae": "w"}
    ),
    Misconfiguration("the witness has no name", "name", (WITNESS_SERVE,), set={"name": None}),
    Misconfiguration(
        "the witness's key file does not exist",
        "key_file",
        (WITNESS_SERVE,),
        set={"key_file": "{dir}/no-witness.pem"},
    ),
    Misconfiguration(
        "the witness key's passphrase variable is not set",
        "key_passphrase_env",
        (WITNESS_SERVE,),
        set={"key_passphrase_env": "RNG_TEST_UNSET_PASSPHRASE"},
    ),
    Misconfiguration(
        "the witness's port out of range", "port", (WITNESS_SERVE,), set={"port": 70000}
    ),
    Misconfiguration(
        "the witness's metrics on the witness's own port",
        "metrics.port",
        (WITNESS_SERVE,),
        set={"port": 7390, "metrics.port": 7390},
    ),
    Misconfiguration(
        "one witness TLS file without the other",
        "tls.cert_file",
        (WITNESS_SERVE,),
        set={"tls.cert_file": "{dir}/server.pem"},
    ),
    Misconfiguration("the witness trusts no log", "logs", (WITNESS_SERVE,), set={"logs": None}),
)


def misconfigurations_markdown() -> str:
    """:data:`MISCONFIGURATIONS` as the Markdown table of docs/operations/configuration.md."""
    lines = [
        "| Mistake | For example | The refusal starts with | Commands |",
        "|---|---|---|---|",
    ]
    for m in MISCONFIGURATIONS:
        commands = ", ".join(f"`{c}`" for c in m.commands)
        lines.append(f"| {m.mistake} | {m.example()} | `{m.setting}` | {commands} |")
    return "\n".join(lines) + "\n"
