"""The log's witnessing rounds against a real witness (``rng_service.witness.Witness``) reached
through an in-process transport: what each answer means for the log (cosigned, conflict, stale,
unreachable, refused, bad answer), what is stored, reported and logged."""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.clock import FakeClock
from rng_service.log.cosignature import CosignatureSigner, verify_cosignatures
from rng_service.log.merkle import consistency_proof, leaf_hash, root_from_leaf_hashes
from rng_service.log.note import Checkpoint, Ed25519NoteSigner, sign_note
from rng_service.storage.base import CheckpointRecord
from rng_service.storage.memory import MemoryStorage
from rng_service.witness import Witness, WitnessState
from rng_service.writer.publisher import (
    HttpAnswer,
    Unreachable,
    WitnessEndpoint,
    Witnessing,
    cosigned_note,
)

ORIGIN = "log.test.example/l"
LOG = Ed25519NoteSigner(ORIGIN, Ed25519PrivateKey.generate())


class Log:
    """Leaves, signed checkpoints and proofs of a log, from the RFC 6962 definitions."""

    def __init__(self, n: int) -> None:
        self.leaves = [leaf_hash(b"e%d" % i) for i in range(n)]

    @property
    def size(self) -> int:
        return len(self.leaves)

    def note(self, size: int) -> str:
        root = root_from_leaf_hashes(self.leaves[:size])
        return sign_note(Checkpoint(ORIGIN, size, root).body(), [LOG]).decode()

    def consistency_proof(self, size1: int, size2: int | None = None) -> list[bytes]:
        return consistency_proof(self.leaves[: size2 or self.size], size1)

    def publish(self) -> CheckpointRecord:
        return CheckpointRecord(self.size, 0, self.note(self.size).encode())

    def sync(self) -> int:
        return self.size


class InProcess:
    """A transport to a real Witness, which can be taken down or replaced by a fixed answer."""

    def __init__(self, witness: Witness) -> None:
        self.witness = witness
        self.down = False
        self.answer: Callable[[bytes], HttpAnswer] | None = None
        self.requests: list[bytes] = []

    def post(self, body: bytes) -> HttpAnswer:
        self.requests.append(body)
        if self.down:
            raise Unreachable("ConnectionRefusedError: [Errno 111] Connection refused")
        if self.answer is not None:
            return self.answer(body)
        a = self.witness.add_checkpoint(body)
        return HttpAnswer(a.status, a.content_type, a.body)

    def close(self) -> None:
        pass


class Recorder:
    def __init__(self) -> None:
        self.outcomes: list[tuple[str, str, int]] = []
        self.quorum: list[tuple[int, int]] = []

    def witness_outcome(self, *, witness: str, result: str, size: int,
                        timestamp: int | None) -> None:  # fmt: skip
        self.outcomes.append((witness, result, size))

    def witness_quorum(self, *, cosigned: int, required: int) -> None:
        self.quorum.append((cosigned, required))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def setup(
    tmp_path: Path, clock: FakeClock, log: Log, storage: MemoryStorage | None = None
) -> tuple[Witnessing, InProcess, CosignatureSigner, MemoryStorage, Recorder]:
    signer = CosignatureSigner("w.test.example/w", Ed25519PrivateKey.generate())
    witness = Witness(signer=signer, logs={ORIGIN: [LOG.verifier()]},
                      state=WitnessState(tmp_path / "w.sqlite3"), clock=clock)  # fmt: skip
    transport = InProcess(witness)
    storage = storage or MemoryStorage()
    recorder = Recorder()
    witnessing = Witnessing(
        endpoints=[WitnessEndpoint("w", "http://w.invalid", signer.verifier(), transport)],
        storage=storage, tree=log, checkpoint_note=log.note, publish=log.publish,
        sync=log.sync, clock=clock, interval_seconds=1.0, min_witnesses=1, observer=recorder,
    )  # fmt: skip
    return witnessing, transport, signer, storage, recorder


def test_a_round_stores_a_verified_cosignature(tmp_path: Path, clock: FakeClock) -> None:
    log = Log(7)
    witnessing, transport, signer, storage, recorder = setup(tmp_path, clock, log)
    [outcome] = witnessing.round()
    assert outcome.result == "cosigned"
    assert transport.requests[0].startswith(b"old 0\n\n")
    [record] = storage.cosignatures()
    assert (record.size, record.witness, record.key_id) == (7, signer.name, signer.key_id)
    served = cosigned_note(log.note(7).encode(), [record])
    assert verify_cosignatures(served, [signer.verifier()])[0].timestamp == record.timestamp
    assert recorder.outcomes == [("w", "cosigned", 7)]
    assert recorder.quorum == [(1, 1)]
    # The log grows: the next request carries the old size and the proof from it.
    log.leaves += [leaf_hash(b"x%d" % i) for i in range(5)]
    assert witnessing.round()[0].result == "cosigned"
    assert transport.requests[-1].startswith(b"old 7\n")
    assert len(transport.requests[-1].split(b"\n\n")[0].split(b"\n")) > 1  # proof lines


def test_a_quiet_log_gets_fresh_cosignatures(tmp_path: Path, clock: FakeClock) -> None:
    log = Log(3)
    witnessing, transport, _, storage, _ = setup(tmp_path, clock, log)
    witnessing.round()
    first = storage.cosignatures()[0].timestamp
    clock.advance(60)
    witnessing.round()
    assert transport.requests[-1].startswith(b"old 3\n\n")  # same size, no proof
    [record] = storage.cosignatures()  # replaced, not piled up
    assert record.timestamp == first + 60


def test_the_witness_size_is_learned_from_a_409(tmp_path: Path, clock: FakeClock) -> None:
    """A service restarted without stored cosignatures (or another replica's) learns the
    witness's size from its 409 and retries with the proof from there."""
    log = Log(10)
    witnessing, transport, signer, _, _ = setup(tmp_path, clock, log)
    witnessing.round()
    fresh, _transport2, _, _, _ = setup(tmp_path, clock, log)
    fresh._endpoints = (WitnessEndpoint("w", "http://w.invalid", signer.verifier(),
                                        transport),)  # fmt: skip
    log.leaves += [leaf_hash(b"y")]
    n = len(transport.requests)
    assert fresh.round()[0].result == "cosigned"
    sent = transport.requests[n:]
    assert [r.split(b"\n", 1)[0] for r in sent] == [b"old 0", b"old 10"]


def test_a_witness_ahead_of_the_store_is_the_alarm(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    log = Log(20)
    witnessing, _transport, _, _, recorder = setup(tmp_path, clock, log)
    witnessing.round()
    del log.leaves[12:]  # the store cut back
    [outcome] = witnessing.round()
    assert outcome.result == "conflict"
    assert outcome.witness_size == 20
    assert "has cosigned tree size 20 of this log, but the log has only 12 entries" in (
        outcome.message
    )
    assert recorder.outcomes[-1] == ("w", "conflict", 12)
    [alarm] = [r for r in caplog.records if isinstance(r.msg, dict)
               and r.msg["event"] == "witness_conflict"]  # fmt: skip
    assert alarm.levelno == logging.ERROR


def test_a_rewritten_tree_is_the_alarm(tmp_path: Path, clock: FakeClock) -> None:
    log = Log(8)
    witnessing, _, _, _, _ = setup(tmp_path, clock, log)
    witnessing.round()
    log.leaves[5] = leaf_hash(b"rewritten")  # same size, another root: 409 at equal sizes
    assert witnessing.round()[0].result == "conflict"
    log.leaves += [leaf_hash(b"more")]  # larger, proof from its own tree: 422
    [outcome] = witnessing.round()
    assert outcome.result == "conflict"
    assert "refused the consistency proof from tree size 8" in outcome.message


def test_a_witness_ahead_because_of_another_replica_is_stale(
    tmp_path: Path, clock: FakeClock
) -> None:
    log = Log(5)
    witnessing, transport, _, _, _ = setup(tmp_path, clock, log)
    witnessing.round()
    # Another replica published and witnessed size 9 (this one's checkpoint is still 5).
    longer = Log(9)
    transport.witness.add_checkpoint(
        b"old 5\n" + b"".join(
            base64.b64encode(h) + b"\n" for h in longer.consistency_proof(5, 9)
        ) + b"\n" + longer.note(9).encode()
    )  # fmt: skip
    log.leaves = longer.leaves  # what sync() finds in the shared store
    [outcome] = witnessing.submit(Log(5).note(5).encode())
    assert outcome.result == "stale"


def test_unreachable_then_recovered(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    log = Log(4)
    witnessing, transport, _, _, recorder = setup(tmp_path, clock, log)
    witnessing.round()
    transport.down = True
    for _ in range(3):
        assert witnessing.round()[0].result == "unreachable"
    warnings = [r for r in caplog.records if isinstance(r.msg, dict)
                and r.msg["event"] == "witness_unreachable"]  # fmt: skip
    assert len(warnings) == 1  # once, not once per round
    assert warnings[0].levelno == logging.WARNING
    transport.down = False
    assert witnessing.round()[0].result == "cosigned"
    assert any(isinstance(r.msg, dict) and r.msg["event"] == "witness_recovered"
               for r in caplog.records)  # fmt: skip
    assert [r for _, r, _ in recorder.outcomes] == [
        "cosigned", "unreachable", "unreachable", "unreachable", "cosigned",
    ]  # fmt: skip


def test_refusals_and_bad_answers(tmp_path: Path, clock: FakeClock) -> None:
    log = Log(4)
    witnessing, transport, _, storage, _ = setup(tmp_path, clock, log)
    transport.answer = lambda _: HttpAnswer(403, "text/plain", b"no valid signature\n")
    [outcome] = witnessing.round()
    assert (outcome.result, outcome.message) == ("refused", "HTTP 403: no valid signature")
    # A 200 whose line is another key's: ignored, so no cosignature of the configured key.
    other = CosignatureSigner("w.test.example/w", Ed25519PrivateKey.generate())
    line = other.cosign(Checkpoint(ORIGIN, 4, root_from_leaf_hashes(log.leaves)).body(), 1)
    transport.answer = lambda _: HttpAnswer(200, "text/plain", line.line().encode())
    assert witnessing.round()[0].result == "bad_answer"
    # A 200 whose line claims the configured key but does not verify.
    right = transport.witness.signer.cosign(b"another\n1\n" + b"A" * 43 + b"=\n", 1)
    transport.answer = lambda _: HttpAnswer(200, "text/plain", right.line().encode())
    [outcome] = witnessing.round()
    assert outcome.result == "bad_answer"
    assert "does not verify" in outcome.message
    transport.answer = lambda _: HttpAnswer(409, "text/plain", b"5\n")
    assert witnessing.round()[0].result == "bad_answer"
    assert storage.cosignatures() == []


def test_cosigned_note_attaches_only_lines_of_its_own_body(
    tmp_path: Path, clock: FakeClock
) -> None:
    log = Log(6)
    witnessing, _, _signer, storage, _ = setup(tmp_path, clock, log)
    witnessing.round()
    records = storage.cosignatures()
    forked = Log(6)
    forked.leaves[0] = leaf_hash(b"fork")
    other_note = forked.note(6).encode()
    assert cosigned_note(other_note, records) == other_note
    assert cosigned_note(log.note(6).encode(), records) != log.note(6).encode()


def test_a_round_over_https_to_the_witness_server(tmp_path: Path, clock: FakeClock) -> None:
    """The real HTTP server with TLS and the real client with a CA: a cosignature arrives; a
    client that does not trust the witness's certificate counts it unreachable."""
    import datetime
    import ssl
    import threading

    from rng_service.security.certs import write_dev_ca
    from rng_service.witness.server import WitnessServer
    from rng_service.writer.publisher import HttpWitnessTransport

    files = write_dev_ca(tmp_path / "tls", [], now=datetime.datetime.now(tz=datetime.UTC))
    log = Log(3)
    signer = CosignatureSigner("w.test.example/w", Ed25519PrivateKey.generate())
    witness = Witness(signer=signer, logs={ORIGIN: [LOG.verifier()]},
                      state=WitnessState(tmp_path / "w.sqlite3"), clock=clock)  # fmt: skip
    server = WitnessServer(witness, host="127.0.0.1", port=0, tls_cert_file=files.server_cert,
                           tls_key_file=files.server_key)  # fmt: skip
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"https://127.0.0.1:{server.server_address[1]}"
    try:
        trusted = HttpWitnessTransport(
            url, timeout=5, ssl_context=ssl.create_default_context(cafile=files.ca_cert)
        )
        untrusted = HttpWitnessTransport(url, timeout=5, ssl_context=ssl.create_default_context())
        outcomes = []
        for transport in (trusted, untrusted):
            witnessing = Witnessing(
                endpoints=[WitnessEndpoint("w", url, signer.verifier(), transport)],
                storage=MemoryStorage(), tree=log, checkpoint_note=log.note,
                publish=log.publish, sync=log.sync, clock=clock, interval_seconds=1.0,
                min_witnesses=1,
            )  # fmt: skip
            outcomes.append(witnessing.round()[0])
            transport.close()
        assert outcomes[0].result == "cosigned"
        assert outcomes[1].result == "unreachable"
        assert "CERTIFICATE_VERIFY_FAILED" in outcomes[1].message
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
