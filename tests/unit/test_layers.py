"""Layers point down: the random core and the outcomes import no grpc, database or metrics code.

Each layer is imported in a fresh interpreter and the modules it pulled in are checked.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FORBIDDEN_BELOW_SERVICE = ("grpc", "sqlite3", "psycopg", "prometheus_client", "rng_service._proto")

CASES = {
    "rng_service.drbg": (*FORBIDDEN_BELOW_SERVICE, "rng_service.outcomes", "rng_service.log"),
    "rng_service.sampling": (*FORBIDDEN_BELOW_SERVICE, "rng_service.outcomes", "rng_service.log"),
    "rng_service.outcomes": (*FORBIDDEN_BELOW_SERVICE, "rng_service.log", "rng_service.storage"),
    "rng_service.log.entry": FORBIDDEN_BELOW_SERVICE,
    "rng_service.log.merkle": FORBIDDEN_BELOW_SERVICE,
    "rng_service.log.receipt": (*FORBIDDEN_BELOW_SERVICE, "rng_service.storage"),
    "rng_service.log.appender": ("grpc", "prometheus_client", "rng_service._proto", "sqlite3"),
    "rng_service.audit": (*FORBIDDEN_BELOW_SERVICE, "rng_service.storage", "rng_service.service"),
    "certification.sp800_22": (*FORBIDDEN_BELOW_SERVICE, "rng_service"),
    "rng_service.storage.base": ("grpc", "prometheus_client", "rng_service.log"),
    "rng_service.storage.postgres": ("grpc", "prometheus_client", "rng_service.log"),
    "rng_service.storage.sqlite": ("grpc", "prometheus_client", "rng_service.log"),
}


def _imported(module: str) -> list[str]:
    code = (
        f"import importlib, json, sys; importlib.import_module({module!r}); "
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return list(json.loads(out.stdout))


@pytest.mark.parametrize(("module", "forbidden"), sorted(CASES.items()))
def test_layer_imports(module: str, forbidden: tuple[str, ...]) -> None:
    loaded = _imported(module)
    bad = sorted(m for m in loaded for f in forbidden if m == f or m.startswith(f + "."))
    assert not bad, f"{module} pulls in {bad}"
