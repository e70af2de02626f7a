"""Helpers shared by the certification tests: the vector loader and deterministic bit streams."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from certification.sp800_22 import Bits

__all__ = ["VECTOR_FILE", "aes_bits", "aes_stream", "load_vectors", "text_bits"]

VECTOR_FILE = Path(__file__).resolve().parents[2] / "vectors" / "sp800_22" / "worked_examples.json"


def load_vectors() -> dict[str, Any]:
    """The SP 800-22 vector file, parsed."""
    data: dict[str, Any] = json.loads(VECTOR_FILE.read_text())
    return data


def text_bits(text: str) -> Bits:
    """'0'/'1' characters as a bit array."""
    return np.frombuffer(text.encode(), dtype=np.uint8) - np.uint8(ord("0"))


def aes_stream(label: str, n_bytes: int) -> bytes:
    """n_bytes of the AES-256-CTR keystream under the key SHA-256(label), counter from zero."""
    key = hashlib.sha256(label.encode()).digest()
    encryptor = Cipher(algorithms.AES(key), modes.CTR(b"\x00" * 16)).encryptor()
    return encryptor.update(b"\x00" * n_bytes)


def aes_bits(label: str, n: int) -> Bits:
    """n bits of :func:`aes_stream`, most significant bit of each byte first."""
    return np.unpackbits(np.frombuffer(aes_stream(label, (n + 7) // 8), dtype=np.uint8))[:n]
