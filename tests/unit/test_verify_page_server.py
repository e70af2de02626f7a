"""The verify page's server (rng_service.verify_page): read-only, its own port, a
Content-Security-Policy on every answer, and nothing outside web/verify reachable; the
``[verify_page]`` settings; the receipt link format (rng_service.audit.link)."""

from __future__ import annotations

import base64
import http.client
import json
import socket
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from rng_service.audit.link import MAX_FRAGMENT_CHARS, receipt_from_link, verify_link
from rng_service.config import ConfigError, load_config
from rng_service.errors import InvalidArgument
from rng_service.verify_page import (
    CONTENT_SECURITY_POLICY,
    VerifyPageServer,
    default_page_directory,
    load_page,
)

ROOT = Path(__file__).resolve().parents[2]
PAGE_DIR = ROOT / "web" / "verify"


@pytest.fixture(scope="module")
def server() -> Iterator[VerifyPageServer]:
    s = VerifyPageServer(load_page(PAGE_DIR), "127.0.0.1", 0)
    try:
        yield s
    finally:
        s.close()


def _get(
    server: VerifyPageServer, path: str, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        conn.endheaders()
        reply = conn.getresponse()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read()
    finally:
        conn.close()


def _raw(server: VerifyPageServer, request_line: str) -> bytes:
    """A request line sent byte for byte (no client-side normalisation of the path)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(request_line.encode("latin-1") + b"\r\nHost: x\r\nConnection: close\r\n\r\n")
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_the_page_and_its_files_with_the_policy(server: VerifyPageServer) -> None:
    status, headers, body = _get(server, "/")
    assert status == 200
    assert body == (PAGE_DIR / "index.html").read_bytes()
    assert headers["content-type"] == "text/html; charset=utf-8"
    csp = headers["content-security-policy"]
    assert csp == CONTENT_SECURITY_POLICY
    # Remote loads and connections are forbidden: nothing but the page's own files.
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'"
    assert directives["connect-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    # The page's own <meta> policy is the same minus frame-ancestors (ignored in <meta>), so a
    # copy opened from disk is held to it too.
    meta = (PAGE_DIR / "index.html").read_text()
    assert CONTENT_SECURITY_POLICY.removesuffix("; frame-ancestors 'none'") in meta
    for path in ("/verify-core.js", "/verify.css", "/vendor/noble-ed25519-1.6.0.js"):
        status, headers, body = _get(server, path)
        assert status == 200
        assert body == (PAGE_DIR / path.lstrip("/")).read_bytes()
        assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    status, headers, _ = _get(server, "/index.html?x=1")
    assert status == 200


@pytest.mark.parametrize(
    "path",
    [
        "/../pyproject.toml",
        "/..%2fpyproject.toml",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/vendor/../../README.md",
        "/vendor/..%2f..%2fREADME.md",
        "//etc/passwd",
        "/etc/passwd",
        "/..\\..\\pyproject.toml",
        "/index.html/..",
        "/.hidden",
        "/vendor",
        "http://127.0.0.1/../pyproject.toml",
    ],
)
def test_nothing_outside_the_page_directory(server: VerifyPageServer, path: str) -> None:
    reply = _raw(server, f"GET {path} HTTP/1.1")
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 404") or head.startswith(b"HTTP/1.1 404"), head
    assert b"content-security-policy" in head.lower()
    assert b"[project]" not in body
    assert b"root:" not in body
    assert b"rng-service" not in body


def test_read_only(server: VerifyPageServer) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        status, headers, _ = _get(server, "/index.html", method)
        assert status == 405, method
        assert headers["allow"] == "GET, HEAD"
    status, headers, body = _get(server, "/index.html", "HEAD")
    assert status == 200
    assert body == b""
    assert int(headers["content-length"]) == (PAGE_DIR / "index.html").stat().st_size


def test_symlinks_and_dot_files_are_never_served(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<p>page</p>")
    (tmp_path / ".secret.txt").write_text("secret")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("outside")
    (tmp_path / "link.txt").symlink_to(outside)
    files = load_page(tmp_path)
    assert set(files) == {"/", "/index.html"}
    with pytest.raises(InvalidArgument, match=r"no index\.html"):
        load_page(tmp_path / "nowhere")


def test_default_directory_is_the_checkouts_web_verify() -> None:
    assert default_page_directory() == PAGE_DIR


def test_settings(tmp_path: Path) -> None:
    config = load_config(None, environ={}, base_dir=tmp_path)
    assert config.verify_page.enabled is False  # off by default
    assert config.verify_page.port not in (config.metrics.port, config.server.port)
    env = {"RNG_SERVICE__VERIFY_PAGE__ENABLED": "true", "RNG_SERVICE__VERIFY_PAGE__DIRECTORY": "p"}
    assert load_config(None, environ=env, base_dir=tmp_path).verify_page.directory == str(
        tmp_path / "p"
    )
    same = {**env, "RNG_SERVICE__VERIFY_PAGE__PORT": "9464"}
    with pytest.raises(ConfigError, match=r"verify_page.port: 9464 .*not metrics.port"):
        load_config(None, environ=same, base_dir=tmp_path)
    grpc_port = {**env, "RNG_SERVICE__VERIFY_PAGE__PORT": "50051"}
    with pytest.raises(ConfigError, match=r"verify_page.port: 50051 .*not server.port"):
        load_config(None, environ=grpc_port, base_dir=tmp_path)
    # Off, or with metrics off, the same port is no clash.
    load_config(None, environ={"RNG_SERVICE__VERIFY_PAGE__PORT": "9464"}, base_dir=tmp_path)
    load_config(None, environ={**same, "RNG_SERVICE__METRICS__ENABLED": "false"}, base_dir=tmp_path)


def test_link_format_from_the_documentation() -> None:
    """docs/verify-page.md: '#receipt-z=' + unpadded base64url of raw DEFLATE of the file."""
    receipt = json.dumps({"format": "rng-service-receipt/v1", "index": 3}, indent=2) + "\n"
    link = verify_link("http://127.0.0.1:9465/#old", receipt)
    base, _, fragment = link.partition("#")
    assert base == "http://127.0.0.1:9465/"
    name, _, value = fragment.partition("=")
    assert name == "receipt-z"
    assert "=" not in value
    assert "+" not in value
    assert "/" not in value
    packed = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    assert zlib.decompress(packed, -15).decode() == receipt  # raw DEFLATE, no zlib header
    assert receipt_from_link(link) == receipt
    with pytest.raises(InvalidArgument, match="verify_url"):
        verify_link("javascript:alert(1)", receipt)
    # Past the limit: refused, naming the limit. Random text does not compress.
    import os

    big = base64.b64encode(os.urandom(MAX_FRAGMENT_CHARS)).decode()
    with pytest.raises(InvalidArgument, match=f"more than the {MAX_FRAGMENT_CHARS}"):
        verify_link("http://x/", big)
