"""One log, one owner: a second ``rng-service serve`` on a busy port, or on the same SQLite log,
is refused at start with a message naming the pid that holds it; nothing is served twice."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from rng_service.log.keys import generate_key_pair
from rng_service.ownership import InstanceLock, LockFile, LockHeld, read_holder
from tests.integration.test_store_integrity import ORIGIN, Served, serve_refused, write_config


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def key(tmp_path: Path) -> Path:
    path = tmp_path / "key.pem"
    generate_key_pair(path, name=ORIGIN)
    return path


def test_a_second_instance_is_refused_naming_the_owner(tmp_path: Path, key: Path) -> None:
    port, locks = free_port(), tmp_path / "locks"
    first_dir, other_dir = tmp_path / "first", tmp_path / "other"
    first_dir.mkdir()
    other_dir.mkdir()
    first = Served(write_config(first_dir, key, port=port, lock_dir=locks))
    try:
        first.spins("x", 1)
        pid = first.proc.pid
        # The same port, another database: the port's lock names the owner.
        busy_port = serve_refused(write_config(other_dir, key, port=port, lock_dir=locks))
        assert busy_port["error"].startswith(f"server.port: port {port} belongs to another")
        assert (
            f"held by pid {pid} (lock file {locks / f'grpc-{port}.lock'})" in (busy_port["error"])
        )
        # Another port, the same SQLite log: the log's lock names the owner.
        same_log = serve_refused(
            write_config(other_dir, key, port=0, db=first_dir / "log.sqlite3", lock_dir=locks)
        )
        assert same_log["error"].startswith(
            f"storage.path: the SQLite log {first_dir / 'log.sqlite3'} belongs to another"
        )
        assert f"held by pid {pid}" in same_log["error"]
        assert "replicas share a PostgreSQL log" in same_log["error"]
        # The same port with locks kept elsewhere: no SO_REUSEPORT, so the bind itself fails.
        elsewhere = serve_refused(
            write_config(other_dir, key, port=port, lock_dir=tmp_path / "elsewhere")
        )
        assert elsewhere["error"].startswith(f"server.port: cannot listen on 127.0.0.1:{port}")
        first.spins("y", 1)  # the owner serves on
    finally:
        first.stop()
    assert '"event": "stopped"' in first.stderr
    # Once the owner is gone, its locks are free (the files stay, they lock nothing).
    again = Served(write_config(other_dir, key, port=port, lock_dir=locks))
    again.stop()
    assert '"event": "stopped"' in again.stderr


def test_lock_files_name_their_holder_and_free_on_release(tmp_path: Path) -> None:
    owner = InstanceLock()
    db = tmp_path / "log.sqlite3"
    owner.lock_store(db)
    owner.lock_port(tmp_path / "run", 50999)
    assert len(owner.descriptors()) == 2
    # Another open file description, even in this process, is refused (flock semantics).
    with pytest.raises(LockHeld) as info:
        LockFile.acquire(InstanceLock.store_lock_path(db))
    assert info.value.holder.pid is not None
    assert "held by pid" in str(info.value)
    link = tmp_path / "link.sqlite3"
    link.symlink_to(db)
    with pytest.raises(LockHeld):
        InstanceLock().lock_store(link)  # another path to the same log
    owner.release()
    assert owner.descriptors() == ()
    LockFile.acquire(InstanceLock.store_lock_path(db)).release()
    (tmp_path / "junk.lock").write_text("not json")
    assert read_holder(tmp_path / "junk.lock").pid is None


def test_the_store_lock_never_creates_the_logs_directory(tmp_path: Path) -> None:
    """A mistyped ``storage.path`` must not start a second log: the lock taken before the store
    opens refuses a database whose directory does not exist, and creates nothing."""
    db = tmp_path / "no-such-dir" / "log.sqlite3"
    with pytest.raises(FileNotFoundError):
        InstanceLock().lock_store(db)
    assert not db.parent.exists()
    InstanceLock().lock_port(tmp_path / "run", 50998)  # the lock directory is still made
    assert (tmp_path / "run").is_dir()


def test_the_store_refuses_a_missing_directory_naming_the_setting(tmp_path: Path) -> None:
    from rng_service.config import StorageSettings
    from rng_service.process.app import StartupError, open_storage

    db = tmp_path / "no-such-dir" / "log.sqlite3"
    with pytest.raises(StartupError) as info:
        open_storage(StorageSettings(path=db))
    assert str(info.value).startswith(f"storage.path: the directory {db.parent} of {db} does not")
    assert info.value.setting == "storage.path"
    assert not db.parent.exists()


def test_serve_with_a_mistyped_storage_directory_is_refused(tmp_path: Path, key: Path) -> None:
    """The issue's case as an operator meets it: exit 2 naming storage.path, no log created."""
    config = write_config(tmp_path, key, port=0, db=Path("/nonexistent-dir-i35/log.sqlite3"))
    refused = serve_refused(config)
    assert refused["setting"] == "storage.path"
    assert (
        "/nonexistent-dir-i35 of /nonexistent-dir-i35/log.sqlite3 does not exist"
        in (refused["error"])
    )
    assert not Path("/nonexistent-dir-i35").exists()
