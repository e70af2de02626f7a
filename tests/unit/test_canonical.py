"""rng_service.canonical against an independent RFC 8785 implementation (the ``rfc8785``
package): random values (hypothesis), edge integers, every Unicode scalar value as text and
as an object name, lone surrogates; the strict decoder against adversarial spellings; and both
encoder paths (the cached C encoder and the public ``json.JSONEncoder`` fallback)."""

from __future__ import annotations

import ast
import enum
import json
import random
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from rng_service import canonical
from tests.jcs_oracle import EDGE_CHARS, EDGE_INTS, oracle, spell

ROOT = Path(__file__).resolve().parents[2]
MAX = 2**53 - 1
PATHS = ["c-encoder", "fallback"]

# Reproducible in CI: the same examples on every run, no example database.
CI = settings(max_examples=150, deadline=None, derandomize=True, database=None)

_TEXT = st.text(st.one_of(st.sampled_from(EDGE_CHARS), st.characters(codec="utf-8")), max_size=12)
_ASCII_TEXT = st.text(st.characters(codec="ascii"), max_size=8)
_INTS = st.one_of(st.integers(-MAX, MAX), st.sampled_from(EDGE_INTS))
_SCALARS = st.one_of(st.none(), st.booleans(), _INTS, _TEXT)


def _values(keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.recursive(
        _SCALARS,
        lambda kids: st.one_of(st.lists(kids, max_size=5), st.dictionaries(keys, kids, max_size=6)),
        max_leaves=25,
    )


_ANY_VALUE = _values(_TEXT)
_ASCII_KEYED = _values(_ASCII_TEXT)


@contextmanager
def _path(name: str) -> Iterator[None]:
    """Runs the body on the named encoder path (``fallback``: as if the private C encoder
    factory were missing or changed)."""
    if name == "c-encoder":
        assert canonical._C_ENCODE is not None, "CPython's C encoder should pass the self-test"
        yield
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(canonical, "_C_ENCODE", None)
        yield


def _outcome(fn: Any, *args: Any, **kwargs: Any) -> bytes | str:
    try:
        result: bytes = fn(*args, **kwargs)
    except ValueError:  # CanonicalJsonError and rfc8785.CanonicalizationError both are
        return "refused"
    return result


@pytest.mark.parametrize("path", PATHS)
@CI
@given(value=_ANY_VALUE)
def test_dumps_is_rfc8785(path: str, value: Any) -> None:
    with _path(path):
        assert canonical.dumps(value) == rfc8785.dumps(value)


@pytest.mark.parametrize("path", PATHS)
@CI
@given(value=_ASCII_KEYED)
def test_dumps_with_ascii_keys_is_rfc8785(path: str, value: Any) -> None:
    with _path(path):
        got = canonical.dumps(value, ascii_keys=True)
        assert got == rfc8785.dumps(value)
        assert canonical.checked_text(value).encode() == got


@pytest.mark.parametrize("path", PATHS)
def test_edge_integers(path: str) -> None:
    with _path(path):
        for n in (*EDGE_INTS, *(-n for n in EDGE_INTS)):
            assert canonical.dumps([n]) == rfc8785.dumps([n]) == f"[{n}]".encode()
            assert canonical.dumps({"n": n}, ascii_keys=True) == rfc8785.dumps({"n": n})
        for n in (MAX + 1, -(MAX + 1), 2**63, -(2**64), 10**400):
            assert _outcome(canonical.dumps, {"n": n}) == "refused"
            assert _outcome(rfc8785.dumps, {"n": n}) == "refused"


_SCALAR_VALUES = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


@pytest.mark.parametrize("path", PATHS)
def test_every_unicode_scalar_value_as_text(path: str) -> None:
    """Each of the 1,112,064 scalar values, in strings of 4,096, writes as rfc8785 writes it."""
    with _path(path):
        for start in range(0, len(_SCALAR_VALUES), 4096):
            text = "".join(map(chr, _SCALAR_VALUES[start : start + 4096]))
            assert canonical.dumps({"s": [text]}) == rfc8785.dumps({"s": [text]}), hex(start)


@pytest.mark.parametrize("path", PATHS)
def test_object_names_sort_by_utf16_code_units(path: str) -> None:
    """Every BMP scalar value and every 16th supplementary one as a one-character name, each
    with a two-character variant: UTF-16 order differs from code-point order where U+E000..
    U+FFFF meet the supplementary planes (whose surrogates D800..DFFF sort before E000)."""
    chars = [chr(c) for c in _SCALAR_VALUES if c <= 0xFFFF or c % 16 == 0]
    doc = {c: i for i, c in enumerate(chars)} | {c + "\U0001f600": 0 for c in chars[::97]}
    with _path(path):
        assert canonical.dumps(doc) == rfc8785.dumps(doc)
    assert canonical.dumps({"\ufb33": 1, "\U0001f600": 2}) == '{"\U0001f600":2,"\ufb33":1}'.encode()


@pytest.mark.parametrize("path", PATHS)
def test_lone_surrogates_are_refused(path: str) -> None:
    with _path(path):
        for code in range(0xD800, 0xE000, 7):
            for value in (
                chr(code),
                {"k": "a" + chr(code)},
                {chr(code): 1},
                ["\U0001f600", chr(code)],
            ):
                assert _outcome(canonical.dumps, value) == "refused", hex(code)
                assert _outcome(rfc8785.dumps, value) == "refused", hex(code)


class _Colour(enum.IntEnum):
    RED = 1


class _Label(str):
    pass


@pytest.mark.parametrize(
    ("value", "path"),
    [
        (1.5, "$"), (float("nan"), "$"), ({"a": [1, 0.0]}, "$.a[1]"), (b"x", "$"),
        ({"a": {1: 2}}, "$.a"), ({"a": {None: 2}}, "$.a"), ({"a": {2**53}}, "$.a"),
        ([_Colour.RED], "$[0]"), ({"k": _Label("x")}, "$.k"), ({"n": -(2**53)}, "$.n"),
    ],
)  # fmt: skip
def test_what_the_domain_does_not_hold_is_refused_with_its_path(value: Any, path: str) -> None:
    with pytest.raises(canonical.CanonicalJsonError) as e:
        canonical.dumps(value)
    assert e.value.path == path


def test_restrictions_refuse_without_changing_bytes() -> None:
    with pytest.raises(
        canonical.CanonicalJsonError, match=r"\$\.a: object key 'é' is not an ASCII"
    ):
        canonical.dumps({"a": {"é": 1}}, ascii_keys=True)
    with pytest.raises(canonical.CanonicalJsonError, match=r"\$\.a\[1\]: null is not allowed"):
        canonical.dumps({"a": [1, None]}, allow_null=False)
    doc = {"b": [1, "é"], "a": None}
    assert canonical.dumps(doc, ascii_keys=True) == canonical.dumps(doc) == rfc8785.dumps(doc)


# --- the strict decoder: canonical exactly when rfc8785 says so ---------------------------------


def _accepts(data: bytes, *, ascii_keys: bool) -> bool:
    try:
        return (
            canonical.reencode(canonical.parse(data, ascii_keys=ascii_keys), ascii_keys=ascii_keys)
            == data
        )
    except canonical.CanonicalJsonError:
        return False


@pytest.mark.parametrize("ascii_keys", [False, True], ids=["any-keys", "ascii-keys"])
@pytest.mark.parametrize("path", PATHS)
@CI
@given(value=_ANY_VALUE, seed=st.integers(0, 2**32 - 1))
def test_parse_and_reencode_accept_exactly_the_rfc8785_form(
    path: str, ascii_keys: bool, value: Any, seed: int
) -> None:
    rnd = random.Random(seed)
    with _path(path):
        for rate in (0.0, 0.02, 0.1, 0.3):
            data = spell(value, rnd, rate)
            assert _accepts(data, ascii_keys=ascii_keys) == oracle(data, ascii_keys=ascii_keys), (
                data
            )


_NAMED_SPELLINGS = [
    b'{"a":1,"b":2}', b'{"b":2,"a":1}', b'{"a":1,"a":1}', b'{"a":1, "b":2}', b' {"a":1}',
    b'{"a":1}\n', b'{"a":01}', b'{"a":-0}', b'{"a":0}', b'{"a":1e0}', b'{"a":1E2}', b'{"a":1.0}',
    b'{"a":+1}', b'{"a":9007199254740991}', b'{"a":9007199254740992}', b'{"a":NaN}',
    b'{"a":"\\u0061"}', b'{"\\u0061":1}', b'{"a":"\\/"}', b'{"a":"/"}', b'{"a":"\\u000a"}',
    b'{"a":"\\n"}', b'{"a":"\\u001F"}', b'{"a":"\\u001f"}', b'{"a":"\x7f"}', b'{"a":"\\u007f"}',
    b'{"a":"\xc3\xa9"}', b'{"a":"\\u00e9"}', b'{"a":"\xf0\x9f\x98\x80"}',
    b'{"a":"\\ud83d\\ude00"}', b'{"a":"\\ud83d"}', b'{"a":"\xed\xa0\xbd\xed\xb8\x80"}',
    b'{"a":"\xc0\xaf"}', b'\xef\xbb\xbf{"a":1}', b'{"a":[1,]}', b'{"a":true}', b'{"a":True}',
    b'{"\xc3\xa9":1}', b'{"\\u00e9":1}', b"[" * 5000 + b"]" * 5000, b'{"a":' + b"1" * 5000 + b"}",
]  # fmt: skip


@pytest.mark.parametrize("data", _NAMED_SPELLINGS, ids=range(len(_NAMED_SPELLINGS)))
@pytest.mark.parametrize("ascii_keys", [False, True], ids=["any-keys", "ascii-keys"])
def test_named_spellings(data: bytes, ascii_keys: bool) -> None:
    assert _accepts(data, ascii_keys=ascii_keys) == oracle(data, ascii_keys=ascii_keys)


def test_parse_errors_are_canonical_json_errors() -> None:
    for data in (b"\xff", b"{", b"[1.5]", b"[Infinity]", b"[9007199254740992]", b"[" * 100_000):
        with pytest.raises(canonical.CanonicalJsonError):
            canonical.parse(data)
    with pytest.raises(canonical.CanonicalJsonError, match="not ASCII"):
        canonical.parse(b'{"\\u00e9":1}', ascii_keys=True)  # ASCII bytes, escaped name


# --- the cached C encoder and its guard --------------------------------------------------------


def test_the_guard_takes_the_c_encoder_only_if_it_writes_the_public_encoders_text() -> None:
    real = json.encoder.c_make_encoder  # type: ignore[attr-defined]
    assert canonical._make_c_encoder(real) is not None

    def changed_signature(*args: object) -> object:  # e.g. a new parameter
        return real(*args, None)

    def unsorted(markers, default, enc, indent, ksep, isep, sort_keys, *rest):  # type: ignore[no-untyped-def]
        return real(markers, default, enc, indent, ksep, isep, False, *rest)

    def ascii_escapes(markers, default, enc, *rest):  # type: ignore[no-untyped-def]
        return real(markers, default, json.encoder.encode_basestring_ascii, *rest)

    def returns_bytes(*args: object) -> object:
        encode = real(*args)
        return lambda value, level: [s.encode() for s in encode(value, level)]

    for factory in (None, 42, changed_signature, unsorted, ascii_escapes, returns_bytes):
        assert canonical._make_c_encoder(factory) is None, factory


_DOC = "{'b': [1, 'x\\n\u00e9\U0001f600', {'\u00e9': -9007199254740991}], 'a': None}"


@pytest.mark.parametrize(
    "setup",
    [
        # c_make_encoder takes other arguments (its public caller, json.encoder, is changed to
        # match, so only our direct call breaks): restored after the import.
        "real = e.c_make_encoder\n"
        "def changed(*a):\n"
        "    raise TypeError('c_make_encoder() takes 10 arguments')\n"
        "e.c_make_encoder = changed\n"
        "from rng_service import canonical\n"
        "e.c_make_encoder = real\n",
        # no C accelerator at all (another Python): json's pure-Python encoder writes the text.
        "e.c_make_encoder = None\nfrom rng_service import canonical\n",
    ],
    ids=["changed-signature", "no-c-encoder"],
)
def test_a_changed_private_api_falls_back_at_import(setup: str) -> None:
    """The module still imports, uses the public encoder, and writes rfc8785's bytes."""
    code = (
        "import json.encoder as e\n"
        + setup
        + "assert canonical._C_ENCODE is None\n"
        + f"doc = {_DOC}\n"
        + "import sys; sys.stdout.buffer.write(canonical.dumps(doc))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, check=True, timeout=60
    )
    assert out.stdout == rfc8785.dumps(ast.literal_eval(_DOC))


def test_the_entries_release_1_wrote_are_rfc8785_and_keep_their_bytes() -> None:
    """The format 1 log of tests/vectors/v1_log (written by release 1): every entry is what
    rfc8785 writes for it, and this release's decoder and encoder give back the same bytes."""
    import base64

    from rng_service.log.entry import LogEntry

    lines = (ROOT / "tests" / "vectors" / "v1_log" / "export.jsonl").read_text().splitlines()
    entries = [
        base64.b64decode(json.loads(line)["entry"])
        for line in lines
        if json.loads(line).get("type") == "entry"
    ]
    assert len(entries) == 9
    for data in entries:
        assert rfc8785.dumps(json.loads(data)) == data
        value = canonical.parse(data, ascii_keys=True)
        assert canonical.reencode(value, ascii_keys=True) == data
        assert LogEntry.decode(data).encode() == data
