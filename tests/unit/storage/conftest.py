"""Fixtures of the storage conformance suite: one ``store`` per driver in ``drivers.DRIVERS``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rng_service.storage.base import LogStorage
from tests.unit.storage.drivers import DRIVERS, Driver


@pytest.fixture(params=[pytest.param(d, id=d.name) for d in DRIVERS])
def driver(request: pytest.FixtureRequest) -> Driver:
    d: Driver = request.param
    return d


@pytest.fixture(params=[pytest.param(d, id=d.name) for d in DRIVERS if d.persistent])
def persistent_driver(request: pytest.FixtureRequest) -> Driver:
    d: Driver = request.param
    return d


@pytest.fixture
def store(driver: Driver, tmp_path: Path) -> Iterator[LogStorage]:
    s = driver.open(tmp_path)
    yield s
    s.close()
