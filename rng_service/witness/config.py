"""``rng-witness`` configuration: one TOML file, read and validated once at start-up.

The only reader of the witness's configuration file. Relative paths are relative to the file's
directory. Every error names the setting and what it allows (:class:`WitnessConfigError`).

```toml
name = "witness.regulator.example/w1"   # the witness's key name (cosigner name)
key_file = "witness.pem"                # Ed25519 private key (rng-witness keygen)
key_passphrase_env = ""                 # variable holding the key's passphrase, if encrypted
key_file_permissions = "warn"           # "strict": refuse group/world-readable key files too
state = "witness-state.sqlite3"         # the witness's own SQLite state (back it up)
host = "127.0.0.1"
port = 7380                             # 0: any free port (tests)
prefix = ""                             # submission prefix: POST <prefix>/add-checkpoint
max_connections = 64                    # connections served at once; more are closed

[metrics]                               # optional: Prometheus endpoint (on when the table is)
enabled = true                          # default: true with the table, false without it
host = "127.0.0.1"                      # loopback unless Prometheus scrapes from elsewhere
port = 7381                             # its own port, never the witness's; 0: any free port

[tls]                                   # optional: HTTPS with this certificate
cert_file = "witness-cert.pem"
key_file = "witness-cert.key"

[[logs]]                                # each log the witness cosigns
origin = "casino.example/rng-log"
keys = ["casino.example/rng-log+1b9e4a07+AZ..."]   # verifier keys or .vkey files
```
"""

from __future__ import annotations

import ipaddress
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rng_service.errors import RngServiceError
from rng_service.log.keys import load_verifier_keys
from rng_service.log.note import NoteVerifier, is_valid_key_name
from rng_service.security.key_files import KEY_FILE_PERMISSIONS

__all__ = [
    "LogEntry",
    "MetricsConfig",
    "WitnessConfig",
    "WitnessConfigError",
    "load_witness_config",
]

_TOP = ("name", "key_file", "key_passphrase_env", "key_file_permissions", "state", "host",
        "port", "prefix", "max_connections", "metrics", "tls", "logs")  # fmt: skip
_METRICS = ("enabled", "host", "port")
#: The ``[metrics]`` port when the table does not give one (the witness's default port + 1).
DEFAULT_METRICS_PORT = 7381


class WitnessConfigError(Exception):
    """A setting of the witness's configuration is missing or invalid; the message names it."""


@dataclass(frozen=True, slots=True)
class LogEntry:
    origin: str
    keys: tuple[NoteVerifier, ...]


@dataclass(frozen=True, slots=True)
class MetricsConfig:
    """``[metrics]``: the witness's Prometheus endpoint (rng_service.witness.metrics)."""

    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = DEFAULT_METRICS_PORT


@dataclass(frozen=True, slots=True)
class WitnessConfig:
    name: str
    key_file: Path
    key_passphrase_env: str
    state: Path
    host: str
    port: int
    prefix: str
    max_connections: int
    tls_cert_file: Path | None
    tls_key_file: Path | None
    logs: tuple[LogEntry, ...]
    #: What a key file readable by others than its owner gets (rng_service.security.key_files):
    #: "warn" (a logged warning) or "strict" (refused); world-writable is always refused.
    key_file_permissions: str = "warn"
    metrics: MetricsConfig = MetricsConfig()

    def trusted(self) -> Mapping[str, tuple[NoteVerifier, ...]]:
        return {log.origin: log.keys for log in self.logs}


def _fail(setting: str, value: object, allowed: str) -> WitnessConfigError:
    return WitnessConfigError(f"{setting}: {value!r} is not allowed (allowed: {allowed})")


def _string(raw: Mapping[str, Any], key: str, default: str | None, setting: str) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str):
        raise _fail(setting, value, "a string")
    return value


def _host(raw: Mapping[str, Any], setting: str) -> str:
    host = _string(raw, setting.rpartition(".")[2], "127.0.0.1", setting)
    if host != "localhost":
        try:
            ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            raise _fail(setting, host, "an IP address or 'localhost'") from None
    return host


def _port(raw: Mapping[str, Any], setting: str, default: int) -> int:
    port = raw.get(setting.rpartition(".")[2], default)
    if type(port) is not int or not 0 <= port <= 65535:
        raise _fail(setting, port, "an integer from 0 to 65535 (0 = any free port)")
    return port


def _metrics(raw: Mapping[str, Any], witness_port: int) -> MetricsConfig:
    """``[metrics]``: absent, off; present, on unless ``enabled = false``."""
    if "metrics" not in raw:
        return MetricsConfig()
    table = raw["metrics"]
    if not isinstance(table, dict):
        raise _fail("metrics", table, "a table with " + ", ".join(_METRICS))
    unknown = sorted(set(table) - set(_METRICS))
    if unknown:
        raise WitnessConfigError(
            f"metrics.{unknown[0]}: unknown setting (allowed: {', '.join(_METRICS)})"
        )
    enabled = table.get("enabled", True)
    if type(enabled) is not bool:
        raise _fail("metrics.enabled", enabled, "true or false")
    host = _host(table, "metrics.host")
    port = _port(table, "metrics.port", DEFAULT_METRICS_PORT)
    if enabled and port != 0 and port == witness_port:
        raise _fail("metrics.port", port, f"a port of its own, not the witness's port "
                    f"({witness_port}), or 0 for any free port")  # fmt: skip
    return MetricsConfig(enabled=enabled, host=host, port=port)


def load_witness_config(path: Path) -> WitnessConfig:
    try:
        with open(path, "rb") as fh:
            raw = tomllib.load(fh)
    except FileNotFoundError:
        raise WitnessConfigError(f"config file {path}: not found") from None
    except OSError as e:
        raise WitnessConfigError(f"config file {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise WitnessConfigError(f"config file {path}: not valid TOML: {e}") from None
    base = path.resolve().parent
    unknown = sorted(set(raw) - set(_TOP))
    if unknown:
        raise WitnessConfigError(f"{unknown[0]}: unknown setting (allowed: {', '.join(_TOP)})")
    name = _string(raw, "name", None if "name" in raw else "", "name")
    if not is_valid_key_name(name):
        raise _fail("name", name, "the witness's key name, e.g. 'witness.example/w1': "
                    "non-empty, no spaces or '+'")  # fmt: skip
    key_file = _string(raw, "key_file", "", "key_file")
    if not key_file:
        raise _fail("key_file", key_file, "the witness's private key file (rng-witness keygen)")
    passphrase_env = _string(raw, "key_passphrase_env", "", "key_passphrase_env")
    permissions = _string(raw, "key_file_permissions", "warn", "key_file_permissions")
    if permissions not in KEY_FILE_PERMISSIONS:
        raise _fail("key_file_permissions", permissions, " or ".join(KEY_FILE_PERMISSIONS))
    state = _string(raw, "state", "witness-state.sqlite3", "state")
    host = _host(raw, "host")
    port = _port(raw, "port", 7380)
    prefix = _string(raw, "prefix", "", "prefix").rstrip("/")
    if prefix and (not prefix.startswith("/") or any(c.isspace() for c in prefix)):
        raise _fail("prefix", prefix, "'' or a URL path such as '/witness'")
    max_connections = raw.get("max_connections", 64)
    if type(max_connections) is not int or not 1 <= max_connections <= 10_000:
        raise _fail("max_connections", max_connections, "1 to 10000")
    metrics = _metrics(raw, port)
    tls = raw.get("tls", {})
    if not isinstance(tls, dict) or sorted(set(tls) - {"cert_file", "key_file"}):
        raise _fail("tls", tls, "a table with cert_file and key_file")
    cert = _string(tls, "cert_file", "", "tls.cert_file")
    tls_key = _string(tls, "key_file", "", "tls.key_file")
    if bool(cert) != bool(tls_key):
        raise WitnessConfigError("tls.cert_file and tls.key_file go together")
    logs_raw = raw.get("logs", [])
    if not isinstance(logs_raw, list) or not logs_raw:
        raise _fail("logs", logs_raw, "one or more [[logs]] entries with origin and keys")
    logs: list[LogEntry] = []
    for i, item in enumerate(logs_raw):
        where = f"logs[{i}]"
        if not isinstance(item, dict) or sorted(set(item) - {"origin", "keys"}):
            raise _fail(where, item, "a table with origin and keys")
        origin = _string(item, "origin", "", f"{where}.origin")
        if not origin or "\n" in origin or not origin.isprintable():
            raise _fail(f"{where}.origin", origin, "the log's checkpoint origin line")
        keys = item.get("keys")
        if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
            raise _fail(f"{where}.keys", keys, "a list of the log's verifier keys or .vkey files")
        try:
            verifiers = load_verifier_keys(keys, base_dir=base)
        except RngServiceError as e:
            raise WitnessConfigError(f"{where}.keys: {e}") from e
        if any(log.origin == origin for log in logs):
            raise WitnessConfigError(f"{where}.origin: {origin!r} is configured twice")
        logs.append(LogEntry(origin, tuple(verifiers)))
    return WitnessConfig(
        name=name,
        key_file=base / key_file,
        key_passphrase_env=passphrase_env,
        state=base / state,
        host=host,
        port=port,
        prefix=prefix,
        max_connections=max_connections,
        tls_cert_file=base / cert if cert else None,
        tls_key_file=base / tls_key if tls_key else None,
        logs=tuple(logs),
        key_file_permissions=permissions,
        metrics=metrics,
    )
