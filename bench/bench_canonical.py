"""What the cached C JSON encoder of ``rng_service.canonical`` buys over the public encoder.

``rng_service.canonical`` makes CPython's C encoder once, through the private
``json.encoder.c_make_encoder``, and falls back to the public ``json.JSONEncoder`` (which makes
a new C encoder on every call) when that private API is missing or changed. Each row is the
cached path's rate with the fallback's rate, measured in the same run and interleaved, as its
baseline: the log writer's encoding of a spin entry and of a 1,000-spin ``DrawBatch`` entry, the
request digest, and the verifier's reference check of one entry.
"""

from __future__ import annotations

from collections.abc import Callable

from bench._common import Row, rate
from rng_service import canonical
from rng_service.audit.verify import canonical_entry_index
from rng_service.log.entry import GeneratorRef, LogEntry, request_digest


def _spin(i: int) -> dict[str, object]:
    return {"number": str(i % 37), "colour": "red", "position": i % 38, "voided": False}


def _entry(outcome: dict[str, object], kind: str) -> LogEntry:
    return LogEntry(
        index=123_456,
        timestamp_ns=1_767_225_600_000_000_000,
        kind=kind,
        params={"wheel": "double_zero"},
        outcome=outcome,
        client="default",
        table_id="T7",
        round_id="R123456",
        session_id="",
        request_id="req-123456",
        generator=GeneratorRef("9f2c" * 8, 1, False),
        slot="spin",
        table_seq=4_000,
        table_prev=123_426,
    )


def run(*, short: bool) -> list[Row]:
    seconds = 0.1 if short else 0.25
    rounds = 1 if short else 20  # many short alternating windows: load spikes hit both alike
    spin = _entry({"wheel": "double_zero", "spins": [_spin(5)], "final": _spin(5)}, "roulette")
    batch = _entry({"wheel": "double_zero", "values": [_spin(i) for i in range(1000)]}, "batch")
    entry_bytes = spin.encode()
    cases: list[tuple[str, str, Callable[[], object]]] = [
        ("LogEntry.encode, spin entry", "entries/s", spin.encode),
        ("LogEntry.encode, 1,000-spin DrawBatch entry", "entries/s", batch.encode),
        (
            "request_digest",
            "digests/s",
            lambda: request_digest(
                kind="roulette_spin",
                params={"wheel": "double_zero"},
                table_id="T7",
                round_id="R1",
                session_id="",
            ),
        ),
        (
            "verifier reference check, spin entry",
            "entries/s",
            lambda: canonical_entry_index(entry_bytes),
        ),
    ]
    cached = canonical._C_ENCODE
    assert cached is not None, "CPython's C encoder did not pass the self-test"
    best: dict[tuple[str, bool], float] = {}
    try:
        for r in range(rounds):  # interleaved, in turn first; best of each (noisy machine)
            for name, _, fn in cases:
                for fast in (True, False) if r % 2 == 0 else (False, True):
                    canonical._C_ENCODE = cached if fast else None
                    r = rate(fn, seconds=seconds)
                    best[name, fast] = max(best.get((name, fast), 0.0), r)
    finally:
        canonical._C_ENCODE = cached
    return [
        Row(f"{name} (cached C encoder)", best[name, True], unit,
            "public json.JSONEncoder (the fallback)", best[name, False], "report")
        for name, unit, _ in cases
    ]  # fmt: skip


def write_path(what: str, n: int) -> None:
    """The log writer's canonical encoding alone, for an instruction count (docs/performance.md:
    ``valgrind --tool=callgrind .venv/bin/python -c "from bench.bench_canonical import
    write_path; write_path('spin', 20000)"``, minus the same with ``n`` 0): ``spin``: ``n``
    spin entries encoded and their request digests; ``batch``: ``n`` 1,000-spin entries."""
    if what == "batch":
        batch = _entry({"wheel": "double_zero", "values": [_spin(i) for i in range(1000)]}, "b")
        for _ in range(n):
            batch.encode()
        return
    for i in range(n):
        _entry(
            {"wheel": "double_zero", "spins": [_spin(i)], "final": _spin(i)}, "roulette"
        ).encode()
        request_digest(
            kind="roulette_spin",
            params={"wheel": "double_zero"},
            table_id=f"T{i % 30}",
            round_id=f"R{i}",
            session_id="",
        )
