"""Helpers for checking the code against the independent reader (tests/reader/).

``CodeSide`` draws with the code under test (``rng_service.outcomes``, ``rng_service.sampling``,
``rng_service.drbg.DeterministicGenerator``) and ``ReaderSide`` with the reader (its own
CTR_DRBG and the documents' rules); both take a log entry's ``kind`` and ``params`` record and
return the ``outcome`` record, each outcome from a fresh RandomSource over one lab generator, as
the log appender draws them. ``random_params`` picks parameters across each kind's whole
allowed range (docs/outcomes-api.md), weighted towards cheap ones so 10^4 cases fit CI.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from rng_service.drbg import DeterministicGenerator
from rng_service.outcomes import (
    batch,
    cards,
    dice,
    fire_numbers,
    generic,
    jackpot,
    mega_fire_blaze,
    multiball,
    roulette,
)
from rng_service.outcomes.profiles import MegaFireBlazeProfile, load_builtin_profile, parse_profile
from rng_service.sampling import RandomSource
from tests.reader import kinds
from tests.reader import profile as reader_profile
from tests.reader.ctr_drbg import LabStream
from tests.reader.sampling import Source

Record = dict[str, Any]
Seed = tuple[bytes, bytes, bytes]

EXAMPLE = "mega_fire_blaze_example"


def seed(label: str) -> Seed:
    """A lab seed per label (public test data)."""
    return (label.encode().ljust(32, b"\x00")[:32], bytes(range(16)), label.encode())


# -- profiles ---------------------------------------------------------------------------------

_COUNTS = (1, 2, 3, 4, 5, 10)
_MULTIPLIERS = (1, 2, 3, 4, 5, 10, 15, 50)
_DESIGNATIONS = ("x2", "x3", "x5", "jackpot")
_TIERS = ("mini", "minor", "major", "grand")
_ODDS = {
    "straight_up": 5999,
    "split": 2999,
    "street": 1999,
    "corner": 1499,
    "line": 999,
}


def random_profile_toml(rng: random.Random, name: str) -> bytes:
    """A valid schema-1 profile with random tables (docs/outcomes.md, "Game profiles")."""

    def weights(n: int) -> str:
        return ", ".join(
            str(rng.choice([1, rng.randint(1, 100), rng.randint(1, 2**32)])) for _ in range(n)
        )

    def ints(values: tuple[int, ...]) -> str:
        return ", ".join(str(v) for v in values)

    def strs(values: list[str] | tuple[str, ...]) -> str:
        return ", ".join(f'"{v}"' for v in values)

    counts = tuple(sorted(rng.sample(_COUNTS, rng.randint(1, len(_COUNTS)))))
    mults = tuple(rng.sample(_MULTIPLIERS, rng.randint(1, len(_MULTIPLIERS))))
    tiers = rng.sample(_TIERS, 4)
    mode = rng.choice(["independent", "shuffled", "fixed"])
    if mode == "independent":
        des = rng.sample(_DESIGNATIONS, rng.randint(1, 4))
        segments = f"designations = [{strs(des)}]\nweights = [{weights(len(des))}]\n"
    else:
        segments = f"layout = [{strs([rng.choice(_DESIGNATIONS) for _ in range(6)])}]\n"
    payouts = ""
    for bet, top in _ODDS.items():
        lo = rng.randint(29, top)
        hi = rng.randint(lo, top)
        payouts += (
            f"\n[payout.{bet}]\nfactor = {rng.randint(1, 60)}\ndivisor = {rng.randint(1, 8)}\n"
            f"min = {lo}\nmax = {hi}\n"
        )
    text = (
        f'schema = 1\nname = "{name}"\nversion = {rng.randint(1, 9)}\n'
        'game = "mega_fire_blaze"\nexample = true\ndescription = "random test profile"\n'
        f"\n[fire_numbers]\ncounts = [{ints(counts)}]\nweights = [{weights(len(counts))}]\n"
        f"\n[bonus.multipliers]\nvalues = [{ints(mults)}]\nweights = [{weights(len(mults))}]\n"
        f'\n[bonus.segments]\nmode = "{mode}"\n{segments}'
        f"\n[jackpot]\ntiers = [{strs(tiers)}]\nweights = [{weights(4)}]\n{payouts}"
    )
    return text.encode()


class Profiles:
    """The example profile plus random ones, as the code and as the reader hold them."""

    def __init__(self, rng: random.Random, extra: int) -> None:
        self.code: dict[str, MegaFireBlazeProfile] = {EXAMPLE: load_builtin_profile(EXAMPLE)}
        self.reader: dict[str, reader_profile.Profile] = {EXAMPLE: reader_profile.load(EXAMPLE)}
        for i in range(extra):
            name = f"random_{i}"
            data = random_profile_toml(rng, name)
            self.code[name] = parse_profile(data, f"{name}.toml")
            self.reader[name] = reader_profile.parse(data)

    def identity(self, name: str) -> dict[str, Any]:
        """The profile's identity as docs/outcomes.md names it: (name, version, sha256)."""
        pid = self.code[name].id
        return {"name": pid.name, "version": pid.version, "sha256": pid.sha256}


# -- the code under test ----------------------------------------------------------------------


def _wheel(name: str) -> roulette.WheelType:
    return roulette.WheelType(name)


def code_draw(
    kind: str, p: Mapping[str, Any], src: RandomSource, profiles: Profiles
) -> tuple[Record, Record]:
    """``(params record, outcome record)`` of the code for a reader-style params record."""

    def prof() -> MegaFireBlazeProfile:
        return profiles.code[p["profile"]["name"]]

    params: Any
    out: Any
    if kind == "roulette_spin":
        params = roulette.SpinParams(wheel=_wheel(p["wheel"]))
        out = roulette.draw(src, params)
    elif kind == "multiball":
        params = multiball.MultiBallParams(wheel=_wheel(p["wheel"]), balls=p["balls"])
        out = multiball.draw(src, params)
    elif kind == "fire_numbers":
        params = fire_numbers.FireNumberParams(prof())
        out = fire_numbers.draw(src, params)
    elif kind == "mega_fire_blaze_bonus":
        params = mega_fire_blaze.BonusParams(prof(), p["fire_number_count"])
        out = mega_fire_blaze.draw(src, params)
    elif kind == "jackpot_tier":
        params = jackpot.JackpotParams(prof())
        out = jackpot.draw(src, params)
    elif kind == "dice_roll":
        params = dice.DiceParams(count=p["count"], sides=p["sides"])
        out = dice.draw(src, params)
    elif kind == "card_shuffle":
        params = cards.ShuffleParams(decks=p["decks"], jokers=p["jokers"])
        out = cards.draw(src, params)
    elif kind == "uniform_int":
        params = generic.UniformParams(
            low=p["low"], high=p["high"], count=p["count"], distinct=p["distinct"]
        )
        out = generic.draw_uniform(src, params)
    elif kind == "weighted_choice":
        params = generic.WeightedParams(weights=tuple(p["weights"]), count=p["count"])
        out = generic.draw_weighted(src, params)
    elif kind == "roulette_spin_batch":
        return dict(p), batch.draw_spin_batch(src, _wheel(p["wheel"]), p["count"])
    elif kind == "dice_roll_batch":
        d = dice.DiceParams(count=p["dice"], sides=p["sides"])
        return dict(p), batch.draw_dice_batch(src, d, p["count"])
    elif kind == "uniform_int_batch":
        u = generic.UniformParams(low=p["low"], high=p["high"])
        return dict(p), batch.draw_uniform_batch(src, u, p["count"])
    else:
        raise AssertionError(kind)
    return params.to_record(), out.to_record()


class CodeSide:
    def __init__(self, s: Seed, profiles: Profiles) -> None:
        self.gen = DeterministicGenerator(entropy_input=s[0], nonce=s[1], personalization=s[2])
        self.profiles = profiles

    def draw(self, kind: str, params: Mapping[str, Any]) -> tuple[Record, Record]:
        return code_draw(kind, params, RandomSource(self.gen), self.profiles)


class ReaderSide:
    def __init__(self, s: Seed, profiles: Profiles) -> None:
        self.stream = LabStream(*s)
        self.profiles = profiles

    def draw(self, kind: str, params: Mapping[str, Any]) -> Record:
        return kinds.draw(kind, params, Source(self.stream), self.profiles.reader)


# -- random parameters ------------------------------------------------------------------------

WHEELS = ("single_zero", "double_zero", "double_zero_as_single_zero")
INT53 = 2**53 - 1
INT64 = (-(2**63), 2**63 - 1)  # the outcome modules' bounds (the service's are +-INT53)


def _span(rng: random.Random, max_bits: int) -> int:
    """A range size whose bit length is uniform on 1..max_bits (every attempt width)."""
    bits = rng.randint(1, max_bits)
    return rng.randint(1 << (bits - 1), (1 << bits) - 1) if bits > 1 else rng.randint(1, 1)


def _count(rng: random.Random, cheap: int, top: int, often: float = 0.01) -> int:
    """Mostly 1..cheap, with probability ``often`` anything up to ``top``."""
    return rng.randint(1, top) if rng.random() < often else rng.randint(1, cheap)


def _bounds(rng: random.Random, span: int, lo: int, hi: int) -> tuple[int, int]:
    low = rng.randint(lo, hi - span + 1)
    return low, low + span - 1


def _fire_count(profiles: Profiles, name: str, rng: random.Random) -> int:
    return int(rng.choice(profiles.reader[name].fire_counts))


ParamsFn = Callable[[random.Random, Profiles], dict[str, Any]]


def _uniform(rng: random.Random, _: Profiles) -> dict[str, Any]:
    distinct = rng.random() < 0.3
    if distinct:
        # The code lists the whole range (at most 2**20 values): large spans are rarer, for time.
        span = _span(rng, 20 if rng.random() < 0.05 else 12)
        count = min(span, _count(rng, 20, 10_000))
    else:
        span = _span(rng, 64)  # attempts of 1 to 8 bytes
        count = _count(rng, 20, 10_000)
    low, high = _bounds(rng, span, *INT64)
    return {"low": low, "high": high, "count": count, "distinct": distinct}


def _weighted(rng: random.Random, _: Profiles) -> dict[str, Any]:
    """Up to 10,000 weights or 10,000 draws, but not both at once (each draw scans the weights)."""
    u = rng.random()
    if u < 0.002:
        n, count = 10_000, rng.randint(1, 3)
    elif u < 0.004:
        n, count = rng.randint(1, 4), rng.randint(1, 10_000)
    else:
        n, count = rng.randint(1, 40), rng.randint(1, 20)
    top = rng.choice([1, 10, 1000, INT53])
    return {"weights": [rng.randint(1, top) for _ in range(n)], "count": count}


def _profile_name(rng: random.Random, profiles: Profiles) -> str:
    return rng.choice(sorted(profiles.code))


PARAMS: dict[str, ParamsFn] = {
    "roulette_spin": lambda rng, _: {"wheel": rng.choice(WHEELS)},
    "multiball": lambda rng, _: (
        lambda w: {"wheel": w, "balls": rng.randint(1, 37 if w == "single_zero" else 38)}
    )(rng.choice(WHEELS[:2])),
    "fire_numbers": lambda rng, pr: {"profile": pr.identity(_profile_name(rng, pr))},
    "mega_fire_blaze_bonus": lambda rng, pr: (
        lambda n: {"profile": pr.identity(n), "fire_number_count": _fire_count(pr, n, rng)}
    )(_profile_name(rng, pr)),
    "jackpot_tier": lambda rng, pr: {"profile": pr.identity(_profile_name(rng, pr))},
    "dice_roll": lambda rng, _: {
        "count": _count(rng, 5, 100),
        "sides": rng.choice([6, rng.randint(2, 1000)]),
    },
    "card_shuffle": lambda rng, _: {
        "decks": rng.choice([1, 1, 1, 2, rng.randint(1, 8)]),
        "jokers": rng.randint(0, 2),
    },
    "uniform_int": _uniform,
    "weighted_choice": _weighted,
    "roulette_spin_batch": lambda rng, _: {
        "wheel": rng.choice(WHEELS[:2]),
        "count": _count(rng, 100, 10_000, 0.005),
    },
    "dice_roll_batch": lambda rng, _: (
        lambda many: {
            "dice": rng.randint(1, 100) if many else rng.randint(1, 3),
            "sides": rng.choice([6, rng.randint(2, 1000)]),
            "count": rng.randint(1, 10) if many else _count(rng, 30, 1000, 0.005),
        }
    )(rng.random() < 0.05),
    "uniform_int_batch": lambda rng, _: (
        lambda lo_hi: {"low": lo_hi[0], "high": lo_hi[1], "count": _count(rng, 100, 10_000, 0.005)}
    )(_bounds(rng, min(_span(rng, 64), 2**63), *INT64)),
}
