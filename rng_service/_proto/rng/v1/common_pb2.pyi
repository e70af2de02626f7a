from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class RequestContext(_message.Message):
    __slots__ = ("table_id", "round_id", "request_id", "session_id", "slot")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    ROUND_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    round_id: str
    request_id: str
    session_id: str
    slot: str
    def __init__(self, table_id: _Optional[str] = ..., round_id: _Optional[str] = ..., request_id: _Optional[str] = ..., session_id: _Optional[str] = ..., slot: _Optional[str] = ...) -> None: ...

class Receipt(_message.Message):
    __slots__ = ("index", "entry", "leaf_hash", "inclusion_proof", "tree_size", "checkpoint", "replayed")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    LEAF_HASH_FIELD_NUMBER: _ClassVar[int]
    INCLUSION_PROOF_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    index: int
    entry: bytes
    leaf_hash: bytes
    inclusion_proof: _containers.RepeatedScalarFieldContainer[bytes]
    tree_size: int
    checkpoint: str
    replayed: bool
    def __init__(self, index: _Optional[int] = ..., entry: _Optional[bytes] = ..., leaf_hash: _Optional[bytes] = ..., inclusion_proof: _Optional[_Iterable[bytes]] = ..., tree_size: _Optional[int] = ..., checkpoint: _Optional[str] = ..., replayed: _Optional[bool] = ...) -> None: ...
