from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetPublicKeysRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PublicKey(_message.Message):
    __slots__ = ("key_id", "name", "algorithm", "public_key", "verifier_key", "active", "cosigning")
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    VERIFIER_KEY_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    COSIGNING_FIELD_NUMBER: _ClassVar[int]
    key_id: str
    name: str
    algorithm: str
    public_key: bytes
    verifier_key: str
    active: bool
    cosigning: bool
    def __init__(self, key_id: _Optional[str] = ..., name: _Optional[str] = ..., algorithm: _Optional[str] = ..., public_key: _Optional[bytes] = ..., verifier_key: _Optional[str] = ..., active: _Optional[bool] = ..., cosigning: _Optional[bool] = ...) -> None: ...

class GetPublicKeysResponse(_message.Message):
    __slots__ = ("keys",)
    KEYS_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[PublicKey]
    def __init__(self, keys: _Optional[_Iterable[_Union[PublicKey, _Mapping]]] = ...) -> None: ...

class GetLatestCheckpointRequest(_message.Message):
    __slots__ = ("witnessed",)
    WITNESSED_FIELD_NUMBER: _ClassVar[int]
    witnessed: bool
    def __init__(self, witnessed: _Optional[bool] = ...) -> None: ...

class PublishCheckpointRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SignedCheckpoint(_message.Message):
    __slots__ = ("size", "root_hash", "note", "published", "published_at_ns")
    SIZE_FIELD_NUMBER: _ClassVar[int]
    ROOT_HASH_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_AT_NS_FIELD_NUMBER: _ClassVar[int]
    size: int
    root_hash: bytes
    note: str
    published: bool
    published_at_ns: int
    def __init__(self, size: _Optional[int] = ..., root_hash: _Optional[bytes] = ..., note: _Optional[str] = ..., published: _Optional[bool] = ..., published_at_ns: _Optional[int] = ...) -> None: ...

class GetCheckpointsRequest(_message.Message):
    __slots__ = ("min_size", "max_size", "since_ns", "until_ns")
    MIN_SIZE_FIELD_NUMBER: _ClassVar[int]
    MAX_SIZE_FIELD_NUMBER: _ClassVar[int]
    SINCE_NS_FIELD_NUMBER: _ClassVar[int]
    UNTIL_NS_FIELD_NUMBER: _ClassVar[int]
    min_size: int
    max_size: int
    since_ns: int
    until_ns: int
    def __init__(self, min_size: _Optional[int] = ..., max_size: _Optional[int] = ..., since_ns: _Optional[int] = ..., until_ns: _Optional[int] = ...) -> None: ...

class GetCheckpointsResponse(_message.Message):
    __slots__ = ("checkpoints",)
    CHECKPOINTS_FIELD_NUMBER: _ClassVar[int]
    checkpoints: _containers.RepeatedCompositeFieldContainer[SignedCheckpoint]
    def __init__(self, checkpoints: _Optional[_Iterable[_Union[SignedCheckpoint, _Mapping]]] = ...) -> None: ...

class GetInclusionProofRequest(_message.Message):
    __slots__ = ("index", "leaf_hash", "tree_size")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    LEAF_HASH_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    index: int
    leaf_hash: bytes
    tree_size: int
    def __init__(self, index: _Optional[int] = ..., leaf_hash: _Optional[bytes] = ..., tree_size: _Optional[int] = ...) -> None: ...

class GetInclusionProofResponse(_message.Message):
    __slots__ = ("index", "leaf_hash", "tree_size", "proof", "root_hash")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    LEAF_HASH_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PROOF_FIELD_NUMBER: _ClassVar[int]
    ROOT_HASH_FIELD_NUMBER: _ClassVar[int]
    index: int
    leaf_hash: bytes
    tree_size: int
    proof: _containers.RepeatedScalarFieldContainer[bytes]
    root_hash: bytes
    def __init__(self, index: _Optional[int] = ..., leaf_hash: _Optional[bytes] = ..., tree_size: _Optional[int] = ..., proof: _Optional[_Iterable[bytes]] = ..., root_hash: _Optional[bytes] = ...) -> None: ...

class GetConsistencyProofRequest(_message.Message):
    __slots__ = ("first_size", "second_size")
    FIRST_SIZE_FIELD_NUMBER: _ClassVar[int]
    SECOND_SIZE_FIELD_NUMBER: _ClassVar[int]
    first_size: int
    second_size: int
    def __init__(self, first_size: _Optional[int] = ..., second_size: _Optional[int] = ...) -> None: ...

class GetConsistencyProofResponse(_message.Message):
    __slots__ = ("first_size", "second_size", "proof")
    FIRST_SIZE_FIELD_NUMBER: _ClassVar[int]
    SECOND_SIZE_FIELD_NUMBER: _ClassVar[int]
    PROOF_FIELD_NUMBER: _ClassVar[int]
    first_size: int
    second_size: int
    proof: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, first_size: _Optional[int] = ..., second_size: _Optional[int] = ..., proof: _Optional[_Iterable[bytes]] = ...) -> None: ...

class GetEntriesRequest(_message.Message):
    __slots__ = ("start", "end", "tree_size", "omit_proofs")
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    OMIT_PROOFS_FIELD_NUMBER: _ClassVar[int]
    start: int
    end: int
    tree_size: int
    omit_proofs: bool
    def __init__(self, start: _Optional[int] = ..., end: _Optional[int] = ..., tree_size: _Optional[int] = ..., omit_proofs: _Optional[bool] = ...) -> None: ...

class LogEntry(_message.Message):
    __slots__ = ("index", "entry", "leaf_hash", "commit_size", "inclusion_proof")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    LEAF_HASH_FIELD_NUMBER: _ClassVar[int]
    COMMIT_SIZE_FIELD_NUMBER: _ClassVar[int]
    INCLUSION_PROOF_FIELD_NUMBER: _ClassVar[int]
    index: int
    entry: bytes
    leaf_hash: bytes
    commit_size: int
    inclusion_proof: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, index: _Optional[int] = ..., entry: _Optional[bytes] = ..., leaf_hash: _Optional[bytes] = ..., commit_size: _Optional[int] = ..., inclusion_proof: _Optional[_Iterable[bytes]] = ...) -> None: ...

class GetEntriesResponse(_message.Message):
    __slots__ = ("entries", "tree_size", "checkpoint")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[LogEntry]
    tree_size: int
    checkpoint: str
    def __init__(self, entries: _Optional[_Iterable[_Union[LogEntry, _Mapping]]] = ..., tree_size: _Optional[int] = ..., checkpoint: _Optional[str] = ...) -> None: ...

class FindEntriesRequest(_message.Message):
    __slots__ = ("client", "request_id", "table_id", "round_id", "session_id", "since_ns", "until_ns", "limit", "tree_size")
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    ROUND_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SINCE_NS_FIELD_NUMBER: _ClassVar[int]
    UNTIL_NS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    client: str
    request_id: str
    table_id: str
    round_id: str
    session_id: str
    since_ns: int
    until_ns: int
    limit: int
    tree_size: int
    def __init__(self, client: _Optional[str] = ..., request_id: _Optional[str] = ..., table_id: _Optional[str] = ..., round_id: _Optional[str] = ..., session_id: _Optional[str] = ..., since_ns: _Optional[int] = ..., until_ns: _Optional[int] = ..., limit: _Optional[int] = ..., tree_size: _Optional[int] = ...) -> None: ...

class FindEntriesResponse(_message.Message):
    __slots__ = ("entries", "truncated", "tree_size", "checkpoint", "map_proof")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    MAP_PROOF_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[LogEntry]
    truncated: bool
    tree_size: int
    checkpoint: str
    map_proof: TableMapProof
    def __init__(self, entries: _Optional[_Iterable[_Union[LogEntry, _Mapping]]] = ..., truncated: _Optional[bool] = ..., tree_size: _Optional[int] = ..., checkpoint: _Optional[str] = ..., map_proof: _Optional[_Union[TableMapProof, _Mapping]] = ...) -> None: ...

class GetTableHistoryRequest(_message.Message):
    __slots__ = ("client", "table_id", "first_seq", "last_seq", "limit", "tree_size")
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    client: str
    table_id: str
    first_seq: int
    last_seq: int
    limit: int
    tree_size: int
    def __init__(self, client: _Optional[str] = ..., table_id: _Optional[str] = ..., first_seq: _Optional[int] = ..., last_seq: _Optional[int] = ..., limit: _Optional[int] = ..., tree_size: _Optional[int] = ...) -> None: ...

class GetTableHistoryResponse(_message.Message):
    __slots__ = ("client", "table_id", "entries", "truncated", "tree_size", "checkpoint", "map_proof")
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    MAP_PROOF_FIELD_NUMBER: _ClassVar[int]
    client: str
    table_id: str
    entries: _containers.RepeatedCompositeFieldContainer[LogEntry]
    truncated: bool
    tree_size: int
    checkpoint: str
    map_proof: TableMapProof
    def __init__(self, client: _Optional[str] = ..., table_id: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[LogEntry, _Mapping]]] = ..., truncated: _Optional[bool] = ..., tree_size: _Optional[int] = ..., checkpoint: _Optional[str] = ..., map_proof: _Optional[_Union[TableMapProof, _Mapping]] = ...) -> None: ...

class TableMapProof(_message.Message):
    __slots__ = ("root_entry", "siblings", "terminal", "head_index", "head_seq", "other_key", "other_index", "other_seq")
    class Terminal(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        TERMINAL_UNSPECIFIED: _ClassVar[TableMapProof.Terminal]
        TERMINAL_PRESENT: _ClassVar[TableMapProof.Terminal]
        TERMINAL_ABSENT_EMPTY: _ClassVar[TableMapProof.Terminal]
        TERMINAL_ABSENT_OTHER: _ClassVar[TableMapProof.Terminal]
    TERMINAL_UNSPECIFIED: TableMapProof.Terminal
    TERMINAL_PRESENT: TableMapProof.Terminal
    TERMINAL_ABSENT_EMPTY: TableMapProof.Terminal
    TERMINAL_ABSENT_OTHER: TableMapProof.Terminal
    ROOT_ENTRY_FIELD_NUMBER: _ClassVar[int]
    SIBLINGS_FIELD_NUMBER: _ClassVar[int]
    TERMINAL_FIELD_NUMBER: _ClassVar[int]
    HEAD_INDEX_FIELD_NUMBER: _ClassVar[int]
    HEAD_SEQ_FIELD_NUMBER: _ClassVar[int]
    OTHER_KEY_FIELD_NUMBER: _ClassVar[int]
    OTHER_INDEX_FIELD_NUMBER: _ClassVar[int]
    OTHER_SEQ_FIELD_NUMBER: _ClassVar[int]
    root_entry: LogEntry
    siblings: _containers.RepeatedScalarFieldContainer[bytes]
    terminal: TableMapProof.Terminal
    head_index: int
    head_seq: int
    other_key: bytes
    other_index: int
    other_seq: int
    def __init__(self, root_entry: _Optional[_Union[LogEntry, _Mapping]] = ..., siblings: _Optional[_Iterable[bytes]] = ..., terminal: _Optional[_Union[TableMapProof.Terminal, str]] = ..., head_index: _Optional[int] = ..., head_seq: _Optional[int] = ..., other_key: _Optional[bytes] = ..., other_index: _Optional[int] = ..., other_seq: _Optional[int] = ...) -> None: ...
