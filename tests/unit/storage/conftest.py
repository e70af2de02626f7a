"""Fixtures of the storage conformance suite: one ``store`` per driver in ``drivers.DRIVERS``,
and the session's throwaway PostgreSQL cluster (``tests/postgres_cluster.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rng_service.storage.base import LogStorage
from tests import postgres_cluster
from tests.unit.storage.drivers import DRIVERS, Driver


@pytest.fixture(scope="session")
def postgres_cluster_session() -> Iterator[postgres_cluster.Cluster]:
    """Started once per session; a missing PostgreSQL fails the tests that need it (the
    message names the package), it never skips them."""
    missing = ""
    try:
        cluster = postgres_cluster.start_session_cluster()
    except postgres_cluster.PostgresNotInstalled as e:
        missing = str(e)
    if missing:
        pytest.fail(missing, pytrace=False)
    yield cluster
    postgres_cluster.stop_session_cluster()


@pytest.fixture
def pg_cluster(postgres_cluster_session: postgres_cluster.Cluster) -> postgres_cluster.Cluster:
    """The session cluster, running (a test that stopped it must have started it again)."""
    assert postgres_cluster_session.running, "a previous test left the cluster stopped"
    return postgres_cluster_session


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
