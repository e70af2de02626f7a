"""The writer's bytes for a seeded run of 40 commit groups (replays of earlier groups,
followers in one group, conflicting parameters, three tables, two clients, publishing on and
off): entries, leaf hashes, signed checkpoints (with a cosigner), receipts and the errors a
group gives.

Two answers, neither the code under test's own:

* ``FORMAT_2_ENTRIES`` is the SHA-256 of this run's entry bytes on commit 3f6dd9b (the last
  tree writing format 2, whose whole run still gave e65ab6c's digest, the starting commit of
  issue 36's restructure). Format 3 (issue 40) adds one field: every entry here, with its
  ``table_map`` taken out and ``v`` set back to 2, must be those bytes exactly, and every
  ``table_map`` must be the root that the independent reader (``tests/reader/table_map.py``,
  written from docs/log-format.md alone) computes for the log's chains.
* ``EXPECTED`` pins the whole run (receipts, proofs, checkpoints) on the first tree writing
  format 3, once the first check held there: a later change that alters any byte the log
  writes fails here.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.clock import FakeClock
from rng_service.drbg import DeterministicGenerator
from rng_service.log.note import Ed25519NoteSigner
from rng_service.storage.memory import MemoryStorage
from rng_service.writer.appender import Appender, DrawRequest
from rng_service.writer.tree import MerkleTree
from tests.reader.table_map import log_roots

FORMAT_2_ENTRIES = "91e536fc886334ff88135d7108bd30b6797f794836231271f5302ca86a17c2b7"
EXPECTED = "9421db50368055fa074483b343dcda88a9396a649e0e7901d4345590c4fd3e0b"


def _as_format_2(data: bytes) -> tuple[bytes, tuple[str, str], bytes]:
    """A format 3 entry's bytes without ``table_map`` and with ``v`` 2, its chain and root."""
    fields = json.loads(data)
    assert fields["v"] == 3, fields["v"]
    root = bytes.fromhex(fields.pop("table_map"))
    fields["v"] = 2
    return rfc8785.dumps(fields), (fields["client"], fields["table_id"]), root


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


def test_a_seeded_run_writes_format_2_bytes_plus_the_map_root() -> None:
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
    stored = storage.entries(0, size)
    for rec in stored:
        digest.update(rec.data + rec.leaf_hash)
    downgraded = [_as_format_2(rec.data) for rec in stored]
    format_2 = hashlib.sha256(b"".join(d for d, _, _ in downgraded)).hexdigest()
    assert format_2 == FORMAT_2_ENTRIES
    assert [r for _, _, r in downgraded] == log_roots([c for _, c, _ in downgraded])
    checkpoints = list(storage.checkpoints())
    for c in checkpoints:
        digest.update(c.note)
    latest = storage.latest_checkpoint()
    digest.update(latest.note if latest else b"")
    assert (errors, replayed, len(checkpoints), size) == (41, 30, 40, 415)
    assert digest.hexdigest() == EXPECTED
