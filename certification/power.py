"""Power study: known-bad generators the outcome battery must reject, and the sample sizes at
which it does, beside our own generator, which must pass at the same sizes.

The bad generators (each a deliberate, classic mistake):

* ``modulo_wheel`` - a single zero wheel spun as ``byte % 37`` of fair bytes: 256 = 6 * 37 + 34,
  so 34 numbers come up 7/256 of the time and 3 numbers 6/256 (the modulo bias SP 800-90A
  Appendix A.5 warns about; ``rng_service.sampling`` rejects instead).
* ``naive_shuffle`` - for i = 0..N-1 swap card i with card ``randbelow(N)`` (a fair index into
  the *whole* deck): N^N equally likely paths onto N! orders, which N! does not divide, so
  some orders are more likely (Knuth, TAOCP vol. 2, section 3.4.2, Algorithm P is the fix).
* ``randu`` - the LCG x' = 65539 x mod 2^31 (IBM's RANDU), emitting the low byte of each state:
  the low k bits of a power-of-two-modulus LCG have period at most 2^k (Knuth 3.2.1.1), so the
  byte stream repeats every 64 outputs.
* ``stuck_bit`` - fair bytes with bit 3 of every byte stuck at 1 (a failed line of a hardware
  source).
* ``short_period`` - a fair stream that repeats its first 4,096 bytes (a generator whose state
  cycles early, or an entropy pool reused).
* ``randu_high`` - RANDU again, but each double zero wheel spin taken from the *high* bits of
  the state, compartment floor(38 x / 2^31): the high bits look uniform and pass every test
  of single values and pairs; RANDU's defect is that consecutive triples satisfy
  x[k+2] = 6 x[k+1] - 9 x[k] mod 2^31 (its points lie on 15 planes: Marsaglia 1968, "Random
  numbers fall mainly in the planes"), which the overlapping triples see.
* ``lag_correlated`` - fair spins, except that each spin, with probability 1/20, repeats the
  spin 7 before it (a buffer read at the wrong offset): invisible to tests of single values
  and of neighbours, seen by the serial correlation at lag 7.
* ``suppressed_pair`` - a double zero wheel on which one ordered pair of numbers never occurs
  (the second is redrawn whenever it would follow the first), everything else fair: one dead
  cell among 1,444, diluted by the pairs chi-square, seen by ``pairs_max_cell``.
* ``suppressed_repeat`` - a double zero wheel that never shows a number twice in a row (a
  "no streaks" rule): seen by ``gap_per_value`` and ``pairs_max_cell``.

The byte-level generators feed the service's own sampler (``RandomSource.randbelow``, exactly
as ``roulette.draw``) and the battery tests the resulting single zero wheel spins; the two
algorithmic mistakes produce spins or one-deck shuffles directly. Our generator is
``DeterministicGenerator`` (lab mode) with a fixed seed. Everything is seeded, so each verdict
is the same on every run.

:data:`TEST_SIZES` are the documented sizes at which the unit tests require rejection (and
our generator's pass); :func:`run_study` runs each generator on independent replicates (a seed
each) at the sizes of :data:`SPIN_LADDER` / :data:`SHUFFLE_LADDER` and reports, for each bad
generator, the smallest size rejected (verdict FAIL) in at least 99 % of replicates (the power
target; ``make bench`` runs 100 replicates, so 99 of them must FAIL), and
our generator's rejection rate (its false alarms) at every size up to the largest needed.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from certification.outcomes import BatteryResult, OutcomeSample, run_battery
from certification.outcomes.battery import DEFAULT_CONFIDENCE, all_tests, group_specs
from certification.outcomes.power_sizes import MEASURED, POWER, required_sizes
from certification.sources import (
    ByteSource,
    RandBelow,
    lab_generator,
    random_source,
    spin_positions,
)
from certification.tallies import sample_from_positions, sample_from_shuffles
from certification.verdict import Verdict

__all__ = [
    "BAD_GENERATORS",
    "DEFAULT_REPLICATES",
    "GOOD_GENERATORS",
    "OURS_MAX_REJECTION_RATE",
    "POWER_TARGET",
    "SCENARIOS",
    "SHUFFLE_LADDER",
    "SPIN_LADDER",
    "TEST_SIZES",
    "Randu",
    "Scenario",
    "ShortPeriod",
    "StuckBit",
    "StudyRow",
    "Trial",
    "naive_shuffle",
    "power_table",
    "run_at",
    "run_study",
    "study_json",
    "study_passed",
    "study_steps",
]

SEED = "power-study-2026"
WHEEL = "single_zero"
DECK = 52
RANDU_MULTIPLIER = 65539
STUCK_BIT = 3
PERIOD_BYTES = 4096
LAG = 7
LAG_SHARE = 20  # one spin in LAG_SHARE repeats the one LAG before
SUPPRESSED_PAIR = (5, 17)  # compartments of the double zero wheel: 17 never follows 5

SPIN_LADDER = (
    200, 300, 500, 700, 1_000, 1_500, 2_000, 3_000, 4_000, 5_000, 7_000, 10_000, 15_000,
    20_000, 30_000, 50_000, 70_000, 100_000, 150_000, 200_000,
)  # fmt: skip
SHUFFLE_LADDER = (100, 150, 200, 300, 400, 500, 700, 1_000, 2_000, 5_000, 10_000, 20_000)


class Randu:
    """RANDU, x' = 65539 x mod 2^31 from an odd seed; :meth:`random_bytes` emits the low byte
    of each successive state."""

    def __init__(self, seed: int = 1) -> None:
        self._x = seed | 1

    def random_bytes(self, n: int) -> bytes:
        out = bytearray(n)
        x = self._x
        for i in range(n):
            x = (RANDU_MULTIPLIER * x) & 0x7FFFFFFF
            out[i] = x & 0xFF
        self._x = x
        return bytes(out)


class StuckBit:
    """``source``'s bytes with bit ``bit`` (0 = least significant) forced to 1."""

    def __init__(self, source: ByteSource, bit: int = STUCK_BIT) -> None:
        self._source = source
        self._mask = 1 << bit

    def random_bytes(self, n: int) -> bytes:
        return bytes(b | self._mask for b in self._source.random_bytes(n))


class ShortPeriod:
    """The first ``period`` bytes of ``source``, repeated for ever."""

    def __init__(self, source: ByteSource, period: int = PERIOD_BYTES) -> None:
        self._block = source.random_bytes(period)
        self._pos = 0

    def random_bytes(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            take = min(n - len(out), len(self._block) - self._pos)
            out += self._block[self._pos : self._pos + take]
            self._pos = (self._pos + take) % len(self._block)
        return bytes(out)


def randu_high_positions(seed: int, n: int, compartments: int = 38) -> list[int]:
    """n compartments floor(compartments * x / 2^31) from successive RANDU states."""
    x = seed | 1
    out = []
    for _ in range(n):
        x = (RANDU_MULTIPLIER * x) & 0x7FFFFFFF
        out.append(compartments * x >> 31)
    return out


def lag_correlated_positions(source: ByteSource, n: int, compartments: int = 37) -> list[int]:
    """Fair compartments, except that with probability 1/LAG_SHARE a spin repeats the one LAG
    spins before it (the choice from the same fair source)."""
    src = random_source(source)
    fair = src.randbelow_batch(compartments, n).tolist()
    repeat = (src.randbelow_batch(LAG_SHARE, n) == 0).tolist()
    out: list[int] = []
    for i in range(n):
        out.append(out[i - LAG] if i >= LAG and repeat[i] else int(fair[i]))
    return out


def suppressed_pair_positions(
    source: ByteSource, n: int, pair: tuple[int, int] = SUPPRESSED_PAIR, compartments: int = 38
) -> list[int]:
    """Fair compartments, except that ``pair[1]`` never follows ``pair[0]`` (redrawn)."""
    src = random_source(source)
    out: list[int] = []
    while len(out) < n:
        for x in src.randbelow_batch(compartments, n - len(out) + 64).tolist():
            if out and out[-1] == pair[0] and x == pair[1]:
                continue
            out.append(int(x))
            if len(out) == n:
                break
    return out


def no_repeat_positions(source: ByteSource, n: int, compartments: int = 38) -> list[int]:
    """Fair compartments, except that a compartment never follows itself (redrawn)."""
    src = random_source(source)
    out: list[int] = []
    while len(out) < n:
        for x in src.randbelow_batch(compartments, n - len(out) + 64).tolist():
            if out and out[-1] == x:
                continue
            out.append(int(x))
            if len(out) == n:
                break
    return out


def naive_shuffle(src: RandBelow, size: int = DECK) -> list[int]:
    """The classic wrong shuffle: swap each position with a uniform index of the whole deck."""
    deck = list(range(size))
    for i in range(size):
        j = src.randbelow(size)
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def _fair(tag: str, rep: int) -> ByteSource:
    return lab_generator(hashlib.sha256(f"{SEED}/{tag}/{rep}".encode()).hexdigest())


def _spins(source: ByteSource, n: int) -> OutcomeSample:
    return sample_from_positions(WHEEL, spin_positions(source, WHEEL, n))


def _modulo_wheel(n: int, rep: int) -> OutcomeSample:
    data = _fair("modulo", rep).random_bytes(n)
    return sample_from_positions(WHEEL, [b % 37 for b in data])


def _naive(n: int, rep: int) -> OutcomeSample:
    src = random_source(_fair("naive", rep))
    return sample_from_shuffles([naive_shuffle(src) for _ in range(n)])


def _good_shuffles(n: int, rep: int) -> OutcomeSample:
    src = random_source(_fair("ours-shuffle", rep))
    return sample_from_shuffles([src.shuffle(list(range(DECK))) for _ in range(n)])


@dataclass(frozen=True)
class Scenario:
    """A generator and the outcome it is judged on (``spins`` or ``shuffles``); ``make(n, r)``
    gives n outcomes of replicate r (an independent seed per replicate)."""

    name: str
    outcome: str
    description: str
    make: Callable[[int, int], OutcomeSample]
    bad: bool


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("modulo_wheel", "spins", "single zero wheel from byte % 37", _modulo_wheel, True),
        Scenario("naive_shuffle", "shuffles", "swap i with randbelow(52), i = 0..51", _naive, True),
        Scenario("randu", "spins", "RANDU low byte through randbelow(37)",
                 lambda n, r: _spins(Randu(2 * r + 1), n), True),
        Scenario("stuck_bit", "spins", f"bit {STUCK_BIT} of every byte stuck at 1",
                 lambda n, r: _spins(StuckBit(_fair("stuck", r)), n), True),
        Scenario("short_period", "spins", f"stream repeating every {PERIOD_BYTES} bytes",
                 lambda n, r: _spins(ShortPeriod(_fair("period", r)), n), True),
        Scenario("randu_high", "spins", "RANDU high bits: floor(38 x / 2^31), double zero wheel",
                 lambda n, r: sample_from_positions("double_zero",
                                                    randu_high_positions(2 * r + 1, n)), True),
        Scenario("lag_correlated", "spins",
                 f"fair spins, 1 in {LAG_SHARE} repeats the spin {LAG} before",
                 lambda n, r: sample_from_positions(WHEEL, lag_correlated_positions(
                     _fair("lag", r), n)), True),
        Scenario("suppressed_pair", "spins",
                 "double zero wheel, one ordered pair of compartments never occurs",
                 lambda n, r: sample_from_positions("double_zero", suppressed_pair_positions(
                     _fair("pair", r), n)), True),
        Scenario("suppressed_repeat", "spins",
                 "double zero wheel, no number twice in a row",
                 lambda n, r: sample_from_positions("double_zero", no_repeat_positions(
                     _fair("repeat", r), n)), True),
        Scenario("ours_spins", "spins", "DeterministicGenerator (lab mode), fixed seed",
                 lambda n, r: _spins(_fair("ours-spins", r), n), False),
        Scenario("ours_shuffles", "shuffles", "DeterministicGenerator (lab mode), fixed seed",
                 _good_shuffles, False),
    )
}  # fmt: skip
BAD_GENERATORS = tuple(n for n, s in SCENARIOS.items() if s.bad)
GOOD_GENERATORS = tuple(n for n, s in SCENARIOS.items() if not s.bad)

#: Sample sizes at which the unit tests require each bad generator to be rejected (replicate
#: 0) (docs/certification.md, "Power study"): the sizes :func:`run_study` found each one caught
#: at (FAIL in >= 99 of 100 replicates, ``python -m bench power``; the measured ones are
#: :data:`certification.outcomes.power_sizes.MEASURED`, the single source of the verdict's
#: sizes).
TEST_SIZES: dict[str, int] = {
    "modulo_wheel": 70_000,
    **{defect: size for defect, (_, _, size) in MEASURED.items()},
    "suppressed_pair": 50_000,
    "suppressed_repeat": 50_000,
}
#: The study calls a generator caught at the smallest size rejected in this share of replicates.
POWER_TARGET = 0.99
DEFAULT_REPLICATES = 100


def run_at(
    name: str, n: int, *, replicate: int = 0, confidence: float = DEFAULT_CONFIDENCE
) -> BatteryResult:
    """The battery on ``n`` outcomes of replicate ``replicate`` of scenario ``name``."""
    return run_battery(SCENARIOS[name].make(n, replicate), confidence=confidence)


@dataclass(frozen=True)
class Trial:
    """The battery's verdicts on ``replicates`` independent samples of ``size`` outcomes:
    ``rejections`` FAILed, ``inconclusive`` were INCONCLUSIVE, the rest PASSed."""

    size: int
    replicates: int
    rejections: int
    failed_tests: tuple[str, ...]
    inconclusive: int = 0
    failed_counts: tuple[tuple[str, int], ...] = ()

    @property
    def rejection_rate(self) -> float:
        return self.rejections / self.replicates


@dataclass(frozen=True)
class StudyRow:
    """One generator in the study, its trials smallest size first. ``caught_at``: the first
    size rejected in at least :data:`POWER_TARGET` of the replicates (``None``: never)."""

    name: str
    outcome: str
    description: str
    bad: bool
    trials: tuple[Trial, ...]

    @property
    def caught_at(self) -> int | None:
        for t in self.trials:
            if t.rejection_rate >= POWER_TARGET:
                return t.size
        return None

    @property
    def first_rejection_at(self) -> int | None:
        for t in self.trials:
            if t.rejections:
                return t.size
        return None


def _trial(
    name: str, n: int, replicates: int, confidence: float, on_step: Callable[[], None] | None
) -> Trial:
    rejections = 0
    inconclusive = 0
    failed: Counter[str] = Counter()
    for r in range(replicates):
        result = run_at(name, n, replicate=r, confidence=confidence)
        if result.verdict is Verdict.FAIL:
            rejections += 1
            failed.update(result.failed)
        elif result.verdict is Verdict.INCONCLUSIVE:
            inconclusive += 1
        if on_step is not None:
            on_step()
    counts = tuple(sorted(failed.items(), key=lambda kv: (-kv[1], kv[0])))
    return Trial(n, replicates, rejections, tuple(sorted(failed)), inconclusive, counts)


def study_steps(replicates: int = DEFAULT_REPLICATES) -> int:
    """An upper bound on the battery runs :func:`run_study` makes (for a progress bar)."""
    spin_generators = sum(1 for n in SCENARIOS.values() if n.outcome == "spins")
    shuffle_generators = len(SCENARIOS) - spin_generators
    return replicates * (
        spin_generators * len(SPIN_LADDER) + shuffle_generators * len(SHUFFLE_LADDER)
    )


def run_study(
    *,
    replicates: int = DEFAULT_REPLICATES,
    confidence: float = DEFAULT_CONFIDENCE,
    on_step: Callable[[], None] | None = None,
) -> list[StudyRow]:
    """Each bad generator up its ladder (:data:`SPIN_LADDER` or :data:`SHUFFLE_LADDER`) until it
    is caught; then our generator at every size up to the largest that any bad generator
    needed, with the same number of replicates (its rejection rate estimates the false alarm
    rate, about 1 - confidence to 2 (1 - confidence) with the second-level test)."""
    ladders = {"spins": SPIN_LADDER, "shuffles": SHUFFLE_LADDER}
    needed = {"spins": 0, "shuffles": 0}
    rows: list[StudyRow] = []
    for name in BAD_GENERATORS:
        s = SCENARIOS[name]
        trials = []
        for n in ladders[s.outcome]:
            trial = _trial(name, n, replicates, confidence, on_step)
            trials.append(trial)
            if trial.rejection_rate >= POWER_TARGET:
                break
        needed[s.outcome] = max(needed[s.outcome], trials[-1].size)
        rows.append(StudyRow(name, s.outcome, s.description, True, tuple(trials)))
    for name in GOOD_GENERATORS:
        s = SCENARIOS[name]
        sizes = [n for n in ladders[s.outcome] if n <= needed[s.outcome]]
        trials = [_trial(name, n, replicates, confidence, on_step) for n in sizes]
        rows.append(StudyRow(name, s.outcome, s.description, False, tuple(trials)))
    return rows


#: Our generator's rejection rate over the whole study must stay below this for the study to
#: pass (about five times the nominal false alarm rate; 20 replicates x 6 sizes give 120 runs).
OURS_MAX_REJECTION_RATE = 0.05


def study_passed(rows: list[StudyRow]) -> bool:
    """Every bad generator caught, and our generator's overall rejection rate below
    :data:`OURS_MAX_REJECTION_RATE`."""
    if any(r.bad and r.caught_at is None for r in rows):
        return False
    runs = sum(t.replicates for r in rows if not r.bad for t in r.trials)
    rejections = sum(t.rejections for r in rows if not r.bad for t in r.trials)
    return runs == 0 or rejections / runs < OURS_MAX_REJECTION_RATE


def _caught_by(row: StudyRow) -> list[str]:
    """The tests that FAIL in at least half the replicates at the caught-at size, most
    often first."""
    for t in row.trials:
        if t.size == row.caught_at:
            return [name for name, count in t.failed_counts if 2 * count >= t.replicates]
    return []


def study_json(
    rows: list[StudyRow],
    *,
    confidence: float,
    replicates: int,
    evidence: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The power study's JSON document (docs/certification.md, "Power study")."""
    passed = study_passed(rows)
    document: dict[str, Any] = {
        "study": "power",
        "verdict": (Verdict.PASS if passed else Verdict.FAIL).value,
        "verdict_reason": "every bad generator caught and our generator's false alarm rate "
        f"below {OURS_MAX_REJECTION_RATE:g}"
        if passed
        else "a bad generator was not caught, or our generator was rejected too often",
        "confidence": confidence,
        "replicates": replicates,
        "power_target": POWER_TARGET,
        "ours_max_rejection_rate": OURS_MAX_REJECTION_RATE,
        "criteria": {
            "battery": "the outcome battery (Holm at alpha = 1 - confidence, second level)",
            "alpha": round(1 - confidence, 12),  # as given: 0.01, not 0.010000000000000009
            "caught_at": f"the first ladder size whose replicates FAIL in at least "
            f"{POWER_TARGET:.0%} ({replicates} replicates per size, a seed each)",
            "spin_ladder": list(SPIN_LADDER),
            "shuffle_ladder": list(SHUFFLE_LADDER),
            "ours": "our generator (DeterministicGenerator, lab mode) at every size up to the "
            f"largest any bad generator needed; overall FAIL rate below "
            f"{OURS_MAX_REJECTION_RATE:g}",
        },
        "generators": [
            {
                "name": r.name,
                "outcome": r.outcome,
                "description": r.description,
                "bad": r.bad,
                "caught_at": r.caught_at,
                "caught_by": _caught_by(r),
                "first_rejection_at": r.first_rejection_at,
                "trials": [
                    {
                        "size": t.size,
                        "replicates": t.replicates,
                        "rejections": t.rejections,
                        "inconclusive": t.inconclusive,
                        "failed_tests": list(t.failed_tests),
                        "failed_counts": dict(t.failed_counts),
                    }
                    for t in r.trials
                ],
            }
            for r in rows
        ],
        "passed": passed,
    }
    if evidence is not None:
        document["evidence"] = evidence
    return document


#: The groups of docs/certification.md's table of power sizes: (row label, plan item of
#: :data:`certification.sources.KIND_PARAMS`).
POWER_TABLE_KINDS = (
    ("single zero wheel", "roulette_single_zero"),
    ("double zero wheel", "roulette_double_zero"),
    ("double zero wheel used as single zero", "roulette_double_zero_as_single_zero"),
    ("Sic Bo (3 dice)", "sic_bo"),
    ("one deck", "card_shuffle"),
    ("six-deck shoe", "card_shoe_6"),
)


def power_table(confidence: float = DEFAULT_CONFIDENCE) -> str:
    """docs/certification.md's table of the sizes each kind needs for a PASS (a run of that
    kind alone: alpha divided among its group's tests), generated from
    :func:`certification.outcomes.power_sizes.required_sizes`."""
    from certification.sources import generate_records
    from certification.tallies import build_sample

    alpha = 1 - confidence
    lines = [
        "| Kind | Reference defect | Test that sees it | Outcomes for 99 % power | How |",
        "|---|---|---|---|---|",
    ]
    for label, item in POWER_TABLE_KINDS:
        sample = build_sample(generate_records(lab_generator("power-table"), {item: 40}))
        m = len(all_tests(sample))
        (spec,) = group_specs(sample)
        sizes = sorted(required_sizes(spec, alpha=alpha, m=m), key=lambda s: -s.size)
        for i, size in enumerate(sizes):
            name = f"**{label}** ({m} tests)" if i == 0 else ""
            lines.append(f"| {name} | `{size.defect}` | `{size.test}` | "
                         f"{'**' if i == 0 else ''}{size.size:,}{'**' if i == 0 else ''} | "
                         f"{size.method} |")  # fmt: skip
    lines.append("")
    lines.append(f"(confidence {confidence:g}; the first row of each kind is the size below "
                 f"which it is INCONCLUSIVE; power {POWER:g}.)")  # fmt: skip
    return "\n".join(lines) + "\n"
