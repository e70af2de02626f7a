"""Versioned game profiles: the weighted distributions the regulations leave to the operator.

Owns: the TOML profile format (schema 1) for Mega Fire Blaze Roulette (58 Pa. Code 617b.7):
the Fire Number count weights (617b.7(e)), the random multiplier weights (617b.7(g)(7)), how
segments are designated with a special multiplier or a jackpot (617b.7(g)(2), (8)), the jackpot
tier weights (617b.7(g)(5)(ii)) and how the bonus total maps to payout odds per bet type within
the ranges of 617b.7(g)(9); validation of every value against the regulation's allowed sets;
the canonical form and SHA-256 identity of a profile; loading the profiles shipped as package
data under ``rng_service/profiles/``.

Canonical form: the parsed TOML document as RFC 8785 (JCS) canonical JSON, UTF-8
(:mod:`rng_service.canonical`, the encoder of log entries too). Profiles may hold only strings,
booleans, integers of magnitude below 2**53, arrays and tables (no floats, no dates, no null),
so JCS reduces to: object members sorted by the UTF-16 code units of their names (names may
be non-ASCII), no insignificant white space, integers in shortest decimal form, strings with
only ``"``, ``\\`` and control characters escaped (``\\b \\f \\n \\r \\t``, else
``\\u00xx``). The profile's
identity is ``(name, version, sha256)`` with sha256 the lower-case hex SHA-256 of those bytes;
comments and formatting of the TOML file therefore do not change it.

Must not: draw random values, import grpc/database/prometheus modules. The only I/O is reading
a profile file or package resource when asked to.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from rng_service import canonical
from rng_service.errors import InvalidArgument
from rng_service.outcomes._common import JsonValue, allowed_list

if TYPE_CHECKING:
    from rng_service.sampling import RandomSource

__all__ = [
    "BASE_ODDS",
    "BET_NUMBERS",
    "BET_TYPES",
    "FIRE_NUMBER_COUNTS",
    "JACKPOT_TIERS",
    "PAYOUT_RANGES",
    "RANDOM_MULTIPLIERS",
    "SCHEMA_VERSION",
    "SEGMENT_DESIGNATIONS",
    "SEGMENT_MODES",
    "DocumentReader",
    "MegaFireBlazeProfile",
    "PayoutRule",
    "ProfileId",
    "SegmentRule",
    "WeightTable",
    "builtin_profile_names",
    "canonical_json",
    "document_identity",
    "load_builtin_profile",
    "load_profile_file",
    "parse_canonical_json",
    "parse_profile",
    "parse_toml_document",
    "profile_from_document",
    "shipped_names",
]

V = TypeVar("V", int, str)

SCHEMA_VERSION = 1

#: 617b.7(e): the random number generator selects 1, 2, 3, 4, 5 or 10 Fire Numbers.
FIRE_NUMBER_COUNTS: tuple[int, ...] = (1, 2, 3, 4, 5, 10)
#: 617b.7(g)(7): potential random multipliers.
RANDOM_MULTIPLIERS: tuple[int, ...] = (1, 2, 3, 4, 5, 10, 15, 50)
#: 617b.7(g)(2), (8): a segment carries a special multiplier of 2, 3 or 5, or a jackpot.
SEGMENT_DESIGNATIONS: Mapping[str, int | None] = {"x2": 2, "x3": 3, "x5": 5, "jackpot": None}
#: 617b.7(g)(5)(ii): jackpot tiers and their values (added to the total, not multiplied).
JACKPOT_TIERS: Mapping[str, int] = {"mini": 20, "minor": 100, "major": 500, "grand": 2000}
#: How segment designations are decided (a choice 617b.7(g)(2) leaves open):
#: ``independent``: each segment, in index order, draws a designation from weights;
#: ``shuffled``: a fixed multiset of six designations is permuted uniformly (one shuffle);
#: ``fixed``: the designations are the profile's layout, no draw.
SEGMENT_MODES: tuple[str, ...] = ("independent", "shuffled", "fixed")
#: 617b.7(g)(9): bonus payout ranges, odds "to 1", per qualifying inside bet.
PAYOUT_RANGES: Mapping[str, tuple[int, int]] = {
    "straight_up": (29, 5999),
    "split": (29, 2999),
    "street": (29, 1999),
    "corner": (29, 1499),
    "line": (29, 999),
}
BET_TYPES: tuple[str, ...] = tuple(PAYOUT_RANGES)
#: Numbers a bet covers (617a.3(e)(1)-(6); a basket on a single zero wheel covers 4, 617b.7(d)).
BET_NUMBERS: Mapping[str, int] = {
    "straight_up": 1,
    "split": 2,
    "street": 3,
    "corner": 4,
    "line": 6,
}
#: 617b.7(h): odds of a winning inside bet not subject to the bonus, as (numerator,
#: denominator) "to 1" (corner 13 to 2).
BASE_ODDS: Mapping[str, Fraction] = {
    "straight_up": Fraction(29),
    "split": Fraction(14),
    "street": Fraction(9),
    "corner": Fraction(13, 2),
    "line": Fraction(4),
}

_MAX_JSON_INT = canonical.MAX_SAFE_INTEGER
_MAX_WEIGHT = 2**32


_DOCUMENT_VALUES = "string, boolean, integer of magnitude below 2**53, array, table"


def canonical_json(value: object, *, where: str = "profile") -> bytes:
    """RFC 8785 canonical JSON (:mod:`rng_service.canonical`) of a value made of str, bool,
    int, list and str-keyed dict; anything else is :class:`InvalidArgument` naming the key."""
    try:
        return canonical.dumps(value, where, allow_null=False)
    except canonical.CanonicalJsonError as e:
        raise InvalidArgument(e.path or where, e.reason, allowed=_DOCUMENT_VALUES) from e


@dataclass(frozen=True, slots=True)
class ProfileId:
    """A profile's identity: name, version and SHA-256 (hex) of its canonical form."""

    name: str
    version: int
    sha256: str

    def to_record(self) -> dict[str, JsonValue]:
        return {"name": self.name, "version": self.version, "sha256": self.sha256}


@dataclass(frozen=True, slots=True)
class WeightTable(Generic[V]):
    """Values with positive integer weights: ``P(values[i]) = weights[i] / sum(weights)``."""

    values: tuple[V, ...]
    weights: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.values or len(self.values) != len(self.weights):
            raise InvalidArgument("weights", "need one positive weight per value")
        if len(set(self.values)) != len(self.values):
            raise InvalidArgument("values", "values must be distinct")
        for w in self.weights:
            if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= _MAX_WEIGHT:
                raise InvalidArgument("weights", f"bad weight {w!r}", allowed=f"1..{_MAX_WEIGHT}")

    @property
    def total(self) -> int:
        return sum(self.weights)

    def draw(self, src: RandomSource) -> V:
        """One ``src.weighted_index(weights)`` call."""
        return self.values[src.weighted_index(self.weights)]

    def distribution(self) -> dict[V, Fraction]:
        total = self.total
        return {v: Fraction(w, total) for v, w in zip(self.values, self.weights, strict=True)}

    def to_record(self) -> dict[str, JsonValue]:
        return {"values": list(self.values), "weights": list(self.weights)}


@dataclass(frozen=True, slots=True)
class SegmentRule:
    """How the six segments get their designations (see ``SEGMENT_MODES``)."""

    mode: str
    weights: WeightTable[str] | None = None
    layout: tuple[str, ...] = ()

    def independent_weights(self) -> WeightTable[str]:
        """The designation weights of mode ``independent`` (which a profile must give)."""
        if self.weights is None:
            raise InvalidArgument(
                "segments.weights", f"mode {self.mode!r} has no designation weights"
            )
        return self.weights


@dataclass(frozen=True, slots=True)
class PayoutRule:
    """Bonus odds for one bet type: ``clamp(floor(total * factor / divisor), min, max)`` to 1."""

    bet: str
    factor: int
    divisor: int
    min_odds: int
    max_odds: int

    def odds(self, total: int) -> int:
        raw = total * self.factor // self.divisor
        return max(self.min_odds, min(self.max_odds, raw))


@dataclass(frozen=True, slots=True)
class MegaFireBlazeProfile:
    """A validated Mega Fire Blaze Roulette profile (617b.7)."""

    id: ProfileId
    example: bool
    description: str
    fire_counts: WeightTable[int]
    multipliers: WeightTable[int]
    segments: SegmentRule
    jackpot: WeightTable[str]
    payouts: tuple[PayoutRule, ...]
    #: The canonical JSON bytes (RFC 8785) whose SHA-256 is ``id.sha256``.
    canonical: bytes = field(default=b"", repr=False, compare=False)

    def payout(self, bet: str) -> PayoutRule:
        for rule in self.payouts:
            if rule.bet == bet:
                return rule
        raise InvalidArgument("bet", f"unknown bet type {bet!r}", allowed=allowed_list(BET_TYPES))


class DocumentReader:
    """Strict access to a parsed TOML document, naming file and key in every error."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, message: str, allowed: str = "") -> InvalidArgument:
        return InvalidArgument(f"{self.source}:{key}", message, allowed=allowed)

    def table(
        self, doc: Mapping[str, object], key: str, known: Sequence[str]
    ) -> Mapping[str, object]:
        value = self._get(doc, key, f"a table with keys {allowed_list(known)}")
        if not isinstance(value, Mapping):
            raise self.fail(key, "must be a table")
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise self.fail(f"{key}.{unknown[0]}", "unknown key", allowed=allowed_list(known))
        return value

    def _get(self, doc: Mapping[str, object], key: str, expected: str) -> object:
        """The value at dotted ``key``; missing: an error saying what is ``expected`` there."""
        node: object = doc
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                raise self.fail(key, f"missing (expected: {expected})")
            node = node[part]
        return node

    def integer(self, doc: Mapping[str, object], key: str, low: int, high: int) -> int:
        expected = f"the integer {low}" if low == high else f"an integer {low}..{high}"
        value = self._get(doc, key, expected)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.fail(key, f"bad value {value!r}", allowed=expected)
        return value

    def string(
        self, doc: Mapping[str, object], key: str, allowed: Sequence[str] | None = None
    ) -> str:
        value = self._get(doc, key, allowed_list(allowed or ("a string",)))
        if not isinstance(value, str) or (allowed is not None and value not in allowed):
            raise self.fail(
                key, f"bad value {value!r}", allowed=allowed_list(allowed or ("a string",))
            )
        return value

    def boolean(self, doc: Mapping[str, object], key: str) -> bool:
        value = self._get(doc, key, "true, false")
        if not isinstance(value, bool):
            raise self.fail(key, f"bad value {value!r}", allowed="true, false")
        return value

    def weights(
        self, doc: Mapping[str, object], key: str, values_key: str, allowed: Sequence[V]
    ) -> WeightTable[V]:
        values = self._get(doc, f"{key}.{values_key}", f"an array of {allowed_list(allowed)}")
        weights = self._get(doc, f"{key}.weights", f"an array of integers 1..{_MAX_WEIGHT}")
        if not isinstance(values, list) or not values:
            raise self.fail(
                f"{key}.{values_key}", "must be a non-empty array", allowed=allowed_list(allowed)
            )
        for v in values:
            if isinstance(v, bool) or v not in allowed:
                raise self.fail(
                    f"{key}.{values_key}", f"value {v!r} not allowed", allowed=allowed_list(allowed)
                )
        if len(set(values)) != len(values):
            raise self.fail(
                f"{key}.{values_key}", "values must be distinct", allowed=allowed_list(allowed)
            )
        if not isinstance(weights, list) or len(weights) != len(values):
            raise self.fail(f"{key}.weights", f"need exactly {len(values)} weights, one per value")
        for w in weights:
            if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= _MAX_WEIGHT:
                raise self.fail(
                    f"{key}.weights",
                    f"weight {w!r} not allowed",
                    allowed=f"integers 1..{_MAX_WEIGHT}",
                )
        return WeightTable(tuple(values), tuple(weights))


_TOP_KEYS = (
    "schema",
    "name",
    "version",
    "game",
    "example",
    "description",
    "fire_numbers",
    "bonus",
    "jackpot",
    "payout",
)


def parse_toml_document(data: bytes, source: str) -> tuple[dict[str, object], bytes]:
    """A TOML document (profile or paytable) and its canonical JSON bytes; errors name
    ``source``. The canonical bytes are what a document's SHA-256 identity is taken over."""
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise InvalidArgument(source, f"not a valid UTF-8 TOML document: {e}") from e
    return doc, canonical_json(doc, where=source)


def document_identity(
    r: DocumentReader, doc: Mapping[str, object], canonical: bytes
) -> tuple[ProfileId, bool, str]:
    """The common head of every document: ``schema = 1``, ``name``, ``version``, ``example``
    and ``description``; returns (identity, example, description)."""
    r.integer(doc, "schema", SCHEMA_VERSION, SCHEMA_VERSION)
    name = r.string(doc, "name")
    if not name or not all(c.isascii() and (c.isalnum() or c in "_-.") for c in name):
        raise r.fail("name", f"bad name {name!r}", allowed="ASCII letters, digits, _ - .")
    version = r.integer(doc, "version", 1, _MAX_JSON_INT)
    example = r.boolean(doc, "example")
    description = r.string(doc, "description")
    ident = ProfileId(name=name, version=version, sha256=hashlib.sha256(canonical).hexdigest())
    return ident, example, description


def parse_canonical_json(data: bytes, source: str) -> tuple[dict[str, object], bytes]:
    """A document given as its canonical JSON bytes (what ``GetProfile`` returns), parsed; it
    is refused unless encoding it again gives the same bytes, so its SHA-256 is its identity."""
    try:
        doc = canonical.parse(data)
    except canonical.CanonicalJsonError as e:
        raise InvalidArgument(source, f"not a JSON document: {e}", allowed="canonical JSON") from e
    if not isinstance(doc, dict):
        raise InvalidArgument(source, "not a JSON object", allowed="canonical JSON object")
    if canonical_json(doc, where=source) != data:
        raise InvalidArgument(source, "not in canonical form", allowed="RFC 8785 canonical JSON")
    return doc, data


def parse_profile(data: bytes, source: str) -> MegaFireBlazeProfile:
    """Parse and validate a profile file (TOML); ``source`` (a file name) is named in every
    error."""
    doc, canonical = parse_toml_document(data, source)
    return profile_from_document(doc, canonical, source)


def profile_from_document(
    doc: Mapping[str, object], canonical: bytes, source: str
) -> MegaFireBlazeProfile:
    """Validate a parsed profile document whose canonical bytes are ``canonical``."""
    r = DocumentReader(source)
    unknown = sorted(set(doc) - set(_TOP_KEYS))
    if unknown:
        raise r.fail(unknown[0], "unknown key", allowed=allowed_list(_TOP_KEYS))
    ident, example, description = document_identity(r, doc, canonical)
    r.string(doc, "game", ("mega_fire_blaze",))

    r.table(doc, "fire_numbers", ("counts", "weights"))
    fire_counts = r.weights(doc, "fire_numbers", "counts", FIRE_NUMBER_COUNTS)

    r.table(doc, "bonus", ("multipliers", "segments"))
    r.table(doc, "bonus.multipliers", ("values", "weights"))
    multipliers = r.weights(doc, "bonus.multipliers", "values", RANDOM_MULTIPLIERS)
    segments = _segments(r, doc)

    r.table(doc, "jackpot", ("tiers", "weights"))
    jackpot = r.weights(doc, "jackpot", "tiers", tuple(JACKPOT_TIERS))
    if set(jackpot.values) != set(JACKPOT_TIERS):
        raise r.fail(
            "jackpot.tiers", "every tier must be possible", allowed=allowed_list(JACKPOT_TIERS)
        )

    r.table(doc, "payout", BET_TYPES)
    payouts = []
    for bet in BET_TYPES:
        key = f"payout.{bet}"
        r.table(doc, key, ("factor", "divisor", "min", "max"))
        low, high = PAYOUT_RANGES[bet]
        min_odds = r.integer(doc, f"{key}.min", low, high)
        max_odds = r.integer(doc, f"{key}.max", min_odds, high)
        payouts.append(
            PayoutRule(
                bet=bet,
                factor=r.integer(doc, f"{key}.factor", 1, 1_000_000),
                divisor=r.integer(doc, f"{key}.divisor", 1, 1_000_000),
                min_odds=min_odds,
                max_odds=max_odds,
            )
        )
    return MegaFireBlazeProfile(
        id=ident,
        example=example,
        description=description,
        fire_counts=fire_counts,
        multipliers=multipliers,
        segments=segments,
        jackpot=jackpot,
        payouts=tuple(payouts),
        canonical=canonical,
    )


def _segments(r: DocumentReader, doc: Mapping[str, object]) -> SegmentRule:
    key = "bonus.segments"
    seg = r.table(doc, key, ("mode", "designations", "weights", "layout"))
    mode = r.string(doc, f"{key}.mode", SEGMENT_MODES)
    designations = tuple(SEGMENT_DESIGNATIONS)
    if mode == "independent":
        if "layout" in seg:
            raise r.fail(
                f"{key}.layout", "not used in mode independent", allowed="designations, weights"
            )
        return SegmentRule(mode=mode, weights=r.weights(doc, key, "designations", designations))
    if "designations" in seg or "weights" in seg:
        raise r.fail(f"{key}.weights", f"not used in mode {mode}", allowed="layout")
    layout = seg.get("layout")
    if not isinstance(layout, list) or len(layout) != 6:
        raise r.fail(
            f"{key}.layout", "must list six designations", allowed=allowed_list(designations)
        )
    for d in layout:
        if d not in designations:
            raise r.fail(
                f"{key}.layout",
                f"designation {d!r} not allowed",
                allowed=allowed_list(designations),
            )
    return SegmentRule(mode=mode, layout=tuple(layout))


def load_profile_file(path: str | Path) -> MegaFireBlazeProfile:
    """Read and validate a profile file."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise InvalidArgument(str(p), f"cannot read profile: {e.strerror}") from e
    return parse_profile(data, p.name)


def shipped_names(folder: str) -> list[str]:
    """Names (file names without ``.toml``) of the documents shipped as package data in
    ``rng_service/<folder>/``."""
    files = resources.files("rng_service").joinpath(folder)
    return sorted(f.name[:-5] for f in files.iterdir() if f.name.endswith(".toml"))


def builtin_profile_names() -> list[str]:
    """Names of the profiles shipped as package data (``rng_service/profiles/*.toml``)."""
    return shipped_names("profiles")


def load_builtin_profile(name: str) -> MegaFireBlazeProfile:
    """Load a shipped profile by name; its ``name`` key must match the file name."""
    names = builtin_profile_names()
    if name not in names:
        raise InvalidArgument("profile", f"unknown profile {name!r}", allowed=allowed_list(names))
    resource = resources.files("rng_service").joinpath("profiles", f"{name}.toml")
    profile = parse_profile(resource.read_bytes(), f"{name}.toml")
    if profile.id.name != name:
        raise InvalidArgument(
            f"{name}.toml:name", f"name {profile.id.name!r} differs from file", allowed=name
        )
    return profile
