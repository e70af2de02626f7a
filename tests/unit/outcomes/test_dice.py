"""Dice and Sic Bo (ch. 625a)."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from itertools import product

import pytest

from rng_service.errors import InvalidArgument
from rng_service.outcomes import dice as D


def test_sic_bo_exhaustive(scripted) -> None:  # type: ignore[no-untyped-def]
    combos: Counter[tuple[int, ...]] = Counter()
    totals: Counter[int] = Counter()
    for triple in product(range(6), repeat=3):
        src, raw = scripted(triple)
        out = D.draw(src, D.SIC_BO)
        assert raw.remaining == 0
        assert out.faces == tuple(v + 1 for v in triple)
        combos[tuple(sorted(out.faces))] += 1
        totals[out.total] += 1
    assert {k: Fraction(v, 216) for k, v in combos.items()} == D.combination_distribution(D.SIC_BO)
    assert {k: Fraction(v, 216) for k, v in totals.items()} == D.total_distribution(D.SIC_BO)
    assert len(D.combination_distribution(D.SIC_BO)) == 56


def test_rejected_bytes(scripted) -> None:  # type: ignore[no-untyped-def]
    # randbelow(6) accepts bytes below 252.
    src, raw = scripted([252, 255, 7])
    assert D.draw(src, D.DiceParams(1, 6)).faces == (2,)
    assert raw.remaining == 0


@pytest.mark.parametrize(
    ("count", "sides", "field"),
    [(0, 6, "count"), (101, 6, "count"), (3, 1, "sides"), (3, 1001, "sides"), (3, "6", "sides")],
)
def test_bad_params(count, sides, field) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgument) as exc:
        D.DiceParams(count, sides)
    assert exc.value.field == field
    assert ".." in exc.value.allowed


def test_record() -> None:
    assert D.DiceOutcome((1, 2, 3)).to_record() == {"faces": [1, 2, 3], "total": 6}
    assert D.DiceParams.parse({"count": 3, "sides": 6}) == D.SIC_BO


def test_sic_bo_chi_square(seeded, chi2_pvalue, chi2_alpha) -> None:  # type: ignore[no-untyped-def]
    src = seeded("sic-bo")
    combos: Counter[object] = Counter()
    faces: Counter[object] = Counter()
    for _ in range(30_000):
        out = D.draw(src, D.SIC_BO)
        combos[tuple(sorted(out.faces))] += 1
        faces.update(out.faces)
    assert chi2_pvalue(combos, D.combination_distribution(D.SIC_BO)) > chi2_alpha  # type: ignore[arg-type]
    assert chi2_pvalue(faces, D.face_distribution(D.SIC_BO)) > chi2_alpha  # type: ignore[arg-type]
