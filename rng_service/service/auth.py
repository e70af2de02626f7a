"""Authentication and authorization of every RPC: the peer's certificate identity, its roles.

With mTLS the server has already verified the client certificate against the operator's CA in
the TLS handshake (no certificate, a wrong CA or an expired one never reach a handler: the client
sees UNAVAILABLE). What a handler gets is the verified peer's properties in
``context.auth_context()`` (gRPC authentication guide, https://grpc.io/docs/guides/auth/; the
property names ``x509_common_name`` and ``x509_subject_alternative_name`` are gRPC core's
``GRPC_X509_CN_PROPERTY_NAME`` and ``GRPC_X509_SAN_PROPERTY_NAME``). Python server interceptors
cannot see these, so :func:`rng_service.service.errors.rpc` calls :meth:`Authorizer.enter` (the
per-call form of :meth:`Authorizer.authorized`) before each servicer method runs: nothing is
drawn or logged for a refused call.

The identity is matched against the configured clients (:mod:`rng_service.security.policy`):
an identity that is not configured gets UNAUTHENTICATED, a configured client outside its role,
tables, kinds or profiles PERMISSION_DENIED, one over its rate limit RESOURCE_EXHAUSTED. Each
refusal is one structured ``denied`` log event and one count of ``rng_auth_denials`` (method,
reason, role and, for configured clients only, the client). In plaintext development mode every
caller is the one default client with every role.

The authenticated caller is kept in a context variable for the duration of the call, so a
servicer asks :func:`caller_id` for the idempotency scope instead of trusting the request.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar, Token
from typing import Any, NoReturn, Protocol

from rng_service.clock import Clock
from rng_service.errors import Unauthenticated
from rng_service.security.policy import (
    ALL_ROLES,
    ClientPolicy,
    Denied,
    Policy,
    Principal,
    RateLimit,
)

__all__ = ["Authorizer", "DenialObserver", "caller_id", "leave"]

_log = logging.getLogger(__name__)

#: gRPC core's auth-context property names (grpc_security_constants.h).
CN_PROPERTY = "x509_common_name"
SAN_PROPERTY = "x509_subject_alternative_name"

#: Longest identity text written to a log event (a certificate from the operator's CA may
#: still carry any name; metrics never carry it).
_MAX_LOGGED_IDENTITY = 128

_CALLER: ContextVar[Principal | None] = ContextVar("rng_service_caller", default=None)


def leave(token: Token[Principal | None]) -> None:
    """Ends what :meth:`Authorizer.enter` began."""
    _CALLER.reset(token)


def caller_id(default: str) -> str:
    """The authenticated caller of the current RPC, or ``default`` outside an authorized call
    (servicers built without an authorizer, as in unit tests)."""
    principal = _CALLER.get()
    return default if principal is None else principal.identity


class DenialObserver(Protocol):
    def denied(self, *, method: str, reason: str, role: str, client: str) -> None: ...


class _Context(Protocol):
    def auth_context(self) -> Any: ...


def _names(context: _Context) -> list[str]:
    """The verified peer's subjectAltNames and subject CN, SANs first."""
    properties: dict[str, list[bytes]] = context.auth_context() or {}
    raw = [*properties.get(SAN_PROPERTY, []), *properties.get(CN_PROPERTY, [])]
    return list(dict.fromkeys(v.decode("utf-8", "replace") for v in raw))


#: Per request message class: whether it has a ``context`` and a ``profile`` field.
_SCOPE_FIELDS: dict[type, tuple[bool, bool]] = {}


def _scope(request: Any) -> tuple[str | None, str | None]:
    """The table id and game profile a request names, where its message has those fields."""
    has = _SCOPE_FIELDS.get(type(request))
    if has is None:
        fields = request.DESCRIPTOR.fields_by_name
        has = _SCOPE_FIELDS[type(request)] = ("context" in fields, "profile" in fields)
    table_id = request.context.table_id if has[0] else None
    profile = request.profile if has[1] else None
    return table_id, profile


class Authorizer:
    """Decides every call. Build it with :meth:`mtls` or :meth:`development`."""

    def __init__(
        self,
        *,
        policy: Policy,
        fixed: Principal | None,
        observer: DenialObserver | None = None,
    ) -> None:
        self._policy = policy
        self._fixed = fixed
        self._observer = observer

    @classmethod
    def mtls(
        cls,
        clients: list[ClientPolicy],
        *,
        clock: Clock,
        observer: DenialObserver | None = None,
    ) -> Authorizer:
        """Callers are identified by their verified client certificate."""
        return cls(policy=Policy(clients, clock), fixed=None, observer=observer)

    @classmethod
    def development(
        cls,
        client_id: str,
        *,
        rate_limit: RateLimit | None,
        clock: Clock,
        observer: DenialObserver | None = None,
    ) -> Authorizer:
        """Plaintext on loopback: every caller is ``client_id`` with every role."""
        client = ClientPolicy(identity=client_id, roles=ALL_ROLES, rate_limit=rate_limit)
        return cls(policy=Policy([client], clock), fixed=Principal(client), observer=observer)

    def authorize(self, method: str, request: Any, context: _Context) -> Principal:
        """The caller, if it may call ``method`` with ``request`` now; otherwise the domain error
        (after counting and logging the refusal)."""
        if self._fixed is not None:
            principal = self._fixed
        else:
            names = _names(context)
            found = (
                self._policy.identify(names)
                if names
                else Denied("no_identity", Unauthenticated("no client certificate"))
            )
            if isinstance(found, Denied):
                self._refuse(method, found, None, names[:1])
            principal = found
        table_id, profile = _scope(request)
        denied = self._policy.check(principal, method, table_id=table_id, profile=profile)
        if denied is not None:
            self._refuse(method, denied, principal, [principal.identity])
        return principal

    @contextlib.contextmanager
    def authorized(self, method: str, request: Any, context: _Context) -> Iterator[Principal]:
        """Authorizes the call and makes its caller :func:`caller_id` while the block runs."""
        principal = self.authorize(method, request, context)
        token = _CALLER.set(principal)
        try:
            yield principal
        finally:
            _CALLER.reset(token)

    def enter(self, method: str, request: Any, context: _Context) -> Token[Principal | None]:
        """:meth:`authorized` without a context manager (the per-call path of ``rpc``):
        authorizes the call and makes its caller :func:`caller_id` until :func:`leave`."""
        return _CALLER.set(self.authorize(method, request, context))

    def _refuse(
        self, method: str, denied: Denied, principal: Principal | None, names: list[str]
    ) -> NoReturn:
        role = principal.role_label if principal is not None else "none"
        client = principal.identity if principal is not None else "unconfigured"
        if self._observer is not None:
            self._observer.denied(method=method, reason=denied.reason, role=role, client=client)
        _log.warning(
            {
                "event": "denied",
                "method": method,
                "reason": denied.reason,
                "role": role,
                "identity": names[0][:_MAX_LOGGED_IDENTITY] if names else None,
                "configured": principal is not None,
                "message": str(denied.error),
            }
        )
        raise denied.error
