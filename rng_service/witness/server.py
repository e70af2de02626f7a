"""The witness's HTTP endpoint: ``POST <prefix>/add-checkpoint`` (C2SP tlog-witness).

Built on the standard library's :class:`http.server.ThreadingHTTPServer` rather than a web
framework: the witness serves one route with bodies of a few kilobytes
(:data:`~rng_service.log.tlog_witness.MAX_BODY_BYTES`), so a framework would add a dependency
(and an entry in the image's hash-locked lock file) for nothing this module needs. What the
standard server leaves to us is done here: HTTP/1.1 keep-alive ("Clients SHOULD use, and
witnesses SHOULD support, HTTP keep-alive"), a ``Content-Length`` that is required and bounded,
an idle timeout per connection, at most ``max_connections`` connections at once (more are
closed at once), optional TLS (the handshake runs in the connection's own thread, under its
timeout), one JSON log line per request, and each add-checkpoint answer handed to an injected
:class:`AnswerSink` (the witness's metrics, :mod:`rng_service.witness.metrics`; this module
imports no metrics library). The Python docs advise against exposing
``http.server`` to the internet unguarded; docs/operations/witnesses.md ("Witnesses") says to put a
witness reachable from outside behind a reverse proxy or a C2SP https-bastion.

The decision itself is :class:`rng_service.witness.core.Witness`; this module moves bytes.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

from rng_service.log.tlog_witness import ADD_CHECKPOINT_PATH, MAX_BODY_BYTES
from rng_service.witness.core import Answer, Result, Witness

__all__ = ["IDLE_TIMEOUT_SECONDS", "AnswerSink", "WitnessServer"]

_log = logging.getLogger("rng_witness")

#: A connection idle (or sending its request) this long is closed.
IDLE_TIMEOUT_SECONDS = 30.0


class AnswerSink(Protocol):
    """Told of every answer to ``POST <prefix>/add-checkpoint``, once, before it is sent."""

    def answered(self, answer: Answer) -> None: ...


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    server: WitnessServer
    timeout = IDLE_TIMEOUT_SECONDS
    server_version = "rng-witness"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        if isinstance(self.connection, ssl.SSLSocket):
            self.connection.do_handshake()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # every request is one JSON event (below), not http.server's stderr lines

    def _send(self, answer: Answer) -> None:
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        self.wfile.write(answer.body)

    def _refuse(self, message: str) -> None:
        """A 400 before the body is read: the request is malformed, and the connection closed."""
        self.close_connection = True
        answer = Answer.text(400, message, result=Result.MALFORMED)
        self.server.sink.answered(answer)
        self._send(answer)

    def do_POST(self) -> None:
        if self.path != self.server.add_checkpoint_path:
            self._send(Answer.text(404, f"no such endpoint {self.path[:100]!r}"))
            return
        length_text = self.headers.get("Content-Length")
        if length_text is None or not length_text.isdigit():
            self._refuse("a Content-Length is required")
            return
        length = int(length_text)
        if length > MAX_BODY_BYTES:
            self._refuse(f"body of {length} bytes; at most {MAX_BODY_BYTES}")
            return
        body = self.rfile.read(length)
        if len(body) != length:
            self.close_connection = True
            return
        answer = self.server.witness.add_checkpoint(body)
        event = {"event": "add_checkpoint", "status": answer.status, **answer.event}
        level = logging.ERROR if event.pop("level", None) == "error" else logging.INFO
        _log.log(level, event)
        self.server.sink.answered(answer)
        self._send(answer)

    def do_GET(self) -> None:
        self._send(Answer.text(405 if self.path == self.server.add_checkpoint_path else 404,
                               "POST <prefix>/add-checkpoint (C2SP tlog-witness)"))  # fmt: skip


class _NoSink:
    def answered(self, answer: Answer) -> None:
        pass


class WitnessServer(ThreadingHTTPServer):
    """The witness's HTTP(S) server. ``serve_forever()`` in one thread, ``shutdown()`` from
    another; ``server_address[1]`` is the bound port (useful with port 0). ``sink`` is told of
    every add-checkpoint answer (none: the answers are only logged)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        witness: Witness,
        *,
        host: str,
        port: int,
        prefix: str = "",
        max_connections: int = 64,
        tls_cert_file: Path | None = None,
        tls_key_file: Path | None = None,
        sink: AnswerSink | None = None,
    ) -> None:
        self.witness = witness
        self.sink: AnswerSink = sink if sink is not None else _NoSink()
        self.add_checkpoint_path = prefix.rstrip("/") + ADD_CHECKPOINT_PATH
        self._slots = threading.BoundedSemaphore(max_connections)
        if ":" in host.strip("[]"):
            self.address_family = socket.AF_INET6
        super().__init__((host.strip("[]"), port), _Handler)
        self.tls = tls_cert_file is not None
        if tls_cert_file is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.load_cert_chain(tls_cert_file, tls_key_file)
            self.socket = context.wrap_socket(
                self.socket, server_side=True, do_handshake_on_connect=False
            )

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            _log.warning({"event": "connection_refused", "reason": "max_connections reached"})
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            request.settimeout(IDLE_TIMEOUT_SECONDS)
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that went away mid-request, a failed TLS handshake: one line, no traceback.
        _log.warning({"event": "connection_error", "peer": str(client_address[0])},
                     exc_info=False)  # fmt: skip
