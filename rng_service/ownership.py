"""One owner per log and per port: advisory lock files held for the process's life.

Owns the locks that make a second ``rng-service serve`` fail at start, with a message naming
the process that holds what it wanted, instead of serving beside the first one:

- **the port lock** ``<server.lock_dir>/grpc-<port>.lock``: one instance per gRPC port (the
  server no longer sets ``SO_REUSEPORT``, so the bind would fail too, but without saying who
  holds the port);
- **the store lock** ``<storage.path>.lock`` beside an SQLite log: one writing process per
  SQLite file, whatever its port. A PostgreSQL log has none: replicas on different ports or
  hosts share it by design (its writers are serialised by the database).

Each lock is an exclusive ``flock(2)`` on its own file (never on the SQLite database itself,
whose byte-range locks SQLite owns), taken without waiting; the holder writes its pid and host
into the file. The kernel releases the lock when the process ends, however it ends, so a file
left behind by a crash locks nothing. ``flock`` locks belong to the open file description:
they are not lost when some other descriptor of the file is closed (as ``fcntl`` record locks
would be), and a child process that inherits the descriptor shares the lock.

That last property is how processes of one instance can later join its owner (the issue "Use
more than one core": front-end processes started by the owner): :class:`InstanceLock` is the
one place that holds the instance's locks, its :meth:`InstanceLock.descriptors` are what a
child inherits (``pass_fds``), and :meth:`InstanceLock.holder` of a lock file names the owner
a child must descend from. A stranger's instance still finds every lock taken.

Only this module and the composition root (``rng_service.process.app``) use it; it imports nothing
from the rest of the project.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Holder", "InstanceLock", "LockFile", "LockHeld", "read_holder"]


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a lock, as its lock file says (``None`` where the file does not say yet)."""

    pid: int | None
    host: str | None

    def describe(self) -> str:
        if self.pid is None:
            return "another process (it has not written its pid yet)"
        where = f" on host {self.host}" if self.host and self.host != socket.gethostname() else ""
        return f"pid {self.pid}{where}"


class LockHeld(Exception):
    """Another process holds the lock: ``path`` and its ``holder``."""

    def __init__(self, path: Path, holder: Holder) -> None:
        self.path = path
        self.holder = holder
        super().__init__(f"held by {holder.describe()} (lock file {path})")


def read_holder(path: Path) -> Holder:
    """The holder a lock file names; an unreadable or partly written file names nobody."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Holder(None, None)
    if not isinstance(data, dict):
        return Holder(None, None)
    pid, host = data.get("pid"), data.get("host")
    return Holder(
        pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
        host if isinstance(host, str) else None,
    )


class LockFile:
    """An exclusive ``flock`` on one file, taken without waiting, held until :meth:`release`
    or the end of the process."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, path: Path, *, make_directory: bool = True) -> LockFile:
        """Takes the lock on ``path`` (created if missing, and its directory too with
        ``make_directory``) and writes this process's pid and host into it. Raises
        :class:`LockHeld` naming the holder if another process has it, ``OSError`` if the file
        cannot be opened (``FileNotFoundError``: its directory does not exist)."""
        if make_directory:
            path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LockHeld(path, read_holder(path)) from None
        except BaseException:
            os.close(fd)
            raise
        try:
            record = json.dumps({"pid": os.getpid(), "host": socket.gethostname()}) + "\n"
            os.ftruncate(fd, 0)
            os.pwrite(fd, record.encode("utf-8"), 0)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd)

    @property
    def fd(self) -> int | None:
        return self._fd

    def release(self) -> None:
        """Gives the lock up (the file stays: removing it would race with a new holder)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


class InstanceLock:
    """The locks that make this process the one owner of its log and its gRPC port."""

    def __init__(self) -> None:
        self._locks: list[LockFile] = []

    @staticmethod
    def port_lock_path(lock_dir: Path, port: int) -> Path:
        return lock_dir / f"grpc-{port}.lock"

    @staticmethod
    def store_lock_path(database: Path) -> Path:
        """``<database>.lock`` beside the real file (a symlinked path locks the same file)."""
        real = database.resolve()
        return real.with_name(real.name + ".lock")

    def lock_port(self, lock_dir: Path, port: int) -> LockFile:
        """Takes the port's lock (creating ``lock_dir`` if missing); raises :class:`LockHeld`
        or ``OSError``."""
        return self._take(self.port_lock_path(lock_dir, port), make_directory=True)

    def lock_store(self, database: Path) -> LockFile:
        """Takes the SQLite log's lock; raises :class:`LockHeld` or ``OSError``
        (``FileNotFoundError`` when the database's directory does not exist: it is never
        created here, so that a mistyped ``storage.path`` cannot start a second log)."""
        return self._take(self.store_lock_path(database), make_directory=False)

    def _take(self, path: Path, *, make_directory: bool) -> LockFile:
        lock = LockFile.acquire(path, make_directory=make_directory)
        self._locks.append(lock)
        return lock

    @staticmethod
    def holder(path: Path) -> Holder:
        """Who holds (or last held) the lock of ``path``."""
        return read_holder(path)

    def descriptors(self) -> tuple[int, ...]:
        """The held locks' file descriptors: a child process given these (``pass_fds``)
        shares the locks with this owner."""
        return tuple(lock.fd for lock in self._locks if lock.fd is not None)

    def release(self) -> None:
        """Releases every lock this instance holds (also done by the end of the process)."""
        while self._locks:
            self._locks.pop().release()
