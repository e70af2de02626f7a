"""Multi-ball draws: Blazing 7's bonus round (617c.2(f)-(i))."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from itertools import permutations

import pytest

from rng_service.errors import InvalidArgument
from rng_service.outcomes import multiball as MB
from rng_service.outcomes.roulette import WHEEL_ORDER, WheelType

W = WheelType


def test_scripted(scripted) -> None:  # type: ignore[no-untyped-def]
    src, raw = scripted([0, 0, 0])
    out = MB.draw(src, MB.MultiBallParams(W.DOUBLE_ZERO, 3))
    assert out.numbers() == ("0", "28", "9")
    assert [b.position for b in out.balls] == [0, 1, 2]
    assert raw.remaining == 0
    # randbelow(38) = 37 swaps position 0 with 37; then randbelow(37) = 36 takes old position 0.
    src, _ = scripted([37, 36])
    out = MB.draw(src, MB.MultiBallParams(W.DOUBLE_ZERO, 2))
    assert out.numbers() == ("2", "0")


def test_exhaustive_two_balls_are_uniform_pairs(scripted) -> None:  # type: ignore[no-untyped-def]
    params = MB.MultiBallParams(W.SINGLE_ZERO, 2)
    pairs: Counter[frozenset[str]] = Counter()
    for a in range(37):
        for b in range(36):
            src, _ = scripted([a, b])
            out = MB.draw(src, params)
            assert len(set(out.numbers())) == 2
            pairs[frozenset(out.numbers())] += 1
    assert len(pairs) == 666
    assert set(pairs.values()) == {2}
    assert MB.set_probability(params) == Fraction(1, 666)


def test_all_balls_fill_the_wheel(seeded) -> None:  # type: ignore[no-untyped-def]
    out = MB.draw(seeded("multiball-all"), MB.MultiBallParams(W.DOUBLE_ZERO, 38))
    assert sorted(out.numbers()) == sorted(WHEEL_ORDER[W.DOUBLE_ZERO])


@pytest.mark.parametrize(
    ("wheel", "balls", "field"),
    [
        (W.SINGLE_ZERO, 0, "balls"),
        (W.SINGLE_ZERO, 38, "balls"),
        (W.DOUBLE_ZERO, 39, "balls"),
        (W.DOUBLE_ZERO_AS_SINGLE_ZERO, 3, "wheel"),
    ],
)
def test_bad_params(wheel, balls, field) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgument) as exc:
        MB.MultiBallParams(wheel, balls)
    assert exc.value.field == field
    assert exc.value.allowed


def test_the_refused_wheel_is_named_by_its_value_never_its_repr() -> None:
    with pytest.raises(InvalidArgument) as exc:
        MB.MultiBallParams(W.DOUBLE_ZERO_AS_SINGLE_ZERO, 3)
    assert str(exc.value) == (
        "wheel: unsupported wheel double_zero_as_single_zero for a multi-ball draw "
        "(allowed: single_zero, double_zero)"
    )


def test_parse_and_record() -> None:
    p = MB.MultiBallParams.parse({"wheel": "single_zero", "balls": 3})
    assert p.to_record() == {"wheel": "single_zero", "balls": 3}


def test_hit_count_distribution() -> None:
    d = MB.hit_count_distribution(MB.MultiBallParams(W.SINGLE_ZERO, 3))
    assert d[3] == Fraction(1, 7770)
    assert sum(d.values()) == 1
    with pytest.raises(InvalidArgument):
        MB.hit_count_distribution(MB.MultiBallParams(W.SINGLE_ZERO, 3), ["00"])


def test_all_one_colour_probability(scripted) -> None:  # type: ignore[no-untyped-def]
    params = MB.MultiBallParams(W.SINGLE_ZERO, 3)
    d = MB.all_one_colour_probability(params)
    assert d == {"black": Fraction(816, 7770), "green": Fraction(0), "red": Fraction(816, 7770)}
    # Exhaustive over every accepted 3-ball draw of a single zero wheel (37 * 36 * 35).
    same = 0
    for a in range(37):
        for b in range(36):
            for c in range(35):
                src, _ = scripted([a, b, c])
                colours = {ball.colour for ball in MB.draw(src, params).balls}
                same += colours == {"red"}
    assert Fraction(same, 37 * 36 * 35) == d["red"]


def test_chi_square(seeded, chi2_pvalue, chi2_alpha) -> None:  # type: ignore[no-untyped-def]
    src = seeded("blazing-7s")
    params = MB.MultiBallParams(W.DOUBLE_ZERO, 3)
    hits: Counter[object] = Counter()
    numbers: Counter[object] = Counter()
    ordered: Counter[object] = Counter()
    sevens = set(MB.BLAZING_7S_NUMBERS)
    for _ in range(30_000):
        out = MB.draw(src, params)
        nums = out.numbers()
        assert len(set(nums)) == 3
        hits[len(sevens & set(nums))] += 1
        numbers.update(nums)
        ordered[nums[0]] += 1
    assert chi2_pvalue(hits, MB.hit_count_distribution(params)) > chi2_alpha  # type: ignore[arg-type]
    incl = MB.number_inclusion_probability(params)
    assert chi2_pvalue(numbers, {n: p / 3 for n, p in incl.items()}) > chi2_alpha
    assert chi2_pvalue(ordered, {n: Fraction(1, 38) for n in incl}) > chi2_alpha
    assert len(list(permutations(range(3)))) == 6
