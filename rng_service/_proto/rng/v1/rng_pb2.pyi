from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WheelType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WHEEL_TYPE_UNSPECIFIED: _ClassVar[WheelType]
    WHEEL_TYPE_SINGLE_ZERO: _ClassVar[WheelType]
    WHEEL_TYPE_DOUBLE_ZERO: _ClassVar[WheelType]
    WHEEL_TYPE_DOUBLE_ZERO_AS_SINGLE_ZERO: _ClassVar[WheelType]

class Color(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COLOR_UNSPECIFIED: _ClassVar[Color]
    COLOR_GREEN: _ClassVar[Color]
    COLOR_RED: _ClassVar[Color]
    COLOR_BLACK: _ClassVar[Color]
WHEEL_TYPE_UNSPECIFIED: WheelType
WHEEL_TYPE_SINGLE_ZERO: WheelType
WHEEL_TYPE_DOUBLE_ZERO: WheelType
WHEEL_TYPE_DOUBLE_ZERO_AS_SINGLE_ZERO: WheelType
COLOR_UNSPECIFIED: Color
COLOR_GREEN: Color
COLOR_RED: Color
COLOR_BLACK: Color

class RequestContext(_message.Message):
    __slots__ = ("table_id", "round_id", "request_id", "session_id")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    ROUND_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    round_id: str
    request_id: str
    session_id: str
    def __init__(self, table_id: _Optional[str] = ..., round_id: _Optional[str] = ..., request_id: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class SpinRouletteRequest(_message.Message):
    __slots__ = ("context", "wheel")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    WHEEL_FIELD_NUMBER: _ClassVar[int]
    context: RequestContext
    wheel: WheelType
    def __init__(self, context: _Optional[_Union[RequestContext, _Mapping]] = ..., wheel: _Optional[_Union[WheelType, str]] = ...) -> None: ...

class RouletteSpin(_message.Message):
    __slots__ = ("number", "color", "wheel_position", "void")
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    COLOR_FIELD_NUMBER: _ClassVar[int]
    WHEEL_POSITION_FIELD_NUMBER: _ClassVar[int]
    VOID_FIELD_NUMBER: _ClassVar[int]
    number: str
    color: Color
    wheel_position: int
    void: bool
    def __init__(self, number: _Optional[str] = ..., color: _Optional[_Union[Color, str]] = ..., wheel_position: _Optional[int] = ..., void: _Optional[bool] = ...) -> None: ...

class SpinRouletteResponse(_message.Message):
    __slots__ = ("result", "spins", "receipt")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    SPINS_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    result: RouletteSpin
    spins: _containers.RepeatedCompositeFieldContainer[RouletteSpin]
    receipt: Receipt
    def __init__(self, result: _Optional[_Union[RouletteSpin, _Mapping]] = ..., spins: _Optional[_Iterable[_Union[RouletteSpin, _Mapping]]] = ..., receipt: _Optional[_Union[Receipt, _Mapping]] = ...) -> None: ...

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

class GetPublicKeysRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PublicKey(_message.Message):
    __slots__ = ("key_id", "name", "algorithm", "public_key", "verifier_key", "active")
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    VERIFIER_KEY_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    key_id: str
    name: str
    algorithm: str
    public_key: bytes
    verifier_key: str
    active: bool
    def __init__(self, key_id: _Optional[str] = ..., name: _Optional[str] = ..., algorithm: _Optional[str] = ..., public_key: _Optional[bytes] = ..., verifier_key: _Optional[str] = ..., active: _Optional[bool] = ...) -> None: ...

class GetPublicKeysResponse(_message.Message):
    __slots__ = ("keys",)
    KEYS_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[PublicKey]
    def __init__(self, keys: _Optional[_Iterable[_Union[PublicKey, _Mapping]]] = ...) -> None: ...
