"""Fixtures for the outcome tests: scripted and seeded byte sources under the real RandomSource.

``scripted(data)`` feeds exactly ``data`` (read-ahead 1, so nothing is read early) and fails
the test if an outcome asks for more. ``seeded(label)`` is an AES-256-CTR keystream under the
key SHA-256(label): deterministic, so the distribution tests cannot flake.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from rng_service.sampling import RandomSource


class ScriptedBytes:
    """A ByteSource returning scripted bytes, then failing."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def random_bytes(self, n: int) -> bytes:
        if self._pos + n > len(self._data):
            raise AssertionError("outcome read past the scripted bytes")
        out = self._data[self._pos : self._pos + n]
        self._pos += n
        return out

    @property
    def remaining(self) -> int:
        return len(self._data) - self._pos


class AesCtrBytes:
    """AES-256-CTR keystream of a fixed key: a deterministic, high-quality byte stream."""

    def __init__(self, label: str) -> None:
        key = hashlib.sha256(label.encode()).digest()
        self._enc = Cipher(algorithms.AES(key), modes.CTR(b"\x00" * 16)).encryptor()

    def random_bytes(self, n: int) -> bytes:
        return self._enc.update(b"\x00" * n)


@pytest.fixture
def scripted() -> Callable[[Iterable[int]], tuple[RandomSource, ScriptedBytes]]:
    def make(data: Iterable[int]) -> tuple[RandomSource, ScriptedBytes]:
        raw = ScriptedBytes(bytes(data))
        return RandomSource(raw, readahead=1), raw

    return make


@pytest.fixture
def seeded() -> Callable[[str], RandomSource]:
    def make(label: str) -> RandomSource:
        return RandomSource(AesCtrBytes(label), readahead=4096)

    return make


# Significance level of every chi-square test: the streams are fixed, so a pass is permanent;
# the level only guards against a wrong implementation.
CHI2_ALPHA = 1e-6


@pytest.fixture
def chi2_alpha() -> float:
    return CHI2_ALPHA


def _chi2_pvalue(observed: dict[object, int], probs: dict[object, object]) -> float:
    """Chi-square goodness-of-fit p-value; cells expecting fewer than 5 are pooled."""
    from fractions import Fraction

    from scipy.stats import chisquare

    total = sum(observed.values())
    unknown = set(observed) - set(probs)
    assert not unknown, f"observed values outside the support: {sorted(map(str, unknown))[:5]}"
    assert sum(Fraction(str(p)) if not isinstance(p, Fraction) else p for p in probs.values()) == 1
    obs: list[float] = []
    exp: list[float] = []
    pool_o = 0
    pool_e = Fraction(0)
    for key, p in probs.items():
        e = Fraction(p) * total  # type: ignore[arg-type]
        o = observed.get(key, 0)
        if e < 5:
            pool_o += o
            pool_e += e
        else:
            obs.append(o)
            exp.append(float(e))
    if pool_e > 0:
        obs.append(pool_o)
        exp.append(float(pool_e))
    scale = sum(obs) / sum(exp)
    return float(chisquare(obs, [x * scale for x in exp]).pvalue)


@pytest.fixture
def chi2_pvalue() -> Callable[[dict[object, int], dict[object, object]], float]:
    return _chi2_pvalue
