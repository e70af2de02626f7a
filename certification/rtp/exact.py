"""Exact return to player of every paytable and wager, from the exact outcome distributions.

Owns: the list of what is priced (:func:`wager_specs`: game, paytable, wager and the
conditions it depends on: the wheel, the reading of ambiguous text), and the exact figures of
each (:func:`exact_rows`): RTP, house edge and variance per unit staked as fractions, and
their decimals with the standard deviation. The return distributions come from
``rng_service.settlement`` (each game's ``return_distribution``); the Mega Fire Blaze bonus
from the game profile's exact bonus distribution (``rng_service.outcomes.mega_fire_blaze``).

Mega Fire Blaze inside wagers (straight up, split, street, corner or basket, line) also carry
their returns apart (``mega_fire_blaze_returns``): the **base** game's exact return, every win
paid at the 617b.7(h) odds (29 to 1 straight up, 14 to 1 split, 9 to 1 street, 13 to 2 corner
or basket, 4 to 1 line: (m/37) x (odds + 1), 30/37 for each), the **bonus** contribution (the
total minus the base: what the bonus game of 617b.7(f)-(g) adds, net of the base payouts it
replaces on Fire Numbers) and the **total** (the RTP of the row), each an exact fraction.

JSON numbers: fractions are strings ``"p/q"`` (their terms can exceed what a JSON reader keeps
exactly); decimals are strings with 12 significant digits.

Must not: reach the service (``certification.rtp.live`` does), perform I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial
from typing import Any

from rng_service.outcomes.profiles import MegaFireBlazeProfile
from rng_service.outcomes.roulette import WheelType
from rng_service.settlement import blazing_7s, mega_fire_blaze, roulette_up, sic_bo, six_card_bonus
from rng_service.settlement.paytables import PaytableDocument
from rng_service.settlement.returns import ReturnDistribution, decimal_of

__all__ = ["GAME_TITLES", "WagerSpec", "exact_rows", "fraction_json", "wager_specs"]

GAME_TITLES: Mapping[str, str] = {
    "roulette_up": "Roulette Up (617b.4)",
    "blazing_7s": "Blazing 7's (617c.2)",
    "sic_bo": "Sic Bo (625a)",
    "mega_fire_blaze": "Mega Fire Blaze Roulette (617b.7)",
    "six_card_bonus": "Six Card Bonus (641a.12(h), 643a.12(g))",
}


@dataclass(frozen=True)
class WagerSpec:
    """One priced wager: game, paytable id, wager name, the conditions its return depends on
    (``wheel``, ``reading``), whether those are the project's decided reading, and how to
    compute its exact return distribution."""

    game: str
    paytable: str
    wager: str
    conditions: Mapping[str, str]
    decided: bool
    distribution: Callable[[], ReturnDistribution] = field(compare=False, repr=False)
    #: Mega Fire Blaze inside wagers: the base game's exact return (617b.7(h) odds only).
    base_return: Fraction | None = field(default=None, compare=False)

    @property
    def key(self) -> str:
        """A stable name: ``game/paytable/wager`` plus the conditions."""
        extra = "".join(f"/{k}={v}" for k, v in sorted(self.conditions.items()))
        return f"{self.game}/{self.paytable}/{self.wager}{extra}"


def wager_specs(
    paytables: Mapping[str, PaytableDocument], profile: MegaFireBlazeProfile
) -> list[WagerSpec]:
    """Every (game, paytable, wager, conditions) priced, in report order."""
    specs: list[WagerSpec] = []
    for table_id, pt in paytables["roulette_up"].paytables.items():
        for wheel in roulette_up.WHEELS:
            for reading in roulette_up.READINGS:
                specs.append(
                    WagerSpec(
                        "roulette_up", table_id, "roulette_up",
                        {"wheel": wheel.value, "reading": reading},
                        reading == roulette_up.COUNTS,
                        partial(roulette_up.return_distribution, pt, wheel, reading),
                    )
                )  # fmt: skip
    for table_id, pt in paytables["blazing_7s"].paytables.items():
        for wheel in blazing_7s.WHEELS:
            specs.append(
                WagerSpec(
                    "blazing_7s", table_id, "blazing_7s", {"wheel": wheel.value}, True,
                    partial(blazing_7s.return_distribution, pt, wheel),
                )
            )  # fmt: skip
    for table_id, pt in paytables["sic_bo"].paytables.items():
        for wager in sic_bo.representative_wagers():
            readings = sic_bo.READINGS if wager.kind == "two_of_a_kind" else (sic_bo.AT_LEAST_TWO,)
            for reading in readings:
                conditions = {"reading": reading} if wager.kind == "two_of_a_kind" else {}
                specs.append(
                    WagerSpec(
                        "sic_bo", table_id, wager.name, conditions, reading == sic_bo.AT_LEAST_TWO,
                        partial(sic_bo.return_distribution, pt, wager, reading),
                    )
                )  # fmt: skip
    for table_id, pt in paytables["mega_fire_blaze"].paytables.items():
        for mwager in mega_fire_blaze.representative_wagers():
            conditions = (
                {"profile": f"{profile.id.name}@{profile.id.version}"} if mwager.inside else {}
            )
            base = (
                Fraction(len(mwager.numbers), len(mega_fire_blaze.NUMBERS)) * pt.returns(mwager.bet)
                if mwager.inside
                else None
            )
            specs.append(
                WagerSpec(
                    "mega_fire_blaze", table_id, mwager.name, conditions, True,
                    partial(mega_fire_blaze.return_distribution, pt, profile, mwager), base,
                )
            )  # fmt: skip
    for table_id, pt in paytables["six_card_bonus"].paytables.items():
        specs.append(
            WagerSpec(
                "six_card_bonus", table_id, "six_card_bonus", {}, True,
                partial(six_card_bonus.return_distribution, pt),
            )
        )  # fmt: skip
    return specs


def fraction_json(value: Fraction) -> dict[str, str]:
    """``{"fraction": "p/q", "decimal": "0.972222222222"}``."""
    return {
        "fraction": f"{value.numerator}/{value.denominator}",
        "decimal": str(decimal_of(value, 12)),
    }


#: A payout that makes up at least this share of a wager's variance ...
VARIANCE_SHARE = Fraction(1, 100)
#: ... must be expected at least this often in N rounds for the normal interval to be judged.
EXPECTED_COUNT = 5


def rounds_for_normal_interval(dist: ReturnDistribution) -> int:
    """Rounds N from which the measured mean's normal interval is taken as meaningful: every
    return making up at least :data:`VARIANCE_SHARE` of the variance is expected at least
    :data:`EXPECTED_COUNT` times (the rule of thumb of a count's normal approximation). Below
    it the rare top payouts decide the sample mean, and its interval is not judged."""
    variance, mean = dist.variance, dist.rtp
    if variance == 0:
        return 1
    needed = 1
    for value, p in dist.probabilities.items():
        if (value - mean) ** 2 * p >= VARIANCE_SHARE * variance:
            needed = max(needed, math.ceil(EXPECTED_COUNT / p))
    return needed


def exact_row(spec: WagerSpec) -> dict[str, Any]:
    """The exact figures of one wager, as JSON values."""
    dist = spec.distribution()
    row = {
        "key": spec.key,
        "game": spec.game,
        "paytable": spec.paytable,
        "wager": spec.wager,
        "conditions": dict(spec.conditions),
        "decided": spec.decided,
        "rtp": fraction_json(dist.rtp),
        "house_edge": fraction_json(dist.house_edge),
        "variance": fraction_json(dist.variance),
        "standard_deviation": str(
            dist.standard_deviation.quantize(decimal_of(Fraction(1, 10**10)))
        ),
        "win_probability": fraction_json(dist.win_probability),
        "rounds_for_interval": rounds_for_normal_interval(dist),
    }
    if spec.base_return is not None:
        row["mega_fire_blaze_returns"] = {
            "base": fraction_json(spec.base_return),
            "bonus": fraction_json(dist.rtp - spec.base_return),
            "total": fraction_json(dist.rtp),
            "base_paytable": "617b.7(h)",
        }
    return row


def exact_rows(specs: list[WagerSpec]) -> list[dict[str, Any]]:
    return [exact_row(s) for s in specs]


def wheel_of(spec: WagerSpec) -> WheelType | None:
    value = spec.conditions.get("wheel")
    return WheelType(value) if value else None
