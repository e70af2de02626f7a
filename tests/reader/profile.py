"""Game profiles as docs/outcomes.md ("Game profiles") describes them: TOML schema 1.

Only what the draws need: the weight tables, the segment rule and the payout rules, and the
identity ``(name, version, sha256)``, sha256 being SHA-256 of the document's RFC 8785 (JCS)
canonical JSON, which for this restricted value set the document spells out.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROFILE_DIR = Path(__file__).resolve().parents[2] / "rng_service" / "profiles"
BETS = ("straight_up", "split", "street", "corner", "line")


def canonical_json(value: Any) -> bytes:
    """JCS for strings, booleans, integers below 2**53, arrays and tables with ASCII keys."""

    def check(v: Any) -> None:
        if isinstance(v, (bool, str)):
            return
        if isinstance(v, int):
            if abs(v) >= 2**53:
                raise ValueError(v)
            return
        if isinstance(v, list):
            for x in v:
                check(x)
            return
        if isinstance(v, dict):
            for k, x in v.items():
                if not isinstance(k, str) or not k.isascii():
                    raise ValueError(k)
                check(x)
            return
        raise ValueError(f"not in the profile value set: {v!r}")

    check(value)
    # Python's json writes exactly the escapes the document lists (\" \\ \b \f \n \r \t,
    # other control characters as lowercase \u00xx) and, with ASCII keys, sorts as JCS does.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(frozen=True)
class Profile:
    name: str
    version: int
    sha256: str
    fire_counts: tuple[int, ...]
    fire_weights: tuple[int, ...]
    multipliers: tuple[int, ...]
    multiplier_weights: tuple[int, ...]
    segment_mode: str
    designations: tuple[str, ...]  # independent: the values; shuffled/fixed: the layout
    designation_weights: tuple[int, ...]  # independent only
    tiers: tuple[str, ...]
    tier_weights: tuple[int, ...]
    payouts: tuple[tuple[str, int, int, int, int], ...]  # bet, factor, divisor, min, max

    def identity(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "sha256": self.sha256}


def load(name: str) -> Profile:
    """A shipped profile (``rng_service/profiles/<name>.toml``, read as a data file)."""
    return parse((PROFILE_DIR / f"{name}.toml").read_bytes())


def parse(data: bytes) -> Profile:
    """A profile document (assumed valid: the reader does not re-implement validation)."""
    doc = tomllib.loads(data.decode("utf-8"))
    seg = doc["bonus"]["segments"]
    mode = seg["mode"]
    return Profile(
        name=doc["name"],
        version=doc["version"],
        sha256=hashlib.sha256(canonical_json(doc)).hexdigest(),
        fire_counts=tuple(doc["fire_numbers"]["counts"]),
        fire_weights=tuple(doc["fire_numbers"]["weights"]),
        multipliers=tuple(doc["bonus"]["multipliers"]["values"]),
        multiplier_weights=tuple(doc["bonus"]["multipliers"]["weights"]),
        segment_mode=mode,
        designations=tuple(seg["designations"] if mode == "independent" else seg["layout"]),
        designation_weights=tuple(seg["weights"]) if mode == "independent" else (),
        tiers=tuple(doc["jackpot"]["tiers"]),
        tier_weights=tuple(doc["jackpot"]["weights"]),
        payouts=tuple(
            (bet, p["factor"], p["divisor"], p["min"], p["max"])
            for bet in BETS
            for p in [doc["payout"][bet]]
        ),
    )
