"""The common result type of every SP 800-22 test.

Owns :class:`TestResult` and the bit-array type alias. It does no statistics and no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Bits", "TestResult", "as_bits"]

Bits = npt.NDArray[np.uint8]
"""A one-dimensional numpy ``uint8`` array holding only 0 and 1, first bit first."""


@dataclass(frozen=True)
class TestResult:
    """The P-values one test produced for one sequence.

    ``labels`` names each sub-result in the order of the reference implementation sts-2.1.2
    (for example ``("forward", "reverse")`` for the cumulative sums test); ``p_values`` has the
    same length. A P-value of ``None`` means the test is not applicable to this sequence (the
    random excursion tests with too few cycles, or a sequence too short for the test).
    """

    __test__ = False  # not a pytest test class, despite the name

    name: str
    labels: tuple[str, ...]
    p_values: tuple[float | None, ...]

    def __post_init__(self) -> None:
        if len(self.labels) != len(self.p_values):
            raise ValueError(
                f"{self.name}: {len(self.labels)} labels for {len(self.p_values)} P-values"
            )

    @property
    def p_value(self) -> float | None:
        """The single P-value of a test with one sub-result."""
        if len(self.p_values) != 1:
            raise ValueError(f"{self.name} has {len(self.p_values)} P-values, not one")
        return self.p_values[0]

    @classmethod
    def single(cls, name: str, p_value: float | None) -> TestResult:
        return cls(name=name, labels=(name,), p_values=(p_value,))


def as_bits(sequence: npt.ArrayLike) -> Bits:
    """Validates ``sequence`` as a flat array of 0/1 values and returns it as ``uint8``."""
    bits = np.asarray(sequence)
    if bits.ndim != 1:
        raise ValueError(f"expected a one-dimensional bit array, got shape {bits.shape}")
    if bits.size and (bits.min() < 0 or bits.max() > 1):
        raise ValueError("bit array holds values other than 0 and 1")
    return bits.astype(np.uint8, copy=False)
