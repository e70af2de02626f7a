"""Measured return to player: rounds played through a live service, settled by the paytables.

Owns: how each game's rounds are drawn through the service (a lab client; docs/security.md,
"Roles"), settling every priced wager on the same rounds, the measured RTP with its 99 %
confidence interval, and which log entries the rounds came from.

How the rounds are drawn (one fresh round id per call, so it works with or without the
per-round slots of the log; request ids ``<run>-<game>-...``, so a rerun with the same run id
replays the logged outcomes instead of drawing new ones):

* **Sic Bo**: ``DrawBatch`` dice (3 dice of 6 sides), up to 100,000 rolls a call; one roll is
  one round of every wager.
* **Roulette Up**: ``DrawBatch`` spins of the wheel; the spins are cut into consecutive
  streaks (617b.4(f): a new streak starts at the first spin after the last one ended), one
  streak per round, settled under both readings of the 36 (both end on the same spin).
* **Blazing 7's**: ``DrawBatch`` base spins; for each spin on 7, 17 or 27 one
  ``DrawMultiBall`` of three balls (its own round id).
* **Mega Fire Blaze**: per round one ``SelectFireNumbers`` under the service's profile (the
  count is never the client's), then the round's ``SpinRoulette`` on a single zero wheel (the
  service plays the bonus game only after a spin of its round on one of its Fire Numbers:
  docs/outcomes-api.md, "Rounds and slots"), and, when a priced inside wager wins on a Fire
  Number, one ``PlayMegaFireBlazeBonus`` for the round.
* **Six Card Bonus**: per round one ``ShuffleCards`` with the plan
  ``four_card_poker_six_card_bonus`` and one player, whose five cards and the bonus card are
  the six.

Every outcome is read from the receipt's canonical entry (what the log holds). The interval
is mean +- z * sigma / sqrt(N), sigma the wager's exact standard deviation (the sample's
understates it until the rare top payouts have come up), z = 2.5758 for 99 %: the normal
approximation of the mean, so a wager whose return is dominated by rare payouts needs many
rounds for it to hold; a family check with Bonferroni's z (99 % for all the judged wagers
together) decides the verdict (``certification.rtp.build``).

Must not: settle anything itself (``rng_service.settlement`` does), or contact a non-loopback
address without mTLS.
"""

from __future__ import annotations

import ipaddress
import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import product
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from scipy.stats import norm

from certification.rtp.exact import WagerSpec
from rng_service.outcomes import cards
from rng_service.outcomes.profiles import MegaFireBlazeProfile
from rng_service.outcomes.roulette import WheelType
from rng_service.settlement import blazing_7s, mega_fire_blaze, roulette_up, sic_bo, six_card_bonus
from rng_service.settlement.paytables import PaytableDocument

__all__ = [
    "LIVE_GAMES",
    "MAX_BATCH",
    "Z99",
    "GameRounds",
    "LiveError",
    "index_ranges",
    "interval",
    "play",
    "summarise_indexes",
]

Z99 = float(norm.ppf(0.995))
MAX_BATCH = 100_000
#: Games ``--live`` plays, and the wheels it plays each on (``DrawBatch`` draws single zero and
#: double zero wheels; Mega Fire Blaze is single zero only, 617b.7(a)).
LIVE_GAMES: Mapping[str, tuple[WheelType | None, ...]] = {
    "roulette_up": (WheelType.SINGLE_ZERO, WheelType.DOUBLE_ZERO),
    "blazing_7s": blazing_7s.WHEELS,
    "sic_bo": (None,),
    "mega_fire_blaze": (None,),
    "six_card_bonus": (None,),
}
SIX_CARD_PLAN = "four_card_poker_six_card_bonus"
#: Single-outcome calls in flight at once (a Python client saturates before the service).
IN_FLIGHT = 8
_T = TypeVar("_T")


class LiveError(Exception):
    """The service refused or failed, or the time limit ran out: the message says which."""


@dataclass
class GameRounds:
    """The rounds of one game (and wheel): each priced wager's returns per round, and the log
    indexes of the entries they were drawn from."""

    game: str
    wheel: str | None
    rounds: int
    returns: dict[str, npt.NDArray[np.float64]] = field(default_factory=dict)
    indexes: list[int] = field(default_factory=list)
    #: Mega Fire Blaze inside wagers: each round's base game return (617b.7(h) odds only).
    base_returns: dict[str, npt.NDArray[np.float64]] = field(default_factory=dict)
    seconds: float = 0.0
    #: The receipt of the entry with the highest index: its checkpoint covers every entry the
    #: rounds came from (None when no entry was drawn).
    last_receipt: Any = None


@dataclass
class _Context:
    client: Any
    run: str
    table_id: str
    deadline: float
    clock: Callable[[], float]
    indexes: list[int] = field(default_factory=list)
    last_receipt: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ids(self, name: str) -> dict[str, str]:
        rid = f"{self.run}-{name}"
        return {"table_id": self.table_id, "round_id": rid, "request_id": rid}

    def entry(self, result: Any) -> dict[str, Any]:
        """The logged entry of a call's receipt; its index is noted."""
        if self.clock() > self.deadline:
            raise LiveError("the time limit ran out before every round was played")
        with self._lock:
            index = int(result.receipt.index)
            self.indexes.append(index)
            if self.last_receipt is None or index > self.last_receipt.index:
                self.last_receipt = result.receipt
        entry = json.loads(result.receipt.entry)
        if not isinstance(entry, dict):
            raise LiveError("the service returned a receipt whose entry is not a JSON object")
        return entry

    def map(self, fn: Callable[[int], _T], items: Iterable[int]) -> Iterator[_T]:
        """``fn`` over ``items`` with up to :data:`IN_FLIGHT` calls to the service at once (one
        round's calls stay in order inside ``fn``); results in the order of ``items``."""
        with ThreadPoolExecutor(max_workers=IN_FLIGHT, thread_name_prefix="rtp") as pool:
            pending: deque[Future[_T]] = deque()
            for item in items:
                pending.append(pool.submit(fn, item))
                if len(pending) >= 4 * IN_FLIGHT:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()

    def batch(self, name: str, count: int, **kind: Any) -> list[Any]:
        """``count`` outcomes (spins, or rolls of ``dice``) in ``DrawBatch`` calls of at most
        :data:`MAX_BATCH`; the values flat (a roll's faces one after the other)."""
        values: list[Any] = []
        drawn = part = 0
        while drawn < count:
            n = min(MAX_BATCH, count - drawn)
            result = self.client.batch(count=n, **kind, **self.ids(f"{name}-b{part}"))
            outcome = self.entry(result)["outcome"]
            values += outcome["faces"] if "faces" in outcome else outcome["numbers"]
            drawn += n
            part += 1
        return values


def _wheel_value(spec: WagerSpec) -> str | None:
    return spec.conditions.get("wheel")


def _sic_bo(
    ctx: _Context, doc: PaytableDocument, specs: Sequence[WagerSpec], rounds: int
) -> dict[str, Any]:
    faces = np.asarray(ctx.batch("sic_bo", rounds, dice=(3, 6)), dtype=np.int64)
    rolls = faces.reshape(rounds, 3)
    index = (rolls[:, 0] - 1) * 36 + (rolls[:, 1] - 1) * 6 + (rolls[:, 2] - 1)
    out = {}
    for spec in specs:
        paytable = doc.table(spec.paytable)
        wager = sic_bo.Wager.parse(spec.wager)
        reading = spec.conditions.get("reading", sic_bo.AT_LEAST_TWO)
        # Every one of the 216 ordered rolls settled once by the settlement function.
        table = np.array(
            [
                float(sic_bo.settle(paytable, r, wager, reading))
                for r in product(range(1, 7), repeat=3)
            ]
        )
        out[spec.key] = table[index]
    return out


def _roulette_up(
    ctx: _Context, doc: PaytableDocument, specs: Sequence[WagerSpec], rounds: int, wheel: WheelType
) -> dict[str, Any]:
    longest = max(pt.longest_streak for pt in doc.paytables.values())
    numbers: list[str] = []
    pos = 0
    part = 0
    lengths: dict[str, list[int]] = {r: [] for r in roulette_up.READINGS}
    while len(lengths[roulette_up.COUNTS]) < rounds:
        if len(numbers) - pos < longest:
            want = max(longest, min(MAX_BATCH, 3 * (rounds - len(lengths[roulette_up.COUNTS]))))
            numbers = numbers[pos:] + ctx.batch(
                f"roulette_up-{wheel.value}-{part}", want, wheel=wheel.value
            )
            pos = 0
            part += 1
        window = numbers[pos : pos + longest]
        ends = {
            r: roulette_up.streak(window, wheel=wheel, longest=longest, reading=r)
            for r in roulette_up.READINGS
        }
        used = {s.spins_used for s in ends.values() if s is not None}
        if len(used) != 1 or None in ends.values():
            raise LiveError("the readings of Roulette Up disagree on where a streak ends")
        for r, s in ends.items():
            assert s is not None
            lengths[r].append(s.length)
        pos += used.pop()
    out = {}
    for spec in specs:
        if _wheel_value(spec) != wheel.value:
            continue
        paytable = doc.table(spec.paytable)
        reading = spec.conditions["reading"]
        pays = {
            k: float(paytable.returns(str(min(k, paytable.longest_streak))))
            for k in range(1, longest + 1)
        }
        out[spec.key] = np.array([pays[k] for k in lengths[reading]])
    return out


def _blazing_7s(
    ctx: _Context, doc: PaytableDocument, specs: Sequence[WagerSpec], rounds: int, wheel: WheelType
) -> dict[str, Any]:
    base = ctx.batch(f"blazing_7s-{wheel.value}", rounds, wheel=wheel.value)
    mine = [s for s in specs if _wheel_value(s) == wheel.value]
    out = {s.key: np.zeros(rounds) for s in mine}

    def bonus(i: int) -> list[str]:
        ids = ctx.ids(f"blazing_7s-{wheel.value}-{i}")
        result = ctx.client.multiball(wheel=wheel.value, balls=3, **ids)
        return [b["number"] for b in ctx.entry(result)["outcome"]["balls"]]

    triggered = [i for i, number in enumerate(base) if blazing_7s.triggers(number)]
    for i, balls in zip(triggered, ctx.map(bonus, triggered), strict=True):
        for spec in mine:
            out[spec.key][i] = float(blazing_7s.settle(doc.table(spec.paytable), base[i], balls))
    return out


def _mega_fire_blaze(
    ctx: _Context,
    doc: PaytableDocument,
    specs: Sequence[WagerSpec],
    rounds: int,
    profile: MegaFireBlazeProfile,
) -> tuple[dict[str, Any], dict[str, npt.NDArray[np.float64]]]:
    """Each wager's return per round, and each inside wager's base game return per round."""
    wagers = {s.key: mega_fire_blaze.Wager.parse(s.wager) for s in specs}
    inside = [w for w in wagers.values() if w.inside]
    out = {s.key: np.zeros(rounds) for s in specs}
    name = profile.id.name

    def play_round(i: int) -> tuple[str, set[str], dict[str, int] | None]:
        """One round's spin, Fire Numbers and, when a priced inside wager needs it, the bonus
        odds: the Fire Numbers first, then the round's spin (617b.7(e)), then the bonus."""
        fire = ctx.client.fire_numbers(profile=name, **ctx.ids(f"mega_fire_blaze-{i}"))
        fire_entry = ctx.entry(fire)
        if fire_entry.get("profile_sha256") != profile.id.sha256:
            raise LiveError(f"the service drew Fire Numbers under another profile than {name}")
        numbers = set(fire_entry["outcome"]["numbers"])
        ids = ctx.ids(f"mega_fire_blaze-{i}")
        ids["request_id"] += "-spin"
        spun = ctx.client.spin(wheel="single_zero", **ids)
        number = ctx.entry(spun)["outcome"]["final"]["number"]
        if number in numbers and any(int(number) in w.numbers for w in inside):
            ids["request_id"] = ids["round_id"] + "-bonus"
            bonus = ctx.client.mega_fire_blaze_bonus(
                profile=name, fire_numbers_index=fire.receipt.index, **ids
            )
            return number, numbers, dict(ctx.entry(bonus)["outcome"]["odds"])
        return number, numbers, None

    base = {s.key: np.zeros(rounds) for s in specs if wagers[s.key].inside}
    for i, (number, numbers, odds) in enumerate(ctx.map(play_round, range(rounds))):
        for spec in specs:
            paytable = doc.table(spec.paytable)
            wager = wagers[spec.key]
            out[spec.key][i] = float(mega_fire_blaze.settle(paytable, wager, number, numbers, odds))
            if spec.key in base and int(number) in wager.numbers:
                base[spec.key][i] = float(paytable.returns(wager.bet))
    return out, base


def _six_card_bonus(
    ctx: _Context, doc: PaytableDocument, specs: Sequence[WagerSpec], rounds: int
) -> dict[str, Any]:
    out = {s.key: np.zeros(rounds) for s in specs}

    def deal(i: int) -> tuple[str, ...]:
        ids = ctx.ids(f"six_card_bonus-{i}")
        entry = ctx.entry(ctx.client.shuffle(plan=SIX_CARD_PLAN, players=1, **ids))
        dealt = cards.deal(
            cards.ShuffleOutcome.from_record(entry["outcome"]),
            entry["params"]["plan"],
            entry["params"]["players"],
        )
        return six_card_bonus.bonus_cards(dealt, 1)

    for i, six in enumerate(ctx.map(deal, range(rounds))):
        for spec in specs:
            out[spec.key][i] = float(six_card_bonus.settle(doc.table(spec.paytable), six))
    return out


def play(
    client: Any,
    specs: Sequence[WagerSpec],
    paytables: Mapping[str, PaytableDocument],
    rounds: Mapping[str, int],
    *,
    profile: MegaFireBlazeProfile,
    run: str,
    time_limit: float,
    table_id: str = "RTP",
    clock: Callable[[], float] = time.monotonic,
    on_game: Callable[[GameRounds], None] | None = None,
) -> list[GameRounds]:
    """Plays ``rounds[game]`` rounds of each game (per wheel) through ``client`` (an
    ``RngClient``) and settles every spec of the game on them."""
    ctx = _Context(
        client=client, run=run, table_id=table_id, deadline=clock() + time_limit, clock=clock
    )
    results = []
    for game, n in rounds.items():
        mine = [s for s in specs if s.game == game]
        doc = paytables[game]
        for wheel in LIVE_GAMES[game]:
            started = clock()
            ctx.indexes = []
            ctx.last_receipt = None
            base: dict[str, npt.NDArray[np.float64]] = {}
            if game == "sic_bo":
                returns = _sic_bo(ctx, doc, mine, n)
            elif game == "roulette_up":
                assert wheel is not None
                returns = _roulette_up(ctx, doc, mine, n, wheel)
            elif game == "blazing_7s":
                assert wheel is not None
                returns = _blazing_7s(ctx, doc, mine, n, wheel)
            elif game == "mega_fire_blaze":
                returns, base = _mega_fire_blaze(ctx, doc, mine, n, profile)
            else:
                returns = _six_card_bonus(ctx, doc, mine, n)
            played = GameRounds(
                game=game,
                wheel=None if wheel is None else wheel.value,
                rounds=n,
                returns=returns,
                indexes=ctx.indexes,
                seconds=clock() - started,
                last_receipt=ctx.last_receipt,
                base_returns=base,
            )
            results.append(played)
            if on_game is not None:
                on_game(played)
    return results


@dataclass(frozen=True)
class Interval:
    mean: float
    standard_error: float
    low: float
    high: float

    def holds(self, value: Fraction) -> bool:
        return self.low <= float(value) <= self.high


def interval(returns: npt.NDArray[np.float64], sd: float, z: float = Z99) -> Interval:
    """mean +- z * sd / sqrt(N), ``sd`` the wager's exact standard deviation per unit staked.

    Labs take the interval around the measured RTP with the game's theoretical standard
    deviation: the sample's understates it whenever the rare top payouts have not come up (it
    is 0 when no win has), which would shrink the interval exactly when it should be wide."""
    n = int(returns.size)
    mean = float(returns.mean())
    se = sd / math.sqrt(n)
    return Interval(mean=mean, standard_error=se, low=mean - z * se, high=mean + z * se)


def family_z(count: int, confidence: float = 0.99) -> float:
    """Bonferroni: each of ``count`` two-sided intervals at 1 - (1 - confidence) / count."""
    return float(norm.ppf(1 - (1 - confidence) / (2 * max(1, count))))


def summarise_indexes(indexes: Sequence[int], limit: int = 40) -> str:
    """Log indexes as ranges, e.g. ``"12-15, 20, 31-40"`` (the first ``limit`` ranges, then
    how many more)."""
    ranges = list(_ranges(sorted(set(indexes))))
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges[:limit])
    if len(ranges) > limit:
        text += f", ... ({len(ranges) - limit} more ranges)"
    return text


def index_ranges(indexes: Sequence[int]) -> list[list[int]]:
    """Every run of consecutive log indexes as ``[first, last]`` (none left out)."""
    return [[a, b] for a, b in _ranges(sorted(set(indexes)))]


def _ranges(values: Sequence[int]) -> Iterator[tuple[int, int]]:
    """Runs of consecutive integers in sorted ``values`` as (first, last)."""
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        yield values[i], values[j]
        i = j + 1


def check_loopback(target: str) -> None:
    """Plaintext only to a loopback address (mTLS elsewhere)."""
    host = target.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise LiveError(
        f"refusing to play rounds on {target} in plaintext: only loopback addresses (127.0.0.0/8, "
        "::1, localhost) are allowed without --ca/--cert/--key"
    )
