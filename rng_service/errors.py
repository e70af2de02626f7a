"""Domain errors, grouped by who must act.

Every layer raises these (or subclasses); the service layer maps each class to exactly one
gRPC status code in one table (``rng_service.service.errors``). This module imports nothing
from the project so that the random core may use it too.
"""

from __future__ import annotations

__all__ = [
    "AlreadyExists",
    "FailedPrecondition",
    "GeneratorUnavailable",
    "IntegrityError",
    "InvalidArgument",
    "NotFound",
    "OutOfRange",
    "Overloaded",
    "PermissionDenied",
    "RngServiceError",
    "StorageUnavailable",
    "Unauthenticated",
    "Unavailable",
]


class RngServiceError(Exception):
    """Base class of every error this service reports to a caller."""


class InvalidArgument(RngServiceError):
    """The caller sent a bad value. ``field`` names it; ``allowed`` says what is accepted."""

    def __init__(self, field: str, message: str, *, allowed: str = "") -> None:
        self.field = field
        self.allowed = allowed
        text = f"{field}: {message}"
        if allowed:
            text += f" (allowed: {allowed})"
        super().__init__(text)


class OutOfRange(RngServiceError):
    """An index or size beyond what exists (for example beyond the log's tree size)."""


class NotFound(RngServiceError):
    """The named thing does not exist."""


class AlreadyExists(RngServiceError):
    """A request id was reused with different parameters: the first outcome stands."""


class FailedPrecondition(RngServiceError):
    """The request is well formed but the state it depends on is missing."""


class PermissionDenied(RngServiceError):
    """A known client called outside its role."""


class Unauthenticated(RngServiceError):
    """The client's identity is not configured."""


class Overloaded(RngServiceError):
    """Too many requests (rate limit or full queue); retry later."""


class Unavailable(RngServiceError):
    """The service cannot issue outcomes right now; nothing was issued."""


class GeneratorUnavailable(Unavailable):
    """The random generator is in its error state (failed health or self-test): fail closed."""


class StorageUnavailable(Unavailable):
    """The log store cannot commit; nothing that is not durable is returned."""


class IntegrityError(RngServiceError):
    """Stored or received data fails verification. Never retried."""
