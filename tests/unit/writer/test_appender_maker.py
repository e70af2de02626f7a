"""The log writer's cheaper constructors of its frozen dataclasses (``values._setters``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from rng_service.log.entry import GeneratorRef, LogEntry
from rng_service.log.receipt import Receipt
from rng_service.storage.base import EntryRecord
from rng_service.writer import values as appender
from rng_service.writer.appender import AppendResult

_GEN = GeneratorRef(instance="ab" * 16, epoch=3, lab_mode=False)
_ENTRY = {
    "index": 7, "timestamp_ns": 1_767_225_600_000_000_000, "kind": "roulette_spin",
    "params": {"wheel": "double_zero"}, "outcome": {"final": {"number": "00"}}, "client": "gs",
    "table_id": "T1", "round_id": "R1", "session_id": "S", "request_id": "q1",
    "generator": _GEN, "profile_sha256": "", "slot": "spin", "table_seq": 2, "table_prev": 5,
    "version": 2, "time_text": "2026-01-01T00:00:00.000000Z",
}  # fmt: skip
_RECORD = {
    "index": 7, "data": b"{}", "leaf_hash": b"h" * 32, "client_id": "gs", "request_id": "q1",
    "request_digest": b"d" * 32, "kind": "roulette_spin", "table_id": "T1", "round_id": "R1",
    "session_id": "S", "timestamp_ns": 1, "commit_size": 8, "slot": "spin", "table_seq": 2,
}  # fmt: skip
_RECEIPT = {
    "index": 7, "entry": b"{}", "leaf_hash": b"h" * 32, "inclusion_proof": (b"p" * 32,),
    "tree_size": 8, "checkpoint": "note", "replayed": False,
}  # fmt: skip


def _draw(src: object) -> dict[str, object]:
    return {}


def _link(links: object) -> tuple[dict[str, object], object]:
    return {}, _draw


@pytest.mark.parametrize(
    ("make", "cls", "values"),
    [
        (appender.new_entry, LogEntry, _ENTRY),
        (appender.new_record, EntryRecord, _RECORD),
        (appender.new_receipt, Receipt, _RECEIPT),
    ],
)
def test_maker_builds_what_the_class_builds(make: object, cls: type, values: dict) -> None:
    built = make(*values.values())  # type: ignore[operator]
    expected = cls(**values)
    assert type(built) is cls
    assert built == expected
    # Every field, including those the class leaves out of its comparison (time_text).
    for f in dataclasses.fields(cls):
        assert getattr(built, f.name) is getattr(expected, f.name), f.name
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.index = 99
    if cls is LogEntry:
        assert built.encode() == expected.encode()


def test_append_result_maker() -> None:
    entry, receipt = LogEntry(**_ENTRY), Receipt(**_RECEIPT)
    result = appender.new_result(entry, receipt)
    assert result == AppendResult(entry=entry, receipt=receipt)
    assert result.entry is entry
    assert result.receipt is receipt


def test_maker_refuses_what_it_cannot_build_alike() -> None:
    with pytest.raises(TypeError, match="fields are"):  # reordered: never a silent swap
        appender._setters(Receipt, "entry index leaf_hash inclusion_proof tree_size checkpoint "
                        "replayed")  # fmt: skip

    @dataclass(slots=True)
    class Mutable:
        a: int

    @dataclass(frozen=True, slots=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            if self.a < 0:
                raise ValueError("a")

    @dataclass(frozen=True)
    class Unslotted:
        a: int

    for cls in (Mutable, Checked, Unslotted):
        with pytest.raises(TypeError):
            appender._setters(cls, "a")


@pytest.mark.parametrize(
    "extra",
    [{}, {"slot": "fire_numbers", "profile_sha256": "ab" * 32, "link": _link}, {"session_id": ""}],
)
def test_draw_request_is_the_request_the_class_builds(extra: dict) -> None:
    fields = {
        "client_id": "gs", "request_id": "q1", "table_id": "T1", "round_id": "R1",
        "session_id": "S1", "kind": "roulette_spin", "params": {"wheel": "double_zero"},
        "draw": _draw, **extra,
    }  # fmt: skip
    built, expected = appender.draw_request(**fields), appender.DrawRequest(**fields)
    assert type(built) is appender.DrawRequest
    assert built == expected
    # The digest (compare=False) is what idempotency compares: the class's own, computed
    # from the same fields.
    assert built.digest == expected.digest
    assert built.link is expected.link
