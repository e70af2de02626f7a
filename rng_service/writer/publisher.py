"""The log's side of witnessing: its published checkpoints sent to C2SP tlog-witnesses.

Owns the rounds in which the service asks its ``[[witnesses]]`` to cosign its latest checkpoint,
what it makes of their answers, and the cosigned notes it serves. It runs in a background
thread of its own, never in the log writer's path: outcomes are durable, signed and returned
whatever the witnesses do (each receipt carries the log-signed checkpoint of its commit group).

A round (every ``witnessing.interval_seconds``, default the publish interval):

1. the log's current tree is published (stored as a published checkpoint) if it grew since
   the latest published one (:meth:`rng_service.writer.appender.Appender.publish_checkpoint`), so
   the last entries before a quiet period are covered too;
2. the latest published checkpoint goes to every witness at once, each request bounded by
   ``witnessing.timeout_seconds``, as C2SP tlog-witness "add-checkpoint" says: "old <size>" of
   the latest checkpoint this witness cosigned, the RFC 6962 section 2.1.2 consistency proof
   from that size (from the stored tree), an empty line and the signed checkpoint. The witness's
   last size is what it last cosigned for us (the stored cosignatures say it at start-up), and
   otherwise what it says: "If it doesn't match, the witness MUST respond with a 409 Conflict
   HTTP status code. The response body MUST consist of the tree size of the latest cosigned
   checkpoint"; one retry follows with that size and its proof;
3. a 200 answer's signature lines are checked as "The client MUST ignore any cosignatures from
   unknown keys": only the configured key's line counts, and it must verify over the checkpoint
   (C2SP tlog-cosignature ``cosignature/v1``); it is stored with the checkpoint
   (:meth:`~rng_service.storage.base.LogStorage.add_cosignatures`);
4. a quiet log sends its unchanged checkpoint again (old size = checkpoint size, no proof):
   "If the old size matches the checkpoint size, the witness MUST check that the root hashes are
   also identical", and answers with a cosignature of a fresh timestamp, which is how auditors
   see that the log was still this size at that time.

What an answer means (:class:`Outcome`, the metric ``rng_witness_requests_total{result}``):

- ``cosigned``: the witness cosigned;
- ``conflict``: **the alarm**. The witness holds a checkpoint of this log that the log's tree
  does not extend: it has cosigned a larger size than the tree has (after catching up with the
  store: the log was cut back or restored from an old backup), a 409 for equal sizes (another
  root at that size: a fork), or a 422 for a consistency proof computed from the log's own tree
  (the witness's checkpoint at the old size has another root). Logged as an error
  (``witness_conflict``), counted in ``rng_witness_conflicts_total``; at start-up it refuses the
  start naming the witness (:meth:`Witnessing.startup`);
- ``stale``: the witness has a larger size that another replica of a shared store published;
  the next round sends the newer checkpoint;
- ``unreachable`` (connection refused or reset, timeout), ``refused`` (400, 403, 404 or another
  status: a configuration mismatch such as a witness that does not know this log or key), and
  ``bad_answer`` (an answer that is not what the spec says, or a cosignature that does not
  verify with the configured key): warnings, ``rng_witness_up{witness}`` 0 until it cosigns
  again.

The HTTP client is the standard library's :mod:`http.client` (one keep-alive connection per
witness, as the spec recommends; a reused connection found closed is retried once on a new
one); nothing here needs more.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import http.client
import logging
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from rng_service.clock import Clock
from rng_service.errors import IntegrityError, RngServiceError
from rng_service.log.cosignature import (
    CosignatureVerifier,
    InvalidCosignature,
    attach_cosignatures,
    verify_cosignatures,
)
from rng_service.log.note import Checkpoint, MalformedNote, parse_note
from rng_service.log.tlog_witness import (
    ADD_CHECKPOINT_PATH,
    SIZE_CONTENT_TYPE,
    AddCheckpoint,
    MalformedWitnessMessage,
    parse_signature_lines,
    parse_size,
)
from rng_service.storage.base import CheckpointRecord, CosignatureRecord

__all__ = [
    "HttpWitnessTransport",
    "Outcome",
    "StartupReport",
    "WitnessEndpoint",
    "WitnessObserver",
    "WitnessTransport",
    "Witnessing",
    "body_sha256",
    "cosigned_note",
]

_log = logging.getLogger("rng_service.log.witnessing")  # the JSON log's logger field, unchanged

Result = Literal["cosigned", "conflict", "stale", "unreachable", "refused", "bad_answer"]
RESULTS: tuple[Result, ...] = (
    "cosigned", "conflict", "stale", "unreachable", "refused", "bad_answer",
)  # fmt: skip
#: While a witness stays down, its warning is repeated at most this often.
WARNING_REPEAT_SECONDS = 60.0


def body_sha256(note: bytes) -> bytes:
    """SHA-256 of a signed note's text: what the cosignatures stored with it are over."""
    return hashlib.sha256(parse_note(note).text.encode("utf-8")).digest()


def cosigned_note(note: bytes, records: Sequence[CosignatureRecord]) -> bytes:
    """``note`` with the stored witness cosignature lines of its own checkpoint body (same tree
    size and body hash; lines of another body are never attached)."""
    digest = body_sha256(note)
    lines = [r.line.decode("utf-8") for r in records if r.body_sha256 == digest]
    return attach_cosignatures(note, lines) if lines else note


class Unreachable(Exception):
    """The witness could not be asked (connection, TLS, timeout)."""


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    status: int
    content_type: str
    body: bytes


class WitnessTransport(Protocol):
    """Sends an add-checkpoint request body; raises :class:`Unreachable`."""

    def post(self, body: bytes) -> HttpAnswer: ...

    def close(self) -> None: ...


class HttpWitnessTransport:
    """``POST <url>/add-checkpoint`` over one keep-alive HTTP(S) connection."""

    def __init__(
        self, url: str, *, timeout: float, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._path = parts.path.rstrip("/") + ADD_CHECKPOINT_PATH
        self._timeout = timeout
        self._context = ssl_context if self._https else None
        self._conn: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            if self._https:
                self._conn = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self._timeout,
                    context=self._context or ssl.create_default_context(),
                )  # fmt: skip
            else:
                self._conn = http.client.HTTPConnection(
                    self._host, self._port, timeout=self._timeout
                )
        return self._conn

    def post(self, body: bytes) -> HttpAnswer:
        with self._lock:
            for attempt in (1, 2):
                reused = self._conn is not None
                conn = self._connection()
                try:
                    conn.request("POST", self._path, body=body,
                                 headers={"Content-Type": "text/plain; charset=utf-8"})  # fmt: skip
                    response = conn.getresponse()
                    data = response.read(64 * 1024 + 1)
                    answer = HttpAnswer(
                        response.status, response.getheader("Content-Type", "") or "", data
                    )
                    if response.will_close:
                        self._close()
                    return answer
                except (OSError, http.client.HTTPException) as e:
                    self._close()
                    # A kept-alive connection the witness closed meanwhile: once more, fresh.
                    stale = isinstance(
                        e, http.client.RemoteDisconnected | ConnectionResetError | BrokenPipeError
                    )
                    if reused and stale and attempt == 1:
                        continue
                    raise Unreachable(f"{type(e).__name__}: {e}") from e
            raise AssertionError("unreachable")

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        with self._lock:
            self._close()


@dataclass(frozen=True, slots=True)
class WitnessEndpoint:
    """A configured witness: its label (logs, metrics), URL, key, and how to reach it."""

    name: str
    url: str
    verifier: CosignatureVerifier
    transport: WitnessTransport


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one witness made of one checkpoint."""

    witness: str
    result: Result
    message: str
    size: int
    witness_size: int | None = None
    timestamp: int | None = None
    record: CosignatureRecord | None = None


class WitnessObserver(Protocol):
    """Where rounds are reported (the metrics)."""

    def witness_outcome(
        self, *, witness: str, result: str, size: int, timestamp: int | None
    ) -> None: ...

    def witness_quorum(self, *, cosigned: int, required: int) -> None: ...


class CosignatureStore(Protocol):
    """What witnessing needs of :class:`~rng_service.storage.base.LogStorage`."""

    def add_cosignatures(self, records: Sequence[CosignatureRecord]) -> None: ...

    def latest_cosignatures(self) -> list[CosignatureRecord]: ...


class ConsistencyProver(Protocol):
    def consistency_proof(self, size1: int, size2: int | None = None) -> list[bytes]: ...


@dataclass(frozen=True, slots=True)
class StartupReport:
    outcomes: tuple[Outcome, ...]

    @property
    def conflicts(self) -> tuple[Outcome, ...]:
        return tuple(o for o in self.outcomes if o.result == "conflict")

    @property
    def cosigned(self) -> int:
        return sum(1 for o in self.outcomes if o.result == "cosigned")


class Witnessing:
    """Sends the log's checkpoints to its witnesses, in rounds, from a thread of its own."""

    def __init__(
        self,
        *,
        endpoints: Sequence[WitnessEndpoint],
        storage: CosignatureStore,
        tree: ConsistencyProver,
        checkpoint_note: Callable[[int], str],
        publish: Callable[[], CheckpointRecord],
        sync: Callable[[], int],
        clock: Clock,
        interval_seconds: float,
        min_witnesses: int,
        observer: WitnessObserver | None = None,
    ) -> None:
        self._endpoints = tuple(endpoints)
        self._storage = storage
        self._tree = tree
        self._checkpoint_note = checkpoint_note
        self._publish = publish
        self._sync = sync
        self._clock = clock
        self._interval = interval_seconds
        self._min = min_witnesses
        self._observer = observer
        self._known: dict[str, int] = {}
        self._up: dict[str, bool | None] = {e.name: None for e in self._endpoints}
        self._warned: dict[str, float] = {}
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=max(1, len(self._endpoints)), thread_name_prefix="witness"
        )
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._remember_stored()

    @property
    def endpoints(self) -> tuple[WitnessEndpoint, ...]:
        return self._endpoints

    def _remember_stored(self) -> None:
        """Each witness's last cosigned size, from the cosignatures stored with the log (a
        first guess: a 409 corrects it)."""
        try:
            latest = self._storage.latest_cosignatures()
        except RngServiceError as e:
            _log.warning({"event": "witness_state_unreadable", "error": str(e)})
            return
        for endpoint in self._endpoints:
            for record in latest:
                if (record.witness, record.key_id) == (
                    endpoint.verifier.name, endpoint.verifier.key_id,
                ):  # fmt: skip
                    self._known[endpoint.name] = record.size

    # -- one witness ---------------------------------------------------------------------

    def _ask(self, endpoint: WitnessEndpoint, note: bytes, checkpoint: Checkpoint) -> Outcome:
        size = checkpoint.size
        name = endpoint.name
        old = min(self._known.get(name, 0), size)
        for _ in range(3):
            proof = self._tree.consistency_proof(old, size) if 0 < old < size else []
            body = AddCheckpoint(old_size=old, proof=tuple(proof), note=note).encode()
            try:
                answer = endpoint.transport.post(body)
            except Unreachable as e:
                return Outcome(name, "unreachable", f"{endpoint.url}: {e}", size)
            if answer.status == 200:
                return self._cosigned(endpoint, note, checkpoint, answer)
            if answer.status == 409:
                if answer.content_type.split(";")[0].strip() != SIZE_CONTENT_TYPE:
                    return Outcome(name, "bad_answer",
                                   f"409 without a {SIZE_CONTENT_TYPE} body", size)  # fmt: skip
                try:
                    theirs = parse_size(answer.body)
                except MalformedWitnessMessage as e:
                    return Outcome(name, "bad_answer", f"409: {e}", size)
                if theirs == old == size:
                    return Outcome(
                        name, "conflict",
                        f"the witness has cosigned another checkpoint of tree size {size} (a "
                        f"different root): this log's tree at that size is not the one it saw "
                        f"(a fork, or the store was rewritten)", size, witness_size=theirs,
                    )  # fmt: skip
                if theirs == old:
                    return Outcome(name, "bad_answer",
                                   f"409 naming the old size {old} it was sent", size)  # fmt: skip
                self._known[name] = theirs
                if theirs > size:
                    current = self._sync()
                    if current >= theirs:
                        return Outcome(
                            name, "stale",
                            f"the witness has cosigned tree size {theirs}, newer than this "
                            f"checkpoint ({size}); the next round sends the newer one",
                            size, witness_size=theirs,
                        )  # fmt: skip
                    return Outcome(
                        name, "conflict",
                        f"the witness has cosigned tree size {theirs} of this log, but the log "
                        f"has only {current} entries: entries were deleted (the store was cut "
                        f"back, or restored from an older backup)", size, witness_size=theirs,
                    )  # fmt: skip
                old = theirs
                continue
            if answer.status == 422:
                return Outcome(
                    name, "conflict",
                    f"the witness refused the consistency proof from tree size {old}, computed "
                    f"from this log's own tree: the checkpoint of size {old} it cosigned has "
                    f"another root (a fork, or the store was rewritten): "
                    f"{_text(answer.body)}", size, witness_size=old,
                )  # fmt: skip
            return Outcome(name, "refused", f"HTTP {answer.status}: {_text(answer.body)}", size)
        return Outcome(name, "bad_answer", "the witness kept answering 409", size)

    def _cosigned(
        self, endpoint: WitnessEndpoint, note: bytes, checkpoint: Checkpoint, answer: HttpAnswer
    ) -> Outcome:
        name, size = endpoint.name, checkpoint.size
        try:
            lines = parse_signature_lines(answer.body)
            mine = [s for s in lines if endpoint.verifier.matches(s)]
            if not mine:
                return Outcome(
                    name, "bad_answer",
                    f"200 without a cosignature of the configured key "
                    f"{endpoint.verifier.name}+{endpoint.verifier.key_id:08x} (lines of "
                    f"{', '.join(sorted({s.name for s in lines}))})", size,
                )  # fmt: skip
            verified = verify_cosignatures(
                attach_cosignatures(note, [s.line() for s in mine]), [endpoint.verifier]
            )
        except (MalformedWitnessMessage, MalformedNote, InvalidCosignature) as e:
            return Outcome(name, "bad_answer", f"200 with a bad cosignature: {e}", size)
        best = verified[0]
        self._known[name] = size
        record = CosignatureRecord(
            size=size,
            body_sha256=body_sha256(note),
            witness=endpoint.verifier.name,
            key_id=endpoint.verifier.key_id,
            timestamp=best.timestamp,
            line=best.line.encode("utf-8"),
            received_ns=self._clock.now_ns(),
        )
        return Outcome(name, "cosigned", f"cosigned tree size {size}", size,
                       timestamp=best.timestamp, record=record)  # fmt: skip

    # -- rounds --------------------------------------------------------------------------

    def submit(self, note: bytes) -> list[Outcome]:
        """Asks every witness to cosign ``note`` (a log-signed checkpoint) at once; stores the
        cosignatures; reports and logs each outcome."""
        checkpoint = Checkpoint.parse(parse_note(note).text)
        outcomes = list(
            self._pool.map(lambda e: self._ask_safely(e, note, checkpoint), self._endpoints)
        )
        records = [o.record for o in outcomes if o.record is not None]
        if records:
            try:
                self._storage.add_cosignatures(records)
            except RngServiceError as e:
                _log.error({"event": "cosignatures_not_stored", "size": checkpoint.size,
                            "error": str(e)})  # fmt: skip
        for outcome in outcomes:
            self._report(outcome)
        cosigned = sum(1 for o in outcomes if o.result == "cosigned")
        if self._observer is not None:
            self._observer.witness_quorum(cosigned=cosigned, required=self._min)
        return outcomes

    def _ask_safely(self, endpoint: WitnessEndpoint, note: bytes, cp: Checkpoint) -> Outcome:
        try:
            return self._ask(endpoint, note, cp)
        except IntegrityError:
            raise
        except Exception as e:  # a round never dies of one witness
            _log.exception({"event": "witness_round_failed", "witness": endpoint.name})
            return Outcome(endpoint.name, "bad_answer", f"{type(e).__name__}: {e}", cp.size)

    def _report(self, outcome: Outcome) -> None:
        name = outcome.witness
        if self._observer is not None:
            self._observer.witness_outcome(
                witness=name, result=outcome.result, size=outcome.size,
                timestamp=outcome.timestamp,
            )  # fmt: skip
        event = {"witness": name, "size": outcome.size, "result": outcome.result,
                 "message": outcome.message}  # fmt: skip
        was_up = self._up.get(name)
        if outcome.result == "conflict":
            self._up[name] = False
            _log.error({"event": "witness_conflict", **event,
                        "witness_size": outcome.witness_size})  # fmt: skip
            return
        if outcome.result in ("cosigned", "stale"):
            self._up[name] = True
            if was_up is not True:
                _log.info({"event": "witness_cosigned" if was_up is None else "witness_recovered",
                           **event, "timestamp": outcome.timestamp})  # fmt: skip
            return
        self._up[name] = False
        now = time.monotonic()
        if was_up is not False or now - self._warned.get(name, -1e9) >= WARNING_REPEAT_SECONDS:
            self._warned[name] = now
            _log.warning({"event": f"witness_{outcome.result}", **event})

    def round(self) -> list[Outcome]:
        """One background round: publish the tree if it grew, then ask for cosignatures."""
        record = self._publish()
        return self.submit(record.note)

    def startup(self) -> StartupReport:
        """Before the service serves: the current tree's checkpoint goes to every witness
        (nothing is stored unless they cosign). The caller refuses to start on a conflict."""
        size = self._sync()
        note = self._checkpoint_note(size).encode("utf-8")
        return StartupReport(tuple(self.submit(note)))

    # -- the background thread -----------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None or not self._endpoints:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="witnessing", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.round()
            except Exception:
                _log.exception({"event": "witness_round_failed"})

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
            self._thread = None
        self._pool.shutdown(wait=False, cancel_futures=True)
        for endpoint in self._endpoints:
            endpoint.transport.close()


def _text(body: bytes) -> str:
    return " ".join(body.decode("utf-8", errors="replace").split())[:300]
