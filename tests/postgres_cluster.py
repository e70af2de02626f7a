"""A throwaway PostgreSQL cluster for the tests, started once per session.

PostgreSQL refuses to initialise or run as root, and Debian keeps its binaries off PATH
(``/usr/lib/postgresql/<version>/bin``). So, as root, the cluster is created and run as the
``postgres`` user in a fresh directory under /tmp owned by that user (a root-only pytest temp
dir would not do); as any other user, as that user. The server listens on a unix socket in that
directory and on a free 127.0.0.1 port, nothing else. Authentication is ``trust`` except for the
role :data:`PASSWORD_ROLE` over TCP, which needs its password (SCRAM), so that the password path
of the driver is tested for real.

If PostgreSQL is not installed, :func:`find_bindir` raises :class:`PostgresNotInstalled`, whose
message names the Debian package; the session fixture turns it into a test failure, not a skip.
The cluster is stopped and its directory removed by the fixture's finalizer, and at interpreter
exit if the session ends some other way.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg

__all__ = [
    "PASSWORD",
    "PASSWORD_ROLE",
    "Cluster",
    "PostgresNotInstalled",
    "current",
    "find_bindir",
    "start_session_cluster",
    "stop_session_cluster",
]

PACKAGE = "postgresql"
PASSWORD_ROLE = "rng_password_user"
PASSWORD = "correct horse battery staple"


class PostgresNotInstalled(RuntimeError):
    """No PostgreSQL server binaries (initdb, pg_ctl, postgres) were found."""


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", path.parent.parent.name))


def find_bindir(*, debian_root: Path = Path("/usr/lib/postgresql")) -> Path:
    """The directory holding ``initdb`` and ``pg_ctl``: ``pg_config --bindir``, else the newest
    ``/usr/lib/postgresql/*/bin``, else PATH."""
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        if out.returncode == 0 and out.stdout.strip():
            candidates.append(Path(out.stdout.strip()))
    debian = sorted(debian_root.glob("*/bin/initdb"), key=_version_key)
    candidates.extend(p.parent for p in reversed(debian))
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).parent)
    for directory in candidates:
        if all((directory / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres")):
            return directory
    raise PostgresNotInstalled(
        "PostgreSQL is not installed (no initdb/pg_ctl/postgres under `pg_config --bindir`, "
        f"/usr/lib/postgresql/*/bin or PATH). Install the Debian package `{PACKAGE}` "
        f"(`apt-get install -y {PACKAGE}`; `make test` does it via scripts/install-system-deps.sh)."
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Cluster:
    """One PostgreSQL cluster in a temporary directory; see the module docstring."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self._as_root = os.geteuid() == 0
        if self._as_root:
            try:
                self._owner: pwd.struct_passwd | None = pwd.getpwnam("postgres")
            except KeyError:
                raise PostgresNotInstalled(
                    "running as root, but there is no `postgres` user to run PostgreSQL as; "
                    f"install the Debian package `{PACKAGE}`, which creates it"
                ) from None
        else:
            self._owner = None
        self.base = Path(tempfile.mkdtemp(prefix="rng-pg-", dir="/tmp"))
        if self._owner is not None:
            os.chown(self.base, self._owner.pw_uid, self._owner.pw_gid)
        self.datadir = self.base / "data"
        self.logfile = self.base / "server.log"
        self.port = _free_port()
        self.running = False
        self._databases: dict[Path, str] = {}
        self._lock = threading.Lock()

    # -- processes ---------------------------------------------------------------------------

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(self.bindir / args[0]), *args[1:]]
        if self._as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(
            command, capture_output=True, text=True, check=False, cwd=self.base, timeout=120
        )
        if check and result.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout}\n"
                f"{result.stderr}\n{self.log_tail()}"
            )
        return result

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.logfile.read_text(errors="replace")
        except OSError:
            return ""
        return "server log:\n" + "\n".join(text.splitlines()[-lines:])

    def init(self) -> None:
        # --no-sync: a throwaway cluster need not survive a power cut of the test machine;
        # the server itself still fsyncs every commit.
        self._run(
            "initdb",
            "-D",
            str(self.datadir),
            "--username=postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--no-sync",
            "--no-instructions",
        )
        (self.datadir / "pg_hba.conf").write_text(
            "local all all trust\n"
            "local replication all trust\n"  # a standby's base backup and WAL stream
            f"host all {PASSWORD_ROLE} 127.0.0.1/32 scram-sha-256\n"
            "host all all 127.0.0.1/32 trust\n"
        )
        self._write_port()

    def _write_port(self) -> None:
        with open(self.datadir / "postgresql.conf", "a") as conf:
            conf.write(
                "\n# rng-service test cluster\n"
                "listen_addresses = '127.0.0.1'\n"
                f"port = {self.port}\n"
                f"unix_socket_directories = '{self.base}'\n"
                "max_connections = 200\n"
                "fsync = on\n"
                "synchronous_commit = on\n"
            )

    def start(self) -> None:
        for attempt in range(3):
            result = self._run(
                "pg_ctl", "-D", str(self.datadir), "-l", str(self.logfile), "-w", "-t", "60",
                "start", check=False,
            )  # fmt: skip
            if result.returncode == 0:
                self.running = True
                return
            if "could not bind" in self.log_tail(10) and attempt < 2:
                self.port = _free_port()  # another process took the port meanwhile
                self._write_port()
                continue
            raise RuntimeError(
                f"pg_ctl start failed ({result.returncode}):\n{result.stdout}\n{result.stderr}\n"
                f"{self.log_tail()}"
            )

    def init_standby_of(self, primary: Cluster, *, name: str) -> None:
        """Makes this (not yet initialised, or fenced and wiped) cluster a streaming-replication
        standby of ``primary``, as docs/operations/postgresql.md ("A streaming-replication standby")
        sets one up: ``pg_basebackup -X stream -C -S <name> -R`` (a replication slot, standby.signal
        and primary_conninfo), and ``application_name=<name>`` in primary_conninfo, the name
        ``synchronous_standby_names`` waits for. Over the primary's unix socket. Start it with
        :meth:`start`, then make it synchronous with ``primary.make_synchronous(name)``."""
        if self.running:
            raise RuntimeError("stop the cluster before making it a standby")
        shutil.rmtree(self.datadir, ignore_errors=True)
        self._run(
            "pg_basebackup", "-h", str(primary.base), "-p", str(primary.port), "-U", "postgres",
            "-D", str(self.datadir), "-X", "stream", "-C", "-S", name, "-R", "--no-sync",
            "--checkpoint=fast",
        )  # fmt: skip
        self._write_port()  # after the primary's settings, which the base backup copied
        with open(self.datadir / "postgresql.auto.conf", "a") as conf:
            conf.write(
                f"primary_conninfo = 'host={primary.base} port={primary.port} user=postgres "
                f"application_name={name}'\n"
            )

    def make_synchronous(self, standby: str, *, timeout: float = 60.0) -> None:
        """On a primary: ``synchronous_standby_names = 'FIRST 1 (<standby>)'`` once that
        standby streams, then waits until ``pg_stat_replication`` says it is ``sync``."""
        deadline = time.monotonic() + timeout
        with self.admin() as conn:
            conn.execute(f"ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1 ({standby})'")
            conn.execute("SELECT pg_reload_conf()")
            while True:
                row = conn.execute(
                    "SELECT state, sync_state FROM pg_stat_replication WHERE application_name = %s",
                    (standby,),
                ).fetchone()
                if row == ("streaming", "sync"):
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"standby {standby} is not sync: {row}\n{self.log_tail()}")
                time.sleep(0.05)

    def promote(self) -> None:
        """Promotes a standby to a primary (``pg_ctl promote``, waiting until it takes writes)."""
        self._run("pg_ctl", "-D", str(self.datadir), "-w", "-t", "60", "promote")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.datadir), "-m", mode, "-w", "-t", "60", "stop")
        self.running = False

    def remove(self) -> None:
        """Stops the server (immediately) if it runs, and deletes the cluster directory."""
        if self.running:
            with contextlib.suppress(Exception):
                self.stop("immediate")
        shutil.rmtree(self.base, ignore_errors=True)

    # -- connections and databases -----------------------------------------------------------

    def dsn(self, dbname: str = "postgres", *, user: str = "postgres") -> str:
        """A libpq connection string over the unix socket."""
        return f"host={self.base} port={self.port} dbname={dbname} user={user}"

    def tcp_dsn(self, dbname: str, *, user: str) -> str:
        """A libpq connection string over TCP on 127.0.0.1 (password roles use this)."""
        return f"host=127.0.0.1 port={self.port} dbname={dbname} user={user}"

    @contextlib.contextmanager
    def admin(self, dbname: str = "postgres") -> Iterator[psycopg.Connection[tuple[object, ...]]]:
        with psycopg.connect(self.dsn(dbname), autocommit=True) as conn:
            yield conn

    def create_database(self, name: str) -> None:
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')

    def drop_database(self, name: str) -> None:
        with self.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def database_for(self, directory: Path) -> str:
        """The database belonging to a test's temporary ``directory`` (created on first use),
        so that a persistent driver "reopens" the same data for the same directory."""
        with self._lock:
            name = self._databases.get(directory)
            if name is None:
                name = "t_" + hashlib.sha256(str(directory).encode()).hexdigest()[:20]
                self.create_database(name)
                self._databases[directory] = name
            return name

    def drop_database_for(self, directory: Path) -> None:
        with self._lock:
            name = self._databases.pop(directory, None)
        if name is not None and self.running:
            self.drop_database(name)

    def ensure_password_role(self) -> None:
        with self.admin() as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_roles WHERE rolname = %s", (PASSWORD_ROLE,)
            ).fetchone()
            if not exists:
                conn.execute(f"CREATE ROLE {PASSWORD_ROLE} LOGIN PASSWORD '{PASSWORD}' CREATEDB")


_session: Cluster | None = None


def start_session_cluster() -> Cluster:
    """Starts the session's cluster (once) and registers its removal at interpreter exit."""
    global _session
    if _session is None:
        cluster = Cluster(find_bindir())
        atexit.register(cluster.remove)
        try:
            cluster.init()
            cluster.start()
        except BaseException:
            cluster.remove()
            raise
        _session = cluster
    return _session


def stop_session_cluster() -> None:
    global _session
    if _session is not None:
        _session.remove()
        _session = None


def current() -> Cluster:
    """The running session cluster; the ``postgres_cluster`` fixture must have started it."""
    if _session is None:
        raise RuntimeError("the postgres_cluster session fixture has not started the cluster")
    return _session
