"""``LabService.StreamRawOutput``: raw generator output for labs, through a real in-process
service (docs/certification.md, "The raw output stream").

Plaintext development mode (every caller has every role) for the stream's behaviour; one mTLS
service for the roles and for ``rng-certify nist --live`` with ``--ca/--cert/--key``.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest

from certification import sources
from certification.cli import main as certify_main
from certification.sp800_22.frequency import frequency
from rng_service._proto.rng.v1 import common_pb2, lab_pb2, lab_pb2_grpc
from rng_service.log.entry import LogEntry
from rng_service.log.note import NoteVerifier
from rng_service.log.receipt import receipt_from_json, verify_receipt
from rng_service.rpc.client import ClientError, ClientTls, RawSession, RngClient
from rng_service.rpc.lab_servicer import RAW_SESSION_KIND, _session_draw
from rng_service.sampling import RandomSource
from tests.integration.conftest import Running, make_config, start
from tests.integration.test_security import secure_config

ENABLED = {"RNG_SERVICE__CERTIFICATION__RAW_STREAM_ENABLED": "true"}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    tmp = tmp_path_factory.mktemp("raw")
    r = start(make_config(tmp, RNG_SERVICE__CERTIFICATION__RAW_STREAM_MAX_BYTES="4000000",
                          **ENABLED))  # fmt: skip
    try:
        yield r
    finally:
        r.stop()


def _stub(r: Running) -> lab_pb2_grpc.LabServiceStub:
    return lab_pb2_grpc.LabServiceStub(r.channel)


def _request(rid: str, num_bytes: int, chunk_size: int = 0) -> lab_pb2.StreamRawOutputRequest:
    return lab_pb2.StreamRawOutputRequest(
        context=common_pb2.RequestContext(table_id="LAB", round_id="run-1", request_id=rid),
        num_bytes=num_bytes,
        chunk_size=chunk_size,
    )


def _size(r: Running) -> int:
    assert r.service.appender is not None
    return r.service.appender.tree_size


def _entry(r: Running, index: int) -> LogEntry:
    storage = r.service._storage
    assert storage is not None
    return LogEntry.decode(storage.entries(index, index + 1)[0].data)


def test_a_lab_gets_exactly_the_bytes_it_asked_for(lab: Running) -> None:
    n = 300_001  # not a multiple of the chunk size
    messages = list(_stub(lab).StreamRawOutput(_request("bytes-1", n, 4096), timeout=30))
    first, rest = messages[0], messages[1:]
    assert first.HasField("session")
    assert first.HasField("receipt")
    assert not first.data
    assert first.session.num_bytes == n
    assert first.session.chunk_size == 4096
    assert first.session.chunks == len(rest) == -(-n // 4096)
    assert [m.offset for m in rest] == [i * 4096 for i in range(len(rest))]
    assert not any(m.HasField("session") or m.HasField("receipt") for m in rest)
    data = b"".join(m.data for m in rest)
    assert len(data) == n
    assert len(set(data)) > 200  # not all equal (256 values expected)
    # A quick SP 800-22 frequency (monobit) test on the 2.4 million bits; the threshold
    # 1e-4 makes a false alarm from a good generator a 1-in-10,000 event.
    p = frequency(np.unpackbits(np.frombuffer(data, dtype=np.uint8))).p_values[0]
    assert p is not None
    assert p >= 1e-4


def test_the_session_is_one_log_entry_without_the_bytes(lab: Running) -> None:
    before = _size(lab)
    messages = list(_stub(lab).StreamRawOutput(_request("entry-1", 50_000), timeout=30))
    assert _size(lab) == before + 1  # one entry, however many chunks
    receipt = messages[0].receipt
    assert receipt.index == before
    assert not receipt.replayed
    entry = _entry(lab, receipt.index)
    assert receipt.entry == lab.service._storage.entries(before, before + 1)[0].data  # type: ignore[union-attr]
    assert entry.kind == RAW_SESSION_KIND
    assert entry.client == lab.service.config.server.default_client_id
    assert entry.params == {"num_bytes": 50_000, "chunk_size": 65_536, "chunks": 1}
    raw = lab.service.raw_generator
    prod = lab.service.generator
    assert raw is not None
    assert prod is not None
    assert entry.outcome == {
        "generator": {"instance": raw.instance_id, "epoch": messages[0].session.generator_epoch},
        "num_bytes": 50_000,
        "chunk_size": 65_536,
        "chunks": 1,
    }
    assert messages[0].session.generator_instance == raw.instance_id
    # The separate instance: never the generator that serves outcomes (which the entry's own
    # generator field names, as for every entry; it gave no byte to this one).
    assert raw.instance_id != prod.instance_id
    assert entry.generator.instance == prod.instance_id
    # No raw byte in the log: the entry is small and holds no 16-byte piece of the data.
    data = b"".join(m.data for m in messages[1:])
    assert len(receipt.entry) < 1024
    for i in range(0, len(data) - 16, 997):
        piece = data[i : i + 16]
        assert piece not in receipt.entry
        assert piece.hex().encode() not in receipt.entry


def test_the_session_draw_reads_nothing_from_the_production_source() -> None:
    class Refuses:
        def random_bytes(self, n: int) -> bytes:
            raise AssertionError("the production generator must not be read")

    class Raw:
        instance_id = "ab" * 16
        epoch = 3

        def random_bytes(self, n: int) -> bytes:
            raise AssertionError("the record is built without output")

    record = _session_draw(Raw(), {"num_bytes": 10})(RandomSource(Refuses()))
    assert record == {"generator": {"instance": "ab" * 16, "epoch": 3}, "num_bytes": 10}


def test_outcomes_and_raw_output_come_from_different_generators(lab: Running) -> None:
    spin = lab.spin("after-raw")
    entry = json.loads(spin.receipt.entry)
    raw = lab.service.raw_generator
    assert raw is not None
    assert entry["generator"]["instance"] != raw.instance_id


def test_a_retry_with_the_same_request_id_streams_nothing(lab: Running) -> None:
    first = list(_stub(lab).StreamRawOutput(_request("once-1", 10_000), timeout=30))
    before = _size(lab)
    got: list[lab_pb2.StreamRawOutputResponse] = []

    def collect() -> None:
        got.extend(_stub(lab).StreamRawOutput(_request("once-1", 10_000), timeout=30))

    with pytest.raises(grpc.RpcError) as info:
        collect()
    assert info.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert f"index {first[0].receipt.index}" in (info.value.details() or "")
    assert got == []
    with pytest.raises(grpc.RpcError) as info:  # other parameters: the appender's conflict
        list(_stub(lab).StreamRawOutput(_request("once-1", 20_000), timeout=30))
    assert info.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert _size(lab) == before


@pytest.mark.parametrize(
    ("num_bytes", "chunk_size", "field"),
    [(0, 0, "num_bytes"), (4_000_001, 0, "num_bytes"), (10, 100, "chunk_size"),
     (10, 2_000_000, "chunk_size")],
)  # fmt: skip
def test_bounds_are_checked_before_anything_is_logged(
    lab: Running, num_bytes: int, chunk_size: int, field: str
) -> None:
    before = _size(lab)
    with pytest.raises(grpc.RpcError) as info:
        list(_stub(lab).StreamRawOutput(_request("bad", num_bytes, chunk_size), timeout=30))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in (info.value.details() or "")
    assert _size(lab) == before


def test_disabled_by_default_names_the_setting(tmp_path: Path) -> None:
    r = start(make_config(tmp_path))
    try:
        assert r.service.raw_generator is None
        before = _size(r)
        with pytest.raises(grpc.RpcError) as info:
            list(_stub(r).StreamRawOutput(_request("off-1", 100), timeout=30))
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "certification.raw_stream_enabled" in (info.value.details() or "")
        assert _size(r) == before
    finally:
        r.stop()


def test_a_session_is_bounded_in_time(tmp_path: Path) -> None:
    """A reader that stops reading is cut off after certification.raw_stream_max_seconds."""
    r = start(make_config(tmp_path, RNG_SERVICE__CERTIFICATION__RAW_STREAM_MAX_SECONDS="1",
                          **ENABLED))  # fmt: skip
    try:
        stream = _stub(r).StreamRawOutput(_request("slow-1", 1 << 30, 1 << 20), timeout=60)
        first = next(stream)
        assert first.session.num_bytes == 1 << 30
        time.sleep(2.5)  # flow control stops the server long before 1 GiB
        received = [0]

        def drain() -> None:
            for m in stream:
                received[0] += len(m.data)

        with pytest.raises(grpc.RpcError) as info:
            drain()
        assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert "certification.raw_stream_max_seconds" in (info.value.details() or "")
        assert received[0] < 1 << 30
    finally:
        r.stop()


def test_a_client_ending_the_stream_early_is_a_normal_end(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """What `rng-certify dieharder --live` does with the rest of its last session: one INFO
    line naming the session, no ERROR and no traceback in the service log."""
    caplog.set_level(logging.INFO, logger="rng_service")
    r = start(make_config(tmp_path, **ENABLED))
    try:
        with RngClient(f"127.0.0.1:{r.port}") as client:
            stream = client.raw_stream(200_000_000, request_id="early-1", chunk_size=65_536)
            for i, _ in enumerate(stream):
                if i == 3:
                    break
            stream.close()  # cancels the call, as live_raw_bytes does when dieharder is done
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not _ended(caplog):
            time.sleep(0.05)
    finally:
        r.stop()
    ended = _ended(caplog)
    assert len(ended) == 1, [rec.getMessage() for rec in caplog.records]
    assert ended[0].levelno == logging.INFO
    event = ended[0].msg
    assert isinstance(event, dict)
    assert event["request_id"] == "early-1"
    assert event["log_index"] == 0
    assert 4 * 65_536 <= event["bytes_written"] < 200_000_000
    assert [rec.getMessage() for rec in caplog.records if rec.levelno >= logging.ERROR] == []
    assert not any(rec.exc_info for rec in caplog.records)


def _ended(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    event = "raw_output_session_ended_by_client"
    return [rec for rec in caplog.records if event in rec.getMessage()]


def test_the_client_iterator(lab: Running) -> None:
    seen: list[RawSession] = []
    with RngClient(f"127.0.0.1:{lab.port}") as client:
        data = b"".join(client.raw_stream(70_000, request_id="client-1", on_session=seen.append))
        assert len(data) == 70_000
        assert len(seen) == 1
        assert seen[0].num_bytes == 70_000
        assert seen[0].generator_instance == lab.service.raw_generator.instance_id  # type: ignore[union-attr]
        with pytest.raises(ClientError) as info:
            list(client.raw_stream(70_000, request_id="client-1"))
        assert info.value.code == "ALREADY_EXISTS"


def test_rng_certify_nist_live_small_run(lab: Running, tmp_path: Path) -> None:
    before = _size(lab)
    out = tmp_path / "nist.json"
    status = certify_main([
        "nist", "--live", f"127.0.0.1:{lab.port}", "--bits-per-sequence", "100000",
        "--sequences", "12", "--session-bytes", "100000", "--run-id", "nist-live",
        "--json", str(out),
    ])  # fmt: skip
    document = json.loads(out.read_text())
    # 12 sequences are below the 55 the section 4.2 decisions need: INCONCLUSIVE (exit 3)
    # unless the suite rule FAILs (at most 1 % for a good generator)
    assert status in (1, 3)
    assert document["verdict"] == {1: "FAIL", 3: "INCONCLUSIVE"}[status]
    assert document["input"]["live"] == f"127.0.0.1:{lab.port}"
    assert document["input"]["sequences"] == 12
    assert document["input"]["bits_discarded"] == 0
    sessions = document["input"]["raw_output_sessions"]
    assert [s["num_bytes"] for s in sessions] == [100_000, 50_000]  # 150,000 bytes in all
    assert _size(lab) == before + 2
    assert [s["request_id"] for s in sessions] == ["nist-live-raw-0", "nist-live-raw-1"]
    assert all(s["generator_instance"] == lab.service.raw_generator.instance_id  # type: ignore[union-attr]
               for s in sessions)  # fmt: skip
    assert document["decisions"]["frequency"][0]["sample_size"] == 12
    # the evidence: each session's receipt verifies against the log's key, for its index
    verifier = NoteVerifier.from_verifier_key(
        lab.service.config.log.key_file.with_name(lab.service.config.log.key_file.name + ".vkey")
        .read_text()
        .strip()
    )
    (item,) = document["evidence"]["inputs"]
    assert item["raw_output_sessions"] == sessions
    assert item["size_bytes"] == 150_000
    for s in sessions:
        receipt = receipt_from_json(json.dumps(s["receipt"]))
        assert receipt.index == s["log_index"]
        checked = verify_receipt(receipt, [verifier])
        assert checked.entry.kind == RAW_SESSION_KIND
        assert checked.entry.request_id == s["request_id"]


def test_rng_certify_live_refuses_plaintext_to_other_hosts(tmp_path: Path) -> None:
    with pytest.raises(sources.SourceError, match="loopback"):
        list(sources.live_raw_bytes("192.0.2.1:50051", total=10))


def test_rng_certify_dieharder_live(lab: Running, tmp_path: Path) -> None:
    out = tmp_path / "dh.json"
    status = certify_main([
        "dieharder", "--live", f"127.0.0.1:{lab.port}", "--test", "0", "--psamples", "5",
        "--session-bytes", "4000000", "--run-id", "dh-live", "--time-limit", "120",
        "--json", str(out),
    ])  # fmt: skip
    document = json.loads(out.read_text())
    assert status == {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}[document["verdict"]]
    assert document["results"]
    assert document["results"][0]["test"] == 0
    # every session dieharder read from is named with its log index and receipt
    sessions = document["raw_output_sessions"]
    assert sessions
    assert [s["request_id"] for s in sessions] == [f"dh-live-raw-{i}" for i in range(len(sessions))]
    for s in sessions:
        assert s["receipt"]["index"] == s["log_index"]
        assert s["receipt"]["format"] == "rng-service-receipt/v1"
    assert document["evidence"]["inputs"][0]["raw_output_sessions"] == sessions
    assert document["evidence"]["inputs"][0]["bytes_fed"] > 0


# --- roles, over mTLS -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, Path]]:
    from rng_service.security.certs import write_dev_ca

    tmp = tmp_path_factory.mktemp("raw-mtls")
    identities = ["game-1", "auditor-1", "lab-1", "operator-1"]
    write_dev_ca(tmp / "certs", identities, now=dt.datetime.now(dt.UTC))
    r = start(secure_config(tmp))  # the security test's clients, raw stream enabled
    try:
        yield r, tmp / "certs"
    finally:
        r.stop()


def _tls(certs: Path, identity: str) -> ClientTls:
    return ClientTls.from_files(
        certs / "ca.pem", certs / f"{identity}.pem", certs / f"{identity}.key"
    )


def test_only_the_lab_role_may_stream(secure: tuple[Running, Path]) -> None:
    r, certs = secure
    target = f"127.0.0.1:{r.port}"
    with RngClient(target, tls=_tls(certs, "lab-1")) as client:
        assert len(b"".join(client.raw_stream(5000, request_id="lab-ok"))) == 5000
    before = _size(r)
    for identity in ("game-1", "auditor-1", "operator-1"):
        with (
            RngClient(target, tls=_tls(certs, identity)) as client,
            pytest.raises(ClientError) as info,
        ):
            list(client.raw_stream(5000, request_id=f"{identity}-no"))
        assert info.value.code == "PERMISSION_DENIED"
        assert "StreamRawOutput" in info.value.details
    assert _size(r) == before


def test_rng_certify_nist_live_over_mtls(secure: tuple[Running, Path], tmp_path: Path) -> None:
    r, certs = secure
    out = tmp_path / "nist.json"
    tls = ["--ca", str(certs / "ca.pem"), "--cert", str(certs / "lab-1.pem"),
           "--key", str(certs / "lab-1.key")]  # fmt: skip
    status = certify_main([
        "nist", "--live", f"127.0.0.1:{r.port}", *tls, "--bits-per-sequence", "20000",
        "--sequences", "3", "--json", str(out),
    ])  # fmt: skip
    assert status in (1, 3)  # 3 sequences: INCONCLUSIVE unless the suite rule FAILs
    assert len(json.loads(out.read_text())["input"]["raw_output_sessions"]) == 1
    game = ["--ca", str(certs / "ca.pem"), "--cert", str(certs / "game-1.pem"),
            "--key", str(certs / "game-1.key")]  # fmt: skip
    denied = certify_main([
        "nist", "--live", f"127.0.0.1:{r.port}", *game, "--bits-per-sequence", "20000",
        "--sequences", "1", "--json", str(tmp_path / "no.json"),
    ])  # fmt: skip
    assert denied == 2
