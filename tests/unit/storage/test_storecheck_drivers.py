"""The store's own check reads every driver through the storage Protocol alone: a log passes
in full, its record round-trips through the driver's meta table, and the next check is
incremental (the edits themselves are replayed on SQLite: tests/unit/writer/test_storecheck.py)."""

from __future__ import annotations

import pytest

from rng_service.storage.base import LogStorage
from rng_service.writer.storecheck import StoreCheckFailed, check_store, record_verified
from tests.unit.writer.test_storecheck import KEYS, ORIGIN, N, fill


def test_the_check_runs_on_every_driver(store: LogStorage) -> None:
    fill(store)
    first = check_store(store, KEYS, origin=ORIGIN, page_size=7)
    assert (first.full, first.tree_size, first.entries, first.checkpoints) == (True, N, N, 7)
    assert record_verified(store, first)
    again = check_store(store, KEYS, origin=ORIGIN)
    assert (again.full, again.start, again.entries) == (False, N, 0)
    assert again.root == first.root


def test_an_empty_store_passes(store: LogStorage) -> None:
    report = check_store(store, KEYS, origin=ORIGIN)
    assert (report.tree_size, report.newest) == (0, None)
    assert not record_verified(store, report)


def test_another_origin_is_refused(store: LogStorage) -> None:
    fill(store, 6)
    with pytest.raises(StoreCheckFailed, match=r"but log\.origin is 'other\.example/log'"):
        check_store(store, KEYS, origin="other.example/log")
