"""Structured JSON log lines for service events (one JSON object per line on stderr).

An event is logged as a dict: ``log.info({"event": "started", ...})``; any other message is
carried in a "message" field. Every line has "time" (RFC 3339 UTC), "level" and "logger"; a
traceback goes in the "exception" field of its line, never on lines of its own. Callers never
put secrets (private keys, DRBG state) in events; the service logs key ids and verifier keys,
which are public.

:func:`route_process_output` makes the serving process's whole stderr JSON: what native code
writes to file descriptor 2 (gRPC core logs through absl straight to it, bypassing Python) is
read back through a pipe and logged as ``grpc_core`` events (severity and source file kept),
and uncaught exceptions in any thread and Python warnings are logged as events too.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import sys
import threading
from types import TracebackType
from typing import Any

__all__ = ["JsonFormatter", "configure", "route_process_output"]

_handler: logging.StreamHandler[Any] | None = None


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, tz=dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        if isinstance(record.msg, dict):
            line.update(record.msg)
        else:
            line["message"] = record.getMessage()
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def configure(level: int = logging.INFO) -> None:
    """JSON lines on stderr for the whole process (called by the CLI's server commands)."""
    global _handler
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # psycopg_pool warns at every failed connection attempt (several a second while the
    # PostgreSQL log is down); the log writer's store_lost event and the store's errors name
    # the last attempt's error instead (rng_service.storage.postgres).
    logging.getLogger("psycopg.pool").setLevel(max(level, logging.ERROR))
    _handler = handler


# gRPC core (absl) lines: "E1201 15:54:51.955192   14773 ssl_transport_security.cc:1569] text"
_NATIVE_LINE = re.compile(r"^([IWEF])\d{4} [\d:.]+\s+\d+ ([^\]\s]+)\] ?(.*)$")
_NATIVE_LEVELS = {"I": logging.INFO, "W": logging.WARNING, "E": logging.ERROR,
                  "F": logging.CRITICAL}  # fmt: skip


def route_process_output() -> None:
    """Makes everything the process writes to stderr a JSON line (see the module doc).

    File descriptor 2 becomes a pipe read by a daemon thread; Python's own stderr (and the
    log handler) move to a duplicate of the original descriptor. Call once, after
    :func:`configure`, in the serving process only (never in a test runner's process)."""
    saved = os.dup(2)
    read_fd, write_fd = os.pipe()
    os.dup2(write_fd, 2)
    os.close(write_fd)
    stream = os.fdopen(saved, "w", buffering=1, encoding="utf-8", errors="backslashreplace")
    sys.stderr = stream
    if _handler is not None:
        _handler.setStream(stream)
    threading.Thread(
        target=_pump_native, args=(read_fd,), name="native-stderr", daemon=True
    ).start()
    sys.excepthook = _log_uncaught
    threading.excepthook = _log_uncaught_in_thread
    logging.captureWarnings(True)


def _pump_native(fd: int) -> None:
    log = logging.getLogger("grpc.core")
    with os.fdopen(fd, "rb") as pipe:
        for raw in pipe:
            text = raw.decode("utf-8", "replace").rstrip("\r\n")
            if not text.strip():
                continue
            m = _NATIVE_LINE.match(text)
            if m:
                log.log(
                    _NATIVE_LEVELS[m[1]],
                    {"event": "grpc_core", "source": m[2], "message": m[3]},
                )
            else:
                log.warning({"event": "native_stderr", "message": text})


def _log_uncaught(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    logging.getLogger("rng_service").critical(
        {"event": "uncaught_exception", "error": f"{exc_type.__name__}: {exc}"},
        exc_info=(exc_type, exc, tb),
    )


def _log_uncaught_in_thread(args: threading.ExceptHookArgs) -> None:
    if args.exc_value is None:
        return
    logging.getLogger("rng_service").critical(
        {
            "event": "uncaught_exception",
            "thread": args.thread.name if args.thread is not None else None,
            "error": f"{args.exc_type.__name__}: {args.exc_value}",
        },
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
    )
