"""What checking served entries against the tree's leaf nodes costs (issue 34, break 3).

Every entry the service serves or replays is checked against the tree's stored level-0 node
of its index (``rng_service.writer.columns.check_nodes``, through ``MerkleTree.leaf_hashes``: one
node read from the store for the page, nothing cached). Measured on an SQLite log written by
the real ``MerkleTree`` and ``SqliteStorage`` (``bench.bench_storecheck.build``), with pages
and replays of entries spread over the whole log (their nodes mostly not in the tree's
cache, the case that costs):

- a ``GetEntries`` page of 1,000 entries as the servicer builds it (``LogServicer._entries``,
  no gRPC), without proofs (an export) and with proofs;
- a replay of a logged request (``Appender.replay``: the row's checks, its inclusion proof in
  its commit's tree, the signed note of that tree, cached as the service caches it).

Baseline, in the same run and interleaved: the same call with the node check taken out (what
this check added, ``check_nodes``, the tree's ``leaf_hashes`` and, for a replay,
``leaf_and_inclusion_proof`` (the leaf read with the proof's nodes), replaced by the code
before for the baseline's calls only; the replay's row check, which a replay already had in
the sequencer's group lookup, is taken out too). The ratio is the cost of the check.
"""

from __future__ import annotations

import contextlib
import itertools
import random
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from bench._common import Row
from bench.bench_storecheck import GROUP, ORIGIN, SIGNER, build
from rng_service._proto.rng.v1 import log_pb2
from rng_service.clock import SystemClock
from rng_service.rpc import log_servicer as servicer_module
from rng_service.rpc.log_servicer import LogServicer
from rng_service.storage.base import CheckpointRecord, EntryRecord
from rng_service.storage.sqlite import SqliteStorage
from rng_service.writer import appender as appender_module
from rng_service.writer import sequencer as sequencer_module
from rng_service.writer.appender import Appender
from rng_service.writer.tree import MerkleTree

PAGE = 1000


class _NoGenerator:
    """A replay draws nothing: the appender's generator is never called here."""

    instance_id = "bench"
    epoch = 0
    lab_mode = False

    def random_bytes(self, n: int) -> bytes:
        raise AssertionError("a replay draws nothing")


@contextlib.contextmanager
def _without_node_check() -> Iterator[None]:
    """The code as it was before the check: no leaf-node read, no comparison."""
    saved = (
        servicer_module.check_nodes,
        appender_module.check_nodes,
        appender_module.check_record,
        sequencer_module.check_record,
        MerkleTree.leaf_hashes,
        MerkleTree.leaf_and_inclusion_proof,
    )

    def leaf_hashes(self: MerkleTree, indices: Sequence[int]) -> list[bytes]:
        return []

    def proof_alone(self: MerkleTree, index: int, size: int) -> tuple[bytes, list[bytes]]:
        return b"", self.inclusion_proof(index, size)  # what a replay read before

    def nothing(*args: Any) -> Any:
        return None

    servicer_module.check_nodes = nothing
    appender_module.check_nodes = nothing
    appender_module.check_record = nothing
    sequencer_module.check_record = nothing
    MerkleTree.leaf_hashes = leaf_hashes  # type: ignore[method-assign]
    MerkleTree.leaf_and_inclusion_proof = proof_alone  # type: ignore[method-assign]
    try:
        yield
    finally:
        (
            servicer_module.check_nodes,
            appender_module.check_nodes,
            appender_module.check_record,
            sequencer_module.check_record,
            MerkleTree.leaf_hashes,
            MerkleTree.leaf_and_inclusion_proof,
        ) = saved  # type: ignore[method-assign]


def _time(fn: Callable[[], object], calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def run(*, short: bool) -> list[Row]:
    n = 4_000 if short else 100_000
    rounds = 1 if short else 5
    pages = 4 if short else 20
    replays = 50 if short else 1_000
    rng = random.Random(34)
    with tempfile.TemporaryDirectory(prefix="rng-bench-served-") as tmp:
        path = Path(tmp) / "log.sqlite3"
        build(path, n)
        store = SqliteStorage(path)
        try:
            tree = MerkleTree.load(store)
            appender = Appender(
                storage=store, tree=tree, generator=_NoGenerator(), signer=SIGNER,
                origin=ORIGIN, clock=SystemClock(),
            )  # fmt: skip

            def publish() -> CheckpointRecord:
                raise AssertionError("not called")

            servicer = LogServicer(
                keys=(), storage=store, tree=tree, checkpoint_note=appender.checkpoint_note,
                publish=publish,
            )  # fmt: skip
            starts = [rng.randrange(0, n - PAGE) for _ in range(pages)]
            records: list[EntryRecord] = [
                store.entries(i, i + 1)[0] for i in (rng.randrange(n) for _ in range(replays))
            ]
            records.sort(key=lambda r: r.commit_size)  # the service's note cache: one per size

            def page(proofs: bool) -> Callable[[], object]:
                it = itertools.cycle(starts)
                return lambda: servicer._entries(
                    log_pb2.GetEntriesRequest(start=next(it), end=0, omit_proofs=not proofs)
                )

            def replay() -> Callable[[], object]:
                it = itertools.cycle(records)
                return lambda: appender.replay(next(it))

            cases = {
                "page": (page(False), pages),
                "page+proofs": (page(True), pages),
                "replay": (replay(), replays),
            }
            best: dict[tuple[str, bool], float] = {}
            for _ in range(rounds):  # interleaved; best of each (shared, noisy machine)
                for name, (fn, calls) in cases.items():
                    for checked in (False, True):
                        ctx = contextlib.nullcontext() if checked else _without_node_check()
                        with ctx:
                            value = _time(fn, calls)
                        key = (name, checked)
                        best[key] = min(best.get(key, float("inf")), value)
        finally:
            store.close()
    us = 1e6
    return [
        Row(f"GetEntries page of {PAGE:,}, no proofs ({n:,} entries)", best[("page", True)] * us,
            "us/page", "without the node check", best[("page", False)] * us),
        Row(f"GetEntries page of {PAGE:,}, with proofs", best[("page+proofs", True)] * us,
            "us/page", "without the node check", best[("page+proofs", False)] * us),
        Row(f"replay of a logged request (groups of {GROUP:,})", best[("replay", True)] * us,
            "us/replay", "without the node check", best[("replay", False)] * us),
    ]  # fmt: skip
