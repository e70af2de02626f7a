"""The per-sequence P-values of a battery run, kept compact: one float64 row per sequence.

A run over m sequences holds m x 188 P-values; as ``TestResult`` tuples of Python floats they
take about 6 KB a sequence, as a numpy row 1.5 KB. :class:`PValueTable` keeps the rows and the
layout (test names and sub-test labels, in battery order); ``None`` (not applicable) is stored
as NaN and given back as ``None``. It does no statistics and no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from certification.sp800_22._result import TestResult

__all__ = ["PValueTable"]


@dataclass
class PValueTable:
    """P-values by sequence (rows) and sub-test (columns), in the battery's order."""

    labels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    rows: list[npt.NDArray[np.float64]] = field(default_factory=list)
    _start: dict[str, int] = field(default_factory=dict)
    _width: int = 0

    @classmethod
    def from_results(cls, results: Sequence[Mapping[str, TestResult]]) -> PValueTable:
        table = cls()
        for result in results:
            table.append(result)
        return table

    def append(self, result: Mapping[str, TestResult]) -> None:
        """Adds one sequence's results (the same tests and sub-tests as the first one)."""
        if not self.rows:
            for name, r in result.items():
                self._start[name] = self._width
                self.labels[name] = r.labels
                self._width += len(r.labels)
        elif list(result) != list(self.labels) or any(
            r.labels != self.labels[name] for name, r in result.items()
        ):
            raise ValueError("sub-tests differ between sequences")
        row = np.empty(self._width, dtype=np.float64)
        for name, r in result.items():
            start = self._start[name]
            row[start : start + len(r.p_values)] = [np.nan if p is None else p for p in r.p_values]
        self.rows.append(row)

    @property
    def sequences(self) -> int:
        return len(self.rows)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.labels)

    def column(self, name: str, index: int) -> list[float | None]:
        """The P-values of sub-test ``index`` of ``name`` over all sequences."""
        j = self._start[name] + index
        return [None if np.isnan(row[j]) else float(row[j]) for row in self.rows]

    def test_rows(self, name: str) -> Iterator[list[float | None]]:
        """Per sequence, the P-values of ``name``'s sub-tests (as the JSON report lists them)."""
        start = self._start[name]
        stop = start + len(self.labels[name])
        for row in self.rows:
            yield [None if np.isnan(x) else float(x) for x in row[start:stop]]
