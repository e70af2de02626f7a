"""Entropy sources: the OS adapter and the deterministic fakes."""

from __future__ import annotations

import pytest

from rng_service.drbg import (
    EntropyExhaustedError,
    FixedEntropySource,
    OsEntropySource,
    SeededEntropySource,
)


def test_os_source_returns_requested_lengths() -> None:
    src = OsEntropySource()
    for n in (0, 1, 48, 300, 70_000):
        assert len(src.get_entropy(n)) == n
    assert src.get_entropy(32) != src.get_entropy(32)
    with pytest.raises(ValueError, match="negative"):
        src.get_entropy(-1)
    with pytest.raises(TypeError):
        src.get_entropy(1.5)  # type: ignore[arg-type]


def test_fixed_source_serves_in_order_then_raises() -> None:
    src = FixedEntropySource(b"abcdef")
    assert src.get_entropy(2) == b"ab"
    assert src.get_entropy(3) == b"cde"
    assert src.remaining == 1
    with pytest.raises(EntropyExhaustedError):
        src.get_entropy(2)
    assert src.get_entropy(1) == b"f"


def test_seeded_source_is_a_stream() -> None:
    whole = SeededEntropySource(b"s").get_entropy(200)
    src = SeededEntropySource(b"s")
    assert b"".join(src.get_entropy(n) for n in (1, 31, 32, 0, 100, 36)) == whole
    assert SeededEntropySource(b"t").get_entropy(200) != whole
    assert "s" not in repr(src).replace("SeededEntropySource", "")
