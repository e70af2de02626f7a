"""Outcome records tallied into an :class:`~certification.outcomes.OutcomeSample`: each group
of one kind and parameters counted as it is read (memory bounded by the cells, not the
records), with the exact expected distributions from ``rng_service.outcomes``
(``roulette.distribution``, ``dice.total_distribution``, ``fire_numbers.count_distribution``,
``jackpot.distribution``, ``multiball.hit_count_distribution``, ``cards.position_distribution``
...). Part of the bridge from ``rng-certify`` to ``rng_service`` (docs/architecture.md, row
cert-bridge); the records come from :mod:`certification.sources`. Input problems raise
:class:`~certification.sources.SourceError` naming the record.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from certification.outcomes.battery import (
    BONUS_CELLS,
    MAX_STREAM_SPAN,
    MAX_VALUE_CELLS,
    bonus_collision,
    uniform_group_name,
    weighted_group_name,
)
from certification.outcomes.sample import (
    BonusGroup,
    DiceGroup,
    FireNumberGroup,
    JackpotGroup,
    MultiBallGroup,
    OutcomeSample,
    ShuffleGroup,
    UniformGroup,
    WeightedGroup,
    WheelGroup,
    WheelTally,
    fire_collision,
    weighted_expected,
)
from certification.outcomes.shuffles import ShuffleStream, shoe_group
from certification.outcomes.stream import (
    DiscreteStream,
    InclusionTally,
    IntegerStream,
    RepeatStream,
)
from certification.sources import NOT_OUTCOME_KINDS, Record, SourceError
from rng_service.errors import RngServiceError
from rng_service.outcomes import (
    cards,
    dice,
    fire_numbers,
    jackpot,
    mega_fire_blaze,
    multiball,
    roulette,
)
from rng_service.outcomes.profiles import (
    MegaFireBlazeProfile,
    builtin_profile_names,
    load_builtin_profile,
    load_profile_file,
)
from rng_service.outcomes.roulette import WHEEL_ORDER, WheelType

__all__ = ["build_sample", "sample_from_positions", "sample_from_shuffles"]

K = TypeVar("K")
T = TypeVar("T")


@dataclass
class _Profiles:
    """Profiles by SHA-256: the shipped ones plus any given files."""

    by_sha: dict[str, MegaFireBlazeProfile]

    @classmethod
    def load(cls, files: Sequence[Path] = ()) -> _Profiles:
        found = {}
        for name in builtin_profile_names():
            prof = load_builtin_profile(name)
            found[prof.id.sha256] = prof
        for path in files:
            try:
                prof = load_profile_file(path)
            except (OSError, RngServiceError) as e:
                raise SourceError(f"cannot load profile {path}: {e}") from e
            found[prof.id.sha256] = prof
        return cls(found)

    def get(self, params: Mapping[str, Any], where: str) -> MegaFireBlazeProfile:
        ident = params.get("profile")
        sha = ident.get("sha256") if isinstance(ident, dict) else None
        if not isinstance(sha, str) or sha not in self.by_sha:
            raise SourceError(
                f"{where}: profile {ident!r} is not known; pass its TOML file with --profile"
            )
        return self.by_sha[sha]


def _wheel_params(wheel: str) -> roulette.SpinParams:
    try:
        return roulette.SpinParams(wheel=WheelType(wheel))
    except (ValueError, RngServiceError) as e:
        raise SourceError(f"unknown wheel {wheel!r}") from e


def _sequence_alphabet(wheel: WheelType) -> tuple[dict[str, int], int]:
    """Final numbers -> 0..d-1 in wheel order, leaving out 00 where it is always voided."""
    order = [
        n
        for n in WHEEL_ORDER[wheel]
        if not (wheel is WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO and n == "00")
    ]
    return {n: i for i, n in enumerate(order)}, len(order)


class _Groups(dict[K, T]):
    """Talliers by their group's key, each made by ``make(key)`` when the group's first record
    is read."""

    def __init__(self, make: Callable[[K], T]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key: K) -> T:
        made = self[key] = self.make(key)
        return made


def build_sample(records: Iterable[Record], *, profile_files: Sequence[Path] = ()) -> OutcomeSample:
    """Groups ``records`` by kind and parameters, with each group's exact distributions."""
    profiles = _Profiles.load(profile_files)
    spins = _Groups[str, _WheelTallier](_WheelTallier)
    rolls = _Groups[tuple[int, int], _DiceTallier](lambda k: _DiceTallier(*k))
    fires = _Groups[str, _FireTallier](lambda sha: _FireTallier(profiles.by_sha[sha]))
    tiers = _Groups[str, _JackpotTallier](lambda sha: _JackpotTallier(profiles.by_sha[sha]))
    balls = _Groups[tuple[str, int], _MultiBallTallier](lambda k: _MultiBallTallier(*k))
    shoes = _Groups[tuple[int, int], _ShuffleTallier](lambda k: _ShuffleTallier(*k))
    uniform = _Groups[tuple[int, int, bool], _UniformTallier](lambda k: _UniformTallier(*k))
    weighted = _Groups[tuple[int, ...], _WeightedTallier](_WeightedTallier)
    bonus = _Groups[tuple[str, int], _BonusTallier](
        lambda k: _BonusTallier(profiles.by_sha[k[0]], k[1])
    )
    untested: dict[str, int] = defaultdict(int)
    not_outcomes: dict[str, int] = defaultdict(int)
    for number, r in enumerate(records, 1):
        where = f"record {number}"
        kind, params, outcome = r["kind"], r.get("params") or {}, r["outcome"]
        try:
            if kind == "roulette_spin":
                voids = sum(1 for s in outcome["spins"] if s["voided"])
                spins[outcome["wheel"]].add(outcome["final"]["number"], voids)
            elif kind == "roulette_spin_batch":
                tallier = spins[params["wheel"]]
                for n in outcome["numbers"]:
                    tallier.add(n, 0)
            elif kind == "dice_roll":
                rolls[int(params["count"]), int(params["sides"])].add(
                    tuple(int(f) for f in outcome["faces"])
                )
            elif kind == "dice_roll_batch":
                k, faces = int(params["dice"]), [int(f) for f in outcome["faces"]]
                roller = rolls[k, int(params["sides"])]
                for i in range(0, len(faces), k):
                    roller.add(tuple(faces[i : i + k]))
            elif kind == "fire_numbers":
                fires[profiles.get(params, where).id.sha256].add(tuple(outcome["numbers"]))
            elif kind == "jackpot_tier":
                tiers[profiles.get(params, where).id.sha256].add(outcome["tier"])
            elif kind == "multiball":
                balls[outcome["wheel"], len(outcome["balls"])].add(
                    tuple(b["number"] for b in outcome["balls"])
                )
            elif kind == "card_shuffle":
                shoes[outcome["decks"], outcome["jokers"]].add(
                    tuple(cards.card_code(c) for c in outcome["cards"])
                )
            elif kind in ("uniform_int", "uniform_int_batch"):
                ukey = (int(params["low"]), int(params["high"]), bool(params.get("distinct")))
                uniform[ukey].add(tuple(int(v) for v in outcome["values"]))
            elif kind == "weighted_choice":
                weighted[tuple(int(w) for w in params["weights"])].add(
                    tuple(int(i) for i in outcome["indices"])
                )
            elif kind == "mega_fire_blaze_bonus":
                sha = profiles.get(params, where).id.sha256
                bonus[sha, int(params["fire_number_count"])].add(outcome)
            elif kind in NOT_OUTCOME_KINDS:
                not_outcomes[kind] += 1
            else:
                untested[kind] += 1
        except (KeyError, TypeError, ValueError, RngServiceError) as e:
            raise SourceError(f"{where}: malformed {kind!r} record ({e!r})") from e
    return OutcomeSample(
        wheel_tallies=tuple(t.tally() for _, t in sorted(spins.items())),
        dice=tuple(t.group() for _, t in sorted(rolls.items())),
        fire_numbers=tuple(t.group() for _, t in sorted(fires.items())),
        jackpots=tuple(t.group() for _, t in sorted(tiers.items())),
        multiball=tuple(t.group() for _, t in sorted(balls.items())),
        shuffles=tuple(t.group() for _, t in sorted(shoes.items())),
        uniform=tuple(t.group() for _, t in sorted(uniform.items())),
        weighted=tuple(t.group() for _, t in sorted(weighted.items())),
        bonus=tuple(t.group() for _, t in sorted(bonus.items())),
        untested=dict(untested),
        not_outcomes=dict(not_outcomes),
    )


_CHUNK = 1 << 16
"""Values a tallier hands its stream at once."""


class _Pending:
    """Values handed to a stream in chunks of :data:`_CHUNK`."""

    def __init__(self, stream: IntegerStream) -> None:
        self.stream = stream
        self.values: list[int] = []

    def add(self, value: int) -> None:
        self.values.append(value)
        if len(self.values) >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.values:
            self.stream.add(np.asarray(self.values, dtype=np.int64))
            self.values = []


class _WheelTallier:
    """One wheel type's spins, counted as they are read (memory bounded by the cells)."""

    def __init__(self, wheel: str) -> None:
        self.params = _wheel_params(wheel)
        self.wheel = wheel
        self.index, alphabet = _sequence_alphabet(self.params.wheel)
        symbols = tuple(sorted(self.index, key=self.index.__getitem__))
        self.stream = IntegerStream(alphabet, f"wheel/{wheel}", symbols)
        self.counts: dict[str, int] = defaultdict(int)
        self.voids: dict[int, int] = defaultdict(int)
        self.pending = _Pending(self.stream)
        self.outcomes = 0

    def add(self, number: str, voids: int) -> None:
        self.counts[number] += 1
        self.voids[voids] += 1
        self.pending.add(self.index.get(number, 0))
        self.outcomes += 1

    def tally(self) -> WheelTally:
        self.pending.flush()
        voiding = self.params.wheel is WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO
        return WheelTally(
            wheel=self.wheel,
            outcomes=self.outcomes,
            counts=dict(self.counts),
            expected=roulette.distribution(self.params),
            stream=self.stream,
            void_counts=dict(self.voids),
            void_expected=_conditional(roulette.void_count_distribution(self.params))
            if voiding
            else None,
        )


def _wheel_group(wheel: str, spins: list[tuple[str, int]]) -> WheelGroup:
    params = _wheel_params(wheel)
    index, alphabet = _sequence_alphabet(params.wheel)
    numbers = tuple(n for n, _ in spins)
    voids = params.wheel is WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO
    return WheelGroup(
        wheel=wheel,
        numbers=numbers,
        expected=roulette.distribution(params),
        sequence=tuple(index.get(n, 0) for n in numbers),
        alphabet=alphabet,
        voids=tuple(v for _, v in spins),
        void_expected=_conditional(roulette.void_count_distribution(params)) if voids else None,
        symbols=tuple(sorted(index, key=index.__getitem__)),
    )


def _conditional(dist: Mapping[int, Fraction]) -> dict[int, Fraction]:
    """The distribution given that an outcome was issued: the void counts leave out the
    fail-closed mass (1/38)^64, so they are renormalised over the issued outcomes."""
    total = sum(dist.values(), Fraction(0))
    return {k: v / total for k, v in dist.items()}


def sample_from_positions(wheel: str, positions: Sequence[int]) -> OutcomeSample:
    """An :class:`OutcomeSample` of final spins given as compartment positions of a single zero
    or double zero wheel (for generators that map bytes to positions themselves)."""
    order = WHEEL_ORDER[_wheel_params(wheel).wheel]
    return OutcomeSample(wheels=(_wheel_group(wheel, [(order[p], 0) for p in positions]),))


class _DiceTallier:
    """One (count, sides) group's rolls, counted as they are read."""

    def __init__(self, count: int, sides: int) -> None:
        self.params = dice.DiceParams(count=count, sides=sides)
        self.count, self.sides = count, sides
        faces = tuple(str(f) for f in range(1, sides + 1))
        self.stream = IntegerStream(sides, f"dice/{count}d{sides}", faces)
        self.faces: dict[int, int] = defaultdict(int)
        self.tuples: dict[tuple[int, ...], int] = defaultdict(int)
        self.totals: dict[int, int] = defaultdict(int)
        self.combinations: dict[tuple[int, ...], int] = defaultdict(int)
        self.pending = _Pending(self.stream)
        self.outcomes = 0

    def add(self, roll: tuple[int, ...]) -> None:
        self.outcomes += 1
        for f in roll:
            self.faces[f] += 1
            # an impossible face fails the faces test; the stream keeps to its alphabet
            self.pending.add(min(max(f - 1, 0), self.sides - 1))
        self.tuples[roll] += 1
        self.totals[sum(roll)] += 1
        self.combinations[tuple(sorted(roll))] += 1

    def group(self) -> DiceGroup:
        self.pending.flush()
        p = self.params
        combos = (
            dice.combination_distribution(p) if self.sides ** min(self.count, 6) <= 10**6 else {}
        )
        return DiceGroup(
            count=self.count,
            sides=self.sides,
            outcomes=self.outcomes,
            face_counts=dict(self.faces),
            tuple_counts=dict(self.tuples),
            total_counts=dict(self.totals),
            combination_counts=dict(self.combinations),
            stream=self.stream,
            face_expected=dice.face_distribution(p),
            total_expected=dice.total_distribution(p),
            combination_expected=combos,
        )


class _FireTallier:
    """One profile's Fire Number draws, counted as they are read."""

    def __init__(self, prof: MegaFireBlazeProfile) -> None:
        self.name = f"{prof.id.name}@{prof.id.version}"
        self.expected = fire_numbers.count_distribution(fire_numbers.FireNumberParams(profile=prof))
        self.layout = tuple(fire_numbers.LAYOUT)
        self.counts: dict[int, int] = defaultdict(int)
        self.firsts: dict[str, int] = defaultdict(int)
        self.inclusion = InclusionTally(self.layout)
        self.repeats = RepeatStream(f"fire_numbers/{self.name}",
                                    fire_collision(self.expected, len(self.layout)))  # fmt: skip
        self.outcomes = 0

    def add(self, draw: tuple[str, ...]) -> None:
        self.outcomes += 1
        self.counts[len(draw)] += 1
        if draw:
            self.firsts[draw[0]] += 1
        self.inclusion.add(draw)
        self.repeats.add(draw)

    def group(self) -> FireNumberGroup:
        return FireNumberGroup(profile=self.name, outcomes=self.outcomes,
                               count_counts=dict(self.counts), first_counts=dict(self.firsts),
                               inclusion=self.inclusion, repeats=self.repeats,
                               count_expected=self.expected, layout=self.layout)  # fmt: skip


class _JackpotTallier:
    """One profile's jackpot tiers, counted as they are read."""

    def __init__(self, prof: MegaFireBlazeProfile) -> None:
        self.name = f"{prof.id.name}@{prof.id.version}"
        self.expected = jackpot.distribution(jackpot.JackpotParams(profile=prof))
        order = list(self.expected)
        self.index = {t: i for i, t in enumerate(order)}
        self.stream = (
            DiscreteStream(tuple(self.expected[t] for t in order), f"jackpot/{self.name}")
            if len(order) > 1
            else None
        )
        self.pending = None if self.stream is None else _Pending(self.stream)
        self.counts: dict[str, int] = defaultdict(int)
        self.unknown = False
        self.outcomes = 0

    def add(self, tier: str) -> None:
        self.outcomes += 1
        self.counts[tier] += 1
        i = self.index.get(tier)
        if i is None:
            self.unknown = True
        elif self.pending is not None and not self.unknown:
            self.pending.add(i)

    def group(self) -> JackpotGroup:
        if self.pending is not None:
            self.pending.flush()
        return JackpotGroup(profile=self.name, outcomes=self.outcomes, counts=dict(self.counts),
                            expected=self.expected, stream=self.stream,
                            unknown=self.unknown)  # fmt: skip


class _MultiBallTallier:
    """One (wheel, balls) group's multi-ball draws, counted as they are read."""

    def __init__(self, wheel: str, balls: int) -> None:
        self.params = multiball.MultiBallParams(wheel=WheelType(wheel), balls=balls)
        self.wheel, self.balls = wheel, balls
        self.layout = tuple(WHEEL_ORDER[self.params.wheel])
        self.targets = set(multiball.BLAZING_7S_NUMBERS)
        size = len(self.layout)
        collision = Fraction(math.factorial(size - balls), math.factorial(size))
        self.hits: dict[int, int] = defaultdict(int)
        self.firsts: dict[str, int] = defaultdict(int)
        self.inclusion = InclusionTally(self.layout)
        self.repeats = RepeatStream(f"multiball/{wheel}/{balls}", collision)
        self.outcomes = 0

    def add(self, draw: tuple[str, ...]) -> None:
        self.outcomes += 1
        self.hits[sum(1 for x in draw if x in self.targets)] += 1
        if draw:
            self.firsts[draw[0]] += 1
        self.inclusion.add(draw)
        self.repeats.add(draw)

    def group(self) -> MultiBallGroup:
        return MultiBallGroup(
            wheel=self.wheel, balls=self.balls, outcomes=self.outcomes, layout=self.layout,
            targets=multiball.BLAZING_7S_NUMBERS, hit_counts=dict(self.hits),
            hit_expected=multiball.hit_count_distribution(self.params),
            first_counts=dict(self.firsts), inclusion=self.inclusion, repeats=self.repeats,
        )  # fmt: skip


class _UniformTallier:
    """One (low, high, distinct) group's generic integers, counted as they are read (module
    ``certification.outcomes.sample``, :class:`UniformGroup`)."""

    def __init__(self, low: int, high: int, distinct: bool) -> None:
        self.low, self.high, self.distinct = low, high, distinct
        span = high - low + 1
        self.span = span
        name = uniform_group_name(low, high, distinct)
        self.stream = IntegerStream(span, name) if 0 < span <= MAX_STREAM_SPAN else None
        self.pending = None if self.stream is None else _Pending(self.stream)
        self.held: list[int] = []
        self.counts: dict[int, int] = defaultdict(int)
        self.inclusion = (
            InclusionTally(tuple(str(v) for v in range(span)))
            if distinct and span <= MAX_VALUE_CELLS
            else None
        )
        self.repeats = RepeatStream(name, 0) if distinct else None
        self.c_min: int | None = None
        self.outcomes = 0

    def _value(self, v: int) -> None:
        x = v - self.low
        if self.pending is not None:
            # an impossible value fails the values test; the stream keeps to its alphabet
            self.pending.add(min(max(x, 0), self.span - 1))
        else:
            self.held.append(x)

    def add(self, draw: tuple[int, ...]) -> None:
        self.outcomes += 1
        if not self.distinct:
            for v in draw:
                if self.span <= MAX_VALUE_CELLS:
                    self.counts[v - self.low] += 1
                self._value(v)
            return
        if draw:
            self._value(draw[0])
        if self.inclusion is not None:
            self.inclusion.add(tuple(str(v - self.low) for v in draw))
        self.c_min = len(draw) if self.c_min is None else min(self.c_min, len(draw))
        if self.repeats is not None:
            self.repeats.add(draw)

    def group(self) -> UniformGroup:
        if self.pending is not None:
            self.pending.flush()
        if self.repeats is not None:
            c_min = 1 if self.c_min is None else self.c_min
            self.repeats.collision = (
                Fraction(math.factorial(self.span - c_min), math.factorial(self.span))
                if self.span <= MAX_VALUE_CELLS
                else Fraction(1, self.span) ** c_min
            )
        return UniformGroup(
            low=self.low, high=self.high, distinct=self.distinct, outcomes=self.outcomes,
            value_counts=dict(self.counts),
            stream=self.stream,
            held=tuple(self.held), inclusion=self.inclusion, repeats=self.repeats,
        )  # fmt: skip


class _WeightedTallier:
    """One weight vector's choices, counted as they are read."""

    def __init__(self, weights: tuple[int, ...]) -> None:
        self.weights = weights
        expected = weighted_expected(weights)
        self.stream = (
            DiscreteStream(tuple(expected[i] for i in range(len(weights))),
                           weighted_group_name(weights))
            if len(weights) > 1
            else None
        )  # fmt: skip
        self.pending = None if self.stream is None else _Pending(self.stream)
        self.counts: dict[int, int] = defaultdict(int)
        self.unknown = False
        self.outcomes = 0

    def add(self, indices: tuple[int, ...]) -> None:
        self.outcomes += 1
        for i in indices:
            self.counts[i] += 1
            if not 0 <= i < len(self.weights):
                self.unknown = True
            elif self.pending is not None and not self.unknown:
                self.pending.add(i)

    def group(self) -> WeightedGroup:
        if self.pending is not None:
            self.pending.flush()
        return WeightedGroup(weights=self.weights, outcomes=self.outcomes,
                             counts=dict(self.counts), stream=self.stream,
                             unknown=self.unknown)  # fmt: skip


class _ShuffleTallier:
    """One shoe's shuffles, fed to its :class:`ShuffleStream` in chunks as they are read."""

    CHUNK = 4096

    def __init__(self, decks: int, jokers: int) -> None:
        params = cards.ShuffleParams(decks=decks, jokers=jokers)
        by_label = cards.position_distribution(params)
        self.top: dict[int, Fraction] = {
            code: by_label[cards.card_label(code)]
            for code in sorted(set(cards.canonical_shoe(params)))
        }
        self.decks, self.jokers = decks, jokers
        self.stream = ShuffleStream(self.top, distinct=decks == 1,
                                    group=shoe_group(decks, jokers))  # fmt: skip
        self.pending: list[tuple[int, ...]] = []
        self.outcomes = 0
        self.size = 0

    def add(self, shuffle: tuple[int, ...]) -> None:
        if self.size and len(shuffle) != self.size:
            raise SourceError(
                f"a {shoe_group(self.decks, self.jokers)} shuffle of {len(shuffle)} cards "
                f"among shuffles of {self.size}"
            )
        self.pending.append(shuffle)
        self.outcomes += 1
        self.size = len(shuffle)
        if len(self.pending) >= self.CHUNK:
            self._flush()

    def _flush(self) -> None:
        if self.pending:
            self.stream.add(np.asarray(self.pending, dtype=np.int64))
            self.pending = []

    def group(self) -> ShuffleGroup:
        self._flush()
        return ShuffleGroup(decks=self.decks, jokers=self.jokers, outcomes=self.outcomes,
                            size=self.size, stream=self.stream, top_expected=self.top,
                            distinct=self.decks == 1)  # fmt: skip


class _BonusTallier:
    """The bonus games of one profile and Fire Number count, counted as they are read, with
    their exact distributions (:class:`certification.outcomes.sample.BonusGroup`)."""

    def __init__(self, prof: MegaFireBlazeProfile, count: int) -> None:
        self.prof, self.count = prof, count
        self.name = f"{prof.id.name}@{prof.id.version}"
        self.rule = prof.segments
        self.layout = tuple(self.rule.layout)
        self.names = sorted(set(self.layout))
        self.code = {x: i for i, x in enumerate(self.names)}
        self.sorted_layout = sorted(self.layout)
        self.table = np.zeros((len(self.layout), len(self.names)), dtype=np.int64)
        self.cells = InclusionTally(tuple(str(i) for i in range(BONUS_CELLS)))
        self.repeats = RepeatStream(f"bonus/{self.name}/{count}", bonus_collision(count))
        self.totals: dict[int, int] = defaultdict(int)
        self.firsts: dict[int, int] = defaultdict(int)
        self.multipliers: dict[int, int] = defaultdict(int)
        self.designations: dict[str, int] = defaultdict(int)
        self.tiers: dict[str, int] = defaultdict(int)
        self.problem = ""
        self.outcomes = 0

    def add(self, o: Mapping[str, Any]) -> None:
        order = tuple(int(i) for i in o["fill_order"])
        by_index = {int(c["index"]): c for c in o["cells"]}
        multipliers = [int(by_index[i]["multiplier"]) for i in order]
        segs = sorted(o["segments"], key=lambda g: int(g["index"]))
        row = tuple(str(g["designation"]) for g in segs)
        tiers = [str(g["jackpot_tier"]) for g in segs if g["jackpot_tier"] is not None]
        total = int(o["total"])
        self.outcomes += 1
        self.cells.add(tuple(str(i) for i in order))
        if order:
            self.firsts[order[0]] += 1
        self.repeats.add(order)
        for m in multipliers:
            self.multipliers[m] += 1
        for t in tiers:
            self.tiers[t] += 1
        self.totals[total] += 1
        mode = self.rule.mode
        if mode == "independent" and self.rule.weights is not None:
            for d in row:
                self.designations[d] += 1
        elif self.problem:
            pass
        elif mode == "shuffled":
            if sorted(row) != self.sorted_layout:
                self.problem = "a designation row is not the profile's layout"
            else:
                self.table[np.arange(len(row)), [self.code[d] for d in row]] += 1
        elif row != self.layout:
            self.problem = "a designation differs from the profile's fixed layout"

    def group(self) -> BonusGroup:
        prof, rule = self.prof, self.rule
        return BonusGroup(
            profile=self.name, fire_number_count=self.count, outcomes=self.outcomes,
            total_counts=dict(self.totals),
            total_expected=mega_fire_blaze.total_distribution(prof, self.count),
            cells=self.cells, first_counts=dict(self.firsts), repeats=self.repeats,
            multiplier_counts=dict(self.multipliers),
            multiplier_expected=prof.multipliers.distribution(),
            designation_mode=rule.mode,
            designation_expected=None if rule.weights is None else rule.weights.distribution(),
            designation_counts=dict(self.designations),
            designation_table=self.table if rule.mode == "shuffled" else None,
            designation_problem=self.problem, layout=self.layout,
            jackpot_tier_counts=dict(self.tiers), jackpot_expected=prof.jackpot.distribution(),
        )  # fmt: skip


def sample_from_shuffles(shuffles: Sequence[Sequence[int]]) -> OutcomeSample:
    """An :class:`OutcomeSample` of one-deck shuffles given as card codes (0..51), top first."""
    tallier = _ShuffleTallier(1, 0)
    for s in shuffles:
        tallier.add(tuple(int(c) for c in s))
    return OutcomeSample(shuffles=(tallier.group(),))
