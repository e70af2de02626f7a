"""gRPC adapters of ``rng.v1.LogService``: reading the log (auditors, dispute lookup).

:class:`LogServicer` is the server side, :class:`LogClient` a small synchronous client that the
``rng-audit`` command uses (in :mod:`rng_service.rpc.log_client`, re-exported here).
Both translate between proto and domain values; nothing more. Proofs come from the
service's :class:`~rng_service.writer.tree.MerkleTree` (RFC 6962 sections 2.1.1 and 2.1.2), entries
and published checkpoints from the :class:`~rng_service.storage.base.LogStorage`, signed
checkpoints (C2SP tlog-checkpoint in a C2SP signed note) from callables the composition root
passes in (the appender's). Proto zero values mean "not given"; a value beyond the current tree
is :class:`OutOfRange`, a malformed one :class:`InvalidArgument` naming the field. Storage and
tree reads may block, so they run in a worker thread, never on the event loop.

Every entry read from the store is checked before it is returned
(:mod:`rng_service.writer.columns`): its leaf hash and its lookup columns against its signed
bytes, its leaf hash against the tree's level-0 node of its index (the leaf the signed
checkpoints commit to), an index range for deleted rows, a table's chain for breaks. A
failure is never a silent skip: the call fails with DATA_LOSS naming the entry, the service logs a
``log_integrity_error`` line, and ``IntegrityObserver.integrity_error`` counts it (the metric
``rng_log_integrity_errors_total{method, check}`` and the alert ``RngLogIntegrityError``). Every
returned entry carries its inclusion proof in the one tree size the response states, with the
signed checkpoint of that size.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from grpc import aio

from rng_service._proto.rng.v1 import log_pb2, log_pb2_grpc
from rng_service.errors import InvalidArgument, NotFound, OutOfRange
from rng_service.log.merkle import HASH_SIZE
from rng_service.log.note import Checkpoint, parse_note
from rng_service.rpc.auth import Authorizer, caller_id
from rng_service.rpc.errors import RpcObserver, rpc
from rng_service.rpc.log_client import LogClient, ProvenEntry, ProvenPage
from rng_service.rpc.table_maps import (
    MAP_CHECK,
    CommittedMap,
    CommittedMaps,
    proof_to_proto,
    walk_chain,
)
from rng_service.storage.base import (
    CheckpointRecord,
    CosignatureRecord,
    EntryRecord,
    LogStorage,
)
from rng_service.writer.columns import (
    LookupIntegrityError,
    SignedFields,
    check_chain,
    check_nodes,
    check_range,
    check_record,
)
from rng_service.writer.publisher import cosigned_note

__all__ = [
    "MAX_ENTRIES_PER_PAGE",
    "IntegrityObserver",
    "LogClient",
    "LogServicer",
    "ProvenEntry",
    "ProvenPage",
    "PublicKeyInfo",
    "TreeReader",
]

# The logger keeps its name from before the package's rename (the JSON log's "logger" field).
_log = logging.getLogger("rng_service.service.log_servicer")
T = TypeVar("T")

MAX_ENTRIES_PER_PAGE = 1000
"""Most entries one GetEntries, FindEntries or GetTableHistory call returns."""

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
    """What the servicer reads of :class:`~rng_service.writer.tree.MerkleTree`."""

    @property
    def size(self) -> int: ...

    def root(self, size: int | None = None) -> bytes: ...

    def leaf_hash(self, index: int) -> bytes: ...

    def leaf_hashes(self, indices: Sequence[int]) -> list[bytes]: ...

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]: ...

    def inclusion_proofs(
        self, indices: Sequence[int], size: int | None = None
    ) -> list[list[bytes]]: ...

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


class IntegrityObserver(Protocol):
    """Counts stored data that failed a check on the way out (``rng_service.metrics``)."""

    def integrity_error(self, method: str, check: str) -> None: ...


def _entries_to_proto(
    records: Sequence[EntryRecord], proofs: Sequence[Sequence[bytes]] | None
) -> list[log_pb2.LogEntry]:
    return [
        log_pb2.LogEntry(
            index=record.index,
            entry=record.data,
            leaf_hash=record.leaf_hash,
            commit_size=record.commit_size,
            inclusion_proof=() if proofs is None else proofs[i],
        )
        for i, record in enumerate(records)
    ]


def _limit(value: int) -> int:
    if value > MAX_ENTRIES_PER_PAGE:
        raise InvalidArgument(
            "limit", f"{value} is too large", allowed=f"1 to {MAX_ENTRIES_PER_PAGE}"
        )
    return value or MAX_ENTRIES_PER_PAGE


class LogServicer(log_pb2_grpc.LogServiceServicer):
    CHECKED_METHODS = ("GetEntries", "FindEntries", "GetTableHistory", "GetInclusionProof")
    """The methods whose stored entries are checked on the way out (the ``method`` label of
    ``rng_log_integrity_errors_total``; the wiring exports each at 0 from the start)."""

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
        integrity_observer: IntegrityObserver | None = None,
        client_id: str = "default",
        maps: CommittedMaps | None = None,
    ) -> None:
        """``checkpoint_note(size)`` signs the checkpoint of the tree at ``size``;
        ``publish()`` stores the current one as published and returns it; ``sync()``, if
        given, catches the tree up with the store (appends of other replicas sharing it) and
        returns its size: every read of the current size goes through it. With an
        ``authorizer`` every call is authorized first (``rpc``): log reads are auditors' only
        (and a game server's own table histories). ``client_id``: the caller outside an
        authorized call (as the outcome servicer's). ``integrity_observer`` counts entries
        that fail their checks on the way out. ``maps``: the committed table maps the
        proofs of table heads come from (default: rebuilt from the store's entries)."""
        self._keys = tuple(keys)
        self._storage = storage
        self._tree = tree
        self._checkpoint_note = checkpoint_note
        self._publish = publish
        self._sync = sync
        self._integrity_observer = integrity_observer
        self._client_id = client_id
        self._maps = maps if maps is not None else CommittedMaps(storage, tree)
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
        found: EntryRecord | None = None
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
            index, found = record.index, record
        else:
            raise InvalidArgument("entry", "give index or leaf_hash")
        if index >= size:
            raise OutOfRange(f"index {index} is not in the tree of size {size}")
        if found is not None:
            # The row was found by its leaf-hash column: the index it gives is only the
            # answer if that row's bytes hash to it and the tree's leaf there is that hash.
            self._checked("GetInclusionProof", functools.partial(self._found_by_hash, found))
        return log_pb2.GetInclusionProofResponse(
            index=index,
            leaf_hash=self._tree.leaf_hash(index),
            tree_size=size,
            proof=self._tree.inclusion_proof(index, size),
            root_hash=self._tree.root(size),
        )

    def _found_by_hash(self, record: EntryRecord) -> None:
        check_record(record)
        check_nodes([record], [self._tree.leaf_hash(record.index)])

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

    def _checked(self, method: str, read: Callable[[], T]) -> T:
        """``read()`` (a worker thread's reads of stored entries and their checks); a failed
        check is logged and counted before it propagates (DATA_LOSS)."""
        if method not in self.CHECKED_METHODS:
            raise ValueError(f"{method} is not one of CHECKED_METHODS")
        try:
            return read()
        except LookupIntegrityError as e:
            self._integrity_error(method, e)
            raise

    def _integrity_error(self, method: str, e: LookupIntegrityError) -> None:
        """Logs and counts a failed check of stored data."""
        _log.error(
            {
                "event": "log_integrity_error",
                "method": method,
                "check": e.check,
                "index": e.index,
                "message": str(e),
            }
        )
        if self._integrity_observer is not None:
            self._integrity_observer.integrity_error(method, e.check)

    def _proven(
        self, records: Sequence[EntryRecord], size: int, *, proofs: bool = True
    ) -> tuple[list[log_pb2.LogEntry], str]:
        """The records (each already through ``check_record``) after checking them against
        the tree's leaf nodes (``check_nodes``: the bytes served are the bytes the checkpoints
        commit to), with their inclusion proofs in the tree of ``size``, and its note."""
        check_nodes(records, self._tree.leaf_hashes([r.index for r in records]))
        paths = self._tree.inclusion_proofs([r.index for r in records], size) if proofs else None
        return _entries_to_proto(records, paths), self._checkpoint_note(size)

    def _entries(self, request: log_pb2.GetEntriesRequest) -> log_pb2.GetEntriesResponse:
        size = self._size(request.tree_size, "tree_size")
        start = request.start
        if request.end and request.end <= start:
            raise InvalidArgument("end", f"{request.end} is not greater than start {start}")
        if start >= size:
            raise OutOfRange(f"start {start} is beyond the last entry (tree size {size})")
        end = min(request.end or start + MAX_ENTRIES_PER_PAGE, start + MAX_ENTRIES_PER_PAGE, size)
        records = self._storage.entries(start, end)
        check_range(records, start, end)
        for record in records:
            check_record(record)
        entries, note = self._proven(records, size, proofs=not request.omit_proofs)
        return log_pb2.GetEntriesResponse(entries=entries, tree_size=size, checkpoint=note)

    @rpc("GetEntries")
    async def GetEntries(
        self,
        request: log_pb2.GetEntriesRequest,
        context: aio.ServicerContext[log_pb2.GetEntriesRequest, log_pb2.GetEntriesResponse],
    ) -> log_pb2.GetEntriesResponse:
        return await asyncio.to_thread(self._checked, "GetEntries", lambda: self._entries(request))

    def _find(self, request: log_pb2.FindEntriesRequest) -> log_pb2.FindEntriesResponse:
        if not (
            request.client
            or request.request_id
            or request.table_id
            or request.round_id
            or request.session_id
            or request.since_ns
            or request.until_ns
        ):
            raise InvalidArgument(
                "filters",
                "give at least one of client, request_id, table_id, round_id, session_id, "
                "since_ns, until_ns",
            )
        if request.request_id and not request.client:
            raise InvalidArgument(
                "request_id", "needs client too: request ids are each client's own"
            )
        limit = _limit(request.limit)
        since_ns, until_ns = _time_range(request.since_ns, request.until_ns)
        size = self._size(request.tree_size, "tree_size")
        filters = {
            "client_id": request.client or None,
            "request_id": request.request_id or None,
            "table_id": request.table_id or None,
            "round_id": request.round_id or None,
            "session_id": request.session_id or None,
        }
        found = self._storage.find_entries(
            **filters, since_ns=since_ns, until_ns=until_ns, limit=limit + 1
        )
        records = [r for r in found if r.index < size]
        for record in records:
            signed = check_record(record)
            _check_filters(record.index, signed, filters)
        entries, note = self._proven(records[:limit], size)
        map_proof = None
        if request.client and request.table_id:
            committed = self._maps.at(size)
            if committed is not None:
                map_proof = self._map_proof(committed, request.client, request.table_id)
        return log_pb2.FindEntriesResponse(
            entries=entries, truncated=len(records) > limit, tree_size=size, checkpoint=note,
            map_proof=map_proof,
        )  # fmt: skip

    @rpc("FindEntries")
    async def FindEntries(
        self,
        request: log_pb2.FindEntriesRequest,
        context: aio.ServicerContext[log_pb2.FindEntriesRequest, log_pb2.FindEntriesResponse],
    ) -> log_pb2.FindEntriesResponse:
        return await asyncio.to_thread(self._checked, "FindEntries", lambda: self._find(request))

    def _history(
        self, request: log_pb2.GetTableHistoryRequest, client: str
    ) -> log_pb2.GetTableHistoryResponse:
        if not request.table_id:
            raise InvalidArgument("table_id", "is empty: name the table")
        first = request.first_seq or 1
        if request.last_seq and request.last_seq < first:
            raise InvalidArgument(
                "last_seq", f"{request.last_seq} is below first_seq {first}", allowed=">= first_seq"
            )
        for field, value in (("first_seq", first), ("last_seq", request.last_seq)):
            if value > MAX_SIZE:
                raise InvalidArgument(field, f"{value} is out of range", allowed=_SIZE_ALLOWED)
        limit = _limit(request.limit)
        size = self._size(request.tree_size, "tree_size")
        committed = self._maps.at(size)
        try:
            records = self._history_rows(request, client, first, limit, size, committed)
        except LookupIntegrityError as e:
            if committed is None or committed.table_map.head(client, request.table_id) is None:
                raise
            # The store's index of the chain is damaged, but the committed map proves the
            # head: the chain walked back from it by index and the signed table_prev is the
            # signed truth. The damage is logged and counted all the same.
            self._integrity_error("GetTableHistory", e)
            records = walk_chain(
                self._storage, committed, client, request.table_id, first_seq=first,
                last_seq=request.last_seq or None, limit=limit,
            )  # fmt: skip
        entries, note = self._proven(records[:limit], size)
        return log_pb2.GetTableHistoryResponse(
            client=client,
            table_id=request.table_id,
            entries=entries,
            truncated=len(records) > limit,
            tree_size=size,
            checkpoint=note,
            map_proof=(
                None if committed is None else self._map_proof(committed, client, request.table_id)
            ),
        )

    def _history_rows(
        self,
        request: log_pb2.GetTableHistoryRequest,
        client: str,
        first: int,
        limit: int,
        size: int,
        committed: CommittedMap | None,
    ) -> list[EntryRecord]:
        """The chain's rows by the store's index (its columns), each checked against its
        signed bytes, the rows against one another and against the committed head; at most
        ``limit + 1``."""
        found = self._storage.table_history(
            client, request.table_id, first_seq=first, last_seq=request.last_seq or None,
            limit=limit + 1,
        )  # fmt: skip
        # The chain in the tree of `size`: it ends at the first entry appended after it.
        records: list[EntryRecord] = []
        for record in found:
            if record.index >= size:
                break
            records.append(record)
        rows = [(r, check_record(r)) for r in records]
        check_chain(rows, client_id=client, table_id=request.table_id, first_seq=first)
        last = records[-1].table_seq if records else first - 1
        if last is None:  # not reached: check_chain proved every record has a table_seq
            raise RuntimeError("a chain record without table_seq")
        reaches_end = len(records) <= limit and (not request.last_seq or last < request.last_seq)
        if committed is not None:
            _check_committed_end(committed, client, request.table_id, records, reaches_end, first)
        elif reaches_end:
            self._check_chain_end(client, request.table_id, last, size)
        return records

    def _map_proof(
        self, committed: CommittedMap, client: str, table_id: str
    ) -> log_pb2.TableMapProof:
        return proof_to_proto(committed, client, table_id)

    def _check_chain_end(self, client: str, table_id: str, last: int, size: int) -> None:
        """The answer ends at seq ``last``: the chain's next row in the store must be seq
        ``last + 1`` appended after the tree of ``size``, or none. A later seq with no
        ``last + 1`` before it is a row deleted, or hidden by its changed lookup columns, that
        would otherwise cut a history short without a word."""
        after = self._storage.table_history(client, table_id, first_seq=last + 1, limit=1)
        if not after:
            return
        record = after[0]
        signed = check_record(record)
        if signed.table_seq == last + 1 and record.index >= size:
            return
        raise LookupIntegrityError(
            f"the chain of table {table_id!r} of client {client!r} is broken in the store: "
            f"it has no seq {last + 1} in the tree of {size} entries, but seq "
            f"{signed.table_seq} (entry {record.index}, whose signed predecessor is entry "
            f"{signed.table_prev}) follows: an entry of the chain was deleted, or its lookup "
            "columns were changed",
            check="chain",
            index=record.index if signed.table_prev is None else signed.table_prev,
        )

    @rpc("GetTableHistory")
    async def GetTableHistory(
        self,
        request: log_pb2.GetTableHistoryRequest,
        context: aio.ServicerContext[
            log_pb2.GetTableHistoryRequest, log_pb2.GetTableHistoryResponse
        ],
    ) -> log_pb2.GetTableHistoryResponse:
        # An empty client is the caller's own chain (the authorizer checked the scope).
        client = request.client or caller_id(self._client_id)
        return await asyncio.to_thread(
            self._checked, "GetTableHistory", lambda: self._history(request, client)
        )


def _check_committed_end(
    committed: CommittedMap,
    client: str,
    table_id: str,
    records: Sequence[EntryRecord],
    reaches_end: bool,
    first_seq: int,
) -> None:
    """The rows read by the chain's columns against its committed head: none when the map
    has no head for it; the head itself last when the answer reaches the chain's end. A row
    hidden (or moved in) by edited columns fails here, before anything is served."""
    head = committed.table_map.head(client, table_id)
    name = f"table {table_id!r} of client {client!r}"
    if head is None:
        if records:
            raise LookupIntegrityError(
                f"the store's rows give entry {records[0].index} as of the {name}, but the "
                f"map committed in entry {committed.size - 1} has no head for it: the log "
                "signed a map that leaves this chain out",
                check=MAP_CHECK,
                index=records[0].index,
            )
        return
    last = records[-1] if records else None
    if last is None and head.seq < first_seq:
        return  # the chain ends before the range asked: nothing to give
    if reaches_end and (last is None or last.index != head.index):
        if last is not None and last.table_seq is not None and last.table_seq >= head.seq:
            where = "ends at"
        else:
            where = "stops short at"
        shown = "no row" if last is None else f"entry {last.index} (seq {last.table_seq})"
        raise LookupIntegrityError(
            f"the store's rows of the {name} {where} {shown}, but its committed head in the "
            f"tree of {committed.size} entries is entry {head.index} (seq {head.seq}): an "
            "entry of the chain was deleted, or hidden by its changed lookup columns",
            check="chain",
            index=head.index,
        )


def _check_filters(index: int, signed: SignedFields, filters: dict[str, str | None]) -> None:
    """A found entry's signed fields against the filters it was selected by (its columns
    already equal its signed fields: this holds a driver to its query)."""
    values = {
        "client_id": signed.client,
        "request_id": signed.request_id,
        "table_id": signed.table_id,
        "round_id": signed.round_id,
        "session_id": signed.session_id,
    }
    for name, wanted in filters.items():
        if wanted is not None and values[name] != wanted:
            raise LookupIntegrityError(
                f"entry {index} was found by {name} {wanted!r}, but its signed bytes say "
                f"{values[name]!r}: the store's lookup is wrong",
                check="columns",
                index=index,
            )
