"""Transport security and authorization policy, without gRPC.

``policy``: roles, the method table, per-client scopes and token-bucket rate limits (pure).
``certs``: X.509 certificates for mTLS (RFC 5280): the development CA of ``rng-service dev-ca``.
``tls_files``: the server's TLS files, read and checked. ``key_files``: the permission check of
private key files at start-up.
The gRPC side (reading the peer's certificate identity, server credentials) lives in
:mod:`rng_service.rpc.auth` and :mod:`rng_service.process.app`. docs/security.md.
"""

from __future__ import annotations

__all__: list[str] = []
