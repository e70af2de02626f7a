"""Cheaper construction of frozen slotted dataclasses, for the log writer's per-outcome objects.

The one place the writer bypasses a dataclass's generated ``__init__``: :func:`slot_setters`
hands out the slot descriptors' setters of a frozen slotted dataclass, checked against the
field order the caller writes its constructor in, so that the constructor
(``rng_service.writer.values.new_entry`` and the others) builds the same frozen object as
``cls(...)`` for about half the cost. Kept because the writer builds four such objects for
every outcome (and the servicers a ``DrawRequest``): docs/performance.md's row of the writer's
per-outcome constructors measures 5.2% fewer instructions a spin than with the classes' own
``__init__``. Values are set, never computed or converted.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["slot_setters"]


def slot_setters(cls: type, order: str, *, post_init: bool = True) -> tuple[Any, ...]:
    """The slot descriptors' ``__set__`` of the frozen slotted dataclass ``cls``, in the
    field order ``order`` names, for a cheaper constructor of it: the same object as
    ``cls(...)`` given every field (same class and values, still frozen), for about half the
    cost.

    A frozen dataclass's generated ``__init__`` sets each field with ``object.__setattr__(self,
    name, value)``, which looks the name up in the class every time. Checked when the caller's
    module loads, so that a class whose fields were reordered or changed fails at import,
    never by a value in the wrong field: ``order`` must be the class's fields, none outside
    ``__init__``, and no ``__post_init__`` unless ``post_init=False`` says the constructor
    computes what it would (``rng_service.writer.values.draw_request``)."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in vars(cls):
        raise TypeError(f"{cls.__name__}: not a frozen slotted dataclass")
    fields = dataclasses.fields(cls)
    if (post_init and hasattr(cls, "__post_init__")) or not all(f.init for f in fields):
        raise TypeError(f"{cls.__name__}: __post_init__ or a field outside __init__")
    names = [f.name for f in fields]
    if names != order.split():
        raise TypeError(f"{cls.__name__}: the fields are {names}, not {order.split()}")
    return tuple(vars(cls)[name].__set__ for name in names)
