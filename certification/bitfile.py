"""Bit files and bit streams for the SP 800-22 battery, read in sequence-sized pieces.

Owns the two input formats of ``rng-certify nist`` (docs/certification.md, "How a lab runs
it"), the same as sts-2.1.2's:

* ``binary``: raw bytes, each byte read most significant bit first;
* ``ascii``: the characters ``0`` and ``1``; whitespace (space, tab, line feed, vertical tab,
  form feed, carriage return) is ignored, anything else is refused with its byte offset.

A file is read twice, each time in pieces of bounded size, so memory stays flat however many
sequences it holds: :func:`inspect_bit_file` validates it (every character, for ASCII),
counts its bits and hashes it (SHA-256, for the evidence record); :func:`file_sequences`
then streams it again as consecutive sequences of ``n`` bits, recomputing the hash, and
refuses a file that changed in between. :func:`cut_sequences` turns any stream of bit
arrays (a file, or a live raw-output stream) into sequences of exactly ``n`` bits.

Nothing here computes statistics; :class:`PackedBits` and :func:`read_bits` keep the
whole-file form for small inputs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from certification.errors import InputError

__all__ = [
    "FORMATS",
    "READ_PIECE_BYTES",
    "STREAM_PIECE_BYTES",
    "BitFileFacts",
    "PackedBits",
    "cut_sequences",
    "file_sequences",
    "inspect_bit_file",
    "read_bits",
]

Bits = npt.NDArray[np.uint8]
FORMATS = ("binary", "ascii")
#: The most bytes read at once while inspecting a file.
READ_PIECE_BYTES = 1 << 22
#: Bytes read at once while streaming sequences: one sequence's worth, and at least this many
#: (a 10^6-bit sequence is 125,000 bytes binary, 10^6 characters or more ASCII).
STREAM_PIECE_BYTES = 1 << 18

# Byte classes of the ASCII format: 0 = whitespace (ignored), 1 = '0' or '1', 2 = anything else.
_CLASS = np.full(256, 2, dtype=np.uint8)
_CLASS[np.frombuffer(b" \t\n\r\v\f", dtype=np.uint8)] = 0
_CLASS[[ord("0"), ord("1")]] = 1


@dataclass(frozen=True)
class BitFileFacts:
    """What the evidence record says about an input file: its size, SHA-256 and bit count."""

    path: Path
    fmt: str
    size_bytes: int
    sha256: str
    bits: int

    def as_dict(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "format": self.fmt,
            "size_bytes": self.size_bytes,
            "sha256": self.sha256,
            "bits": self.bits,
        }


def _open(path: Path) -> BinaryIO:
    try:
        return path.open("rb")
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from e


def _pieces(path: Path, piece: int) -> Iterator[bytes]:
    handle = _open(path)
    with handle:
        while True:
            try:
                data = handle.read(piece)
            except OSError as e:
                raise InputError(f"cannot read {path}: {e.strerror or e}") from e
            if not data:
                return
            yield data


def _ascii_digits(raw: npt.NDArray[np.uint8], path: Path, offset: int) -> Bits:
    """The 0/1 digits of one piece of an ASCII file (``offset``: the piece's first byte)."""
    classes = _CLASS[raw]
    bad = np.flatnonzero(classes == 2)
    if bad.size:
        at = int(bad[0])
        raise InputError(
            f"{path}: byte offset {offset + at} holds {chr(int(raw[at]))!r}; an ASCII bit file "
            "may hold only '0', '1' and whitespace (use --format binary for packed bytes)"
        )
    digits: Bits = raw[classes == 1] - np.uint8(ord("0"))
    return digits


def inspect_bit_file(path: Path, fmt: str, *, piece: int = READ_PIECE_BYTES) -> BitFileFacts:
    """Pass 1: size, SHA-256 and number of bits of ``path``; an ASCII file is checked
    character by character (:class:`InputError` names the first bad byte's offset)."""
    if fmt not in FORMATS:
        raise InputError(f"unknown bit file format {fmt!r}; allowed: {', '.join(FORMATS)}")
    digest = hashlib.sha256()
    size = 0
    bits = 0
    for data in _pieces(path, piece):
        digest.update(data)
        if fmt == "ascii":
            bits += int(_ascii_digits(np.frombuffer(data, dtype=np.uint8), path, size).size)
        size += len(data)
    if fmt == "binary":
        bits = 8 * size
    return BitFileFacts(path=path, fmt=fmt, size_bytes=size, sha256=digest.hexdigest(), bits=bits)


def cut_sequences(pieces: Iterable[Bits], n: int, count: int | None = None) -> Iterator[Bits]:
    """Consecutive sequences of exactly ``n`` bits from a stream of 0/1 arrays (at most
    ``count``); a shorter remainder at the end is dropped. Holds at most one sequence plus
    one piece."""
    if n < 1:
        raise ValueError("a sequence holds at least one bit")
    held: list[Bits] = []
    have = 0
    produced = 0
    for piece in pieces:
        start = 0
        while start < piece.size:
            if count is not None and produced >= count:
                return
            take = min(n - have, piece.size - start)
            held.append(piece[start : start + take])
            have += take
            start += take
            if have == n:
                yield held[0] if len(held) == 1 else np.concatenate(held)
                produced += 1
                held, have = [], 0


def file_sequences(
    facts: BitFileFacts, n: int, *, piece: int = STREAM_PIECE_BYTES
) -> Iterator[Bits]:
    """Pass 2: the whole sequences of ``n`` bits of the file ``facts`` describes, in order.

    Reads pieces of ``max(piece, n / 8)`` bytes (an ASCII sequence is assembled from as many
    pieces as it takes), so at most one sequence and one piece are held. The file is hashed
    again as it is read; when it no longer matches ``facts`` (changed since pass 1) the stream
    stops with :class:`InputError` after its last piece, before the caller can finish the
    run."""
    digest = hashlib.sha256()
    size = 0
    read = max(piece, -(-n // 8))

    def bits() -> Iterator[Bits]:
        nonlocal size
        for data in _pieces(facts.path, read):
            digest.update(data)
            raw = np.frombuffer(data, dtype=np.uint8)
            if facts.fmt == "binary":
                yield np.unpackbits(raw)
            else:
                yield _ascii_digits(raw, facts.path, size)
            size += len(data)
        if size != facts.size_bytes or digest.hexdigest() != facts.sha256:
            raise InputError(
                f"{facts.path} changed while it was being tested (SHA-256 or size differs "
                "from the first reading); test a file nothing writes to"
            )

    stream = bits()
    yield from cut_sequences(stream, n, facts.bits // n)
    for _ in stream:  # the remainder (less than a sequence): read so that the hash is checked
        pass


@dataclass(frozen=True)
class PackedBits:
    """All bits of a (small) input, kept packed (most significant bit first) and unpacked one
    sequence at a time."""

    packed: npt.NDArray[np.uint8]
    size: int

    def packed_slice(self, start: int, n: int) -> tuple[bytes, int]:
        """The bytes covering bits [start, start + n) and the offset of ``start`` in them."""
        first, offset = divmod(start, 8)
        last = (start + n + 7) // 8
        return self.packed[first:last].tobytes(), offset

    def sequence(self, start: int, n: int) -> Bits:
        """Bits [start, start + n) as a 0/1 array."""
        packed, offset = self.packed_slice(start, n)
        return np.unpackbits(np.frombuffer(packed, dtype=np.uint8))[offset : offset + n]


def read_bits(path: Path, fmt: str) -> PackedBits:
    """All bits of ``path`` at once, packed: for small files (tests, tools); ``rng-certify
    nist`` streams with :func:`file_sequences` instead."""
    facts = inspect_bit_file(path, fmt)
    if fmt == "binary":
        packed = np.frombuffer(path.read_bytes(), dtype=np.uint8)
        return PackedBits(packed=packed, size=8 * int(packed.size))
    digits = [np.packbits(s) for s in file_sequences(facts, max(facts.bits, 1))]
    if not digits:
        return PackedBits(packed=np.zeros(0, dtype=np.uint8), size=0)
    return PackedBits(packed=digits[0], size=facts.bits)
