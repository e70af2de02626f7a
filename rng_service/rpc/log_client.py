"""The synchronous ``rng.v1.LogService`` client that ``rng-audit`` uses (:class:`LogClient`).

It returns plain values (:class:`ProvenPage`, :class:`ProvenEntry`, and a table head's map proof
as :class:`~rng_service.rpc.table_maps.WireMapProof`), so that its callers never touch protobuf
types; nothing it returns needs trusting: the caller verifies it (``rng_service.audit``).
Every call names the log it reads (``origin``: the ``rng-origin`` metadata,
:mod:`rng_service.rpc.origin`, docs/security.md "Logs"), or none when the caller does not know
the origin (then the log served at the target answers, as before several logs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc

from rng_service._proto.rng.v1 import log_pb2, log_pb2_grpc
from rng_service.errors import IntegrityError, Unavailable
from rng_service.rpc.client import ClientTls, connection_hint
from rng_service.rpc.origin import ORIGIN_METADATA, open_channels
from rng_service.rpc.table_maps import WireMapProof, proof_from_proto

__all__ = ["LOG_REFUSAL", "LogClient", "ProvenEntry", "ProvenPage", "refusal_hint"]


#: The words of the service's refusal of a log (rng_service.security.policy.Policy.check_log).
LOG_REFUSAL = "the requested log is not available"


def refusal_hint(origin: str, origin_from: str = "") -> str:
    """What a PERMISSION_DENIED of a call naming the log ``origin`` means (docs/security.md,
    "Logs": a log not served there and a log the caller is not bound to are refused in the
    same words, so it cannot say which), and, when ``origin`` is the keys' name rather than
    ``--origin``, that a log whose key is named otherwise needs ``--origin``."""
    hint = (
        f"either no log {origin!r} is served there, or this client's certificate is not bound "
        f'to it (its [[clients]] logs; docs/security.md, "Logs")'
    )
    if origin_from and origin_from != "--origin":
        hint += (
            f"; the call named the log ({ORIGIN_METADATA}) after {origin_from}: if the log's "
            "key is not named by its origin, pass --origin"
        )
    return hint


@dataclass(frozen=True, slots=True)
class ProvenEntry:
    """An entry as a log read returns it: index, canonical bytes, leaf hash and its inclusion
    proof in the response's tree (empty when proofs were omitted)."""

    index: int
    data: bytes
    leaf_hash: bytes
    proof: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class ProvenPage:
    """Entries with proofs against one tree: its size and signed checkpoint (unverified: the
    caller verifies the note, then each proof)."""

    entries: tuple[ProvenEntry, ...]
    tree_size: int
    checkpoint: str
    truncated: bool = False
    client: str = ""
    map_proof: WireMapProof | None = None
    """The map proof of the asked chain's head (unverified), if the service gave one."""


def _proven_entries(entries: Any) -> tuple[ProvenEntry, ...]:
    return tuple(
        ProvenEntry(e.index, bytes(e.entry), bytes(e.leaf_hash), tuple(e.inclusion_proof))
        for e in entries
    )


class LogClient:
    """A synchronous LogService client: mTLS with ``tls`` (an auditor's certificate; log reads
    are auditors' only), else plaintext (a development service on loopback). Nothing it returns
    needs trusting, the caller verifies it. DATA_LOSS (the service found its store's entries
    failing their checks) becomes :class:`~rng_service.errors.IntegrityError`, other gRPC errors
    :class:`~rng_service.errors.Unavailable`, with the status code and details; a refusal
    (PERMISSION_DENIED) of a call naming a log says which log it named and what that refusal
    means (:func:`refusal_hint`).

    ``origin``: the log every call names (``rng-origin``); None names none. ``origin_from``
    says where the caller took it (``--origin``, the keys' name), for the refusal's hint."""

    def __init__(
        self,
        target: str,
        *,
        timeout: float = 30.0,
        tls: ClientTls | None = None,
        origin: str | None = None,
        origin_from: str = "",
    ) -> None:
        self._raw_channel, self._channel = open_channels(
            target, None if tls is None else tls.credentials(), origin
        )
        self._stub = log_pb2_grpc.LogServiceStub(self._channel)
        self._target = target
        self._timeout = timeout
        self._tls = tls is not None
        self._origin = origin or None
        self._origin_from = origin_from

    def close(self) -> None:
        self._raw_channel.close()

    def __enter__(self) -> LogClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, request: object) -> Any:
        try:
            return getattr(self._stub, method)(request, timeout=self._timeout)
        except grpc.RpcError as e:
            code, details = e.code().name, e.details() or ""
            where = f"{self._target}: {method}: {code}: {details}"
            if e.code() == grpc.StatusCode.DATA_LOSS:
                raise IntegrityError(where) from None
            if e.code() == grpc.StatusCode.PERMISSION_DENIED and self._origin is not None:
                about_log = LOG_REFUSAL in details
                raise Unavailable(
                    f"{self._target} refused the call naming log {self._origin!r} ({method}: "
                    f"{code}: {details})"
                    + (": " + refusal_hint(self._origin, self._origin_from) if about_log else "")
                ) from None
            hint = connection_hint(code, details, tls=self._tls)
            raise Unavailable(where + (f" (hint: {hint})" if hint else "")) from None

    def latest_checkpoint(self, *, witnessed: bool = False) -> str:
        """The signed note of the log's current tree (with any witness cosignatures), or with
        ``witnessed`` of the newest checkpoint that witnesses cosigned."""
        reply = self._call(
            "GetLatestCheckpoint", log_pb2.GetLatestCheckpointRequest(witnessed=witnessed)
        )
        return str(reply.note)

    def published_checkpoints(self) -> list[tuple[str, int]]:
        """Every published checkpoint as (signed note, published_at_ns), by size."""
        reply = self._call("GetCheckpoints", log_pb2.GetCheckpointsRequest())
        return [(c.note, c.published_at_ns) for c in reply.checkpoints]

    def entries(self, start: int, end: int) -> list[tuple[int, bytes, bytes]]:
        """Entries [start, end) as (index, leaf hash, entry bytes), paging as needed, without
        proofs (an export recomputes the tree)."""
        out: list[tuple[int, bytes, bytes]] = []
        while start + len(out) < end:
            reply = self._call(
                "GetEntries",
                log_pb2.GetEntriesRequest(start=start + len(out), end=end, omit_proofs=True),
            )
            if not reply.entries:
                break
            out.extend((e.index, e.leaf_hash, e.entry) for e in reply.entries)
        return out

    def find_entries(
        self,
        *,
        client: str = "",
        table_id: str = "",
        round_id: str = "",
        request_id: str = "",
        session_id: str = "",
        tree_size: int = 0,
        limit: int = 0,
    ) -> ProvenPage:
        """``FindEntries``: the matching entries with proofs in one tree (0: the current)."""
        reply = self._call(
            "FindEntries",
            log_pb2.FindEntriesRequest(
                client=client, table_id=table_id, round_id=round_id, request_id=request_id,
                session_id=session_id, tree_size=tree_size, limit=limit,
            ),
        )  # fmt: skip
        return ProvenPage(
            _proven_entries(reply.entries), reply.tree_size, reply.checkpoint, reply.truncated,
            client=client,
            map_proof=(
                proof_from_proto(reply.map_proof, client, table_id)
                if client and table_id and reply.HasField("map_proof") else None
            ),
        )  # fmt: skip

    def table_history(
        self,
        table_id: str,
        *,
        client: str = "",
        first_seq: int = 1,
        last_seq: int = 0,
        tree_size: int = 0,
    ) -> ProvenPage:
        """``GetTableHistory`` from ``first_seq`` to ``last_seq`` (0: the chain's end), paging
        as needed, every page in the tree of the first (``tree_size``, 0: the current)."""
        entries: list[ProvenEntry] = []
        size, note, whose = tree_size, "", client
        seq = first_seq
        map_proof: WireMapProof | None = None
        while True:
            reply = self._call(
                "GetTableHistory",
                log_pb2.GetTableHistoryRequest(
                    client=client, table_id=table_id, first_seq=seq, last_seq=last_seq,
                    tree_size=size,
                ),
            )  # fmt: skip
            size, note, whose = reply.tree_size, reply.checkpoint, reply.client
            entries.extend(_proven_entries(reply.entries))
            map_proof = (
                proof_from_proto(reply.map_proof, whose, table_id)
                if reply.HasField("map_proof") else None
            )  # fmt: skip
            if not reply.truncated or not reply.entries:
                break
            seq += len(reply.entries)
        return ProvenPage(tuple(entries), size, note, client=whose, map_proof=map_proof)

    def consistency_proof(self, first: int, second: int) -> list[bytes]:
        if first == second:
            return []
        reply = self._call(
            "GetConsistencyProof",
            log_pb2.GetConsistencyProofRequest(first_size=first, second_size=second),
        )
        return list(reply.proof)

    def inclusion_proof(self, index: int, size: int) -> list[bytes]:
        reply = self._call(
            "GetInclusionProof", log_pb2.GetInclusionProofRequest(index=index, tree_size=size)
        )
        return list(reply.proof)
