"""CTR_DRBG with AES-256, per NIST SP 800-90A Rev.1 section 10.2.1.

This module owns the deterministic random bit generator mechanism and nothing else: it takes
entropy input, nonce, personalization and additional input from its caller and never reads an
entropy source, a clock or the environment itself. It implements

* CTR_DRBG_Update (section 10.2.1.2), instantiate (10.2.1.3.1 without and 10.2.1.3.2 with a
  derivation function), reseed (10.2.1.4.1 / 10.2.1.4.2) and generate (10.2.1.5.1 / 10.2.1.5.2),
  all with a 128-bit counter (``ctr_len = blocklen``);
* Block_Cipher_df and BCC (section 10.3.2 and 10.3.3);
* the limits of Table 3 (section 10.2.1): at most 2**19 bits (65,536 bytes) per request,
  a reseed interval of at most 2**48 requests, and the input lengths;
* uninstantiate (section 9.4): the state is overwritten and every later call raises.

Prediction resistance is not offered (the service reseeds on its own schedule instead).

Speed: with a 128-bit counter the blocks ``E(Key, V+1), E(Key, V+2), ...`` of section 10.2.1.5
are exactly the AES-CTR keystream starting at counter ``V+1``, and the update that follows a
generate request continues the same keystream (``V`` was advanced by the number of blocks
output). So one AES-CTR encryptor on zero bytes produces a whole request and the next
``seedlen`` bits of update material, inside OpenSSL rather than in a Python loop over blocks.

Zeroisation is best effort: the working state lives in ``bytearray`` objects that are
overwritten, but Python and OpenSSL may hold transient copies that cannot be wiped.
"""

from __future__ import annotations

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

__all__ = [
    "BLOCK_BYTES",
    "KEY_BYTES",
    "MAX_ADDITIONAL_INPUT_BYTES_DF",
    "MAX_REQUEST_BYTES",
    "MAX_RESEED_INTERVAL",
    "MIN_ENTROPY_INPUT_BYTES_DF",
    "MIN_NONCE_BYTES_DF",
    "SEED_BYTES",
    "CtrDrbg",
    "DrbgError",
    "DrbgInputError",
    "DrbgUninstantiatedError",
    "ReseedRequiredError",
    "block_cipher_df",
]

KEY_BYTES = 32  # keylen = 256 bits (AES-256)
BLOCK_BYTES = 16  # blocklen = outlen = 128 bits
SEED_BYTES = KEY_BYTES + BLOCK_BYTES  # seedlen = 384 bits
SECURITY_STRENGTH_BITS = 256

#: Table 3: max_number_of_bits_per_request = min(B, 2**19) with B huge for ctr_len = 128.
MAX_REQUEST_BYTES = 2**19 // 8
#: Table 3: reseed_interval <= 2**48.
MAX_RESEED_INTERVAL = 2**48
#: With df: entropy input of at least security_strength bits (section 10.2.1, Table 3).
MIN_ENTROPY_INPUT_BYTES_DF = SECURITY_STRENGTH_BITS // 8
#: With df: the nonce carries at least security_strength / 2 bits (section 8.6.7).
MIN_NONCE_BYTES_DF = SECURITY_STRENGTH_BITS // 2 // 8
#: With df: max_length = 2**35 bits for entropy input, personalization and additional input.
MAX_ADDITIONAL_INPUT_BYTES_DF = 2**35 // 8

_MAX_DF_INPUT_BYTES = 2**32 - 1  # Block_Cipher_df encodes L as a 32-bit integer
_ZEROS = bytes(MAX_REQUEST_BYTES + SEED_BYTES)
_ZERO_VIEW = memoryview(_ZEROS)
_DF_KEY = bytes(range(KEY_BYTES))  # leftmost keylen bits of 0x00010203...1F (10.3.2 step 8)
_MASK128 = (1 << 128) - 1


class DrbgError(Exception):
    """Base class of CtrDrbg errors."""


class DrbgInputError(DrbgError, ValueError):
    """An input violates a length or range limit of SP 800-90A section 10.2.1."""


class ReseedRequiredError(DrbgError):
    """The reseed interval is exhausted (section 10.2.1.5 step 1): reseed before generating."""


class DrbgUninstantiatedError(DrbgError):
    """The instance was uninstantiated; its state is gone."""


def _xor(a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).to_bytes(len(a), "big")


def _ctr_keystream(key: bytes | bytearray, v: bytes | bytearray, *lengths: int) -> list[bytes]:
    """AES-256-CTR keystream from counter ``V + 1``, split into pieces of the given lengths."""
    start = ((int.from_bytes(v, "big") + 1) & _MASK128).to_bytes(BLOCK_BYTES, "big")
    enc = Cipher(algorithms.AES(bytes(key)), modes.CTR(start)).encryptor()
    return [enc.update(_ZERO_VIEW[:n]) for n in lengths]


def _bcc(key: bytes, data: bytes) -> bytes:
    """BCC (section 10.3.3): CBC-MAC with a zero IV, i.e. the last block of AES-CBC."""
    enc = Cipher(algorithms.AES(key), modes.CBC(bytes(BLOCK_BYTES))).encryptor()
    out = enc.update(data) + enc.finalize()
    return out[-BLOCK_BYTES:]


def block_cipher_df(input_string: bytes, num_bytes: int) -> bytes:
    """Block_Cipher_df (section 10.3.2) with AES-256, returning ``num_bytes`` bytes."""
    if len(input_string) > _MAX_DF_INPUT_BYTES:
        raise DrbgInputError("derivation function input longer than 2**32 - 1 bytes")
    if not 0 < num_bytes <= 512 // 8:
        raise DrbgInputError("derivation function output is limited to 512 bits")
    s = len(input_string).to_bytes(4, "big") + num_bytes.to_bytes(4, "big") + input_string + b"\x80"
    s += bytes(-len(s) % BLOCK_BYTES)
    temp = b""
    i = 0
    while len(temp) < KEY_BYTES + BLOCK_BYTES:
        iv = i.to_bytes(4, "big") + bytes(BLOCK_BYTES - 4)
        temp += _bcc(_DF_KEY, iv + s)
        i += 1
    key, x = temp[:KEY_BYTES], temp[KEY_BYTES : KEY_BYTES + BLOCK_BYTES]
    # X = E(K, X) repeatedly: AES-CBC over zero blocks with IV = X yields exactly that chain.
    blocks = -(-num_bytes // BLOCK_BYTES)
    enc = Cipher(algorithms.AES(key), modes.CBC(x)).encryptor()
    out = enc.update(bytes(blocks * BLOCK_BYTES)) + enc.finalize()
    return out[:num_bytes]


def _check_bytes(name: str, value: object) -> bytes:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise TypeError(f"{name} must be bytes, not {type(value).__name__}")
    return bytes(value)


class CtrDrbg:
    """One CTR_DRBG (AES-256) instance. Not thread-safe: callers serialise access.

    Create instances with :meth:`instantiate`. ``repr`` never shows the working state.
    """

    __slots__ = ("_df", "_key", "_reseed_counter", "_reseed_interval", "_v")

    def __init__(self, *, _token: object = None) -> None:
        if _token is not _INSTANTIATE:
            raise TypeError("use CtrDrbg.instantiate(...)")
        self._key: bytearray | None = bytearray(KEY_BYTES)
        self._v: bytearray | None = bytearray(BLOCK_BYTES)
        self._reseed_counter = 0
        self._reseed_interval = MAX_RESEED_INTERVAL
        self._df = True

    def __repr__(self) -> str:
        state = "uninstantiated" if self._key is None else "instantiated"
        return (
            f"CtrDrbg(AES-256, derivation_function={self._df}, {state}, "
            f"reseed_counter={self._reseed_counter}, reseed_interval={self._reseed_interval})"
        )

    # --- section 10.2.1.3: instantiate --------------------------------------------------

    @classmethod
    def instantiate(
        cls,
        entropy_input: bytes,
        nonce: bytes = b"",
        personalization: bytes = b"",
        *,
        derivation_function: bool = True,
        reseed_interval: int = MAX_RESEED_INTERVAL,
    ) -> CtrDrbg:
        """Instantiates a CTR_DRBG with a 256-bit security strength.

        With the derivation function (the default) the entropy input must hold at least 256
        bits, the nonce at least 128 bits, and each input at most 2**35 bits. Without it the
        entropy input must be exactly seedlen = 384 bits of full entropy, no nonce is used
        (an empty nonce is required) and the personalization string is at most 384 bits.
        ``reseed_interval`` (1 ... 2**48) is the number of generate requests allowed between
        reseeds.
        """
        entropy_input = _check_bytes("entropy_input", entropy_input)
        nonce = _check_bytes("nonce", nonce)
        personalization = _check_bytes("personalization", personalization)
        if type(reseed_interval) is not int or not 1 <= reseed_interval <= MAX_RESEED_INTERVAL:
            raise DrbgInputError(
                f"reseed_interval must be an int in [1, 2**48], got {reseed_interval!r}"
            )
        if derivation_function:
            _check_df_entropy(entropy_input)
            if len(nonce) < MIN_NONCE_BYTES_DF:
                raise DrbgInputError(
                    f"nonce must be at least {MIN_NONCE_BYTES_DF * 8} bits with the derivation "
                    f"function, got {len(nonce) * 8}"
                )
            _check_max("nonce", nonce, MAX_ADDITIONAL_INPUT_BYTES_DF)
            _check_max("personalization", personalization, MAX_ADDITIONAL_INPUT_BYTES_DF)
            seed_material = block_cipher_df(entropy_input + nonce + personalization, SEED_BYTES)
        else:
            _check_no_df_entropy(entropy_input)
            if nonce:
                raise DrbgInputError("no nonce is used without the derivation function")
            _check_max("personalization", personalization, SEED_BYTES)
            seed_material = _xor(entropy_input, personalization.ljust(SEED_BYTES, b"\x00"))
        drbg = cls(_token=_INSTANTIATE)
        drbg._df = derivation_function
        drbg._reseed_interval = reseed_interval
        drbg._update(seed_material)
        drbg._reseed_counter = 1
        return drbg

    # --- section 10.2.1.4: reseed ---------------------------------------------------------

    def reseed(self, entropy_input: bytes, additional_input: bytes = b"") -> None:
        """Reseeds with fresh entropy input (and optional additional input)."""
        self._require_state()
        entropy_input = _check_bytes("entropy_input", entropy_input)
        additional_input = _check_bytes("additional_input", additional_input)
        if self._df:
            _check_df_entropy(entropy_input)
            _check_max("additional_input", additional_input, MAX_ADDITIONAL_INPUT_BYTES_DF)
            seed_material = block_cipher_df(entropy_input + additional_input, SEED_BYTES)
        else:
            _check_no_df_entropy(entropy_input)
            _check_max("additional_input", additional_input, SEED_BYTES)
            seed_material = _xor(entropy_input, additional_input.ljust(SEED_BYTES, b"\x00"))
        self._update(seed_material)
        self._reseed_counter = 1

    # --- section 10.2.1.5: generate --------------------------------------------------------

    def generate(self, num_bytes: int, additional_input: bytes = b"") -> bytes:
        """Returns ``num_bytes`` (0 ... 65,536) pseudorandom bytes."""
        key, v = self._require_state()
        if type(num_bytes) is not int or not 0 <= num_bytes <= MAX_REQUEST_BYTES:
            raise DrbgInputError(
                f"num_bytes must be an int in [0, {MAX_REQUEST_BYTES}] (2**19 bits), "
                f"got {num_bytes!r}"
            )
        if self._reseed_counter > self._reseed_interval:
            raise ReseedRequiredError(
                f"reseed required: {self._reseed_interval} requests since the last reseed"
            )
        if additional_input:
            additional_input = _check_bytes("additional_input", additional_input)
            if self._df:
                _check_max("additional_input", additional_input, MAX_ADDITIONAL_INPUT_BYTES_DF)
                additional_input = block_cipher_df(additional_input, SEED_BYTES)
            else:
                _check_max("additional_input", additional_input, SEED_BYTES)
                additional_input = additional_input.ljust(SEED_BYTES, b"\x00")
            self._update(additional_input)
            key, v = self._require_state()
        # Step 4 output blocks (V+1 ... V+m) then step 6 update blocks (V+m+1 ... V+m+3):
        # one contiguous keystream. The output is whole blocks; extra bytes are dropped.
        whole = -(-num_bytes // BLOCK_BYTES) * BLOCK_BYTES
        out, temp = _ctr_keystream(key, v, whole, SEED_BYTES)
        if additional_input:
            temp = _xor(temp, additional_input)
        key[:] = temp[:KEY_BYTES]
        v[:] = temp[KEY_BYTES:]
        self._reseed_counter += 1
        return out if whole == num_bytes else out[:num_bytes]

    # --- section 9.4: uninstantiate --------------------------------------------------------

    def uninstantiate(self) -> None:
        """Zeroises the working state; every later call raises DrbgUninstantiatedError."""
        if self._key is not None:
            self._key[:] = bytes(KEY_BYTES)
        if self._v is not None:
            self._v[:] = bytes(BLOCK_BYTES)
        self._key = None
        self._v = None
        self._reseed_counter = 0

    @property
    def reseed_counter(self) -> int:
        """Generate requests since the last (re)seed, plus one (section 10.2.1.1)."""
        return self._reseed_counter

    @property
    def reseed_interval(self) -> int:
        return self._reseed_interval

    @property
    def derivation_function(self) -> bool:
        return self._df

    @property
    def instantiated(self) -> bool:
        return self._key is not None

    # --- internals -------------------------------------------------------------------------

    def _require_state(self) -> tuple[bytearray, bytearray]:
        if self._key is None or self._v is None:
            raise DrbgUninstantiatedError("the CTR_DRBG instance was uninstantiated")
        return self._key, self._v

    def _update(self, provided_data: bytes) -> None:
        """CTR_DRBG_Update (section 10.2.1.2)."""
        key, v = self._require_state()
        (temp,) = _ctr_keystream(key, v, SEED_BYTES)
        temp = _xor(temp, provided_data)
        key[:] = temp[:KEY_BYTES]
        v[:] = temp[KEY_BYTES:]


_INSTANTIATE = object()


def _check_df_entropy(entropy_input: bytes) -> None:
    if len(entropy_input) < MIN_ENTROPY_INPUT_BYTES_DF:
        raise DrbgInputError(
            f"entropy_input must be at least {MIN_ENTROPY_INPUT_BYTES_DF * 8} bits, "
            f"got {len(entropy_input) * 8}"
        )
    _check_max("entropy_input", entropy_input, MAX_ADDITIONAL_INPUT_BYTES_DF)


def _check_no_df_entropy(entropy_input: bytes) -> None:
    if len(entropy_input) != SEED_BYTES:
        raise DrbgInputError(
            f"entropy_input must be exactly seedlen = {SEED_BYTES * 8} bits without the "
            f"derivation function, got {len(entropy_input) * 8}"
        )


def _check_max(name: str, value: bytes, max_bytes: int) -> None:
    if len(value) > max_bytes:
        raise DrbgInputError(f"{name} must be at most {max_bytes * 8} bits, got {len(value) * 8}")
