"""Jackpot tier draw on its own (58 Pa. Code 617b.7(g)(5)(ii)).

Owns: drawing one jackpot tier (Mini 20, Minor 100, Major 500, Grand 2,000) with the weights of
a game profile, for a jackpot decided outside a full bonus game, and its exact distribution.
The bonus game (``mega_fire_blaze``) draws its tiers with the same table in the same way.

Draw mapping (docs/outcomes.md): one ``src.weighted_index(profile jackpot weights)``, the
index into the profile's ``jackpot.tiers`` list.

Must not: use floats, ``%`` on random values, I/O, or a generator other than ``src``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from rng_service.errors import InvalidArgument
from rng_service.outcomes._common import JsonValue
from rng_service.outcomes.profiles import JACKPOT_TIERS, MegaFireBlazeProfile

if TYPE_CHECKING:
    from rng_service.sampling import RandomSource

__all__ = ["JackpotOutcome", "JackpotParams", "distribution", "draw"]


@dataclass(frozen=True, slots=True)
class JackpotParams:
    """A jackpot tier draw with the tier weights of ``profile``."""

    profile: MegaFireBlazeProfile

    def __post_init__(self) -> None:
        if not isinstance(self.profile, MegaFireBlazeProfile):
            raise InvalidArgument("profile", "must be a loaded game profile")

    def to_record(self) -> dict[str, JsonValue]:
        return {"profile": self.profile.id.to_record()}


@dataclass(frozen=True, slots=True)
class JackpotOutcome:
    """The tier drawn and its value (a multiplier of the winning wager)."""

    tier: str
    value: int

    def to_record(self) -> dict[str, JsonValue]:
        return {"tier": self.tier, "value": self.value}


def draw(src: RandomSource, params: JackpotParams) -> JackpotOutcome:
    tier = params.profile.jackpot.draw(src)
    return JackpotOutcome(tier=tier, value=JACKPOT_TIERS[tier])


def distribution(params: JackpotParams) -> dict[str, Fraction]:
    """P(tier) = weight(tier) / sum of weights."""
    return params.profile.jackpot.distribution()
