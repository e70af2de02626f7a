"""The receipt-verification page (``web/verify/``) served read-only on a port of its own.

Owns the small HTTP server behind ``[verify_page]`` (docs/verify-page.md). It is off by default
and never shares the metrics port (whose handler answers every path with metrics). Its design
makes it read-only and traversal-proof by construction rather than by path checks alone:

- at start-up it reads the page's directory once into memory: regular files only (no symbolic
  links, no dot files), at most :data:`MAX_FILES` files and :data:`MAX_BYTES` bytes; a request
  is answered from that table by exact path, so no request ever reaches the file system and
  nothing outside the directory (``..``, encoded or not, absolute paths, backslashes) can be
  named at all;
- ``GET`` and ``HEAD`` only (anything else: 405 with ``Allow``);
- every answer carries a Content-Security-Policy that lets the page load only its own files and
  connect nowhere (:data:`CONTENT_SECURITY_POLICY`, the same policy as the page's own ``<meta>``
  tag, so that a copy opened from disk is held to it too), with ``nosniff``, no referrer and no
  framing. The browser's fetch of a link's fragment (the receipt) is never sent: fragments stay
  in the browser (RFC 3986 section 3.5).

Plain standard library (``http.server``): no project layer below it is needed.
"""

from __future__ import annotations

import http.server
import logging
import socket
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rng_service.errors import InvalidArgument

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "MAX_BYTES",
    "MAX_FILES",
    "PageFile",
    "VerifyPageServer",
    "default_page_directory",
    "load_page",
]

_log = logging.getLogger("rng_service.verify_page")

#: The page's policy (also its ``<meta http-equiv>``): its own scripts and styles, data: images,
#: no connections, no forms, no frames, no plugins, no <base>.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'none'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
)
MAX_FILES = 64
MAX_BYTES = 4 * 1024 * 1024

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".md": "text/plain; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".json": "application/json",
}
_SECURITY_HEADERS = (
    ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
    ("Cache-Control", "no-cache"),
)


@dataclass(frozen=True, slots=True)
class PageFile:
    body: bytes
    content_type: str


def default_page_directory(prefix: str | None = None) -> Path:
    """Where the page is when ``verify_page.directory`` is empty: ``web/verify`` of the checkout
    this package runs from (``make install`` is editable), else the copy a wheel install put
    under ``<prefix>/share/rng-service/verify`` (pyproject's data-files: the container image,
    ``pip install rng-service``). ``prefix``: the environment's, ``sys.prefix`` by default."""
    checkout = Path(__file__).resolve().parent.parent / "web" / "verify"
    if (checkout / "index.html").is_file():
        return checkout
    return Path(sys.prefix if prefix is None else prefix) / "share" / "rng-service" / "verify"


def load_page(directory: Path) -> dict[str, PageFile]:
    """The page's files by URL path (``/index.html``, ``/vendor/x.js``; ``/`` is the index).

    Raises :class:`InvalidArgument` (field ``verify_page.directory``) when the directory has no
    ``index.html``, or holds too many or too large files."""
    root = directory.resolve()
    if not (root / "index.html").is_file():
        raise InvalidArgument(
            "verify_page.directory", f"{directory} has no index.html (the web/verify page)"
        )
    files: dict[str, PageFile] = {}
    total = 0
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts):
            continue
        if path.is_symlink() or not path.is_file():
            continue
        content_type = _TYPES.get(path.suffix.lower())
        if content_type is None:
            continue
        body = path.read_bytes()
        total += len(body)
        if len(files) >= MAX_FILES or total > MAX_BYTES:
            raise InvalidArgument(
                "verify_page.directory",
                f"{directory} holds more than {MAX_FILES} files or {MAX_BYTES} bytes",
            )
        files["/" + relative.as_posix()] = PageFile(body, content_type)
    files["/"] = files["/index.html"]
    return files


class _Handler(http.server.BaseHTTPRequestHandler):
    server_version = "rng-service-verify-page"
    sys_version = ""
    files: ClassVar[Mapping[str, PageFile]] = {}

    def _send(self, status: int, page: PageFile | None, *, head: bool) -> None:
        body = page.body if page is not None else f"{status} {self.responses[status][0]}\n".encode()
        self.send_response(status)
        self.send_header("Content-Type", page.content_type if page else "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in _SECURITY_HEADERS:
            self.send_header(name, value)
        if status == 405:
            self.send_header("Allow", "GET, HEAD")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _answer(self, *, head: bool) -> None:
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        page = self.files.get(path)
        self._send(200 if page is not None else 404, page, head=head)

    def do_GET(self) -> None:
        self._answer(head=False)

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def _refuse(self) -> None:
        self._send(405, None, head=False)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

    def log_message(self, format: str, *args: object) -> None:
        _log.debug({"event": "verify_page_request", "request": format % args})


class _Server6(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6


class VerifyPageServer:
    """The page on ``host:port`` (0: any free port) in a daemon thread; :meth:`close` stops it."""

    def __init__(self, files: Mapping[str, PageFile], host: str, port: int) -> None:
        handler = type("_PageHandler", (_Handler,), {"files": dict(files)})
        address = host.strip("[]")
        server_class = _Server6 if ":" in address else http.server.ThreadingHTTPServer
        self._httpd = server_class((address, port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="verify-page", daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)
