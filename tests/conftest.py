"""Fixtures shared by every test directory: the session's throwaway PostgreSQL cluster
(``tests/postgres_cluster.py``), for the storage tests and the integration tests alike."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import postgres_cluster


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
