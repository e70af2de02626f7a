"""The store checks itself: each edit an operator with database access could make, replayed on a
real SQLite log written by the real service, is refused at start-up or by ``check-store``.

The log is made once per module by ``rng-service serve`` (a subprocess) over two runs: the
second start records the first run's last checkpoint as verified, so the log has a verified
part (below ``verified``, checked again only by ``check-store`` or ``log.startup_check =
"full"``) and a newer part (checked at every start). Each test edits a copy with sqlite3 while
no service runs, as an operator would, and starts the service again or runs ``check-store``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service._proto.rng.v1 import log_pb2, log_pb2_grpc
from rng_service.cli.audit import main as audit_main
from rng_service.cli.service import main as cli_main
from rng_service.log.keys import generate_key_pair
from rng_service.rpc.client import ClientError, RngClient
from rng_service.writer.storecheck import VERIFIED_CHECKPOINT_KEY

ORIGIN = "integrity.test.example/log"
REPO = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RNG_SERVICE__")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def write_config(
    directory: Path,
    key: Path,
    *,
    port: int = 0,
    db: Path | None = None,
    lock_dir: Path | None = None,
    extra: str = "",
    metrics: bool = False,
) -> Path:
    """A config file in ``directory``; ``extra``: more ``[log]`` lines; ``metrics``: the
    Prometheus endpoint on a free loopback port."""
    config = directory / "config.toml"
    config.write_text(
        "\n".join(
            [
                "[server]",
                'host = "127.0.0.1"',
                f"port = {port}",
                f'lock_dir = "{lock_dir or directory / "run"}"',
                "shutdown_grace_seconds = 2",
                "[metrics]",
                *(['host = "127.0.0.1"', "port = 0"] if metrics else ["enabled = false"]),
                "[log]",
                f'origin = "{ORIGIN}"',
                f'key_file = "{key}"',
                "publish_interval_seconds = 0.1",
                extra,
                "[storage]",
                f'path = "{db or directory / "log.sqlite3"}"',
                "",
            ]
        )
    )
    return config


class Served:
    """``rng-service serve --config FILE [ARGS]`` in a subprocess, up until :meth:`stop`."""

    def __init__(self, config: Path, args: tuple[str, ...] = ()) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rng_service.cli.service", "serve", "--config", str(config),
             *args],
            cwd=REPO, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith('{"event": "listening"'):
            self.stop()
            raise AssertionError(f"the service did not start: {line}{self.stderr}")
        self.listening = json.loads(line)
        self.port = int(self.listening["grpc_port"])
        self.target = f"127.0.0.1:{self.port}"
        self.stderr = ""

    def metric(self, sample: str) -> float:
        """The value of one sample line of the service's /metrics (e.g. a counter with its
        labels)."""
        url = f"http://127.0.0.1:{self.listening['metrics_port']}/metrics"
        with urllib.request.urlopen(url, timeout=10) as reply:
            for line in reply.read().decode().splitlines():
                name, _, value = line.rpartition(" ")
                if name == sample:
                    return float(value)
        raise AssertionError(f"no sample {sample} in /metrics")

    def spins(self, prefix: str, n: int) -> None:
        with RngClient(self.target) as client:
            for i in range(n):
                client.spin(wheel="double_zero", table_id="T1", round_id=f"{prefix}{i}",
                            request_id=f"{prefix}{i}")  # fmt: skip

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr = self.proc.stderr.read() if self.proc.stderr else ""
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


def serve_refused(config: Path) -> dict[str, Any]:
    """Runs ``serve``, which must refuse to start: returns its ``startup_failed`` event."""
    done = subprocess.run(
        [sys.executable, "-m", "rng_service.cli.service", "serve", "--config", str(config)],
        cwd=REPO, env=_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "listening" not in done.stdout
    events = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    failed = [e for e in events if e.get("event") == "startup_failed"]
    assert failed, done.stderr
    assert "Traceback" not in done.stderr
    return failed[0]


def check_store(config: Path, capsys: pytest.CaptureFixture[str], *kept: Path) -> tuple[int, str]:
    """``check-store``, with each of ``kept`` as a ``--checkpoint``: (exit status, output)."""
    args = [a for path in kept for a in ("--checkpoint", str(path))]
    code = cli_main(["check-store", "--config", str(config), *args])
    out, err = capsys.readouterr()
    return code, out + err


@dataclass
class Pristine:
    directory: Path
    key: Path
    verified: int  # the size recorded as verified at the second start
    size: int
    kept: str  # the newest checkpoint note, as an auditor would have kept it


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Pristine:
    directory = tmp_path_factory.mktemp("integrity")
    key = directory / "key.pem"
    generate_key_pair(key, name=ORIGIN)
    config = write_config(directory, key)
    for run, n in (("a", 24), ("b", 20)):
        served = Served(config)
        try:
            served.spins(run, n)
        finally:
            served.stop()
        assert '"event": "stopped"' in served.stderr, served.stderr
    db = directory / "log.sqlite3"
    conn = sqlite3.connect(db)
    record = conn.execute("SELECT value FROM meta WHERE key = ?", (VERIFIED_CHECKPOINT_KEY,))
    verified = int(bytes(record.fetchone()[0]).split(b"\n")[1])
    size = conn.execute("SELECT count(*) FROM entries").fetchone()[0]
    kept = bytes(conn.execute("SELECT note FROM checkpoints ORDER BY size DESC").fetchone()[0])
    conn.close()
    assert (verified, size) == (24, 44)
    return Pristine(directory, key, verified, size, kept.decode())


@pytest.fixture
def log(pristine: Pristine, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the pristine log and a config for it: (config, database)."""
    db = tmp_path / "log.sqlite3"
    shutil.copy(pristine.directory / "log.sqlite3", db)
    return write_config(tmp_path, pristine.key), db


def sql(db: Path, statement: str, *params: object) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(statement, params)
    conn.close()


def test_an_untouched_log_starts_incrementally_and_check_store_runs_beside_it(
    log: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config, _ = log
    served = Served(config)
    try:
        code, out = check_store(config, capsys)  # read-only, while the service serves the log
        served.spins("c", 3)
    finally:
        served.stop()
    assert code == 4, out  # no checkpoint kept outside the database: truncation NOT CHECKED
    assert f"holds 44 entries of {ORIGIN}: every index present" in out
    assert "NOT CHECKED: truncation" in out
    started = [json.loads(line) for line in served.stderr.splitlines() if "store_check" in line]
    assert started[0]["mode"] == "incremental"
    assert started[0]["checked_from"] == 24
    assert started[0]["entries"] == 20


def test_changed_entry_bytes(
    pristine: Pristine, log: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config, db = log
    conn = sqlite3.connect(db)
    data = bytes(conn.execute("SELECT data FROM entries WHERE idx = 30").fetchone()[0])
    conn.close()
    changed = data.replace(b'"number":"', b'"number":"1', 1)
    assert changed != data
    sql(db, "UPDATE entries SET data = ? WHERE idx = 30", changed)
    failed = serve_refused(config)
    assert "log store check failed: entry 30: its bytes hash to" in failed["error"]
    assert "the entry's bytes (or its leaf hash) were changed" in failed["error"]
    code, out = check_store(config, capsys)
    assert code == 1
    assert "FAILED" in out
    assert "entry 30: its bytes hash to" in out


def test_changed_entry_bytes_in_the_verified_part_need_the_full_check(
    pristine: Pristine, log: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Below the recorded checkpoint the start-up check is incremental: check-store, or
    log.startup_check = "full", finds the edit."""
    config, db = log
    sql(db, "UPDATE entries SET data = CAST('{}' AS BLOB) WHERE idx = 5")
    served = Served(config)
    served.stop()
    code, out = check_store(config, capsys)
    assert code == 1
    assert "entry 5: its bytes hash to" in out
    full = write_config(db.parent, pristine.key, extra='startup_check = "full"')
    assert "entry 5: its bytes hash to" in serve_refused(full)["error"]


def test_corrupted_checkpoint_signature(
    log: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config, db = log
    conn = sqlite3.connect(db)
    size, note = conn.execute(
        "SELECT size, note FROM checkpoints WHERE size > 24 ORDER BY size LIMIT 1"
    ).fetchone()
    conn.close()
    text, signature = bytes(note).decode().rsplit(" ", 1)
    raw = bytearray(base64.b64decode(signature))
    raw[10] ^= 0x01
    corrupted = f"{text} {base64.b64encode(bytes(raw)).decode()}\n".encode()
    sql(db, "UPDATE checkpoints SET note = ? WHERE size = ?", corrupted, size)
    failed = serve_refused(config)
    assert f"stored checkpoint of tree size {size} (published" in failed["error"]
    assert "invalid signature for key" in failed["error"]
    code, out = check_store(config, capsys)
    assert code == 1
    assert f"stored checkpoint of tree size {size}" in out


def test_deleted_middle_row(log: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    config, db = log
    sql(db, "DELETE FROM entries WHERE idx = 33")
    failed = serve_refused(config)
    assert "entry 33 is missing from the store" in failed["error"]
    assert "a row was deleted" in failed["error"]
    sql(db, "DELETE FROM entries WHERE idx = 7")
    code, out = check_store(config, capsys)
    assert code == 1
    assert "entry 7 is missing from the store" in out


def truncate(db: Path, size: int) -> None:
    """Deletes the newest entries, their nodes and the checkpoints that covered them, and
    winds the table map's rows back to the chains' newest entries left (a consistent
    rollback)."""
    sql(db, "DELETE FROM entries WHERE idx >= ?", size)
    sql(db, "DELETE FROM table_map")
    sql(
        db,
        "INSERT INTO table_map SELECT e.client_id, e.table_id, e.idx, e.table_seq FROM entries "
        "AS e WHERE e.table_seq = (SELECT MAX(x.table_seq) FROM entries AS x WHERE "
        "x.client_id = e.client_id AND x.table_id = e.table_id)",
    )
    sql(db, "DELETE FROM nodes WHERE ((idx + 1) << level) > ?", size)
    sql(db, "DELETE FROM checkpoints WHERE size > ?", size)


def test_truncation_below_the_verified_checkpoint_is_refused(
    pristine: Pristine, log: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config, db = log
    truncate(db, 20)
    failed = serve_refused(config)
    assert (
        "the store's record of the last verified checkpoint is for tree size 24, beyond the "
        "stored tree of 20 entries: entries [20, 24) were deleted"
    ) in failed["error"]
    # The full check alone sees a valid shorter log, and says what it cannot know: exit 4.
    code, out = check_store(config, capsys)
    assert code == 4, out
    assert "holds 20 entries" in out
    assert "NOT CHECKED: truncation" in out
    # A checkpoint kept outside the database shows the cut.
    kept = config.parent / "kept.note"
    kept.write_text(pristine.kept)
    code, out = check_store(config, capsys, kept)
    assert code == 1, out
    assert (
        f"FAILED: {db}: checkpoint file {kept} is signed for tree size 44, but the store holds "
        "only 20 entries: its newest entries were deleted"
    ) in out


def _c2sp_checkpoint(key: Path, size: int, root: bytes) -> str:
    """A C2SP tlog-checkpoint of ORIGIN signed with the log's own key, written here from the
    C2SP signed-note text (key ID = SHA-256(name || 0x0A || 0x01 || public key)[:4]), not
    with the service's signer: what a forked log would publish."""
    private = serialization.load_pem_private_key(key.read_bytes(), password=None)
    assert isinstance(private, Ed25519PrivateKey)
    public = private.public_key().public_bytes(serialization.Encoding.Raw,
                                               serialization.PublicFormat.Raw)  # fmt: skip
    body = f"{ORIGIN}\n{size}\n{base64.b64encode(root).decode()}\n"
    key_id = hashlib.sha256(ORIGIN.encode() + b"\n\x01" + public).digest()[:4]
    signature = base64.b64encode(key_id + private.sign(body.encode())).decode()
    return f"{body}\n\u2014 {ORIGIN} {signature}\n"


def test_check_store_with_kept_checkpoints(
    pristine: Pristine, log: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A kept checkpoint of the store's size proves it whole (exit 0); an older one proves
    its prefix, the rest NOT CHECKED (exit 4); a fork, a foreign key or an unreadable file
    fail (exit 1, 1, 2), naming the file."""
    config, db = log
    newest = config.parent / "newest.note"
    newest.write_text(pristine.kept)
    code, out = check_store(config, capsys, newest)
    assert code == 0, out
    assert "OK: 1 kept checkpoint (newest: tree size 44) verified" in out
    assert "NOT CHECKED" not in out
    conn = sqlite3.connect(db)
    older = bytes(conn.execute("SELECT note FROM checkpoints WHERE size < 44 ORDER BY size")
                  .fetchone()[0])  # fmt: skip
    conn.close()
    old = config.parent / "old.note"
    old.write_bytes(older)
    code, out = check_store(config, capsys, old)
    assert code == 4, out
    assert "OK: 1 kept checkpoint (newest: tree size" in out
    assert "NOT CHECKED: truncation" in out
    fork = config.parent / "fork.note"
    fork.write_text(_c2sp_checkpoint(pristine.key, 30, hashlib.sha256(b"fork").digest()))
    code, out = check_store(config, capsys, newest, fork)
    assert code == 1, out
    assert f"fork: checkpoint file {fork} is signed for tree size 30 with root" in out
    stranger = config.parent / "stranger.pem"
    generate_key_pair(stranger, name=ORIGIN)
    foreign = config.parent / "foreign.note"
    foreign.write_text(_c2sp_checkpoint(stranger, 44, hashlib.sha256(b"x").digest()))
    code, out = check_store(config, capsys, foreign)
    assert code == 1, out
    assert f"checkpoint file {foreign}: " in out
    assert "must verify with one of the configured keys" in out
    code, out = check_store(config, capsys, config.parent / "missing.note")
    assert code == 2, out
    assert "--checkpoint: cannot read" in out


def test_what_the_store_alone_cannot_catch(
    pristine: Pristine, log: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Entries, nodes, checkpoints and the record deleted consistently: the store is a valid
    shorter log and the service starts. A checkpoint kept outside the database shows it (an
    auditor's here; witnesses' cosignatures in the issue "Witnessed checkpoints")."""
    config, db = log
    truncate(db, 30)
    sql(db, "DELETE FROM meta WHERE key = ?", VERIFIED_CHECKPOINT_KEY)
    served = Served(config)
    served.stop()
    assert '"tree_size": 30' in served.stderr
    export, kept = db.parent / "log.export", db.parent / "kept.note"
    kept.write_text(pristine.kept)
    assert audit_main(["export", "--db", str(db), "--out", str(export)]) == 0
    vkey = str(pristine.key) + ".vkey"
    assert audit_main(["verify", str(export), "--key", vkey]) == 4  # NOT CHECKED: exit 4
    out = capsys.readouterr().out
    assert "NOT CHECKED: truncation" in out
    assert audit_main(["verify", str(export), "--key", vkey, "--checkpoint", str(kept)]) == 1
    err = capsys.readouterr().err
    assert f"is for tree size {pristine.size}, but the export has only 30 entries" in err
    assert "the export is truncated" in err


# -- lookup columns rewritten, deleted rows: what the lookups say (issue "Round integrity,
# part 2") ------------------------------------------------------------------------------------


def lookup_error(call: Any) -> str:
    with pytest.raises(grpc.RpcError) as info:
        call()
    assert info.value.code() == grpc.StatusCode.DATA_LOSS, info.value.details()
    return info.value.details() or ""


def test_rewritten_lookup_columns_are_flagged_by_the_lookups_and_named_by_the_checks(
    pristine: Pristine, log: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Entry 10 (round a10 of table T1, in the verified part the start-up check does not read
    again) moved to table T6, round R999 with sqlite3 while no service runs: an operator
    hiding an outcome from a dispute. The service starts; every lookup that meets the row says
    so (DATA_LOSS, a log line, the metric); check-store names it; so does a full start-up."""
    config, db = log
    sql(db, "UPDATE entries SET table_id = 'T6', round_id = 'R999' WHERE idx = 10")
    columns = (
        "entry 10: the store's lookup columns say table_id 'T6', round_id 'R999', but the entry's "
        "signed bytes say table_id 'T1', round_id 'a10'"
    )
    served = Served(config)
    try:
        channel = grpc.insecure_channel(served.target)
        stub = log_pb2_grpc.LogServiceStub(channel)
        found = log_pb2.FindEntriesRequest(table_id="T6", round_id="R999")
        assert columns in lookup_error(lambda: stub.FindEntries(found))
        hidden = stub.FindEntries(log_pb2.FindEntriesRequest(table_id="T1", round_id="a10"))
        assert list(hidden.entries) == []  # what the edit was for ...
        # ... caught: T1's history by the store's index has a hole (counted, check chain), and
        # is served walked back from the committed head, entry 10 included
        history = stub.GetTableHistory(log_pb2.GetTableHistoryRequest(table_id="T1"))
        assert 10 in [e.index for e in history.entries]
        vkey = str(pristine.key) + ".vkey"
        code = audit_main(["dispute", "--target", served.target, "--client", "default",
                           "--table", "T1", "--round", "a10", "--key", vkey])  # fmt: skip
        assert code == 0  # found by its signed bytes in the committed chain
        assert "round 'a10': slots in order: spin (log index 10)" in capsys.readouterr().out
        channel.close()
    finally:
        served.stop()
    events = [json.loads(x) for x in served.stderr.splitlines() if "log_integrity_error" in x]
    assert {(e["method"], e["check"], e["index"]) for e in events} == {
        ("FindEntries", "columns", 10), ("GetTableHistory", "chain", 10)
    }  # fmt: skip
    code, out = check_store(config, capsys)
    assert code == 1
    assert columns in out
    full = write_config(db.parent, pristine.key, extra='startup_check = "full"')
    assert columns in serve_refused(full)["error"]


def test_rewritten_lookup_columns_in_the_newer_part_refuse_the_start(
    log: tuple[Path, Path],
) -> None:
    config, db = log
    sql(db, "UPDATE entries SET round_id = 'b99', timestamp_ns = 0 WHERE idx = 30")
    error = serve_refused(config)["error"]
    assert "log store check failed: entry 30: the store's lookup columns say round_id 'b99', " in (
        error
    )
    assert "timestamp_ns 0" in error


def test_a_deleted_row_in_the_verified_part_fails_get_entries_and_the_export(
    pristine: Pristine, log: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config, db = log
    sql(db, "DELETE FROM entries WHERE idx = 12")
    served = Served(config)  # the start-up check is incremental, from entry 24
    try:
        channel = grpc.insecure_channel(served.target)
        stub = log_pb2_grpc.LogServiceStub(channel)
        details = lookup_error(lambda: stub.GetEntries(log_pb2.GetEntriesRequest(start=0)))
        assert "entry 12 is missing from the log store (the next stored entry is 13)" in details
        channel.close()
        out_file = db.parent / "gap.export"
        code = audit_main(["export", "--target", served.target, "--out", str(out_file)])
        assert code == 1
        assert "GetEntries: DATA_LOSS: entry 12 is missing" in capsys.readouterr().err
        assert not out_file.exists()
    finally:
        served.stop()


# --- A game event drawn once, against edits of the running service's database (issue 19's gap)
#
# Round a10 of table T1 was spun at entry 10 (request a10). Each test edits that row's columns
# with sqlite3 WHILE the service runs, as an operator with database access could, and asks for
# the round's spin again under a new request id (what the service must refuse: slot filled).


def _spin_again(served: Served, round_id: str = "a10", request_id: str = "redraw") -> Any:
    with RngClient(served.target) as client:
        return client.spin(wheel="double_zero", table_id="T1", round_id=round_id,
                           request_id=request_id)  # fmt: skip


def _entry_count(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM entries").fetchone()[0])
    finally:
        conn.close()


def test_a_row_the_sequencer_finds_is_checked_against_its_signed_bytes(
    pristine: Pristine, log: tuple[Path, Path]
) -> None:
    """Each edited row is returned by the sequencer's query for the round asked again: the
    spin's row of round a10 with its slot changed (without the check the spin slot would look
    empty and the spin would be drawn again), entry 13 of round a13 moved into round a12 under
    another slot, the spin's row of round a14 with its request id changed; and entry 15's
    request id column set to the one a new request for round a15 then uses, its round column
    moved away (so only the lookup by request id finds it: without the check the request would
    be answered with entry 15, another request's outcome, as its replay). The sequencer checks
    each row against its signed bytes before relying on it, so each request is refused with
    DATA_LOSS, nothing logged, one log_integrity_error line each. (One service for all: each
    edit is of its own round.) Each is counted in rng_log_integrity_errors_total{method=
    "sequencer"}, exported at 0 from the start, so the RngLogIntegrityError alert fires."""
    _, db = log
    config = write_config(db.parent, pristine.key, metrics=True)
    cases = [  # (row, edit, the round asked again, its request id, what the message says)
        (10, "slot = 'moved'", "a10", "redraw-1", "slot 'moved'"),
        (13, "round_id = 'a12', slot = 'multiball'", "a12", "redraw-2",
         "round_id 'a12', slot 'multiball'"),
        (14, "request_id = 'other'", "a14", "redraw-3", "request_id 'other'"),
        (15, "request_id = 'stolen', round_id = 'a15x'", "a15", "stolen",
         "request_id 'stolen', round_id 'a15x'"),
    ]  # fmt: skip
    refused: list[ClientError] = []
    served = Served(config)
    counted = 'rng_log_integrity_errors_total{check="columns",method="sequencer"}'
    try:
        assert served.metric(counted) == 0  # exported at 0 from the start (the alert's rate)
        for row, edit, round_id, request_id, _ in cases:
            sql(db, f"UPDATE entries SET {edit} WHERE idx = ?", row)
            with pytest.raises(ClientError) as info:
                _spin_again(served, round_id, request_id)
            refused.append(info.value)
        assert _entry_count(db) == 44  # nothing drawn, nothing logged
        assert served.metric(counted) == len(cases)  # RngLogIntegrityError fires
    finally:
        served.stop()
    for (row, *_, says), error in zip(cases, refused, strict=True):
        assert error.code == "DATA_LOSS", error
        assert f"entry {row}: the store's lookup columns say {says}, but" in error.details
        assert "so nothing was drawn" in error.details
    events = [json.loads(x) for x in served.stderr.splitlines() if "log_integrity_error" in x]
    assert [(e["method"], e["check"], e["index"]) for e in events] == [
        ("sequencer", "columns", row) for row, *_ in cases
    ]


def test_a_row_moved_out_of_its_round_lets_the_round_be_drawn_again_which_verify_names(
    pristine: Pristine, log: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """What the running service cannot prevent: entry 10's round column moved away, the round
    looks empty to the sequencer (absence cannot be proven without reading the table's rows),
    so a new request id draws its spin again. Caught after the fact: check-store names the
    edited row, and the double draw is in the signed log for good, so rng-audit verify of an
    export fails with exit 1 naming both entries (whatever is later done to the database)."""
    config, db = log
    served = Served(config)
    try:
        sql(db, "UPDATE entries SET round_id = 'hidden' WHERE idx = 10")
        again = _spin_again(served)  # (i) drawn: the sequencer found no row of round a10
    finally:
        served.stop()  # publishes the final checkpoint, which covers the new entry
    redrawn = again.receipt.index
    assert redrawn == pristine.size
    code, out = check_store(config, capsys)
    assert code == 1
    assert "entry 10: the store's lookup columns say round_id 'hidden'" in out
    export = db.parent / "redrawn.export"
    assert audit_main(["export", "--db", str(db), "--out", str(export)]) == 0
    capsys.readouterr()
    vkey = str(pristine.key) + ".vkey"
    code = audit_main(["verify", str(export), "--key", vkey])
    captured = capsys.readouterr()
    assert code == 1, captured.out + captured.err  # (ii) the auditor's verify fails
    with export.open(encoding="utf-8") as fh:
        line = redrawn + 2 + int(json.loads(fh.readline())["checkpoints"])
    assert (
        f"entry {redrawn} (line {line}) fills slot 'spin' of round 'a10' of table 'T1' (client "
        f"'default'), which entry 10 already filled: a game event was drawn twice"
    ) in captured.err
    # the rules need the entries: --fast passes, naming them NOT CHECKED (exit status 4)
    assert audit_main(["verify", "--fast", str(export), "--key", vkey]) == 4


def _spin_on(served: Served, table: str, round_id: str, request_id: str) -> Any:
    with RngClient(served.target) as client:
        return client.spin(wheel="double_zero", table_id=table, round_id=round_id,
                           request_id=request_id)  # fmt: skip


def _signed(db: Path, index: int) -> Any:
    conn = sqlite3.connect(db)
    try:
        return json.loads(
            conn.execute("SELECT data FROM entries WHERE idx = ?", (index,)).fetchone()[0]
        )
    finally:
        conn.close()


def _integrity_events(stderr: str) -> list[tuple[str, str, int]]:
    events = [json.loads(x) for x in stderr.splitlines() if "log_integrity_error" in x]
    return [(e["method"], e["check"], e["index"]) for e in events]


@pytest.mark.parametrize("edit", ["table_seq = 99", "table_id = 'T9'", "client_id = 'x'"])
def test_a_table_head_edited_in_its_columns_changes_nothing_the_writer_decides(
    log: tuple[Path, Path], edit: str
) -> None:
    """The sequencer numbers a table's next entry after the head in its committed table map,
    not in the columns (issue 40): entry 44 (T1's head, seq 45) edited while the service runs
    (its table_seq raised, or moved to another table or client): the next spin on T1 is seq 46
    after entry 44, as the signed chain requires, and nothing is refused."""
    config, db = log
    served = Served(config)
    try:
        served.spins("c", 1)  # entry 44: T1's head
        sql(db, f"UPDATE entries SET {edit} WHERE idx = 44")
        served.spins("d", 1)  # entry 45
    finally:
        served.stop()
    signed = _signed(db, 45)
    assert (signed["table_seq"], signed["table_prev"], signed["v"]) == (46, 44, 3)
    assert _integrity_events(served.stderr) == []


@pytest.mark.parametrize("column", ["round_id", "table_id", "client_id"])
def test_the_newest_round_hidden_by_its_columns_is_not_drawn_again(
    log: tuple[Path, Path], column: str
) -> None:
    """Issue 34, break 4 (the table's newest round): round c0's spin (entry 44, the tail of
    T1's committed chain) moved out of its round's lookup while the service runs; its spin
    asked again under a new request id is refused with DATA_LOSS before anything is drawn
    (the round's answer lacks the chain's tail), counted under check="chain"."""
    config, db = log
    served = Served(config)
    try:
        served.spins("c", 1)
        sql(db, f"UPDATE entries SET {column} = 'hidden' WHERE idx = 44")
        with pytest.raises(ClientError) as info:
            _spin_on(served, "T1", "c0", "c0-again")
        assert _entry_count(db) == 45
    finally:
        served.stop()
    assert info.value.code == "DATA_LOSS", info.value
    assert (
        "round 'c0' of table 'T1' of client 'default': the table's committed chain ends with "
        "entries [44] of this round, but the store's round lookup does not return entry 44"
    ) in info.value.details
    assert _integrity_events(served.stderr) == [("sequencer", "chain", 44)]


def test_the_newest_round_hidden_while_stopped_is_not_drawn_again_after_a_restart(
    log: tuple[Path, Path],
) -> None:
    """The same edit made while no service runs, on an entry in the verified part (which the
    incremental start-up check does not read again): the service starts, its table heads from
    the table map checked against the newest signed root; the round's spin asked again is
    refused (the chain's tail, read back from the committed head, is the hidden entry, whose
    row then fails its check: T1 takes no entry until it is investigated; T2 goes on)."""
    config, db = log
    for run in (True, False):  # c0 = entry 44, z0 = 45; the second start records them verified
        served = Served(config)
        try:
            if run:
                served.spins("c", 1)
                _spin_on(served, "T2", "z0", "z0")
        finally:
            served.stop()
    sql(db, "UPDATE entries SET round_id = 'hidden' WHERE idx = 44")
    served = Served(config)
    try:
        with pytest.raises(ClientError) as info:
            _spin_on(served, "T1", "c0", "c0-again")
        assert _entry_count(db) == 46
        _spin_on(served, "T2", "z1", "z1")  # another table: drawn, after its committed head
    finally:
        served.stop()
    assert info.value.code == "DATA_LOSS", info.value
    assert "entry 44: the store's lookup columns say round_id 'hidden'" in info.value.details
    assert (_signed(db, 46)["table_seq"], _signed(db, 46)["table_prev"]) == (2, 45)
    assert _integrity_events(served.stderr) == [("sequencer", "columns", 44)]


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (
            "UPDATE table_map SET head_index = 42, head_seq = 43",
            "the table map's row of table 'T1' of client 'default' says its head is entry 42 "
            "(seq 43), but the signed entries say entry 43 (seq 44)",
        ),
        (
            "DELETE FROM table_map",
            "the table map's row of table 'T1' of client 'default' says its head is no row, "
            "but the signed entries say entry 43 (seq 44)",
        ),
        (
            "INSERT INTO table_map VALUES ('default', 'T7', 3, 1)",
            "the table map's row of table 'T7' of client 'default' says its head is entry 3 "
            "(seq 1), but the signed entries say no entry",
        ),
    ],
)
def test_an_edited_table_map_row_refuses_the_start_naming_the_table(
    log: tuple[Path, Path], capsys: pytest.CaptureFixture[str], edit: str, says: str
) -> None:
    """A row of the table map (the heads the sequencer starts from) edited while no service
    runs: its root is not the one signed in the newest entry; the start is refused naming the
    table, and check-store names it too."""
    config, db = log
    sql(db, edit)
    failed = serve_refused(config)
    assert says in failed["error"], failed
    code, out = check_store(config, capsys)
    assert code == 1
    assert says in out


def test_a_table_map_row_edited_while_running_refuses_the_next_start(
    log: tuple[Path, Path],
) -> None:
    """The running writer keeps its map in memory (a row edited under it changes nothing it
    decides); the edit is refused at the next start."""
    config, db = log
    served = Served(config)
    try:
        sql(db, "UPDATE table_map SET head_index = 40, head_seq = 41")
        served.spins("f", 1)  # after the committed head, and the row upserted with it
        sql(db, "INSERT INTO table_map VALUES ('default', 'T8', 1, 1)")
    finally:
        served.stop()
    assert (_signed(db, 44)["table_seq"], _signed(db, 44)["table_prev"]) == (45, 43)
    failed = serve_refused(config)
    assert "the table map's row of table 'T8' of client 'default'" in failed["error"]


# --- Served bytes against the committed tree (issue 34, break 3) ----------------------------


def test_bytes_changed_with_their_leaf_hash_are_never_served(
    pristine: Pristine, log: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Entry 10 (round a10 of T1, in the verified part the incremental start-up does not read
    again) gets other bytes (its roulette number 1 digit longer) and the leaf-hash column
    those bytes hash to, while no service runs; the Merkle nodes stay. The row check (bytes
    against the leaf-hash column) passes, but the tree's level-0 node of index 10, which every
    checkpoint commits to, is the old hash: a replay of request a10, GetEntries, FindEntries
    and GetTableHistory each refuse with DATA_LOSS naming the node, nothing altered is
    served, and each is counted under check="node" (exported at 0 from the start).
    GetInclusionProof by the forged leaf hash finds the row by its column and is refused too:
    the tree's leaf at index 10 is not that hash."""
    _, db = log
    config = write_config(db.parent, pristine.key, metrics=True)
    conn = sqlite3.connect(db)
    data = bytes(conn.execute("SELECT data FROM entries WHERE idx = 10").fetchone()[0])
    conn.close()
    changed = data.replace(b'"number":"', b'"number":"1', 1)
    assert changed != data
    forged = hashlib.sha256(b"\x00" + changed).digest()
    sql(db, "UPDATE entries SET data = ?, leaf_hash = ? WHERE idx = 10", changed, forged)
    says = f"entry 10: its bytes hash to {forged.hex()}, as its stored leaf hash says, but the "
    served = Served(config)  # the incremental start-up check passes: entry 10 is below 24
    calls: dict[str, Any] = {}
    try:
        samples = {
            m: f'rng_log_integrity_errors_total{{check="node",method="{m}"}}'
            for m in (
                "sequencer",
                "GetEntries",
                "FindEntries",
                "GetTableHistory",
                "GetInclusionProof",
            )
        }
        assert {m: served.metric(s) for m, s in samples.items()} == dict.fromkeys(samples, 0)
        with pytest.raises(ClientError) as info:
            _spin_again(served, "a10", "a10")  # the original request, retried
        calls["replay"] = info.value.details
        assert info.value.code == "DATA_LOSS", info.value
        channel = grpc.insecure_channel(served.target)
        stub = log_pb2_grpc.LogServiceStub(channel)
        calls["GetEntries"] = lookup_error(
            lambda: stub.GetEntries(log_pb2.GetEntriesRequest(start=8, end=12, omit_proofs=True))
        )
        calls["FindEntries"] = lookup_error(
            lambda: stub.FindEntries(log_pb2.FindEntriesRequest(table_id="T1", round_id="a10"))
        )
        calls["GetTableHistory"] = lookup_error(
            lambda: stub.GetTableHistory(log_pb2.GetTableHistoryRequest(table_id="T1"))
        )
        calls["GetInclusionProof"] = lookup_error(  # found by the forged leaf-hash column
            lambda: stub.GetInclusionProof(log_pb2.GetInclusionProofRequest(leaf_hash=forged))
        )
        # Entries the edit did not touch are served as before.
        page = stub.GetEntries(log_pb2.GetEntriesRequest(start=11, end=14))
        assert [e.index for e in page.entries] == [11, 12, 13]
        channel.close()
        assert {m: served.metric(s) for m, s in samples.items()} == dict.fromkeys(samples, 1)
        assert _entry_count(db) == pristine.size  # nothing drawn again
    finally:
        served.stop()
    for what, details in calls.items():
        assert says in details, (what, details)
        assert "which the signed checkpoints commit to" in details
    events = [json.loads(x) for x in served.stderr.splitlines() if "log_integrity_error" in x]
    assert [(e["method"], e["check"], e["index"]) for e in events] == [
        (m, "node", 10)
        for m in ("sequencer", "GetEntries", "FindEntries", "GetTableHistory", "GetInclusionProof")
    ]
    code, out = check_store(config, capsys)  # the full check names the node too
    assert code == 1
    assert "entry 10's leaf node (level 0, index 10) is not the hash the entries give" in out


def test_a_new_key_without_the_old_one_in_retired_keys_refuses_the_start(
    pristine: Pristine, log: tuple[Path, Path], tmp_path: Path
) -> None:
    """Issue 34, break 5, from the command line: the log's checkpoints are signed by the
    pristine key; a start with a new key and no log.retired_keys is refused with exit status
    2 and one line naming log.retired_keys and the missing key; with the old key retired it
    starts."""
    _, db = log
    new_key = tmp_path / "new.pem"
    generate_key_pair(new_key, name=ORIGIN)
    failed = serve_refused(write_config(db.parent, new_key))
    old_id = (pristine.key.parent / "key.pem.vkey").read_text().split("+")[1]
    assert failed["setting"] == "log.retired_keys"
    assert failed["error"].startswith(
        f"log.retired_keys: stored checkpoints are signed by {ORIGIN}+{old_id}, which no "
        "configured key is"
    ), failed
    assert "\n" not in failed["error"]
    retired = write_config(db.parent, new_key, extra=f'retired_keys = "{pristine.key}.vkey"')
    Served(retired).stop()
