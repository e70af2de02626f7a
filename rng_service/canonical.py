"""RFC 8785 (JSON Canonicalization Scheme) canonical JSON: the one encoder and strict decoder of
the bytes this service hashes and signs (log entries, request digests, profiles, paytables)
and of the bytes the offline verifier checks.

Domain: strings, ``true``/``false``/``null``, integers of magnitude at most 2^53 - 1, arrays
and objects with string keys; never floats. In that domain RFC 8785 is: no insignificant white
space (section 3.2.1); object members sorted by the UTF-16 code units of their names
(section 3.2.3); strings with only the mandatory escapes, ``\\"``, ``\\\\``, ``\\b \\f \\n
\\r \\t`` and ``\\u00xx`` in lowercase hex for the other control characters U+0000..U+001F,
everything else (U+007F, non-ASCII, U+2028) as UTF-8 (section 3.2.2.2); integers in shortest
decimal form, which is ECMAScript's number serialisation for integers below 2^53
(section 3.2.2.3). Lone surrogates are not Unicode text and are refused (section 3.2.2.2).

Two restrictions a caller may add, neither of which changes a byte of what is encoded:
``ascii_keys`` (log entries: docs/log-format.md keeps object keys ASCII, where UTF-16 order is
byte order) and ``allow_null=False`` (profiles and paytables: TOML has no null).

Speed: a value whose keys are all ASCII is written by CPython's C JSON encoder (exactly RFC 8785
in this domain), made once through the private ``json.encoder.c_make_encoder`` if it passes a
self-test at import, else by the public ``json.JSONEncoder``, with the same bytes
(docs/performance.md; tests check both against an independent RFC 8785 implementation).

Must not: import anything from the project (it sits below every layer that encodes), perform
I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

__all__ = [
    "MAX_SAFE_INTEGER",
    "CanonicalJsonError",
    "JsonValue",
    "check",
    "checked_text",
    "dumps",
    "parse",
    "reencode",
    "string",
]

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer every JSON reader holds exactly (an IEEE 754 double's 53 bits)."""

JsonValue = Any  # str | int | bool | None | list[JsonValue] | dict[str, JsonValue]


class CanonicalJsonError(ValueError):
    """A value outside the domain, or bytes that are not strict JSON of it. ``path`` says where
    (``$`` the whole value, ``$.key``, ``$[0]``) when known."""

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.reason = message


#: ``string(s)``: the JSON string literal of ``s`` with RFC 8785's escapes (no UTF-8 check:
#: a lone surrogate passes here and fails when the text is encoded to bytes).
string: Callable[[str], str] = json.encoder.encode_basestring

_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
_UNSORTED = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)

#: A value whose every rule the C encoder must follow as the public encoder does: member order,
#: separators, each escape, raw UTF-8 text, integers, literals, empty and nested containers.
_PROBE: JsonValue = {
    "z": [1, -9007199254740991, 0, True, False, None, [], {}],
    "a": {"\x7f": '"\\\b\f\n\r\t\x00\x1f\x7f/\u00e9\u2028\U0001f600', "B": ""},
    "M": [{"y": 2, "x": [None]}],
}


def _make_c_encoder(factory: object) -> Callable[[JsonValue, int], Any] | None:
    """The C encoder ``_ENCODER`` itself uses, made once (``JSONEncoder.encode`` makes a new one
    per call); None unless ``factory`` has the signature of CPython 3.11-3.14's
    ``c_make_encoder`` and its encoder writes exactly the public encoder's text.

    No circular-reference markers: :func:`check` (or :func:`parse`) has walked every value
    before it is encoded.
    """
    if not callable(factory):
        return None
    try:
        encode = factory(None, _ENCODER.default, string, None, ":", ",", True, False, False)
        if "".join(encode(_PROBE, 0)) != _ENCODER.encode(_PROBE):
            return None
    except Exception:  # a changed private API: any failure means "do not use it"
        return None
    result: Callable[[JsonValue, int], Any] = encode
    return result


_C_ENCODE = _make_c_encoder(getattr(json.encoder, "c_make_encoder", None))


def checked_text(value: JsonValue) -> str:
    """The canonical JSON text of a value :func:`check` accepted with ``ascii_keys`` (or that
    :func:`parse` returned with ``ascii_keys``); keys need no UTF-16 ordering."""
    if _C_ENCODE is not None and type(value) is dict:
        return "".join(_C_ENCODE(value, 0))
    return _ENCODER.encode(value)


def _fail(message: str, parent: str, key: object) -> NoReturn:
    where = parent if key is None else f"{parent}[{key}]" if type(key) is int else f"{parent}.{key}"
    raise CanonicalJsonError(message, path=where)


def check(
    value: JsonValue, path: str = "$", *, ascii_keys: bool = False, allow_null: bool = True
) -> bool:
    """Raises :class:`CanonicalJsonError` unless ``value`` is in the domain (module docstring)
    and meets the restrictions asked for; returns whether some object key is not ASCII (its
    members then need the UTF-16 order, which :func:`dumps` gives).

    Iterative, since it runs on every entry on the log's write path; a child's path is only
    built when the child fails. Exact types: a ``bool`` is not an integer, an ``IntEnum`` or a
    ``str`` subclass is refused (their JSON would depend on the subclass).
    """
    if _plain(value, allow_null):
        return False
    non_ascii = False
    stack: list[tuple[Any, str, object]] = [(value, path, None)]
    pop, push = stack.pop, stack.append
    while stack:
        item, parent, key = pop()
        kind = type(item)
        if kind is str or kind is bool:
            continue
        if kind is int:
            if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                _fail(f"integer {item} outside +-(2^53-1)", parent, key)
        elif kind is dict:
            where = parent if key is None else _child(parent, key)
            for k, sub in item.items():
                if type(k) is not str or not k.isascii():
                    if ascii_keys:
                        raise CanonicalJsonError(
                            f"object key {k!r} is not an ASCII string", path=where
                        )
                    if type(k) is not str:
                        raise CanonicalJsonError(f"object key {k!r} is not a string", path=where)
                    non_ascii = True
                if type(sub) is not str:
                    push((sub, where, k))
        elif kind is list or kind is tuple:
            where = parent if key is None else _child(parent, key)
            for i, sub in enumerate(item):
                if type(sub) is not str:
                    push((sub, where, i))
        elif item is None:
            if not allow_null:
                _fail("null is not allowed here", parent, key)
        elif isinstance(item, Mapping):
            push((dict(item), parent, key))
        else:
            _fail(f"{kind.__name__} is not allowed in canonical JSON", parent, key)
    return non_ascii


def _plain(value: JsonValue, allow_null: bool) -> bool:
    """Whether :func:`check` accepts ``value`` and finds every object key ASCII: the common
    case, decided by one walk that builds no paths and pushes no scalars (the log writer
    checks every entry's params and outcome). False for anything else, including a value
    :func:`check` accepts (a ``Mapping`` that is not a ``dict``, a non-ASCII key): the full
    walk then decides, and names what is wrong."""
    stack = [value]
    pop, push = stack.pop, stack.append
    while stack:
        item = pop()
        kind = type(item)
        if kind is dict:
            for k in item:
                if type(k) is not str or not k.isascii():
                    return False
            items = item.values()
        elif kind is list or kind is tuple:
            items = item
        else:
            items = (item,)  # a scalar at the top
        for sub in items:
            kind = type(sub)
            if kind is str or kind is bool:
                continue
            if kind is int:
                if not -MAX_SAFE_INTEGER <= sub <= MAX_SAFE_INTEGER:
                    return False
            elif kind is dict or kind is list or kind is tuple:
                push(sub)
            elif sub is not None or not allow_null:
                return False
    return True


def _child(parent: str, key: object) -> str:
    return f"{parent}[{key}]" if type(key) is int else f"{parent}.{key}"


def _utf16_key(name: str) -> bytes:
    # surrogatepass: a lone surrogate sorts somewhere, then fails as UTF-8 (_utf8 says so).
    return name.encode("utf-16-be", "surrogatepass")


def _utf16_ordered(value: JsonValue) -> JsonValue:
    """A copy of a checked value with every object's members in UTF-16 code-unit order of
    their names (RFC 8785 section 3.2.3), as dicts the unsorted encoder writes in order."""
    if isinstance(value, Mapping):
        return {k: _utf16_ordered(value[k]) for k in sorted(value, key=_utf16_key)}
    if type(value) is list or type(value) is tuple:
        return [_utf16_ordered(v) for v in value]
    return value


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise CanonicalJsonError(f"string is not valid Unicode (a lone surrogate): {e}") from e


def dumps(
    value: JsonValue, path: str = "$", *, ascii_keys: bool = False, allow_null: bool = True
) -> bytes:
    """RFC 8785 canonical JSON of ``value``, UTF-8; :class:`CanonicalJsonError` for anything
    outside the domain or the restrictions (``path`` names the value in errors)."""
    if check(value, path, ascii_keys=ascii_keys, allow_null=allow_null):
        return _utf8(_UNSORTED.encode(_utf16_ordered(value)))
    return _utf8(checked_text(value))


def _reject_float(text: str) -> NoReturn:
    raise CanonicalJsonError(f"number {text} is not an integer")


def _reject_constant(text: str) -> NoReturn:
    raise CanonicalJsonError(f"{text} is not JSON")


def _safe_int(text: str) -> int:
    value = int(text)
    if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        raise CanonicalJsonError(f"integer {text} is outside +-(2^53-1)")
    return value


def _ascii_keys(obj: dict[str, Any]) -> dict[str, Any]:
    for key in obj:
        if not key.isascii():
            raise CanonicalJsonError(f"object key {key!r} is not ASCII")
    return obj


# The C scanner calls parse_float and parse_constant only for floats and NaN/Infinity, so they
# cost nothing on valid input; parse_int runs for each integer.
_DECODER = json.JSONDecoder(
    parse_float=_reject_float, parse_int=_safe_int, parse_constant=_reject_constant
)
_ASCII_KEYS_DECODER = json.JSONDecoder(
    parse_float=_reject_float,
    parse_int=_safe_int,
    parse_constant=_reject_constant,
    object_hook=_ascii_keys,
)


def parse(data: bytes, *, ascii_keys: bool = False) -> JsonValue:
    """Strictly decodes UTF-8 JSON in the domain: no floats, exponents, NaN or Infinity,
    integers within +-(2^53-1), and with ``ascii_keys`` only ASCII object keys. Raises
    :class:`CanonicalJsonError` (UTF-8 and syntax errors included).

    Parsing proves nothing about the form (white space, member order, duplicate names, which
    JSON keeps the last of, escapes): the bytes are canonical exactly when they equal
    :func:`reencode` of the value.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CanonicalJsonError(f"not UTF-8: {e}") from e
    # An object key can only be non-ASCII if the bytes are, or if it is spelled with a \\u
    # escape; the key hook (slower) runs only then.
    checked = ascii_keys and (not data.isascii() or b"\\u" in data)
    try:
        return (_ASCII_KEYS_DECODER if checked else _DECODER).decode(text)
    except CanonicalJsonError:
        raise
    except ValueError as e:  # json.JSONDecodeError, or int() of more than 4300 digits
        raise CanonicalJsonError(f"not JSON: {e}") from e
    except RecursionError as e:  # arrays or objects nested thousands deep
        raise CanonicalJsonError("not JSON: nested too deeply") from e


def reencode(value: JsonValue, *, ascii_keys: bool) -> bytes:
    """The canonical bytes of a value :func:`parse` returned with the same ``ascii_keys``:
    :func:`dumps` without the walk where ``parse`` already proved the domain."""
    if ascii_keys:
        return _utf8(checked_text(value))
    return dumps(value)
