"""The witness's decisions, one per status code of C2SP tlog-witness "add-checkpoint", and its
state: never a smaller or inconsistent checkpoint, across restarts, under concurrent requests.

Checkpoints and proofs are built here from the recursive RFC 6962 definitions
(``rng_service.log.merkle``, itself checked against upstream vectors), the 200 answers read with
the cosignature verifier checked against a real witness's cosignature
(``test_cosignature_vectors.py``).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.clock import FakeClock
from rng_service.log.cosignature import CosignatureSigner, verify_cosignatures
from rng_service.log.merkle import consistency_proof, leaf_hash, root_from_leaf_hashes
from rng_service.log.note import Checkpoint, Ed25519NoteSigner, sign_note
from rng_service.log.tlog_witness import AddCheckpoint, parse_signature_lines, parse_size
from rng_service.witness import Witness, WitnessState

ORIGIN = "log.test.example/l"
LEAVES = [leaf_hash(b"entry %d" % i) for i in range(64)]
LOG = Ed25519NoteSigner(ORIGIN, Ed25519PrivateKey.generate())


def root(n: int, leaves: list[bytes] = LEAVES) -> bytes:
    return root_from_leaf_hashes(leaves[:n])


def note(n: int, *, leaves: list[bytes] = LEAVES, signer: Ed25519NoteSigner = LOG) -> bytes:
    return sign_note(Checkpoint(ORIGIN, n, root(n, leaves)).body(), [signer])


def request(old: int, n: int, *, leaves: list[bytes] = LEAVES, proof: list[bytes] | None = None,
            signed: bytes | None = None) -> bytes:  # fmt: skip
    if proof is None:
        proof = consistency_proof(leaves[:n], old) if 0 < old < n else []
    return AddCheckpoint(old, tuple(proof), signed or note(n, leaves=leaves)).encode()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def signer() -> CosignatureSigner:
    return CosignatureSigner("witness.test.example/w", Ed25519PrivateKey.generate())


def make(tmp_path: Path, clock: FakeClock, signer: CosignatureSigner) -> Witness:
    return Witness(
        signer=signer, logs={ORIGIN: [LOG.verifier()]},
        state=WitnessState(tmp_path / "state.sqlite3"), clock=clock,
    )  # fmt: skip


def test_cosigns_a_first_checkpoint_with_a_timestamped_line(
    tmp_path: Path, clock: FakeClock, signer: CosignatureSigner
) -> None:
    answer = make(tmp_path, clock, signer).add_checkpoint(request(0, 5))
    assert answer.status == 200
    line = parse_signature_lines(answer.body)
    assert len(line) == 1
    cosigned = note(5) + "".join(s.line() for s in line).encode()
    found = verify_cosignatures(cosigned, [signer.verifier()])
    assert found[0].timestamp == clock.now_ns() // 10**9


def test_then_only_consistent_larger_or_equal_checkpoints(
    tmp_path: Path, clock: FakeClock, signer: CosignatureSigner
) -> None:
    w = make(tmp_path, clock, signer)
    assert w.add_checkpoint(request(0, 5)).status == 200
    # old size must be the cosigned one: 409 with it, as text/x.tlog.size
    stale = w.add_checkpoint(request(0, 9))
    assert (stale.status, stale.content_type, parse_size(stale.body)) == (
        409, "text/x.tlog.size", 5,
    )  # fmt: skip
    assert w.add_checkpoint(request(5, 9)).status == 200
    # never a smaller one: old 9 > size 7 is malformed (400), old 5 is not the latest (409)
    assert w.add_checkpoint(request(9, 7, proof=[])).status == 400
    assert w.add_checkpoint(request(5, 7)).status == 409
    # the same checkpoint again: cosigned again, with the clock's new time
    clock.advance(30)
    again = w.add_checkpoint(request(9, 9))
    assert again.status == 200
    assert (
        verify_cosignatures(note(9) + again.body, [signer.verifier()])[0].timestamp
        == clock.now_ns() // 10**9
    )


def test_a_fork_is_refused(tmp_path: Path, clock: FakeClock, signer: CosignatureSigner) -> None:
    w = make(tmp_path, clock, signer)
    assert w.add_checkpoint(request(0, 8)).status == 200
    forked = [*LEAVES[:6], leaf_hash(b"other 6"), *LEAVES[7:]]
    # The same size with another root: 409 (and kept as evidence).
    same = w.add_checkpoint(request(8, 8, leaves=forked))
    assert same.status == 409
    assert parse_size(same.body) == 8
    # A larger tree that does not extend the cosigned one: its own proof does not verify, 422.
    grown = w.add_checkpoint(request(8, 12, leaves=forked))
    assert grown.status == 422
    assert b"consistency proof" in grown.body
    # A proof of the wrong shape is refused as well, and an honest continuation still works.
    assert w.add_checkpoint(request(8, 12, proof=[b"\x00" * 32])).status == 422
    assert w.add_checkpoint(request(8, 12)).status == 200
    evidence = w._state.evidence()
    assert [e.reason.split(":")[0] for e in evidence] == [
        "same size 8 as the cosigned checkpoint, another root",
        "consistency proof from size 8",
        "consistency proof from size 8",
    ]


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"", 400),
        (b"old 1\n\n", 400),
        (b"old 01\n\n" + b"x", 400),  # leading zero
        (b"new 0\n\n" + b"x", 400),
        (b"old 0\nnot base64!\n\n" + b"x", 400),
    ],
)
def test_malformed_requests_are_400(
    tmp_path: Path, clock: FakeClock, signer: CosignatureSigner, body: bytes, status: int
) -> None:
    assert make(tmp_path, clock, signer).add_checkpoint(body).status == status


def test_unknown_origin_is_404_and_a_bad_signature_403(
    tmp_path: Path, clock: FakeClock, signer: CosignatureSigner
) -> None:
    w = make(tmp_path, clock, signer)
    other = Ed25519NoteSigner("other.example/log", Ed25519PrivateKey.generate())
    unknown = sign_note(Checkpoint("other.example/log", 3, root(3)).body(), [other])
    assert w.add_checkpoint(AddCheckpoint(0, (), unknown).encode()).status == 404
    # Signed by a key of the same name the witness does not trust: 403; nothing stored.
    impostor = Ed25519NoteSigner(ORIGIN, Ed25519PrivateKey.generate())
    assert w.add_checkpoint(request(0, 3, signed=note(3, signer=impostor))).status == 403
    # A trusted key's signature over another text: 403.
    tampered = note(3).replace(b"\n3\n", b"\n4\n", 1)
    assert w.add_checkpoint(request(0, 4, proof=[], signed=tampered)).status == 403
    assert w._state.head(ORIGIN) is None
    # Unknown keys' signatures beside a trusted one are ignored.
    both = sign_note(Checkpoint(ORIGIN, 3, root(3)).body(), [impostor, LOG])
    assert w.add_checkpoint(request(0, 3, signed=both)).status == 200


def test_a_note_with_a_bad_or_repeated_line_of_the_log_key_is_refused(
    tmp_path: Path, clock: FakeClock, signer: CosignatureSigner
) -> None:
    """The witness opens notes with the strict rule (docs/log-format.md, "Opening a signed
    note"): a valid line of the trusted key followed by a bad one of the same key and ID, the
    other way round, or the valid line twice: 403, nothing cosigned, nothing stored."""
    w = make(tmp_path, clock, signer)
    good = note(3)
    text, _, line = good.partition(b"\n\n")
    bad = note(4)[len(note(4).partition(b"\n\n")[0]) + 2 :]  # the key's line over another text
    for lines in (line + bad, bad + line, line + line):
        answer = w.add_checkpoint(request(0, 3, signed=text + b"\n\n" + lines))
        assert answer.status == 403, answer.body
        assert b"invalid signature" in answer.body or b"two signature lines" in answer.body
    assert w._state.head(ORIGIN) is None
    assert w.add_checkpoint(request(0, 3, signed=good)).status == 200


def test_the_state_survives_a_restart(
    tmp_path: Path, clock: FakeClock, signer: CosignatureSigner
) -> None:
    w = make(tmp_path, clock, signer)
    assert w.add_checkpoint(request(0, 20)).status == 200
    w._state.close()
    again = make(tmp_path, clock, signer)
    refused = again.add_checkpoint(request(0, 10))
    assert (refused.status, parse_size(refused.body)) == (409, 20)


def test_concurrent_requests_cannot_both_advance(
    tmp_path: Path, clock: FakeClock, signer: CosignatureSigner
) -> None:
    """The spec's race: from the same old size, requests for several larger sizes at once; one
    wins, the others get 409, and the stored size is the winner's (never rolled back)."""
    w = make(tmp_path, clock, signer)
    assert w.add_checkpoint(request(0, 10)).status == 200
    bodies = [request(10, n) for n in range(20, 60, 4)]
    results: list[tuple[int, int]] = []
    barrier = threading.Barrier(len(bodies))
    lock = threading.Lock()

    def send(i: int) -> None:
        barrier.wait()
        answer = w.add_checkpoint(bodies[i])
        with lock:
            results.append((answer.status, 20 + 4 * i))

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [size for status, size in results if status == 200]
    assert len(winners) == 1
    assert sorted(status for status, _ in results) == [200] + [409] * (len(bodies) - 1)
    head = w._state.head(ORIGIN)
    assert head is not None
    assert head.size == winners[0]


def test_two_processes_sharing_one_state_file_serialise(
    tmp_path: Path, clock: FakeClock, signer: CosignatureSigner
) -> None:
    """Two witness objects (as two processes would) on one state file: the second sees what the
    first stored, inside its own transaction."""
    a, b = make(tmp_path, clock, signer), make(tmp_path, clock, signer)
    assert a.add_checkpoint(request(0, 10)).status == 200
    assert b.add_checkpoint(request(0, 12)).status == 409
    assert b.add_checkpoint(request(10, 12)).status == 200
    assert a.add_checkpoint(request(10, 14)).status == 409
