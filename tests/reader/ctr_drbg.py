"""CTR_DRBG (NIST SP 800-90A Rev.1 section 10.2.1), AES-256, written from the standard.

Its own code, not ``rng_service.drbg``: the reader reproduces the lab stream of
docs/random-core.md section 4 with a second implementation, checked against the NIST CAVP
vectors in tests/vectors/ctr_drbg/ (``tests/unit/reader/test_reader_ctr_drbg.py``). Block by
block with AES-ECB from ``cryptography`` (the block cipher is the only thing borrowed): no
CTR-mode shortcut, so it also checks the shortcut the production code takes.
"""

from __future__ import annotations

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

KEYLEN = 32  # bytes, AES-256
OUTLEN = 16  # bytes, the AES block
SEEDLEN = KEYLEN + OUTLEN  # 384 bits (Table 3)
MAX_REQUEST = 1 << 16  # 2**19 bits per Generate call
LAB_BLOCK = 1 << 16  # docs/random-core.md section 4: the lab stream's Generate size


def _ecb(key: bytes, data: bytes) -> bytes:
    encryptor = Cipher(algorithms.AES(key), modes.ECB()).encryptor()  # the block cipher alone
    return encryptor.update(data) + encryptor.finalize()


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def _bcc(key: bytes, data: bytes) -> bytes:
    """BCC (10.3.3): CBC-MAC with a zero IV over whole blocks."""
    chaining = bytes(OUTLEN)
    for i in range(0, len(data), OUTLEN):
        chaining = _ecb(key, _xor(chaining, data[i : i + OUTLEN]))
    return chaining


def block_cipher_df(input_string: bytes, no_of_bytes: int) -> bytes:
    """Block_Cipher_df (10.3.2)."""
    s = len(input_string).to_bytes(4, "big") + no_of_bytes.to_bytes(4, "big") + input_string
    s += b"\x80"
    s += bytes(-len(s) % OUTLEN)
    k = bytes(range(KEYLEN))
    temp = b""
    i = 0
    while len(temp) < SEEDLEN:
        iv = i.to_bytes(4, "big") + bytes(OUTLEN - 4)
        temp += _bcc(k, iv + s)
        i += 1
    k, x = temp[:KEYLEN], temp[KEYLEN:SEEDLEN]
    out = b""
    while len(out) < no_of_bytes:
        x = _ecb(k, x)
        out += x
    return out[:no_of_bytes]


class CtrDrbg:
    """One instance; ``derivation_function`` selects 10.2.1.3.2 / 10.2.1.3.1 and friends."""

    def __init__(
        self,
        entropy_input: bytes,
        nonce: bytes,
        personalization: bytes,
        *,
        derivation_function: bool = True,
    ) -> None:
        self.df = derivation_function
        self.key = bytes(KEYLEN)
        self.v = 0
        if self.df:
            seed_material = block_cipher_df(entropy_input + nonce + personalization, SEEDLEN)
        else:
            if len(entropy_input) != SEEDLEN or nonce:
                raise ValueError("without df: 384-bit entropy input, no nonce")
            seed_material = _xor(entropy_input, personalization.ljust(SEEDLEN, b"\0"))
        self._update(seed_material)
        self.reseed_counter = 1

    def _blocks(self, first: int, count: int) -> bytes:
        """E(Key, V + first) || ... || E(Key, V + first + count - 1), V mod 2**128."""
        counters = b"".join(
            ((self.v + first + j) % (1 << 128)).to_bytes(OUTLEN, "big") for j in range(count)
        )
        return _ecb(self.key, counters)

    def _update(self, provided: bytes) -> None:
        """CTR_DRBG_Update (10.2.1.2)."""
        temp = _xor(self._blocks(1, SEEDLEN // OUTLEN), provided)
        self.key, self.v = temp[:KEYLEN], int.from_bytes(temp[KEYLEN:], "big")

    def _additional(self, additional_input: bytes) -> bytes:
        if not additional_input:
            return bytes(SEEDLEN)
        if self.df:
            return block_cipher_df(additional_input, SEEDLEN)
        return additional_input.ljust(SEEDLEN, b"\0")

    def reseed(self, entropy_input: bytes, additional_input: bytes = b"") -> None:
        """10.2.1.4."""
        if self.df:
            seed_material = block_cipher_df(entropy_input + additional_input, SEEDLEN)
        else:
            seed_material = _xor(entropy_input, additional_input.ljust(SEEDLEN, b"\0"))
        self._update(seed_material)
        self.reseed_counter = 1

    def generate(self, num_bytes: int, additional_input: bytes = b"") -> bytes:
        """10.2.1.5 (no prediction resistance)."""
        if not 0 <= num_bytes <= MAX_REQUEST:
            raise ValueError("at most 2**19 bits per request")
        additional = self._additional(additional_input)
        if additional_input:
            self._update(additional)
        blocks = -(-num_bytes // OUTLEN)
        out = self._blocks(1, blocks)[:num_bytes]
        self.v = (self.v + blocks) % (1 << 128)
        self._update(additional)
        self.reseed_counter += 1
        return out


class LabStream:
    """The lab-mode byte stream of docs/random-core.md section 4.

    ``CTR_DRBG_Instantiate(entropy_input, nonce, personalization)`` (AES-256, with df), then
    ``G1 || G2 || ...`` with ``Gi = Generate(524,288 bits)``, no reseed, no additional input.
    ``take(n)`` returns the next ``n`` bytes whatever the sizes of earlier calls.
    """

    def __init__(self, entropy_input: bytes, nonce: bytes, personalization: bytes) -> None:
        self._drbg = CtrDrbg(entropy_input, nonce, personalization)
        self._buf = b""
        self._pos = 0
        self.consumed = 0  # bytes handed out so far

    def take(self, n: int) -> bytes:
        if n < 0:
            raise ValueError(n)
        while len(self._buf) - self._pos < n:
            self._buf = self._buf[self._pos :] + self._drbg.generate(LAB_BLOCK)
            self._pos = 0
        out = self._buf[self._pos : self._pos + n]
        self._pos += n
        self.consumed += n
        return out
