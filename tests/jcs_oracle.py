"""Test helpers for canonical JSON: an independent oracle and adversarial spellings.

``oracle(data)``: is ``data`` the RFC 8785 form of the JSON it holds, in our domain (no
floats)? Decided by the ``rfc8785`` package (an implementation of RFC 8785 that shares no code
with ``rng_service.canonical``): ``data`` is canonical exactly when it is
``rfc8785.dumps(json.loads(data))``. ``json.loads`` is only asked what value the bytes hold
(keeping the last of duplicated names, as ECMAScript's JSON.parse does); any spelling it
forgives (white space, escapes, order, duplicates, number forms) makes the bytes differ from
the canonical form.

``spell(value, rnd, rate)``: JSON text of ``value`` in which each token is spelled another way
with probability ``rate``: white space between tokens (JSON's four characters and others),
members reordered or duplicated, characters escaped (``\\uXXXX`` in either case, surrogate
pairs and lone surrogates, ``\\/``, the long form of ``\\n``), raw control characters, raw
surrogates (CESU-8 bytes), integers with a sign, leading zeros, exponents or fractions, ``-0``,
misspelled literals, a byte-order mark, trailing commas. Some spellings are still valid JSON of
the same value, some of another value, some not JSON at all; with ``rate`` 0 it is the
canonical form (for values whose keys are ASCII).
"""

from __future__ import annotations

import json
import random
from typing import Any

import rfc8785

__all__ = ["EDGE_CHARS", "EDGE_INTS", "oracle", "spell"]

MAX = 2**53 - 1
EDGE_INTS = (
    0, 1, -1, 9, 10, -10, 2**31 - 1, 2**31, -(2**31), 2**32, 2**52, 10**15 - 1, 10**15,
    -(10**15), MAX - 1, MAX, -MAX, -(MAX - 1),
)  # fmt: skip
#: Characters where an encoder's rules are easiest to get wrong.
EDGE_CHARS = (
    "\x00", "\x01", "\x07", "\b", "\t", "\n", "\x0b", "\f", "\r", "\x0e", "\x1f", " ", '"',
    "\\", "/", "'", "\x7f", "\x80", "\x9f", "\xa0", "\xe9", "\u00ff", "\u0100", "\u2028",
    "\u2029", "\ud7ff", "\ue000", "\ufb33", "\ufeff", "\ufffd", "\ufffe", "\uffff",
    "\U00010000", "\U0001f600", "\U0010ffff",
)  # fmt: skip


def _no_float(text: str) -> Any:
    raise ValueError(f"{text} is not an integer")


def oracle(data: bytes, *, ascii_keys: bool = False) -> bool:
    """True exactly when ``data`` is RFC 8785 canonical JSON of a value without floats (and,
    with ``ascii_keys``, with only ASCII object keys), as the ``rfc8785`` package writes it."""
    try:
        value = json.loads(data.decode("utf-8"), parse_float=_no_float, parse_constant=_no_float)
        canonical = rfc8785.dumps(value)
    except (ValueError, RecursionError):  # rfc8785.CanonicalizationError is a ValueError
        return False
    return canonical == data and (not ascii_keys or _keys_ascii(value))


def _keys_ascii(value: Any) -> bool:
    if isinstance(value, dict):
        return all(k.isascii() and _keys_ascii(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_keys_ascii(v) for v in value)
    return True


_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_WHITE = (" ", "\t", "\n", "\r", "  ", "\n ")
_NOT_WHITE = ("\x0b", "\xa0", "\u2028", "\x00")


class _Speller:
    def __init__(self, rnd: random.Random, rate: float, at: frozenset[int] | None = None) -> None:
        self.rnd = rnd
        self.rate = rate
        self.at = at  # the numbers of the choices to make odd (instead of ``rate``)
        self.kinds: list[str] = []  # the kind of each choice so far

    def odd(self, kind: str) -> bool:
        n = len(self.kinds)
        self.kinds.append(kind)
        if self.at is not None:
            return n in self.at
        return self.rnd.random() < self.rate

    def ws(self, where: str) -> str:
        if not self.odd("ws " + where):
            return ""
        pool = _WHITE if self.rnd.random() < 0.8 else _NOT_WHITE
        return self.rnd.choice(pool)

    def char(self, c: str) -> str:
        code = ord(c)
        if not self.odd("char"):
            if c in _SHORT:
                return _SHORT[c]
            return f"\\u{code:04x}" if code < 0x20 else c
        rnd = self.rnd
        if code > 0xFFFF:
            hi, lo = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
            return rnd.choice(
                [f"\\u{hi:04x}\\u{lo:04x}", f"\\u{hi:04X}\\u{lo:04X}", f"\\u{hi:04x}",
                 chr(hi) + chr(lo), f"\\u{code:04x}"]
            )  # fmt: skip
        options = [f"\\u{code:04x}", f"\\u{code:04X}", c]
        if c == "/":
            options.append("\\/")
        if code < 0x20:
            options.append(c)  # a raw control character: not JSON
        if c in _SHORT:
            options.append(c if c not in '"\\' else _SHORT[c] + _SHORT[c])
        return rnd.choice(options)

    def string(self, s: str) -> str:
        out = "".join(self.char(c) for c in s)
        if self.odd("string-end"):
            out = out + self.rnd.choice(["\\ud800", "\\udfff", "\ud800", "\\", "\\x41", "\\u12"])
        return '"' + out + '"'

    def integer(self, n: int) -> str:
        text = str(n)
        if not self.odd("int"):
            return text
        sign, digits = ("-", text[1:]) if n < 0 else ("", text)
        return self.rnd.choice(
            [f"{sign}0{digits}", f"+{text}", f"{text}.0", f"{text}e0", f"{text}E+0",
             f"{sign}{digits}0e-1", "-0" if n == 0 else f"{sign}{digits}.00", f"{text}.5",
             f"{sign}{int(digits) + 2**53}"]
        )  # fmt: skip

    def value(self, v: Any) -> str:
        rnd = self.rnd
        if v is True or v is False or v is None:
            word = {True: "true", False: "false", None: "null"}[v]
            if self.odd("literal"):
                return rnd.choice([word.capitalize(), word[:-1], word.upper(), '"' + word + '"'])
            return word
        if isinstance(v, int):
            return self.integer(v)
        if isinstance(v, str):
            return self.string(v)
        if isinstance(v, list):
            items = [
                self.ws("before an item") + self.value(x) + self.ws("after an item") for x in v
            ]
            if items and self.odd("array"):
                items.append(rnd.choice(items) if rnd.random() < 0.5 else "")  # repeat or ","
            return "[" + ",".join(items) + (self.ws("in []") if not items else "") + "]"
        members = [(k, v[k]) for k in sorted(v, key=lambda s: s.encode("utf-16-be"))]
        if len(members) > 1 and self.odd("order"):
            i, j = rnd.sample(range(len(members)), 2)
            members[i], members[j] = members[j], members[i]
        if members and self.odd("duplicate"):
            k, old = rnd.choice(members)
            members.insert(rnd.randrange(len(members) + 1), (k, rnd.choice([old, 0, "x", None])))
        parts = [
            self.ws("before a name")
            + self.string(k)
            + self.ws("after a name")
            + ":"
            + self.ws("before a member's value")
            + self.value(x)
            + self.ws("after a member's value")
            for k, x in members
        ]
        if parts and self.odd("trailing-comma"):
            parts.append("")  # a trailing comma
        return "{" + ",".join(parts) + (self.ws("in {}") if not parts else "") + "}"


def spell(value: Any, rnd: random.Random, rate: float = 0.0, *, odd: int = 0) -> bytes:
    """``value`` as JSON with odd spellings (see the module docstring), UTF-8 bytes; lone
    surrogates written raw become CESU-8 bytes (not UTF-8). Each token is odd with probability
    ``rate``; or, with ``odd`` > 0, exactly that many tokens chosen at random are (one odd
    token in an otherwise canonical text is what a lenient check lets through)."""
    at = None
    if odd:  # a kind of token at random (so that rare kinds are tried too), then one of them
        count = _Speller(random.Random(0), 0.0)
        _text(count, value)
        by_kind: dict[str, list[int]] = {}
        for n, kind in enumerate(count.kinds):
            by_kind.setdefault(kind, []).append(n)
        kinds = sorted(by_kind)
        at = frozenset(rnd.choice(by_kind[rnd.choice(kinds)]) for _ in range(odd))
    return _text(_Speller(rnd, rate, at), value).encode("utf-8", errors="surrogatepass")


def _text(s: _Speller, value: Any = None) -> str:
    text = s.ws("before the text") + s.value(value) + s.ws("after the text")
    if s.odd("bom"):
        text = "\ufeff" + text
    return text
