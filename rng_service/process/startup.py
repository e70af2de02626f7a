"""What the service's start-up builds from a validated :class:`Config` and refuses: the
``StartupError`` that names the setting at fault, the log store opened as configured, the
signing keys (their files' modes checked) and their verifiers, and the client policies.
Shared by the composition root (:mod:`rng_service.process.app`), its start-up checks
(:mod:`rng_service.process.setup`) and the front ends (:mod:`rng_service.process.frontend`);
docs/operations/configuration.md, "Misconfigurations".
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from rng_service.config import Config, StorageSettings
from rng_service.errors import RngServiceError
from rng_service.log.keys import load_private_key, load_verifier, load_verifier_keys
from rng_service.log.note import Ed25519NoteSigner, NoteVerifier
from rng_service.rpc.log_servicer import PublicKeyInfo
from rng_service.security.key_files import KeyFilePermissionError, check_key_file
from rng_service.security.policy import ClientPolicy, RateLimit, Role
from rng_service.storage.base import LogStorage
from rng_service.storage.sqlite import SqliteStorage

__all__ = [
    "Endpoints",
    "StartupError",
    "check_store_directory",
    "configured_verifiers",
    "open_storage",
]

_log = logging.getLogger("rng_service")


class StartupError(Exception):
    """The service cannot start; the message says which setting or resource is at fault.

    ``setting`` and ``file``, when known, are logged as fields of the ``startup_failed`` event.
    """

    def __init__(self, message: str, *, setting: str = "", file: str = "") -> None:
        super().__init__(message)
        self.setting = setting or message.split(":", 1)[0]
        self.file = file


@dataclass(frozen=True)
class Endpoints:
    grpc_port: int
    metrics_port: int | None
    verify_page_port: int | None = None


def _check_key_file(path: Path | str, *, setting: str, permissions: str) -> None:
    """The key file's mode (rng_service.security.key_files): refused (StartupError) when
    world-writable, or group/world-readable with ``permissions`` "strict"; else a warning."""
    try:
        warning = check_key_file(path, setting=setting, strict=permissions == "strict")
    except KeyFilePermissionError as e:
        raise StartupError(str(e), setting=e.setting, file=e.path) from None
    if warning is not None:
        _log.warning(
            {
                "event": "key_file_permissions",
                "setting": setting,
                "file": str(path),
                "message": f"{warning}; server.key_file_permissions = strict refuses it",
            }
        )


def _signer_from(
    path: Path, name: str, passphrase_env: str, *, setting: str, permissions: str
) -> Ed25519NoteSigner:
    """A checkpoint signer from a private key file; errors name ``setting`` (the key file's).
    ``permissions``: ``server.key_file_permissions``."""
    _check_key_file(path, setting=setting, permissions=permissions)
    passphrase: bytes | None = None
    if passphrase_env:
        value = os.environ.get(passphrase_env)
        if value is None:
            env_setting = setting.removesuffix("_file") + "_passphrase_env"
            raise StartupError(f"{env_setting}: environment variable {passphrase_env} is not set")
        passphrase = value.encode("utf-8")
    try:
        key = load_private_key(path, passphrase)
    except RngServiceError as e:
        raise StartupError(f"{setting}: {e}") from e
    return Ed25519NoteSigner(name, key)


def _round_clients(config: Config) -> frozenset[str]:
    """Whose rounds ``VoidRound`` may void: the game servers (plaintext: the default client)."""
    if not config.tls.enabled:
        return frozenset({config.server.default_client_id})
    return frozenset(c.identity for c in config.clients if Role.GAME_SERVER.value in c.roles)


def _client_policies(config: Config) -> list[ClientPolicy]:
    """The ``[[clients]]`` entries as policy: roles, scopes and each one's rate limit."""
    default = config.rate_limit
    out = []
    for c in config.clients:
        limit: RateLimit | None = None
        if c.rate_per_second is not None and c.burst is not None:
            limit = RateLimit(c.rate_per_second, c.burst)
        elif default.enabled:
            limit = RateLimit(default.rate_per_second, default.burst)
        out.append(
            ClientPolicy(
                identity=c.identity,
                roles=frozenset(Role(r) for r in c.roles),
                tables=frozenset(c.tables),
                kinds=frozenset(c.kinds),
                profiles=frozenset(c.profiles),
                rate_limit=limit,
                logs=config.client_logs(c),
            )
        )
    return out


def open_storage(
    settings: StorageSettings, *, read_only: bool = False, migrate: bool = False
) -> LogStorage:
    """The configured log store; ``read_only``: an existing SQLite log opened for reading only
    (a PostgreSQL log is only read by what uses it read-only); ``migrate``: an existing log
    brought to this release's schema (``rng-service migrate-store``). Errors name the
    setting."""
    if settings.driver == "postgres":
        # Imported here: only a PostgreSQL deployment loads the driver (and psycopg).
        from rng_service.storage.postgres import PostgresStorage

        password: str | None = None
        if settings.postgres_password_env:
            password = os.environ.get(settings.postgres_password_env)
            if password is None:
                raise StartupError(
                    "storage.postgres_password_env: environment variable "
                    f"{settings.postgres_password_env} is not set"
                )
        try:
            return PostgresStorage(
                settings.postgres_dsn,
                password=password,
                connect_timeout_seconds=settings.postgres_connect_timeout_seconds,
                lock_timeout_ms=settings.postgres_lock_timeout_ms,
                migrate=(settings.postgres_migrate or migrate) and not read_only,
            )
        except RngServiceError as e:
            raise StartupError(f"storage.postgres_dsn: {e}") from e
    path = settings.path
    try:
        if read_only or migrate:
            if not path.is_file():
                raise StartupError(f"storage.path: {path} does not exist")
            return SqliteStorage(path, read_only=read_only, migrate=migrate and not read_only)
        check_store_directory(path)
        return SqliteStorage(path)
    except (OSError, RngServiceError) as e:
        raise StartupError(f"storage.path: cannot open {path}: {e}") from e


def check_store_directory(path: Path) -> None:
    """Refuses an SQLite log whose directory does not exist (StartupError naming
    ``storage.path``): the service never creates it, so that a typo in the path cannot start a
    second, empty log beside the real one. The directory is the deployment's to create
    (``make run``, the image, the compose volume)."""
    if not path.parent.is_dir():
        raise StartupError(
            f"storage.path: the directory {path.parent} of {path} does not exist (allowed: a "
            "file in an existing directory; create the directory first: the service never "
            "creates a log's directory, so that a mistyped path cannot start a second, empty log)"
        )


def _verifier_from(
    path: Path, name: str, passphrase_env: str, *, setting: str, permissions: str
) -> NoteVerifier:
    """A signing key's verifier: from its public half ``<path>.pub`` (written by keygen) if
    there is one, so that checking needs no private key, else from the private key."""
    public = path.with_name(path.name + ".pub")
    if public.is_file():
        try:
            return load_verifier(public, name=name)
        except RngServiceError as e:
            raise StartupError(f"{setting}: {e}") from e
    return _signer_from(
        path, name, passphrase_env, setting=setting, permissions=permissions
    ).verifier()


def configured_verifiers(config: Config) -> list[NoteVerifier]:
    """Every key whose checkpoints may be in the log: the active, co-signing and retired
    keys of ``[log]``, as verifiers."""
    cfg = config.log
    permissions = config.server.key_file_permissions
    keys = [_verifier_from(cfg.key_file, cfg.key_name, cfg.key_passphrase_env,
                           setting="log.key_file", permissions=permissions)]  # fmt: skip
    if cfg.cosign_key_file:
        keys.append(
            _verifier_from(
                cfg.key_file.parent / cfg.cosign_key_file, cfg.cosign_key_name,
                cfg.cosign_key_passphrase_env, setting="log.cosign_key_file",
                permissions=permissions,
            )
        )  # fmt: skip
    try:
        retired = load_verifier_keys(cfg.retired_key_items(), base_dir=cfg.key_file.parent)
    except RngServiceError as e:
        raise StartupError(f"log.retired_keys: {e}") from e
    return list(dict.fromkeys([*keys, *retired]))


@dataclass(frozen=True)
class _Keys:
    """The keys of the log: the active signer, the co-signers of a rotation's overlap window and
    the retired keys that stay published (their verifiers)."""

    signer: Ed25519NoteSigner
    cosigners: list[Ed25519NoteSigner]
    retired: list[NoteVerifier]

    def verifiers(self) -> list[NoteVerifier]:
        """Every key whose checkpoints may be in the store."""
        return [s.verifier() for s in (self.signer, *self.cosigners)] + self.retired

    def public_keys(self) -> list[PublicKeyInfo]:
        """What ``GetPublicKeys`` answers: the active key first, then the co-signers."""
        return [
            PublicKeyInfo(
                key_id=f"{v.key_id:08x}",
                name=v.name,
                public_key=v.public_key.public_bytes_raw(),
                verifier_key=v.verifier_key(),
                active=i == 0,
                cosigning=1 <= i <= len(self.cosigners),
            )
            for i, v in enumerate(self.verifiers())
        ]
