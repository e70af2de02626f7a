"""The verdicts every battery of the certification suite reaches, and their exit codes.

* ``PASS``: the sample is large enough for the battery's decisions to mean something (its
  documented minimum) and no decision, after the battery's multiple-testing rule, rejects.
* ``FAIL``: the evidence against randomness is decisive under the battery's rule, whatever
  the sample size (an all-zero or stuck-bit sequence fails on one sequence).
* ``INCONCLUSIVE``: nothing is decisive, but the sample is below the battery's minimum; the
  message names the size needed.

Exit codes of ``rng-certify`` (docs/certification.md, "Verdicts and exit codes"): 0 PASS,
1 FAIL, 2 usage or input error, 3 INCONCLUSIVE. A command that reaches several verdicts (``all``,
``report``) exits with the worst: FAIL over INCONCLUSIVE over PASS.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

__all__ = [
    "EXIT_FAIL",
    "EXIT_INCONCLUSIVE",
    "EXIT_PASS",
    "EXIT_USAGE",
    "Verdict",
    "combine",
    "exit_code",
]

EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
EXIT_INCONCLUSIVE = 3


class Verdict(enum.Enum):
    PASS = "PASS"  # noqa: S105 - a verdict, not a password
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"


_EXIT = {Verdict.PASS: EXIT_PASS, Verdict.FAIL: EXIT_FAIL, Verdict.INCONCLUSIVE: EXIT_INCONCLUSIVE}
_RANK = {Verdict.PASS: 0, Verdict.INCONCLUSIVE: 1, Verdict.FAIL: 2}


def exit_code(verdict: Verdict) -> int:
    return _EXIT[verdict]


def combine(verdicts: Iterable[Verdict]) -> Verdict:
    """The worst of ``verdicts`` (FAIL over INCONCLUSIVE over PASS); none is INCONCLUSIVE."""
    found = list(verdicts)
    if not found:
        return Verdict.INCONCLUSIVE
    return max(found, key=_RANK.__getitem__)
