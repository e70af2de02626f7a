"""The witness's decision on one ``add-checkpoint`` request: C2SP tlog-witness, in spec order.

:meth:`Witness.add_checkpoint` takes the request body and returns the HTTP answer (status,
content type, body); :mod:`rng_service.witness.server` only moves bytes. Each step quotes
C2SP tlog-witness, "add-checkpoint":

1. a body that is not "an old size line, zero or more consistency proof lines, and an empty
   line, followed by a checkpoint" (:mod:`rng_service.log.tlog_witness`), or a checkpoint text
   that is not a C2SP tlog-checkpoint: **400 Bad Request**;
2. "If the checkpoint origin is unknown, the witness MUST respond with a 404 Not Found";
3. "The witness MUST verify the checkpoint signature against the public key(s) it trusts for
   the checkpoint origin, and it MUST ignore signatures from unknown keys. ... If none of the
   signatures verify against a trusted public key, the witness MUST respond with a 403
   Forbidden" (a trusted key's bad signature is refused the same way);
4. "The old size MUST be equal to or lower than the checkpoint size. Otherwise, the witness
   MUST respond with a 400 Bad Request";
5. the atomic check and store (:meth:`rng_service.witness.state.WitnessState.advance`): **409
   Conflict** with the latest cosigned size in a ``text/x.tlog.size`` body when the old size is
   not it, or when the sizes match and the roots do not; **422 Unprocessable Entity** when the
   consistency proof does not verify;
6. "If all the checks above pass, the witness MUST update its record of the latest cosigned
   checkpoint and respond with a 200 Success HTTP status code. The response body MUST be a
   sequence of one or more note signature lines ... The signatures MUST be cosignatures from the
   witness key(s) on the checkpoint": one C2SP tlog-cosignature ``cosignature/v1`` line
   (:mod:`rng_service.log.cosignature`) timestamped with the witness's clock.

Every answer but 200 carries a one-line plain-text reason. Each decision is also an event for
the witness's JSON log (:attr:`Answer.event`); 409 forks and 422s are logged as errors: they may
be evidence of a log that forked or was cut back. And each names its :class:`Result` and the
configured origin it was for (:attr:`Answer.log`, ``""`` when the request names none the witness
cosigns), which is what the witness's metrics count (:mod:`rng_service.witness.metrics`): never
the request's own origin text, so an attacker cannot make up label values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from rng_service.clock import Clock
from rng_service.errors import StorageUnavailable
from rng_service.log.cosignature import CosignatureSigner
from rng_service.log.note import (
    Checkpoint,
    InvalidNoteSignature,
    MalformedNote,
    NoteVerifier,
    UnverifiedNote,
    open_note,
    parse_note,
)
from rng_service.log.tlog_witness import (
    SIZE_CONTENT_TYPE,
    MalformedWitnessMessage,
    encode_size,
    parse_add_checkpoint,
)
from rng_service.witness.state import Conflict, Cosign, Inconsistent, WitnessState

__all__ = ["Answer", "Result", "Witness"]

_TEXT = "text/plain; charset=utf-8"


class Result(StrEnum):
    """What an add-checkpoint request came to: one per distinct answer of the spec, and the
    value of the ``result`` label of ``rng_witness_server_requests_total``."""

    COSIGNED = "cosigned"  # 200
    CONFLICT = "conflict"  # 409: the old size is not the latest cosigned size
    FORK = "fork"  # 409: the latest cosigned size, another root
    INCONSISTENT = "inconsistent"  # 422: the consistency proof does not verify
    BAD_SIGNATURE = "bad_signature"  # 403
    UNKNOWN_LOG = "unknown_log"  # 404
    MALFORMED = "malformed"  # 400
    UNAVAILABLE = "unavailable"  # 503: the witness's state could not be read or written


@dataclass(frozen=True, slots=True)
class Answer:
    """An HTTP answer: status, content type, body; the event to log about it; and, for an
    add-checkpoint request, its :class:`Result`, the configured origin it was for (``log``:
    ``""`` when the body names no origin the witness cosigns) and, when cosigned, the
    checkpoint's ``size`` and the cosignature's ``timestamp`` (seconds)."""

    status: int
    content_type: str
    body: bytes
    event: dict[str, Any] = field(default_factory=dict)
    result: Result | None = None
    log: str = ""
    size: int | None = None
    timestamp: int | None = None

    @classmethod
    def text(
        cls, status: int, message: str, *, result: Result | None = None, log: str = "",
        **event: Any,
    ) -> Answer:  # fmt: skip
        body = (message + "\n").encode("utf-8")
        return cls(status, _TEXT, body, {**event, "reason": message}, result=result, log=log)


class Witness:
    """Cosigns checkpoints of the configured logs (origin -> the log keys it trusts)."""

    def __init__(
        self,
        *,
        signer: CosignatureSigner,
        logs: Mapping[str, Sequence[NoteVerifier]],
        state: WitnessState,
        clock: Clock,
    ) -> None:
        self._signer = signer
        self._logs = {origin: tuple(keys) for origin, keys in logs.items()}
        self._state = state
        self._clock = clock

    @property
    def signer(self) -> CosignatureSigner:
        return self._signer

    def add_checkpoint(self, body: bytes) -> Answer:
        try:
            request = parse_add_checkpoint(body)
            signed = request.note
            # The note's text is the checkpoint body; parse it before any signature work.
            text = parse_note(signed).text
            checkpoint = Checkpoint.parse(text)
        except (MalformedWitnessMessage, MalformedNote) as e:
            return Answer.text(400, f"malformed request: {e}", result=Result.MALFORMED,
                               event="add_checkpoint_malformed")  # fmt: skip
        origin = checkpoint.origin
        event: dict[str, Any] = {"origin": origin, "size": checkpoint.size,
                                 "old_size": request.old_size}  # fmt: skip
        keys = self._logs.get(origin)
        if keys is None:
            return Answer.text(
                404, f"unknown log origin {origin!r}", result=Result.UNKNOWN_LOG,
                event="add_checkpoint_unknown_log", **event,
            )  # fmt: skip
        try:
            open_note(signed, keys)
        except (UnverifiedNote, InvalidNoteSignature) as e:
            return Answer.text(
                403, f"no valid signature of a trusted key of {origin!r}: {e}",
                result=Result.BAD_SIGNATURE, log=origin, event="add_checkpoint_bad_signature",
                **event,
            )  # fmt: skip
        if request.old_size > checkpoint.size:
            return Answer.text(
                400, f"old size {request.old_size} is larger than the checkpoint size "
                f"{checkpoint.size}", result=Result.MALFORMED, log=origin,
                event="add_checkpoint_malformed", **event,
            )  # fmt: skip
        now_ns = self._clock.now_ns()
        try:
            decision = self._state.advance(
                checkpoint=checkpoint,
                old_size=request.old_size,
                proof=request.proof,
                note=signed,
                request=body,
                now_ns=now_ns,
            )
        except StorageUnavailable as e:
            return Answer.text(503, f"witness state unavailable: {e}",
                               result=Result.UNAVAILABLE, log=origin,
                               event="witness_state_unavailable", **event)  # fmt: skip
        if isinstance(decision, Conflict):
            if decision.fork:
                return Answer(
                    409, SIZE_CONTENT_TYPE, encode_size(decision.size),
                    {"event": "inconsistent_checkpoint", "level": "error", **event,
                     "reason": "same size as the cosigned checkpoint, another root: a fork"},
                    result=Result.FORK, log=origin,
                )  # fmt: skip
            return Answer(
                409, SIZE_CONTENT_TYPE, encode_size(decision.size),
                {"event": "add_checkpoint_conflict", **event, "witness_size": decision.size},
                result=Result.CONFLICT, log=origin,
            )  # fmt: skip
        if isinstance(decision, Inconsistent):
            return Answer.text(
                422, f"consistency proof does not verify: {decision.reason}",
                result=Result.INCONSISTENT, log=origin, event="inconsistent_checkpoint",
                level="error", **event,
            )  # fmt: skip
        if not isinstance(decision, Cosign):  # not reached: the decisions are these three
            raise TypeError(f"unknown decision {decision!r}")
        timestamp = now_ns // 1_000_000_000
        cosignature = self._signer.cosign(text.encode("utf-8"), timestamp)
        return Answer(
            200, _TEXT, cosignature.line().encode("utf-8"),
            {"event": "cosigned", **event, "previous_size": decision.previous_size,
             "timestamp": timestamp},
            result=Result.COSIGNED, log=origin, size=checkpoint.size, timestamp=timestamp,
        )  # fmt: skip
