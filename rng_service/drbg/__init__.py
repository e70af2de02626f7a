"""The random core's generators: CTR_DRBG (NIST SP 800-90A Rev.1 section 10.2.1), entropy
sources with SP 800-90B section 4.4 health tests, power-on self-tests (SP 800-90A section
11.3) and the production and lab-mode generators built from them.

Imports nothing from the project but ``rng_service.errors`` and ``rng_service.clock``; no
grpc, database or metrics module. Unbiased sampling on top lives in ``rng_service.sampling``.
"""

from rng_service.drbg.ctr_drbg import (
    CtrDrbg,
    DrbgError,
    DrbgInputError,
    DrbgUninstantiatedError,
    ReseedRequiredError,
)
from rng_service.drbg.entropy import (
    DeadlineEntropySource,
    EntropyExhaustedError,
    EntropySource,
    EntropyTimeoutError,
    FixedEntropySource,
    OsEntropySource,
    SeededEntropySource,
)
from rng_service.drbg.generator import (
    ENTROPY_READ_BLOCK,
    LAB_GENERATE_BYTES,
    DeterministicGenerator,
    GeneratorConfig,
    GeneratorStatus,
    ProductionGenerator,
)
from rng_service.drbg.health import (
    EntropyHealthError,
    HealthTestedEntropySource,
)
from rng_service.drbg.selftest import CAVP_KAT, KnownAnswer, SelfTestError, power_on_self_test

__all__ = [
    "CAVP_KAT",
    "ENTROPY_READ_BLOCK",
    "LAB_GENERATE_BYTES",
    "CtrDrbg",
    "DeadlineEntropySource",
    "DeterministicGenerator",
    "DrbgError",
    "DrbgInputError",
    "DrbgUninstantiatedError",
    "EntropyExhaustedError",
    "EntropyHealthError",
    "EntropySource",
    "EntropyTimeoutError",
    "FixedEntropySource",
    "GeneratorConfig",
    "GeneratorStatus",
    "HealthTestedEntropySource",
    "KnownAnswer",
    "OsEntropySource",
    "ProductionGenerator",
    "ReseedRequiredError",
    "SeededEntropySource",
    "SelfTestError",
    "power_on_self_test",
]
