"""Service configuration: frozen dataclasses built and validated once at start-up.

Sources, later ones winning: the defaults below, a TOML file, then environment variables named
``RNG_SERVICE__<SECTION>__<KEY>`` (for example ``RNG_SERVICE__SERVER__PORT=50052``). Any other
variable whose name begins with ``RNG_SERVICE_`` is refused rather than ignored (a single
underscore, ``RNG_SERVICE_SERVER_PORT``, is the usual slip), naming the double-underscore form
to use. This module is the only one that reads configuration files or the environment. Every
error names the setting and the values it allows (:class:`ConfigError`).
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rng_service.config.checks import (
    ConfigError,
    _coerce,
    _require,
    is_loopback,
)
from rng_service.config.logs import LogDefinition, build_logs
from rng_service.config.peers import (
    ClientSettings,
    RateLimitSettings,
    TlsSettings,
    WitnessSettings,
    _build_clients,
    _build_witnesses,
)
from rng_service.config.sections import (
    CertificationSettings,
    GeneratorSettings,
    LogSettings,
    MetricsSettings,
    ProfilesSettings,
    ServerSettings,
    StorageSettings,
    VerifyPageSettings,
    WitnessingSettings,
)

__all__ = [
    "CertificationSettings",
    "ClientSettings",
    "Config",
    "ConfigError",
    "GeneratorSettings",
    "LogDefinition",
    "LogSettings",
    "MetricsSettings",
    "ProfilesSettings",
    "RateLimitSettings",
    "ServerSettings",
    "StorageSettings",
    "TlsSettings",
    "VerifyPageSettings",
    "WitnessSettings",
    "WitnessingSettings",
    "check_transport",
    "load_config",
]

ENV_PREFIX = "RNG_SERVICE__"
#: Every environment variable that starts like this is meant for the service: it must be a
#: setting in the ``ENV_PREFIX`` form, or the start-up stops.
_ENV_FAMILY = "RNG_SERVICE_"


@dataclass(frozen=True, kw_only=True)
class Config:
    server: ServerSettings = field(default_factory=ServerSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    verify_page: VerifyPageSettings = field(default_factory=VerifyPageSettings)
    log: LogSettings = field(default_factory=LogSettings)
    storage: StorageSettings = field(default_factory=StorageSettings)
    generator: GeneratorSettings = field(default_factory=GeneratorSettings)
    tls: TlsSettings = field(default_factory=TlsSettings)
    rate_limit: RateLimitSettings = field(default_factory=RateLimitSettings)
    certification: CertificationSettings = field(default_factory=CertificationSettings)
    profiles: ProfilesSettings = field(default_factory=ProfilesSettings)
    witnessing: WitnessingSettings = field(default_factory=WitnessingSettings)
    #: ``[[clients]]``: identities and roles (used when mTLS is on; docs/security.md).
    clients: tuple[ClientSettings, ...] = ()
    #: ``[[witnesses]]``: the C2SP tlog-witnesses that cosign published checkpoints.
    witnesses: tuple[WitnessSettings, ...] = ()
    #: ``[[logs]]``: the deployment's logs (rng_service.config.logs); () = the one log of
    #: ``[log]`` and ``[storage]``.
    logs: tuple[LogDefinition, ...] = ()
    #: The origin of the log that ``[log]``, ``[storage]`` and ``[[witnesses]]`` describe in
    #: this configuration ("" with several ``[[logs]]``: none yet, see :meth:`for_log`).
    serving: str = ""

    def __post_init__(self) -> None:
        self._check_bindings()
        page = self.verify_page
        if page.enabled and page.port:
            taken = {"server.port": self.server.port}
            if self.metrics.enabled:
                taken["metrics.port"] = self.metrics.port
            for name, port in taken.items():
                _require(
                    page.port != port,
                    "verify_page.port",
                    f"a port of its own, not {name} ({port}), or 0 for any free port",
                    page.port,
                )
        wanted = self.witnessing.min_witnesses
        if wanted == -1:
            object.__setattr__(
                self, "witnessing",
                dataclasses.replace(self.witnessing, min_witnesses=min(1, len(self.witnesses))),
            )  # fmt: skip
        else:
            _require(
                wanted <= len(self.witnesses),
                "witnessing.min_witnesses",
                f"0 to the number of [[witnesses]] ({len(self.witnesses)})",
                wanted,
            )
        _require(
            not self.witnessing.require_at_startup or bool(self.witnesses),
            "witnessing.require_at_startup",
            "false when no [[witnesses]] are configured",
            True,
        )

    @property
    def origins(self) -> tuple[str, ...]:
        """The origins of the deployment's logs, in configuration order."""
        return tuple(d.origin for d in self.logs) or (self.log.origin,)

    def _check_bindings(self) -> None:
        """Each witness named by a log, what several logs need, each client bound to
        configured logs (a game server to exactly one), and one game server per table within
        each log."""
        self._check_log_witnesses()
        if len(self.logs) > 1 and not self.serving:
            self._check_several_logs()
        self._check_one_game_server_a_table(self._check_client_logs())

    def _check_log_witnesses(self) -> None:
        """Each ``[[logs]]`` entry names configured witnesses, and each witness is named."""
        witness_names = [w.name or _key_name(w.key) for w in self.witnesses]
        # A log's own view (``serving``) keeps its witnesses only: checked before, on all.
        for i, d in enumerate(() if self.serving else self.logs):
            for name in d.witnesses:
                _require(
                    name in witness_names,
                    f"logs[{i}] ({d.origin}).witnesses",
                    "names of [[witnesses]] entries ("
                    + (", ".join(repr(n) for n in witness_names) or "none configured")
                    + ")",
                    name,
                )
        if self.logs and not self.serving:  # a witness no log names would be silently idle
            named = {n for d in self.logs for n in d.witnesses}
            for i, name in enumerate(witness_names):
                _require(
                    name in named,
                    f"witnesses[{i}]",
                    "a witness that a [[logs]] entry names in its witnesses",
                    name,
                )

    def _check_several_logs(self) -> None:
        """A metrics port of its own for each log, a log's own port not the shared one; no
        verify page, no raw output stream."""
        for i, d in enumerate(self.logs):
            _require(
                not d.port or d.port != self.server.port,
                f"logs[{i}] ({d.origin}).port",
                f"a port of its own, not server.port ({self.server.port}), which serves every "
                "log; or no port (the log is served on server.port only)",
                d.port,
            )
            _require(
                not self.metrics.enabled or d.metrics_port is not None,
                f"logs[{i}] ({d.origin}).metrics_port",
                "a port of its own for each log's metrics when several [[logs]] are "
                "configured (or [metrics] enabled = false)",
                None,
            )
        _require(
            not self.verify_page.enabled,
            "verify_page.enabled",
            "false when several [[logs]] are configured (serve the page from web/verify "
            "with any static web server: it holds no log data)",
            True,
        )
        _require(
            not self.certification.raw_stream_enabled,
            "certification.raw_stream_enabled",
            "false when several [[logs]] are configured (the shared port's front ends hold "
            "no generator; a laboratory certifies a deployment of one log)",
            True,
        )

    def _check_client_logs(self) -> dict[str, list[tuple[int, ClientSettings]]]:
        """Each client bound to configured logs; returns the game servers of each log."""
        from rng_service.security.policy import ANY, Role

        origins = self.origins
        allowed = ", ".join(repr(o) for o in origins)
        bound: dict[str, list[tuple[int, ClientSettings]]] = {o: [] for o in origins}
        for i, c in enumerate(self.clients):
            where = f"clients[{i}] ({c.identity}).logs"
            game = Role.GAME_SERVER.value in c.roles
            logs = c.logs or ((origins[0],) if len(origins) == 1 else ())
            if not logs:
                raise ConfigError(
                    f"{where}: required when several [[logs]] are configured (allowed: "
                    + ("one of " if game else "")
                    + f"{allowed}"
                    + ("" if game else ' or ["*"]')
                    + ")"
                )
            for origin in logs:
                if origin == ANY and not game:
                    continue
                _require(
                    origin in origins,
                    where,
                    f"origins of the configured logs: {allowed}" + ("" if game else ' or "*"'),
                    origin,
                )
            if game:
                _require(
                    len(logs) == 1 and logs[0] != ANY,
                    where,
                    "exactly one log for a game_server identity (one of " + allowed + ")",
                    list(logs),
                )
                bound[logs[0]].append((i, c))
        return bound

    def _check_one_game_server_a_table(
        self, bound: dict[str, list[tuple[int, ClientSettings]]]
    ) -> None:
        """One game server per table within each log (table ids are per log)."""
        from rng_service.security.policy import ANY, shared_table

        origins = self.origins
        for servers in bound.values():
            shared = shared_table([(c.identity, c.tables) for _, c in servers])
            if shared is None:
                continue
            (i, earlier), (j, later), table = servers[shared[0]], servers[shared[1]], shared[2]
            if table == ANY:
                what = f'"*" (every table) overlaps the tables of game server clients[{i}]'
            else:
                what = f"table {table!r} is also granted to game server clients[{i}]"
            by = ' by its "*"' if ANY in earlier.tables and table != ANY else ""
            raise ConfigError(
                f"clients[{j}] ({later.identity}).tables: {what} ({earlier.identity}){by}; one "
                "physical table has one game server (allowed: tables no other game_server "
                + ("client of the same log" if len(origins) > 1 else "client")
                + " is granted)"
            )

    def client_logs(self, client: ClientSettings) -> frozenset[str]:
        """The origins ``client`` is bound to (``"*"`` expanded)."""
        logs = client.logs
        if not logs and len(self.origins) == 1:
            logs = self.origins
        if "*" in logs:
            return frozenset(self.origins)
        return frozenset(logs)

    def select(self, origin: str | None) -> Config:
        """The configuration of the log a command names (``--origin``); without a name, the
        only log. Raises ConfigError when several logs leave it open or the name is unknown."""
        if origin is None:
            if len(self.logs) > 1 and not self.serving:
                raise ConfigError(
                    f"origin: {len(self.logs)} [[logs]] are configured; name one with --origin "
                    "(allowed: " + ", ".join(repr(o) for o in self.origins) + ")"
                )
            return self
        return self.for_log(origin)

    def for_log(self, origin: str) -> Config:
        """This configuration as the one log ``origin`` sees it: ``[log]``, ``[storage]``,
        its witnesses, profiles and port from its ``[[logs]]`` entry, every other setting
        shared. Raises ConfigError naming the entry."""
        if not self.logs:
            if origin != self.log.origin:
                raise ConfigError(
                    f"origin: {origin!r} is not a configured log (allowed: {self.log.origin!r})"
                )
            return self
        found = [(i, d) for i, d in enumerate(self.logs) if d.origin == origin]
        if not found:
            raise ConfigError(
                f"origin: {origin!r} is not a configured log (allowed: "
                + ", ".join(repr(o) for o in self.origins)
                + ")"
            )
        i, d = found[0]
        where = f"logs[{i}] ({d.origin})"
        try:
            log = dataclasses.replace(
                self.log, origin=d.origin, key_file=d.key_file, key_name=d.key_name,
                key_passphrase_env=d.key_passphrase_env, retired_keys=",".join(d.retired_keys),
                cosign_key_file=d.cosign_key_file, cosign_key_name=d.cosign_key_name,
                cosign_key_passphrase_env=d.cosign_key_passphrase_env,
                publish_interval_seconds=(
                    d.publish_interval_seconds
                    if d.publish_interval_seconds is not None
                    else self.log.publish_interval_seconds
                ),
            )  # fmt: skip
            sqlite = d.driver == "sqlite"
            storage = dataclasses.replace(
                self.storage, driver=d.driver,
                path=Path(d.store) if sqlite else StorageSettings().path,
                postgres_dsn="" if sqlite else d.store,
                postgres_password_env=d.postgres_password_env,
            )  # fmt: skip
            names = set(d.witnesses)
            return dataclasses.replace(
                self,
                log=log,
                storage=storage,
                witnesses=tuple(w for w in self.witnesses if (w.name or _key_name(w.key)) in names),
                witnessing=dataclasses.replace(self.witnessing, min_witnesses=d.min_witnesses),
                profiles=dataclasses.replace(self.profiles, names=d.profiles),
                server=(
                    self.server if d.port is None else dataclasses.replace(self.server, port=d.port)
                ),
                metrics=(
                    self.metrics
                    if d.metrics_port is None
                    else dataclasses.replace(self.metrics, port=d.metrics_port)
                ),
                serving=d.origin,
            )
        except ConfigError as e:
            setting, _, rest = str(e).partition(": ")
            field_name = _DERIVED.get(setting, setting)
            raise ConfigError(f"{where}.{field_name}: {rest}") from None


def _key_name(key: str) -> str:
    """The name of a verifier key written inline (``<name>+<id>+<base64>``); "" for a file."""
    return key.split("+", 1)[0] if key.count("+") >= 2 else ""


#: The single-log setting a ``[[logs]]`` entry's setting becomes (:meth:`Config.for_log`), for
#: errors found in the derived sections.
_DERIVED = {
    "log.origin": "origin",
    "log.key_name": "key_name",
    "log.retired_keys": "retired_keys",
    "log.cosign_key_name": "cosign_key_name",
    "log.publish_interval_seconds": "publish_interval_seconds",
    "storage.postgres_dsn": "store",
    "storage.postgres_password_env": "postgres_password_env",
    "witnessing.min_witnesses": "min_witnesses",
    "profiles.names": "profiles",
}

#: Settings of the single-log sections that a ``[[logs]]`` entry sets for its own log: with
#: ``[[logs]]`` they are refused in ``[log]``, ``[storage]`` and ``[witnessing]`` (two places
#: for one value would leave the reader guessing which one counts).
PER_LOG_SETTINGS = {
    "log": ("origin", "key_name", "key_file", "key_passphrase_env", "retired_keys",
            "cosign_key_file", "cosign_key_name", "cosign_key_passphrase_env"),
    "storage": ("driver", "path", "postgres_dsn", "postgres_password_env"),
    "witnessing": ("min_witnesses",),
    "profiles": ("names",),
}  # fmt: skip

#: Top-level keys that are arrays of tables rather than ``[section]`` tables.
_ARRAYS = ("clients", "witnesses", "logs")

_SECTIONS: dict[str, type[Any]] = {
    f.name: typing.get_type_hints(Config)[f.name]
    for f in dataclasses.fields(Config)
    if f.name not in (*_ARRAYS, "serving")
}


def check_transport(config: Config) -> None:
    """Refuses plaintext gRPC on a non-loopback address (called at start-up, before binding)."""
    if not config.tls.enabled and not is_loopback(config.server.host):
        raise ConfigError(
            f"server.host: {config.server.host!r} is not a loopback address, and plaintext gRPC "
            "is allowed on loopback only (allowed: 127.0.0.1, ::1 or localhost; or set "
            "tls.cert_file, tls.key_file and tls.client_ca_file for mTLS)"
        )


def _build_section(name: str, raw: Mapping[str, Any], env_keys: set[str]) -> Any:
    cls = _SECTIONS[name]
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(
            f"{name}.{unknown[0]}: unknown setting "
            f"(allowed in [{name}]: {', '.join(sorted(known))})"
        )
    kwargs = {
        key: _coerce(f"{name}.{key}", hints[key], value, from_env=key in env_keys)
        for key, value in raw.items()
    }
    return cls(**kwargs)


def load_config(
    path: Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
) -> Config:
    """Builds the configuration from defaults, an optional TOML file and the environment.

    Relative paths in the result are resolved against ``base_dir`` (default: the current
    directory), so the service does not depend on where it is started once loaded.
    """
    environ = os.environ if environ is None else environ
    data: dict[str, dict[str, Any]] = {}
    arrays: dict[str, Any] = {}
    if path is not None:
        try:
            with open(path, "rb") as fh:
                raw = tomllib.load(fh)
        except FileNotFoundError:
            raise ConfigError(f"config file {path}: not found") from None
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"config file {path}: not valid TOML: {e}") from None
        for section, values in raw.items():
            if section in _ARRAYS:
                arrays[section] = values
                continue
            if section not in _SECTIONS:
                raise ConfigError(
                    f"{section}: unknown section "
                    f"(allowed: {', '.join(sorted((*_SECTIONS, *_ARRAYS)))})"
                )
            if not isinstance(values, dict):
                raise ConfigError(f"{section}: must be a table [{section}]")
            data[section] = dict(values)
    env_keys: dict[str, set[str]] = {}
    for name, value in environ.items():
        if not name.startswith(_ENV_FAMILY):
            continue
        parts = name[len(ENV_PREFIX) :].lower().split("__")
        if not name.startswith(ENV_PREFIX) or len(parts) != 2 or parts[0] not in _SECTIONS:
            raise ConfigError(_env_name_error(name))
        data.setdefault(parts[0], {})[parts[1]] = value
        env_keys.setdefault(parts[0], set()).add(parts[1])
    sections = {
        name: _build_section(name, data.get(name, {}), env_keys.get(name, set()))
        for name in _SECTIONS
    }
    base = base_dir if base_dir is not None else Path.cwd()
    logs: tuple[LogDefinition, ...] = ()
    if "logs" in arrays:
        for section, keys in PER_LOG_SETTINGS.items():
            for key in keys:
                if key in data.get(section, {}):
                    raise ConfigError(
                        f"{section}.{key}: set in each [[logs]] entry when [[logs]] is "
                        f"configured (allowed: no {section}.{key} beside [[logs]])"
                    )
        logs = build_logs(arrays["logs"], base)
    config = Config(
        **sections,
        clients=_build_clients(arrays.get("clients", [])),
        witnesses=_build_witnesses(arrays.get("witnesses", [])),
        logs=tuple(
            dataclasses.replace(
                d,
                key_file=_resolve(base, d.key_file),
                store=d.store if d.driver == "postgres" else str(_resolve(base, Path(d.store))),
            )
            for d in logs
        ),
    )
    tls = config.tls
    if tls.enabled:
        tls = dataclasses.replace(
            tls,
            cert_file=str(_resolve(base, Path(tls.cert_file))),
            key_file=str(_resolve(base, Path(tls.key_file))),
            client_ca_file=str(_resolve(base, Path(tls.client_ca_file))),
        )
    page = config.verify_page
    if page.directory:
        page = dataclasses.replace(page, directory=str(_resolve(base, Path(page.directory))))
    profiles = config.profiles
    if profiles.directory:
        profiles = dataclasses.replace(
            profiles, directory=str(_resolve(base, Path(profiles.directory)))
        )
    witnesses = tuple(
        dataclasses.replace(
            w,
            key=w.key
            if "+" in w.key and not (base / w.key).is_file()
            else str(_resolve(base, Path(w.key))),
            ca_file=str(_resolve(base, Path(w.ca_file))) if w.ca_file else "",
        )
        for w in config.witnesses
    )
    config = dataclasses.replace(
        config,
        witnesses=witnesses,
        server=dataclasses.replace(config.server, lock_dir=_resolve(base, config.server.lock_dir)),
        profiles=profiles,
        verify_page=page,
        log=dataclasses.replace(config.log, key_file=_resolve(base, config.log.key_file)),
        storage=dataclasses.replace(config.storage, path=_resolve(base, config.storage.path)),
        tls=tls,
    )
    if not config.logs:
        return config
    per_log = [config.for_log(d.origin) for d in config.logs]  # each log's checks, once
    return per_log[0] if len(per_log) == 1 else config


def _env_name_error(name: str) -> str:
    """The error for an ``RNG_SERVICE_*`` variable that is not a setting, with the
    double-underscore name it was most likely meant as."""
    allowed = (
        f"{ENV_PREFIX}<SECTION>__<KEY>, with double underscores, SECTION one of "
        f"{', '.join(s.upper() for s in sorted(_SECTIONS))}"
    )
    # Words of the name after the family prefix, whatever underscores separate them; a section
    # name (rate_limit) and a key (rate_per_second) may themselves hold single underscores.
    words = [w for w in name[len(_ENV_FAMILY) :].lower().split("_") if w]
    for cut in range(1, len(words)):
        section, key = "_".join(words[:cut]), "_".join(words[cut:])
        cls = _SECTIONS.get(section)
        if cls is not None and key in {f.name for f in dataclasses.fields(cls)}:
            wanted = f"{ENV_PREFIX}{section.upper()}__{key.upper()}"
            return f"{name}: not a setting; use {wanted} for {section}.{key} (allowed: {allowed})"
    return f"{name}: not a setting (allowed: {allowed})"


def _resolve(base: Path, path: Path) -> Path:
    return path if path.is_absolute() else (base / path)
