"""Mega Fire Blaze bonus game (58 Pa. Code 617b.7(g)) and its exact distribution and return.

Owns: one bonus game on the 36-cell grid of six six-cell segments (617b.7(g)(1)); segment
designations with a special multiplier 2, 3 or 5 or a jackpot (617b.7(g)(2), (8)); as many
filled cells as there were Fire Numbers in the round (617b.7(g)(3), (4)), each with a random
multiplier from 1, 2, 3, 4, 5, 10, 15, 50 (617b.7(g)(7)); a completely filled segment
multiplying its cells by its special multiplier, or for a jackpot segment drawing the tier
Mini 20, Minor 100, Major 500 or Grand 2,000 that is added, not multiplied (617b.7(g)(5)); the
total (617b.7(g)(6)) and the payout odds per bet type from the profile, within 617b.7(g)(9).

The Fire Number count is an input (``fire_number_count``) that the service takes from the
logged Fire Number draw of the same round (``fire_numbers``), never from the client.

Grid: cell ``i`` (0..35) lies in segment ``i // 6`` (a fixed layout, not a random mapping).
Draw order (docs/outcomes.md):

1. designations, by the profile's segment mode: ``independent``: six
   ``weighted_index(designation weights)`` calls, segment 0 first; ``shuffled``: one
   ``shuffle(layout)``; ``fixed``: nothing;
2. cells: ``sample(range(36), fire_number_count)``, in draw order;
3. multipliers: one ``weighted_index(multiplier weights)`` per chosen cell, in that order;
4. jackpot tiers: one ``weighted_index(tier weights)`` per completely filled jackpot segment,
   in segment index order.

Must not: use floats, ``%`` on random values, I/O, or a generator other than ``src``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from math import comb
from typing import TYPE_CHECKING

from rng_service.errors import InvalidArgument
from rng_service.outcomes._common import JsonValue, allowed_list
from rng_service.outcomes.profiles import (
    BASE_ODDS,
    BET_NUMBERS,
    BET_TYPES,
    FIRE_NUMBER_COUNTS,
    JACKPOT_TIERS,
    SEGMENT_DESIGNATIONS,
    MegaFireBlazeProfile,
)

if TYPE_CHECKING:
    from rng_service.sampling import RandomSource

__all__ = [
    "CELLS",
    "SEGMENTS",
    "SEGMENT_SIZE",
    "BonusOutcome",
    "BonusParams",
    "Cell",
    "Segment",
    "draw",
    "odds_distribution",
    "return_to_player",
    "total_distribution",
]

SEGMENTS = 6
SEGMENT_SIZE = 6
CELLS = SEGMENTS * SEGMENT_SIZE
_SINGLE_ZERO_NUMBERS = 37


@dataclass(frozen=True, slots=True)
class BonusParams:
    """A bonus game under ``profile`` after a round with ``fire_number_count`` Fire Numbers."""

    profile: MegaFireBlazeProfile
    fire_number_count: int

    def __post_init__(self) -> None:
        c = self.fire_number_count
        allowed = self.profile.fire_counts.values
        if isinstance(c, bool) or not isinstance(c, int) or c not in allowed:
            raise InvalidArgument(
                "fire_number_count",
                f"{c!r} is not a Fire Number count of profile {self.profile.id.name}",
                allowed=allowed_list(v for v in FIRE_NUMBER_COUNTS if v in allowed),
            )

    def to_record(self) -> dict[str, JsonValue]:
        return {"profile": self.profile.id.to_record(), "fire_number_count": self.fire_number_count}


@dataclass(frozen=True, slots=True)
class Cell:
    """One grid cell: its random multiplier (None if unfilled) and value after its segment."""

    index: int
    segment: int
    multiplier: int | None
    value: int

    def to_record(self) -> dict[str, JsonValue]:
        return {
            "index": self.index,
            "segment": self.segment,
            "multiplier": self.multiplier,
            "value": self.value,
        }


@dataclass(frozen=True, slots=True)
class Segment:
    """One segment: designation, whether all six cells are filled, jackpot tier if won."""

    index: int
    designation: str
    complete: bool
    jackpot_tier: str | None
    jackpot_value: int

    def to_record(self) -> dict[str, JsonValue]:
        return {
            "index": self.index,
            "designation": self.designation,
            "complete": self.complete,
            "jackpot_tier": self.jackpot_tier,
            "jackpot_value": self.jackpot_value,
        }


@dataclass(frozen=True, slots=True)
class BonusOutcome:
    """Every cell, every segment, the fill order, the total multiplier and odds per bet."""

    fire_number_count: int
    cells: tuple[Cell, ...]
    segments: tuple[Segment, ...]
    fill_order: tuple[int, ...]
    total: int
    odds: tuple[tuple[str, int], ...]

    def to_record(self) -> dict[str, JsonValue]:
        return {
            "fire_number_count": self.fire_number_count,
            "cells": [c.to_record() for c in self.cells],
            "segments": [s.to_record() for s in self.segments],
            "fill_order": list(self.fill_order),
            "total": self.total,
            "odds": dict(self.odds),
        }


def _designations(src: RandomSource, profile: MegaFireBlazeProfile) -> tuple[str, ...]:
    rule = profile.segments
    if rule.mode == "independent":
        weights = rule.independent_weights()
        return tuple(weights.draw(src) for _ in range(SEGMENTS))
    if rule.mode == "shuffled":
        return tuple(src.shuffle(rule.layout))
    return rule.layout


def draw(src: RandomSource, params: BonusParams) -> BonusOutcome:
    """Play one bonus game."""
    profile = params.profile
    designations = _designations(src, profile)
    fill_order = tuple(src.sample(range(CELLS), params.fire_number_count))
    multipliers = {cell: profile.multipliers.draw(src) for cell in fill_order}
    segments: list[Segment] = []
    seg_factor: list[int] = []
    for s, designation in enumerate(designations):
        complete = all(s * SEGMENT_SIZE + j in multipliers for j in range(SEGMENT_SIZE))
        factor = SEGMENT_DESIGNATIONS[designation]
        tier: str | None = None
        if complete and factor is None:
            tier = profile.jackpot.draw(src)
        seg_factor.append(factor if complete and factor is not None else 1)
        segments.append(
            Segment(
                index=s,
                designation=designation,
                complete=complete,
                jackpot_tier=tier,
                jackpot_value=JACKPOT_TIERS[tier] if tier is not None else 0,
            )
        )
    cells = tuple(
        Cell(
            index=i,
            segment=i // SEGMENT_SIZE,
            multiplier=multipliers.get(i),
            value=multipliers.get(i, 0) * seg_factor[i // SEGMENT_SIZE],
        )
        for i in range(CELLS)
    )
    total = sum(c.value for c in cells) + sum(s.jackpot_value for s in segments)
    odds = tuple((bet, profile.payout(bet).odds(total)) for bet in BET_TYPES)
    return BonusOutcome(
        fire_number_count=params.fire_number_count,
        cells=cells,
        segments=tuple(segments),
        fill_order=fill_order,
        total=total,
        odds=odds,
    )


def _convolve(a: Mapping[int, int], b: Mapping[int, int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for x, p in a.items():
        for y, q in b.items():
            out[x + y] = out.get(x + y, 0) + p * q
    return out


def total_distribution(
    profile: MegaFireBlazeProfile, fire_number_count: int
) -> dict[int, Fraction]:
    """Exact distribution of the bonus total for ``fire_number_count`` filled cells.

    With ``n_s`` cells of segment ``s`` filled, P(n_0..n_5) = prod C(6, n_s) / C(36, c)
    (hypergeometric); given the counts, segments are independent: a segment with n < 6 cells
    adds the sum of n independent multipliers; a complete segment adds that sum times its
    special multiplier, or the sum plus a jackpot tier value. Computed by dynamic programming
    over segments in exact integer weights. For the ``shuffled`` segment mode the fixed layout
    is used: the fill counts per segment are exchangeable, so permuting the designations
    uniformly leaves the total's distribution unchanged.
    """
    c = BonusParams(profile, fire_number_count).fire_number_count
    return dict(_total_distribution(profile, c))


@lru_cache(maxsize=64)
def _total_distribution(profile: MegaFireBlazeProfile, c: int) -> tuple[tuple[int, Fraction], ...]:
    mult = dict(zip(profile.multipliers.values, profile.multipliers.weights, strict=True))
    w_total = profile.multipliers.total
    tiers = {
        JACKPOT_TIERS[t]: w
        for t, w in zip(profile.jackpot.values, profile.jackpot.weights, strict=True)
    }
    j_total = profile.jackpot.total
    rule = profile.segments
    if rule.mode == "independent":
        table = rule.independent_weights()
        seg_weights = [dict(zip(table.values, table.weights, strict=True))] * SEGMENTS
        d_total = table.total
    else:
        seg_weights = [{designation: 1} for designation in rule.layout]
        d_total = 1
    # sums[n]: integer weights of the sum of n multipliers, denominator w_total**n.
    sums: list[dict[int, int]] = [{0: 1}]
    for _ in range(SEGMENT_SIZE):
        sums.append(_convolve(sums[-1], mult))
    # Every segment contribution is scaled to the common denominator w_total**6 * d_total * j_total.
    unit = w_total**SEGMENT_SIZE * d_total * j_total
    partial = [
        {v: w * (unit // w_total**n) for v, w in sums[n].items()} for n in range(SEGMENT_SIZE)
    ]
    full_by_designation: dict[str, dict[int, int]] = {}
    for designation, factor in SEGMENT_DESIGNATIONS.items():
        if factor is None:
            full_by_designation[designation] = _convolve(sums[SEGMENT_SIZE], tiers)
        else:
            full_by_designation[designation] = {
                v * factor: w * j_total for v, w in sums[SEGMENT_SIZE].items()
            }
    # state: cells used so far -> (total -> weight); denominator unit**segments_done.
    state: dict[int, dict[int, int]] = {0: {0: 1}}
    for weights in seg_weights:
        full: dict[int, int] = {}
        for designation, dw in weights.items():
            for v, w in full_by_designation[designation].items():
                full[v] = full.get(v, 0) + dw * w
        nxt: dict[int, dict[int, int]] = {}
        for used, dist in state.items():
            for n in range(min(SEGMENT_SIZE, c - used) + 1):
                contrib = full if n == SEGMENT_SIZE else partial[n]
                ways = comb(SEGMENT_SIZE, n)
                target = nxt.setdefault(used + n, {})
                for v, w in _convolve(dist, contrib).items():
                    target[v] = target.get(v, 0) + w * ways
        state = nxt
    denominator = unit**SEGMENTS * comb(CELLS, c)
    return tuple((v, Fraction(w, denominator)) for v, w in sorted(state[c].items()))


def odds_distribution(
    profile: MegaFireBlazeProfile, fire_number_count: int, bet: str
) -> dict[int, Fraction]:
    """Exact distribution of the bonus odds ("to 1") for ``bet`` after ``fire_number_count``
    Fire Numbers: the total's distribution pushed through the profile's payout rule."""
    rule = profile.payout(bet)
    out: dict[int, Fraction] = {}
    for total, p in total_distribution(profile, fire_number_count).items():
        o = rule.odds(total)
        out[o] = out.get(o, Fraction(0)) + p
    return out


def return_to_player(profile: MegaFireBlazeProfile, bet: str) -> Fraction:
    """Exact theoretical return per unit staked on ``bet`` (an inside bet of 617b.7(f)).

    A bet covering m numbers wins with probability m/37. Given c Fire Numbers (a uniform
    c-subset of 0-36 independent of the spin) the winning number is a Fire Number with
    probability c/37, and then pays the bonus odds O(T_c) to 1; otherwise it pays the 617b.7(h)
    odds B to 1. So RTP = (m/37) * sum_c P(c) * [(1 - c/37)(B + 1) + (c/37) E(O(T_c) + 1)].
    """
    if bet not in BET_NUMBERS:
        raise InvalidArgument("bet", f"unknown bet type {bet!r}", allowed=allowed_list(BET_TYPES))
    m = BET_NUMBERS[bet]
    base_return = BASE_ODDS[bet] + 1
    total = Fraction(0)
    for c, pc in profile.fire_counts.distribution().items():
        bonus = sum(
            (p * (o + 1) for o, p in odds_distribution(profile, c, bet).items()), Fraction(0)
        )
        fire = Fraction(c, _SINGLE_ZERO_NUMBERS)
        total += pc * ((1 - fire) * base_return + fire * bonus)
    return Fraction(m, _SINGLE_ZERO_NUMBERS) * total
