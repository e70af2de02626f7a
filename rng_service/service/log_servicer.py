"""gRPC adapters of ``rng.v1.LogService``: reading the log (auditors, dispute lookup).

:class:`LogServicer` is the server side, :class:`LogClient` a small synchronous client that the
``rng-audit`` command uses (it returns plain values, so its callers never touch protobuf types).
Both translate between proto and domain values; nothing more. Proofs come from the
service's :class:`~rng_service.log.tree.MerkleTree` (RFC 6962 sections 2.1.1 and 2.1.2), entries
and published checkpoints from the :class:`~rng_service.storage.base.LogStorage`, signed
checkpoints (C2SP tlog-checkpoint in a C2SP signed note) from callables the composition root
passes in (the appender's). Proto zero values mean "not given"; a value beyond the current tree
is :class:`OutOfRange`, a malformed one :class:`InvalidArgument` naming the field. Storage and
tree reads may block, so they run in a worker thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import grpc
from grpc import aio

from rng_service._proto.rng.v1 import log_pb2, log_pb2_grpc
from rng_service.errors import InvalidArgument, NotFound, OutOfRange, Unavailable
from rng_service.log.merkle import HASH_SIZE
from rng_service.log.note import Checkpoint, parse_note
from rng_service.log.witnessing import cosigned_note
from rng_service.service.auth import Authorizer
from rng_service.service.client import ClientTls, connection_hint
from rng_service.service.errors import RpcObserver, rpc
from rng_service.storage.base import (
    CheckpointRecord,
    CosignatureRecord,
    EntryRecord,
    LogStorage,
)

__all__ = ["MAX_ENTRIES_PER_PAGE", "LogClient", "LogServicer", "PublicKeyInfo", "TreeReader"]

MAX_ENTRIES_PER_PAGE = 1000
"""Most entries one GetEntries or FindEntries call returns."""

#: Largest tree size a filter may name: the stores keep sizes and indices as signed 64-bit
#: integers (SQLite INTEGER, PostgreSQL BIGINT).
MAX_SIZE = 2**63 - 1
_SIZE_ALLOWED = "0 (no bound) to 2^63 - 1"


def _size_bound(value: int, field: str) -> int | None:
    """A tree-size filter (0 = none), checked before any store sees it."""
    if value > MAX_SIZE:
        raise InvalidArgument(field, f"{value} is out of range", allowed=_SIZE_ALLOWED)
    return value or None


def _time_range(since_ns: int, until_ns: int) -> tuple[int | None, int | None]:
    """A publication or entry time range in Unix nanoseconds (0 = unbounded), validated the
    same way for every RPC that takes one: no negative times, ``until_ns >= since_ns``."""
    for field, value in (("since_ns", since_ns), ("until_ns", until_ns)):
        if value < 0:
            raise InvalidArgument(field, f"{value} is negative", allowed=">= 0 (0: unbounded)")
    if since_ns and until_ns and until_ns < since_ns:
        raise InvalidArgument(
            "until_ns", f"{until_ns} is before since_ns {since_ns}", allowed=">= since_ns"
        )
    return since_ns or None, until_ns or None


@dataclass(frozen=True, slots=True)
class PublicKeyInfo:
    key_id: str
    name: str
    public_key: bytes
    verifier_key: str
    active: bool
    cosigning: bool = False


class TreeReader(Protocol):
    """What the servicer reads of :class:`~rng_service.log.tree.MerkleTree`."""

    @property
    def size(self) -> int: ...

    def root(self, size: int | None = None) -> bytes: ...

    def leaf_hash(self, index: int) -> bytes: ...

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]: ...

    def consistency_proof(self, size1: int, size2: int | None = None) -> list[bytes]: ...


def _checkpoint_to_proto(note: bytes, *, published_at_ns: int | None) -> log_pb2.SignedCheckpoint:
    checkpoint = Checkpoint.parse(parse_note(note).text)
    return log_pb2.SignedCheckpoint(
        size=checkpoint.size,
        root_hash=checkpoint.root_hash,
        note=note.decode("utf-8"),
        published=published_at_ns is not None,
        published_at_ns=published_at_ns or 0,
    )


def _entry_to_proto(record: EntryRecord) -> log_pb2.LogEntry:
    return log_pb2.LogEntry(
        index=record.index,
        entry=record.data,
        leaf_hash=record.leaf_hash,
        commit_size=record.commit_size,
    )


class LogServicer(log_pb2_grpc.LogServiceServicer):
    def __init__(
        self,
        *,
        keys: Sequence[PublicKeyInfo],
        storage: LogStorage,
        tree: TreeReader,
        checkpoint_note: Callable[[int], str],
        publish: Callable[[], CheckpointRecord],
        rpc_observer: RpcObserver | None = None,
        authorizer: Authorizer | None = None,
        sync: Callable[[], int] | None = None,
    ) -> None:
        """``checkpoint_note(size)`` signs the checkpoint of the tree at ``size``;
        ``publish()`` stores the current one as published and returns it; ``sync()``, if
        given, catches the tree up with the store (appends of other replicas sharing it) and
        returns its size: every read of the current size goes through it. With an
        ``authorizer`` every call is authorized first (``rpc``): log reads are auditors' only."""
        self._keys = tuple(keys)
        self._storage = storage
        self._tree = tree
        self._checkpoint_note = checkpoint_note
        self._publish = publish
        self._sync = sync
        self.rpc_observer = rpc_observer
        self.authorizer = authorizer

    @rpc("GetPublicKeys")
    async def GetPublicKeys(
        self,
        request: log_pb2.GetPublicKeysRequest,
        context: aio.ServicerContext[log_pb2.GetPublicKeysRequest, log_pb2.GetPublicKeysResponse],
    ) -> log_pb2.GetPublicKeysResponse:
        return log_pb2.GetPublicKeysResponse(
            keys=[
                log_pb2.PublicKey(
                    key_id=k.key_id,
                    name=k.name,
                    algorithm="ed25519",
                    public_key=k.public_key,
                    verifier_key=k.verifier_key,
                    active=k.active,
                    cosigning=k.cosigning,
                )
                for k in self._keys
            ]
        )

    # -- checkpoints ---------------------------------------------------------------------

    def _current_size(self) -> int:
        return self._sync() if self._sync is not None else self._tree.size

    def _cosigned(self, note: bytes, size: int) -> bytes:
        """``note`` with the witness cosignatures stored for its checkpoint."""
        return cosigned_note(note, self._storage.cosignatures(min_size=size, max_size=size))

    def _latest(self) -> log_pb2.SignedCheckpoint:
        size = self._current_size()
        note = self._cosigned(self._checkpoint_note(size).encode("utf-8"), size)
        stored = self._storage.checkpoints(min_size=size, max_size=size)
        return _checkpoint_to_proto(
            note, published_at_ns=stored[0].timestamp_ns if stored else None
        )

    def _latest_witnessed(self) -> log_pb2.SignedCheckpoint:
        """The largest size with stored cosignatures whose checkpoint this log signs today:
        the signed note of the tree at that size, with those cosignatures."""
        current = self._current_size()
        for record in sorted(
            self._storage.latest_cosignatures(), key=lambda r: r.size, reverse=True
        ):
            if record.size > current:
                continue
            note = self._cosigned(self._checkpoint_note(record.size).encode("utf-8"), record.size)
            if record.line in note:  # of this tree's checkpoint (not of another body)
                stored = self._storage.checkpoints(min_size=record.size, max_size=record.size)
                return _checkpoint_to_proto(
                    note, published_at_ns=stored[0].timestamp_ns if stored else None
                )
        raise NotFound("no checkpoint of this log has witness cosignatures yet")

    @rpc("GetLatestCheckpoint")
    async def GetLatestCheckpoint(
        self,
        request: log_pb2.GetLatestCheckpointRequest,
        context: aio.ServicerContext[log_pb2.GetLatestCheckpointRequest, log_pb2.SignedCheckpoint],
    ) -> log_pb2.SignedCheckpoint:
        if request.witnessed:
            return await asyncio.to_thread(self._latest_witnessed)
        return await asyncio.to_thread(self._latest)

    @rpc("PublishCheckpoint")
    async def PublishCheckpoint(
        self,
        request: log_pb2.PublishCheckpointRequest,
        context: aio.ServicerContext[log_pb2.PublishCheckpointRequest, log_pb2.SignedCheckpoint],
    ) -> log_pb2.SignedCheckpoint:
        record = await asyncio.to_thread(self._publish)
        note = await asyncio.to_thread(self._cosigned, record.note, record.size)
        return _checkpoint_to_proto(note, published_at_ns=record.timestamp_ns)

    @rpc("GetCheckpoints")
    async def GetCheckpoints(
        self,
        request: log_pb2.GetCheckpointsRequest,
        context: aio.ServicerContext[log_pb2.GetCheckpointsRequest, log_pb2.GetCheckpointsResponse],
    ) -> log_pb2.GetCheckpointsResponse:
        min_size = _size_bound(request.min_size, "min_size")
        max_size = _size_bound(request.max_size, "max_size")
        if min_size and max_size and max_size < min_size:
            raise InvalidArgument(
                "max_size", f"{max_size} is below min_size {min_size}", allowed=">= min_size"
            )
        since_ns, until_ns = _time_range(request.since_ns, request.until_ns)
        records, cosignatures = await asyncio.to_thread(
            self._checkpoints_with_cosignatures, min_size, max_size, since_ns, until_ns
        )
        return log_pb2.GetCheckpointsResponse(
            checkpoints=[
                _checkpoint_to_proto(
                    cosigned_note(r.note, cosignatures.get(r.size, [])),
                    published_at_ns=r.timestamp_ns,
                )
                for r in records
            ]
        )

    def _checkpoints_with_cosignatures(
        self,
        min_size: int | None,
        max_size: int | None,
        since_ns: int | None,
        until_ns: int | None,
    ) -> tuple[list[CheckpointRecord], dict[int, list[CosignatureRecord]]]:
        records = self._storage.checkpoints(
            min_size=min_size, max_size=max_size, since_ns=since_ns, until_ns=until_ns
        )
        by_size: dict[int, list[CosignatureRecord]] = {}
        if records:
            for c in self._storage.cosignatures(min_size=records[0].size,
                                                max_size=records[-1].size):  # fmt: skip
                by_size.setdefault(c.size, []).append(c)
        return records, by_size

    # -- proofs --------------------------------------------------------------------------

    def _size(self, requested: int, field: str) -> int:
        current = self._current_size()
        if requested > current:
            raise OutOfRange(f"{field} {requested} is beyond the current tree size {current}")
        return requested or current

    def _inclusion(
        self, request: log_pb2.GetInclusionProofRequest
    ) -> log_pb2.GetInclusionProofResponse:
        size = self._size(request.tree_size, "tree_size")
        which = request.WhichOneof("entry")
        if which == "index":
            index = request.index
        elif which == "leaf_hash":
            if len(request.leaf_hash) != HASH_SIZE:
                raise InvalidArgument(
                    "leaf_hash", f"is {len(request.leaf_hash)} bytes", allowed="32 bytes"
                )
            record = self._storage.entry_by_leaf_hash(request.leaf_hash)
            if record is None:
                raise NotFound(f"leaf_hash {request.leaf_hash.hex()} is not in the log")
            index = record.index
        else:
            raise InvalidArgument("entry", "give index or leaf_hash")
        if index >= size:
            raise OutOfRange(f"index {index} is not in the tree of size {size}")
        return log_pb2.GetInclusionProofResponse(
            index=index,
            leaf_hash=self._tree.leaf_hash(index),
            tree_size=size,
            proof=self._tree.inclusion_proof(index, size),
            root_hash=self._tree.root(size),
        )

    @rpc("GetInclusionProof")
    async def GetInclusionProof(
        self,
        request: log_pb2.GetInclusionProofRequest,
        context: aio.ServicerContext[
            log_pb2.GetInclusionProofRequest, log_pb2.GetInclusionProofResponse
        ],
    ) -> log_pb2.GetInclusionProofResponse:
        return await asyncio.to_thread(self._inclusion, request)

    def _consistency(
        self, request: log_pb2.GetConsistencyProofRequest
    ) -> log_pb2.GetConsistencyProofResponse:
        first = request.first_size
        if request.second_size and request.second_size < first:
            raise InvalidArgument(
                "second_size", f"{request.second_size} is smaller than first_size {first}"
            )
        second = self._size(request.second_size, "second_size")
        if first > second:
            raise OutOfRange(f"first_size {first} is beyond the current tree size {second}")
        return log_pb2.GetConsistencyProofResponse(
            first_size=first,
            second_size=second,
            proof=self._tree.consistency_proof(first, second),
        )

    @rpc("GetConsistencyProof")
    async def GetConsistencyProof(
        self,
        request: log_pb2.GetConsistencyProofRequest,
        context: aio.ServicerContext[
            log_pb2.GetConsistencyProofRequest, log_pb2.GetConsistencyProofResponse
        ],
    ) -> log_pb2.GetConsistencyProofResponse:
        return await asyncio.to_thread(self._consistency, request)

    # -- entries -------------------------------------------------------------------------

    def _entries(self, request: log_pb2.GetEntriesRequest) -> log_pb2.GetEntriesResponse:
        size = self._current_size()
        start = request.start
        if request.end and request.end <= start:
            raise InvalidArgument("end", f"{request.end} is not greater than start {start}")
        if start >= size:
            raise OutOfRange(f"start {start} is beyond the last entry (tree size {size})")
        end = min(request.end or start + MAX_ENTRIES_PER_PAGE, start + MAX_ENTRIES_PER_PAGE, size)
        records = self._storage.entries(start, end)
        return log_pb2.GetEntriesResponse(
            entries=[_entry_to_proto(r) for r in records], tree_size=size
        )

    @rpc("GetEntries")
    async def GetEntries(
        self,
        request: log_pb2.GetEntriesRequest,
        context: aio.ServicerContext[log_pb2.GetEntriesRequest, log_pb2.GetEntriesResponse],
    ) -> log_pb2.GetEntriesResponse:
        return await asyncio.to_thread(self._entries, request)

    @rpc("FindEntries")
    async def FindEntries(
        self,
        request: log_pb2.FindEntriesRequest,
        context: aio.ServicerContext[log_pb2.FindEntriesRequest, log_pb2.FindEntriesResponse],
    ) -> log_pb2.FindEntriesResponse:
        if not (
            request.table_id
            or request.round_id
            or request.session_id
            or request.since_ns
            or request.until_ns
        ):
            raise InvalidArgument(
                "filters",
                "give at least one of table_id, round_id, session_id, since_ns, until_ns",
            )
        if request.limit > MAX_ENTRIES_PER_PAGE:
            raise InvalidArgument(
                "limit", f"{request.limit} is too large", allowed=f"1 to {MAX_ENTRIES_PER_PAGE}"
            )
        since_ns, until_ns = _time_range(request.since_ns, request.until_ns)
        limit = request.limit or MAX_ENTRIES_PER_PAGE
        records = await asyncio.to_thread(
            self._storage.find_entries,
            table_id=request.table_id or None,
            round_id=request.round_id or None,
            session_id=request.session_id or None,
            since_ns=since_ns,
            until_ns=until_ns,
            limit=limit + 1,
        )
        return log_pb2.FindEntriesResponse(
            entries=[_entry_to_proto(r) for r in records[:limit]],
            truncated=len(records) > limit,
        )


class LogClient:
    """A synchronous LogService client: mTLS with ``tls`` (an auditor's certificate; log reads
    are auditors' only), else plaintext (a development service on loopback). Nothing it returns
    needs trusting, the caller verifies it. gRPC errors become
    :class:`~rng_service.errors.Unavailable` with the status code and details."""

    def __init__(self, target: str, *, timeout: float = 30.0, tls: ClientTls | None = None) -> None:
        self._channel = (
            grpc.insecure_channel(target)
            if tls is None
            else grpc.secure_channel(target, tls.credentials())
        )
        self._stub = log_pb2_grpc.LogServiceStub(self._channel)
        self._target = target
        self._timeout = timeout
        self._tls = tls is not None

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> LogClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, request: object) -> Any:
        try:
            return getattr(self._stub, method)(request, timeout=self._timeout)
        except grpc.RpcError as e:
            code, details = e.code().name, e.details() or ""
            hint = connection_hint(code, details, tls=self._tls)
            where = f"{self._target}: {method}: {code}: {details}"
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
        """Entries [start, end) as (index, leaf hash, entry bytes), paging as needed."""
        out: list[tuple[int, bytes, bytes]] = []
        while start + len(out) < end:
            reply = self._call(
                "GetEntries", log_pb2.GetEntriesRequest(start=start + len(out), end=end)
            )
            if not reply.entries:
                break
            out.extend((e.index, e.leaf_hash, e.entry) for e in reply.entries)
        return out

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
