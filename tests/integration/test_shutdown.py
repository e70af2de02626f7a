"""Graceful shutdown: SIGTERM under load loses nothing that was acknowledged.

The real service runs as a subprocess (``rng-service serve``); client threads spin until it goes
away; SIGTERM arrives mid-load. The process must exit 0, every acknowledged outcome must be in
the log at its index with the same bytes, and the final published checkpoint must cover the
whole log and verify. Calls that are not answered end UNAVAILABLE ("shutting down" in the drain
window, then connection refused), never CANCELLED.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc

from rng_service._proto.rng.v1 import common_pb2, outcomes_pb2, outcomes_pb2_grpc
from rng_service.log.keys import generate_key_pair
from rng_service.log.merkle import root_from_leaf_hashes
from rng_service.log.note import Checkpoint, NoteVerifier, open_note
from rng_service.storage.sqlite import SqliteStorage


def test_sigterm_under_load_keeps_every_acknowledged_outcome(tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    info = generate_key_pair(key, name="shutdown-test")
    db = tmp_path / "log.sqlite3"
    env = {
        **os.environ,
        "RNG_SERVICE__SERVER__PORT": "0",
        "RNG_SERVICE__METRICS__ENABLED": "false",
        "RNG_SERVICE__STORAGE__PATH": str(db),
        "RNG_SERVICE__LOG__KEY_FILE": str(key),
        "RNG_SERVICE__LOG__KEY_NAME": "shutdown-test",
        "RNG_SERVICE__LOG__PUBLISH_INTERVAL_SECONDS": "3600",
        "RNG_SERVICE__SERVER__SHUTDOWN_GRACE_SECONDS": "5",
        "PYTHONUNBUFFERED": "1",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "rng_service.cli.service", "serve"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith('{"event": "listening"'), line + proc.stderr.read()
        port = int(json.loads(line)["grpc_port"])
        acked: dict[int, bytes] = {}
        refused: list[str] = []  # how calls ended that were not answered
        lock = threading.Lock()
        stop_at = time.monotonic() + 30  # bounded in time as well as by the server going away

        def client(n: int) -> None:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = outcomes_pb2_grpc.OutcomeServiceStub(channel)
                for i in range(100_000):
                    if time.monotonic() > stop_at:
                        return
                    try:
                        reply = stub.SpinRoulette(
                            outcomes_pb2.SpinRouletteRequest(
                                context=common_pb2.RequestContext(
                                    table_id=f"T{n}", round_id=f"R{i}", request_id=f"c{n}-{i}"
                                ),
                                wheel=outcomes_pb2.WHEEL_TYPE_DOUBLE_ZERO,
                            ),
                            timeout=10,
                        )
                    except grpc.RpcError as e:
                        # Not acknowledged: "shutting down" in the drain window (a client
                        # then moves to another instance), or the server is gone.
                        with lock:
                            refused.append(f"{e.code().name}: {e.details()}")
                        return
                    with lock:
                        acked[reply.receipt.index] = reply.receipt.entry

        threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        # Under load: the stop comes once more than 50 calls were acknowledged (bounded).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with lock:
                if len(acked) > 50:
                    break
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, proc.stderr.read()
        for t in threads:
            t.join(30)
        stderr = proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    assert len(acked) > 50, f"too little load reached the service: {len(acked)}"
    # Callers see only the codes the API documents for a stop: UNAVAILABLE, "shutting down"
    # during the drain window, then the connection refused; never CANCELLED.
    assert refused, "no call was refused: the stop was not under load"
    assert {r.split(":")[0] for r in refused} == {"UNAVAILABLE"}, sorted(set(refused))
    assert any("shutting down" in r for r in refused), sorted(set(refused))
    assert '"event": "shutdown_requested"' in stderr
    assert '"event": "stopped"' in stderr

    storage = SqliteStorage(db)
    try:
        size = storage.tree_size()
        entries = storage.entries(0, size)
        latest = storage.latest_checkpoint()
    finally:
        storage.close()
    assert [e.index for e in entries] == list(range(size))
    for index, data in acked.items():
        assert entries[index].data == data
    assert latest is not None
    verifier = NoteVerifier.from_verifier_key(info.verifier_key)
    checkpoint = Checkpoint.parse(open_note(latest.note, [verifier]).text)
    assert checkpoint.size == size
    assert checkpoint.root_hash == root_from_leaf_hashes([e.leaf_hash for e in entries])
