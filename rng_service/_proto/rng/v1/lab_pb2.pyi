from . import common_pb2 as _common_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StreamRawOutputRequest(_message.Message):
    __slots__ = ("context", "num_bytes", "chunk_size")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    NUM_BYTES_FIELD_NUMBER: _ClassVar[int]
    CHUNK_SIZE_FIELD_NUMBER: _ClassVar[int]
    context: _common_pb2.RequestContext
    num_bytes: int
    chunk_size: int
    def __init__(self, context: _Optional[_Union[_common_pb2.RequestContext, _Mapping]] = ..., num_bytes: _Optional[int] = ..., chunk_size: _Optional[int] = ...) -> None: ...

class RawOutputSession(_message.Message):
    __slots__ = ("generator_instance", "generator_epoch", "num_bytes", "chunk_size", "chunks")
    GENERATOR_INSTANCE_FIELD_NUMBER: _ClassVar[int]
    GENERATOR_EPOCH_FIELD_NUMBER: _ClassVar[int]
    NUM_BYTES_FIELD_NUMBER: _ClassVar[int]
    CHUNK_SIZE_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    generator_instance: str
    generator_epoch: int
    num_bytes: int
    chunk_size: int
    chunks: int
    def __init__(self, generator_instance: _Optional[str] = ..., generator_epoch: _Optional[int] = ..., num_bytes: _Optional[int] = ..., chunk_size: _Optional[int] = ..., chunks: _Optional[int] = ...) -> None: ...

class StreamRawOutputResponse(_message.Message):
    __slots__ = ("session", "receipt", "offset", "data")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    session: RawOutputSession
    receipt: _common_pb2.Receipt
    offset: int
    data: bytes
    def __init__(self, session: _Optional[_Union[RawOutputSession, _Mapping]] = ..., receipt: _Optional[_Union[_common_pb2.Receipt, _Mapping]] = ..., offset: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...
