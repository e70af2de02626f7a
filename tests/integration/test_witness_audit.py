"""Auditors' witness checks against a live service with an in-process witness (the real HTTP
server on loopback): ``verify-receipt --witness`` offline, with ``--target`` and ``--against``,
``verify --min-witnesses`` that the cosignatures cannot satisfy, and the witness rule itself."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service._proto.rng.v1 import log_pb2
from rng_service.audit import WitnessFailure, check_witnesses
from rng_service.cli.audit import main as audit_main
from rng_service.clock import SystemClock
from rng_service.config import WitnessingSettings, WitnessSettings
from rng_service.log.cosignature import CosignatureSigner
from rng_service.log.keys import generate_key_pair, load_verifier_keys
from rng_service.log.receipt import receipt_to_json
from rng_service.rpc.client import RngClient
from rng_service.witness import Witness, WitnessState
from rng_service.witness.server import WitnessServer
from rng_service.writer.publisher import body_sha256
from tests.integration.conftest import Running, make_config, start

ORIGIN = "audit.witness.test/log"


class InProcessWitness:
    def __init__(self, directory: Path, name: str, log_vkey: Path) -> None:
        self.signer = CosignatureSigner(name, Ed25519PrivateKey.generate())
        self.vkey = directory / f"{name.split('/')[0]}.vkey"
        self.vkey.write_text(self.signer.verifier().verifier_key() + "\n")
        witness = Witness(
            signer=self.signer,
            logs={ORIGIN: load_verifier_keys([str(log_vkey)], base_dir=directory)},
            state=WitnessState(directory / f"{name.split('/')[0]}.sqlite3"),
            clock=SystemClock(),
        )
        self.server = WitnessServer(witness, host="127.0.0.1", port=0)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


def start_witnessed(tmp_path: Path, **env: str) -> tuple[Running, list[InProcessWitness], Path]:
    """A live service of log ORIGIN (its key in ``tmp_path``) with two in-process witnesses
    asked every 0.2 s; ``env``: more settings. Returns it, the witnesses and the log's .vkey."""
    key = tmp_path / "log.pem"
    generate_key_pair(key, name=ORIGIN)
    vkey = Path(str(key) + ".vkey")
    witnesses = [InProcessWitness(tmp_path, f"w{i}.test/w", vkey) for i in (1, 2)]
    config = make_config(
        tmp_path,
        RNG_SERVICE__LOG__KEY_FILE=str(key),
        RNG_SERVICE__LOG__ORIGIN=ORIGIN,
        RNG_SERVICE__LOG__PUBLISH_INTERVAL_SECONDS="0.1",
        **env,
    )
    config = dataclasses.replace(
        config,
        witnesses=tuple(
            WitnessSettings(url=w.url, key=str(w.vkey), name=f"w{i}")
            for i, w in enumerate(witnesses, 1)
        ),
        witnessing=WitnessingSettings(interval_seconds=0.2, timeout_seconds=2),
    )
    try:
        return start(config), witnesses, vkey
    except BaseException:
        for w in witnesses:
            w.stop()
        raise


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Running, list[InProcessWitness], Path]]:
    running, witnesses, vkey = start_witnessed(tmp_path)
    try:
        yield running, witnesses, vkey
    finally:
        running.stop()
        for w in witnesses:
            w.stop()


def _receipt(running: Running, path: Path, request_id: str) -> None:
    with RngClient(f"127.0.0.1:{running.port}") as client:
        spin = client.spin(wheel="double_zero", table_id="T1", round_id=request_id,
                           request_id=request_id)  # fmt: skip
    path.write_text(receipt_to_json(spin.receipt))


def _wait_witnessed(running: Running, size: int) -> None:
    deadline = time.monotonic() + 15
    while True:
        try:
            reply = running.log.GetLatestCheckpoint(
                log_pb2.GetLatestCheckpointRequest(witnessed=True), timeout=5
            )
            if reply.size >= size and reply.note.count("\u2014 ") >= 3:
                return
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.NOT_FOUND:  # NOT_FOUND until the first round
                raise
        assert time.monotonic() < deadline, "no witnessed checkpoint"
        time.sleep(0.05)


def test_receipts_against_the_witnessed_log(
    setup: tuple[Running, list[InProcessWitness], Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    running, (w1, w2), vkey = setup
    target = f"127.0.0.1:{running.port}"
    receipt = tmp_path / "r.json"
    _receipt(running, receipt, "r1")
    witness_args = ["--witness", str(w1.vkey), str(w2.vkey), "--min-witnesses", "2"]
    # Offline: the receipt's own checkpoint has no cosignatures, and the command says why.
    assert audit_main(["verify-receipt", str(receipt), "--key", str(vkey), *witness_args]) == 1
    err = capsys.readouterr().err
    assert "no checkpoint carries cosignatures of 2 of the given witnesses" in err
    assert "before any witness saw it" in err
    _wait_witnessed(running, 1)
    code = audit_main(["verify-receipt", str(receipt), "--key", str(vkey), "--target", target,
                       *witness_args])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "consistent with the live log" in out
    assert "WITNESSED: the latest witnessed checkpoint of" in out
    assert out.count("cosigned: ") == 2
    assert "(2 needed); the 2nd newest cosignature is of" in out
    one = ["--witness", str(w1.vkey), str(w2.vkey), "--min-witnesses", "1"]
    assert audit_main(["verify-receipt", str(receipt), "--key", str(vkey), "--target", target,
                       *one]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "(1 needed); the newest cosignature is of" in out  # not "the 1st newest"
    # rng-service verify-receipt takes the same options.
    from rng_service.cli.service import main as cli_main

    assert cli_main(["verify-receipt", str(receipt), "--key", str(vkey), "--target", target,
                     *witness_args]) == 0  # fmt: skip
    capsys.readouterr()
    # An export: verified with both witnesses; a third key nobody cosigned with cannot make 3.
    export = tmp_path / "log.export"
    assert audit_main(["export", "--target", target, "--out", str(export)]) == 0
    capsys.readouterr()
    assert audit_main(["verify-receipt", str(receipt), "--key", str(vkey), "--against",
                       str(export), *witness_args]) == 0  # fmt: skip
    capsys.readouterr()
    stranger = CosignatureSigner("w3.test/w", Ed25519PrivateKey.generate())
    third = tmp_path / "w3.vkey"
    third.write_text(stranger.verifier().verifier_key())
    code = audit_main(["verify", str(export), "--key", str(vkey), "--witness", str(w1.vkey),
                       str(w2.vkey), str(third), "--min-witnesses", "3"])  # fmt: skip
    assert code == 1
    assert "no checkpoint carries cosignatures of 3 of the given witnesses" in (
        capsys.readouterr().err
    )
    # An altered cosignature of a known witness fails the export.
    lines = export.read_text().splitlines()
    for i, line in enumerate(lines):
        record = json.loads(line)
        if record.get("type") == "checkpoint" and "w1.test/w " in record["note"]:
            # A character of the signature (after the key ID and the timestamp): the line still
            # names the known key, so it must verify.
            head, _, tail = record["note"].partition("w1.test/w ")
            flipped = "A" if tail[40] != "A" else "B"
            record["note"] = head + "w1.test/w " + tail[:40] + flipped + tail[41:]
            lines[i] = json.dumps(record)
            break
    export.write_text("\n".join(lines) + "\n")
    assert audit_main(["verify", str(export), "--key", str(vkey), *witness_args]) == 1
    assert "does not verify" in capsys.readouterr().err


def test_a_receipt_newer_than_the_witnessed_checkpoint_is_not_witnessed_yet(
    setup: tuple[Running, list[InProcessWitness], Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    running, (w1, w2), vkey = setup
    _receipt(running, tmp_path / "a.json", "a")
    _wait_witnessed(running, 1)
    running.service.witnessing.stop()  # type: ignore[union-attr]  # no more rounds
    _receipt(running, tmp_path / "b.json", "b")
    code = audit_main(["verify-receipt", str(tmp_path / "b.json"), "--key", str(vkey),
                       "--target", f"127.0.0.1:{running.port}", "--witness", str(w1.vkey),
                       str(w2.vkey), "--min-witnesses", "2"])  # fmt: skip
    assert code == 1
    assert "is not witnessed yet" in capsys.readouterr().err
    # The export to verify with witnesses ends at the newest witnessed checkpoint (issue 34).
    target = f"127.0.0.1:{running.port}"
    witness_args = ["--witness", str(w1.vkey), str(w2.vkey), "--min-witnesses", "2"]
    plain, ended = tmp_path / "plain.export", tmp_path / "witnessed.export"
    assert audit_main(["export", "--target", target, "--out", str(plain)]) == 0
    assert audit_main(["verify", str(plain), "--key", str(vkey), *witness_args]) == 1
    assert "witnessed by none of the 2 keys; the newest witnessed checkpoint is of size" in (
        capsys.readouterr().err
    )
    for source in (["--target", target], ["--db", str(tmp_path / "log.sqlite3")]):
        assert audit_main(["export", *source, "--witnessed", "--min-witnesses", "2",
                           "--out", str(ended)]) == 0  # fmt: skip
        assert "ending at the newest checkpoint 2 witnesses cosigned" in capsys.readouterr().out
        assert audit_main(["verify", str(ended), "--key", str(vkey), *witness_args]) == 0
        out = capsys.readouterr().out
        assert "WITNESSED: " in out
        assert "NOT CHECKED: truncation" not in out
    assert audit_main(["export", "--target", target, "--witnessed", "--min-witnesses", "3",
                       "--out", str(ended)]) == 1  # fmt: skip
    assert "no published checkpoint carries cosignatures of 3 witnesses yet" in (
        capsys.readouterr().err
    )
    assert audit_main(["export", "--target", target, "--min-witnesses", "2",
                       "--out", str(ended)]) == 2  # fmt: skip
    assert "--min-witnesses is for --witnessed" in capsys.readouterr().err


def test_the_witness_rule() -> None:
    log = CosignatureSigner("log.test/l", Ed25519PrivateKey.generate())  # any signer's lines
    from rng_service.log.note import Checkpoint, Ed25519NoteSigner, sign_note

    signer = Ed25519NoteSigner(ORIGIN, Ed25519PrivateKey.generate())
    body = Checkpoint(ORIGIN, 10, b"\x01" * 32).body()
    note = sign_note(body, [signer])
    ws = [CosignatureSigner(f"w{i}.test/w", Ed25519PrivateKey.generate()) for i in range(3)]
    times = [1000, 3000, 2000]
    cosigned = note + "".join(w.cosign(body, t).line() for w, t in zip(ws, times, strict=True)
                              ).encode()  # fmt: skip
    keys = [w.verifier() for w in ws]
    # K = 2: the 2nd newest time is 2000.
    report = check_witnesses([("cp", cosigned)], keys, min_witnesses=2, now=5000)
    assert (report.as_of, report.best.size if report.best else None) == (2000, 10)
    assert check_witnesses([("cp", cosigned)], keys, min_witnesses=3, now=5000).as_of == 1000
    with pytest.raises(WitnessFailure, match="the most any has is 3"):
        check_witnesses([("cp", cosigned)], [*keys, log.verifier()], min_witnesses=4, now=5000)
    # A time far ahead of the verifier's clock is refused.
    with pytest.raises(WitnessFailure, match="in the future"):
        check_witnesses([("cp", cosigned)], keys, min_witnesses=1, now=2000)
    assert body_sha256(cosigned) == body_sha256(note)


def test_a_table_history_and_a_dispute_as_of_a_witnessed_checkpoint(
    setup: tuple[Running, list[InProcessWitness], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--witness`` on a live table-history or dispute: read in the newest checkpoint the
    witnesses cosigned, proven complete by the committed map as of that checkpoint."""
    running, (w1, w2), vkey = setup
    target = f"127.0.0.1:{running.port}"
    with RngClient(target) as client:
        for i in range(1, 4):
            client.spin(wheel="double_zero", table_id="TW", round_id=f"W{i}",
                        request_id=f"w{i}")  # fmt: skip
    _wait_witnessed(running, 3)
    witness_args = ["--witness", str(w1.vkey), str(w2.vkey), "--min-witnesses", "2"]
    code = audit_main(["table-history", "--target", target, "--table", "TW", "--key",
                       str(vkey), *witness_args])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "is complete from seq 1 to seq 3 as of witnessed checkpoint" in out
    assert "cosigned by w1.test/w, w2.test/w" in out or "cosigned by w2.test/w, w1.test/w" in out
    code = audit_main(["dispute", "--target", target, "--client", "default", "--table", "TW",
                       "--round", "W2", "--key", str(vkey), *witness_args, "--json"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    assert report["witnessed"] is not None
    # a witness key that cosigned nothing: not witnessed, exit 1
    other = CosignatureSigner("w9.test/w", Ed25519PrivateKey.generate()).verifier()
    code = audit_main(["table-history", "--target", target, "--table", "TW", "--key",
                       str(vkey), "--witness", other.verifier_key()])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 1, captured.out + captured.err
