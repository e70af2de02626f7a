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

    def __post_init__(self) -> None:
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


#: Top-level keys that are arrays of tables rather than ``[section]`` tables.
_ARRAYS = ("clients", "witnesses")

_SECTIONS: dict[str, type[Any]] = {
    f.name: typing.get_type_hints(Config)[f.name]
    for f in dataclasses.fields(Config)
    if f.name not in _ARRAYS
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
    config = Config(
        **sections,
        clients=_build_clients(arrays.get("clients", [])),
        witnesses=_build_witnesses(arrays.get("witnesses", [])),
    )
    base = base_dir if base_dir is not None else Path.cwd()
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
    return dataclasses.replace(
        config,
        witnesses=witnesses,
        server=dataclasses.replace(config.server, lock_dir=_resolve(base, config.server.lock_dir)),
        profiles=profiles,
        verify_page=page,
        log=dataclasses.replace(config.log, key_file=_resolve(base, config.log.key_file)),
        storage=dataclasses.replace(config.storage, path=_resolve(base, config.storage.path)),
        tls=tls,
    )


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
