"""Fixtures of the storage conformance suite: one ``store`` per driver in ``drivers.DRIVERS``.
The session's throwaway PostgreSQL cluster (``postgres_cluster_session``, ``pg_cluster``) comes
from ``tests/conftest.py``, shared with the integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rng_service.storage.base import LogStorage
from tests.unit.storage.drivers import DRIVERS, Driver


def _use(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Driver]:
    d: Driver = request.param
    if d.needs_postgres:
        request.getfixturevalue("pg_cluster")
    yield d
    d.cleanup(tmp_path)


@pytest.fixture(params=[pytest.param(d, id=d.name, marks=d.marks) for d in DRIVERS])
def driver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Driver]:
    yield from _use(request, tmp_path)


@pytest.fixture(params=[pytest.param(d, id=d.name, marks=d.marks) for d in DRIVERS if d.persistent])
def persistent_driver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Driver]:
    yield from _use(request, tmp_path)


@pytest.fixture
def store(driver: Driver, tmp_path: Path) -> Iterator[LogStorage]:
    s = driver.open(tmp_path)
    yield s
    s.close()
