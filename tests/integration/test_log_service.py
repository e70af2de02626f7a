"""rng.v1.LogService end to end: checkpoints, proofs, entries, dispute lookup, key rotation.

Proofs served over gRPC verify with :mod:`rng_service.log.merkle` (RFC 9162 sections 2.1.3.2
and 2.1.4.2) and equal the RFC 6962 reference definitions; every checkpoint the log signed
(published or in a receipt) is consistent with every other; a restart with a new key keeps old
receipts verifiable and new checkpoints consistent with old ones.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from rng_service._proto.rng.v1 import log_pb2
from rng_service.clock import FakeClock
from rng_service.config import ConfigError
from rng_service.log import merkle
from rng_service.log.keys import generate_key_pair, load_signer
from rng_service.log.note import (
    Checkpoint,
    NoteVerifier,
    UnverifiedNote,
    open_checkpoint,
    sign_note,
)
from rng_service.log.receipt import Receipt, verify_receipt
from rng_service.process.app import Service, StartupError
from rng_service.storage.base import CheckpointRecord
from rng_service.storage.sqlite import SqliteStorage
from tests.fakes import CounterEntropy
from tests.integration.conftest import Running, make_config, start

ORIGIN = "test.example/log"  # make_config's log.origin, and its key's name


def receipt_of(reply: object) -> Receipt:
    r = reply.receipt  # type: ignore[attr-defined]
    return Receipt(
        index=r.index,
        entry=r.entry,
        leaf_hash=r.leaf_hash,
        inclusion_proof=tuple(r.inclusion_proof),
        tree_size=r.tree_size,
        checkpoint=r.checkpoint,
        replayed=r.replayed,
    )


def key_of(path: Path) -> NoteVerifier:
    vkey = path.with_name(path.name + ".vkey").read_text().strip()
    return NoteVerifier.from_verifier_key(vkey)


def _opens(note: str, keys: list[NoteVerifier]) -> bool:
    try:
        open_checkpoint(note.encode(), keys)
    except UnverifiedNote:
        return False
    return True


def all_leaf_hashes(running: Running) -> list[bytes]:
    size = running.log.GetLatestCheckpoint(log_pb2.GetLatestCheckpointRequest()).size
    hashes: list[bytes] = []
    while len(hashes) < size:
        page = running.log.GetEntries(log_pb2.GetEntriesRequest(start=len(hashes)))
        hashes.extend(e.leaf_hash for e in page.entries)
    return hashes


def code_and_details(call: object) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        call()  # type: ignore[operator]
    return info.value.code(), info.value.details() or ""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Running]:
    """A service with 13 entries: table T{i % 3}, round R{i // 2}, session S{i % 2}."""
    running = start(make_config(tmp_path))
    try:
        for i in range(13):
            running.spin(
                f"s{i}", table_id=f"T{i % 3}", round_id=f"R{i // 2}", session_id=f"S{i % 2}"
            )
        yield running
    finally:
        running.stop()


def test_latest_checkpoint_and_proofs_verify_and_match_the_reference(
    served: Running, tmp_path: Path
) -> None:
    key = key_of(tmp_path / "key.pem")
    latest = served.log.GetLatestCheckpoint(log_pb2.GetLatestCheckpointRequest())
    checkpoint, _ = open_checkpoint(latest.note.encode(), [key], origin="test.example/log")
    assert (checkpoint.size, checkpoint.root_hash) == (latest.size, latest.root_hash)
    assert latest.size == 13
    leaves = all_leaf_hashes(served)
    assert merkle.root_from_leaf_hashes(leaves) == checkpoint.root_hash
    for size in range(1, 14):
        root = merkle.root_from_leaf_hashes(leaves[:size])
        for index in range(size):
            reply = served.log.GetInclusionProof(
                log_pb2.GetInclusionProofRequest(index=index, tree_size=size)
            )
            assert list(reply.proof) == merkle.inclusion_proof(leaves[:size], index)
            assert (reply.leaf_hash, reply.root_hash) == (leaves[index], root)
            merkle.verify_inclusion(leaves[index], index, size, list(reply.proof), root)
        for first in range(size + 1):
            reply = served.log.GetConsistencyProof(
                log_pb2.GetConsistencyProofRequest(first_size=first, second_size=size)
            )
            assert list(reply.proof) == merkle.consistency_proof(leaves[:size], first)
            merkle.verify_consistency(
                first, size, list(reply.proof), merkle.root_from_leaf_hashes(leaves[:first]),
                root,
            )  # fmt: skip
    # By leaf hash, at the default (current) size.
    reply = served.log.GetInclusionProof(log_pb2.GetInclusionProofRequest(leaf_hash=leaves[5]))
    assert (reply.index, reply.tree_size) == (5, 13)
    merkle.verify_inclusion(leaves[5], 5, 13, list(reply.proof), checkpoint.root_hash)
    # Default second size is the current tree.
    reply = served.log.GetConsistencyProof(log_pb2.GetConsistencyProofRequest(first_size=4))
    assert reply.second_size == 13


def test_entries_pages_and_bounds(served: Running) -> None:
    page = served.log.GetEntries(log_pb2.GetEntriesRequest(start=3, end=7))
    assert [e.index for e in page.entries] == [3, 4, 5, 6]
    assert all(merkle.leaf_hash(e.entry) == e.leaf_hash for e in page.entries)
    assert page.tree_size == 13
    tail = served.log.GetEntries(log_pb2.GetEntriesRequest(start=10, end=5000))
    assert [e.index for e in tail.entries] == [10, 11, 12]


@pytest.mark.parametrize(
    ("method", "request_", "code", "field"),
    [
        ("GetInclusionProof", log_pb2.GetInclusionProofRequest(index=13), "OUT_OF_RANGE", "13"),
        (
            "GetInclusionProof",
            log_pb2.GetInclusionProofRequest(index=0, tree_size=14),
            "OUT_OF_RANGE",
            "tree_size",
        ),
        (
            "GetInclusionProof",
            log_pb2.GetInclusionProofRequest(leaf_hash=b"\x01" * 31),
            "INVALID_ARGUMENT",
            "leaf_hash",
        ),
        (
            "GetInclusionProof",
            log_pb2.GetInclusionProofRequest(leaf_hash=b"\x01" * 32),
            "NOT_FOUND",
            "leaf_hash",
        ),
        ("GetInclusionProof", log_pb2.GetInclusionProofRequest(), "INVALID_ARGUMENT", "entry"),
        (
            "GetConsistencyProof",
            log_pb2.GetConsistencyProofRequest(first_size=5, second_size=3),
            "INVALID_ARGUMENT",
            "second_size",
        ),
        (
            "GetConsistencyProof",
            log_pb2.GetConsistencyProofRequest(first_size=1, second_size=14),
            "OUT_OF_RANGE",
            "second_size",
        ),
        (
            "GetConsistencyProof",
            log_pb2.GetConsistencyProofRequest(first_size=14),
            "OUT_OF_RANGE",
            "first_size",
        ),
        ("GetEntries", log_pb2.GetEntriesRequest(start=13), "OUT_OF_RANGE", "start"),
        ("GetEntries", log_pb2.GetEntriesRequest(start=4, end=4), "INVALID_ARGUMENT", "end"),
        ("FindEntries", log_pb2.FindEntriesRequest(), "INVALID_ARGUMENT", "filters"),
        (
            "FindEntries",
            log_pb2.FindEntriesRequest(table_id="T1", limit=1001),
            "INVALID_ARGUMENT",
            "limit",
        ),
        (
            "GetCheckpoints",
            log_pb2.GetCheckpointsRequest(min_size=5, max_size=4),
            "INVALID_ARGUMENT",
            "max_size",
        ),
        # Beyond what a store can hold (signed 64-bit): refused before the store sees them.
        ("GetCheckpoints", log_pb2.GetCheckpointsRequest(min_size=2**63), "INVALID_ARGUMENT",
         "min_size"),
        ("GetCheckpoints", log_pb2.GetCheckpointsRequest(max_size=2**64 - 1), "INVALID_ARGUMENT",
         "max_size"),
        # Time ranges are checked alike in every RPC that takes one.
        ("GetCheckpoints", log_pb2.GetCheckpointsRequest(since_ns=5, until_ns=4),
         "INVALID_ARGUMENT", "until_ns"),
        ("FindEntries", log_pb2.FindEntriesRequest(since_ns=5, until_ns=4), "INVALID_ARGUMENT",
         "until_ns"),
        ("FindEntries", log_pb2.FindEntriesRequest(since_ns=-1), "INVALID_ARGUMENT", "since_ns"),
        ("FindEntries", log_pb2.FindEntriesRequest(until_ns=-1), "INVALID_ARGUMENT", "until_ns"),
        ("GetCheckpoints", log_pb2.GetCheckpointsRequest(until_ns=-1), "INVALID_ARGUMENT",
         "until_ns"),
        ("GetEntries", log_pb2.GetEntriesRequest(start=2**64 - 1), "OUT_OF_RANGE", "start"),
        ("GetInclusionProof", log_pb2.GetInclusionProofRequest(index=2**64 - 1),
         "OUT_OF_RANGE", "index"),
        ("GetInclusionProof", log_pb2.GetInclusionProofRequest(index=0, tree_size=2**64 - 1),
         "OUT_OF_RANGE", "tree_size"),
        ("GetConsistencyProof", log_pb2.GetConsistencyProofRequest(first_size=2**64 - 1),
         "OUT_OF_RANGE", "first_size"),
    ],
)  # fmt: skip
def test_errors_name_the_field(
    served: Running, method: str, request_: object, code: str, field: str
) -> None:
    got, details = code_and_details(lambda: getattr(served.log, method)(request_))
    assert got == getattr(grpc.StatusCode, code)
    assert field in details


def test_find_entries_rebuilds_rounds_tables_and_sessions(served: Running) -> None:
    by_round = served.log.FindEntries(log_pb2.FindEntriesRequest(round_id="R2"))
    assert [e.index for e in by_round.entries] == [4, 5]
    assert not by_round.truncated
    by_table = served.log.FindEntries(log_pb2.FindEntriesRequest(table_id="T1"))
    assert [e.index for e in by_table.entries] == [1, 4, 7, 10]
    both = served.log.FindEntries(log_pb2.FindEntriesRequest(table_id="T1", session_id="S0"))
    assert [e.index for e in both.entries] == [4, 10]
    limited = served.log.FindEntries(log_pb2.FindEntriesRequest(session_id="S1", limit=2))
    assert [e.index for e in limited.entries] == [1, 3]
    assert limited.truncated
    everything = served.log.FindEntries(log_pb2.FindEntriesRequest(since_ns=1))
    assert len(everything.entries) == 13
    nothing = served.log.FindEntries(log_pb2.FindEntriesRequest(until_ns=1))
    assert list(nothing.entries) == []


def test_publish_on_demand_and_query_by_size_and_time(tmp_path: Path) -> None:
    clock = FakeClock()
    # A long interval: only the first group and on-demand publications are stored.
    running = start(
        make_config(tmp_path, RNG_SERVICE__LOG__PUBLISH_INTERVAL_SECONDS="3600"), clock=clock
    )
    try:
        running.spin("a")
        running.spin("b")
        stored = running.log.GetCheckpoints(log_pb2.GetCheckpointsRequest()).checkpoints
        assert [c.size for c in stored] == [1]
        latest = running.log.GetLatestCheckpoint(log_pb2.GetLatestCheckpointRequest())
        assert (latest.size, latest.published) == (2, False)
        clock.advance(5)
        published = running.log.PublishCheckpoint(log_pb2.PublishCheckpointRequest())
        assert (published.size, published.published) == (2, True)
        assert published.note == latest.note
        assert published.published_at_ns == clock.now_ns()
        again = running.log.PublishCheckpoint(log_pb2.PublishCheckpointRequest())
        assert again.published_at_ns == published.published_at_ns  # nothing new to publish
        assert running.log.GetLatestCheckpoint(log_pb2.GetLatestCheckpointRequest()).published
        running.spin("c")
        clock.advance(5)
        running.log.PublishCheckpoint(log_pb2.PublishCheckpointRequest())

        def sizes(**kw: int) -> list[int]:
            reply = running.log.GetCheckpoints(log_pb2.GetCheckpointsRequest(**kw))
            return [c.size for c in reply.checkpoints]

        assert sizes() == [1, 2, 3]
        assert sizes(min_size=2) == [2, 3]
        assert sizes(max_size=2) == [1, 2]
        assert sizes(min_size=2, max_size=2) == [2]
        assert sizes(since_ns=published.published_at_ns) == [2, 3]
        assert sizes(until_ns=published.published_at_ns) == [1]
    finally:
        running.stop()


def test_every_signed_checkpoint_is_consistent_with_every_other(tmp_path: Path) -> None:
    clock = FakeClock()
    running = start(
        make_config(tmp_path, RNG_SERVICE__LOG__PUBLISH_INTERVAL_SECONDS="1"), clock=clock
    )
    key = key_of(tmp_path / "key.pem")
    notes: list[str] = []
    try:
        for i in range(12):
            notes.append(running.spin(f"c{i}").receipt.checkpoint)
            if i % 3 == 0:
                clock.advance(1.5)
            if i % 5 == 0:
                running.log.PublishCheckpoint(log_pb2.PublishCheckpointRequest())
        stored = running.log.GetCheckpoints(log_pb2.GetCheckpointsRequest()).checkpoints
        assert len(stored) >= 4
        notes.extend(c.note for c in stored)
        heads: dict[int, bytes] = {}
        for note in notes:
            checkpoint, _ = open_checkpoint(note.encode(), [key])
            assert heads.setdefault(checkpoint.size, checkpoint.root_hash) == checkpoint.root_hash
        for (m, root1), (n, root2) in itertools.combinations_with_replacement(
            sorted(heads.items()), 2
        ):
            proof = running.log.GetConsistencyProof(
                log_pb2.GetConsistencyProofRequest(first_size=m, second_size=n)
            ).proof
            merkle.verify_consistency(m, n, list(proof), root1, root2)
    finally:
        running.stop()


def test_key_rotation_across_a_restart(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    old_key = key_of(config.log.key_file)
    running = start(config)
    try:
        old_receipts = [receipt_of(running.spin(f"old{i}")) for i in range(5)]
        old_latest = running.log.GetLatestCheckpoint(log_pb2.GetLatestCheckpointRequest())
    finally:
        running.stop()

    # Rotation: a new key becomes active, the old one is retired but stays published.
    # Both keys are named by the log's origin (C2SP tlog-checkpoint); key IDs tell them apart.
    new_path = tmp_path / "key2.pem"
    generate_key_pair(new_path, name=ORIGIN)
    rotated = make_config(
        tmp_path,
        RNG_SERVICE__LOG__KEY_FILE=str(new_path),
        RNG_SERVICE__LOG__RETIRED_KEYS="key.pem.vkey",
    )
    new_key = key_of(new_path)
    running = start(rotated)
    try:
        keys = running.log.GetPublicKeys(log_pb2.GetPublicKeysRequest()).keys
        assert [(k.verifier_key, k.active) for k in keys] == [
            (new_key.verifier_key(), True),
            (old_key.verifier_key(), False),
        ]
        published = [NoteVerifier.from_verifier_key(k.verifier_key) for k in keys]
        for receipt in old_receipts:
            assert verify_receipt(receipt, [old_key]).key_names == (ORIGIN,)
            verify_receipt(receipt, published)
            with pytest.raises(UnverifiedNote):
                verify_receipt(receipt, [new_key])
        new_receipt = receipt_of(running.spin("new0"))
        assert new_receipt.index == 5
        assert verify_receipt(new_receipt, [new_key]).key_names == (ORIGIN,)
        assert new_key.key_id != old_key.key_id
        with pytest.raises(UnverifiedNote):
            verify_receipt(new_receipt, [old_key])
        latest = running.log.GetLatestCheckpoint(log_pb2.GetLatestCheckpointRequest())
        new_head, _ = open_checkpoint(latest.note.encode(), [new_key])
        old_head, _ = open_checkpoint(old_latest.note.encode(), [old_key])
        proof = running.log.GetConsistencyProof(
            log_pb2.GetConsistencyProofRequest(first_size=old_head.size)
        ).proof
        merkle.verify_consistency(
            old_head.size, new_head.size, list(proof), old_head.root_hash, new_head.root_hash
        )
        # The stored checkpoints signed by the old key are still served.
        stored = running.log.GetCheckpoints(log_pb2.GetCheckpointsRequest()).checkpoints
        assert any(_opens(c.note, [old_key]) for c in stored)
        assert any(_opens(c.note, [new_key]) for c in stored)
    finally:
        running.stop()


def test_bad_retired_key_stops_start_up(tmp_path: Path) -> None:
    config = make_config(tmp_path, RNG_SERVICE__LOG__RETIRED_KEYS="missing.vkey")
    with pytest.raises(StartupError, match=r"log\.retired_keys: .*missing\.vkey"):
        asyncio.run(Service(config).start())


def test_refuses_to_start_on_a_store_that_forks_from_its_published_checkpoint(
    tmp_path: Path,
) -> None:
    config = make_config(tmp_path)
    running = start(config)
    for i in range(3):
        running.spin(f"f{i}")
    running.stop()
    # A checkpoint the log signed (here: forged with its key) for size 3 with another root.
    signer = load_signer(config.log.key_file, name=config.log.key_name)
    forged = Checkpoint(origin=config.log.origin, size=3, root_hash=b"\x07" * 32)
    storage = SqliteStorage(config.storage.path)
    storage.add_checkpoint(CheckpointRecord(3, 2**62, sign_note(forged.body(), [signer])))
    storage.close()
    service = Service(config, entropy=CounterEntropy())
    # The store's own check at start-up refuses it, before the appender would.
    with pytest.raises(
        StartupError,
        match=r"stored checkpoint of tree size 3 .* does not match the stored entries: .*"
        r"or the checkpoint is from a fork",
    ):
        asyncio.run(service.start())
    asyncio.run(service.stop(0))


def test_rotation_with_a_co_signing_overlap_window(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    old_key = key_of(config.log.key_file)
    generate_key_pair(tmp_path / "next.pem", name=ORIGIN)
    new_key = key_of(tmp_path / "next.pem")
    # Overlap: the old key stays active, the new one (named by the origin too) co-signs.
    overlap = make_config(tmp_path, RNG_SERVICE__LOG__COSIGN_KEY_FILE="next.pem")
    running = start(overlap)
    try:
        keys = running.log.GetPublicKeys(log_pb2.GetPublicKeysRequest()).keys
        assert [(k.verifier_key, k.active, k.cosigning) for k in keys] == [
            (old_key.verifier_key(), True, False),
            (new_key.verifier_key(), False, True),
        ]
        receipt = receipt_of(running.spin("overlap0"))
        assert verify_receipt(receipt, [old_key]).key_names == (ORIGIN,)
        assert verify_receipt(receipt, [new_key]).key_names == (ORIGIN,)
        published = running.log.PublishCheckpoint(log_pb2.PublishCheckpointRequest())
        _, opened = open_checkpoint(published.note.encode(), [old_key, new_key])
        assert opened.key_names == (ORIGIN, ORIGIN)
    finally:
        running.stop()
    # End of the overlap: the new key is active, the old one retired.
    rotated = make_config(
        tmp_path,
        RNG_SERVICE__LOG__KEY_FILE=str(tmp_path / "next.pem"),
        RNG_SERVICE__LOG__RETIRED_KEYS=old_key.verifier_key(),
    )
    running = start(rotated)
    try:
        keys = running.log.GetPublicKeys(log_pb2.GetPublicKeysRequest()).keys
        assert [(k.verifier_key, k.active, k.cosigning) for k in keys] == [
            (new_key.verifier_key(), True, False),
            (old_key.verifier_key(), False, False),
        ]
        assert verify_receipt(receipt, [new_key]).checkpoint.size == 1
        later = receipt_of(running.spin("after0"))
        assert verify_receipt(later, [new_key]).key_names == (ORIGIN,)
        with pytest.raises(UnverifiedNote):
            verify_receipt(later, [old_key])
    finally:
        running.stop()


def test_cosign_key_is_named_by_the_origin_unless_named(tmp_path: Path) -> None:
    config = make_config(tmp_path, RNG_SERVICE__LOG__COSIGN_KEY_FILE="next.pem")
    assert config.log.cosign_key_name == config.log.origin
    with pytest.raises(ConfigError, match=r"log\.cosign_key_name"):
        make_config(
            tmp_path,
            RNG_SERVICE__LOG__COSIGN_KEY_FILE="next.pem",
            RNG_SERVICE__LOG__COSIGN_KEY_NAME="two words",
        )


def test_a_restart_without_the_retired_key_after_a_rotation_is_refused(tmp_path: Path) -> None:
    """Issue 34, break 5. After a rotation, stored checkpoints are signed by the old key. A
    start whose config no longer names it (no ``log.retired_keys``) cannot verify them, so it
    is refused (docs/operations/keys.md, "Keys"), also once later starts recorded a checkpoint of
    the new key as verified (the incremental check then reads no old checkpoint)."""
    config = make_config(tmp_path)
    old_vkey = key_of(config.log.key_file).verifier_key()
    running = start(config)
    try:
        running.spin("old0")
    finally:
        running.stop()
    generate_key_pair(tmp_path / "key2.pem", name=ORIGIN)
    rotated = make_config(
        tmp_path,
        RNG_SERVICE__LOG__KEY_FILE=str(tmp_path / "key2.pem"),
        RNG_SERVICE__LOG__RETIRED_KEYS=old_vkey,
    )
    for i in range(2):  # the second start records a checkpoint of the new key as verified
        running = start(rotated)
        try:
            running.spin(f"new{i}")
        finally:
            running.stop()
    forgotten = make_config(tmp_path, RNG_SERVICE__LOG__KEY_FILE=str(tmp_path / "key2.pem"))
    service = Service(forgotten, entropy=CounterEntropy())
    with pytest.raises(StartupError) as info:
        asyncio.run(service.start())
    asyncio.run(service.stop(0))
    message = str(info.value)
    assert info.value.setting == "log.retired_keys", message
    assert "\n" not in message
    assert f"{ORIGIN}+{key_of(config.log.key_file).key_id:08x}" in message
    running = start(rotated)  # configured again: it starts
    running.stop()
