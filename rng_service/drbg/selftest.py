"""Power-on self-tests of the CTR_DRBG, per NIST SP 800-90A Rev.1 section 11.3.

This module owns the known-answer test run before a generator's first output: instantiate,
reseed and generate are checked against one embedded NIST CAVP vector (section 11.3.2 to
11.3.4: each function tested with known inputs and outputs), and uninstantiate is checked to
leave an instance that refuses to generate (section 11.3.5). A mismatch raises
:class:`SelfTestError`; the generators latch their error state on it. The expected value is
a parameter (``kat``) so a test can prove that a corrupted expectation is caught.

The embedded vector is ``CTR_DRBG.rsp`` from NIST CAVP ``drbgvectors_pr_false``, section
``[AES-256 use df]``, PersonalizationStringLen = 256, AdditionalInputLen = 256, COUNT = 0,
also checked in under ``tests/vectors/ctr_drbg/``. It exercises the derivation function,
personalization and additional input on every call: the mode the generators use.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from rng_service.drbg.ctr_drbg import CtrDrbg, DrbgUninstantiatedError

__all__ = ["CAVP_KAT", "KnownAnswer", "SelfTestError", "power_on_self_test"]


class SelfTestError(Exception):
    """The DRBG failed its power-on known-answer test."""


@dataclass(frozen=True, slots=True)
class KnownAnswer:
    """One CAVP CTR_DRBG case (prediction resistance off), in the CAVP flow."""

    entropy_input: bytes
    nonce: bytes
    personalization: bytes
    entropy_input_reseed: bytes
    additional_input_reseed: bytes
    additional_input_1: bytes
    additional_input_2: bytes
    returned_bits: bytes
    derivation_function: bool = True

    def __repr__(self) -> str:
        return f"KnownAnswer(returned_bits={self.returned_bits[:8].hex()}...)"


CAVP_KAT = KnownAnswer(
    entropy_input=bytes.fromhex("174b46250051a9e3d80c56ae7163dafe7e54481a56cafd3b8625f99bbb29c442"),
    nonce=bytes.fromhex("98ffd99c466e0e94a45da7e0e82dbc6b"),
    personalization=bytes.fromhex(
        "7095268e99938b3e042734b9176c9aa051f00a5f8d2a89ada214b89beef18ebf"
    ),
    entropy_input_reseed=bytes.fromhex(
        "e88be1967c5503f65d23867bbc891bd679db03b4878663f6c877592df25f0d9a"
    ),
    additional_input_reseed=bytes.fromhex(
        "cdf6ad549e45b6aa5cd67d024931c33cd133d52d5ae500c3015020beb30da063"
    ),
    additional_input_1=bytes.fromhex(
        "c7228e90c62f896a09e11684530102f926ec90a3255f6c21b857883c75800143"
    ),
    additional_input_2=bytes.fromhex(
        "76a94f224178fe4cbf9e2b8acc53c9dc3e50bb613aac8936601453cda3293b17"
    ),
    returned_bits=bytes.fromhex(
        "1a6d8dbd642076d13916e5e23038b60b26061f13dd4e006277e0268698ffb2c8"
        "7e453bae1251631ac90c701a9849d933995e8b0221fe9aca1985c546c2079027"
    ),
)


def power_on_self_test(kat: KnownAnswer = CAVP_KAT) -> None:
    """Runs the known-answer test; raises :class:`SelfTestError` on any mismatch."""
    try:
        drbg = CtrDrbg.instantiate(
            kat.entropy_input,
            kat.nonce,
            kat.personalization,
            derivation_function=kat.derivation_function,
        )
        drbg.reseed(kat.entropy_input_reseed, kat.additional_input_reseed)
        drbg.generate(len(kat.returned_bits), kat.additional_input_1)
        got = drbg.generate(len(kat.returned_bits), kat.additional_input_2)
    except Exception as e:
        raise SelfTestError(f"CTR_DRBG known-answer test raised {type(e).__name__}") from e
    if not hmac.compare_digest(got, kat.returned_bits):
        raise SelfTestError("CTR_DRBG known-answer test: generate output differs from CAVP")
    drbg.uninstantiate()
    try:
        drbg.generate(16)
    except DrbgUninstantiatedError:
        return
    raise SelfTestError("CTR_DRBG generated output after uninstantiate")
