"""Batch draws equal the same number of scalar outcome draws from one RandomSource, value for
value and byte for byte (randbelow_batch consumes the stream exactly as randbelow does)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rng_service.drbg import DeterministicGenerator
from rng_service.outcomes import dice, generic, roulette
from rng_service.outcomes.batch import draw_dice_batch, draw_spin_batch, draw_uniform_batch
from rng_service.sampling import RandomSource


def source(label: bytes) -> RandomSource:
    return RandomSource(
        DeterministicGenerator(entropy_input=label.ljust(32, b"."), nonce=bytes(16))
    )


def spins(wheel: roulette.WheelType) -> tuple[Callable[..., Any], Callable[..., Any]]:
    params = roulette.SpinParams(wheel=wheel)
    return (
        lambda src, n: draw_spin_batch(src, wheel, n)["numbers"],
        lambda src, n: [roulette.draw(src, params).final.number for _ in range(n)],
    )


SIC_BO = dice.SIC_BO
D1000 = dice.DiceParams(count=2, sides=1000)  # two-byte attempts
WIDE = generic.UniformParams(low=-(2**53 - 1), high=2**53 - 1)  # seven-byte attempts
SMALL = generic.UniformParams(low=1, high=3)

CASES: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "single_zero": spins(roulette.WheelType.SINGLE_ZERO),
    "double_zero": spins(roulette.WheelType.DOUBLE_ZERO),
    "sic_bo": (
        lambda src, n: draw_dice_batch(src, SIC_BO, n)["faces"],
        lambda src, n: [f for _ in range(n) for f in dice.draw(src, SIC_BO).faces],
    ),
    "d1000": (
        lambda src, n: draw_dice_batch(src, D1000, n)["faces"],
        lambda src, n: [f for _ in range(n) for f in dice.draw(src, D1000).faces],
    ),
    "wide_uniform": (
        lambda src, n: draw_uniform_batch(src, WIDE, n)["values"],
        lambda src, n: list(
            generic.draw_uniform(src, generic.UniformParams(WIDE.low, WIDE.high, n)).values
        ),
    ),
    "small_uniform": (
        lambda src, n: draw_uniform_batch(src, SMALL, n)["values"],
        lambda src, n: [src.randint(1, 3) for _ in range(n)],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("n", [1, 7, 3000])
def test_batch_equals_scalar_draws_and_consumes_the_same_bytes(name: str, n: int) -> None:
    batch, scalar = CASES[name]
    a, b = source(name.encode()), source(name.encode())
    assert batch(a, n) == scalar(b, n)
    assert a.random_bytes(32) == b.random_bytes(32)  # both stopped at the same byte


def test_batch_values_are_plain_ints_for_the_log() -> None:
    out = draw_uniform_batch(source(b"types"), SMALL, 5)["values"]
    assert isinstance(out, list)
    assert all(type(v) is int for v in out)
    faces = draw_dice_batch(source(b"types"), SIC_BO, 5)["faces"]
    assert isinstance(faces, list)
    assert all(type(v) is int for v in faces)
