"""``rng-service serve`` with the soak tests' instruments, in a process of its own (a test harness,
not a production path): ``python -m tests.integration.soak_server OUT serve --config FILE ...``.

It runs the very ``serve`` command (``rng_service.cli.service.main``), with the composition root's
``Service`` replaced by a subclass that adds, for the soak tests only:

- the log writer's group timings: every committed group's end time (wall clock and monotonic
  clock: a step of the wall clock shows as a change of their difference), its size and the
  seconds the writer spent on it (``Appender._process`` to the observer's call), recorded
  in compact arrays by a wrapper of the store-health observer the appender reports to;
- the event loop's lag: a task that sleeps ``LAG_PROBE_SECONDS`` and records how late it woke
  (a stalled loop answers nothing however fast the writer commits);
- with ``RNG_SOAK_TRACEMALLOC=1``, ``tracemalloc`` started before anything is imported.

A control thread answers requests the test writes into ``OUT``: a file ``NAME.req`` is answered
by ``NAME.json`` (resident set size, the loop's and the writer's records so far, and with
tracemalloc a snapshot in ``NAME.tm``, loadable with ``tracemalloc.Snapshot.load``). The test
reads the answer; nothing here listens on a port or changes what the service does.
"""

from __future__ import annotations

import os
import sys
import tracemalloc

if os.environ.get("RNG_SOAK_TRACEMALLOC") == "1":  # before the service's modules allocate
    tracemalloc.start(int(os.environ.get("RNG_SOAK_TRACEMALLOC_FRAMES", "8")))

import asyncio
import json
import threading
import time
from array import array
from pathlib import Path
from typing import Any

#: Seconds between the loop-lag probe's wake-ups.
LAG_PROBE_SECONDS = 0.05
#: Seconds between the control thread's looks for requests.
CONTROL_POLL_SECONDS = 0.05


def rss_kb(pid: int | str = "self") -> int:
    """The resident set size of ``pid`` in KiB (``VmRSS`` of /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


class Records:
    """What the instruments recorded (appended by one thread each, copied by the control
    thread: ``array`` appends and copies are atomic under the GIL)."""

    def __init__(self) -> None:
        self.group_end = array("d")  # wall-clock seconds when the group was reported
        self.group_mono = array("d")  # the same moment on the monotonic clock
        self.group_size = array("l")  # entries the group added
        self.group_seconds = array("d")  # the writer's seconds on the group
        self.lag_at = array("d")  # wall-clock seconds of a late wake-up
        self.lag_seconds = array("d")  # how late (only wake-ups later than 10 ms are kept)
        self.lag_probes = 0
        self.lag_max = 0.0

    def snapshot(self) -> dict[str, Any]:
        # A group recorded while this copies is cut off: every list ends with the same group.
        groups = [self.group_end, self.group_mono, self.group_size, self.group_seconds]
        n = min(len(a) for a in groups)
        end, mono, size, seconds = (a[:n].tolist() for a in groups)
        late = min(len(self.lag_at), len(self.lag_seconds))
        return {
            "groups": {"end": end, "monotonic": mono, "size": size, "seconds": seconds},
            "loop_lag": {
                "probes": self.lag_probes,
                "max_seconds": self.lag_max,
                "late_at": self.lag_at[:late].tolist(),
                "late_seconds": self.lag_seconds[:late].tolist(),
            },
        }


RECORDS = Records()
#: Whether the group timings are recorded (the hostile-request soak measures memory and
#: records none, so that its arrays do not grow with the run).
RECORD_GROUPS = os.environ.get("RNG_SOAK_GROUPS", "1") == "1"


class _RecordingObserver:
    """The appender's observer (``StoreHealth``), forwarding everything, recording commits."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def committed(self, **kw: Any) -> None:
        if RECORD_GROUPS:
            RECORDS.group_end.append(time.time())
            RECORDS.group_mono.append(time.monotonic())
            RECORDS.group_size.append(int(kw["entries"]))
            RECORDS.group_seconds.append(float(kw["seconds"]))
        self._inner.committed(**kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def _probe_lag() -> None:
    loop = asyncio.get_running_loop()
    while True:
        before = loop.time()
        await asyncio.sleep(LAG_PROBE_SECONDS)
        late = loop.time() - before - LAG_PROBE_SECONDS
        RECORDS.lag_probes += 1
        if late > RECORDS.lag_max:
            RECORDS.lag_max = late
        if late > 0.010:
            RECORDS.lag_at.append(time.time())
            RECORDS.lag_seconds.append(late)


def _install() -> None:
    from rng_service.process import app

    base = app.Service

    class SoakService(base):  # type: ignore[misc, valid-type]
        def _watch_store(self, storage: Any) -> Any:
            return _RecordingObserver(super()._watch_store(storage))

        async def start(self) -> Any:
            endpoints = await super().start()
            self._soak_lag = asyncio.get_running_loop().create_task(_probe_lag())
            return endpoints

    app.Service = SoakService  # type: ignore[misc]


def _answer(out: Path, name: str) -> None:
    reply: dict[str, Any] = {"name": name, "time": time.time(), "rss_kb": rss_kb()}
    reply.update(RECORDS.snapshot())
    if tracemalloc.is_tracing():
        snap = tracemalloc.take_snapshot()
        snap.dump(str(out / f"{name}.tm"))
        reply["tracemalloc_bytes"] = tracemalloc.get_traced_memory()[0]
        reply["tracemalloc_own_bytes"] = tracemalloc.get_tracemalloc_memory()
    tmp = out / f"{name}.json.part"
    tmp.write_text(json.dumps(reply))
    tmp.rename(out / f"{name}.json")


def _control(out: Path) -> None:
    while True:
        for req in sorted(out.glob("*.req")):
            name = req.name[: -len(".req")]
            req.unlink()
            try:
                _answer(out, name)
            except Exception as e:  # the test sees the error instead of waiting for a reply
                (out / f"{name}.json").write_text(json.dumps({"name": name, "error": repr(e)}))
        time.sleep(CONTROL_POLL_SECONDS)


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    _install()
    threading.Thread(target=_control, args=(out,), name="soak-control", daemon=True).start()
    from rng_service.cli.service import main as cli_main

    return cli_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


class SoakServer:
    """The test's side: starts this harness in a subprocess and asks it for records."""

    def __init__(
        self, out: Path, serve_args: list[str], *, env: dict[str, str] | None = None
    ) -> None:
        import subprocess

        self.out = out
        out.mkdir(parents=True, exist_ok=True)
        self.stderr_path = out / "service.stderr"
        self._stderr = self.stderr_path.open("w")
        repo = Path(__file__).resolve().parents[2]
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("RNG_SERVICE__")}
        full_env.update(env or {})
        full_env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.soak_server", str(out), *serve_args],
            cwd=repo, env=full_env, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith('{"event": "listening"'):
            self.stop()
            raise AssertionError(f"the service did not start: {line}{self.stderr()}")
        self.listening = json.loads(line)
        self.port = int(self.listening["grpc_port"])
        self.target = f"127.0.0.1:{self.port}"
        self._asked = 0

    def ask(self, name: str = "", timeout: float = 120.0) -> dict[str, Any]:
        """The harness's answer to a request named ``name`` (a fresh name if empty)."""
        self._asked += 1
        name = name or f"ask-{self._asked}"
        answer = self.out / f"{name}.json"
        answer.unlink(missing_ok=True)
        (self.out / f"{name}.req").write_text("")
        deadline = time.monotonic() + timeout
        while not answer.exists():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"no answer to {name} from the harness: {self.stderr()}")
            time.sleep(0.05)
        reply: dict[str, Any] = json.loads(answer.read_text())
        if "error" in reply:
            raise AssertionError(f"the harness failed to answer {name}: {reply['error']}")
        return reply

    def stderr(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text()

    def stop(self) -> int:
        import signal
        import subprocess

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()
        return self.proc.returncode
