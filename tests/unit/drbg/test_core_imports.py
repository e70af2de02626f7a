"""The random core imports no grpc, database, metrics or logging-sink module (architecture.md)."""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN = ("grpc", "prometheus_client", "sqlite3", "psycopg", "rng_service._proto")


def test_random_core_imports_stay_in_their_layer() -> None:
    roots = tuple(m.split(".")[0] for m in FORBIDDEN)
    code = (
        "import json, sys; import rng_service.drbg, rng_service.sampling; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('rng_service') "
        f"or m.split('.')[0] in {roots!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = json.loads(out)
    allowed_project = {"rng_service", "rng_service.errors", "rng_service.clock"}
    project = {m for m in loaded if m.startswith("rng_service")}
    core = {m for m in project if m.startswith(("rng_service.drbg", "rng_service.sampling"))}
    assert project - core == allowed_project
    assert not [m for m in loaded if m.startswith(FORBIDDEN)]
