"""SP 800-90B section 6.3 non-IID track and the section 3.1.3 combination.

Runs the ten section 6.3 estimators the way NIST's ``ea_non_iid`` does for an initial entropy
estimate: on the samples (the literal track: most common value, t-tuple, LRS and the four
predictors; collision, Markov and compression too when exactly two symbols occur) and, when
more than two symbols occur, on the bitstring of section 3.1.3 (all ten). Then
``H_original`` is the least literal figure (at most ``bits_per_symbol``), ``H_bitstring`` the
least bitstring figure (at most 1), and the assessment is ``min(H_original, N x H_bitstring)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from certification.entropy import predictors, statistics, tuples
from certification.entropy._estimate import Estimate
from certification.entropy._groups import Windows
from certification.entropy._samples import Samples

__all__ = ["NonIidResult", "assess_non_iid", "run_track"]

U8 = npt.NDArray[np.uint8]


@dataclass(frozen=True, slots=True)
class NonIidResult:
    estimates: tuple[Estimate, ...]
    h_original: float
    h_bitstring: float | None
    min_entropy: float


def run_track(
    s: U8, k: int, *, bitstring: bool, binary: bool, progress: Callable[[str], None] | None = None
) -> list[Estimate]:
    """The section 6.3 estimators on one sequence (``binary``: also 6.3.2-6.3.4)."""
    out: list[Estimate] = []

    def note(e: Estimate) -> None:
        out.append(e)
        if progress is not None:
            progress(f"{'bitstring' if bitstring else 'literal'} {e.name}: {e.min_entropy}")

    note(statistics.most_common_value(s, k, bitstring=bitstring))
    if binary:
        note(statistics.collision(s, bitstring=bitstring))
        note(statistics.markov(s, bitstring=bitstring))
        note(statistics.compression(s, bitstring=bitstring))
    counts = tuples.tuple_counts(s, k)
    tuple_estimate, u = tuples.t_tuple(counts, bitstring=bitstring)
    note(tuple_estimate)
    note(tuples.lrs(counts, u, bitstring=bitstring))
    windows = Windows(s, k)
    note(predictors.multi_mcw(s, k, bitstring=bitstring))
    note(predictors.lag(s, k, bitstring=bitstring))
    note(predictors.multi_mmc(s, k, bitstring=bitstring, windows=windows))
    note(predictors.lz78y(s, k, bitstring=bitstring, windows=windows))
    windows.forget()
    return out


def _least(estimates: list[Estimate], cap: float) -> float:
    found = [e.min_entropy for e in estimates if e.min_entropy is not None]
    return min([cap, *found])


def assess_non_iid(
    samples: Samples, *, progress: Callable[[str], None] | None = None
) -> NonIidResult:
    bits: list[Estimate] = []
    h_bitstring: float | None = None
    if samples.alphabet > 2 and samples.bits is not None:
        bits = run_track(samples.bits, 2, bitstring=True, binary=True, progress=progress)
        h_bitstring = _least(bits, 1.0)
    literal = run_track(
        samples.symbols,
        samples.alphabet,
        bitstring=False,
        binary=samples.alphabet == 2,
        progress=progress,
    )
    h_original = _least(literal, float(samples.bits_per_symbol))
    final = h_original
    if h_bitstring is not None:
        final = min(h_original, samples.bits_per_symbol * h_bitstring)
    return NonIidResult(tuple(bits + literal), h_original, h_bitstring, final)
