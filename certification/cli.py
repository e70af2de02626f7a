"""``rng-certify``: the certification suite's command line, for gaming labs.

Subcommands (more can be added beside ``nist``)::

    rng-certify nist --input FILE --format {binary,ascii} [--bits-per-sequence N]
                     --json OUT [--jobs J]

``nist`` cuts the file into as many whole sequences of N bits (default 10^6) as it holds, runs
the NIST SP 800-22 battery on each (optionally in J worker processes, spawn start method),
makes the section 4.2 decisions, writes the JSON report and prints a summary table.
Exit status: 0 when the suite passes, 1 when it fails, 2 for usage or input errors (a message,
never a traceback). A progress bar is drawn only when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np
import numpy.typing as npt

from certification.report import render_json, render_summary
from certification.sp800_22 import Bits, TestResult, assess, run_tests

__all__ = ["InputError", "PackedBits", "main", "read_bits"]

DEFAULT_BITS_PER_SEQUENCE = 1_000_000
EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_USAGE = 2

_WHITESPACE = np.frombuffer(b" \t\n\r\v\f", dtype=np.uint8)


class InputError(Exception):
    """The input file cannot be used: missing, unreadable, malformed or too short."""


@dataclass(frozen=True)
class PackedBits:
    """The bits of an input file, kept packed (most significant bit first) and unpacked one
    sequence at a time, so that memory stays near the file's size."""

    packed: npt.NDArray[np.uint8]
    size: int

    def packed_slice(self, start: int, n: int) -> tuple[bytes, int]:
        """The bytes covering bits [start, start + n) and the offset of ``start`` in them."""
        first, offset = divmod(start, 8)
        last = (start + n + 7) // 8
        return self.packed[first:last].tobytes(), offset

    def sequence(self, start: int, n: int) -> Bits:
        """Bits [start, start + n) as a 0/1 array."""
        return _unpack(*self.packed_slice(start, n), n)


def _unpack(packed: bytes, offset: int, n: int) -> Bits:
    bits = np.unpackbits(np.frombuffer(packed, dtype=np.uint8))
    return bits[offset : offset + n]


def read_bits(path: Path, fmt: str) -> PackedBits:
    """All bits of ``path``: ``binary`` is packed bytes, most significant bit first; ``ascii``
    is the characters '0' and '1' with whitespace ignored, as sts-2.1.2 reads its ASCII input."""
    try:
        raw = np.frombuffer(path.read_bytes(), dtype=np.uint8)
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from e
    if fmt == "binary":
        return PackedBits(packed=raw, size=8 * int(raw.size))
    digits = raw[~np.isin(raw, _WHITESPACE)]
    bad = np.flatnonzero((digits != ord("0")) & (digits != ord("1")))
    if bad.size:
        offset = int(np.flatnonzero(~np.isin(raw, _WHITESPACE))[bad[0]])
        char = chr(int(raw[offset]))
        raise InputError(
            f"{path}: byte offset {offset} holds {char!r}; an ASCII bit file may hold only "
            "'0', '1' and whitespace (use --format binary for packed bytes)"
        )
    return PackedBits(packed=np.packbits(digits - np.uint8(ord("0"))), size=int(digits.size))


def _run_packed(packed: bytes, offset: int, n: int) -> dict[str, TestResult]:
    """Worker entry point: unpack one sequence and run the battery on it."""
    return run_tests(_unpack(packed, offset, n))


class _Progress:
    """A one-line progress bar on a terminal; silent otherwise."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self._total = total
        self._stream = stream
        self._enabled = stream.isatty()
        self._done = 0
        self._draw()

    def advance(self) -> None:
        self._done += 1
        self._draw()

    def close(self) -> None:
        if self._enabled:
            self._stream.write("\n")
            self._stream.flush()

    def _draw(self) -> None:
        if not self._enabled:
            return
        width = 40
        filled = width * self._done // self._total
        bar = "#" * filled + "." * (width - filled)
        self._stream.write(f"\r[{bar}] {self._done}/{self._total} sequences")
        self._stream.flush()


def _run_battery(
    bits: PackedBits, n: int, count: int, jobs: int, on_done: Callable[[], None]
) -> list[dict[str, TestResult]]:
    """The battery on sequences 0 .. count - 1 of n bits, in order."""
    if jobs == 1 or count == 1:
        results = []
        for i in range(count):
            results.append(run_tests(bits.sequence(i * n, n)))
            on_done()
        return results
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(jobs, count), mp_context=context) as pool:
        futures: list[Future[dict[str, TestResult]]] = [
            pool.submit(_run_packed, *bits.packed_slice(i * n, n), n) for i in range(count)
        ]
        for _ in as_completed(futures):
            on_done()
        return [future.result() for future in futures]


def _cmd_nist(args: argparse.Namespace) -> int:
    n = args.bits_per_sequence
    bits = read_bits(args.input, args.format)
    count = bits.size // n
    if count == 0:
        raise InputError(
            f"{args.input} holds {bits.size} bits, fewer than one sequence of {n} bits "
            "(see --bits-per-sequence)"
        )
    progress = _Progress(count, sys.stderr)
    try:
        results = _run_battery(bits, n, count, args.jobs, progress.advance)
    finally:
        progress.close()
    assessment = assess(results)
    document = render_json(
        results,
        assessment,
        input_info={
            "path": str(args.input),
            "format": args.format,
            "bits_per_sequence": n,
            "sequences": count,
            "bits_discarded": int(bits.size - count * n),
        },
    )
    try:
        args.json.write_text(json.dumps(document, indent=1) + "\n")
    except OSError as e:
        raise InputError(f"cannot write {args.json}: {e.strerror or e}") from e
    sys.stdout.write(render_summary(assessment))
    return EXIT_PASS if assessment.passed else EXIT_FAIL


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rng-certify", description="Statistical certification of random bit streams."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    nist = commands.add_parser(
        "nist",
        help="NIST SP 800-22 Rev.1a battery (agrees with sts-2.1.2)",
        description="Run the 15 NIST SP 800-22 tests on each sequence of the input and make "
        "the section 4.2 decisions over all sequences.",
    )
    nist.add_argument("--input", type=Path, required=True, help="bit file to test")
    nist.add_argument(
        "--format",
        choices=("binary", "ascii"),
        required=True,
        help="binary: packed bytes, most significant bit first; ascii: '0'/'1' characters, "
        "whitespace ignored",
    )
    nist.add_argument(
        "--bits-per-sequence",
        type=_positive_int,
        default=DEFAULT_BITS_PER_SEQUENCE,
        metavar="N",
        help=f"sequence length in bits (default {DEFAULT_BITS_PER_SEQUENCE})",
    )
    nist.add_argument("--json", type=Path, required=True, metavar="OUT", help="JSON report path")
    nist.add_argument("--jobs", type=_positive_int, default=1, help="worker processes (default 1)")
    nist.set_defaults(handler=_cmd_nist)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse has printed the usage message
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except InputError as e:
        print(f"rng-certify: error: {e}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
