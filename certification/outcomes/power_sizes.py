"""The sample size below which an outcome group's verdict cannot be PASS: the size at which the
documented reference defects are detected with 99 % power at the battery's alpha.

A PASS must mean "enough data to see the defects this suite documents", not merely "every test
could run". For each group of a kind with reference defects (docs/certification.md, "Verdict
by power"), :func:`required_sizes` gives, per defect, the test that catches it and the least
number of outcomes of the group at which it does so with probability at least
:data:`POWER` when alpha is divided among the run's m tests (alpha / m is Holm's first, most
demanding step, so the sizes are conservative for Holm):

* **exact** where the test allows:
  - a *suppressed cell* of a single-cell test (:func:`certification.outcomes._stats.max_cell`)
    - one ordered pair of a wheel or a die that never occurs (``suppressed_pair``), a number
    that never comes up twice in a row (``suppressed_repeat``: every diagonal pair cell dead),
    a card that never lands in one position of the deck (``barred_position``): the dead cell's
    count is 0 with certainty, so the test rejects for sure once its Bonferroni P-value
    cells x 2 (1 - p)^T is at most alpha / m (T disjoint tuples, or shuffles);
  - the *modulo bias* of a wheel spun as ``byte % d`` (the power study's ``modulo_wheel``,
    generalised to d compartments): the ``numbers`` chi-square with d - 1 degrees of freedom
    has power P(chi'^2(d - 1, n lambda) > chi^2_(1 - alpha/m)(d - 1)) with noncentrality
    n lambda, lambda = sum (p_1 - p_0)^2 / p_0 (the noncentral chi-square law of Pearson's
    statistic under a fixed alternative, Cohen 1988 section 7.2), solved for the least n;
* **measured** by the power study (:mod:`certification.power`, 100 replicates per size, a
  size being caught when at least 99 FAIL, at confidence 0.99) for the defects no formula
  covers: RANDU's low byte and high bits, a stuck bit, a short period, a lag correlation
  (wheels) and the naive swap shuffle (one deck). Those sizes hold at alpha = 0.01; at a
  higher confidence they are lower bounds, and the report says so.

Kinds without a reference defect here (Fire Numbers, jackpot tiers, multi-ball, generic
integers, weighted choices, bonus games) keep the battery's data rule only (each test's
``min_sample``); the report states that no power size applies to them. Nothing here reads
files or imports ``rng_service``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats

__all__ = [
    "MEASURED",
    "MEASURED_CONFIDENCE",
    "POWER",
    "GroupSpec",
    "RequiredSize",
    "modulo_size",
    "required_sizes",
    "suppressed_cell_size",
]

#: The power every stated size gives against its defect.
POWER = 0.99
#: The confidence at which the power study measured :data:`MEASURED`.
MEASURED_CONFIDENCE = 0.99
#: Sizes measured by the power study (``python -m bench power``, 100 replicates, confidence
#: 0.99): defect -> (kind, the test that catches it, outcomes of the group).
MEASURED: dict[str, tuple[str, str, int]] = {
    "randu": ("wheel", "overlapping_pairs", 200),
    "stuck_bit": ("wheel", "numbers", 1_500),
    "short_period": ("wheel", "repeats", 4_000),
    "randu_high": ("wheel", "overlapping_triples", 5_000),
    "lag_correlated": ("wheel", "lag_correlation", 20_000),
    "naive_shuffle": ("shuffle", "card_by_position", 700),
}
_BYTE = 256


@dataclass(frozen=True)
class GroupSpec:
    """What the sizes of one group depend on: its ``kind`` (``wheel``, ``dice`` or
    ``shuffle``), ``alphabet`` (compartments a final spin can show, die sides, or cards in
    the shoe), ``per_outcome`` (values one outcome adds to the group's stream: dice per roll)
    and, for shuffles, ``copies`` (of each card in the shoe)."""

    group: str
    kind: str
    outcomes: int
    alphabet: int
    per_outcome: int = 1
    copies: int = 1


@dataclass(frozen=True)
class RequiredSize:
    """A reference defect, the test that catches it and the outcomes it needs."""

    defect: str
    test: str
    size: int
    method: str

    def as_dict(self) -> dict[str, object]:
        return {"defect": self.defect, "test": self.test, "size": self.size,
                "method": self.method}  # fmt: skip


def suppressed_cell_size(cells: int, p: float, alpha: float, m: int) -> int:
    """Least T with cells x 2 (1 - p)^T <= alpha / m: T draws of a table of ``cells`` cells in
    which one cell of probability ``p`` never occurs reject for sure."""
    bound = alpha / (m * 2 * cells)
    return max(1, math.ceil(math.log(bound) / math.log1p(-p)))


def modulo_size(d: int, alpha: float, m: int, power: float = POWER) -> int | None:
    """Least n at which the d-cell chi-square rejects ``byte % d`` (the first 256 mod d values
    at (q + 1)/256, the rest at q/256) with the given power at alpha / m (None: d divides
    256, no bias)."""
    q, r = divmod(_BYTE, d)
    if r == 0:
        return None
    lam = sum(((q + 1) / _BYTE - 1 / d) ** 2 * d for _ in range(r))
    lam += sum((q / _BYTE - 1 / d) ** 2 * d for _ in range(d - r))
    df = d - 1
    critical = float(stats.chi2.isf(alpha / m, df))

    def enough(n: int) -> bool:
        return float(stats.ncx2.sf(critical, df, n * lam)) >= power

    high = 1
    while not enough(high):
        high *= 2
    low = high // 2
    while high - low > 1:
        mid = (low + high) // 2
        if enough(mid):
            high = mid
        else:
            low = mid
    return high


def required_sizes(spec: GroupSpec, *, alpha: float, m: int) -> tuple[RequiredSize, ...]:
    """The sizes (module docstring) for one group, in outcomes of the group; empty for a kind
    without reference defects."""
    m = max(1, m)
    out: list[RequiredSize] = []
    d = spec.alphabet
    cell = f"exact: dead cell, Bonferroni over the cells, alpha / {m}"
    if spec.kind in ("wheel", "dice"):
        pairs = suppressed_cell_size(d * d, 1.0 / (d * d), alpha, m)
        values = 2 * pairs  # disjoint pairs of the stream
        outcomes = math.ceil(values / spec.per_outcome)
        out.append(RequiredSize("suppressed_pair", "pairs_max_cell", outcomes, cell))
        out.append(RequiredSize("suppressed_repeat", "pairs_max_cell", outcomes, cell))
    if spec.kind == "wheel":
        n = modulo_size(d, alpha, m)
        if n is not None:
            out.append(RequiredSize(
                "modulo_wheel", "numbers", n,
                f"exact: noncentral chi-square, {d - 1} df, power {POWER:g} at alpha / {m}",
            ))  # fmt: skip
        for defect, (kind, test, size) in MEASURED.items():
            if kind == "wheel":
                out.append(RequiredSize(defect, test, size, _measured()))
    if spec.kind == "shuffle":
        labels = d // spec.copies
        p = spec.copies / d
        n = suppressed_cell_size(d * labels, p, alpha, m)
        out.append(RequiredSize("barred_position", "card_by_position_max_cell", n, cell))
        if spec.copies == 1:
            for defect, (kind, test, size) in MEASURED.items():
                if kind == "shuffle":
                    out.append(RequiredSize(defect, test, size, _measured()))
    return tuple(out)


def _measured() -> str:
    return f"power study: 99 of 100 replicates FAIL at confidence {MEASURED_CONFIDENCE:g}"
