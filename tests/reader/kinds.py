"""docs/outcomes.md, read as a specification: every outcome kind from a ``Source``.

``draw(kind, params, src)`` takes a log entry's ``kind`` and ``params`` (docs/outcomes-api.md,
"The RPCs and what they log") and returns the ``outcome`` record that entry must hold, drawn
with the documented sequence of sampling calls. ``deal`` rebuilds the hands of a dealing plan
from a shuffle record. Written from the documents alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tests.reader import profile as profiles
from tests.reader.sampling import Source

Record = dict[str, Any]

# -- roulette -------------------------------------------------------------------------------


def _order(text: str) -> list[str]:
    """A wheel order as docs/outcomes.md writes it (clockwise from 0, comma-separated)."""
    return text.split(", ")


SINGLE_ZERO_ORDER = _order(
    "0, 32, 15, 19, 4, 21, 2, 25, 17, 34, 6, 27, 13, 36, 11, 30, 8, 23, 10, "
    "5, 24, 16, 33, 1, 20, 14, 31, 9, 22, 18, 29, 7, 28, 12, 35, 3, 26"
)
DOUBLE_ZERO_ORDER = _order(
    "0, 28, 9, 26, 30, 11, 7, 20, 32, 17, 5, 22, 34, 15, 3, 24, "
    "36, 13, 1, 00, 27, 10, 25, 29, 12, 8, 19, 31, 18, 6, 21, 33, 16, 4, 23, 35, 14, 2"
)
WHEELS = {
    "single_zero": SINGLE_ZERO_ORDER,
    "double_zero": DOUBLE_ZERO_ORDER,
    "double_zero_as_single_zero": DOUBLE_ZERO_ORDER,
}
RED = {1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36}
MAX_VOIDS = 64


class RespinLimit(Exception):
    """64 voided 00 spins in a row: the documented fail-closed case."""


def colour(number: str) -> str:
    if number in ("0", "00"):
        return "green"
    return "red" if int(number) in RED else "black"


def _spin(order: list[str], p: int, voided: bool) -> Record:
    n = order[p]
    return {"number": n, "colour": colour(n), "position": p, "voided": voided}


def roulette_spin(src: Source, wheel: str) -> Record:
    order = WHEELS[wheel]
    spins = []
    while True:
        p = src.randbelow(len(order))
        voided = wheel == "double_zero_as_single_zero" and order[p] == "00"
        spins.append(_spin(order, p, voided))
        if not voided:
            break
        if len(spins) == MAX_VOIDS:
            raise RespinLimit
    return {"wheel": wheel, "spins": spins, "final": spins[-1]}


def multiball(src: Source, wheel: str, balls: int) -> Record:
    if wheel not in ("single_zero", "double_zero"):
        raise ValueError(wheel)
    order = WHEELS[wheel]
    positions = src.sample(range(len(order)), balls)
    return {"wheel": wheel, "balls": [_spin(order, p, voided=False) for p in positions]}


# -- Mega Fire Blaze ------------------------------------------------------------------------

LAYOUT = [str(i) for i in range(37)]
JACKPOT_VALUES = {"mini": 20, "minor": 100, "major": 500, "grand": 2000}
SPECIAL = {"x2": 2, "x3": 3, "x5": 5}


def fire_numbers(src: Source, prof: profiles.Profile) -> Record:
    count = prof.fire_counts[src.weighted_index(prof.fire_weights)]
    return {"count": count, "numbers": src.sample(LAYOUT, count)}


def jackpot_tier(src: Source, prof: profiles.Profile) -> Record:
    tier = prof.tiers[src.weighted_index(prof.tier_weights)]
    return {"tier": tier, "value": JACKPOT_VALUES[tier]}


def bonus(src: Source, prof: profiles.Profile, c: int) -> Record:
    # 1. designations
    if prof.segment_mode == "independent":
        designations = [
            prof.designations[src.weighted_index(prof.designation_weights)] for _ in range(6)
        ]
    elif prof.segment_mode == "shuffled":
        designations = src.shuffle(prof.designations)
    else:
        designations = list(prof.designations)
    # 2. cells
    fill_order = src.sample(range(36), c)
    # 3. multipliers, in fill order
    multiplier: dict[int, int] = {}
    for cell in fill_order:
        multiplier[cell] = prof.multipliers[src.weighted_index(prof.multiplier_weights)]
    # 4. jackpots of complete jackpot segments, in segment order
    complete = [all(6 * s + j in multiplier for j in range(6)) for s in range(6)]
    tiers: dict[int, str] = {}
    for s in range(6):
        if complete[s] and designations[s] == "jackpot":
            tiers[s] = prof.tiers[src.weighted_index(prof.tier_weights)]
    cells = []
    for i in range(36):
        s = i // 6
        m = multiplier.get(i)
        value = 0 if m is None else m
        if m is not None and complete[s] and designations[s] in SPECIAL:
            value = m * SPECIAL[designations[s]]
        cells.append({"index": i, "segment": s, "multiplier": m, "value": value})
    segments = [
        {
            "index": s,
            "designation": designations[s],
            "complete": complete[s],
            "jackpot_tier": tiers.get(s),
            "jackpot_value": JACKPOT_VALUES[tiers[s]] if s in tiers else 0,
        }
        for s in range(6)
    ]
    total = sum(c["value"] for c in cells) + sum(s["jackpot_value"] for s in segments)
    odds = {
        bet: min(max(total * factor // divisor, lo), hi)
        for bet, factor, divisor, lo, hi in prof.payouts
    }
    return {
        "fire_number_count": c,
        "cells": cells,
        "segments": segments,
        "fill_order": fill_order,
        "total": total,
        "odds": odds,
    }


# -- dice, cards, generic ---------------------------------------------------------------------


def dice(src: Source, count: int, sides: int) -> Record:
    faces = [1 + src.randbelow(sides) for _ in range(count)]
    return {"faces": faces, "total": sum(faces)}


RANKS = "23456789TJQKA"
SUITS = "CDHS"


def card_label(code: int) -> str:
    if code >= 52:
        return f"JK{code - 51}"
    return RANKS[code % 13] + SUITS[code // 13]


def canonical_shoe(decks: int, jokers: int) -> list[int]:
    shoe: list[int] = []
    for _ in range(decks):
        shoe += list(range(52)) + [52 + j for j in range(jokers)]
    return shoe


def card_shuffle(src: Source, decks: int, jokers: int) -> Record:
    cards = src.shuffle(canonical_shoe(decks, jokers))
    return {"decks": decks, "jokers": jokers, "cards": [card_label(c) for c in cards]}


def _players(n: int) -> list[str]:
    return [f"player{i}" for i in range(1, n + 1)]


#: Dealing plans as steps ("round" | "stack", targets, count); targets "players" expands.
PLANS: dict[str, list[tuple[str, tuple[str, ...], int]]] = {
    "four_card_poker": [("round", ("players", "dealer"), 5), ("round", ("dealer",), 1)],
    "four_card_poker_six_card_bonus": [
        ("round", ("six_card_bonus",), 1),
        ("round", ("players", "dealer"), 5),
        ("round", ("dealer",), 1),
    ],
    "let_it_ride_automated": [
        ("stack", ("players",), 3),
        ("stack", ("community",), 2),
        ("stack", ("discard",), 1),
    ],
    "let_it_ride_automated_six_card_bonus": [
        ("stack", ("players",), 3),
        ("stack", ("community",), 2),
        ("stack", ("discard",), 1),
        ("stack", ("six_card_bonus",), 3),
    ],
    "caribbean_stud_automated": [("stack", ("players",), 5), ("stack", ("dealer",), 5)],
}


def deal(shuffle: Mapping[str, Any], plan: str, players: int) -> Record:
    cards: list[str] = list(shuffle["cards"])
    hands: dict[str, list[int]] = {}
    order: list[str] = []
    index = 0

    def give(pos: str) -> None:
        nonlocal index
        if pos not in hands:
            hands[pos] = []
            order.append(pos)
        hands[pos].append(index)
        index += 1

    for how, targets, count in PLANS[plan]:
        expanded = [p for t in targets for p in (_players(players) if t == "players" else [t])]
        if how == "round":
            for _ in range(count):
                for pos in expanded:
                    give(pos)
        else:
            for pos in expanded:
                for _ in range(count):
                    give(pos)
    return {
        "plan": plan,
        "players": players,
        "hands": [
            {
                "position": pos,
                "cards": [cards[i] for i in hands[pos]],
                "shoe_indices": hands[pos],
            }
            for pos in order
        ],
        "next_index": index,
    }


def uniform_int(src: Source, low: int, high: int, count: int, distinct: bool) -> Record:
    if distinct:
        return {"values": src.sample(range(low, high + 1), count)}
    return {"values": [src.randint(low, high) for _ in range(count)]}


def weighted_choice(src: Source, weights: list[int], count: int) -> Record:
    return {"indices": [src.weighted_index(weights) for _ in range(count)]}


# -- batches ----------------------------------------------------------------------------------


def roulette_spin_batch(src: Source, wheel: str, count: int) -> Record:
    if wheel not in ("single_zero", "double_zero"):
        raise ValueError(wheel)
    order = WHEELS[wheel]
    return {"numbers": [order[p] for p in src.randbelow_batch(len(order), count)]}


def dice_roll_batch(src: Source, dice_count: int, sides: int, rolls: int) -> Record:
    return {"faces": [1 + v for v in src.randbelow_batch(sides, dice_count * rolls)]}


def uniform_int_batch(src: Source, low: int, high: int, count: int) -> Record:
    return {"values": [low + v for v in src.randbelow_batch(high - low + 1, count)]}


# -- by log entry kind ------------------------------------------------------------------------


Profiles = Mapping[str, profiles.Profile]


def _profile(params: Mapping[str, Any], known: Profiles) -> profiles.Profile:
    """The profile a record names: one of ``known`` (by name) or a shipped one."""
    p = params["profile"]
    name = p if isinstance(p, str) else p["name"]
    prof = known[name] if name in known else profiles.load(name)
    if not isinstance(p, str) and (p["version"], p["sha256"]) != (prof.version, prof.sha256):
        raise ValueError(f"profile {p} is not the one the reader holds")
    return prof


DRAWS: dict[str, Callable[[Source, Mapping[str, Any], Profiles], Record]] = {
    "roulette_spin": lambda s, p, _: roulette_spin(s, p["wheel"]),
    "multiball": lambda s, p, _: multiball(s, p["wheel"], p["balls"]),
    "fire_numbers": lambda s, p, k: fire_numbers(s, _profile(p, k)),
    "mega_fire_blaze_bonus": lambda s, p, k: bonus(s, _profile(p, k), p["fire_number_count"]),
    "jackpot_tier": lambda s, p, k: jackpot_tier(s, _profile(p, k)),
    "dice_roll": lambda s, p, _: dice(s, p["count"], p["sides"]),
    "card_shuffle": lambda s, p, _: card_shuffle(s, p["decks"], p["jokers"]),
    "uniform_int": lambda s, p, _: uniform_int(s, p["low"], p["high"], p["count"], p["distinct"]),
    "weighted_choice": lambda s, p, _: weighted_choice(s, p["weights"], p["count"]),
    "roulette_spin_batch": lambda s, p, _: roulette_spin_batch(s, p["wheel"], p["count"]),
    "dice_roll_batch": lambda s, p, _: dice_roll_batch(s, p["dice"], p["sides"], p["count"]),
    "uniform_int_batch": lambda s, p, _: uniform_int_batch(s, p["low"], p["high"], p["count"]),
}
KINDS = tuple(DRAWS)


def draw(
    kind: str, params: Mapping[str, Any], src: Source, known: Profiles | None = None
) -> Record:
    """The ``outcome`` record of a log entry of ``kind`` with ``params``, drawn from ``src``
    (profiles by name from ``known``, else the shipped ones)."""
    return DRAWS[kind](src, params, known or {})
