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
        slot="spin",
        table_seq=3,
        table_prev=4,
    )
    fields.update(overrides)
    return LogEntry(**fields)  # type: ignore[arg-type]


ROOT = bytes.fromhex("5c" * 32)


def make_v3_entry(**overrides: object) -> LogEntry:
    """An entry of format 3 (format 2 and the root of the map of table heads)."""
    return make_entry(**{"version": 3, "table_map": ROOT, **overrides})


def make_v1_entry(**overrides: object) -> LogEntry:
    """An entry of format 1 (logs written before format 2)."""
    fields: dict[str, object] = {"version": 1, "slot": None, "table_seq": None, "table_prev": None}
    return make_entry(**{**fields, **overrides})


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


@pytest.mark.parametrize(
    "make", [make_entry, make_v1_entry, make_v3_entry], ids=["format 2", "format 1", "format 3"]
)
def test_encode_decode_round_trip_truncates_time_to_microseconds(make) -> None:  # type: ignore[no-untyped-def]
    entry = make()
    data = entry.encode()
    back = LogEntry.decode(data)
    assert back.encode() == data
    assert back.timestamp_ns == 1_767_225_600_123_456_000
    assert back.outcome == entry.outcome
    assert back.generator == entry.generator
    assert (back.version, back.slot, back.table_seq, back.table_prev, back.table_map) == (
        entry.version, entry.slot, entry.table_seq, entry.table_prev, entry.table_map,
    )  # fmt: skip


def test_encoding_is_byte_exact() -> None:
    data = make_entry().encode()
    assert data == (
        b'{"client":"default","generator":{"epoch":3,"instance":"ab12","lab_mode":false},'
        b'"index":7,"kind":"roulette_spin","outcome":{"final":{"colour":"green","number":"00",'
        b'"position":19,"voided":false}},"params":{"wheel":"double_zero"},"profile_sha256":"",'
        b'"request_id":"req-1","round_id":"R1","session_id":"","slot":"spin","table_id":"T1",'
        b'"table_prev":4,"table_seq":3,"time":"2026-01-01T00:00:00.123456Z","v":2}'
    )
    first = make_entry(table_seq=1, table_prev=None).encode()
    assert b'"table_id":"T1","table_prev":null,"table_seq":1,"time"' in first


def test_format_3_encoding_is_byte_exact() -> None:
    data = make_v3_entry().encode()
    assert data == (
        b'{"client":"default","generator":{"epoch":3,"instance":"ab12","lab_mode":false},'
        b'"index":7,"kind":"roulette_spin","outcome":{"final":{"colour":"green","number":"00",'
        b'"position":19,"voided":false}},"params":{"wheel":"double_zero"},"profile_sha256":"",'
        b'"request_id":"req-1","round_id":"R1","session_id":"","slot":"spin","table_id":"T1",'
        b'"table_map":"' + b"5c" * 32 + b'",'
        b'"table_prev":4,"table_seq":3,"time":"2026-01-01T00:00:00.123456Z","v":3}'
    )
    assert LogEntry.decode(data).table_map == ROOT


def test_the_writer_writes_format_3() -> None:
    """The constant the log writer writes with, and what a LogEntry defaults to (format 2:
    one built without a table_map)."""
    from rng_service.log import entry

    assert entry.FORMAT_VERSION == 3
    assert entry.KNOWN_VERSIONS == (1, 2, 3)
    assert entry.WRITE_VERSION == 3
    assert make_entry().version == 2


def test_format_1_encoding_is_unchanged() -> None:
    # The bytes release 1 wrote (tests at commit 54081de): format 1 entries still re-encode
    # to exactly them, so their leaf hashes and the tree over them are unchanged.
    data = make_v1_entry().encode()
    assert data == (
        b'{"client":"default","generator":{"epoch":3,"instance":"ab12","lab_mode":false},'
        b'"index":7,"kind":"roulette_spin","outcome":{"final":{"colour":"green","number":"00",'
        b'"position":19,"voided":false}},"params":{"wheel":"double_zero"},"profile_sha256":"",'
        b'"request_id":"req-1","round_id":"R1","session_id":"","table_id":"T1",'
        b'"time":"2026-01-01T00:00:00.123456Z","v":1}'
    )
    assert LogEntry.decode(data).version == 1


@pytest.mark.parametrize(
    "fields",
    [
        {"slot": None},
        {"slot": ""},
        {"table_seq": None},
        {"table_seq": 0},
        {"table_seq": True},
        {"table_seq": 1},  # with a table_prev: not the chain's first
        {"table_prev": None},  # with table_seq 3: the chain's first must be 1
        {"table_prev": 7},  # not below the entry's own index
        {"table_prev": -1},
        {"version": 1},  # format 1 has no chain fields
        {"version": 3},  # format 3 needs its table_map
        {"version": 4, "table_map": ROOT},
        {"table_map": ROOT},  # format 2 has none
        {"version": 3, "table_map": ROOT[:31]},
        {"version": 3, "table_map": ROOT.hex()},
        {"version": 1, "slot": None, "table_seq": None, "table_prev": None, "table_map": ROOT},
    ],
)
def test_encode_refuses_inconsistent_format_2_fields(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"slot|table_seq|table_prev|table_map|format"):
        make_entry(**fields).encode()


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.replace(b'"v":2', b'"v":1'),
        lambda d: d.replace(b'"v":2', b'"v":3'),
        lambda d: d.replace(b'"v":2', b'"v":true'),
        lambda d: d.replace(b'"slot":"spin",', b""),
        lambda d: d.replace(b'"slot":"spin"', b'"slot":""'),
        lambda d: d.replace(b'"slot":"spin"', b'"slot":null'),
        lambda d: d.replace(b'"table_prev":4,', b""),
        lambda d: d.replace(b'"table_prev":4', b'"table_prev":null'),
        lambda d: d.replace(b'"table_prev":4', b'"table_prev":7'),
        lambda d: d.replace(b'"table_prev":4', b'"table_prev":"4"'),
        lambda d: d.replace(b'"table_seq":3', b'"table_seq":1'),
        lambda d: d.replace(b'"table_seq":3', b'"table_seq":0'),
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


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.replace(b'"v":1', b'"v":2'),  # format 2 needs its three fields
        lambda d: d.replace(b'"table_id":"T1"', b'"slot":"spin","table_id":"T1"'),
        lambda d: d.replace(b'"v":1', b'"v":0'),
    ],
)
def test_decode_holds_format_1_to_its_own_fields(mutate) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(EntryFormatError):
        LogEntry.decode(mutate(make_v1_entry().encode()))


_HEX = b"5c" * 32


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.replace(b'"v":3', b'"v":2'),  # format 2 has no table_map
        lambda d: d.replace(b'"table_map":"' + _HEX + b'",', b""),  # format 3 needs it
        lambda d: d.replace(_HEX, b"5C" * 32),  # uppercase
        lambda d: d.replace(_HEX, _HEX[:-2]),  # 31 bytes
        lambda d: d.replace(_HEX, _HEX + b"5c"),  # 33 bytes
        lambda d: d.replace(_HEX, _HEX[:-1] + b"g"),
        lambda d: d.replace(_HEX, _HEX[:-1] + b" "),
        lambda d: d.replace(_HEX, b"0x" + _HEX[:-2]),
        lambda d: d.replace(b'"' + _HEX + b'"', b"null"),
        lambda d: d.replace(b'"' + _HEX + b'"', b"1"),
        lambda d: d.replace(_HEX, b"XFw" * 10 + b"XFw="[:2]),  # base64-ish, not hex
    ],
)
def test_decode_holds_format_3_to_its_table_map(mutate) -> None:  # type: ignore[no-untyped-def]
    data = mutate(make_v3_entry().encode())
    assert data != make_v3_entry().encode()
    with pytest.raises(EntryFormatError):
        LogEntry.decode(data)


def test_format_2_bytes_with_a_table_map_are_refused() -> None:
    data = (
        make_entry()
        .encode()
        .replace(b'"table_id":"T1",', b'"table_id":"T1","table_map":"' + _HEX + b'",')
    )
    with pytest.raises(EntryFormatError, match="unexpected"):
        LogEntry.decode(data)


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
    # A slot the client names is part of the request; the slot the service derives is not, so
    # requests without one digest as before format 2.
    assert request_digest(**base, slot="") == d0  # type: ignore[arg-type]
    named = request_digest(**base, slot="draw-1")  # type: ignore[arg-type]
    assert named == hashlib.sha256(canonical_json({**base, "slot": "draw-1"})).digest()
    assert named != request_digest(**base, slot="draw-2")  # type: ignore[arg-type]


def test_entry_json_is_plain_json() -> None:
    record = json.loads(make_entry().encode())
    assert record["generator"] == {"instance": "ab12", "epoch": 3, "lab_mode": False}


def _random_entries(seed: int, n: int) -> list[LogEntry]:
    import random

    rnd = random.Random(seed)
    chars = ["a", "Z", "0", " ", '"', "\\", "\n", "\x00", "\x1f", "\x7f", "é", "😀", "\u2028"]

    def text() -> str:
        return "".join(rnd.choice(chars) for _ in range(rnd.randrange(6)))

    def value(depth: int = 0) -> object:
        r = rnd.random()
        if depth > 3 or r < 0.3:
            return text()
        if r < 0.45:
            return rnd.choice([0, -1, 2**53 - 1, -(2**53 - 1), rnd.randrange(-(10**9), 10**9)])
        if r < 0.55:
            return rnd.choice([True, False, None])
        if r < 0.75:
            return [value(depth + 1) for _ in range(rnd.randrange(4))]
        return {text(): value(depth + 1) for _ in range(rnd.randrange(4))}

    def chain(index: int) -> dict[str, object]:
        if rnd.random() < 0.3:
            return {"version": 1}
        if rnd.random() < 0.4:
            return {**chain_v2(index), "version": 3, "table_map": rnd.randbytes(32)}
        return chain_v2(index)

    def chain_v2(index: int) -> dict[str, object]:
        if index == 0 or rnd.random() < 0.3:
            return {"slot": text() or "s", "table_seq": 1, "table_prev": None}
        return {"slot": text() or "s", "table_seq": rnd.randrange(2, 2**53),
                "table_prev": rnd.randrange(index)}  # fmt: skip

    return [
        LogEntry(
            index=(index := rnd.randrange(2**53)),
            timestamp_ns=rnd.randrange(4 * 10**18) // 1000 * 1000,
            kind=text(),
            params={text(): value() for _ in range(rnd.randrange(3))},
            outcome={text(): value() for _ in range(rnd.randrange(4))},
            client=text(),
            table_id=text(),
            round_id=text(),
            session_id=text(),
            request_id=text(),
            generator=GeneratorRef(
                instance=text(), epoch=rnd.randrange(100), lab_mode=rnd.random() < 0.5
            ),
            profile_sha256=text(),
            **chain(index),  # type: ignore[arg-type]
        )
        for _ in range(n)
    ]


def _outcome_of(fn: object, *args: object, **kwargs: object) -> object:
    try:
        return fn(*args, **kwargs)  # type: ignore[operator]
    except Exception as e:
        return repr(e)


def _general_digest(**ident: object) -> bytes:
    return hashlib.sha256(canonical_json(ident)).digest()


_BAD = [
    {"index": 2**53},
    {"index": True},
    {"kind": 1},
    {"params": {"a": 1.5}},
    {"params": {1: 2}},
    {"outcome": {"x": [{"\xe9": 1}]}},
    {"outcome": {"x": "\ud800"}},
    {"client": "\udc00"},
    {"generator": GeneratorRef(instance="i", epoch=-(2**53), lab_mode=False)},
]


@pytest.mark.parametrize("seed", range(4))
def test_entry_and_digest_fast_paths_equal_the_general_encoding(seed: int) -> None:
    """``LogEntry.encode`` and ``request_digest`` assemble their JSON member by member; the
    bytes (or the error) must be those of ``canonical_json`` of the whole record."""
    entries = [
        *_random_entries(seed, 500),
        *(make_v1_entry(**bad) for bad in _BAD),
        # (an index of True is refused by the chain check before it reaches the encoder)
        *(make_entry(**bad) for bad in _BAD if bad.get("index") is not True),
        *(make_v3_entry(**bad) for bad in _BAD if bad.get("index") is not True),
    ]
    for e in entries:
        assert _outcome_of(e.encode) == _outcome_of(canonical_json, e.to_record())
        ident = {"kind": e.kind, "params": dict(e.params), "table_id": e.table_id,
                 "round_id": e.round_id, "session_id": e.session_id}  # fmt: skip
        assert _outcome_of(request_digest, **ident) == _outcome_of(_general_digest, **ident)
        if e.slot:  # a named slot joins the digested record
            assert _outcome_of(request_digest, **ident, slot=e.slot) == _outcome_of(
                _general_digest, **ident, slot=e.slot
            )


@pytest.mark.parametrize(
    "generator",
    [
        b'{"epoch":3,"extra":1,"instance":"ab12","lab_mode":false}',  # a member more
        b'{"epoch":3,"instance":"ab12"}',  # a member fewer
        b'{"epoch":3,"instance":"ab12","lab_mode":false,"seed":"00"}',
    ],
)
def test_the_generator_object_holds_exactly_its_three_members(generator: bytes) -> None:
    """docs/log-format.md: ``generator`` is {"instance", "epoch", "lab_mode"}. Canonical bytes
    with another member set are refused by the service's decoder and by the verifier's
    reference check alike (an auditor's verify would fail on such an entry)."""
    from rng_service.audit.verify import canonical_entry_index

    data = make_entry().encode()
    good = b'{"epoch":3,"instance":"ab12","lab_mode":false}'
    assert good in data
    edited = data.replace(good, generator)
    with pytest.raises(EntryFormatError, match="'generator'"):
        LogEntry.decode(edited)
    with pytest.raises(EntryFormatError, match="'generator'"):
        canonical_entry_index(edited)
    assert canonical_entry_index(data) == make_entry().index
