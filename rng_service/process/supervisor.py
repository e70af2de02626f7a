"""The supervising process of a deployment with several logs (``[[logs]]``): a process per log,
and the front ends of the deployment's one port.

``rng-service serve`` with several ``[[logs]]`` runs this. For each log it starts a log process
(``python -m rng_service.process.log_process``, a fresh interpreter: no gRPC object crosses a
fork) that is that log's whole service (:class:`rng_service.process.app.Service` on the log's
view of the configuration, :meth:`rng_service.config.Config.for_log`): it alone owns the log's
store (its one-owner lock), generator and signing key, signs its checkpoints, talks to its
witnesses, serves its gRPC port with its health service, and its metrics port with every series
labelled ``log``; with ``--front-ends N`` it is the log writer of the existing writer-process
design and starts its own N front ends. The configuration was validated once, here; each log
process receives its own view as one pickled frame on its standard input (the same program,
started by this process: why pickle is safe, as in ``rng_service.process.ipc``), and an
environment without the other logs' key passphrases and database passwords.

A log process that exits while the deployment serves (killed, crashed) is logged and started
again at once (at most once a second); the other logs' processes are not touched and keep
serving. If the supervisor itself dies, its log processes stop (gracefully) with it, so that a
supervisor started again finds every log's locks and ports free. Nothing acknowledged is lost:
a log answers an outcome only after its group committed (``rng_service.writer.appender``), and
the new process checks the store before it serves. A graceful stop (SIGTERM or SIGINT) sends
SIGTERM to every log process, each draining for ``server.shutdown_grace_seconds``, and waits
for them.

The deployment's one port, ``server.port``: once every log serves, the supervisor takes the
port's lock (``rng_service.ownership``) and starts ``--front-ends N`` shared front ends
(``rng_service.process.shared_frontend``; N defaults to 1), each with a control channel
(``rng_service.process.handoff``). Each log process is started with its ends of N new
socketpairs (inherited, their numbers in its frame); once it serves, the supervisor hands each
front end its end of one (``attach``, over the control channel), so every front end holds a
channel to every log's writer, and again after every restart of a log. A shared front end that
exits is started again, and since its channels died with it, every log process is stopped
gracefully and started again (its keeper restarts it), handing the new front end a channel.
A log with a ``port`` of its own also serves that port itself.

Readiness: once every log and the shared port serve, one JSON line on standard output,
``{"event": "listening", "grpc_port": SHARED_PORT, "logs": {ORIGIN: {"grpc_port": OWN_PORT or
null, "metrics_port": ...}, ...}}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import pickle
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field

from rng_service.config import Config
from rng_service.ownership import InstanceLock, LockHeld
from rng_service.process import handoff

__all__ = ["RESTART_INTERVAL", "Supervisor", "run_supervisor"]

_log = logging.getLogger("rng_service")

#: Seconds a log process may take to serve (store check, keys, witnesses).
START_TIMEOUT = 120.0
#: Fewest seconds between two starts of the same log's process.
RESTART_INTERVAL = 1.0
#: Longest wait between two attempts to start a log process that keeps failing.
MAX_RESTART_INTERVAL = 30.0


def _stderr() -> int | None:
    """The descriptor behind ``sys.stderr`` (the JSON log), or None to inherit fd 2."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None


@dataclass
class _LogProcess:
    origin: str
    config: Config
    #: Whether the log has a port of its own (``[[logs]] port``) beside the shared one.
    own_port: bool = True
    proc: subprocess.Popen[bytes] | None = None
    #: Per process (pid): the supervisor's ends of its channels to the shared front ends,
    #: one per front end, handed to them (then closed here) once the process serves.
    ends: dict[int, list[socket.socket]] = field(default_factory=dict)
    #: Per process (pid): the descriptor numbers of its ends, as it inherited them.
    fds: dict[int, list[int]] = field(default_factory=dict)
    started: float = 0.0
    ports: dict[str, int | None] = field(default_factory=dict)
    restarts: int = 0
    #: A process started ahead, its imports done, waiting for this log's frame.
    standby: subprocess.Popen[bytes] | None = None


class StartFailed(Exception):
    """A log process did not serve; the message says which log and why."""


class Supervisor:
    """Starts, watches and stops one process per configured log."""

    def __init__(self, config: Config, *, front_ends: int = 1) -> None:
        self._config = config
        self._front_ends = front_ends
        self._logs = [
            _LogProcess(d.origin, config.for_log(d.origin), own_port=d.port is not None)
            for d in config.logs
        ]
        self._stopping = False
        self._keepers: list[asyncio.Task[None]] = []
        #: The shared front ends of the deployment's one port (``server.port``).
        self._shared: list[_Shared] = []
        self.port: int | None = None
        self._owner = InstanceLock()

    def _environment(self, own: Config) -> dict[str, str]:
        """The environment without the secrets of the other logs (their key passphrases and
        database passwords): a log process gets its own only."""
        env = dict(os.environ)
        for d in self._config.logs:
            if d.origin == own.log.origin:
                continue
            for name in (d.key_passphrase_env, d.cosign_key_passphrase_env,
                         d.postgres_password_env):  # fmt: skip
                if name and name not in (
                    own.log.key_passphrase_env, own.log.cosign_key_passphrase_env,
                    own.storage.postgres_password_env,
                ):  # fmt: skip
                    env.pop(name, None)
        return env

    def _spawn(self, log: _LogProcess) -> subprocess.Popen[bytes]:
        """A log process, with its ends of new channels to the shared front ends (one each;
        the supervisor keeps the other ends until the process serves)."""
        pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
                 for _ in range(self._front_ends)]  # fmt: skip
        fds = [theirs.fileno() for _, theirs in pairs]  # the same numbers in the child
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "rng_service.process.log_process", str(os.getpid())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=_stderr(),
                env=self._environment(log.config),
                pass_fds=tuple(fds),
                # Its own session: a terminal's Ctrl-C reaches the supervisor only, which stops
                # the logs in order (SIGTERM each); PR_SET_PDEATHSIG ties them to it still.
                start_new_session=True,
            )
        except BaseException:
            for pair in pairs:
                for end in pair:
                    end.close()
            raise
        for _, theirs in pairs:
            theirs.close()
        log.ends[proc.pid] = [ours for ours, _ in pairs]
        log.fds[proc.pid] = fds
        return proc

    async def _start(self, log: _LogProcess) -> None:
        """Starts ``log``'s process (its standby, if one is ready) and waits until it serves
        (its listening line); then starts the next standby."""
        proc, log.standby = log.standby, None
        if proc is None or proc.poll() is not None:
            proc = self._spawn(log)
        log.proc = proc
        log.started = time.monotonic()
        stdin, stdout = proc.stdin, proc.stdout
        if stdin is None or stdout is None:  # not reached: both are pipes (_spawn)
            raise StartFailed(f"logs ({log.origin}): its process has no pipes")
        frame = pickle.dumps(
            (log.config, self._front_ends, log.own_port, log.fds.pop(proc.pid, [])),
            protocol=pickle.HIGHEST_PROTOCOL,
        )
        try:
            await asyncio.to_thread(stdin.write, frame)
            await asyncio.to_thread(stdin.close)
        except BrokenPipeError:
            pass  # it exited already: its status says why
        try:
            line = await asyncio.wait_for(asyncio.to_thread(stdout.readline), START_TIMEOUT)
        except TimeoutError:
            proc.kill()
            line = b""
        try:
            event = json.loads(line) if line else {}
        except ValueError:
            event = {}
        if event.get("event") != "listening":
            _close_all(log.ends.pop(proc.pid, []))
            status = await asyncio.to_thread(proc.wait)
            if event.get("event") == "startup_failed":
                raise StartFailed(_in_log(self._config, log.origin, str(event.get("error"))))
            raise StartFailed(
                f"logs ({log.origin}): its process did not serve (exit status {status}); its "
                "log lines say why"
            )
        log.ports = {"grpc_port": event.get("grpc_port"),
                     "metrics_port": event.get("metrics_port")}  # fmt: skip
        self._hand_over(log, proc)
        # A restart serves on the same ports, also those the kernel picked (port 0).
        cfg = log.config
        log.config = dataclasses.replace(
            cfg,
            server=dataclasses.replace(cfg.server, port=int(event["grpc_port"]))
            if log.own_port
            else cfg.server,
            metrics=dataclasses.replace(cfg.metrics, port=int(event["metrics_port"]))
            if event.get("metrics_port") is not None
            else cfg.metrics,
        )
        if not self._stopping:
            log.standby = self._spawn(log)

    def _hand_over(self, log: _LogProcess, proc: subprocess.Popen[bytes]) -> None:
        """Sends each running shared front end its end of its channel to ``log``'s process
        (which serves now); before the front ends run, the ends wait for them."""
        if not self._shared:
            return
        ends = log.ends.pop(proc.pid, [])
        for shared, end in zip(self._shared, ends, strict=False):
            try:
                handoff.send(shared.ctrl, "attach", [end.fileno()])
            except OSError as e:  # that front end is gone: its restart restarts the logs
                _log.error({"event": "log_handover_failed", "log": log.origin,
                            "front_end": shared.index, "error": str(e)})  # fmt: skip
        _close_all(ends)

    async def _start_shared(self, index: int, port: int) -> int:
        """Starts shared front end ``index`` on ``port`` (0: the kernel picks), hands it
        every log's channel, and returns the port once it listens."""
        ours, theirs = handoff.control_pair()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "rng_service.process.shared_frontend",
                 str(theirs.fileno()), str(os.getpid())],
                pass_fds=(theirs.fileno(), *self._owner.descriptors()),
                stdin=subprocess.DEVNULL, stderr=_stderr(), env=self._shared_environment(),
                start_new_session=True,
            )  # fmt: skip
        finally:
            theirs.close()
        shared = _Shared(index, proc, ours)
        if index < len(self._shared):
            self._shared[index] = shared
        else:
            self._shared.append(shared)
        handoff.send(ours, handoff.SharedBoot(self._config, index, port))
        for log in self._logs:
            proc_of_log = log.proc
            ends = log.ends.get(proc_of_log.pid, []) if proc_of_log is not None else []
            if index < len(ends):
                handoff.send(ours, "attach", [ends[index].fileno()])
        try:
            message, _ = await asyncio.wait_for(
                asyncio.to_thread(handoff.receive, ours), START_TIMEOUT
            )
        except (TimeoutError, EOFError, OSError):
            message = None
        if not (isinstance(message, tuple) and message[0] == "ready"):
            proc.kill()
            await asyncio.to_thread(proc.wait)
            raise StartFailed(
                f"server.port: the shared front end {index} did not listen on port {port} "
                f"(exit status {proc.poll()}); its log lines say why"
            )
        return int(message[1])

    def _shared_environment(self) -> dict[str, str]:
        """No log's key passphrase: a shared front end holds no key. (It reads each log's
        store, so it keeps the database passwords.)"""
        env = dict(os.environ)
        for d in self._config.logs:
            for name in (d.key_passphrase_env, d.cosign_key_passphrase_env):
                if name:
                    env.pop(name, None)
        return env

    async def _start_port(self) -> None:
        """The deployment's one port: its lock, then the shared front ends."""
        cfg = self._config.server
        if cfg.port != 0:
            try:
                self._owner.lock_port(cfg.lock_dir, cfg.port)
            except LockHeld as e:
                raise StartFailed(
                    f"server.port: port {cfg.port} belongs to another rng-service instance, {e}"
                ) from None
            except OSError as e:
                raise StartFailed(f"server.lock_dir: cannot lock port {cfg.port}: {e}") from None
        port = cfg.port
        for index in range(self._front_ends):
            port = await self._start_shared(index, port)
        self.port = port
        for log in self._logs:  # every front end has its end now
            if log.proc is not None:
                _close_all(log.ends.pop(log.proc.pid, []))
        loop = asyncio.get_running_loop()
        self._keepers += [loop.create_task(self._keep_shared(i)) for i in range(len(self._shared))]

    async def _keep_shared(self, index: int) -> None:
        """Starts shared front end ``index`` again whenever it exits while the deployment
        serves. Its channels to the logs died with it, and only a log process's start makes
        new ones: every log process is stopped (SIGTERM, drained) and started again, and
        hands the new front end its channel."""
        while not self._stopped():
            shared = self._shared[index]
            status = await asyncio.to_thread(shared.proc.wait)
            if self._stopped():
                return
            _log.error({"event": "shared_front_end_exited", "front_end": index,
                        "pid": shared.proc.pid, "status": status,
                        "message": "starting it again, and every log process"})  # fmt: skip
            shared.ctrl.close()
            wait = RESTART_INTERVAL - (time.monotonic() - shared.started)
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                restart = asyncio.ensure_future(self._start_shared(index, self.port or 0))
                await asyncio.sleep(0)
                for log in self._logs:
                    if log.proc is not None and log.proc.poll() is None:
                        log.proc.send_signal(signal.SIGTERM)
                await restart
            except Exception as e:  # logged; the next exit tries again
                _log.error({"event": "shared_front_end_restart_failed", "front_end": index,
                            "error": str(e)})  # fmt: skip
                await asyncio.sleep(RESTART_INTERVAL)

    async def start(self) -> dict[str, dict[str, int | None]]:
        """Starts every log's process; returns each log's ports once all serve. If one does
        not serve, the others are stopped and :class:`StartFailed` is raised."""
        results = await asyncio.gather(
            *(self._start(log) for log in self._logs), return_exceptions=True
        )
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            await self.stop(0.0)
            raise failed[0] if isinstance(failed[0], StartFailed) else StartFailed(str(failed[0]))
        loop = asyncio.get_running_loop()
        self._keepers = [loop.create_task(self._keep(log)) for log in self._logs]
        try:
            await self._start_port()
        except StartFailed:
            await self.stop(0.0)
            raise
        return {log.origin: self._ports_of(log) for log in self._logs}

    @staticmethod
    def _ports_of(log: _LogProcess) -> dict[str, int | None]:
        ports = dict(log.ports)
        if not log.own_port:
            ports["grpc_port"] = None
        return ports

    async def _keep(self, log: _LogProcess) -> None:
        """Starts ``log``'s process again whenever it exits while the deployment serves."""
        interval = RESTART_INTERVAL
        while not self._stopped():
            proc = log.proc
            if proc is None:  # not reached: _keep runs once the log has started
                return
            status = await asyncio.to_thread(proc.wait)
            if self._stopped():
                return
            _log.error(
                {"event": "log_process_exited", "log": log.origin, "pid": proc.pid,
                 "status": status, "message": "starting it again; the other logs serve on"}
            )  # fmt: skip
            exited = time.monotonic()
            wait = interval - (exited - log.started)
            if wait > 0:
                await asyncio.sleep(wait)
            while not self._stopped():
                try:
                    await self._start(log)
                except Exception as e:  # logged; tried again, waiting longer each time
                    _log.error({"event": "log_process_restart_failed", "log": log.origin,
                                "error": str(e), "retry_in_seconds": interval})  # fmt: skip
                    await asyncio.sleep(interval)
                    interval = min(interval * 2, MAX_RESTART_INTERVAL)
                    continue
                log.restarts += 1
                interval = RESTART_INTERVAL
                _log.info(
                    {"event": "log_process_restarted", "log": log.origin, "pid": log.proc.pid
                     if log.proc else None, "seconds": round(time.monotonic() - exited, 3),
                     **log.ports}
                )  # fmt: skip
                break

    def _stopped(self) -> bool:
        return self._stopping

    def front_end_pids(self) -> list[int]:
        return [shared.proc.pid for shared in self._shared]

    def pids(self) -> dict[str, int | None]:
        return {log.origin: log.proc.pid if log.proc else None for log in self._logs}

    async def stop(self, grace: float) -> None:
        """SIGTERM to the shared front ends and then to every log process (each drains for
        ``grace`` seconds), then waits."""
        self._stopping = True
        for shared in self._shared:
            with contextlib.suppress(ProcessLookupError):
                shared.proc.send_signal(signal.SIGTERM)
            # Our end of its control channel too: its reader thread, blocked on the channel,
            # reads EOF and lets the front end's interpreter exit (else it waited out the 30 s).
            with contextlib.suppress(OSError):
                shared.ctrl.shutdown(socket.SHUT_RDWR)
            shared.ctrl.close()
        for shared in self._shared:
            try:
                await asyncio.wait_for(asyncio.to_thread(shared.proc.wait), grace + 30.0)
            except TimeoutError:
                shared.proc.kill()
                await asyncio.to_thread(shared.proc.wait)
        for log in self._logs:
            if log.proc is not None and log.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    log.proc.send_signal(signal.SIGTERM)
        for log in self._logs:
            if log.proc is None:
                continue
            try:
                await asyncio.wait_for(asyncio.to_thread(log.proc.wait), grace + 30.0)
            except TimeoutError:
                _log.error({"event": "log_process_stop_timeout", "log": log.origin,
                            "pid": log.proc.pid})  # fmt: skip
                log.proc.kill()
                await asyncio.to_thread(log.proc.wait)
            if log.proc.stdout is not None:
                log.proc.stdout.close()
            for ends in log.ends.values():
                _close_all(ends)
            log.ends.clear()
            standby, log.standby = log.standby, None
            if standby is not None:  # not needed: an empty frame, and it exits
                with contextlib.suppress(OSError):
                    if standby.stdin is not None:
                        standby.stdin.close()
                try:
                    await asyncio.wait_for(asyncio.to_thread(standby.wait), 30.0)
                except TimeoutError:
                    standby.kill()
                    await asyncio.to_thread(standby.wait)
                if standby.stdout is not None:
                    standby.stdout.close()
        for task in self._keepers:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._owner.release()


def _close_all(ends: list[socket.socket]) -> None:
    for end in ends:
        end.close()


@dataclass
class _Shared:
    """A shared front end: its process and the supervisor's end of its control channel."""

    index: int
    proc: subprocess.Popen[bytes]
    ctrl: socket.socket
    started: float = field(default_factory=time.monotonic)


#: Where a single-log setting of a log process's refusal comes from in ``[[logs]]``.
_PER_LOG = {
    "log.key_file": "key_file",
    "log.key_passphrase_env": "key_passphrase_env",
    "log.retired_keys": "retired_keys",
    "log.cosign_key_file": "cosign_key_file",
    "log.cosign_key_passphrase_env": "cosign_key_passphrase_env",
    "storage.path": "store",
    "storage.postgres_dsn": "store",
    "storage.postgres_password_env": "postgres_password_env",
    "server.port": "port",
    "metrics.port": "metrics_port",
}


def _in_log(config: Config, origin: str, error: str) -> str:
    """A log process's refusal, its setting named as the ``[[logs]]`` entry's where it is one
    (``log.key_file: ...`` becomes ``logs[1] (ORIGIN).key_file: ...``)."""
    index = [d.origin for d in config.logs].index(origin)
    setting, sep, rest = error.partition(": ")
    if sep and setting in _PER_LOG:
        return f"logs[{index}] ({origin}).{_PER_LOG[setting]}: {rest}"
    if setting.startswith("logs ("):  # already names its log
        return error
    return f"logs[{index}] ({origin}): {error}"


async def _supervise(config: Config, front_ends: int) -> int:
    supervisor = Supervisor(config, front_ends=front_ends)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        ports = await supervisor.start()
    except StartFailed as e:
        _log.error(
            {"event": "startup_failed", "error": str(e), "setting": str(e).split(": ", 1)[0]}
        )
        return 2
    _log.info({"event": "started", "grpc_port": supervisor.port, "logs": ports,
               "pids": supervisor.pids(), "front_ends": supervisor.front_end_pids()})  # fmt: skip
    print(json.dumps({"event": "listening", "grpc_port": supervisor.port, "logs": ports}),
          flush=True)  # fmt: skip
    await stop.wait()
    grace = config.server.shutdown_grace_seconds
    _log.info({"event": "shutdown_requested", "grace_seconds": grace})
    await supervisor.stop(grace)
    _log.info({"event": "stopped", "logs": list(ports)})
    return 0


def run_supervisor(config: Config, front_ends: int = 1) -> int:
    """Runs one process per log until SIGTERM or SIGINT; returns the exit status."""
    return asyncio.run(_supervise(config, front_ends))
