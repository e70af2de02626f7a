"""Who may call what: roles, the method table, per-client scopes and per-client rate limits.

Pure policy, no gRPC: :mod:`rng_service.rpc.auth` turns a peer's certificate identity into a
:class:`Principal` and asks :class:`Policy` whether it may call a method; this module answers
with a domain error (:class:`~rng_service.errors.Unauthenticated`,
:class:`~rng_service.errors.PermissionDenied` or :class:`~rng_service.errors.Overloaded`), which
the one status table maps to UNAUTHENTICATED, PERMISSION_DENIED and RESOURCE_EXHAUSTED.

Every RPC of ``rng.v1.OutcomeService``, ``rng.v1.LogService`` and ``rng.v1.LabService`` is in
:data:`METHODS`; a method missing from it is refused for everybody (fail closed). Rate limits
are token buckets (``rate_per_second`` tokens added continuously up to ``burst``; a call takes
one) on the injected :class:`~rng_service.clock.Clock`. docs/security.md has the table in prose.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from rng_service.clock import Clock
from rng_service.errors import Overloaded, PermissionDenied, Unauthenticated

__all__ = [
    "ANY",
    "GAME_KINDS",
    "METHODS",
    "ClientPolicy",
    "Denied",
    "MethodRule",
    "Policy",
    "Principal",
    "RateLimit",
    "Role",
    "TokenBucket",
    "shared_table",
]

#: In a client's ``tables``, ``kinds`` or ``profiles``: any value.
ANY = "*"


class Role(enum.Enum):
    GAME_SERVER = "game_server"  # draws single outcomes for its own tables
    AUDITOR = "auditor"  # reads the log: entries, proofs, checkpoints (exports use these)
    LAB = "lab"  # batch, stream and single draws for certification testing
    OPERATOR = "operator"  # publishes checkpoints, voids rounds (and future reload/rotation RPCs)


ALL_ROLES = frozenset(Role)


@dataclass(frozen=True, slots=True)
class MethodRule:
    """The roles that may call a method, and the outcome kind it logs (game-server draws)."""

    roles: frozenset[Role]
    kind: str = ""


#: Single outcomes: game servers, within their tables, kinds and profiles; and labs, under
#: their own identity (its own idempotency scope and rounds), to measure return to player
#: (``rng-certify rtp --live``) for the kinds no batch draws.
_GAME = frozenset({Role.GAME_SERVER, Role.LAB})
_READ = frozenset({Role.AUDITOR})

#: Every RPC by its short name. Public keys and profile descriptions are public, so every
#: configured client may read them; log contents and proofs are for auditors only, so a game
#: server never sees another client's entries.
METHODS: Mapping[str, MethodRule] = {
    # rng.v1.OutcomeService
    "SpinRoulette": MethodRule(_GAME, "roulette_spin"),
    "DrawMultiBall": MethodRule(_GAME, "multiball"),
    "SelectFireNumbers": MethodRule(_GAME, "fire_numbers"),
    "PlayMegaFireBlazeBonus": MethodRule(_GAME, "mega_fire_blaze_bonus"),
    "DrawJackpotTier": MethodRule(_GAME, "jackpot_tier"),
    "RollDice": MethodRule(_GAME, "dice_roll"),
    "ShuffleCards": MethodRule(_GAME, "card_shuffle"),
    "DrawUniformIntegers": MethodRule(_GAME, "uniform_int"),
    "DrawWeighted": MethodRule(_GAME, "weighted_choice"),
    "ListProfiles": MethodRule(ALL_ROLES),
    "GetProfile": MethodRule(ALL_ROLES),
    "DrawBatch": MethodRule(frozenset({Role.LAB})),
    "StreamBatch": MethodRule(frozenset({Role.LAB})),
    # Voids a game round abandoned at the table: any table of any game server it names.
    "VoidRound": MethodRule(frozenset({Role.OPERATOR})),
    # rng.v1.LogService
    "GetPublicKeys": MethodRule(ALL_ROLES),
    "GetLatestCheckpoint": MethodRule(frozenset({Role.AUDITOR, Role.OPERATOR})),
    "PublishCheckpoint": MethodRule(frozenset({Role.OPERATOR})),
    "GetCheckpoints": MethodRule(_READ),
    "GetInclusionProof": MethodRule(_READ),
    "GetConsistencyProof": MethodRule(_READ),
    "GetEntries": MethodRule(_READ),
    "FindEntries": MethodRule(_READ),
    # A table's chain with proofs: auditors any client's; a game server its own tables' only
    # (check_scope), so that it can prove its own history complete without the auditor role.
    "GetTableHistory": MethodRule(frozenset({Role.AUDITOR, Role.GAME_SERVER})),
    # rng.v1.LabService (raw generator output; also needs certification.raw_stream_enabled)
    "StreamRawOutput": MethodRule(frozenset({Role.LAB})),
}

#: Outcome kinds a game server's ``kinds`` may name.
GAME_KINDS = tuple(rule.kind for rule in METHODS.values() if rule.kind)


def shared_table(grants: Sequence[tuple[str, Iterable[str]]]) -> tuple[int, int, str] | None:
    """The first table granted to two game servers, as (earlier, later, table): positions in
    ``grants`` (the game servers' identities and tables, in configuration order) and the table
    the later one holds (:data:`ANY` when it is its "*"); None when every table has one game
    server. A table is one physical table with one game server driving it (docs/security.md,
    "Roles"): two would share its rounds' slots and its chain, each able to draw or void the
    other's rounds. ``"*"`` overlaps every table, another ``"*"`` too."""
    owner: dict[str, int] = {}
    everything: int | None = None
    for position, (_, tables) in enumerate(grants):
        held = sorted(set(tables))
        if ANY in held:
            if everything is not None:
                return everything, position, ANY
            if owner:
                return min(owner.values()), position, ANY
            everything = position
            continue
        for table in held:
            if everything is not None:
                return everything, position, table
            earlier = owner.setdefault(table, position)
            if earlier != position:
                return earlier, position, table
    return None


@dataclass(frozen=True, slots=True)
class RateLimit:
    rate_per_second: float
    burst: int


@dataclass(frozen=True, slots=True)
class ClientPolicy:
    """One configured client: its identity (certificate CN or subjectAltName), roles, and for a
    game server the tables, outcome kinds and profiles it may draw for (:data:`ANY` = all)."""

    identity: str
    roles: frozenset[Role]
    tables: frozenset[str] = frozenset({ANY})
    kinds: frozenset[str] = frozenset({ANY})
    profiles: frozenset[str] = frozenset({ANY})
    rate_limit: RateLimit | None = None
    #: The origins of the logs it may use (:data:`ANY` = every log); a game server's is one.
    logs: frozenset[str] = frozenset({ANY})


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller: the configured client it matched."""

    client: ClientPolicy

    @property
    def identity(self) -> str:
        return self.client.identity

    @property
    def role_label(self) -> str:
        """The caller's roles as one bounded label value, e.g. ``auditor+operator``."""
        return "+".join(sorted(r.value for r in self.client.roles))


@dataclass(frozen=True, slots=True)
class Denied:
    """A refused call: the domain error, whose ``cause`` is the fixed ``reason`` (a label of
    both the denial and the RPC metrics)."""

    error: Unauthenticated | PermissionDenied | Overloaded

    @property
    def reason(self) -> str:
        return self.error.cause


class TokenBucket:
    """``burst`` tokens, refilled at ``rate_per_second``; :meth:`take` spends one or fails."""

    def __init__(self, limit: RateLimit, clock: Clock) -> None:
        self._limit = limit
        self._clock = clock
        self._tokens = float(limit.burst)
        self._last = clock.monotonic()
        self._lock = threading.Lock()

    @property
    def limit(self) -> RateLimit:
        return self._limit

    def take(self) -> float:
        """0.0 when a token was taken, else the seconds until the next one."""
        with self._lock:
            now = self._clock.monotonic()
            elapsed = max(0.0, now - self._last)
            self._last = now
            self._tokens = min(
                float(self._limit.burst), self._tokens + elapsed * self._limit.rate_per_second
            )
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return 0.0
            return (1.0 - self._tokens) / self._limit.rate_per_second


@dataclass
class Policy:
    """The configured clients and their buckets. :meth:`identify` and :meth:`check` raise
    nothing: they return :class:`Denied` so the caller can count and log before raising."""

    clients: Iterable[ClientPolicy]
    clock: Clock
    _by_identity: dict[str, ClientPolicy] = field(init=False)
    _buckets: dict[str, TokenBucket] = field(init=False)

    def __post_init__(self) -> None:
        self._by_identity = {}
        for client in self.clients:
            if client.identity in self._by_identity:
                raise ValueError(f"client identity {client.identity!r} is configured twice")
            self._by_identity[client.identity] = client
        by_log: dict[frozenset[str], list[ClientPolicy]] = {}
        for c in self._by_identity.values():
            if Role.GAME_SERVER in c.roles:  # table ids are per log: each operator its own
                by_log.setdefault(c.logs, []).append(c)
        for servers in by_log.values():
            shared = shared_table([(c.identity, c.tables) for c in servers])
            if shared is not None:
                earlier, later, table = (servers[shared[0]], servers[shared[1]], shared[2])
                raise ValueError(
                    f"game servers {earlier.identity!r} and {later.identity!r} are both granted "
                    f"table {table!r}: a table has one game server"
                )
        self._buckets = {
            c.identity: TokenBucket(c.rate_limit, self.clock)
            for c in self._by_identity.values()
            if c.rate_limit is not None
        }

    def identify(self, names: Iterable[str]) -> Principal | Denied:
        """The configured client among a certificate's names (CN and subjectAltNames)."""
        found = {self._by_identity[n].identity for n in names if n in self._by_identity}
        if len(found) == 1:
            return Principal(self._by_identity[found.pop()])
        if found:
            return Denied(
                Unauthenticated(
                    "the client certificate names more than one configured client: "
                    + ", ".join(sorted(found)),
                    cause="ambiguous_identity",
                )
            )
        return Denied(
            Unauthenticated(
                "the client certificate's identity is not a configured client",
                cause="unconfigured_identity",
            )
        )

    @staticmethod
    def check_log(principal: Principal, origin: str, served: str) -> Denied | None:
        """None when ``principal`` may use the log ``origin`` here, where the log ``served``
        is served. A log that is not served here and a log the caller is not bound to get the
        same refusal, word for word whatever log was named (the text does not even echo it),
        so that neither's existence is revealed."""
        logs = principal.client.logs
        if origin == served and (ANY in logs or origin in logs):
            return None
        return Denied(
            PermissionDenied(
                f"the requested log is not available to client {principal.identity!r}",
                cause="log",
            )
        )

    def check(
        self,
        principal: Principal,
        method: str,
        *,
        table_id: str | None,
        profile: str | None,
        client: str | None = None,
    ) -> Denied | None:
        """None when ``principal`` may call ``method`` with a request naming ``table_id``,
        ``profile`` and ``client`` now; else why not: :meth:`check_method`, then
        :meth:`check_scope`."""
        return self.check_method(principal, method) or self.check_scope(
            principal, method, table_id=table_id, profile=profile, client=client
        )

    def check_method(self, principal: Principal, method: str) -> Denied | None:
        """What needs no request body: the role, a game server's outcome kinds, then the rate
        limit. The service runs it before it decodes the request, so a flood of calls (even
        of undecodable bytes) is limited by the caller's bucket. The rate limit is spent only
        by calls the role and kinds allow, so calls refused for those cannot starve allowed
        ones."""
        client = principal.client
        rule = METHODS.get(method)
        if rule is None or rule.roles.isdisjoint(client.roles):
            allowed = ", ".join(sorted(r.value for r in rule.roles)) if rule else "nobody"
            return Denied(
                PermissionDenied(
                    f"{method} is not allowed for client {client.identity!r} "
                    f"(roles: {principal.role_label}; {method} needs: {allowed})",
                    cause="role",
                )
            )
        if (
            rule.kind
            and Role.GAME_SERVER in client.roles
            and ANY not in client.kinds
            and rule.kind not in client.kinds
        ):
            return Denied(
                PermissionDenied(
                    f"outcome kind {rule.kind!r} is not allowed for client {client.identity!r}",
                    cause="kind",
                )
            )
        bucket = self._buckets.get(client.identity)
        if bucket is not None:
            wait = bucket.take()
            if wait > 0.0:
                limit = bucket.limit
                return Denied(
                    Overloaded(
                        f"rate limit of client {client.identity!r} exceeded "
                        f"({limit.rate_per_second:g} calls/s, burst {limit.burst}); "
                        f"retry in {wait:.3f} s",
                        cause="rate_limit",
                    )
                )
        return None

    def check_scope(
        self,
        principal: Principal,
        method: str,
        *,
        table_id: str | None,
        profile: str | None,
        client: str | None = None,
    ) -> Denied | None:
        """What the request names: a game server's tables and profiles (after decoding); for
        ``GetTableHistory`` without the auditor role, the ``client`` must be the caller itself
        (or empty) and the table one of its tables."""
        rule = METHODS.get(method)
        if method == "GetTableHistory" and Role.AUDITOR not in principal.client.roles:
            if client and client != principal.identity:
                return Denied(
                    PermissionDenied(
                        f"client {principal.identity!r} may read its own table histories only, "
                        f"not client {client!r}'s (that needs the auditor role)",
                        cause="client",
                    )
                )
            return self._scope(principal.client, table_id, None)
        if rule is None or not rule.kind or Role.GAME_SERVER not in principal.client.roles:
            return None
        return self._scope(principal.client, table_id, profile)

    @staticmethod
    def _scope(client: ClientPolicy, table_id: str | None, profile: str | None) -> Denied | None:
        if ANY not in client.tables and (table_id or "") not in client.tables:
            return Denied(
                PermissionDenied(
                    f"table_id {table_id or ''!r} is not allowed for client {client.identity!r}",
                    cause="table",
                )
            )
        if profile is not None and ANY not in client.profiles and profile not in client.profiles:
            return Denied(
                PermissionDenied(
                    f"profile {profile!r} is not allowed for client {client.identity!r}",
                    cause="profile",
                )
            )
        return None
