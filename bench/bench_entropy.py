"""SP 800-90B non-IID estimators against NIST's ``ea_non_iid``: ``python -m bench entropy``.

Long form: 1,000,000 8-bit samples (an AES-256-CTR keystream, one sample per byte) through every
non-IID estimator (``certification.entropy.non_iid``: the 8,000,000-bit bitstring and the
literal samples), CPU seconds, against ``ea_non_iid -vv`` on the same file in the same run
(baseline: its CPU seconds, user + system, of the child process). The target is a ratio of at
most 10. NIST's tool is not part of the project: build it with its own Makefile
(docs/certification.md, "Entropy assessment") and name it in ``EA_NON_IID`` (default: ``ea_non_iid``
on PATH); without it the long form stops with that message, and the short form (100,000
samples, what ``make test`` runs) measures ours alone and reports the ratio as NOT MEASURED.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from bench._common import Row
from certification.entropy._samples import Samples
from certification.entropy.non_iid import assess_non_iid

__all__ = ["run"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _samples(n: int) -> bytes:
    return (
        Cipher(algorithms.AES(bytes(range(32))), modes.CTR(bytes(16))).encryptor().update(bytes(n))
    )


def _ours_alone(n: int) -> Row:
    """Without NIST's tool: our estimators' CPU seconds, and no ratio (baseline 0: NaN)."""
    samples = Samples.from_bytes(_samples(n), 8)
    start = time.process_time()
    assess_non_iid(samples)
    return Row(
        name=f"SP 800-90B non-IID estimators, {n:,} 8-bit samples (CPU s)",
        value=time.process_time() - start,
        unit="s",
        baseline_name="ea_non_iid: not found, ratio NOT MEASURED (set EA_NON_IID)",
        baseline_value=0.0,
        target="ratio <= 10",
    )


def run(*, short: bool) -> list[Row]:
    n = 100_000 if short else 1_000_000
    tool = os.environ.get("EA_NON_IID") or shutil.which("ea_non_iid")
    if tool is None and short:
        return [_ours_alone(n)]  # make test's smoke run: ours runs; the ratio is not measured
    if tool is None:
        raise SystemExit(
            "bench entropy needs NIST's ea_non_iid (SP800-90B_EntropyAssessment, built with its "
            "own Makefile): set EA_NON_IID to its path"
        )
    data = _samples(n)
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "samples.bin"
        path.write_bytes(data)
        before = _children_cpu()
        subprocess.run([tool, "-vv", str(path), "8"], capture_output=True, check=True, timeout=7200)
        nist = _children_cpu() - before
    start = time.process_time()
    assess_non_iid(Samples.from_bytes(data, 8))
    ours = time.process_time() - start
    return [
        Row(
            name=f"SP 800-90B non-IID estimators, {n:,} 8-bit samples (CPU s)",
            value=ours,
            unit="s",
            baseline_name="ea_non_iid -vv on the same file (CPU s)",
            baseline_value=nist,
            target="ratio <= 10",
        )
    ]
