"""The restructure of issue 36 changed no byte the log writes: entries, leaf hashes, signed
checkpoints (with a cosigner), receipts and the errors a group gives, for a seeded run of 40
commit groups (replays of earlier groups, followers in one group, conflicting parameters,
three tables, two clients, publishing on and off).

``EXPECTED`` is the SHA-256 of this very run on commit e65ab6c, the tree the restructure
started from (the writer in one module, ``rng_service/writer/appender.py``): it was computed there
by the same scenario with that commit's imports, so it is the starting commit's answer, not the
code under test's."""

from __future__ import annotations

import functools
import hashlib
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.clock import FakeClock
from rng_service.drbg import DeterministicGenerator
from rng_service.log.note import Ed25519NoteSigner
from rng_service.storage.memory import MemoryStorage
from rng_service.writer.appender import Appender, DrawRequest
from rng_service.writer.tree import MerkleTree

EXPECTED = "644f861b377fae04152b47cfdf786877009f4454eaa0c9fd4da5b435db936083"


def _draw(n: int, src: Any) -> dict[str, Any]:
    return {"value": src.randbelow(n), "perm": src.sample(list(range(10)), 5)}


def _request(rid: str, n: int, table: str, client: str) -> DrawRequest:
    return DrawRequest(client_id=client, request_id=rid, table_id=table, round_id=f"R-{rid}",
                       session_id="s", kind="test_draw", params={"n": n},
                       draw=functools.partial(_draw, n))  # fmt: skip


def _group(g: int) -> list[DrawRequest]:
    requests = []
    for i in range(1 + (g * 7) % 23):
        rid = f"g{g}-{i}"
        if i % 5 == 3 and g:
            rid = f"g{g - 1}-{i % 4}"  # a replay of an earlier group
        if i % 7 == 6:
            rid = f"g{g}-0"  # a follower in the same group
        n = 38 if i % 11 != 10 else 37  # now and then a conflict
        requests.append(_request(rid, n, f"T{i % 3}", f"c{i % 2}"))
    return requests


def test_a_seeded_run_writes_the_bytes_of_the_starting_commit() -> None:
    signer = Ed25519NoteSigner("ident-log", Ed25519PrivateKey.from_private_bytes(bytes(range(32))))
    cosigner = Ed25519NoteSigner(
        "ident-co", Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
    )
    storage = MemoryStorage()
    clock = FakeClock()
    generator = DeterministicGenerator(entropy_input=b"\x01" * 32, nonce=b"\x02" * 16)
    digest = hashlib.sha256()
    errors = replayed = 0
    for g in range(40):
        appender = Appender(storage=storage, tree=MerkleTree.load(storage), generator=generator,
                            signer=signer, cosigners=[cosigner], origin="ident.example/log",
                            clock=clock, publish_interval_seconds=5 if g % 3 else 0)  # fmt: skip
        futures = [appender.submit(r) for r in _group(g)]
        appender.start()
        for f in futures:
            f.exception(timeout=30)
        appender.stop(publish=(g % 4 == 0))
        for f in futures:
            error = f.exception()
            if error is not None:
                errors += 1
                digest.update(f"E{type(error).__name__}:{error}".encode())
                continue
            r = f.result().receipt
            replayed += r.replayed
            digest.update(repr((r.index, r.entry, r.leaf_hash, r.inclusion_proof, r.tree_size,
                                r.checkpoint, r.replayed)).encode())  # fmt: skip
        clock.advance(1.5)
    size = storage.tree_size()
    for rec in storage.entries(0, size):
        digest.update(rec.data + rec.leaf_hash)
    checkpoints = list(storage.checkpoints())
    for c in checkpoints:
        digest.update(c.note)
    latest = storage.latest_checkpoint()
    digest.update(latest.note if latest else b"")
    assert (errors, replayed, len(checkpoints), size) == (41, 30, 40, 415)
    assert digest.hexdigest() == EXPECTED
