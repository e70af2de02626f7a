"""Batch draws: many roulette spins, dice rolls or uniform integers in one vectorised call.

Owns: the batch forms of three kinds, each built on one ``RandomSource.randbelow_batch`` call,
which returns exactly the values and consumes exactly the bytes of the same number of scalar
``randbelow`` calls (docs/random-core.md, section 5). So a batch equals that many scalar
outcomes drawn from one source, and docs/outcomes.md's draw mapping of each kind applies:

* ``draw_spin_batch(src, wheel, count)``: ``count`` x ``roulette.draw`` on a single zero or
  double zero wheel (617a.1). A double zero wheel used as a single zero wheel is refused: its
  void-and-respin (617a.4(c)(2)) makes the number of draws per spin variable.
* ``draw_dice_batch(src, params, rolls)``: ``rolls`` x ``dice.draw``, faces roll after roll.
* ``draw_uniform_batch(src, params, count)``: ``count`` x ``src.randint(low, high)`` (with
  replacement only; the range has at most 2**63 values, the limit of ``randbelow_batch``).

Records are compact: ``{"numbers": [...]}``, ``{"faces": [...]}``, ``{"values": [...]}``.

Must not: use floats, ``%`` on random values, I/O, or a generator other than ``src``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rng_service.errors import InvalidArgument
from rng_service.outcomes._common import JsonValue, allowed_list, require_int
from rng_service.outcomes.dice import DiceParams
from rng_service.outcomes.generic import UniformParams
from rng_service.outcomes.roulette import WHEEL_ORDER, WheelType

if TYPE_CHECKING:
    from rng_service.sampling import RandomSource

__all__ = [
    "BATCH_WHEELS",
    "MAX_BATCH_VALUES",
    "MAX_UNIFORM_SPAN",
    "draw_dice_batch",
    "draw_spin_batch",
    "draw_uniform_batch",
]

#: Wheels a batch spins: one ``randbelow(size)`` per spin, no voids.
BATCH_WHEELS = (WheelType.SINGLE_ZERO, WheelType.DOUBLE_ZERO)
#: Most random values one batch call produces (spins, dice faces or integers).
MAX_BATCH_VALUES = 100_000_000
#: ``randbelow_batch`` returns int64, so a uniform batch range holds at most 2**63 values.
MAX_UNIFORM_SPAN = 2**63


def draw_spin_batch(src: RandomSource, wheel: WheelType, count: int) -> dict[str, JsonValue]:
    """``count`` spins of a single or double zero wheel. Record: ``{"numbers": [label, ...]}``."""
    if wheel not in BATCH_WHEELS:
        raise InvalidArgument(
            "wheel",
            f"{getattr(wheel, 'value', wheel)} is not supported in a batch (its 00 is respun)",
            allowed=allowed_list(w.value for w in BATCH_WHEELS),
        )
    require_int(count, "count", 1, MAX_BATCH_VALUES)
    order = WHEEL_ORDER[wheel]
    positions = src.randbelow_batch(len(order), count).tolist()
    return {"numbers": [order[p] for p in positions]}


def draw_dice_batch(src: RandomSource, params: DiceParams, rolls: int) -> dict[str, JsonValue]:
    """``rolls`` rolls of ``params``. Record: ``{"faces": [...]}``, roll after roll."""
    require_int(rolls, "rolls", 1, MAX_BATCH_VALUES // params.count)
    faces = src.randbelow_batch(params.sides, rolls * params.count) + 1
    values: list[JsonValue] = list(faces.tolist())
    return {"faces": values}


def draw_uniform_batch(
    src: RandomSource, params: UniformParams, count: int
) -> dict[str, JsonValue]:
    """``count`` integers uniform on ``[low, high]``, with replacement (``params.count`` and
    ``params.distinct`` must be left at their defaults). Record: ``{"values": [...]}``."""
    if params.distinct:
        raise InvalidArgument("distinct", "a batch draws with replacement", allowed="false")
    require_int(count, "count", 1, MAX_BATCH_VALUES)
    span = params.high - params.low + 1
    if span > MAX_UNIFORM_SPAN:
        raise InvalidArgument(
            "high", f"range of {span} values too large for a batch", allowed="high - low < 2**63"
        )
    offsets = src.randbelow_batch(span, count).tolist()
    return {"values": [params.low + v for v in offsets]}
