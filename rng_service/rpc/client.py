"""A small synchronous client for the CLI and for Python users without generated code.

It returns plain dictionaries and :class:`rng_service.log.receipt.Receipt` objects, so its
callers never touch protobuf types. With :class:`ClientTls` it speaks mTLS (the service's
certificate checked against the operator's CA, this client's certificate presented; gRPC
authentication guide, https://grpc.io/docs/guides/auth/); without, plaintext (loopback
development). A refused handshake surfaces as UNAVAILABLE; when the cause is likely a
plaintext client on an mTLS port (or the reverse, or a certificate the other side does not
accept), the :class:`ClientError` message ends with a hint saying so (:func:`connection_hint`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc

from rng_service._proto.rng.v1 import (
    common_pb2,
    lab_pb2,
    lab_pb2_grpc,
    log_pb2,
    log_pb2_grpc,
    outcomes_pb2,
    outcomes_pb2_grpc,
)
from rng_service.log.receipt import Receipt
from rng_service.rpc.origin import open_channels

__all__ = [
    "ClientError",
    "ClientTls",
    "OutcomeResult",
    "RawSession",
    "RngClient",
    "SpinResult",
    "connection_hint",
]

_WHEELS = {
    "single_zero": outcomes_pb2.WHEEL_TYPE_SINGLE_ZERO,
    "double_zero": outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO,
    "double_zero_as_single_zero": outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO_AS_SINGLE_ZERO,
}
WHEEL_NAMES = tuple(_WHEELS)


@dataclass(frozen=True, repr=False)
class ClientTls:
    """mTLS material, PEM: the CA that issued the service's certificate, and this client's
    certificate and private key. ``repr`` never shows the key."""

    ca: bytes
    cert: bytes
    key: bytes

    @classmethod
    def from_files(
        cls,
        ca: str | os.PathLike[str],
        cert: str | os.PathLike[str],
        key: str | os.PathLike[str],
    ) -> ClientTls:
        """Reads the three PEM files (paths as ``str`` or ``Path``); OSError if one cannot be
        read."""
        return cls(
            ca=Path(ca).read_bytes(), cert=Path(cert).read_bytes(), key=Path(key).read_bytes()
        )

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=self.ca, private_key=self.key, certificate_chain=self.cert
        )

    def __repr__(self) -> str:
        return "ClientTls(ca=..., cert=..., key=<hidden>)"


class ClientError(Exception):
    """A call that did not succeed: ``code`` is the gRPC status name (``UNAVAILABLE``, ...),
    ``details`` the service's message (with a connection hint appended where one applies).

    ``sent`` is False only when the request certainly never left this client: gRPC failed the
    call for want of a READY connection ("failed to connect to all addresses": the channel's
    connection attempts failed, as a plaintext call's handshake with an mTLS port does, and no
    transport was picked for the call). Otherwise the service may have received it (and, for
    a draw, logged an outcome)."""

    def __init__(self, code: str, message: str, *, sent: bool = True) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.details = message
        self.sent = sent


_MTLS_OPTIONS = "--ca, --cert and --tls-key on the command line, ClientTls in Python"


def connection_hint(code: str, details: str, *, tls: bool) -> str:
    """What a failed connection probably means, or "" (gRPC reports a TLS mismatch only as a
    closed socket or a handshake error). Appended to the error by both clients."""
    if code != "UNAVAILABLE":
        return ""
    if "Connection refused" in details:
        return "nothing accepts connections at that address: is the service running there?"
    if not tls and "Socket closed" in details:
        return (
            "the service closed the connection: the port may want mTLS, i.e. a client "
            f"certificate from the operator's CA ({_MTLS_OPTIONS})"
        )
    if tls and "WRONG_VERSION_NUMBER" in details:
        return (
            "the port does not speak TLS: it may be a plaintext development service (call it "
            "without --ca, --cert and --tls-key)"
        )
    if tls and "CERTIFICATE_VERIFY_FAILED" in details:
        return "the service's certificate was not issued by the given CA (--ca)"
    if tls and "Socket closed" in details:
        return (
            "the service ended the TLS handshake: it may not accept this client certificate "
            "(issued by another CA, or expired); check --cert and --tls-key"
        )
    return ""


#: gRPC core's words when a call failed because no connection could be picked for it: the
#: call was never written to a transport.
NO_CONNECTION = "failed to connect to all addresses"


def _rpc_error(e: grpc.RpcError, *, tls: bool) -> ClientError:
    code = e.code().name
    details = e.details() or ""
    hint = connection_hint(code, details, tls=tls)
    sent = code != "UNAVAILABLE" or not details.startswith(NO_CONNECTION)
    return ClientError(code, f"{details} (hint: {hint})" if hint else details, sent=sent)


@dataclass(frozen=True)
class SpinResult:
    number: str
    color: str
    wheel_position: int
    spins: tuple[dict[str, Any], ...]
    receipt: Receipt


def _spin_dict(s: outcomes_pb2.RouletteSpin) -> dict[str, Any]:
    return {
        "number": s.number,
        "color": outcomes_pb2.Color.Name(s.color).removeprefix("COLOR_").lower(),
        "wheel_position": s.wheel_position,
        "void": s.void,
    }


@dataclass(frozen=True)
class OutcomeResult:
    """An outcome RPC's answer: its fields as plain values (enums as lower-case names without
    their prefix, "" when unset; nested messages as dicts) and the receipt."""

    outcome: dict[str, Any]
    receipt: Receipt


@dataclass(frozen=True)
class RawSession:
    """The first message of a raw output stream: the logged session and its receipt."""

    generator_instance: str
    generator_epoch: int
    num_bytes: int
    chunk_size: int
    receipt: Receipt


def _plain(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        if field.name == "receipt":
            continue
        if field.containing_oneof is not None and not message.HasField(field.name):
            continue
        value = getattr(message, field.name)
        repeated = field.is_repeated
        items = list(value) if repeated else [value]
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            items = [_plain(v) for v in items]
        elif field.type == FieldDescriptor.TYPE_ENUM:
            enum = field.enum_type
            if enum is None:  # not reached: an enum field has its type
                raise TypeError(f"enum field {field.name} has no enum type")
            prefix = enum.values[0].name.removesuffix("UNSPECIFIED")
            items = [
                enum.values_by_number[v].name.removeprefix(prefix).lower() if v else ""
                for v in items
            ]
        out[field.name] = items if repeated else items[0]
    return out


def _receipt(r: common_pb2.Receipt) -> Receipt:
    return Receipt(
        index=r.index,
        entry=r.entry,
        leaf_hash=r.leaf_hash,
        inclusion_proof=tuple(r.inclusion_proof),
        tree_size=r.tree_size,
        checkpoint=r.checkpoint,
        replayed=r.replayed,
    )


def _context(ids: dict[str, str]) -> common_pb2.RequestContext:
    return common_pb2.RequestContext(
        table_id=ids["table_id"],
        round_id=ids["round_id"],
        request_id=ids["request_id"],
        session_id=ids.get("session_id", ""),
        slot=ids.get("slot", ""),
    )


class RngClient:
    def __init__(
        self,
        target: str,
        *,
        timeout: float = 10.0,
        tls: ClientTls | None = None,
        origin: str | None = None,
    ) -> None:
        #: Every call names the log ``origin`` (None: the log served at ``target``).
        self._raw_channel, self._channel = open_channels(
            target, None if tls is None else tls.credentials(), origin
        )
        self._outcomes = outcomes_pb2_grpc.OutcomeServiceStub(self._channel)
        self._log = log_pb2_grpc.LogServiceStub(self._channel)
        self._lab = lab_pb2_grpc.LabServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self._timeout = timeout
        self._tls = tls is not None

    def close(self) -> None:
        self._raw_channel.close()

    def __enter__(self) -> RngClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, fn: Any, request: Any) -> Any:
        try:
            return fn(request, timeout=self._timeout)
        except grpc.RpcError as e:
            raise _rpc_error(e, tls=self._tls) from None

    def spin(
        self, *, wheel: str, table_id: str, round_id: str, request_id: str, session_id: str = ""
    ) -> SpinResult:
        if wheel not in _WHEELS:
            raise ClientError("INVALID_ARGUMENT", f"wheel must be one of {', '.join(_WHEELS)}")
        reply = self._call(
            self._outcomes.SpinRoulette,
            outcomes_pb2.SpinRouletteRequest(
                context=common_pb2.RequestContext(
                    table_id=table_id,
                    round_id=round_id,
                    request_id=request_id,
                    session_id=session_id,
                ),
                wheel=_WHEELS[wheel],
            ),
        )
        final = _spin_dict(reply.result)
        return SpinResult(
            number=final["number"],
            color=final["color"],
            wheel_position=final["wheel_position"],
            spins=tuple(_spin_dict(s) for s in reply.spins),
            receipt=_receipt(reply.receipt),
        )

    def _outcome(self, method: str, request: Message) -> OutcomeResult:
        reply = self._call(getattr(self._outcomes, method), request)
        return OutcomeResult(outcome=_plain(reply), receipt=_receipt(reply.receipt))

    # Each method below takes the RequestContext fields as keywords: table_id, round_id,
    # request_id (required), session_id and, for the generic draws, slot (optional).

    def multiball(self, *, wheel: str, balls: int, **ids: str) -> OutcomeResult:
        if wheel not in _WHEELS:
            raise ClientError("INVALID_ARGUMENT", f"wheel must be one of {', '.join(_WHEELS)}")
        return self._outcome(
            "DrawMultiBall",
            outcomes_pb2.DrawMultiBallRequest(
                context=_context(ids), wheel=_WHEELS[wheel], balls=balls
            ),
        )

    def fire_numbers(self, *, profile: str, **ids: str) -> OutcomeResult:
        return self._outcome(
            "SelectFireNumbers",
            outcomes_pb2.SelectFireNumbersRequest(context=_context(ids), profile=profile),
        )

    def mega_fire_blaze_bonus(
        self, *, profile: str, fire_numbers_index: int | None = None, **ids: str
    ) -> OutcomeResult:
        """The round's bonus game; ``fire_numbers_index``, if given, is checked against the
        round's Fire Number draw (the service finds it by the round)."""
        request = outcomes_pb2.PlayMegaFireBlazeBonusRequest(context=_context(ids), profile=profile)
        if fire_numbers_index is not None:
            request.fire_numbers_index = fire_numbers_index
        return self._outcome("PlayMegaFireBlazeBonus", request)

    def jackpot_tier(self, *, profile: str, **ids: str) -> OutcomeResult:
        return self._outcome(
            "DrawJackpotTier",
            outcomes_pb2.DrawJackpotTierRequest(context=_context(ids), profile=profile),
        )

    def roll_dice(self, *, count: int, sides: int, **ids: str) -> OutcomeResult:
        return self._outcome(
            "RollDice",
            outcomes_pb2.RollDiceRequest(context=_context(ids), count=count, sides=sides),
        )

    def shuffle(
        self, *, decks: int = 1, jokers: int = 0, plan: str = "", players: int = 0, **ids: str
    ) -> OutcomeResult:
        return self._outcome(
            "ShuffleCards",
            outcomes_pb2.ShuffleCardsRequest(
                context=_context(ids), decks=decks, jokers=jokers, plan=plan, players=players
            ),
        )

    def uniform(
        self, *, low: int, high: int, count: int = 1, distinct: bool = False, **ids: str
    ) -> OutcomeResult:
        return self._outcome(
            "DrawUniformIntegers",
            outcomes_pb2.DrawUniformIntegersRequest(
                context=_context(ids), low=low, high=high, count=count, distinct=distinct
            ),
        )

    def weighted(self, *, weights: list[int], count: int = 1, **ids: str) -> OutcomeResult:
        return self._outcome(
            "DrawWeighted",
            outcomes_pb2.DrawWeightedRequest(context=_context(ids), weights=weights, count=count),
        )

    def void_round(
        self,
        *,
        table_id: str,
        round_id: str,
        request_id: str,
        reason: str,
        client: str = "",
    ) -> OutcomeResult:
        """Voids a game round (operator role): ``client``'s round ``round_id`` at ``table_id``
        (empty client: the caller's own). Nothing more is drawn in the round afterwards."""
        return self._outcome(
            "VoidRound",
            outcomes_pb2.VoidRoundRequest(
                context=common_pb2.RequestContext(
                    table_id=table_id, round_id=round_id, request_id=request_id
                ),
                client=client,
                reason=reason,
            ),
        )

    def profiles(self) -> list[dict[str, Any]]:
        reply = self._call(self._outcomes.ListProfiles, outcomes_pb2.ListProfilesRequest())
        return [_plain(p) for p in reply.profiles]

    def profile(
        self, *, name: str = "", version: int | None = None, sha256: str = ""
    ) -> tuple[dict[str, Any], bytes]:
        """A loaded profile or paytable (``GetProfile``): its description and canonical bytes."""
        request = outcomes_pb2.GetProfileRequest(name=name)
        if version is not None:
            request.version = version
        if sha256:
            request.sha256 = sha256
        reply = self._call(self._outcomes.GetProfile, request)
        return _plain(reply.profile), reply.canonical

    @staticmethod
    def _batch_kind(
        request: Any,
        wheel: str | None,
        dice: tuple[int, int] | None,
        uniform: tuple[int, int] | None,
    ) -> None:
        if wheel is not None:
            if wheel not in _WHEELS:
                raise ClientError("INVALID_ARGUMENT", f"wheel must be one of {', '.join(_WHEELS)}")
            request.roulette.wheel = _WHEELS[wheel]
        elif dice is not None:
            request.dice.count, request.dice.sides = dice
        elif uniform is not None:
            request.uniform.low, request.uniform.high = uniform

    def batch(
        self,
        *,
        count: int,
        wheel: str | None = None,
        dice: tuple[int, int] | None = None,
        uniform: tuple[int, int] | None = None,
        **ids: str,
    ) -> OutcomeResult:
        """``DrawBatch`` (lab role): ``count`` spins of ``wheel`` (single_zero, double_zero),
        rolls of ``dice`` = (dice, sides), or integers in ``uniform`` = (low, high)."""
        request = outcomes_pb2.DrawBatchRequest(context=_context(ids), count=count)
        self._batch_kind(request, wheel, dice, uniform)
        return self._outcome("DrawBatch", request)

    def stream_batch(
        self,
        *,
        count: int,
        chunk_size: int = 0,
        wheel: str | None = None,
        dice: tuple[int, int] | None = None,
        uniform: tuple[int, int] | None = None,
        **ids: str,
    ) -> Iterator[OutcomeResult]:
        """``StreamBatch`` (lab role): as :meth:`batch`, in chunks of ``chunk_size`` (0: the
        service's default), each chunk its own log entry and receipt, yielded as it arrives
        (its ``outcome`` has ``chunk``, ``chunks``, ``first`` and the values). The client's
        timeout bounds the whole stream. A retry with the same request id replays the chunks
        already logged and draws only the missing ones."""
        request = outcomes_pb2.StreamBatchRequest(
            context=_context(ids), count=count, chunk_size=chunk_size
        )
        self._batch_kind(request, wheel, dice, uniform)
        call = self._outcomes.StreamBatch(request, timeout=self._timeout)
        try:
            for message in call:
                yield OutcomeResult(outcome=_plain(message), receipt=_receipt(message.receipt))
        except grpc.RpcError as e:
            raise _rpc_error(e, tls=self._tls) from None
        finally:
            call.cancel()  # a consumer that stops early ends the stream (no-op when done)

    def public_keys(self) -> list[dict[str, Any]]:
        """Every published key: ``key_id``, ``name``, ``algorithm``, ``verifier_key`` and
        whether it is ``active`` (signs new checkpoints) or ``cosigning``; neither: retired."""
        reply = self._call(self._log.GetPublicKeys, log_pb2.GetPublicKeysRequest())
        return [
            {
                "key_id": k.key_id,
                "name": k.name,
                "algorithm": k.algorithm,
                "verifier_key": k.verifier_key,
                "active": k.active,
                "cosigning": k.cosigning,
            }
            for k in reply.keys
        ]

    # LogService reads (auditor role; GetLatestCheckpoint also operator). Nothing they return
    # needs trusting: the caller verifies it with the log's keys (docs/auditing.md).

    def latest_checkpoint(self) -> dict[str, Any]:
        """The signed checkpoint of the current tree: ``size``, ``root_hash``, ``note`` (the
        signed note's text), ``published``, ``published_at_ns``."""
        request = log_pb2.GetLatestCheckpointRequest()
        return _plain(self._call(self._log.GetLatestCheckpoint, request))

    def publish_checkpoint(self) -> dict[str, Any]:
        """Stores the current tree's checkpoint as published now (operator role)."""
        return _plain(self._call(self._log.PublishCheckpoint, log_pb2.PublishCheckpointRequest()))

    def checkpoints(
        self, *, min_size: int = 0, max_size: int = 0, since_ns: int = 0, until_ns: int = 0
    ) -> list[dict[str, Any]]:
        """Published checkpoints in the size and time ranges (0: unbounded), oldest first."""
        reply = self._call(
            self._log.GetCheckpoints,
            log_pb2.GetCheckpointsRequest(
                min_size=min_size, max_size=max_size, since_ns=since_ns, until_ns=until_ns
            ),
        )
        return [_plain(c) for c in reply.checkpoints]

    def entries(self, start: int, end: int) -> list[dict[str, Any]]:
        """Entries [start, end) (``index``, ``entry`` bytes, ``leaf_hash``, ``commit_size``),
        paging as needed; fewer if the log ends first. Without inclusion proofs (pages may be
        read in different trees): :meth:`find_entries` and :meth:`table_history` prove."""
        out: list[dict[str, Any]] = []
        while start + len(out) < end:
            reply = self._call(
                self._log.GetEntries,
                log_pb2.GetEntriesRequest(start=start + len(out), end=end, omit_proofs=True),
            )
            if not reply.entries:
                break
            out.extend(_plain(e) for e in reply.entries)
        return out

    def table_history(
        self,
        table_id: str,
        *,
        client: str = "",
        first_seq: int = 0,
        last_seq: int = 0,
        limit: int = 0,
        tree_size: int = 0,
    ) -> dict[str, Any]:
        """``GetTableHistory``: one page of a (client, table) chain (``client`` empty: the
        caller's own; a game server may read its own tables): ``client``, ``table_id``,
        ``entries`` (``index``, ``entry`` bytes, ``leaf_hash``, ``commit_size``,
        ``inclusion_proof``), ``truncated`` (page on with ``first_seq`` = the last seq + 1 and
        this ``tree_size``), ``tree_size`` and ``checkpoint`` (the signed note the proofs are
        against). Nothing here is checked: verify it with ``rng_service.audit.history`` (or
        ``rng-audit table-history``)."""
        request = log_pb2.GetTableHistoryRequest(
            client=client, table_id=table_id, first_seq=first_seq, last_seq=last_seq,
            limit=limit, tree_size=tree_size,
        )  # fmt: skip
        return _plain(self._call(self._log.GetTableHistory, request))

    def find_entries(
        self,
        *,
        client: str = "",
        request_id: str = "",
        table_id: str = "",
        round_id: str = "",
        session_id: str = "",
        since_ns: int = 0,
        until_ns: int = 0,
        limit: int = 0,
        tree_size: int = 0,
    ) -> dict[str, Any]:
        """Dispute lookup: the entries matching every given filter, in log order (a
        ``request_id`` needs its ``client``), as :meth:`table_history`'s dict without
        ``client`` and ``table_id``: ``entries`` with their inclusion proofs, ``truncated`` when
        more match than ``limit`` (0: the service's maximum, 1000), ``tree_size`` (the tree
        searched; 0 asks for the current one) and its signed ``checkpoint``."""
        request = log_pb2.FindEntriesRequest(
            client=client, request_id=request_id, table_id=table_id, round_id=round_id,
            session_id=session_id, since_ns=since_ns, until_ns=until_ns, limit=limit,
            tree_size=tree_size,
        )  # fmt: skip
        return _plain(self._call(self._log.FindEntries, request))

    def inclusion_proof(
        self, *, index: int | None = None, leaf_hash: bytes | None = None, tree_size: int = 0
    ) -> dict[str, Any]:
        """The RFC 6962 audit path of an entry (by ``index`` or ``leaf_hash``) in the tree of
        ``tree_size`` (0: the current tree): ``index``, ``leaf_hash``, ``tree_size``,
        ``proof``, ``root_hash``."""
        request = log_pb2.GetInclusionProofRequest(tree_size=tree_size)
        if leaf_hash is not None:
            request.leaf_hash = leaf_hash
        else:
            request.index = index or 0
        return _plain(self._call(self._log.GetInclusionProof, request))

    def consistency_proof(self, first_size: int, second_size: int) -> dict[str, Any]:
        """The RFC 6962 consistency proof between two tree sizes."""
        return _plain(
            self._call(
                self._log.GetConsistencyProof,
                log_pb2.GetConsistencyProofRequest(first_size=first_size, second_size=second_size),
            )
        )

    def raw_stream(
        self,
        num_bytes: int,
        *,
        request_id: str | None = None,
        table_id: str = "LAB",
        round_id: str | None = None,
        chunk_size: int = 0,
        timeout: float = 600.0,
        on_session: Callable[[RawSession], None] | None = None,
    ) -> Iterator[bytes]:
        """Raw generator output (``LabService.StreamRawOutput``, lab role, certification
        configured): yields the data chunks, exactly ``num_bytes`` bytes in all. The session's
        log entry and receipt go to ``on_session(RawSession)`` before the first chunk. A new
        request id per call (default ``raw-<time in ns>``): a reused one gets ALREADY_EXISTS.
        Errors, also in the middle of the stream, raise :class:`ClientError`."""
        rid = request_id or f"raw-{time.time_ns()}"
        request = lab_pb2.StreamRawOutputRequest(
            context=common_pb2.RequestContext(
                table_id=table_id, round_id=round_id or rid, request_id=rid
            ),
            num_bytes=num_bytes,
            chunk_size=chunk_size,
        )
        received = 0
        call = self._lab.StreamRawOutput(request, timeout=timeout)
        try:
            for message in call:
                if message.HasField("session"):
                    session = RawSession(
                        generator_instance=message.session.generator_instance,
                        generator_epoch=message.session.generator_epoch,
                        num_bytes=message.session.num_bytes,
                        chunk_size=message.session.chunk_size,
                        receipt=_receipt(message.receipt),
                    )
                    if on_session is not None:
                        on_session(session)
                    continue
                if message.offset != received:
                    raise ClientError(
                        "DATA_LOSS", f"raw chunk at offset {message.offset}, expected {received}"
                    )
                received += len(message.data)
                yield message.data
        except grpc.RpcError as e:
            raise _rpc_error(e, tls=self._tls) from None
        finally:
            call.cancel()  # a consumer that stops early ends the session (no-op when done)
        if received != num_bytes:
            raise ClientError(
                "DATA_LOSS", f"the raw stream ended after {received} of {num_bytes} bytes"
            )

    def health(self, service: str = "") -> str:
        reply = self._call(self._health.Check, health_pb2.HealthCheckRequest(service=service))
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))
