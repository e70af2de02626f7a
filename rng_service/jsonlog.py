"""Structured JSON log lines for service events (one JSON object per line on stderr).

An event is logged as a dict: ``log.info({"event": "started", ...})``; any other message is
carried in a "message" field. Every line has "time" (RFC 3339 UTC), "level" and "logger".
Callers never put secrets (private keys, DRBG state) in events; the service logs key ids and
verifier keys, which are public.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
from typing import Any

__all__ = ["JsonFormatter", "configure"]


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
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
