"""The sequencer's round rules and table chains (entry format 2), with in-memory stores.

Refusals draw nothing (the generator's next bytes go to the next accepted outcome) and log
nothing; a refusal caused by an entry of the same group stands only if that group commits;
chains continue across restarts and across appenders sharing one store (replicas).
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Mapping

import pytest

from rng_service.clock import FakeClock
from rng_service.drbg import DeterministicGenerator
from rng_service.errors import (
    AlreadyExists,
    RoundOrderViolation,
    RoundVoided,
    SlotFilled,
    StorageUnavailable,
)
from rng_service.log.entry import JsonValue, LogEntry
from rng_service.outcomes import dice, roulette
from rng_service.sampling import RandomSource
from rng_service.storage.memory import MemoryStorage
from rng_service.writer.appender import Appender, AppendResult, DrawRequest
from rng_service.writer.tree import MerkleTree
from tests.unit.writer.test_appender import SIGNER, Harness


def spin(
    rid: str, round_id: str, *, wheel: str = "single_zero", table: str = "T", client: str = "c"
) -> DrawRequest:
    params = roulette.SpinParams(wheel=roulette.WheelType(wheel))
    return DrawRequest(
        client_id=client, request_id=rid, table_id=table, round_id=round_id, session_id="",
        kind="roulette_spin", params=params.to_record(),
        draw=lambda src: roulette.draw(src, params).to_record(),
    )  # fmt: skip


def roll(rid: str, round_id: str, *, table: str = "T") -> DrawRequest:
    return DrawRequest(
        client_id="c", request_id=rid, table_id=table, round_id=round_id, session_id="",
        kind="dice_roll", params=dice.SIC_BO.to_record(),
        draw=lambda src: dice.draw(src, dice.SIC_BO).to_record(),
    )  # fmt: skip


def other(kind: str, rid: str, round_id: str, *, slot: str = "") -> DrawRequest:
    def draw(src: RandomSource) -> Mapping[str, JsonValue]:
        return {"value": src.randbelow(1000)}

    return DrawRequest(
        client_id="c", request_id=rid, table_id="T", round_id=round_id, session_id="",
        kind=kind, params={}, draw=draw, slot=slot,
    )  # fmt: skip


def entry(result: AppendResult) -> LogEntry:
    return LogEntry.decode(result.receipt.entry)


@pytest.fixture
def h() -> Harness:
    return Harness()


def test_a_filled_slot_under_another_request_id_draws_and_logs_nothing(h: Harness) -> None:
    first = h.run_group([spin("a", "R1")])[0].result()
    again = h.run_group([spin("b", "R1")])[0]
    with pytest.raises(SlotFilled, match=r"table 'T' round 'R1': slot 'spin' is already filled "
                       r"by request 'a' at log index 0"):  # fmt: skip
        again.result()
    assert h.storage.tree_size() == 1
    assert h.storage.entry_by_request("c", "b") is None
    # Nothing was drawn for it: the next outcome is the generator's second one.
    nxt = h.run_group([spin("c", "R2")])[0].result()
    ref = DeterministicGenerator(entropy_input=b"\x01" * 32, nonce=b"\x02" * 16)
    params = roulette.SpinParams(wheel=roulette.WheelType.SINGLE_ZERO)
    expected = [roulette.draw(RandomSource(ref), params).to_record() for _ in range(2)]
    assert [entry(first).outcome, entry(nxt).outcome] == expected
    # The same request id still replays (idempotency comes first), with other ids too.
    replay = h.run_group([spin("a", "R1")])[0].result()
    assert replay.receipt.replayed
    assert replay.receipt.entry == first.receipt.entry
    with pytest.raises(AlreadyExists):
        h.run_group([spin("a", "R1", wheel="double_zero")])[0].result()


def test_slots_belong_to_one_round_of_one_table_of_one_client(h: Harness) -> None:
    futures = h.run_group(
        [spin("a", "R1"), spin("b", "R2"), spin("c", "R1", table="T2"),
         spin("d", "R1", client="c2"), roll("e", "R1")]
    )  # fmt: skip
    assert [f.result().receipt.index for f in futures] == [0, 1, 2, 3, 4]


def test_one_group_fills_a_slot_once(h: Harness) -> None:
    futures = h.run_group([spin("a", "R1"), spin("b", "R1"), spin("a", "R1")])
    assert futures[0].result().receipt.index == 0
    with pytest.raises(SlotFilled, match="by request 'a' at log index 0"):
        futures[1].result()
    assert futures[2].result().receipt.replayed  # the same id in the same group
    assert h.storage.tree_size() == 1


def test_a_refusal_caused_by_an_uncommitted_entry_does_not_stand(h: Harness) -> None:
    h.storage.failing = True
    futures = h.run_group([spin("a", "R1"), spin("b", "R1"), spin("x", "R0")])
    for f in futures:  # retry: none of them is decided
        with pytest.raises(StorageUnavailable):
            f.result()
    h.storage.failing = False
    futures = h.run_group([spin("b", "R1"), spin("a", "R1")])
    assert futures[0].result().receipt.index == 0  # "b" is the round's spin now
    with pytest.raises(SlotFilled, match="by request 'b'"):
        futures[1].result()


def test_a_refusal_caused_by_a_stored_entry_stands_when_the_commit_fails(h: Harness) -> None:
    h.run_group([spin("a", "R1")])
    h.storage.failing = True
    futures = h.run_group([spin("b", "R1"), spin("c", "R2")])
    with pytest.raises(SlotFilled):
        futures[0].result()
    with pytest.raises(StorageUnavailable):
        futures[1].result()


def test_order_rules_hold_within_one_group(h: Harness) -> None:
    fire = other("fire_numbers", "f", "R1")
    late_fire = other("fire_numbers", "g", "R2")
    futures = h.run_group([fire, spin("s", "R1"), spin("t", "R2"), late_fire])
    assert futures[0].result().receipt.index == 0
    assert futures[1].result().receipt.index == 1  # single zero: allowed after Fire Numbers
    assert futures[2].result().receipt.index == 2
    with pytest.raises(RoundOrderViolation, match=r"spun at log index 2") as info:
        futures[3].result()
    assert info.value.rule == "fire_numbers_after_spin"
    dz = h.run_group([other("fire_numbers", "f3", "R3"), spin("s3", "R3", wheel="double_zero")])
    with pytest.raises(RoundOrderViolation, match="single zero wheel"):
        dz[1].result()


def test_a_voided_round_refuses_everything_after(h: Harness) -> None:
    h.run_group([spin("a", "R1")])
    void = other("round_void", "void@op1", "R1")
    assert h.run_group([void])[0].result().receipt.index == 1
    for request in (roll("b", "R1"), spin("c", "R1"), other("round_void", "void@op2", "R1")):
        with pytest.raises(RoundVoided, match="voided at log index 1"):
            h.run_group([request])[0].result()
    assert h.run_group([roll("d", "R2")])[0].result().receipt.index == 2
    assert entry(h.run_group([void])[0].result()).slot == "void"  # replay


def test_named_generic_slots_and_lab_slots(h: Harness) -> None:
    futures = h.run_group(
        [
            other("uniform_int", "u1", "R1"),  # the default slot
            other("uniform_int", "u2", "R1", slot="pick-2"),
            other("uniform_int", "u3", "R1", slot="pick-3"),
            other("uniform_int", "u4", "R1"),  # default slot again
            other("uniform_int_batch", "b1", "R1"),  # a lab slot of its own
            other("uniform_int_batch", "b2", "R1"),
        ]
    )
    slots = [entry(f.result()).slot for f in futures if f.exception() is None]
    assert slots == ["uniform_int", "pick-2", "pick-3", "lab/b1", "lab/b2"]
    with pytest.raises(SlotFilled, match="slot 'uniform_int'"):
        futures[3].result()
    # A voided round does not stop lab entries: they are no round's.
    h.run_group([other("round_void", "void@x", "R1")])
    assert entry(h.run_group([other("dice_roll_batch", "b3", "R1")])[0].result()).slot == "lab/b3"


def test_each_table_chain_numbers_its_entries(h: Harness) -> None:
    futures = h.run_group(
        [spin("a", "R1"), spin("b", "R1", table="T2"), roll("c", "R1"), spin("d", "R1",
         client="c2"), other("dice_roll_batch", "e", "R9")]
    )  # fmt: skip
    chain = [(e.table_id, e.client, e.table_seq, e.table_prev)
             for e in (entry(f.result()) for f in futures)]  # fmt: skip
    assert chain == [("T", "c", 1, None), ("T2", "c", 1, None), ("T", "c", 2, 0),
                     ("T", "c2", 1, None), ("T", "c", 3, 2)]  # fmt: skip
    # A restart continues the chains from the store (Harness.run_group: a fresh appender).
    later = entry(h.run_group([spin("f", "R2")])[0].result())
    assert (later.index, later.table_seq, later.table_prev) == (5, 4, 4)
    assert entry(h.run_group([spin("f", "R2")])[0].result()).table_seq == 4  # a replay


def test_replicas_sharing_a_store_share_the_rules_and_the_chains() -> None:
    store = MemoryStorage()
    replicas = [
        Appender(
            storage=store, tree=MerkleTree.load(store), signer=SIGNER, origin="unit.example/log",
            clock=FakeClock(),
            generator=DeterministicGenerator(entropy_input=bytes([i]) * 32, nonce=b"\x02" * 16),
        )
        for i in (1, 2)
    ]  # fmt: skip
    for r in replicas:
        r.start()
    try:
        # Many requests for one slot, dealt over both: exactly one outcome.
        futures = [replicas[i % 2].submit(spin(f"s{i}", "R1")) for i in range(20)]
        futures += [replicas[i % 2].submit(roll(f"d{i}", f"R{i}")) for i in range(10)]
        concurrent.futures.wait(futures, timeout=30)
    finally:
        for r in replicas:
            r.stop(publish=False)
    won = [f for f in futures[:20] if f.exception() is None]
    assert len(won) == 1
    for f in futures[:20]:
        if f is not won[0]:
            assert isinstance(f.exception(), SlotFilled)
    entries = [LogEntry.decode(e.data) for e in store.entries(0, store.tree_size())]
    assert len(entries) == 11
    assert [e.table_seq for e in entries] == list(range(1, 12))
    assert [e.table_prev for e in entries] == [None, *range(10)]


# -- order rules of issue 34: Mega Fire Blaze's jackpot, Blazing 7's bonus round ---------------


def landed(rid: str, round_id: str, number: str, *, wheel: str = "double_zero",
           kind: str = "roulette_spin") -> DrawRequest:  # fmt: skip
    """A spin (or a lab batch entry) whose ball came to rest on ``number`` (a fixed draw)."""
    final = {"number": number, "colour": "red", "position": 0, "voided": False}
    return DrawRequest(
        client_id="c", request_id=rid, table_id="T", round_id=round_id, session_id="",
        kind=kind, params={"wheel": wheel},
        draw=lambda src: {"wheel": wheel, "spins": [final], "final": final},
    )  # fmt: skip


def balls(rid: str, round_id: str, *, game_server: bool = True, wheel: str = "double_zero"
          ) -> DrawRequest:  # fmt: skip
    def draw(src: RandomSource) -> Mapping[str, JsonValue]:
        return {"wheel": wheel, "balls": [src.randbelow(38) for _ in range(3)]}

    return DrawRequest(
        client_id="c", request_id=rid, table_id="T", round_id=round_id, session_id="",
        kind="multiball", params={"wheel": wheel, "balls": 3}, draw=draw,
        game_server=game_server,
    )  # fmt: skip


def test_a_game_servers_multiball_needs_its_rounds_spin_on_a_blazing_7(h: Harness) -> None:
    h.run_group([landed("s1", "R1", "8"), landed("s2", "R2", "27"),
                 landed("s3", "R3", "7", wheel="single_zero"),
                 landed("b4", "R4", "17", kind="roulette_spin_batch")])  # fmt: skip
    assert h.storage.tree_size() == 4
    refused = {
        "R1": ("multiball_not_triggered", "came to rest on 8"),
        "R3": ("multiball_wheel", "single_zero wheel"),
        "R4": ("multiball_without_spin", "no spin yet"),  # a lab batch entry is no spin
        "R5": ("multiball_without_spin", "no spin yet"),
    }
    for round_id, (rule, said) in refused.items():
        with pytest.raises(RoundOrderViolation, match=said) as info:
            h.run_group([balls(f"m-{round_id}", round_id)])[0].result()
        assert info.value.rule == rule
        assert f"round '{round_id}'" in str(info.value)
    assert h.storage.tree_size() == 4  # nothing logged
    assert h.storage.entry_by_request("c", "m-R1") is None
    ok = entry(h.run_group([balls("m-R2", "R2")])[0].result())
    assert ok.params["spin_index"] == 1
    assert ok.index == 4
    # Nothing was drawn for the refusals: the accepted draw has the generator's first bytes.
    ref = RandomSource(DeterministicGenerator(entropy_input=b"\x01" * 32, nonce=b"\x02" * 16))
    assert ok.outcome["balls"] == [ref.randbelow(38) for _ in range(3)]
    # A lab's draw of the balls alone (rng-certify rtp --live, collect multiball_3) names no spin.
    lab = entry(h.run_group([balls("m-lab", "R9", game_server=False)])[0].result())
    assert "spin_index" not in lab.params
    # Within one group: the spin first, then the balls.
    group = h.run_group([landed("s6", "R6", "17"), balls("m-R6", "R6")])
    assert entry(group[1].result()).params["spin_index"] == entry(group[0].result()).index


def test_a_mega_fire_blaze_round_and_a_jackpot_tier_refuse_each_other(h: Harness) -> None:
    h.run_group([other("fire_numbers", "f1", "R1"), other("jackpot_tier", "j2", "R2")])
    with pytest.raises(RoundOrderViolation, match=r"round 'R1'.*617b\.7\(g\)\(5\)\(ii\)") as i1:
        h.run_group([other("jackpot_tier", "j1", "R1")])[0].result()
    with pytest.raises(RoundOrderViolation, match=r"round 'R2'.*617b\.7\(g\)\(5\)\(ii\)") as i2:
        h.run_group([other("fire_numbers", "f2", "R2")])[0].result()
    assert i1.value.rule == i2.value.rule == "jackpot_in_mega_fire_blaze"
    assert h.storage.tree_size() == 2
    # In one group, either order.
    group = h.run_group([other("jackpot_tier", "j3", "R3"), other("fire_numbers", "f3", "R3")])
    with pytest.raises(RoundOrderViolation, match="jackpot tier at log index 2"):
        group[1].result()
    assert h.storage.tree_size() == 3
