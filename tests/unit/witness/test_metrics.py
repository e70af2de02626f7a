"""The witness's own Prometheus series (rng_service.witness.metrics) and its ``[metrics]`` table.

Real add-checkpoint requests (checkpoints and RFC 6962 proofs built as test_core.py builds them)
go through a real :class:`WitnessServer` on loopback port 0 whose answers feed the metrics;
the registry is then read, and rendered as Prometheus text. The expected counts come from the
requests sent (one per result, as C2SP tlog-witness says each is answered), not from the code.
"""

from __future__ import annotations

import base64
import http.client
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from prometheus_client import CollectorRegistry, generate_latest

from rng_service.clock import FakeClock
from rng_service.log.cosignature import CosignatureSigner
from rng_service.log.merkle import consistency_proof, leaf_hash, root_from_leaf_hashes
from rng_service.log.note import Checkpoint, Ed25519NoteSigner, sign_note
from rng_service.log.tlog_witness import AddCheckpoint
from rng_service.witness import Answer, Witness, WitnessState
from rng_service.witness.config import WitnessConfigError, load_witness_config
from rng_service.witness.core import Result
from rng_service.witness.metrics import StateCollector, WitnessMetrics
from rng_service.witness.server import WitnessServer

ORIGIN = "log.test.example/l"
OTHER = "second.test.example/l"
LEAVES = [leaf_hash(b"entry %d" % i) for i in range(32)]
FORKED = [*LEAVES[:6], leaf_hash(b"other 6"), *LEAVES[7:]]
LOG = Ed25519NoteSigner(ORIGIN, Ed25519PrivateKey.generate())
WITNESS_KEY = Ed25519PrivateKey.generate()
ALL_RESULTS = {r.value for r in Result}


def note(n: int, leaves: list[bytes] = LEAVES, signer: Ed25519NoteSigner = LOG) -> bytes:
    return sign_note(Checkpoint(signer.name, n, root_from_leaf_hashes(leaves[:n])).body(), [signer])


def request(old: int, n: int, leaves: list[bytes] = LEAVES, **kw: object) -> bytes:
    proof = consistency_proof(leaves[:n], old) if 0 < old < n else []
    signed = kw.get("signed") or note(n, leaves)
    assert isinstance(signed, bytes)
    return AddCheckpoint(old, tuple(proof), signed).encode()


class Running:
    """A witness for ORIGIN and OTHER behind a real server on port 0, counted by metrics."""

    def __init__(self, tmp_path: Path, clock: FakeClock) -> None:
        self.state = WitnessState(tmp_path / "state.sqlite3")
        self.registry = CollectorRegistry()
        self.metrics = WitnessMetrics(
            self.registry, name="witness.test.example/w", version="9.9",
            origins=[ORIGIN, OTHER], heads=self.state.heads(),
        )  # fmt: skip
        self.registry.register(StateCollector(self.state.probe))
        witness = Witness(
            signer=CosignatureSigner("witness.test.example/w", WITNESS_KEY),
            logs={ORIGIN: [LOG.verifier()], OTHER: [LOG.verifier()]},
            state=self.state, clock=clock,
        )  # fmt: skip
        self.server = WitnessServer(witness, host="127.0.0.1", port=0, sink=self.metrics)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.port = self.server.server_address[1]

    def post(self, body: bytes) -> int:
        url = f"http://127.0.0.1:{self.port}/add-checkpoint"
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data=body), timeout=10) as r:
                return int(r.status)
        except urllib.error.HTTPError as e:
            e.close()
            return int(e.code)

    def count(self, origin: str, result: str) -> float | None:
        return self.registry.get_sample_value(
            "rng_witness_server_requests_total", {"origin": origin, "result": result}
        )

    def gauge(self, name: str, origin: str) -> float | None:
        return self.registry.get_sample_value(name, {"origin": origin})

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.state.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def running(tmp_path: Path, clock: FakeClock) -> Iterator[Running]:
    r = Running(tmp_path, clock)
    yield r
    r.stop()


def origins_exported(registry: CollectorRegistry) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for family in registry.collect():
        for sample in family.samples:
            if "origin" in sample.labels:
                found.setdefault(sample.labels["origin"], set()).add(sample.name)
    return found


def test_every_series_is_exported_from_the_start(running: Running) -> None:
    """Before any request: every (configured origin, result) at 0, so that increase() sees the
    first fork; requests naming no configured origin only as malformed or unknown_log; sizes
    and times at 0 (nothing cosigned). Mutation tried: no labels() loop at start-up (the fork
    series is born at 1 and this fails)."""
    for origin in (ORIGIN, OTHER):
        for result in ALL_RESULTS:
            assert running.count(origin, result) == 0.0, (origin, result)
        assert running.gauge("rng_witness_server_cosigned_size", origin) == 0.0
        assert running.gauge("rng_witness_server_cosigned_timestamp_seconds", origin) == 0.0
    assert {
        s.labels["result"]
        for f in running.registry.collect()
        for s in f.samples
        if s.name == "rng_witness_server_requests_total" and s.labels["origin"] == ""
    } == {"malformed", "unknown_log"}
    assert running.registry.get_sample_value("rng_witness_server_state_up") == 1.0
    info = running.registry.get_sample_value(
        "rng_witness_server_info", {"name": "witness.test.example/w", "version": "9.9"}
    )
    assert info == 1.0


def test_each_answer_is_counted_under_its_result(running: Running, clock: FakeClock) -> None:
    """One request per answer of the spec, each counted once under its own result and the
    configured origin. Mutations tried: a fork (409, same size, another root) given
    Result.CONFLICT in core.py (fork 0, conflict 2: fails); the server's early 400 (no
    Content-Length) not handed to the sink (fails)."""
    assert running.post(request(0, 8)) == 200
    assert running.post(request(0, 12)) == 409  # stale old size: a conflict
    assert running.post(request(8, 8, FORKED)) == 409  # same size, another root: a fork
    assert running.post(request(8, 12, FORKED)) == 422  # does not extend what was cosigned
    impostor = Ed25519NoteSigner(ORIGIN, Ed25519PrivateKey.generate())
    assert running.post(request(0, 3, signed=note(3, signer=impostor))) == 403
    assert running.post(AddCheckpoint(9, (), note(7)).encode()) == 400  # old > size: malformed
    assert running.post(b"old 0\n\nnot a checkpoint\n") == 400  # no origin at all
    conn = http.client.HTTPConnection("127.0.0.1", running.port, timeout=10)
    conn.putrequest("POST", "/add-checkpoint")
    conn.endheaders()  # no Content-Length: refused before the body is read
    assert conn.getresponse().status == 400
    conn.close()
    clock.advance(60)
    assert running.post(request(8, 12)) == 200
    expected = {
        (ORIGIN, "cosigned"): 2, (ORIGIN, "conflict"): 1, (ORIGIN, "fork"): 1,
        (ORIGIN, "inconsistent"): 1, (ORIGIN, "bad_signature"): 1, (ORIGIN, "malformed"): 1,
        ("", "malformed"): 2,
    }  # fmt: skip
    for origin, results in ((ORIGIN, ALL_RESULTS), (OTHER, ALL_RESULTS),
                            ("", {"malformed", "unknown_log"})):  # fmt: skip
        for result in results:
            want = expected.get((origin, result), 0)
            assert running.count(origin, result) == want, (origin, result)
    assert running.gauge("rng_witness_server_cosigned_size", ORIGIN) == 12
    stamp = running.gauge("rng_witness_server_cosigned_timestamp_seconds", ORIGIN)
    assert stamp == clock.now_ns() // 10**9
    assert running.gauge("rng_witness_server_cosigned_size", OTHER) == 0


def test_origins_from_requests_never_become_labels(running: Running) -> None:
    """Unknown origins (any text a client signs) are counted under origin="" and the text
    appears nowhere in the scrape. Mutation tried: metrics.py labelling with
    answer.event["origin"] (the request's text) instead of answer.log (fails)."""
    for i in range(5):
        stranger = Ed25519NoteSigner(f"attacker.example/{i}-x", Ed25519PrivateKey.generate())
        assert running.post(AddCheckpoint(0, (), note(3, signer=stranger)).encode()) == 404
    assert running.count("", "unknown_log") == 5
    assert set(origins_exported(running.registry)) == {ORIGIN, OTHER, ""}
    assert b"attacker" not in generate_latest(running.registry)


def test_no_secret_in_the_scrape(running: Running) -> None:
    """The witness key's private bytes (raw, hex or base64) are not in the exposition."""
    assert running.post(request(0, 4)) == 200
    text = generate_latest(running.registry)
    raw = WITNESS_KEY.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    for form in (raw, raw.hex().encode(), base64.b64encode(raw), base64.b64encode(raw)[:16]):
        assert form not in text


def test_a_restart_shows_what_was_cosigned(tmp_path: Path, clock: FakeClock) -> None:
    """The cosigned size and time come from the persisted state at start-up. Mutation tried:
    WitnessMetrics ignoring ``heads`` (size 0 after the restart: fails)."""
    first = Running(tmp_path, clock)
    try:
        assert first.post(request(0, 20)) == 200
        cosigned_at = clock.now_ns() // 10**9
    finally:
        first.stop()
    clock.advance(3600)
    again = Running(tmp_path, clock)
    try:
        assert again.gauge("rng_witness_server_cosigned_size", ORIGIN) == 20
        assert again.gauge("rng_witness_server_cosigned_timestamp_seconds", ORIGIN) == cosigned_at
        assert again.gauge("rng_witness_server_cosigned_size", OTHER) == 0
        assert again.count(ORIGIN, "cosigned") == 0  # counters start again, as counters do
    finally:
        again.stop()


def test_an_unavailable_state_is_counted_and_shown(running: Running) -> None:
    """A state that cannot be read: the request is 503 counted as unavailable, and
    rng_witness_server_state_up is 0. Mutations tried: StateCollector catching nothing
    (the scrape raises); 503 given Result.MALFORMED (fails)."""
    assert running.post(request(0, 4)) == 200
    running.state.close()
    assert running.post(request(4, 6)) == 503
    assert running.count(ORIGIN, "unavailable") == 1
    assert running.registry.get_sample_value("rng_witness_server_state_up") == 0.0


def test_sizes_never_go_down_when_answers_are_reported_out_of_order() -> None:
    """Two cosigned answers reported in the other order than the state stored them (a race
    between request threads): the gauges keep the larger size and the newer time. Mutation
    tried: set() without max (shows 10: fails)."""
    registry = CollectorRegistry()
    m = WitnessMetrics(registry, name="w.example/w", version="1", origins=[ORIGIN], heads=[])
    for size, stamp in ((12, 200), (10, 100)):
        m.answered(Answer(200, "text/plain", b"", result=Result.COSIGNED, log=ORIGIN,
                          size=size, timestamp=stamp))  # fmt: skip
    labels = {"origin": ORIGIN}
    assert registry.get_sample_value("rng_witness_server_cosigned_size", labels) == 12
    assert registry.get_sample_value("rng_witness_server_cosigned_timestamp_seconds", labels) == 200


# --- [metrics] -------------------------------------------------------------------------------


def _config(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "witness.toml"
    path.write_text(
        f'name = "w.example/w"\nkey_file = "w.pem"\nport = 7380\n{extra}\n'
        f'[[logs]]\norigin = "{ORIGIN}"\nkeys = ["{LOG.verifier_key()}"]\n'
    )
    return path


def test_metrics_table_defaults(tmp_path: Path) -> None:
    """No table: off. A table: on, loopback, port 7381 (docs/operations/witnesses.md)."""
    off = load_witness_config(_config(tmp_path, "")).metrics
    assert not off.enabled
    on = load_witness_config(_config(tmp_path, "[metrics]")).metrics
    assert (on.enabled, on.host, on.port) == (True, "127.0.0.1", 7381)
    zero = load_witness_config(_config(tmp_path, "[metrics]\nport = 0\nhost = '::1'")).metrics
    assert (zero.port, zero.host) == (0, "::1")
    kept = load_witness_config(_config(tmp_path, "[metrics]\nenabled = false\nport = 7380"))
    assert not kept.metrics.enabled


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("[metrics]\nenabled = 'yes'",
         "metrics.enabled: 'yes' is not allowed (allowed: true or false)"),
        ("[metrics]\nport = 7380",
         "metrics.port: 7380 is not allowed (allowed: a port of its own, not the witness's "
         "port (7380), or 0 for any free port)"),
        ("[metrics]\nport = 70000",
         "metrics.port: 70000 is not allowed (allowed: an integer from 0 to 65535"),
        ("[metrics]\nhost = 'metrics.example'",
         "metrics.host: 'metrics.example' is not allowed (allowed: an IP address or "
         "'localhost')"),
        ("[metrics]\npath = '/m'",
         "metrics.path: unknown setting (allowed: enabled, host, port)"),
        ("metrics = 1",
         "metrics: 1 is not allowed (allowed: a table with enabled, host, port)"),
    ],
)  # fmt: skip
def test_metrics_table_errors_name_the_setting(tmp_path: Path, table: str, message: str) -> None:
    """Mutation tried: no check of metrics.port against port (the second case loads)."""
    with pytest.raises(WitnessConfigError) as info:
        load_witness_config(_config(tmp_path, table))
    assert str(info.value).startswith(message)
