from . import common_pb2 as _common_pb2
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

class SpinRouletteRequest(_message.Message):
    __slots__ = ("context", "wheel")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    WHEEL_FIELD_NUMBER: _ClassVar[int]
    context: _common_pb2.RequestContext
    wheel: WheelType
    def __init__(self, context: _Optional[_Union[_common_pb2.RequestContext, _Mapping]] = ..., wheel: _Optional[_Union[WheelType, str]] = ...) -> None: ...

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
    receipt: _common_pb2.Receipt
    def __init__(self, result: _Optional[_Union[RouletteSpin, _Mapping]] = ..., spins: _Optional[_Iterable[_Union[RouletteSpin, _Mapping]]] = ..., receipt: _Optional[_Union[_common_pb2.Receipt, _Mapping]] = ...) -> None: ...
