"""SP 800-90B estimators and IID tests against NIST's tool: ``python -m bench entropy``.

Long form, on 1,000,000 8-bit samples (an AES-256-CTR keystream, one sample per byte):

* every non-IID estimator (``certification.entropy.non_iid``: the 8,000,000-bit bitstring and
  the literal samples), CPU seconds, against ``ea_non_iid -vv`` on the same file in the same run;
* the IID track (section 5 permutation tests, chi-square and LRS tests, section 6.1 estimate;
  fixed seed), CPU seconds, against ``ea_iid -v`` on the same file in the same run.

Baselines are the child process's CPU seconds (user + system; NIST's tool runs its permutations
on every core with OpenMP, so CPU time, not wall time, is compared). The target is a ratio of
at most 10. NIST's tool is not part of the project: build it with its own Makefile
(docs/certification.md, "Entropy assessment") and name the programs in ``EA_NON_IID`` and
``EA_IID`` (default: on PATH); without them the long form stops with that message, and the
short form (100,000 samples, what ``make test`` runs) measures ours alone and reports the ratio
as NOT MEASURED.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from bench._common import Row
from certification.entropy._samples import Samples
from certification.entropy.iid import iid_estimate, iid_tests
from certification.entropy.non_iid import assess_non_iid

__all__ = ["run"]

_TARGET = "ratio <= 10"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _samples(n: int) -> bytes:
    return (
        Cipher(algorithms.AES(bytes(range(32))), modes.CTR(bytes(16))).encryptor().update(bytes(n))
    )


def _non_iid(samples: Samples) -> None:
    assess_non_iid(samples)


def _iid(samples: Samples) -> None:
    iid_estimate(samples)
    result = iid_tests(samples, np.random.default_rng(1))
    print(f"  IID tests: {result.permutations_run} permutations, passed={result.passed}")


def _ours(work: Callable[[Samples], None], data: bytes) -> float:
    samples = Samples.from_bytes(data, 8)
    start = time.process_time()
    work(samples)
    return time.process_time() - start


def _theirs(tool: str, args: list[str], data: bytes) -> float:
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "samples.bin"
        path.write_bytes(data)
        before = _children_cpu()
        subprocess.run([tool, *args, str(path), "8"], capture_output=True, check=True, timeout=7200)
        return _children_cpu() - before


def run(*, short: bool) -> list[Row]:
    n = 100_000 if short else 1_000_000
    data = _samples(n)
    cases = [
        ("non-IID estimators", "EA_NON_IID", "ea_non_iid", ["-vv"], _non_iid),
        ("IID track (5.1 permutation tests, 5.2, 6.1)", "EA_IID", "ea_iid", ["-v"], _iid),
    ]
    rows = []
    for what, env, program, args, work in cases:
        tool = os.environ.get(env) or shutil.which(program)
        if tool is None and not short:
            raise SystemExit(
                f"bench entropy needs NIST's {program} (SP800-90B_EntropyAssessment, built with "
                f"its own Makefile): set {env} to its path"
            )
        nist = _theirs(tool, args, data) if tool is not None else 0.0
        ours = _ours(work, data)
        rows.append(
            Row(
                name=f"SP 800-90B {what}, {n:,} 8-bit samples (CPU s)",
                value=ours,
                unit="s",
                baseline_name=(
                    f"{program} {' '.join(args)} on the same file (CPU s)"
                    if tool is not None
                    else f"{program}: not found, ratio NOT MEASURED (set {env})"
                ),
                baseline_value=nist,
                target=_TARGET,
            )
        )
    return rows
