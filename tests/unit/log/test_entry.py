"""Canonical entry encoding (RFC 8785 subset) and strict decoding."""

from __future__ import annotations

import hashlib
import json

import pytest

from rng_service.log.entry import (
    EntryFormatError,
    GeneratorRef,
    LogEntry,
    canonical_json,
    format_time,
    request_digest,
)


def make_entry(**overrides: object) -> LogEntry:
    fields: dict[str, object] = dict(
        index=7,
        timestamp_ns=1_767_225_600_123_456_789,
        kind="roulette_spin",
        params={"wheel": "double_zero"},
        outcome={"final": {"number": "00", "colour": "green", "position": 19, "voided": False}},
        client="default",
        table_id="T1",
        round_id="R1",
        session_id="",
        request_id="req-1",
        generator=GeneratorRef(instance="ab12", epoch=3, lab_mode=False),
    )
    fields.update(overrides)
    return LogEntry(**fields)  # type: ignore[arg-type]


def test_canonical_json_sorts_keys_and_has_no_whitespace() -> None:
    assert canonical_json({"b": 1, "a": [True, None, "x"]}) == b'{"a":[true,null,"x"],"b":1}'


def test_canonical_json_escapes_like_rfc8785() -> None:
    # RFC 8785 section 3.2.2.2: only the mandatory escapes; non-ASCII as UTF-8.
    assert canonical_json('\u20ac\n"\\\x01') == '"\u20ac\\n\\"\\\\\\u0001"'.encode()


@pytest.mark.parametrize("bad", [1.5, 2**53, -(2**53), {1: "x"}, {"\u00e9": 1}, b"bytes"])
def test_canonical_json_rejects_what_jcs_cannot_carry_exactly(bad: object) -> None:
    with pytest.raises(ValueError, match=r"outside|not allowed|not an ASCII"):
        canonical_json(bad)


def test_time_has_six_fractional_digits_utc() -> None:
    assert format_time(1_767_225_600_123_456_789) == "2026-01-01T00:00:00.123456Z"
    assert format_time(0) == "1970-01-01T00:00:00.000000Z"


def test_encode_decode_round_trip_truncates_time_to_microseconds() -> None:
    entry = make_entry()
    data = entry.encode()
    back = LogEntry.decode(data)
    assert back.encode() == data
    assert back.timestamp_ns == 1_767_225_600_123_456_000
    assert back.outcome == entry.outcome
    assert back.generator == entry.generator


def test_encoding_is_byte_exact() -> None:
    data = make_entry().encode()
    assert data == (
        b'{"client":"default","generator":{"epoch":3,"instance":"ab12","lab_mode":false},'
        b'"index":7,"kind":"roulette_spin","outcome":{"final":{"colour":"green","number":"00",'
        b'"position":19,"voided":false}},"params":{"wheel":"double_zero"},"profile_sha256":"",'
        b'"request_id":"req-1","round_id":"R1","session_id":"","table_id":"T1",'
        b'"time":"2026-01-01T00:00:00.123456Z","v":1}'
    )


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.replace(b'"v":1', b'"v":2'),
        lambda d: d.replace(b'"index":7', b'"index":"7"'),
        lambda d: d.replace(b'"client":"default",', b""),
        lambda d: d.replace(b"{", b"{ ", 1),
        lambda d: d.replace(b'"time":"2026-01-01T00:00:00.123456Z"', b'"time":"yesterday"'),
        lambda d: d.replace(
            b'"time":"2026-01-01T00:00:00.123456Z"', b'"time":"2026-01-01T00:00:00V000007Z"'
        ),
        lambda d: d.replace(
            b'"time":"2026-01-01T00:00:00.123456Z"', b'"time":"2026-01-01T00:00:00.+12345Z"'
        ),
        lambda d: d[:-1],
        lambda d: b"\xff" + d,
        lambda d: b"[1]",
        lambda d: d.replace(b'"lab_mode":false', b'"lab_mode":0'),
    ],
)
def test_decode_rejects_non_canonical_or_malformed(mutate) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(EntryFormatError):
        LogEntry.decode(mutate(make_entry().encode()))


def test_request_digest_covers_every_identifying_field() -> None:
    base = dict(kind="k", params={"wheel": "x"}, table_id="T", round_id="R", session_id="")
    d0 = request_digest(**base)  # type: ignore[arg-type]
    assert d0 == hashlib.sha256(canonical_json(base)).digest()
    for key, value in [
        ("kind", "k2"),
        ("params", {"wheel": "y"}),
        ("table_id", "T2"),
        ("round_id", "R2"),
        ("session_id", "S"),
    ]:
        assert request_digest(**{**base, key: value}) != d0  # type: ignore[arg-type]


def test_entry_json_is_plain_json() -> None:
    record = json.loads(make_entry().encode())
    assert record["generator"] == {"instance": "ab12", "epoch": 3, "lab_mode": False}
