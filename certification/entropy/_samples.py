"""The sample sequence the SP 800-90B estimators read (SP 800-90B section 3.1.1 and 3.1.3).

Owns turning raw bytes into samples: one sample per byte, the low ``bits_per_symbol`` bits
forming the symbol (NIST's tool's convention), a refusal when a byte has bits above them, the
translation of the symbols seen onto ``0 .. k-1`` when fewer than ``2**bits`` occur (the
estimators depend only on which symbols are equal), and the bitstring of section 3.1.3 (each
sample's bits, most significant first, from the untranslated symbols). Reading a file or pipe
once, hashing it while reading, is :func:`read_input`'s job.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from certification.errors import InputError

__all__ = ["InputBytes", "Samples", "read_input"]

_PIECE = 1 << 20
U8 = npt.NDArray[np.uint8]


@dataclass(frozen=True, slots=True)
class InputBytes:
    """An input's bytes with the facts the evidence records (path, size, SHA-256)."""

    data: bytes
    path: str
    sha256: str

    def facts(self) -> dict[str, object]:
        return {"path": self.path, "size_bytes": len(self.data), "sha256": self.sha256}


def _read_stream(stream: BinaryIO, name: str) -> InputBytes:
    digest = hashlib.sha256()
    pieces: list[bytes] = []
    while piece := stream.read(_PIECE):
        digest.update(piece)
        pieces.append(piece)
    return InputBytes(b"".join(pieces), name, digest.hexdigest())


def read_input(path: str, *, stdin: BinaryIO | None = None) -> InputBytes:
    """Read ``path`` (``-``: standard input) once, hashing while reading."""
    if path == "-":
        return _read_stream(stdin if stdin is not None else sys.stdin.buffer, "-")
    try:
        with Path(path).open("rb") as handle:
            return _read_stream(handle, path)
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from e


@dataclass(frozen=True, slots=True)
class Samples:
    """Samples as the estimators see them.

    ``symbols`` are translated onto ``0 .. k-1`` (``k = alphabet``); ``bits`` is the section
    3.1.3 bitstring of the untranslated symbols (``None`` for 1-bit samples, which are their own
    bitstring).
    """

    symbols: U8
    raw: U8
    bits_per_symbol: int
    alphabet: int
    bits: U8 | None

    @property
    def count(self) -> int:
        return int(self.symbols.size)

    @classmethod
    def from_bytes(cls, data: bytes | U8, bits_per_symbol: int, *, what: str = "input") -> Samples:
        if not 1 <= bits_per_symbol <= 8:
            raise InputError(f"--bits-per-symbol must be 1 to 8, not {bits_per_symbol}")
        raw = np.frombuffer(data, dtype=np.uint8) if isinstance(data, bytes) else data
        if raw.size == 0:
            raise InputError(f"{what} is empty: no samples to assess")
        high = int(np.bitwise_or.reduce(raw))
        if high >> bits_per_symbol:
            raise InputError(
                f"{what}: a sample has bits above --bits-per-symbol {bits_per_symbol} "
                f"(widest sample needs {high.bit_length()} bits); one sample per byte, "
                "low bits first"
            )
        counts = np.bincount(raw, minlength=1 << bits_per_symbol)
        present = np.flatnonzero(counts)
        alphabet = int(present.size)
        if alphabet < int(present[-1]) + 1:
            table = np.zeros(1 << bits_per_symbol, dtype=np.uint8)
            table[present] = np.arange(alphabet, dtype=np.uint8)
            symbols = table[raw]
        else:
            symbols = raw.copy()
        bits: U8 | None = None
        if bits_per_symbol > 1:
            shifts = np.arange(bits_per_symbol - 1, -1, -1, dtype=np.uint8)
            bits = ((raw[:, None] >> shifts[None, :]) & 1).astype(np.uint8).reshape(-1)
        return cls(symbols, raw, bits_per_symbol, alphabet, bits)
