"""The certification suite reads outcome records from log entries of every format (1, 2 and 3:
docs/log-format.md, "Entries"), as entry lines and inside an ``rng-audit-export`` file, and
the lab's live RTP reader takes its outcomes from a format 3 receipt's entry alike: an upgraded
log's entries are all outcomes to test, whatever their format."""

from __future__ import annotations

import hashlib
import io
import json
from types import SimpleNamespace

from certification import sources
from certification.rtp.live import _Context
from rng_service.audit.export import write_export
from rng_service.log.entry import GeneratorRef, LogEntry
from rng_service.log.table_map import TableMap


def _entries() -> list[bytes]:
    heads = TableMap()
    out = []
    for index, version in enumerate((1, 2, 3, 3)):
        seq = index if version >= 2 else None
        if seq is not None:
            heads.set("default", "T1", index, seq)
        out.append(LogEntry(
            index=index, timestamp_ns=1_767_225_600_000_000_000, kind="dice_roll",
            params={"count": 3, "sides": 6},
            outcome={"dice": [1, 2, index + 1], "total": index + 4},
            client="default", table_id="T1", round_id=f"R{index}", session_id="",
            request_id=f"r{index}", generator=GeneratorRef(instance="ab", epoch=0, lab_mode=True),
            slot="dice" if seq else None, table_seq=seq,
            table_prev=index - 1 if index > 1 else None,
            table_map=heads.root() if version == 3 else None, version=version,
        ).encode())  # fmt: skip
    return out


def test_entry_lines_of_every_format_are_records() -> None:
    entries = _entries()
    assert [json.loads(e)["v"] for e in entries] == [1, 2, 3, 3]
    got = list(sources.records_from_lines(entries, "entries.jsonl"))
    assert got == [json.loads(e) for e in entries]
    assert [r["outcome"]["total"] for r in got] == [4, 5, 6, 7]


def test_an_export_of_every_format_is_read_like_entry_lines() -> None:
    entries = _entries()
    buf = io.StringIO()
    leaves = [(i, hashlib.sha256(b"\0" + e).digest(), e) for i, e in enumerate(entries)]
    write_export(buf, origin="test.example/log", checkpoints=[("note", 1)], entries=leaves,
                 tree_size=len(entries))  # fmt: skip
    lines = [line.encode() for line in buf.getvalue().splitlines()]
    got = list(sources.records_from_lines(lines, "export.jsonl"))
    assert got == [json.loads(e) for e in entries]


def test_the_live_reader_takes_a_format_3_receipts_entry() -> None:
    entry = _entries()[3]
    ctx = _Context(client=None, run="r", table_id="T1", deadline=1.0, clock=lambda: 0.0)
    result = SimpleNamespace(receipt=SimpleNamespace(entry=entry, index=3))
    assert ctx.entry(result) == json.loads(entry)
    assert ctx.indexes == [3]
