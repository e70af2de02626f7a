"""Domain errors, grouped by who must act.

Every layer raises these (or subclasses); the service layer maps each class to exactly one
gRPC status code in one table (``rng_service.rpc.errors``). This module imports nothing
from the project so that the random core may use it too.

Each error also carries a ``cause``: one word from a fixed set saying why, which becomes the
``cause`` label of the RPC metric and tells a refusal (the caller's side) from a failure (the
service's side) where one status code has both (a rate limit or a full queue both answer
RESOURCE_EXHAUSTED). A class sets its default; a raise site may name a more specific one
(``Overloaded(..., cause="rate_limit")``). Every (status code, cause) pair is classed in
:data:`rng_service.rpc.errors.STATUS_CAUSES`. A cause is never text from a request.
"""

from __future__ import annotations

__all__ = [
    "AlreadyExists",
    "DeadlineExceeded",
    "FailedPrecondition",
    "GeneratorUnavailable",
    "IntegrityError",
    "InvalidArgument",
    "NotFound",
    "OutOfRange",
    "Overloaded",
    "PermissionDenied",
    "RngServiceError",
    "RoundOrderViolation",
    "RoundRefused",
    "RoundVoided",
    "ShuttingDown",
    "SlotFilled",
    "StorageUnavailable",
    "Unauthenticated",
    "Unavailable",
]


class RngServiceError(Exception):
    """Base class of every error this service reports to a caller."""

    #: Why, as one fixed word (a metric label): the class default, or the raise site's own.
    cause: str = "unexpected"

    def __init__(self, *args: object, cause: str | None = None) -> None:
        super().__init__(*args)
        if cause is not None:
            self.cause = cause


class InvalidArgument(RngServiceError):
    """The caller sent a bad value. ``field`` names it; ``allowed`` says what is accepted."""

    cause = "invalid_argument"

    def __init__(self, field: str, message: str, *, allowed: str = "") -> None:
        self.field = field
        self.allowed = allowed
        text = f"{field}: {message}"
        if allowed:
            text += f" (allowed: {allowed})"
        super().__init__(text)


class OutOfRange(RngServiceError):
    """An index or size beyond what exists (for example beyond the log's tree size)."""

    cause = "out_of_range"


class NotFound(RngServiceError):
    """The named thing does not exist."""

    cause = "not_found"


class AlreadyExists(RngServiceError):
    """A request id was reused with different parameters: the first outcome stands."""

    cause = "request_id_reused"


class FailedPrecondition(RngServiceError):
    """The request is well formed but the state it depends on is missing."""

    cause = "precondition"


class RoundRefused(FailedPrecondition):
    """A request that would break its game round's integrity: nothing was drawn or logged.

    A round is (client, ``table_id``, ``round_id``); docs/outcomes-api.md ("Rounds and slots")
    lists every refusal. The subclasses say which rule failed.
    """

    def __init__(self, message: str, *, table_id: str, round_id: str) -> None:
        self.table_id = table_id
        self.round_id = round_id
        super().__init__(message)


class SlotFilled(RoundRefused):
    """The round's slot already holds an outcome (another request id drew it): a game event is
    drawn once. ``index`` is that entry's log index."""

    cause = "slot_filled"

    def __init__(
        self, message: str, *, table_id: str, round_id: str, slot: str, index: int
    ) -> None:
        self.slot = slot
        self.index = index
        super().__init__(message, table_id=table_id, round_id=round_id)


class RoundVoided(RoundRefused):
    """The round was voided (``VoidRound``) at log index ``index``: its id is not used again."""

    cause = "round_voided"

    def __init__(self, message: str, *, table_id: str, round_id: str, index: int) -> None:
        self.index = index
        super().__init__(message, table_id=table_id, round_id=round_id)


class RoundOrderViolation(RoundRefused):
    """The request comes out of the order the game's rules give (for example a Fire Number
    draw after the spin, or a bonus without a qualifying spin). ``rule`` is a short fixed name
    of the rule (docs/outcomes-api.md), for logs and tests."""

    cause = "round_order"

    def __init__(self, message: str, *, table_id: str, round_id: str, rule: str) -> None:
        self.rule = rule
        super().__init__(message, table_id=table_id, round_id=round_id)


class PermissionDenied(RngServiceError):
    """A known client called outside its role (or its tables, kinds, profiles: the cause)."""

    cause = "role"


class Unauthenticated(RngServiceError):
    """The client's identity is not configured."""

    cause = "unconfigured_identity"


class Overloaded(RngServiceError):
    """Too many requests (a full queue, or with cause ``rate_limit`` the caller's own rate
    limit); retry later."""

    cause = "queue_full"


class Unavailable(RngServiceError):
    """The service cannot issue outcomes right now; nothing was issued."""

    cause = "unavailable"


class GeneratorUnavailable(Unavailable):
    """The random generator is in its error state (failed health or self-test): fail closed."""

    cause = "generator"


class StorageUnavailable(Unavailable):
    """The log store cannot commit; nothing that is not durable is returned."""

    cause = "storage"


class ShuttingDown(Unavailable):
    """The service is stopping: the log writer takes no more requests."""

    cause = "shutting_down"


class IntegrityError(RngServiceError):
    """Stored or received data fails verification. Never retried."""

    cause = "integrity"


class DeadlineExceeded(RngServiceError):
    """A time limit of the service's own ran out (a raw output session's); what was sent
    before stands."""

    cause = "session_time_limit"
