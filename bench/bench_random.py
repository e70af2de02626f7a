"""Random core throughput: the CTR_DRBG generator and RandomSource against the stdlib.

Rows (targets from issue 2):

* ProductionGenerator.random_bytes(65536) bytes/s vs os.urandom(65536): >= 10x;
* RandomSource.randbelow(38) draws/s vs secrets.randbelow(38): >= 3x;
* RandomSource.randbelow_batch(38, 100_000) draws/s vs scalar RandomSource.randbelow(38):
  >= 10x, and vs secrets.randbelow(38): >= 30x;
* RandomSource.shuffle of a 52-card deck vs random.SystemRandom().shuffle (no target).

Each rate loops inside the timed function so that call overhead of the harness is amortised
the same way for the measured code and its baseline.
"""

from __future__ import annotations

import os
import random
import secrets

from bench._common import Row, rate
from rng_service.clock import SystemClock
from rng_service.drbg import GeneratorConfig, OsEntropySource, ProductionGenerator
from rng_service.sampling import RandomSource

_CHUNK = 65_536
_DRAWS = 1000
_BATCH = 100_000


def run(*, short: bool) -> list[Row]:
    seconds = 0.3 if short else 2.0
    gen = ProductionGenerator(
        entropy=OsEntropySource(), clock=SystemClock(), config=GeneratorConfig()
    )
    rs = RandomSource(gen)

    def gen_bytes() -> None:
        for _ in range(16):
            gen.random_bytes(_CHUNK)

    def urandom_bytes() -> None:
        for _ in range(16):
            os.urandom(_CHUNK)

    def scalar() -> None:
        randbelow = rs.randbelow
        for _ in range(_DRAWS):
            randbelow(38)

    def stdlib_scalar() -> None:
        randbelow = secrets.randbelow
        for _ in range(_DRAWS):
            randbelow(38)

    def batch() -> None:
        rs.randbelow_batch(38, _BATCH)

    deck = list(range(52))
    system = random.SystemRandom()

    def shuffle() -> None:
        for _ in range(100):
            rs.shuffle(deck)

    def stdlib_shuffle() -> None:
        for _ in range(100):
            system.shuffle(deck)

    gen_rate = rate(gen_bytes, seconds=seconds, per_call=16 * _CHUNK)
    urandom_rate = rate(urandom_bytes, seconds=seconds, per_call=16 * _CHUNK)
    scalar_rate = rate(scalar, seconds=seconds, per_call=_DRAWS)
    secrets_rate = rate(stdlib_scalar, seconds=seconds, per_call=_DRAWS)
    batch_rate = rate(batch, seconds=seconds, per_call=_BATCH)
    shuffle_rate = rate(shuffle, seconds=seconds, per_call=100)
    system_shuffle_rate = rate(stdlib_shuffle, seconds=seconds, per_call=100)
    return [
        Row(
            "ProductionGenerator.random_bytes(65536)",
            gen_rate,
            "bytes/s",
            "os.urandom(65536)",
            urandom_rate,
            ">= 10x",
        ),
        Row(
            "RandomSource.randbelow(38)",
            scalar_rate,
            "draws/s",
            "secrets.randbelow(38)",
            secrets_rate,
            ">= 3x",
        ),
        Row(
            "RandomSource.randbelow_batch(38, 100000)",
            batch_rate,
            "draws/s",
            "RandomSource.randbelow(38)",
            scalar_rate,
            ">= 10x",
        ),
        Row(
            "RandomSource.randbelow_batch(38, 100000)",
            batch_rate,
            "draws/s",
            "secrets.randbelow(38)",
            secrets_rate,
            ">= 30x",
        ),
        Row(
            "RandomSource.shuffle(52 cards)",
            shuffle_rate,
            "shuffles/s",
            "random.SystemRandom().shuffle",
            system_shuffle_rate,
        ),
    ]
