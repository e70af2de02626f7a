"""Running Robert G. Brown's ``dieharder`` (Debian package ``dieharder``, version 3.31) on a raw
byte stream, for labs that want its tests beside SP 800-22.

``dieharder -g 200`` reads raw binary from stdin. Caveats, all handled or refused here:

* **No rewinding.** With ``-g 200`` dieharder reads stdin once; when a file runs out it does
  not start over as ``-g 201`` (file input) does, so a short file gives meaningless results.
  :func:`run` feeds a live stream (the lab generator, :func:`generator_stream`) or a file
  (:func:`file_stream`), and a file that runs out before a test finishes is an error.
* **ntuple sizes.** Some tests take an ntuple size ``-n``; ``dieharder -a`` runs them at the
  sizes in :data:`NTUPLES`, and single tests here do the same (``-d 200`` without ``-n`` does
  not run as ``-a`` does, and ``-d 201`` without ``-n`` reports a spurious FAILED).
* **Cost.** Test 17 (Marsaglia and Tsang GCD) alone reads about 8 GB; :data:`QUICK_TESTS` are
  the ones the project's test suite runs (a few MB each).

Each test (and each ntuple size) runs in its own dieharder process; the stream continues
from one to the next, so no byte is used twice.

**Verdict** (:mod:`certification.verdict`): dieharder assesses each result row FAILED when its
P-value is below 1e-6 or above 1 - 1e-6 (its -X threshold: a perfect generator does that with
probability 2e-6 a row), WEAK when below 0.005 or above 0.995 (-W), PASSED otherwise. The
command's verdict: FAIL when any row is FAILED; else INCONCLUSIVE when any row is WEAK (what
dieharder itself calls ambiguous: a perfect generator gives a WEAK row 1 % of the time, so it
asks for more samples; ``resolve_ambiguity`` runs dieharder's -Y 1 -k 2 mode, which adds
psamples to a WEAK test until it resolves); PASS otherwise. No result row at all is an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from certification.verdict import Verdict

__all__ = [
    "FAIL_THRESHOLD",
    "LONG_TESTS",
    "NTUPLES",
    "QUICK_TESTS",
    "WEAK_THRESHOLD",
    "DieharderError",
    "DieharderResult",
    "HashingStream",
    "file_stream",
    "generator_stream",
    "run",
    "summary",
    "to_json",
    "verdict",
]

#: Quick tests: Diehard birthdays (0) and STS monobit (100).
QUICK_TESTS = (0, 100)
#: ntuple sizes ``dieharder -a`` uses for the tests that take one.
NTUPLES: dict[int, tuple[int, ...]] = {
    102: tuple(range(1, 17)),
    200: tuple(range(1, 13)),
    201: (2, 3, 4, 5),
    202: (2, 3, 4, 5),
    203: tuple(range(0, 33)),
    206: (256,),
    207: (32,),
    208: (0, 1),
    209: (12,),
}
LONG_TESTS = {17: "reads about 8 GB of input"}
CHUNK = 1 << 20
#: dieharder's default thresholds (-X, -W): two-sided, on each result row's P-value.
FAIL_THRESHOLD = 0.000001
WEAK_THRESHOLD = 0.005

_ROW = re.compile(
    r"^\s*(?P<name>\w+)\|\s*(?P<ntup>\d+)\|\s*(?P<tsamples>\d+)\|\s*(?P<psamples>\d+)\|"
    r"\s*(?P<p>[0-9.eE+-]+)\|\s*(?P<assessment>PASSED|WEAK|FAILED)\s*$"
)


class DieharderError(Exception):
    """dieharder is missing, failed, or ran out of input."""


class _Bytes(Protocol):
    def random_bytes(self, n: int) -> bytes: ...


@dataclass(frozen=True)
class DieharderResult:
    test: int
    name: str
    ntuple: int
    tsamples: int
    psamples: int
    p_value: float
    assessment: str


@dataclass
class _Feed:
    stream: Iterator[bytes]
    written: int = 0


class HashingStream:
    """Wraps a byte stream, counting and hashing (SHA-256) what is read from it, so that the
    evidence names the bytes dieharder was fed."""

    def __init__(self, stream: Iterator[bytes]) -> None:
        self._stream = stream
        self._digest = hashlib.sha256()
        self.size = 0

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        chunk = next(self._stream)
        self._digest.update(chunk)
        self.size += len(chunk)
        return chunk

    @property
    def sha256(self) -> str:
        return self._digest.hexdigest()

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()  # ends a live raw-output session: the rest is cancelled, never resent


def generator_stream(source: _Bytes) -> Iterator[bytes]:
    """An endless stream of ``source``'s bytes in 1 MiB chunks."""
    while True:
        yield source.random_bytes(CHUNK)


def file_stream(path: Path) -> Iterator[bytes]:
    """The bytes of ``path`` in 1 MiB chunks, once."""
    try:
        handle = path.open("rb")
    except OSError as e:
        raise DieharderError(f"cannot read {path}: {e.strerror or e}") from e
    with handle:
        while chunk := handle.read(CHUNK):
            yield chunk


def _pump(feed: _Feed, stdin: Any) -> None:
    try:
        for chunk in feed.stream:
            stdin.write(chunk)
            feed.written += len(chunk)
    except (BrokenPipeError, ValueError, OSError):
        return  # dieharder has read what it needs and closed its end
    finally:
        with contextlib.suppress(OSError):
            stdin.close()


def _run_one(
    feed: _Feed, test: int, ntuple: int | None, executable: str, psamples: int | None,
    timeout: float, resolve_ambiguity: bool = False,
) -> list[DieharderResult]:  # fmt: skip
    cmd = [executable, "-g", "200", "-d", str(test)]
    if ntuple is not None:
        cmd += ["-n", str(ntuple)]
    if psamples is not None:
        cmd += ["-p", str(psamples)]
    if resolve_ambiguity:
        cmd += ["-Y", "1", "-k", "2"]
    try:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
    except OSError as e:
        raise DieharderError(
            f"cannot run {executable}: {e.strerror or e} (Debian package 'dieharder')"
        ) from e
    before = feed.written
    pump = threading.Thread(target=_pump, args=(feed, proc.stdin), daemon=True)
    pump.start()
    # Not communicate(): it would close stdin, which the pump thread is writing to.
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    stdout = proc.stdout
    if stdout is None:  # Popen made it a pipe; this keeps the type checker honest
        raise DieharderError("dieharder's output is not a pipe")
    try:
        out = stdout.read()
        proc.wait()
    finally:
        timer.cancel()
        stdout.close()
    pump.join(5)
    if proc.returncode < 0:
        raise DieharderError(f"dieharder -d {test} was stopped after {timeout:g} s")
    text = out.decode("utf-8", "replace")
    rows = [m for m in (_ROW.match(line) for line in text.splitlines()) if m]
    if "Error: EOF" in text:  # what stdin_input_raw() prints when stdin runs dry
        raise DieharderError(
            f"the input ran out during dieharder -d {test} after {feed.written - before} "
            "bytes; -g 200 does not rewind, so the result would be meaningless: give a larger "
            "file or use --lab-seed"
        )
    if proc.returncode != 0 or not rows:
        tail = " | ".join(text.strip().splitlines()[-3:])
        raise DieharderError(f"dieharder -d {test} failed (status {proc.returncode}): {tail}")
    return [
        DieharderResult(
            test=test,
            name=m["name"],
            ntuple=int(m["ntup"]),
            tsamples=int(m["tsamples"]),
            psamples=int(m["psamples"]),
            p_value=float(m["p"]),
            assessment=m["assessment"],
        )
        for m in rows
    ]


def run(
    stream: Iterator[bytes],
    tests: Sequence[int],
    *,
    executable: str = "dieharder",
    psamples: int | None = None,
    timeout: float = 3600.0,
    resolve_ambiguity: bool = False,
    on_test: Callable[[str], None] | None = None,
) -> list[DieharderResult]:
    """Each test of ``tests`` (at each of its :data:`NTUPLES` sizes) on consecutive bytes of
    ``stream``."""
    feed = _Feed(stream)
    results: list[DieharderResult] = []
    for test in tests:
        ntuples: Sequence[int | None] = NTUPLES.get(test) or (None,)
        for ntuple in ntuples:
            if on_test is not None:
                extra = f" ({LONG_TESTS[test]})" if test in LONG_TESTS else ""
                nt = "" if ntuple is None else f" -n {ntuple}"
                on_test(f"dieharder -g 200 -d {test}{nt}{extra}")
            results += _run_one(
                feed, test, ntuple, executable, psamples, timeout, resolve_ambiguity
            )
    return results


def _row(r: DieharderResult) -> dict[str, Any]:
    return {
        "test": r.test,
        "name": r.name,
        "ntuple": r.ntuple,
        "tsamples": r.tsamples,
        "psamples": r.psamples,
        "p_value": r.p_value,
        "assessment": r.assessment,
    }


def verdict(results: Sequence[DieharderResult]) -> tuple[Verdict, str]:
    """The verdict over dieharder's result rows (module docstring) and its reason."""
    failed = [f"{r.name}/{r.ntuple}" for r in results if r.assessment == "FAILED"]
    weak = [f"{r.name}/{r.ntuple}" for r in results if r.assessment == "WEAK"]
    if failed:
        return Verdict.FAIL, (
            f"{len(failed)} of {len(results)} rows FAILED (P < {FAIL_THRESHOLD:g} or > "
            f"1 - {FAIL_THRESHOLD:g}): {', '.join(failed[:6])}"
        )
    if weak:
        return Verdict.INCONCLUSIVE, (
            f"{len(weak)} of {len(results)} rows WEAK (P < {WEAK_THRESHOLD:g} or > "
            f"1 - {WEAK_THRESHOLD:g}): {', '.join(weak[:6])}; rerun with more samples "
            "(--psamples, or --resolve-ambiguity for dieharder's -Y 1 mode)"
        )
    if not results:
        return Verdict.INCONCLUSIVE, "no result rows"
    return Verdict.PASS, f"all {len(results)} rows PASSED"


def to_json(
    results: Sequence[DieharderResult],
    *,
    source: str,
    raw_output_sessions: Sequence[dict[str, Any]] | None = None,
    evidence: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON document: every result row, the verdict and the criteria (``passed`` is True
    only for PASS); for a live source every raw-output session with its receipt."""
    v, reason = verdict(results)
    document: dict[str, Any] = {
        "tool": "dieharder 3.31 (-g 200, raw stdin)",
        "source": source,
        "verdict": v.value,
        "verdict_reason": reason,
        "criteria": {
            "fail_threshold": FAIL_THRESHOLD,
            "weak_threshold": WEAK_THRESHOLD,
            "rule": "FAIL if any row FAILED; INCONCLUSIVE if any row WEAK (dieharder asks for "
            "more samples: rerun with more psamples or -Y 1); PASS otherwise",
            "per_row_false_fail": 2 * FAIL_THRESHOLD,
        },
        "results": [_row(r) for r in results],
        "passed": v is Verdict.PASS,
        "weak": [f"{r.name}/{r.ntuple}" for r in results if r.assessment == "WEAK"],
    }
    if raw_output_sessions is not None:
        document["raw_output_sessions"] = list(raw_output_sessions)
    if evidence is not None:
        document["evidence"] = evidence
    return document


def summary(results: Sequence[DieharderResult]) -> str:
    lines = [f"{'test':>4} {'name':24} {'ntup':>4} {'psamples':>8} {'p-value':>10}  assessment"]
    for r in results:
        lines.append(
            f"{r.test:>4} {r.name:24} {r.ntuple:>4} {r.psamples:>8} {r.p_value:>10.8f}  "
            f"{r.assessment}"
        )
    return "\n".join(lines) + "\n"
