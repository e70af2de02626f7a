"""One log's process in a deployment of several logs (``rng_service.process.supervisor``).

Started by the supervisor as ``python -m rng_service.process.log_process SUPERVISOR_PID``, it
stops with the supervisor (however the supervisor ends), imports the
service (the slow part of a start: a standby process waits here, ready), then reads one
pickled frame from its standard input: its log's view of the validated configuration
(:meth:`rng_service.config.Config.for_log`), the number of front ends, whether the log has a
port of its own, and the descriptors (inherited at its start) of its channels to the shared
front ends of the deployment's one port (``rng_service.process.shared_frontend``). It then is
that log's service, as ``rng-service serve`` with one log (:func:`rng_service.process.app.run`):
the one owner of the log's store, generator and key, the writer of the shared front ends, and
the server of the log's own port if it has one. Its readiness
line goes to standard output, which the supervisor reads; a start-up refusal goes there too,
as one ``startup_failed`` JSON line, which the supervisor reports naming the log.
"""

from __future__ import annotations

import contextlib
import json
import pickle
import sys

from rng_service.config import Config

__all__ = ["main"]


def _refused(event: dict[str, str]) -> None:
    print(json.dumps(event), flush=True)


def stop_with_the_supervisor(supervisor: int) -> None:
    """SIGTERM (a graceful stop) to this process when the supervisor (pid ``supervisor``)
    dies, however it dies (Linux ``PR_SET_PDEATHSIG``): a log process left behind would keep
    its log's locks and port, and the supervisor started again could not start that log (a
    shared front end calls it too)."""
    import ctypes
    import os
    import signal

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != supervisor:
        os.kill(os.getpid(), signal.SIGTERM)  # it died before the request took effect


def main() -> int:
    from rng_service import jsonlog

    stop_with_the_supervisor(int(sys.argv[1]))
    jsonlog.configure()
    # Imported before the frame is read: a standby process (the supervisor keeps one ready
    # per log) has done this slow part before its log needs it.
    from rng_service.process.app import run

    frame = sys.stdin.buffer.read()
    if not frame:  # a standby that was not needed: the supervisor closed the pipe
        return 0
    # The supervisor's own frame on the pipe it made (rng_service.process.supervisor: why
    # pickle is safe here).
    config, front_ends, own_port, shared = pickle.loads(frame)  # noqa: S301
    if not isinstance(config, Config) or not isinstance(front_ends, int):
        raise TypeError("not a log process's frame")
    jsonlog.route_process_output()
    return run(config, front_ends=front_ends, on_refusal=_refused, shared=tuple(shared),
               own_port=bool(own_port))  # fmt: skip


if __name__ == "__main__":
    # Run as rng_service.process.log_process, not __main__ (one copy of this module's state).
    from rng_service.process.log_process import main as _main

    sys.exit(_main())
