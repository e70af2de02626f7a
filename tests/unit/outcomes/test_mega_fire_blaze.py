"""Mega Fire Blaze: Fire Numbers (617b.7(e)), bonus game (617b.7(g)), jackpot tiers, return."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest

from rng_service.errors import InvalidArgument
from rng_service.outcomes import fire_numbers as F
from rng_service.outcomes import jackpot as J
from rng_service.outcomes import mega_fire_blaze as M
from rng_service.outcomes import profiles as P

PROFILE = P.load_builtin_profile("mega_fire_blaze_example")

# Byte that makes weighted_index pick each value (weights sum to 100: one byte per draw).
DESIGNATION = {"x2": 0, "x3": 40, "x5": 70, "jackpot": 85}
MULTIPLIER = {1: 0, 2: 50, 3: 70, 4: 80, 5: 87, 10: 93, 15: 97, 50: 99}
TIER = {"mini": 0, "minor": 70, "major": 90, "grand": 98}

#: Exact theoretical returns of the example profile (docs/outcomes.md).
EXAMPLE_RETURNS = {
    "straight_up": Fraction(4969819168402697795411356047, 5120060000000000000000000000),
    "split": Fraction(616372750797968026701301885223, 634887440000000000000000000000),
    "street": Fraction(1234639075878285925945228189077, 1269774880000000000000000000000),
    "corner": Fraction(307529458874883445358285279667, 317443720000000000000000000000),
    "line": Fraction(3088562242921845561419748845541, 3174437200000000000000000000000),
}


def test_fire_numbers_scripted(scripted) -> None:  # type: ignore[no-untyped-def]
    src, raw = scripted([0, 7])
    out = F.draw(src, F.FireNumberParams(PROFILE))
    assert out == F.FireNumberOutcome(count=1, numbers=("7",))
    assert raw.remaining == 0
    # Byte 99 -> count 10; ten zero bytes take 0, 1, ..., 9 in order.
    src, raw = scripted([99] + [0] * 10)
    out = F.draw(src, F.FireNumberParams(PROFILE))
    assert out.numbers == tuple(str(n) for n in range(10))
    assert out.to_record() == {"count": 10, "numbers": [str(n) for n in range(10)]}
    assert raw.remaining == 0


def test_fire_count_exhaustive(scripted) -> None:  # type: ignore[no-untyped-def]
    # randbelow(100) accepts bytes 0..199; over all of them each count appears 2 * weight times.
    counts: Counter[int] = Counter()
    for b in range(200):
        src, _ = scripted([b, *range(10)])
        counts[F.draw(src, F.FireNumberParams(PROFILE)).count] += 1
    dist = F.count_distribution(F.FireNumberParams(PROFILE))
    assert {c: Fraction(n, 200) for c, n in counts.items()} == dist


def test_fire_numbers_chi_square(seeded, chi2_pvalue, chi2_alpha) -> None:  # type: ignore[no-untyped-def]
    src = seeded("fire-numbers")
    params = F.FireNumberParams(PROFILE)
    counts: Counter[object] = Counter()
    numbers: Counter[object] = Counter()
    for _ in range(20_000):
        out = F.draw(src, params)
        assert len(set(out.numbers)) == out.count
        counts[out.count] += 1
        numbers.update(out.numbers)
    assert chi2_pvalue(counts, F.count_distribution(params)) > chi2_alpha
    uniform = {n: Fraction(1, 37) for n in F.LAYOUT}
    assert chi2_pvalue(numbers, uniform) > chi2_alpha
    assert sum(F.number_inclusion_probability(params).values()) == sum(
        c * p for c, p in F.count_distribution(params).items()
    )


def test_jackpot_exhaustive_and_record(scripted) -> None:  # type: ignore[no-untyped-def]
    tiers: Counter[str] = Counter()
    for b in range(200):
        src, _ = scripted([b])
        out = J.draw(src, J.JackpotParams(PROFILE))
        assert out.value == P.JACKPOT_TIERS[out.tier]
        tiers[out.tier] += 1
    assert {t: Fraction(n, 200) for t, n in tiers.items()} == J.distribution(
        J.JackpotParams(PROFILE)
    )
    src, _ = scripted([98])
    assert J.draw(src, J.JackpotParams(PROFILE)).to_record() == {"tier": "grand", "value": 2000}


def test_bonus_single_cell(scripted) -> None:  # type: ignore[no-untyped-def]
    src, raw = scripted([DESIGNATION["x5"]] * 6 + [13, MULTIPLIER[15]])
    out = M.draw(src, M.BonusParams(PROFILE, 1))
    assert raw.remaining == 0
    assert out.fill_order == (13,)
    assert out.cells[13] == M.Cell(index=13, segment=2, multiplier=15, value=15)
    assert all(c.multiplier is None and c.value == 0 for c in out.cells if c.index != 13)
    assert [s.designation for s in out.segments] == ["x5"] * 6
    assert not any(s.complete for s in out.segments)
    assert out.total == 15
    assert dict(out.odds) == {
        "straight_up": 405,
        "split": 191,
        "street": 116,
        "corner": 71,
        "line": 29,
    }


def test_bonus_complete_multiplier_segment(scripted) -> None:  # type: ignore[no-untyped-def]
    # Segment 0 is x5; ten zero bytes fill cells 0..9 (segment 0 complete, segment 1 four cells).
    designations = [DESIGNATION[d] for d in ("x5", "jackpot", "x2", "x2", "x3", "x3")]
    mults = [MULTIPLIER[1]] * 6 + [MULTIPLIER[2]] * 4
    src, raw = scripted(designations + [0] * 10 + mults)
    out = M.draw(src, M.BonusParams(PROFILE, 10))
    assert raw.remaining == 0
    assert out.fill_order == tuple(range(10))
    assert [c.value for c in out.cells[:10]] == [5] * 6 + [2] * 4
    assert out.segments[0].complete
    assert not out.segments[1].complete
    assert out.segments[1].jackpot_tier is None
    assert out.total == 38


def test_bonus_complete_jackpot_segment(scripted) -> None:  # type: ignore[no-untyped-def]
    src, raw = scripted(
        [DESIGNATION["jackpot"]] * 6 + [0] * 10 + [MULTIPLIER[50]] * 10 + [TIER["grand"]]
    )
    out = M.draw(src, M.BonusParams(PROFILE, 10))
    assert raw.remaining == 0
    assert out.segments[0].jackpot_tier == "grand"
    assert out.segments[0].jackpot_value == 2000
    # The jackpot does not multiply the segment's cells (617b.7(g)(5)(ii)).
    assert [c.value for c in out.cells[:6]] == [50] * 6
    assert out.total == 10 * 50 + 2000
    odds = dict(out.odds)
    assert odds["straight_up"] == 5999
    assert odds["line"] == 999
    rec = out.to_record()
    assert rec["total"] == 2500
    assert len(rec["cells"]) == 36  # type: ignore[arg-type]


def test_bonus_params_refuse_counts_outside_the_profile() -> None:
    for bad in (0, 6, 11, True, "3"):
        with pytest.raises(InvalidArgument) as exc:
            M.BonusParams(PROFILE, bad)  # type: ignore[arg-type]
        assert exc.value.field == "fire_number_count"
        assert exc.value.allowed == "1, 2, 3, 4, 5, 10"
    assert M.BonusParams(PROFILE, 10).to_record() == {
        "profile": PROFILE.id.to_record(),
        "fire_number_count": 10,
    }


@pytest.mark.parametrize("c", [1, 2, 3, 4, 5])
def test_total_distribution_without_complete_segments(c: int) -> None:
    # Fewer than six cells never complete a segment: the total is a sum of c multipliers.
    conv: dict[int, Fraction] = {0: Fraction(1)}
    for _ in range(c):
        nxt: dict[int, Fraction] = {}
        for t, p in conv.items():
            for m, q in PROFILE.multipliers.distribution().items():
                nxt[t + m] = nxt.get(t + m, Fraction(0)) + p * q
        conv = nxt
    assert M.total_distribution(PROFILE, c) == conv


@pytest.mark.parametrize("c", [3, 10])
def test_bonus_total_chi_square(seeded, chi2_pvalue, chi2_alpha, c: int) -> None:  # type: ignore[no-untyped-def]
    src = seeded(f"bonus-{c}")
    params = M.BonusParams(PROFILE, c)
    totals: Counter[object] = Counter()
    for _ in range(20_000):
        totals[M.draw(src, params).total] += 1
    exact = M.total_distribution(PROFILE, c)
    assert sum(exact.values()) == 1
    assert chi2_pvalue(totals, exact) > chi2_alpha  # type: ignore[arg-type]


def test_example_profile_returns() -> None:
    for bet, expected in EXAMPLE_RETURNS.items():
        rtp = M.return_to_player(PROFILE, bet)
        assert rtp == expected, bet
        assert rtp <= Fraction(36, 37)
    with pytest.raises(InvalidArgument):
        M.return_to_player(PROFILE, "dozen")


def test_odds_distribution_within_regulation_range() -> None:
    for bet, (low, high) in P.PAYOUT_RANGES.items():
        d = M.odds_distribution(PROFILE, 10, bet)
        assert sum(d.values()) == 1
        assert min(d) >= low
        assert max(d) <= high


def _shuffled_profile(mode: str, layout: tuple[str, ...]) -> P.MegaFireBlazeProfile:
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    text = (root / "rng_service" / "profiles" / "mega_fire_blaze_example.toml").read_text()
    old = (
        'mode = "independent"\ndesignations = ["x2", "x3", "x5", "jackpot"]\n'
        "weights = [40, 30, 15, 15]"
    )
    quoted = ", ".join(f'"{d}"' for d in layout)
    new = f'mode = "{mode}"\nlayout = [{quoted}]'
    return P.parse_profile(text.replace(old, new).encode(), f"{mode}.toml")


def test_total_distribution_by_fill_count_enumeration() -> None:
    """Cross-check the dynamic programme against a direct sum over fill-count vectors."""
    from collections import Counter as Multiset
    from itertools import combinations_with_replacement
    from math import comb, factorial, prod

    c = 10
    mult = PROFILE.multipliers.distribution()
    designation = PROFILE.segments.weights.distribution()  # type: ignore[union-attr]
    tiers = {P.JACKPOT_TIERS[t]: p for t, p in PROFILE.jackpot.distribution().items()}

    def conv(a: dict[int, Fraction], b: dict[int, Fraction]) -> dict[int, Fraction]:
        out: dict[int, Fraction] = {}
        for x, p in a.items():
            for y, q in b.items():
                out[x + y] = out.get(x + y, Fraction(0)) + p * q
        return out

    sums = [{0: Fraction(1)}]
    for _ in range(6):
        sums.append(conv(sums[-1], mult))
    full: dict[int, Fraction] = {}
    for d, pd in designation.items():
        factor = P.SEGMENT_DESIGNATIONS[d]
        part = (
            conv(sums[6], tiers) if factor is None else {v * factor: p for v, p in sums[6].items()}
        )
        for v, p in part.items():
            full[v] = full.get(v, Fraction(0)) + pd * p
    # Segments are exchangeable here (independent designations), so sum over sorted fill
    # vectors times the number of their arrangements.
    expected: dict[int, Fraction] = {}
    for fill in combinations_with_replacement(range(7), 6):
        if sum(fill) != c:
            continue
        arrangements = factorial(6) // prod(factorial(m) for m in Multiset(fill).values())
        weight = Fraction(arrangements * prod(comb(6, n) for n in fill), comb(36, c))
        dist: dict[int, Fraction] = {0: Fraction(1)}
        for n in fill:
            if n:
                dist = conv(dist, full if n == 6 else sums[n])
        for v, p in dist.items():
            expected[v] = expected.get(v, Fraction(0)) + weight * p
    assert M.total_distribution(PROFILE, c) == expected


def test_shuffled_designations_average_the_fixed_layouts() -> None:
    from itertools import permutations

    layout = ("x2", "x2", "x2", "x2", "x2", "jackpot")
    shuffled = M.total_distribution(_shuffled_profile("shuffled", layout), 10)
    perms = sorted(set(permutations(layout)))
    average: dict[int, Fraction] = {}
    for perm in perms:
        for v, p in M.total_distribution(_shuffled_profile("fixed", perm), 10).items():
            average[v] = average.get(v, Fraction(0)) + p / len(perms)
    assert shuffled == average


def test_shuffled_mode_chi_square(seeded, chi2_pvalue, chi2_alpha) -> None:  # type: ignore[no-untyped-def]
    profile = _shuffled_profile("shuffled", ("x2", "x2", "x3", "x5", "jackpot", "jackpot"))
    src = seeded("bonus-shuffled")
    params = M.BonusParams(profile, 10)
    totals: Counter[object] = Counter()
    designations: Counter[object] = Counter()
    for _ in range(10_000):
        out = M.draw(src, params)
        totals[out.total] += 1
        designations[out.segments[0].designation] += 1
        assert sorted(s.designation for s in out.segments) == sorted(profile.segments.layout)
    assert chi2_pvalue(totals, M.total_distribution(profile, 10)) > chi2_alpha  # type: ignore[arg-type]
    first = {
        "x2": Fraction(1, 3),
        "x3": Fraction(1, 6),
        "x5": Fraction(1, 6),
        "jackpot": Fraction(1, 3),
    }
    assert chi2_pvalue(designations, first) > chi2_alpha  # type: ignore[arg-type]


def test_fixed_mode_draws_nothing_for_designations(scripted) -> None:  # type: ignore[no-untyped-def]
    profile = _shuffled_profile("fixed", ("x5", "x2", "x2", "x3", "x3", "jackpot"))
    src, raw = scripted([0, MULTIPLIER[4]])
    out = M.draw(src, M.BonusParams(profile, 1))
    assert raw.remaining == 0
    assert [s.designation for s in out.segments] == ["x5", "x2", "x2", "x3", "x3", "jackpot"]
    assert out.total == 4
