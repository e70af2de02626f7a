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

class SegmentDesignation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEGMENT_DESIGNATION_UNSPECIFIED: _ClassVar[SegmentDesignation]
    SEGMENT_DESIGNATION_X2: _ClassVar[SegmentDesignation]
    SEGMENT_DESIGNATION_X3: _ClassVar[SegmentDesignation]
    SEGMENT_DESIGNATION_X5: _ClassVar[SegmentDesignation]
    SEGMENT_DESIGNATION_JACKPOT: _ClassVar[SegmentDesignation]

class JackpotTier(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JACKPOT_TIER_UNSPECIFIED: _ClassVar[JackpotTier]
    JACKPOT_TIER_MINI: _ClassVar[JackpotTier]
    JACKPOT_TIER_MINOR: _ClassVar[JackpotTier]
    JACKPOT_TIER_MAJOR: _ClassVar[JackpotTier]
    JACKPOT_TIER_GRAND: _ClassVar[JackpotTier]

class InsideBet(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INSIDE_BET_UNSPECIFIED: _ClassVar[InsideBet]
    INSIDE_BET_STRAIGHT_UP: _ClassVar[InsideBet]
    INSIDE_BET_SPLIT: _ClassVar[InsideBet]
    INSIDE_BET_STREET: _ClassVar[InsideBet]
    INSIDE_BET_CORNER: _ClassVar[InsideBet]
    INSIDE_BET_LINE: _ClassVar[InsideBet]
WHEEL_TYPE_UNSPECIFIED: WheelType
WHEEL_TYPE_SINGLE_ZERO: WheelType
WHEEL_TYPE_DOUBLE_ZERO: WheelType
WHEEL_TYPE_DOUBLE_ZERO_AS_SINGLE_ZERO: WheelType
COLOR_UNSPECIFIED: Color
COLOR_GREEN: Color
COLOR_RED: Color
COLOR_BLACK: Color
SEGMENT_DESIGNATION_UNSPECIFIED: SegmentDesignation
SEGMENT_DESIGNATION_X2: SegmentDesignation
SEGMENT_DESIGNATION_X3: SegmentDesignation
SEGMENT_DESIGNATION_X5: SegmentDesignation
SEGMENT_DESIGNATION_JACKPOT: SegmentDesignation
JACKPOT_TIER_UNSPECIFIED: JackpotTier
JACKPOT_TIER_MINI: JackpotTier
JACKPOT_TIER_MINOR: JackpotTier
JACKPOT_TIER_MAJOR: JackpotTier
JACKPOT_TIER_GRAND: JackpotTier
INSIDE_BET_UNSPECIFIED: InsideBet
INSIDE_BET_STRAIGHT_UP: InsideBet
INSIDE_BET_SPLIT: InsideBet
INSIDE_BET_STREET: InsideBet
INSIDE_BET_CORNER: InsideBet
INSIDE_BET_LINE: InsideBet

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

class DrawMultiBallRequest(_message.Message):
    __slots__ = ("context", "wheel", "balls")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    WHEEL_FIELD_NUMBER: _ClassVar[int]
    BALLS_FIELD_NUMBER: _ClassVar[int]
    context: _common_pb2.RequestContext
    wheel: WheelType
    balls: int
    def __init__(self, context: _Optional[_Union[_common_pb2.RequestContext, _Mapping]] = ..., wheel: _Optional[_Union[WheelType, str]] = ..., balls: _Optional[int] = ...) -> None: ...

class DrawMultiBallResponse(_message.Message):
    __slots__ = ("balls", "receipt")
    BALLS_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    balls: _containers.RepeatedCompositeFieldContainer[RouletteSpin]
    receipt: _common_pb2.Receipt
    def __init__(self, balls: _Optional[_Iterable[_Union[RouletteSpin, _Mapping]]] = ..., receipt: _Optional[_Union[_common_pb2.Receipt, _Mapping]] = ...) -> None: ...

class ProfileRef(_message.Message):
    __slots__ = ("name", "version", "sha256", "example")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    EXAMPLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: int
    sha256: str
    example: bool
    def __init__(self, name: _Optional[str] = ..., version: _Optional[int] = ..., sha256: _Optional[str] = ..., example: _Optional[bool] = ...) -> None: ...

class ListProfilesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GameProfile(_message.Message):
    __slots__ = ("id", "kind", "example", "description")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    EXAMPLE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    id: ProfileRef
    kind: str
    example: bool
    description: str
    def __init__(self, id: _Optional[_Union[ProfileRef, _Mapping]] = ..., kind: _Optional[str] = ..., example: _Optional[bool] = ..., description: _Optional[str] = ...) -> None: ...

class ListProfilesResponse(_message.Message):
    __slots__ = ("profiles",)
    PROFILES_FIELD_NUMBER: _ClassVar[int]
    profiles: _containers.RepeatedCompositeFieldContainer[GameProfile]
    def __init__(self, profiles: _Optional[_Iterable[_Union[GameProfile, _Mapping]]] = ...) -> None: ...

class GetProfileRequest(_message.Message):
    __slots__ = ("name", "version", "sha256")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: int
    sha256: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[int] = ..., sha256: _Optional[str] = ...) -> None: ...

class GetProfileResponse(_message.Message):
    __slots__ = ("profile", "canonical")
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    CANONICAL_FIELD_NUMBER: _ClassVar[int]
    profile: GameProfile
    canonical: bytes
    def __init__(self, profile: _Optional[_Union[GameProfile, _Mapping]] = ..., canonical: _Optional[bytes] = ...) -> None: ...

class SelectFireNumbersRequest(_message.Message):
    __slots__ = ("context", "profile")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    context: _common_pb2.RequestContext
    profile: str
    def __init__(self, context: _Optional[_Union[_common_pb2.RequestContext, _Mapping]] = ..., profile: _Optional[str] = ...) -> None: ...

class SelectFireNumbersResponse(_message.Message):
    __slots__ = ("profile", "count", "numbers", "receipt")
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    NUMBERS_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    profile: ProfileRef
    count: int
    numbers: _containers.RepeatedScalarFieldContainer[int]
    receipt: _common_pb2.Receipt
    def __init__(self, profile: _Optional[_Union[ProfileRef, _Mapping]] = ..., count: _Optional[int] = ..., numbers: _Optional[_Iterable[int]] = ..., receipt: _Optional[_Union[_common_pb2.Receipt, _Mapping]] = ...) -> None: ...

class PlayMegaFireBlazeBonusRequest(_message.Message):
    __slots__ = ("context", "profile", "fire_numbers_index")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    FIRE_NUMBERS_INDEX_FIELD_NUMBER: _ClassVar[int]
    context: _common_pb2.RequestContext
    profile: str
    fire_numbers_index: int
    def __init__(self, context: _Optional[_Union[_common_pb2.RequestContext, _Mapping]] = ..., profile: _Optional[str] = ..., fire_numbers_index: _Optional[int] = ...) -> None: ...

class BonusCell(_message.Message):
    __slots__ = ("index", "segment", "position", "filled", "multiplier", "value")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    FILLED_FIELD_NUMBER: _ClassVar[int]
    MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    index: int
    segment: int
    position: int
    filled: bool
    multiplier: int
    value: int
    def __init__(self, index: _Optional[int] = ..., segment: _Optional[int] = ..., position: _Optional[int] = ..., filled: _Optional[bool] = ..., multiplier: _Optional[int] = ..., value: _Optional[int] = ...) -> None: ...

class BonusSegment(_message.Message):
    __slots__ = ("index", "designation", "complete", "jackpot_tier", "jackpot_value")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    DESIGNATION_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    JACKPOT_TIER_FIELD_NUMBER: _ClassVar[int]
    JACKPOT_VALUE_FIELD_NUMBER: _ClassVar[int]
    index: int
    designation: SegmentDesignation
    complete: bool
    jackpot_tier: JackpotTier
    jackpot_value: int
    def __init__(self, index: _Optional[int] = ..., designation: _Optional[_Union[SegmentDesignation, str]] = ..., complete: _Optional[bool] = ..., jackpot_tier: _Optional[_Union[JackpotTier, str]] = ..., jackpot_value: _Optional[int] = ...) -> None: ...

class BetOdds(_message.Message):
    __slots__ = ("bet", "odds")
    BET_FIELD_NUMBER: _ClassVar[int]
    ODDS_FIELD_NUMBER: _ClassVar[int]
    bet: InsideBet
    odds: int
    def __init__(self, bet: _Optional[_Union[InsideBet, str]] = ..., odds: _Optional[int] = ...) -> None: ...

class PlayMegaFireBlazeBonusResponse(_message.Message):
    __slots__ = ("profile", "fire_numbers_index", "fire_number_count", "cells", "segments", "fill_order", "total", "odds", "receipt", "spin_index")
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    FIRE_NUMBERS_INDEX_FIELD_NUMBER: _ClassVar[int]
    FIRE_NUMBER_COUNT_FIELD_NUMBER: _ClassVar[int]
    CELLS_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    FILL_ORDER_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    ODDS_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    SPIN_INDEX_FIELD_NUMBER: _ClassVar[int]
    profile: ProfileRef
    fire_numbers_index: int
    fire_number_count: int
    cells: _containers.RepeatedCompositeFieldContainer[BonusCell]
    segments: _containers.RepeatedCompositeFieldContainer[BonusSegment]
    fill_order: _containers.RepeatedScalarFieldContainer[int]
    total: int
    odds: _containers.RepeatedCompositeFieldContainer[BetOdds]
    receipt: _common_pb2.Receipt
    spin_index: int
    def __init__(self, profile: _Optional[_Union[ProfileRef, _Mapping]] = ..., fire_numbers_index: _Optional[int] = ..., fire_number_count: _Optional[int] = ..., cells: _Optional[_Iterable[_Union[BonusCell, _Mapping]]] = ..., segments: _Optional[_Iterable[_Union[BonusSegment, _Mapping]]] = ..., fill_order: _Optional[_Iterable[int]] = ..., total: _Optional[int] = ..., odds: _Optional[_Iterable[_Union[BetOdds, _Mapping]]] = ..., receipt: _Optional[_Union[_common_pb2.Receipt, _Mapping]] = ..., spin_index: _Optional[int] = ...) -> None: ...

class DrawJackpotTierRequest(_message.Message):
    __slots__ = ("context", "profile")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    context: _common_pb2.RequestContext
    profile: str
    def __init__(self, context: _Optional[_Union[_common_pb2.RequestContext, _Mapping]] = ..., profile: _Optional[str] = ...) -> None: ...

class DrawJackpotTierResponse(_message.Message):
    __slots__ = ("profile", "tier", "value", "receipt")
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    profile: ProfileRef
    tier: JackpotTier
    value: int
    receipt: _common_pb2.Receipt
    def __init__(self, profile: _Optional[_Union[ProfileRef, _Mapping]] = ..., tier: _Optional[_Union[JackpotTier, str]] = ..., value: _Optional[int] = ..., receipt: _Optional[_Union[_common_pb2.Receipt, _Mapping]] = ...) -> None: ...

class RollDiceRequest(_message.Message):
    __slots__ = ("context", "count", "sides")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    SIDES_FIELD_NUMBER: _ClassVar[int]
    context: _common_pb2.RequestContext
    count: int
    sides: int
    def __init__(self, context: _Optional[_Union[_common_pb2.RequestContext, _Mapping]] = ..., count: _Optional[int] = ..., sides: _Optional[int] = ...) -> None: ...

class RollDiceResponse(_message.Message):
    __slots__ = ("faces", "total", "receipt")
    FACES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    faces: _containers.RepeatedScalarFieldContainer[int]
    total: int
    receipt: _common_pb2.Receipt
    def __init__(self, faces: _Optional[_Iterable[int]] = ..., total: _Optional[int] = ..., receipt: _Optional[_Union[_common_pb2.Receipt, _Mapping]] = ...) -> None: ...

class ShuffleCardsRequest(_message.Message):
    __slots__ = ("context", "decks", "jokers", "plan", "players")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    DECKS_FIELD_NUMBER: _ClassVar[int]
    JOKERS_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    context: _common_pb2.RequestContext
    decks: int
    jokers: int
    plan: str
    players: int
    def __init__(self, context: _Optional[_Union[_common_pb2.RequestContext, _Mapping]] = ..., decks: _Optional[int] = ..., jokers: _Optional[int] = ..., plan: _Optional[str] = ..., players: _Optional[int] = ...) -> None: ...

class DealtHand(_message.Message):
    __slots__ = ("position", "cards", "shoe_indices")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    SHOE_INDICES_FIELD_NUMBER: _ClassVar[int]
    position: str
    cards: _containers.RepeatedScalarFieldContainer[str]
    shoe_indices: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, position: _Optional[str] = ..., cards: _Optional[_Iterable[str]] = ..., shoe_indices: _Optional[_Iterable[int]] = ...) -> None: ...

class ShuffleCardsResponse(_message.Message):
    __slots__ = ("decks", "jokers", "cards", "plan", "players", "hands", "next_index", "receipt")
    DECKS_FIELD_NUMBER: _ClassVar[int]
    JOKERS_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    HANDS_FIELD_NUMBER: _ClassVar[int]
    NEXT_INDEX_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    decks: int
    jokers: int
    cards: bytes
    plan: str
    players: int
    hands: _containers.RepeatedCompositeFieldContainer[DealtHand]
    next_index: int
    receipt: _common_pb2.Receipt
    def __init__(self, decks: _Optional[int] = ..., jokers: _Optional[int] = ..., cards: _Optional[bytes] = ..., plan: _Optional[str] = ..., players: _Optional[int] = ..., hands: _Optional[_Iterable[_Union[DealtHand, _Mapping]]] = ..., next_index: _Optional[int] = ..., receipt: _Optional[_Union[_common_pb2.Receipt, _Mapping]] = ...) -> None: ...

class DrawUniformIntegersRequest(_message.Message):
    __slots__ = ("context", "low", "high", "count", "distinct")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    LOW_FIELD_NUMBER: _ClassVar[int]
    HIGH_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    DISTINCT_FIELD_NUMBER: _ClassVar[int]
    context: _common_pb2.RequestContext
    low: int
    high: int
    count: int
    distinct: bool
    def __init__(self, context: _Optional[_Union[_common_pb2.RequestContext, _Mapping]] = ..., low: _Optional[int] = ..., high: _Optional[int] = ..., count: _Optional[int] = ..., distinct: _Optional[bool] = ...) -> None: ...

class DrawUniformIntegersResponse(_message.Message):
    __slots__ = ("values", "receipt")
    VALUES_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[int]
    receipt: _common_pb2.Receipt
    def __init__(self, values: _Optional[_Iterable[int]] = ..., receipt: _Optional[_Union[_common_pb2.Receipt, _Mapping]] = ...) -> None: ...

class DrawWeightedRequest(_message.Message):
    __slots__ = ("context", "weights", "count")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    context: _common_pb2.RequestContext
    weights: _containers.RepeatedScalarFieldContainer[int]
    count: int
    def __init__(self, context: _Optional[_Union[_common_pb2.RequestContext, _Mapping]] = ..., weights: _Optional[_Iterable[int]] = ..., count: _Optional[int] = ...) -> None: ...

class DrawWeightedResponse(_message.Message):
    __slots__ = ("indices", "receipt")
    INDICES_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    indices: _containers.RepeatedScalarFieldContainer[int]
    receipt: _common_pb2.Receipt
    def __init__(self, indices: _Optional[_Iterable[int]] = ..., receipt: _Optional[_Union[_common_pb2.Receipt, _Mapping]] = ...) -> None: ...

class RouletteBatch(_message.Message):
    __slots__ = ("wheel",)
    WHEEL_FIELD_NUMBER: _ClassVar[int]
    wheel: WheelType
    def __init__(self, wheel: _Optional[_Union[WheelType, str]] = ...) -> None: ...

class DiceBatch(_message.Message):
    __slots__ = ("count", "sides")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    SIDES_FIELD_NUMBER: _ClassVar[int]
    count: int
    sides: int
    def __init__(self, count: _Optional[int] = ..., sides: _Optional[int] = ...) -> None: ...

class UniformBatch(_message.Message):
    __slots__ = ("low", "high")
    LOW_FIELD_NUMBER: _ClassVar[int]
    HIGH_FIELD_NUMBER: _ClassVar[int]
    low: int
    high: int
    def __init__(self, low: _Optional[int] = ..., high: _Optional[int] = ...) -> None: ...

class DrawBatchRequest(_message.Message):
    __slots__ = ("context", "count", "roulette", "dice", "uniform")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    ROULETTE_FIELD_NUMBER: _ClassVar[int]
    DICE_FIELD_NUMBER: _ClassVar[int]
    UNIFORM_FIELD_NUMBER: _ClassVar[int]
    context: _common_pb2.RequestContext
    count: int
    roulette: RouletteBatch
    dice: DiceBatch
    uniform: UniformBatch
    def __init__(self, context: _Optional[_Union[_common_pb2.RequestContext, _Mapping]] = ..., count: _Optional[int] = ..., roulette: _Optional[_Union[RouletteBatch, _Mapping]] = ..., dice: _Optional[_Union[DiceBatch, _Mapping]] = ..., uniform: _Optional[_Union[UniformBatch, _Mapping]] = ...) -> None: ...

class RouletteBatchResult(_message.Message):
    __slots__ = ("numbers", "wheel_positions")
    NUMBERS_FIELD_NUMBER: _ClassVar[int]
    WHEEL_POSITIONS_FIELD_NUMBER: _ClassVar[int]
    numbers: _containers.RepeatedScalarFieldContainer[str]
    wheel_positions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, numbers: _Optional[_Iterable[str]] = ..., wheel_positions: _Optional[_Iterable[int]] = ...) -> None: ...

class DiceBatchResult(_message.Message):
    __slots__ = ("dice", "faces")
    DICE_FIELD_NUMBER: _ClassVar[int]
    FACES_FIELD_NUMBER: _ClassVar[int]
    dice: int
    faces: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, dice: _Optional[int] = ..., faces: _Optional[_Iterable[int]] = ...) -> None: ...

class UniformBatchResult(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, values: _Optional[_Iterable[int]] = ...) -> None: ...

class DrawBatchResponse(_message.Message):
    __slots__ = ("roulette", "dice", "uniform", "receipt")
    ROULETTE_FIELD_NUMBER: _ClassVar[int]
    DICE_FIELD_NUMBER: _ClassVar[int]
    UNIFORM_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    roulette: RouletteBatchResult
    dice: DiceBatchResult
    uniform: UniformBatchResult
    receipt: _common_pb2.Receipt
    def __init__(self, roulette: _Optional[_Union[RouletteBatchResult, _Mapping]] = ..., dice: _Optional[_Union[DiceBatchResult, _Mapping]] = ..., uniform: _Optional[_Union[UniformBatchResult, _Mapping]] = ..., receipt: _Optional[_Union[_common_pb2.Receipt, _Mapping]] = ...) -> None: ...

class StreamBatchRequest(_message.Message):
    __slots__ = ("context", "count", "chunk_size", "roulette", "dice", "uniform")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    CHUNK_SIZE_FIELD_NUMBER: _ClassVar[int]
    ROULETTE_FIELD_NUMBER: _ClassVar[int]
    DICE_FIELD_NUMBER: _ClassVar[int]
    UNIFORM_FIELD_NUMBER: _ClassVar[int]
    context: _common_pb2.RequestContext
    count: int
    chunk_size: int
    roulette: RouletteBatch
    dice: DiceBatch
    uniform: UniformBatch
    def __init__(self, context: _Optional[_Union[_common_pb2.RequestContext, _Mapping]] = ..., count: _Optional[int] = ..., chunk_size: _Optional[int] = ..., roulette: _Optional[_Union[RouletteBatch, _Mapping]] = ..., dice: _Optional[_Union[DiceBatch, _Mapping]] = ..., uniform: _Optional[_Union[UniformBatch, _Mapping]] = ...) -> None: ...

class StreamBatchResponse(_message.Message):
    __slots__ = ("chunk", "first", "chunks", "roulette", "dice", "uniform", "receipt")
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    FIRST_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    ROULETTE_FIELD_NUMBER: _ClassVar[int]
    DICE_FIELD_NUMBER: _ClassVar[int]
    UNIFORM_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    chunk: int
    first: int
    chunks: int
    roulette: RouletteBatchResult
    dice: DiceBatchResult
    uniform: UniformBatchResult
    receipt: _common_pb2.Receipt
    def __init__(self, chunk: _Optional[int] = ..., first: _Optional[int] = ..., chunks: _Optional[int] = ..., roulette: _Optional[_Union[RouletteBatchResult, _Mapping]] = ..., dice: _Optional[_Union[DiceBatchResult, _Mapping]] = ..., uniform: _Optional[_Union[UniformBatchResult, _Mapping]] = ..., receipt: _Optional[_Union[_common_pb2.Receipt, _Mapping]] = ...) -> None: ...

class VoidRoundRequest(_message.Message):
    __slots__ = ("context", "client", "reason")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    context: _common_pb2.RequestContext
    client: str
    reason: str
    def __init__(self, context: _Optional[_Union[_common_pb2.RequestContext, _Mapping]] = ..., client: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class VoidRoundResponse(_message.Message):
    __slots__ = ("client", "receipt")
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    client: str
    receipt: _common_pb2.Receipt
    def __init__(self, client: _Optional[str] = ..., receipt: _Optional[_Union[_common_pb2.Receipt, _Mapping]] = ...) -> None: ...
