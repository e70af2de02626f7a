"""Log storage: the :class:`LogStorage` Protocol, its records and errors (``base``), and one
module per driver (``memory``, ``sqlite``, ``postgres``) that only the composition root imports.

Storage keeps opaque entry bytes, RFC 6962 complete-subtree nodes and checkpoint notes and
witness cosignature lines, and imports nothing from ``rng_service.log``.
"""

from rng_service.storage.base import (
    AppendBatch,
    CheckpointRecord,
    CommitUnknown,
    CosignatureRecord,
    DuplicateRequest,
    EntryRecord,
    LogStorage,
    NodeRecord,
    SchemaVersionMismatch,
    SequenceConflict,
    ServerEpochs,
    StorageUnavailable,
    StoreConnectionLost,
)

__all__ = [
    "AppendBatch",
    "CheckpointRecord",
    "CommitUnknown",
    "CosignatureRecord",
    "DuplicateRequest",
    "EntryRecord",
    "LogStorage",
    "NodeRecord",
    "SchemaVersionMismatch",
    "SequenceConflict",
    "ServerEpochs",
    "StorageUnavailable",
    "StoreConnectionLost",
]
