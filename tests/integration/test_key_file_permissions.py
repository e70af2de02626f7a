"""The service checks its private key files' modes at start-up (server.key_file_permissions):
a world-writable signing or TLS key stops the start, a group- or world-readable one is a
logged warning (``warn``, the default) or stops it (``strict``). Nothing is opened or bound
before these checks."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from pathlib import Path

import pytest

from rng_service.config import Config, ConfigError, load_config
from rng_service.process.app import Service, StartupError
from rng_service.security.certs import write_dev_ca
from tests.fakes import CounterEntropy
from tests.integration.conftest import make_config, start


def _start_fails(config: Config) -> None:
    asyncio.run(Service(config, entropy=CounterEntropy()).start())


def test_a_shared_signing_key_is_a_warning_by_default(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = make_config(tmp_path)
    config.log.key_file.chmod(0o440)  # a typical secret mount
    with caplog.at_level(logging.WARNING):
        running = start(config)
    try:
        events = [r.msg for r in caplog.records if isinstance(r.msg, dict)]
        warning = next(e for e in events if e["event"] == "key_file_permissions")
        assert warning["setting"] == "log.key_file"
        assert warning["file"] == str(config.log.key_file)
        assert "(mode 0440) is group-readable" in warning["message"]
        assert "server.key_file_permissions = strict" in warning["message"]
    finally:
        running.stop()


def test_strict_refuses_a_shared_signing_key(tmp_path: Path) -> None:
    config = make_config(tmp_path, RNG_SERVICE__SERVER__KEY_FILE_PERMISSIONS="strict")
    config.log.key_file.chmod(0o644)
    with pytest.raises(StartupError, match=r"^log\.key_file: .*key\.pem \(mode 0644\) is group"):
        _start_fails(config)
    assert not (tmp_path / "log.sqlite3").exists()  # refused before the store was opened
    config.log.key_file.chmod(0o400)
    running = start(config)  # owner-only: fine, strict or not
    running.stop()


def test_a_world_writable_signing_key_is_always_refused(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    config.log.key_file.chmod(0o646)
    with pytest.raises(StartupError, match=r"^log\.key_file: .* writable by every user") as e:
        _start_fails(config)
    assert e.value.file == str(config.log.key_file)


def _tls_config(tmp_path: Path, **env: str) -> Config:
    certs = tmp_path / "certs"
    if not certs.exists():
        write_dev_ca(certs, ["game-1"], now=dt.datetime.now(dt.UTC))
    base = make_config(tmp_path)
    return load_config(
        None,
        environ={
            "RNG_SERVICE__SERVER__PORT": "0",
            "RNG_SERVICE__METRICS__ENABLED": "false",
            "RNG_SERVICE__STORAGE__PATH": str(base.storage.path),
            "RNG_SERVICE__LOG__KEY_FILE": str(base.log.key_file),
            "RNG_SERVICE__LOG__ORIGIN": base.log.origin,
            "RNG_SERVICE__TLS__CERT_FILE": str(certs / "server.pem"),
            "RNG_SERVICE__TLS__KEY_FILE": str(certs / "server.key"),
            "RNG_SERVICE__TLS__CLIENT_CA_FILE": str(certs / "ca.pem"),
            **env,
        },
        base_dir=tmp_path,
    )


def test_the_tls_key_is_checked_too(tmp_path: Path) -> None:
    config = _tls_config(tmp_path, RNG_SERVICE__SERVER__KEY_FILE_PERMISSIONS="strict")
    key = Path(config.tls.key_file)
    key.chmod(0o640)
    with pytest.raises(StartupError, match=r"^tls\.key_file: .*server\.key \(mode 0640\)") as e:
        _start_fails(config)
    assert e.value.setting == "tls.key_file"
    key.chmod(0o602)  # world-writable: refused in the default mode too
    with pytest.raises(StartupError, match=r"^tls\.key_file: .* writable by every user"):
        _start_fails(_tls_config(tmp_path))


def test_the_setting_allows_warn_or_strict(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^server\.key_file_permissions: 'lax' .*warn or strict"):
        load_config(None, environ={"RNG_SERVICE__SERVER__KEY_FILE_PERMISSIONS": "lax"})
