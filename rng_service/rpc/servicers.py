"""gRPC servicers: translate, call the domain, translate back. Nothing more.

Outcome RPCs validate their request (``convert``), build a :class:`DrawRequest` whose ``draw``
is the pure outcome function, and await the appender: the response is built from the durably
logged entry, so a first answer and a replayed answer are built the same way. Round rules
(a slot filled once, the order of a round's outcomes, voided rounds) are the sequencer's
(``rng_service.log.rounds``): they are checked under the store's writers' lock, where every
replica's entries are seen.

The batch draws (``draw_*_batch``) map one ``RandomSource.randbelow_batch`` call to a kind's
outcomes; each consumes the stream exactly as the same number of scalar outcome draws would
(``randbelow_batch`` guarantees it), so a batch equals that many single outcomes drawn from one
source. They belong with the outcome functions and move to ``rng_service.outcomes`` once that
package takes them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message
from grpc import aio

from rng_service._proto.rng.v1 import outcomes_pb2, outcomes_pb2_grpc
from rng_service.errors import InvalidArgument
from rng_service.log import rounds
from rng_service.log.entry import JsonValue
from rng_service.outcomes import (
    cards,
    dice,
    fire_numbers,
    generic,
    jackpot,
    mega_fire_blaze,
    multiball,
    roulette,
)
from rng_service.outcomes.batch import (
    BATCH_WHEELS,
    draw_dice_batch,
    draw_spin_batch,
    draw_uniform_batch,
)
from rng_service.outcomes.profiles import MegaFireBlazeProfile
from rng_service.rpc.auth import Authorizer, caller_id, caller_is_game_server
from rng_service.rpc.convert import (
    RequestIds,
    bonus_to_proto,
    count_in,
    field_prefix,
    hands_to_proto,
    jackpot_tier_to_proto,
    profile_ref,
    receipt_to_proto,
    request_ids,
    shuffle_from_proto,
    spin_to_proto,
    uniform_from_proto,
    wheel_from_proto,
    wheel_positions,
)
from rng_service.rpc.errors import RpcObserver, rpc
from rng_service.rpc.profiles import ProfileRegistry, document_kind
from rng_service.sampling import RandomSource
from rng_service.settlement.documents import Document
from rng_service.writer.appender import Appender, AppendResult, DrawFn, LinkFn, draw_request

__all__ = [
    "BATCH_WHEELS",
    "DEFAULT_CHUNK_SIZE",
    "MAX_BATCH",
    "MAX_CHUNKS",
    "MAX_REASON",
    "MAX_STREAM",
    "VOID_REQUEST_PREFIX",
    "OutcomeServicer",
]

#: Most outcomes in one DrawBatch call (one log entry).
MAX_BATCH = 100_000
#: Most outcomes in one StreamBatch call.
MAX_STREAM = 10_000_000
#: Outcomes per StreamBatch chunk when the request leaves chunk_size at 0.
DEFAULT_CHUNK_SIZE = 10_000
#: Most chunks (log entries) in one StreamBatch call.
MAX_CHUNKS = 1_000
#: Longest VoidRound reason, in characters.
MAX_REASON = 256
#: A void's entry is logged under request id "void@<operator's request id>" in the round
#: client's request ids: "@" never occurs in a client's own request ids, so an operator's ids
#: and the game server's never meet.
VOID_REQUEST_PREFIX = "void@"

_Draw = DrawFn


def _recorder(draw: Callable[[RandomSource, Any], Any], params: Any) -> _Draw:
    """The appender's draw: the pure outcome function on ``params``, as its log record.

    A ``functools.partial`` of module-level functions and validated parameters, never a
    closure: with ``serve --front-ends N`` the request crosses to the log writer process
    pickled (``rng_service.process.ipc``), which refers to functions by name."""
    return functools.partial(_record_of, draw, params)


def _record_of(
    draw: Callable[[RandomSource, Any], Any], params: Any, src: RandomSource
) -> Mapping[str, JsonValue]:
    record: Mapping[str, JsonValue] = draw(src, params).to_record()
    return record


def _no_draw(src: RandomSource) -> Mapping[str, JsonValue]:
    """The draw of a request that its round's links complete (``link``): never called."""
    raise AssertionError("a linked request is drawn by its link's draw")


def _bonus_link(
    profile: MegaFireBlazeProfile, links: Mapping[str, JsonValue]
) -> tuple[Mapping[str, JsonValue], DrawFn]:
    """The bonus game from its round's links (``rounds.check``): the Fire Number count of the
    round's draw (617b.7(g)(3)), and the draw's and the spin's log indexes for the entry."""
    params = mega_fire_blaze.BonusParams(
        profile=profile, fire_number_count=links["fire_number_count"]
    )
    record = {
        **params.to_record(),
        "fire_numbers_index": links["fire_numbers_index"],
        "spin_index": links["spin_index"],
    }
    return record, _recorder(mega_fire_blaze.draw, params)


def _void_draw(src: RandomSource) -> Mapping[str, JsonValue]:
    """A void draws nothing: its outcome is the void itself."""
    return {"voided": True}


def _void_reason(reason: str) -> str:
    if not reason or len(reason) > MAX_REASON or not reason.isprintable():
        raise InvalidArgument(
            "reason",
            "is required" if not reason else "is too long or holds control characters",
            allowed=f"1 to {MAX_REASON} printable characters",
        )
    return reason


# --- batch draws ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _BatchKind:
    """A validated batch request: entry kind, parameters (without counts), the draw, and the
    response field and message built from a logged outcome."""

    kind: str
    params: Mapping[str, JsonValue]
    draw: Callable[[RandomSource, int], dict[str, JsonValue]]
    field: str
    to_proto: Callable[[Mapping[str, Any]], Message]

    def request(self, count: int, **extra: JsonValue) -> tuple[dict[str, JsonValue], Any]:
        # The draw crosses to a writer process pickled: the partial, not this object.
        return {**self.params, "count": count, **extra}, functools.partial(
            _run_batch, self.draw, count
        )


def _run_batch(
    draw: Callable[[RandomSource, int], dict[str, JsonValue]], count: int, src: RandomSource
) -> dict[str, JsonValue]:
    return draw(src, count)


def _spin_batch(wheel: Any, src: RandomSource, n: int) -> dict[str, JsonValue]:
    return draw_spin_batch(src, wheel, n)


def _dice_batch(dp: dice.DiceParams, src: RandomSource, n: int) -> dict[str, JsonValue]:
    return draw_dice_batch(src, dp, n)


def _uniform_batch(up: Any, src: RandomSource, n: int) -> dict[str, JsonValue]:
    return draw_uniform_batch(src, up, n)


def _batch_from_proto(
    request: outcomes_pb2.DrawBatchRequest | outcomes_pb2.StreamBatchRequest,
) -> _BatchKind:
    which = request.WhichOneof("kind")
    if which == "roulette":
        with field_prefix("roulette"):
            wheel = wheel_from_proto(request.roulette.wheel)
        if wheel not in BATCH_WHEELS:
            raise InvalidArgument(
                "roulette.wheel",
                f"{wheel.value} is not supported in a batch (its voided 00 is respun)",
                allowed="WHEEL_TYPE_SINGLE_ZERO, WHEEL_TYPE_DOUBLE_ZERO",
            )
        return _BatchKind(
            kind="roulette_spin_batch",
            params={"wheel": wheel.value},
            draw=functools.partial(_spin_batch, wheel),
            field="roulette",
            to_proto=lambda o: outcomes_pb2.RouletteBatchResult(
                numbers=o["numbers"], wheel_positions=wheel_positions(wheel, o["numbers"])
            ),
        )
    if which == "dice":
        with field_prefix("dice"):
            dp = dice.DiceParams(count=request.dice.count, sides=request.dice.sides)
        return _BatchKind(
            kind="dice_roll_batch",
            params={"dice": dp.count, "sides": dp.sides},
            draw=functools.partial(_dice_batch, dp),
            field="dice",
            to_proto=lambda o: outcomes_pb2.DiceBatchResult(dice=dp.count, faces=o["faces"]),
        )
    if which == "uniform":
        with field_prefix("uniform"):
            up = uniform_from_proto(request.uniform.low, request.uniform.high, 1, False)
        return _BatchKind(
            kind="uniform_int_batch",
            params={"low": up.low, "high": up.high},
            draw=functools.partial(_uniform_batch, up),
            field="uniform",
            to_proto=lambda o: outcomes_pb2.UniformBatchResult(values=o["values"]),
        )
    raise InvalidArgument("kind", "is required", allowed="roulette, dice, uniform")


def _game_profile(document: Document) -> outcomes_pb2.GameProfile:
    return outcomes_pb2.GameProfile(
        id=profile_ref(document),
        kind=document_kind(document),
        example=document.example,
        description=document.description,
    )


class OutcomeServicer(outcomes_pb2_grpc.OutcomeServiceServicer):
    def __init__(
        self,
        *,
        appender: Appender,
        client_id: str,
        profiles: ProfileRegistry,
        rpc_observer: RpcObserver | None = None,
        authorizer: Authorizer | None = None,
        round_clients: Collection[str] | None = None,
    ) -> None:
        """``client_id`` scopes idempotency when no ``authorizer`` identifies callers; with one,
        every call is authorized first (``rpc``) and scoped to the caller's identity.
        ``round_clients``: the identities whose rounds ``VoidRound`` may name (the game
        servers); None: any."""
        self._appender = appender
        self._client_id = client_id
        self.authorizer = authorizer
        self._profiles = profiles
        self._round_clients = None if round_clients is None else frozenset(round_clients)
        self.rpc_observer = rpc_observer

    async def _issue(
        self,
        ids: RequestIds,
        *,
        kind: str,
        params: Mapping[str, JsonValue],
        draw: _Draw,
        profile_sha256: str = "",
        request_id: str | None = None,
        link: LinkFn | None = None,
        client_id: str | None = None,
        session_id: str | None = None,
    ) -> AppendResult:
        waiter = self._appender.submit_async(
            draw_request(
                client_id=caller_id(self._client_id) if client_id is None else client_id,
                request_id=ids.request_id if request_id is None else request_id,
                table_id=ids.table_id,
                round_id=ids.round_id,
                session_id=ids.session_id if session_id is None else session_id,
                kind=kind,
                params=params,
                draw=draw,
                profile_sha256=profile_sha256,
                slot=rounds.named_slot(kind, ids.slot),
                link=link,
                game_server=(
                    kind in rounds.NEED_A_SPIN_FOR_GAME_SERVERS and caller_is_game_server()
                ),
            )
        )
        # The outcome is logged even if the caller goes away; a retry gets it back. No
        # asyncio.shield: cancelling the waiter withdraws nothing (``submit_async``), the writer
        # skips a cancelled waiter, and the shield's extra future costs every call.
        return await waiter

    @rpc("SpinRoulette")
    async def SpinRoulette(
        self,
        request: outcomes_pb2.SpinRouletteRequest,
        context: aio.ServicerContext[
            outcomes_pb2.SpinRouletteRequest, outcomes_pb2.SpinRouletteResponse
        ],
    ) -> outcomes_pb2.SpinRouletteResponse:
        ids = request_ids(request.context, request.HasField("context"))
        params = roulette.SpinParams(wheel=wheel_from_proto(request.wheel))
        result = await self._issue(
            ids,
            kind="roulette_spin",
            params=params.to_record(),
            draw=_recorder(roulette.draw, params),
        )
        outcome = result.entry.outcome
        return outcomes_pb2.SpinRouletteResponse(
            result=spin_to_proto(outcome["final"]),
            spins=[spin_to_proto(s) for s in outcome["spins"]],
            receipt=receipt_to_proto(result),
        )

    @rpc("DrawMultiBall")
    async def DrawMultiBall(
        self,
        request: outcomes_pb2.DrawMultiBallRequest,
        context: aio.ServicerContext[
            outcomes_pb2.DrawMultiBallRequest, outcomes_pb2.DrawMultiBallResponse
        ],
    ) -> outcomes_pb2.DrawMultiBallResponse:
        ids = request_ids(request.context, request.HasField("context"))
        params = multiball.MultiBallParams(
            wheel=wheel_from_proto(request.wheel), balls=request.balls
        )
        result = await self._issue(
            ids,
            kind=rounds.MULTIBALL_KIND,
            params=params.to_record(),
            draw=_recorder(multiball.draw, params),
        )
        return outcomes_pb2.DrawMultiBallResponse(
            balls=[spin_to_proto(b) for b in result.entry.outcome["balls"]],
            receipt=receipt_to_proto(result),
        )

    @rpc("SelectFireNumbers")
    async def SelectFireNumbers(
        self,
        request: outcomes_pb2.SelectFireNumbersRequest,
        context: aio.ServicerContext[
            outcomes_pb2.SelectFireNumbersRequest, outcomes_pb2.SelectFireNumbersResponse
        ],
    ) -> outcomes_pb2.SelectFireNumbersResponse:
        ids = request_ids(request.context, request.HasField("context"))
        profile = self._profiles.get(request.profile)
        params = fire_numbers.FireNumberParams(profile=profile)
        result = await self._issue(
            ids,
            kind=rounds.FIRE_NUMBERS_KIND,
            params=params.to_record(),
            draw=_recorder(fire_numbers.draw, params),
            profile_sha256=profile.id.sha256,
        )
        outcome = result.entry.outcome
        return outcomes_pb2.SelectFireNumbersResponse(
            profile=profile_ref(profile),
            count=outcome["count"],
            numbers=[int(n) for n in outcome["numbers"]],
            receipt=receipt_to_proto(result),
        )

    @rpc("PlayMegaFireBlazeBonus")
    async def PlayMegaFireBlazeBonus(
        self,
        request: outcomes_pb2.PlayMegaFireBlazeBonusRequest,
        context: aio.ServicerContext[
            outcomes_pb2.PlayMegaFireBlazeBonusRequest,
            outcomes_pb2.PlayMegaFireBlazeBonusResponse,
        ],
    ) -> outcomes_pb2.PlayMegaFireBlazeBonusResponse:
        ids = request_ids(request.context, request.HasField("context"))
        profile = self._profiles.get(request.profile)
        # The round's Fire Number draw and spin are found by the sequencer (under the writers'
        # lock): it checks them (rounds.check) and hands their links to _bonus_link.
        params: dict[str, JsonValue] = {"profile": profile.id.to_record()}
        if request.HasField("fire_numbers_index"):
            params["fire_numbers_index"] = request.fire_numbers_index
        result = await self._issue(
            ids,
            kind=rounds.BONUS_KIND,
            params=params,
            draw=_no_draw,
            profile_sha256=profile.id.sha256,
            link=functools.partial(_bonus_link, profile),
        )
        logged = result.entry.params
        return outcomes_pb2.PlayMegaFireBlazeBonusResponse(
            profile=profile_ref(profile),
            fire_numbers_index=logged["fire_numbers_index"],
            spin_index=logged.get("spin_index", 0),
            receipt=receipt_to_proto(result),
            **bonus_to_proto(result.entry.outcome),
        )

    @rpc("DrawJackpotTier")
    async def DrawJackpotTier(
        self,
        request: outcomes_pb2.DrawJackpotTierRequest,
        context: aio.ServicerContext[
            outcomes_pb2.DrawJackpotTierRequest, outcomes_pb2.DrawJackpotTierResponse
        ],
    ) -> outcomes_pb2.DrawJackpotTierResponse:
        ids = request_ids(request.context, request.HasField("context"))
        profile = self._profiles.get(request.profile)
        params = jackpot.JackpotParams(profile=profile)
        result = await self._issue(
            ids,
            kind="jackpot_tier",
            params=params.to_record(),
            draw=_recorder(jackpot.draw, params),
            profile_sha256=profile.id.sha256,
        )
        outcome = result.entry.outcome
        return outcomes_pb2.DrawJackpotTierResponse(
            profile=profile_ref(profile),
            tier=jackpot_tier_to_proto(outcome["tier"]),
            value=outcome["value"],
            receipt=receipt_to_proto(result),
        )

    @rpc("RollDice")
    async def RollDice(
        self,
        request: outcomes_pb2.RollDiceRequest,
        context: aio.ServicerContext[outcomes_pb2.RollDiceRequest, outcomes_pb2.RollDiceResponse],
    ) -> outcomes_pb2.RollDiceResponse:
        ids = request_ids(request.context, request.HasField("context"))
        params = dice.DiceParams(count=request.count, sides=request.sides)
        result = await self._issue(
            ids, kind="dice_roll", params=params.to_record(), draw=_recorder(dice.draw, params)
        )
        outcome = result.entry.outcome
        return outcomes_pb2.RollDiceResponse(
            faces=outcome["faces"], total=outcome["total"], receipt=receipt_to_proto(result)
        )

    @rpc("ShuffleCards")
    async def ShuffleCards(
        self,
        request: outcomes_pb2.ShuffleCardsRequest,
        context: aio.ServicerContext[
            outcomes_pb2.ShuffleCardsRequest, outcomes_pb2.ShuffleCardsResponse
        ],
    ) -> outcomes_pb2.ShuffleCardsResponse:
        ids = request_ids(request.context, request.HasField("context"))
        shuffle = shuffle_from_proto(request)
        result = await self._issue(
            ids,
            kind="card_shuffle",
            params=shuffle.to_record(),
            draw=_recorder(cards.draw, shuffle.params),
        )
        logged = cards.ShuffleOutcome.from_record(result.entry.outcome)
        response = outcomes_pb2.ShuffleCardsResponse(
            decks=logged.decks,
            jokers=logged.jokers,
            cards=bytes(logged.cards),
            receipt=receipt_to_proto(result),
        )
        params = result.entry.params
        if "plan" in params:
            dealt = cards.deal(logged, params["plan"], params["players"])
            response.plan = dealt.plan
            response.players = dealt.players
            response.hands.extend(hands_to_proto(dealt))
            response.next_index = dealt.next_index
        return response

    @rpc("DrawUniformIntegers")
    async def DrawUniformIntegers(
        self,
        request: outcomes_pb2.DrawUniformIntegersRequest,
        context: aio.ServicerContext[
            outcomes_pb2.DrawUniformIntegersRequest, outcomes_pb2.DrawUniformIntegersResponse
        ],
    ) -> outcomes_pb2.DrawUniformIntegersResponse:
        ids = request_ids(request.context, request.HasField("context"))
        params = uniform_from_proto(request.low, request.high, request.count, request.distinct)
        result = await self._issue(
            ids,
            kind="uniform_int",
            params=params.to_record(),
            draw=_recorder(generic.draw_uniform, params),
        )
        return outcomes_pb2.DrawUniformIntegersResponse(
            values=result.entry.outcome["values"], receipt=receipt_to_proto(result)
        )

    @rpc("DrawWeighted")
    async def DrawWeighted(
        self,
        request: outcomes_pb2.DrawWeightedRequest,
        context: aio.ServicerContext[
            outcomes_pb2.DrawWeightedRequest, outcomes_pb2.DrawWeightedResponse
        ],
    ) -> outcomes_pb2.DrawWeightedResponse:
        ids = request_ids(request.context, request.HasField("context"))
        params = generic.WeightedParams(weights=tuple(request.weights), count=request.count)
        result = await self._issue(
            ids,
            kind="weighted_choice",
            params=params.to_record(),
            draw=_recorder(generic.draw_weighted, params),
        )
        return outcomes_pb2.DrawWeightedResponse(
            indices=result.entry.outcome["indices"], receipt=receipt_to_proto(result)
        )

    @rpc("ListProfiles")
    async def ListProfiles(
        self,
        request: outcomes_pb2.ListProfilesRequest,
        context: aio.ServicerContext[
            outcomes_pb2.ListProfilesRequest, outcomes_pb2.ListProfilesResponse
        ],
    ) -> outcomes_pb2.ListProfilesResponse:
        return outcomes_pb2.ListProfilesResponse(
            profiles=[_game_profile(d) for d in self._profiles.all()]
        )

    @rpc("GetProfile")
    async def GetProfile(
        self,
        request: outcomes_pb2.GetProfileRequest,
        context: aio.ServicerContext[
            outcomes_pb2.GetProfileRequest, outcomes_pb2.GetProfileResponse
        ],
    ) -> outcomes_pb2.GetProfileResponse:
        selector = request.WhichOneof("selector")
        document = self._profiles.find(
            request.name,
            version=request.version if selector == "version" else None,
            sha256=request.sha256 if selector == "sha256" else "",
        )
        return outcomes_pb2.GetProfileResponse(
            profile=_game_profile(document), canonical=document.canonical
        )

    @rpc("DrawBatch")
    async def DrawBatch(
        self,
        request: outcomes_pb2.DrawBatchRequest,
        context: aio.ServicerContext[outcomes_pb2.DrawBatchRequest, outcomes_pb2.DrawBatchResponse],
    ) -> outcomes_pb2.DrawBatchResponse:
        ids = request_ids(request.context, request.HasField("context"))
        count = count_in(request.count, "count", 1, MAX_BATCH)
        batch = _batch_from_proto(request)
        params, draw = batch.request(count)
        result = await self._issue(ids, kind=batch.kind, params=params, draw=draw)
        response = outcomes_pb2.DrawBatchResponse(receipt=receipt_to_proto(result))
        getattr(response, batch.field).CopyFrom(batch.to_proto(result.entry.outcome))
        return response

    @rpc("VoidRound")
    async def VoidRound(
        self,
        request: outcomes_pb2.VoidRoundRequest,
        context: aio.ServicerContext[outcomes_pb2.VoidRoundRequest, outcomes_pb2.VoidRoundResponse],
    ) -> outcomes_pb2.VoidRoundResponse:
        ids = request_ids(request.context, request.HasField("context"))
        reason = _void_reason(request.reason)
        operator = caller_id(self._client_id)
        client = request.client or operator
        if (
            len(client) > 128
            or not client.isprintable()
            or (self._round_clients is not None and client not in self._round_clients)
        ):
            raise InvalidArgument(
                "client",
                f"{client[:40]!r} is not a configured game server",
                allowed="empty (the caller) or a configured client with the game_server role",
            )
        result = await self._issue(
            ids,
            kind=rounds.VOID_KIND,
            params={"reason": reason, "operator": operator},
            draw=_void_draw,
            request_id=VOID_REQUEST_PREFIX + ids.request_id,
            client_id=client,
            session_id="",
        )
        return outcomes_pb2.VoidRoundResponse(
            client=result.entry.client, receipt=receipt_to_proto(result)
        )

    @rpc("StreamBatch")
    async def StreamBatch(
        self,
        request: outcomes_pb2.StreamBatchRequest,
        context: aio.ServicerContext[outcomes_pb2.StreamBatchRequest, Any],
    ) -> None:
        ids = request_ids(request.context, request.HasField("context"))
        total = count_in(request.count, "count", 1, MAX_STREAM)
        fewest = max(1, -(-total // MAX_CHUNKS))  # at most MAX_CHUNKS entries per call
        size = count_in(request.chunk_size or DEFAULT_CHUNK_SIZE, "chunk_size", fewest, MAX_BATCH)
        batch = _batch_from_proto(request)
        chunks = -(-total // size)
        for chunk in range(chunks):
            first = chunk * size
            params, draw = batch.request(
                min(size, total - first),
                stream={"count": total, "chunk_size": size, "chunk": chunk},
            )
            result = await self._issue(
                ids,
                kind=batch.kind,
                params=params,
                draw=draw,
                request_id=f"{ids.request_id}/{chunk}",
            )
            response = outcomes_pb2.StreamBatchResponse(
                chunk=chunk, first=first, chunks=chunks, receipt=receipt_to_proto(result)
            )
            getattr(response, batch.field).CopyFrom(batch.to_proto(result.entry.outcome))
            await context.write(response)
