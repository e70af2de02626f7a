"""Roulette spins (58 Pa. Code 617a.1, 617a.3, 617a.4(c))."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest

from rng_service.errors import InvalidArgument
from rng_service.outcomes import roulette as r
from rng_service.outcomes._common import RespinLimitExceeded

W = r.WheelType


def test_wheel_orders_are_permutations_of_the_layout() -> None:
    single = {str(n) for n in range(37)}
    assert len(r.WHEEL_ORDER[W.SINGLE_ZERO]) == 37
    assert set(r.WHEEL_ORDER[W.SINGLE_ZERO]) == single
    for w in (W.DOUBLE_ZERO, W.DOUBLE_ZERO_AS_SINGLE_ZERO):
        assert len(r.WHEEL_ORDER[w]) == 38
        assert set(r.WHEEL_ORDER[w]) == single | {"00"}
    assert r.WHEEL_ORDER[W.DOUBLE_ZERO].index("00") == 19
    assert r.WHEEL_ORDER[W.SINGLE_ZERO][:4] == ("0", "32", "15", "19")


def test_colours_alternate_round_the_wheels() -> None:
    assert len(r.RED_NUMBERS) == len(r.BLACK_NUMBERS) == 18
    for w in W:
        colours = [r.colour_of(n) for n in r.WHEEL_ORDER[w] if n not in ("0", "00")]
        # Between the green compartments, red and black alternate on both wheels.
        order = r.WHEEL_ORDER[w]
        for a, b in zip(order, order[1:] + order[:1], strict=True):
            if "green" not in (r.colour_of(a), r.colour_of(b)):
                assert r.colour_of(a) != r.colour_of(b), (w, a, b)
        assert colours.count("red") == 18


@pytest.mark.parametrize("wheel", list(W))
def test_every_position_maps_to_its_compartment(scripted, wheel) -> None:  # type: ignore[no-untyped-def]
    order = r.WHEEL_ORDER[wheel]
    for pos, label in enumerate(order):
        if wheel is W.DOUBLE_ZERO_AS_SINGLE_ZERO and label == "00":
            continue
        src, raw = scripted([pos])
        out = r.draw(src, r.SpinParams(wheel))
        assert raw.remaining == 0
        assert out.final == r.Spin(label, r.colour_of(label), pos, False)
        assert out.spins == (out.final,)
        assert out.wheel is wheel


def test_rejected_bytes_are_skipped(scripted) -> None:  # type: ignore[no-untyped-def]
    # randbelow(37) accepts bytes below 222 = 6 * 37; 230 is rejected, then 40 -> 40 % 37 = 3.
    src, raw = scripted([230, 40])
    out = r.draw(src, r.SpinParams(W.SINGLE_ZERO))
    assert out.final.position == 3
    assert out.final.number == r.WHEEL_ORDER[W.SINGLE_ZERO][3]
    assert raw.remaining == 0


def test_double_zero_as_single_zero_keeps_voided_spins(scripted) -> None:  # type: ignore[no-untyped-def]
    src, raw = scripted([19, 19, 0])
    out = r.draw(src, r.SpinParams(W.DOUBLE_ZERO_AS_SINGLE_ZERO))
    assert [s.number for s in out.spins] == ["00", "00", "0"]
    assert [s.voided for s in out.spins] == [True, True, False]
    assert out.final == out.spins[-1]
    assert raw.remaining == 0
    rec = out.to_record()
    assert rec["final"] == {"number": "0", "colour": "green", "position": 0, "voided": False}
    assert len(rec["spins"]) == 3  # type: ignore[arg-type]


def test_double_zero_wheel_does_not_void_00(scripted) -> None:  # type: ignore[no-untyped-def]
    src, _ = scripted([19])
    out = r.draw(src, r.SpinParams(W.DOUBLE_ZERO))
    assert out.final.number == "00"
    assert not out.final.voided


def test_respin_bound_fails_closed(scripted) -> None:  # type: ignore[no-untyped-def]
    src, raw = scripted([19] * r.MAX_VOIDED_SPINS)
    with pytest.raises(RespinLimitExceeded):
        r.draw(src, r.SpinParams(W.DOUBLE_ZERO_AS_SINGLE_ZERO))
    assert raw.remaining == 0
    src, _ = scripted([19] * (r.MAX_VOIDED_SPINS - 1) + [5])
    out = r.draw(src, r.SpinParams(W.DOUBLE_ZERO_AS_SINGLE_ZERO))
    assert len(out.spins) == r.MAX_VOIDED_SPINS


def test_neighbours() -> None:
    assert r.neighbours(W.DOUBLE_ZERO, "1", 2) == ("36", "13", "1", "00", "27")
    assert r.neighbours(W.SINGLE_ZERO, "0", 2) == ("3", "26", "0", "32", "15")
    assert r.neighbours(W.SINGLE_ZERO, "26", 0) == ("26",)
    assert r.neighbours("double_zero", "00", 1) == ("1", "00", "27")  # type: ignore[arg-type]
    assert len(set(r.neighbours(W.SINGLE_ZERO, "7", 18))) == 37
    assert len(set(r.neighbours(W.DOUBLE_ZERO, "7", 18))) == 37


@pytest.mark.parametrize(
    ("wheel", "number", "k", "field"),
    [
        (W.SINGLE_ZERO, "00", 2, "number"),
        (W.SINGLE_ZERO, "37", 2, "number"),
        (W.SINGLE_ZERO, "7", 19, "k"),
        (W.DOUBLE_ZERO, "7", -1, "k"),
    ],
)
def test_neighbours_bad_arguments(wheel, number, k, field) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgument) as exc:
        r.neighbours(wheel, number, k)
    assert exc.value.field == field
    assert exc.value.allowed


def test_helpers() -> None:
    assert r.colour_of("00") == "green"
    assert r.colour_of("32") == "red"
    assert r.colour_of("26") == "black"
    assert r.pocket_value("00") == 0
    assert r.pocket_value("18") == 18
    assert r.roulette_up_rank("0") < r.roulette_up_rank("00") < r.roulette_up_rank("1")
    with pytest.raises(InvalidArgument):
        r.colour_of("x")


def test_params_parse_and_record() -> None:
    p = r.SpinParams.parse({"wheel": "double_zero_as_single_zero"})
    assert p.wheel is W.DOUBLE_ZERO_AS_SINGLE_ZERO
    assert p.to_record() == {"wheel": "double_zero_as_single_zero"}
    with pytest.raises(InvalidArgument) as exc:
        r.SpinParams.parse({"wheel": "triple_zero"})
    assert exc.value.field == "wheel"
    assert "single_zero" in exc.value.allowed
    with pytest.raises(InvalidArgument):
        r.SpinParams("single_zero")  # type: ignore[arg-type]


def test_exact_distributions() -> None:
    d = r.distribution(r.SpinParams(W.DOUBLE_ZERO_AS_SINGLE_ZERO))
    assert len(d) == 37
    assert "00" not in d
    assert sum(d.values()) == 1
    assert r.distribution(r.SpinParams(W.DOUBLE_ZERO))["00"] == Fraction(1, 38)
    v = r.void_count_distribution(r.SpinParams(W.DOUBLE_ZERO_AS_SINGLE_ZERO))
    assert 1 - sum(v.values()) == Fraction(1, 38) ** r.MAX_VOIDED_SPINS
    assert r.void_count_distribution(r.SpinParams(W.SINGLE_ZERO)) == {0: 1}


@pytest.mark.parametrize("wheel", list(W))
def test_distribution_chi_square(seeded, chi2_pvalue, chi2_alpha, wheel) -> None:  # type: ignore[no-untyped-def]
    src = seeded(f"roulette-{wheel.value}")
    params = r.SpinParams(wheel)
    n = 38_000
    finals: Counter[object] = Counter()
    voids: Counter[object] = Counter()
    for _ in range(n):
        out = r.draw(src, params)
        finals[out.final.number] += 1
        voids[len(out.spins) - 1] += 1
        assert out.final.colour == r.colour_of(out.final.number)
    assert chi2_pvalue(finals, r.distribution(params)) > chi2_alpha
    if wheel is not W.DOUBLE_ZERO_AS_SINGLE_ZERO:
        assert set(voids) == {0}
        return
    vd = r.void_count_distribution(params)
    vd_pooled: dict[object, object] = {k: p for k, p in vd.items() if k < 2}
    vd_pooled[2] = 1 - sum(p for k, p in vd.items() if k < 2)
    pooled: Counter[object] = Counter()
    for k, c in voids.items():
        pooled[min(int(str(k)), 2)] += c
    assert chi2_pvalue(pooled, vd_pooled) > chi2_alpha


@pytest.mark.parametrize("wheel", list(W))
def test_spin_at_takes_only_a_compartment_of_the_wheel(wheel: r.WheelType) -> None:
    size = len(r.WHEEL_ORDER[wheel])
    assert r.spin_at(wheel, size - 1).position == size - 1
    for position in (-1, size):
        with pytest.raises(ValueError, match=f"position {position} is not a compartment"):
            r.spin_at(wheel, position)
