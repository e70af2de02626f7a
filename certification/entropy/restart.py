"""SP 800-90B section 3.1.4: the restart tests.

A restart dataset is 1,000 restarts of the noise source, 1,000 samples from each, stored
restart after restart (row ``i`` holds restart ``i``). Section 3.1.4.3's sanity check counts the
most common value in every row and every column; with ``p = 2^-H_I`` the largest count must not
exceed the binomial(1000, p) critical value at ``alpha = 1 - 0.99^(1/2000)`` (the 1% false-
reject rate shared by the 2,000 rows and columns). NIST's ``ea_restart`` estimates that bound by
simulation; here it is the binomial quantile the specification states. Section 3.1.4.2 then runs
the estimators of the chosen track on the rows and on the columns (each 1,000,000 samples,
literal track only, as ``ea_restart`` does) and fails when ``min(H_r, H_c) < H_I / 2``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

from certification.entropy import statistics
from certification.entropy._estimate import Estimate
from certification.entropy._samples import Samples
from certification.entropy.non_iid import run_track
from certification.errors import InputError

__all__ = ["RESTARTS", "RestartResult", "restart_tests"]

RESTARTS = 1000
_ALPHA = 1.0 - 0.99 ** (1.0 / (2 * RESTARTS))


@dataclass(frozen=True, slots=True)
class RestartResult:
    h_i: float
    cutoff: int
    max_row_count: int
    max_column_count: int
    sanity_passed: bool
    h_r: float | None
    h_c: float | None
    validation_passed: bool | None
    row_estimates: tuple[Estimate, ...]
    column_estimates: tuple[Estimate, ...]

    @property
    def passed(self) -> bool:
        return self.sanity_passed and bool(self.validation_passed)


def restart_tests(
    samples: Samples,
    h_i: float,
    *,
    iid: bool,
    progress: Callable[[str], None] | None = None,
) -> RestartResult:
    """Sections 3.1.4.2 and 3.1.4.3 on a 1000 x 1000 restart matrix."""
    if samples.count != RESTARTS * RESTARTS:
        raise InputError(
            f"--restart: the restart matrix must hold {RESTARTS * RESTARTS:,} samples "
            f"({RESTARTS} restarts x {RESTARTS} samples), not {samples.count:,}"
        )
    rows = samples.symbols.reshape(RESTARTS, RESTARTS)
    columns = np.ascontiguousarray(rows.T)
    p = 2.0**-h_i
    cutoff = int(stats.binom.isf(_ALPHA, RESTARTS, p))
    k = samples.alphabet

    def top(matrix: npt.NDArray[np.uint8]) -> int:
        offsets = matrix.astype(np.int64) + np.arange(RESTARTS, dtype=np.int64)[:, None] * k
        return int(np.bincount(offsets.ravel(), minlength=RESTARTS * k).reshape(RESTARTS, k).max())

    x_r, x_c = top(rows), top(columns)
    sanity = max(x_r, x_c) <= cutoff
    if not sanity:
        return RestartResult(h_i, cutoff, x_r, x_c, False, None, None, None, (), ())
    cap = float(samples.bits_per_symbol)

    def assess(s: npt.NDArray[np.uint8]) -> tuple[float, tuple[Estimate, ...]]:
        if iid:
            found = [statistics.most_common_value(s, k, bitstring=False)]
        else:
            found = run_track(s, k, bitstring=False, binary=k == 2, progress=progress)
        figures = [e.min_entropy for e in found if e.min_entropy is not None]
        return min([cap, *figures]), tuple(found)

    h_r, row_estimates = assess(rows.ravel())
    h_c, column_estimates = assess(columns.ravel())
    valid = min(h_r, h_c) >= h_i / 2.0
    return RestartResult(
        h_i, cutoff, x_r, x_c, True, h_r, h_c, valid, row_estimates, column_estimates
    )
