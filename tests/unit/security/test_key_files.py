"""Permission checks of private key files (rng_service.security.key_files), and the
development CA's key files: mode 0600 before a byte of a key is written (security.certs)."""

from __future__ import annotations

import datetime as dt
import os
import stat
from pathlib import Path

import pytest

from rng_service.security import certs
from rng_service.security.key_files import KeyFilePermissionError, check_key_file

NOW = dt.datetime(2026, 11, 29, tzinfo=dt.UTC)


def _key(tmp_path: Path, mode: int) -> Path:
    path = tmp_path / f"key-{mode:04o}.pem"
    path.write_bytes(b"-----BEGIN PRIVATE KEY-----\n")
    path.chmod(mode)
    return path


@pytest.mark.parametrize("mode", [0o600, 0o400, 0o700, 0o200])
def test_owner_only_modes_pass_silently(tmp_path: Path, mode: int) -> None:
    for strict in (False, True):
        assert check_key_file(_key(tmp_path, mode), setting="log.key_file", strict=strict) is None


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        (0o640, "group-readable"),
        (0o440, "group-readable"),  # a common secret mount
        (0o444, "group-readable and world-readable"),  # another
        (0o644, "group-readable and world-readable"),
        (0o604, "world-readable"),
        (0o620, "group-writable"),
    ],
)
def test_shared_modes_warn_or_are_refused_when_strict(
    tmp_path: Path, mode: int, words: str
) -> None:
    path = _key(tmp_path, mode)
    warning = check_key_file(path, setting="tls.key_file", strict=False)
    assert warning is not None
    assert f"{path} (mode {mode:04o}) is {words};" in warning
    with pytest.raises(KeyFilePermissionError) as e:
        check_key_file(path, setting="tls.key_file", strict=True)
    assert (e.value.setting, e.value.path) == ("tls.key_file", str(path))
    assert str(e.value).startswith(f"tls.key_file: {path} (mode {mode:04o}) is {words}")
    assert "strict" in str(e.value)


@pytest.mark.parametrize("mode", [0o602, 0o606, 0o666, 0o777, 0o402])
def test_world_writable_is_always_refused(tmp_path: Path, mode: int) -> None:
    path = _key(tmp_path, mode)
    for strict in (False, True):
        with pytest.raises(KeyFilePermissionError, match=r"writable by every user .* refused"):
            check_key_file(path, setting="log.key_file", strict=strict)


def test_a_link_is_judged_by_the_file_it_leads_to(tmp_path: Path) -> None:
    """Kubernetes secret volumes: the key's name is a link into a hidden directory."""
    target = _key(tmp_path, 0o644)
    link = tmp_path / "server.key"
    link.symlink_to(target)
    assert stat.S_IMODE(os.lstat(link).st_mode) == 0o777  # the link itself
    warning = check_key_file(link, setting="tls.key_file", strict=False)
    assert warning is not None
    assert "(mode 0644)" in warning


def test_a_missing_file_is_left_to_the_loader(tmp_path: Path) -> None:
    assert check_key_file(tmp_path / "absent.pem", setting="log.key_file", strict=True) is None


def test_dev_ca_keys_are_0600_before_their_bytes_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Overwriting a world-readable key file: the mode is tightened before the new private key
    is written into it (a reader never finds key bytes in a 0644 file)."""
    out = tmp_path / "certs"
    certs.write_dev_ca(out, ["game-1"], now=NOW)
    for name in ("ca.key", "server.key", "game-1.key", "ca.pem"):
        (out / name).chmod(0o644)
    modes: dict[str, int] = {}
    real_fdopen = os.fdopen

    def fdopen(fd: int, *args: object, **kwargs: object) -> object:
        # The moment before the first byte: record the file's mode (by its inode).
        modes[str(os.fstat(fd).st_ino)] = stat.S_IMODE(os.fstat(fd).st_mode)
        return real_fdopen(fd, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(certs.os, "fdopen", fdopen)
    files = certs.write_dev_ca(out, ["game-1"], now=NOW, overwrite=True)
    by_inode = {str(p.stat().st_ino): p.name for p in out.iterdir()}
    seen = {by_inode[ino]: mode for ino, mode in modes.items()}
    assert seen["ca.key"] == seen["server.key"] == seen["game-1.key"] == 0o600
    assert seen["ca.pem"] == 0o644
    for key in (files.ca_key, files.server_key, files.clients["game-1"][1]):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        assert key.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
