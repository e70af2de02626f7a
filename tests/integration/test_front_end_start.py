"""A front end's start does not depend on the log's size (``serve --front-ends N``).

The front end of ``rng_service.process.frontend`` runs here in-process, exactly as its process runs
it (``frontend._serve`` on an event loop, its end of a socketpair, a bootstrap frame), with
this test as its log writer (``rng_service.process.ipc.serve_front_end``). Its store is the real
read-only SQLite view, wrapped to count what the front end reads through the storage
Protocol until it reports that it listens. On logs of 10^4 and 10^5 entries (real format-2
entries and Merkle nodes, written by ``bench.bench_storecheck.build``) it must read the same
kinds of things, no entry, only the tree's frontier (one node per set bit of the size), and
the count at 10^5 may exceed the count at 10^4 by at most the ratio of the sizes' logarithms.

What a front end reads, and why, is in docs/operations/running.md ("Front ends").
"""

from __future__ import annotations

import asyncio
import math
import socket
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from bench.bench_storecheck import build
from rng_service.config import load_config
from rng_service.log.keys import generate_key_pair
from rng_service.process import app, frontend
from rng_service.process.ipc import serve_front_end

SIZES = (10_000, 100_000)


class CountingStorage:
    """A store that counts each method called and the items it returned (rows, nodes)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls: Counter[str] = Counter()
        self.items: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value) or name == "close":
            return value

        def counted(*args: Any, **kwargs: Any) -> Any:
            result = value(*args, **kwargs)
            self.calls[name] += 1
            self.items[name] += len(result) if isinstance(result, list | dict | tuple) else 1
            return result

        return counted


class NoWriter:
    """The writer's side of the channel: nothing is submitted while a front end starts."""

    def submit_waiter(self, request: Any, waiter: Any) -> None:
        raise AssertionError("a request was submitted during the start")

    def checkpoint_note(self, size: int) -> str:
        raise AssertionError("a note was asked for during the start")

    def publish_checkpoint(self) -> Any:
        raise AssertionError("a checkpoint was published during the start")

    def sync(self) -> int:
        raise AssertionError("sync during the start")


def _config(directory: Path) -> Path:
    key = directory / "key.pem"
    generate_key_pair(key, name="bench.example/log")
    config = directory / "config.toml"
    config.write_text(
        "\n".join(
            [
                "[server]",
                'host = "127.0.0.1"',
                "port = 0",
                f'lock_dir = "{directory / "run"}"',
                "[metrics]",
                "enabled = false",
                "[log]",
                'origin = "bench.example/log"',
                f'key_file = "{key}"',
                "[storage]",
                f'path = "{directory / "log.sqlite3"}"',
                "",
            ]
        )
    )
    return config


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    out = {}
    for n in SIZES:
        directory = tmp_path_factory.mktemp(f"log{n}")
        build(directory / "log.sqlite3", n)
        out[n] = _config(directory)
    return out


def start_front_end(config_path: Path, monkeypatch: pytest.MonkeyPatch) -> CountingStorage:
    """Starts a front end on the log of ``config_path`` until it listens; returns what it read
    by then (it is then stopped as when its writer goes away)."""
    config = load_config(config_path)
    profiles = app.Service(config, registry=CollectorRegistry())._load_profiles()
    boot = frontend.Bootstrap(config, frontend.profile_ids(profiles), (), 0, 0)
    stores: list[CountingStorage] = []
    real_open: Callable[..., Any] = app.open_storage

    def counting_open(settings: Any, **kwargs: Any) -> Any:
        store = CountingStorage(real_open(settings, **kwargs))
        stores.append(store)
        return store

    monkeypatch.setattr(app, "open_storage", counting_open)

    async def run() -> tuple[Counter[str], Counter[str]]:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        served = asyncio.get_running_loop().create_task(frontend._serve(theirs, boot))
        endpoint = await serve_front_end(ours, NoWriter())
        port = await asyncio.wait_for(endpoint.ready, 60)
        assert port > 0
        (store,) = stores
        read = (Counter(store.calls), Counter(store.items))
        assert endpoint.transport is not None
        endpoint.transport.close()  # the writer goes away: the front end stops
        assert await asyncio.wait_for(served, 60) == 1
        return read

    calls, items = asyncio.run(run())
    store = stores[0]
    store.calls, store.items = calls, items
    return store


def test_a_front_end_reads_only_the_trees_frontier_whatever_the_logs_size(
    logs: dict[int, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    read = {n: start_front_end(logs[n], monkeypatch) for n in SIZES}
    small, large = (read[n] for n in SIZES)
    # The same reads, whatever the size: the size, then the frontier's nodes, once each.
    assert set(small.calls) == set(large.calls) == {"tree_size", "nodes"}, (
        small.calls,
        large.calls,
    )
    assert small.calls == large.calls
    for n in SIZES:
        assert read[n].items["nodes"] == n.bit_count(), (n, read[n].items)
    ratio = sum(large.items.values()) / sum(small.items.values())
    assert ratio <= math.log2(SIZES[1]) / math.log2(SIZES[0]) + 0.25, ratio
