"""Generic uniform and weighted draws."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest

from rng_service.errors import InvalidArgument
from rng_service.outcomes import generic as G


def test_uniform_scripted(scripted) -> None:  # type: ignore[no-untyped-def]
    src, raw = scripted([0, 9, 3])
    assert G.draw_uniform(src, G.UniformParams(1, 10, 3)).values == (1, 10, 4)
    assert raw.remaining == 0
    # Without replacement: Fisher-Yates over [5..8]; zeros take them in order.
    src, raw = scripted([0, 0, 0])
    assert G.draw_uniform(src, G.UniformParams(5, 8, 4, True)).values == (5, 6, 7, 8)
    assert raw.remaining == 0


def test_draw_dispatches(scripted) -> None:  # type: ignore[no-untyped-def]
    src, _ = scripted([4, 1])
    assert G.draw(src, G.UniformParams(0, 9)) == G.UniformOutcome((4,))
    assert G.draw(src, G.WeightedParams((1, 1))) == G.WeightedOutcome((1,))


def test_weighted_exhaustive(scripted) -> None:  # type: ignore[no-untyped-def]
    params = G.WeightedParams((1, 2, 3))
    counts: Counter[int] = Counter()
    for b in range(252):  # randbelow(6) accepts 0..251
        src, _ = scripted([b])
        counts[G.draw_weighted(src, params).indices[0]] += 1
    assert {i: Fraction(n, 252) for i, n in counts.items()} == G.weighted_distribution(params)


@pytest.mark.parametrize(
    ("kwargs", "field", "allowed"),
    [
        ({"low": 5, "high": 4}, "high", "5.."),
        ({"low": 1, "high": 10, "count": 11, "distinct": True}, "count", "1..10"),
        ({"low": 1, "high": 10, "count": 0}, "count", "1..10000"),
        ({"low": 0, "high": 2**40, "count": 2, "distinct": True}, "high", "high - low + 1"),
        ({"low": 0, "high": 2**63}, "high", ""),
        ({"low": 0, "high": 1, "distinct": 1}, "distinct", "true, false"),
    ],
)
def test_bad_uniform_params(kwargs, field, allowed) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgument) as exc:
        G.UniformParams(**kwargs)
    assert exc.value.field == field
    assert allowed in exc.value.allowed


@pytest.mark.parametrize(
    ("weights", "count", "field"),
    [((), 1, "weights"), ((1, 0), 1, "weights[1]"), ((1, -2), 1, "weights[1]"), ((1,), 0, "count")],
)
def test_bad_weighted_params(weights, count, field) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgument) as exc:
        G.WeightedParams(weights, count)
    assert exc.value.field == field


def test_parse_and_records() -> None:
    p = G.UniformParams.parse({"low": -3, "high": 3, "count": 2})
    assert p.to_record() == {"low": -3, "high": 3, "count": 2, "distinct": False}
    w = G.WeightedParams.parse({"weights": [3, 1]})
    assert w.to_record() == {"weights": [3, 1], "count": 1}
    with pytest.raises(InvalidArgument):
        G.WeightedParams.parse({"weights": "31"})


def test_chi_square(seeded, chi2_pvalue, chi2_alpha) -> None:  # type: ignore[no-untyped-def]
    src = seeded("generic")
    up = G.UniformParams(-5, 30, 10_000)
    counts: Counter[object] = Counter(G.draw_uniform(src, up).values)
    counts.update(G.draw_uniform(src, up).values)
    exact = {v: G.uniform_distribution(up) for v in range(-5, 31)}
    assert chi2_pvalue(counts, exact) > chi2_alpha  # type: ignore[arg-type]
    dp = G.UniformParams(0, 99, 10, True)
    firsts: Counter[object] = Counter()
    for _ in range(5_000):
        vals = G.draw_uniform(src, dp).values
        assert len(set(vals)) == 10
        firsts.update(vals)
    assert chi2_pvalue(firsts, {v: Fraction(1, 100) for v in range(100)}) > chi2_alpha
    wp = G.WeightedParams((1, 5, 10, 300, 7), 10_000)
    wc: Counter[object] = Counter(G.draw_weighted(src, wp).indices)
    assert chi2_pvalue(wc, G.weighted_distribution(wp)) > chi2_alpha  # type: ignore[arg-type]
