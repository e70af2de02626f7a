"""CtrDrbg behaviour: limits of SP 800-90A Rev.1 section 10.2.1, uninstantiate, and the
AES-CTR fast path checked against a block-by-block reference of section 10.2.1.5."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from rng_service.drbg import (
    CtrDrbg,
    DrbgInputError,
    DrbgUninstantiatedError,
    ReseedRequiredError,
)
from rng_service.drbg.ctr_drbg import MAX_REQUEST_BYTES, block_cipher_df

ENTROPY = bytes(range(32))
NONCE = bytes(range(100, 116))


def df_drbg(**kw: int) -> CtrDrbg:
    return CtrDrbg.instantiate(ENTROPY, NONCE, b"p", **kw)  # type: ignore[arg-type]


class ReferenceCtrDrbg:
    """Section 10.2.1 written block by block (AES-ECB, one block per counter value)."""

    def __init__(self, key: bytes, v: bytes) -> None:
        self.key, self.v = key, v

    def _blocks(self, count: int) -> bytes:
        ecb = Cipher(algorithms.AES(self.key), modes.ECB()).encryptor()
        out = b""
        v = int.from_bytes(self.v, "big")
        for _ in range(count):
            v = (v + 1) % 2**128
            out += ecb.update(v.to_bytes(16, "big"))
        self.v = v.to_bytes(16, "big")
        return out

    def update(self, provided: bytes) -> None:
        temp = self._blocks(3)
        temp = bytes(a ^ b for a, b in zip(temp, provided, strict=True))
        self.key, self.v = temp[:32], temp[32:]

    def generate(self, n: int) -> bytes:
        out = self._blocks(-(-n // 16))[:n]
        self.update(bytes(48))
        return out


def _state(drbg: CtrDrbg) -> tuple[bytes, bytes]:
    key, v = drbg._require_state()
    return bytes(key), bytes(v)


SIZES = [0, 1, 15, 16, 17, 100, 4096, MAX_REQUEST_BYTES - 1, MAX_REQUEST_BYTES]


@pytest.mark.parametrize("n", SIZES)
def test_fast_path_matches_block_reference(n: int) -> None:
    drbg = df_drbg()
    ref = ReferenceCtrDrbg(*_state(drbg))
    assert drbg.generate(n) == ref.generate(n)
    assert drbg.generate(33) == ref.generate(33)
    assert _state(drbg) == (ref.key, ref.v)


def test_counter_wraps_at_128_bits() -> None:
    drbg = df_drbg()
    key, _ = _state(drbg)
    drbg._require_state()[1][:] = b"\xff" * 15 + b"\xfe"  # V = 2**128 - 2
    ref = ReferenceCtrDrbg(key, b"\xff" * 15 + b"\xfe")
    assert drbg.generate(64) == ref.generate(64)


def test_block_cipher_df_rejects_bad_lengths() -> None:
    with pytest.raises(DrbgInputError):
        block_cipher_df(b"x", 0)
    with pytest.raises(DrbgInputError):
        block_cipher_df(b"x", 65)
    assert len(block_cipher_df(b"x", 48)) == 48


def test_request_limit_is_2_pow_19_bits() -> None:
    drbg = df_drbg()
    assert len(drbg.generate(MAX_REQUEST_BYTES)) == 2**19 // 8
    with pytest.raises(DrbgInputError, match="2\\*\\*19"):
        drbg.generate(MAX_REQUEST_BYTES + 1)
    with pytest.raises(DrbgInputError):
        drbg.generate(-1)
    with pytest.raises(DrbgInputError):
        drbg.generate(True)


def test_reseed_required_after_interval() -> None:
    drbg = df_drbg(reseed_interval=3)
    for _ in range(3):
        drbg.generate(16)
    with pytest.raises(ReseedRequiredError, match="reseed required"):
        drbg.generate(16)
    drbg.reseed(ENTROPY)
    assert drbg.reseed_counter == 1
    drbg.generate(16)
    assert drbg.reseed_counter == 2


@pytest.mark.parametrize("interval", [0, 2**48 + 1, -1])
def test_reseed_interval_bounds(interval: int) -> None:
    with pytest.raises(DrbgInputError, match="reseed_interval"):
        df_drbg(reseed_interval=interval)


def test_df_input_lengths() -> None:
    with pytest.raises(DrbgInputError, match="at least 256 bits"):
        CtrDrbg.instantiate(bytes(31), NONCE)
    with pytest.raises(DrbgInputError, match="nonce must be at least 128 bits"):
        CtrDrbg.instantiate(ENTROPY, bytes(15))
    with pytest.raises(DrbgInputError, match="nonce"):
        CtrDrbg.instantiate(ENTROPY)
    drbg = CtrDrbg.instantiate(bytes(64), bytes(40), bytes(1000))  # longer inputs are fine
    with pytest.raises(DrbgInputError, match="at least 256 bits"):
        drbg.reseed(bytes(31))
    drbg.generate(16, bytes(5000))


def test_no_df_input_lengths() -> None:
    with pytest.raises(DrbgInputError, match="exactly seedlen"):
        CtrDrbg.instantiate(bytes(32), derivation_function=False)
    with pytest.raises(DrbgInputError, match="exactly seedlen"):
        CtrDrbg.instantiate(bytes(49), derivation_function=False)
    with pytest.raises(DrbgInputError, match="no nonce"):
        CtrDrbg.instantiate(bytes(48), bytes(16), derivation_function=False)
    with pytest.raises(DrbgInputError, match="personalization must be at most 384"):
        CtrDrbg.instantiate(bytes(48), b"", bytes(49), derivation_function=False)
    drbg = CtrDrbg.instantiate(bytes(48), b"", bytes(48), derivation_function=False)
    with pytest.raises(DrbgInputError, match="additional_input must be at most 384"):
        drbg.generate(16, bytes(49))
    with pytest.raises(DrbgInputError, match="additional_input must be at most 384"):
        drbg.reseed(bytes(48), bytes(49))
    with pytest.raises(DrbgInputError, match="exactly seedlen"):
        drbg.reseed(bytes(47))
    assert not drbg.derivation_function


def test_inputs_must_be_bytes() -> None:
    with pytest.raises(TypeError):
        CtrDrbg.instantiate("x" * 32, NONCE)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="instantiate"):
        CtrDrbg()


def test_additional_input_changes_output() -> None:
    assert df_drbg().generate(32) != df_drbg().generate(32, b"a")
    assert df_drbg().generate(32) == df_drbg().generate(32)


def test_uninstantiate_zeroises_and_refuses() -> None:
    drbg = df_drbg()
    key, v = drbg._require_state()
    drbg.uninstantiate()
    assert key == bytearray(32)
    assert v == bytearray(16)
    assert not drbg.instantiated
    with pytest.raises(DrbgUninstantiatedError):
        drbg.generate(16)
    with pytest.raises(DrbgUninstantiatedError):
        drbg.reseed(ENTROPY)
    drbg.uninstantiate()  # idempotent


def test_repr_shows_no_state() -> None:
    drbg = df_drbg()
    key, v = _state(drbg)
    text = repr(drbg)
    assert key.hex() not in text
    assert v.hex() not in text
    assert "reseed_counter=1" in text
