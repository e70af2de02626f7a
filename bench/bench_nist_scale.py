"""``rng-certify nist`` at scale: flat memory while streaming, and the suite verdict's false-FAIL
rate for an ideal generator. ``python -m bench nist_scale`` (``--short`` for a smoke run).

Long form (about 10 minutes on an idle 2-core machine; 35 on the shared, loaded one):

* **Memory.** The CLI (one process, ``--jobs 1``) on 1,000 sequences of 10^6 bits of an
  AES-256-CTR keystream, binary (125 MB) and ASCII (1 GB, 64 characters a line), each against
  the same command on 10 sequences: peak resident memory (``VmHWM`` of a fresh process), so
  the ratio reads "how much more memory 100 times the input took".
* **Time.** The CLI's wall time per sequence on the 1,000-sequence binary file, against the
  battery alone on pre-unpacked bits (``bench sp800_22``'s figure, measured here on 10).
* **False FAIL rate.** The 1,000-sequence binary report's P-values are a pool of ideal-generator
  sequences (AES-CTR); 500 runs of m = 55 and m = 100 sequences drawn from it without
  replacement (a fixed seed) are assessed with the suite rule
  (``certification.sp800_22.assessment.suite_verdict``): the share that FAIL, against the
  bound SUITE_ALPHA. Runs share sequences, so these are resampling estimates.

Short form: 3 and 2 sequences of 20,000 bits, 20 resampled runs of 2 sequences.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from bench._common import Row
from certification.sp800_22 import TestResult, assess, run_tests
from certification.sp800_22.assessment import SUITE_ALPHA, suite_verdict
from certification.verdict import Verdict

__all__ = ["run"]

_PIECE = 1 << 22
#: Peak memory of the command's own address space: VmHWM of /proc/self/status. Not
#: ``getrusage().ru_maxrss``: Linux carries the parent's high-water mark over the child's
#: fork and exec, so it reported this benchmark's own peak (about 226 MiB after writing an
#: ASCII file) instead of the command's (165 MiB).
_PROBE = (
    "import sys\n"
    "from certification.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "with open('/proc/self/status') as status:\n"
    "    kib = next(line.split()[1] for line in status if line.startswith('VmHWM:'))\n"
    "print('MAXRSS', kib, code)\n"
)


def _keystream_file(path: Path, n_bytes: int, fmt: str) -> None:
    encryptor = Cipher(algorithms.AES(bytes(range(32))), modes.CTR(bytes(16))).encryptor()
    with path.open("wb") as out:
        left = n_bytes
        while left:
            take = min(_PIECE, left)
            data = encryptor.update(bytes(take))
            if fmt == "binary":
                out.write(data)
            else:
                digits = np.unpackbits(np.frombuffer(data, dtype=np.uint8)) + np.uint8(48)
                whole = digits.size // 64 * 64
                lines = digits[:whole].reshape(-1, 64)
                framed = np.concatenate(
                    (lines, np.full((lines.shape[0], 1), 10, dtype=np.uint8)), axis=1
                )
                out.write(framed.tobytes() + digits[whole:].tobytes())
            left -= take


def _cli(path: Path, fmt: str, n: int, report: Path) -> tuple[float, float, int]:
    """(peak RSS in MiB, wall seconds, exit code) of ``rng-certify nist`` in a fresh process."""
    argv = ["nist", "--input", str(path), "--format", fmt, "--bits-per-sequence", str(n),
            "--json", str(report)]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, check=False,
        timeout=3 * 3600,
    )  # fmt: skip
    wall = time.perf_counter() - start
    line = [x for x in done.stdout.splitlines() if x.startswith("MAXRSS")]
    if not line:
        raise RuntimeError(f"rng-certify nist failed: {done.stdout[-500:]} {done.stderr[-500:]}")
    _, kib, code = line[0].split()
    return int(kib) / 1024, wall, int(code)


def _pool(report: Path) -> list[dict[str, TestResult]]:
    doc: dict[str, Any] = json.loads(report.read_text())
    m = len(doc["tests"]["frequency"]["p_values"])
    pool: list[dict[str, TestResult]] = [{} for _ in range(m)]
    for name, test in doc["tests"].items():
        labels = tuple(test["sub_tests"])
        for i, row in enumerate(test["p_values"]):
            pool[i][name] = TestResult(name=name, labels=labels, p_values=tuple(row))
    return pool


def _false_fail_rate(pool: list[dict[str, TestResult]], m: int, runs: int) -> float:
    rng = np.random.default_rng(20261201)
    fails = 0
    for _ in range(runs):
        pick = rng.choice(len(pool), size=m, replace=False)
        verdict = suite_verdict(assess([pool[i] for i in pick]))
        fails += verdict.verdict is Verdict.FAIL
    return fails / runs


def run(*, short: bool) -> list[Row]:
    n = 20_000 if short else 1_000_000
    big, small = (3, 2) if short else (1000, 10)
    sizes = (2,) if short else (55, 100)
    runs = 20 if short else 500
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-nist-") as tmp:
        work = Path(tmp)
        reports: dict[tuple[str, int], Path] = {}
        measured: dict[tuple[str, int], tuple[float, float, int]] = {}
        for fmt in ("binary", "ascii"):
            for count in (small, big):
                path = work / f"{fmt}-{count}.bits"
                _keystream_file(path, count * n // 8, fmt)
                report = work / f"{fmt}-{count}.json"
                measured[(fmt, count)] = _cli(path, fmt, n, report)
                reports[(fmt, count)] = report
                path.unlink()
        label = f"{n:,} bits"
        for fmt in ("binary", "ascii"):
            rows.append(
                Row(
                    name=f"nist peak memory, {big} x {label} ({fmt})",
                    value=measured[(fmt, big)][0],
                    unit="MiB",
                    baseline_name=f"the same command on {small} sequences",
                    baseline_value=measured[(fmt, small)][0],
                    target="flat: ratio near 1",
                )
            )
        started = time.perf_counter()
        bits = np.unpackbits(
            np.frombuffer(
                Cipher(algorithms.AES(bytes(32)), modes.CTR(bytes(16)))
                .encryptor()
                .update(bytes(small * n // 8)),
                dtype=np.uint8,
            )
        ).reshape(small, n)
        for sequence in bits:
            run_tests(sequence)
        battery = (time.perf_counter() - started) / small
        rows.append(
            Row(
                name=f"nist CLI wall time per sequence, {big} x {label} (binary)",
                value=measured[("binary", big)][1] / big,
                unit="s",
                baseline_name="battery alone on unpacked bits",
                baseline_value=battery,
            )
        )
        pool = _pool(reports[("binary", big)])
        for m in sizes:
            rows.append(
                Row(
                    name=f"nist suite verdict FAIL rate, ideal generator, {m} sequences "
                    f"({runs} resampled runs)",
                    value=max(_false_fail_rate(pool, m, runs), 1e-9),
                    unit="share",
                    baseline_name="bound SUITE_ALPHA",
                    baseline_value=SUITE_ALPHA,
                    target=f"<= {SUITE_ALPHA}",
                )
            )
    return rows
