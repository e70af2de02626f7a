"""Batch draws equal the same number of scalar draws, value for value and byte for byte."""

from __future__ import annotations

import pytest

from rng_service.errors import InvalidArgument
from rng_service.outcomes import batch as B
from rng_service.outcomes import dice, generic, roulette

W = roulette.WheelType


@pytest.mark.parametrize("wheel", B.BATCH_WHEELS)
def test_spin_batch_equals_scalar_spins(seeded, wheel) -> None:  # type: ignore[no-untyped-def]
    a, b = seeded("batch-spin"), seeded("batch-spin")
    got = B.draw_spin_batch(a, wheel, 5000)
    want = [roulette.draw(b, roulette.SpinParams(wheel)).final.number for _ in range(5000)]
    assert got == {"numbers": want}
    assert a.random_bytes(16) == b.random_bytes(16)


def test_dice_batch_equals_scalar_rolls(seeded) -> None:  # type: ignore[no-untyped-def]
    a, b = seeded("batch-dice"), seeded("batch-dice")
    got = B.draw_dice_batch(a, dice.SIC_BO, 2000)
    want = [f for _ in range(2000) for f in dice.draw(b, dice.SIC_BO).faces]
    assert got == {"faces": want}
    assert a.random_bytes(16) == b.random_bytes(16)


@pytest.mark.parametrize(("low", "high"), [(1, 10), (-(2**40), 2**40), (0, 2**63 - 1)])
def test_uniform_batch_equals_scalar_randint(seeded, low, high) -> None:  # type: ignore[no-untyped-def]
    a, b = seeded("batch-uniform"), seeded("batch-uniform")
    params = generic.UniformParams(low, high)
    got = B.draw_uniform_batch(a, params, 1000)
    want = [b.randint(low, high) for _ in range(1000)]
    assert got == {"values": want}
    assert a.random_bytes(16) == b.random_bytes(16)


def test_bad_batches(seeded) -> None:  # type: ignore[no-untyped-def]
    src = seeded("batch-bad")
    with pytest.raises(InvalidArgument) as exc:
        B.draw_spin_batch(src, W.DOUBLE_ZERO_AS_SINGLE_ZERO, 10)
    assert exc.value.field == "wheel"
    with pytest.raises(InvalidArgument) as exc:
        B.draw_spin_batch(src, W.SINGLE_ZERO, 0)
    assert exc.value.field == "count"
    with pytest.raises(InvalidArgument) as exc:
        B.draw_uniform_batch(src, generic.UniformParams(-(2**63), 2**63 - 1), 10)
    assert exc.value.field == "high"
    with pytest.raises(InvalidArgument) as exc:
        B.draw_uniform_batch(src, generic.UniformParams(1, 5, 2, True), 10)
    assert exc.value.field == "distinct"
    with pytest.raises(InvalidArgument) as exc:
        B.draw_dice_batch(src, dice.SIC_BO, 0)
    assert exc.value.field == "rolls"
