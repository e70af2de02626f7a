"""rng_service.audit.history and .dispute without a service: a table's chain judged from proven
entries, each break named; entries proven against a signed checkpoint with proofs from the
RFC 6962 reference definitions; disputes that the lookup and the chain disagree on.

The log here: client c, table T1 rounds R0..R9 one spin each (seq 1..10), interleaved with
table T2 entries; round R4 also has a void; round R6 a fire_numbers draw first."""

from __future__ import annotations

import io
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.audit import VerificationFailure, open_head
from rng_service.audit.dispute import judge_dispute, span_of
from rng_service.audit.history import (
    ChainBreak,
    HistoryFile,
    HistoryFormatError,
    ProvenItem,
    check_history,
    prove_entries,
    read_history,
    write_history,
)
from rng_service.log import merkle
from rng_service.log.entry import GeneratorRef, LogEntry
from rng_service.log.note import Checkpoint, Ed25519NoteSigner, sign_note

ORIGIN = "history.test/log"
SIGNER = Ed25519NoteSigner(ORIGIN, Ed25519PrivateKey.from_private_bytes(b"\x09" * 32))


def _log() -> list[LogEntry]:
    out: list[LogEntry] = []
    heads: dict[str, tuple[int, int]] = {}

    def add(table: str, round_id: str, kind: str, slot: str, **extra: Any) -> None:
        index = len(out)
        head = heads.get(table)
        seq, prev = (1, None) if head is None else (head[1] + 1, head[0])
        out.append(
            LogEntry(
                index=index, timestamp_ns=1_767_225_600_000_000_000 + index * 1000, kind=kind,
                params=extra.get("params", {}), outcome=extra.get("outcome", {"n": index}),
                client="c", table_id=table, round_id=round_id, session_id="",
                request_id=f"q{index}",
                generator=GeneratorRef("g", 0, False), slot=slot, table_seq=seq, table_prev=prev,
            )
        )  # fmt: skip
        heads[table] = (index, seq)

    for r in range(10):
        if r == 6:
            add("T1", "R6", "fire_numbers", "fire_numbers")
        add("T1", f"R{r}", "roulette_spin", "spin")
        add("T2", f"X{r}", "roulette_spin", "spin")
        if r == 4:
            add("T1", "R4", "round_void", "void", params={"reason": "jam", "operator": "op"})
    return out


LOG = _log()
DATA = [e.encode() for e in LOG]
LEAVES = [merkle.leaf_hash(d) for d in DATA]
T1 = [e for e in LOG if e.table_id == "T1"]


def head(size: int = len(LOG)) -> Any:
    root = merkle.root_from_leaf_hashes(LEAVES[:size])
    note = sign_note(Checkpoint(ORIGIN, size, root).body(), [SIGNER])
    return open_head(note, [SIGNER.verifier()], source="the test checkpoint", origin=ORIGIN)


def items(indexes: list[int], size: int = len(LOG)) -> list[ProvenItem]:
    return [
        ProvenItem(i, DATA[i], LEAVES[i], tuple(merkle.inclusion_proof(LEAVES[:size], i)))
        for i in indexes
    ]


# -- history ---------------------------------------------------------------------------------


def test_a_whole_chain_and_a_stretch_of_it_are_complete() -> None:
    report = check_history(T1, client="c", table_id="T1")
    assert (report.first_seq, report.last_seq, report.starts_chain) == (1, 12, True)
    part = check_history(T1[3:7], client="c", table_id="T1", first_seq=4, last_seq=7)
    assert (part.first_seq, part.last_seq, part.starts_chain) == (4, 7, False)


@pytest.mark.parametrize(
    ("entries", "kw", "message"),
    [
        (T1[:4] + T1[5:], {}, r"broken after seq 4 \(log index \d+\): the next entry it holds "
         r"is seq 6 \(log index \d+, whose predecessor is log index \d+\): seq 5 is missing"),
        (T1[:4] + T1[7:], {}, r"seq 5 to 7 are missing"),
        (T1[1:], {}, r"starts at seq 2 \(log index \d+\), not at seq 1: seq 1 is missing"),
        (T1[:-1], {"last_seq": 12}, r"ends at seq 11 .*but should reach seq 12: seq 12 is "
         r"missing"),
        ([], {"last_seq": 3}, r"should reach seq 3 but holds no entry: seq 1 to 3 are missing"),
        ([*T1[:3], LOG[1]], {}, r"log index 1 is of table 'T2' of client 'c', not of the table "
         r"'T1'"),
        ([*T1[:3], T1[2]], {}, r"the numbers go back"),
    ],
)  # fmt: skip
def test_each_break_is_named(entries: list[LogEntry], kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ChainBreak, match=message):
        check_history(entries, client="c", table_id="T1", **kw)


def test_two_entries_claiming_one_place_are_a_break() -> None:
    forged = LogEntry(**_fields(T1[4], table_prev=T1[2].index))
    with pytest.raises(ChainBreak, match=r"names log index .* as its predecessor, not"):
        check_history([*T1[:4], forged], client="c", table_id="T1")


def _fields(entry: LogEntry, **changes: Any) -> dict[str, Any]:
    names = [
        "index", "timestamp_ns", "kind", "params", "outcome", "client", "table_id", "round_id",
        "session_id", "request_id", "generator", "profile_sha256", "slot", "table_seq",
        "table_prev", "version",
    ]  # fmt: skip
    return {**{n: getattr(entry, n) for n in names}, **changes}


def test_entries_are_proven_against_the_signed_checkpoint() -> None:
    indexes = [e.index for e in T1]
    proven = prove_entries(items(indexes), head())
    assert [e.index for e in proven] == indexes
    bad = items(indexes)
    bad[3] = ProvenItem(bad[3].index, bad[3].data, bad[3].leaf_hash, bad[3].proof[:-1])
    with pytest.raises(VerificationFailure, match=r"is not in the test checkpoint .*inclusion"):
        prove_entries(bad, head())
    moved = items([indexes[2]])[0]
    with pytest.raises(VerificationFailure, match="own index field says"):
        prove_entries([ProvenItem(indexes[3], moved.data, moved.leaf_hash, moved.proof)], head())
    changed = DATA[0].replace(b'"n":0', b'"n":1')
    with pytest.raises(VerificationFailure, match="is not SHA-256"):
        prove_entries([ProvenItem(0, changed, LEAVES[0], ())], head())
    with pytest.raises(VerificationFailure, match="beyond the checkpoint's tree of 5"):
        prove_entries(items([6]), head(5))


def test_a_history_file_round_trips_and_its_syntax_is_checked() -> None:
    saved = HistoryFile(ORIGIN, "c", "T1", 1, 12, len(LOG), "note\n", tuple(items([0, 2])))
    out = io.StringIO()
    write_history(out, saved)
    assert read_history(out.getvalue().splitlines(keepends=True)) == saved
    lines = out.getvalue().splitlines(keepends=True)
    with pytest.raises(HistoryFormatError, match="line 2: proof: is not a 32-byte hash"):
        read_history([lines[0], lines[1].replace('"proof":["', '"proof":["zz')])
    with pytest.raises(HistoryFormatError, match="line 1: format"):
        read_history(['{"format":"other"}\n'])
    with pytest.raises(HistoryFormatError, match="line 1: tree_size"):
        read_history([lines[0].replace(f'"tree_size":{len(LOG)}', '"tree_size":-1')])


# -- disputes --------------------------------------------------------------------------------


def found(*rounds: str, log: list[LogEntry] = T1) -> dict[str, list[LogEntry]]:
    return {r: [e for e in log if e.round_id == r] for r in rounds}


def span(rounds: dict[str, list[LogEntry]], log: list[LogEntry] = T1) -> list[LogEntry]:
    bounds = span_of(rounds)
    assert bounds is not None
    return [e for e in log if bounds[0] <= (e.table_seq or 0) <= bounds[1]]


def test_a_round_between_its_neighbours() -> None:
    rounds = found("R2")
    report = judge_dispute(client="c", table_id="T1", found=rounds, span=span(rounds))
    (finding,) = report.rounds
    assert [e.slot for e in finding.entries] == ["spin"]
    assert not finding.voids
    assert report.previous is not None
    assert report.previous.round_id == "R1"
    assert report.following is not None
    assert report.following.round_id == "R3"
    assert report.others == ()


def test_a_voided_round_and_the_rounds_between() -> None:
    rounds = found("R4")  # its spin, then its void (logged right after it here)
    report = judge_dispute(client="c", table_id="T1", found=rounds, span=span(rounds))
    assert [e.slot for e in report.rounds[0].entries] == ["spin", "void"]
    assert report.rounds[0].voids[0].params["reason"] == "jam"
    several = found("R5", "R6", "R7")
    report = judge_dispute(client="c", table_id="T1", found=several, span=span(several))
    assert [e.slot for e in report.rounds[1].entries] == ["fire_numbers", "spin"]
    assert report.previous is not None
    assert report.previous.round_id == "R4"  # R4's void comes just before R5's spin
    assert report.following is not None
    assert report.following.round_id == "R8"


def test_the_first_and_the_latest_round_of_a_table() -> None:
    first = found("R0")
    report = judge_dispute(client="c", table_id="T1", found=first, span=span(first))
    assert report.previous is None
    latest = found("R9")
    report = judge_dispute(client="c", table_id="T1", found=latest, span=span(latest))
    assert report.following is None


def test_an_entry_the_lookup_hid_is_named() -> None:
    """The chain holds R6's fire_numbers draw, the lookup of R6 returned only its spin (a
    store whose round column of the draw was changed)."""
    rounds = found("R6")
    hidden = {"R6": [e for e in rounds["R6"] if e.slot == "spin"]}
    with pytest.raises(VerificationFailure, match=r"is of round 'R6', but the lookup of that "
                       r"round did not return it: the store hid it"):  # fmt: skip
        judge_dispute(client="c", table_id="T1", found=hidden, span=span(hidden))


def test_a_found_entry_must_be_the_chains_and_of_the_round() -> None:
    rounds = found("R2")
    with pytest.raises(VerificationFailure, match="the table's chain holds no such seq"):
        judge_dispute(client="c", table_id="T1", found=rounds, span=span(rounds)[:1])
    other = {"R2": found("R3")["R3"]}
    with pytest.raises(VerificationFailure, match="but its signed bytes are of round 'R3'"):
        judge_dispute(client="c", table_id="T1", found=other, span=span(rounds))
    with pytest.raises(VerificationFailure, match="has no entry in the log"):
        judge_dispute(client="c", table_id="T1", found={"R77": []}, span=[])
    gap = [e for e in span(rounds) if e.round_id != "R1"]  # the entry before is gone
    with pytest.raises(ChainBreak):
        judge_dispute(client="c", table_id="T1", found=rounds, span=gap)


def test_a_slot_filled_twice_fails_the_dispute() -> None:
    """A second spin in one round (a re-draw through an edited store), chained as if it were
    legitimate: the chain is unbroken, yet the round's spin was drawn twice."""

    def spin(index: int, round_id: str, seq: int) -> LogEntry:
        return LogEntry(
            index=index, timestamp_ns=1_767_225_600_000_000_000 + index, kind="roulette_spin",
            params={}, outcome={"n": index}, client="c", table_id="T9", round_id=round_id,
            session_id="", request_id=f"d{index}", generator=GeneratorRef("g", 0, False),
            slot="spin", table_seq=seq, table_prev=None if seq == 1 else index - 1,
        )  # fmt: skip

    log = [spin(0, "R1", 1), spin(1, "R2", 2), spin(2, "R2", 3), spin(3, "R3", 4)]
    rounds = found("R2", log=log)
    twice = r"round 'R2' of table 'T9' \(client 'c'\) has its slot 'spin' filled twice: log "
    with pytest.raises(VerificationFailure, match=twice + "index 1 and log index 2"):
        judge_dispute(client="c", table_id="T9", found=rounds, span=span(rounds, log=log))
    once = found("R3", log=log)
    report = judge_dispute(client="c", table_id="T9", found=once, span=span(once, log=log))
    assert [e.index for e in report.rounds[0].entries] == [3]


def test_an_entry_of_a_disputed_session_the_lookup_hid_is_named() -> None:
    """Two downs of session S found (the lookup by session), a third in the chain between
    them whose session the lookup did not return."""

    def spin(index: int, round_id: str, session: str) -> LogEntry:
        return LogEntry(
            index=index, timestamp_ns=1_767_225_600_000_000_000 + index, kind="roulette_spin",
            params={}, outcome={"n": index}, client="c", table_id="T9", round_id=round_id,
            session_id=session, request_id=f"s{index}", generator=GeneratorRef("g", 0, False),
            slot="spin", table_seq=index + 1, table_prev=None if index == 0 else index - 1,
        )  # fmt: skip

    log = [spin(0, "D0", ""), spin(1, "D1", "S"), spin(2, "D2", "S"), spin(3, "D3", "S")]
    seen = found("D1", "D3", log=log)  # D2 hidden from the session lookup
    with pytest.raises(VerificationFailure, match=r"log index 2 \(seq 3 of the table's chain, "
                       r"round 'D2'\) is of session 'S', but the lookup of that session did "
                       r"not return it"):  # fmt: skip
        judge_dispute(client="c", table_id="T9", found=seen, span=span(seen, log=log),
                      sessions=["S"])  # fmt: skip
    whole = found("D1", "D2", "D3", log=log)
    report = judge_dispute(
        client="c", table_id="T9", found=whole, span=span(whole, log=log), sessions=["S"]
    )
    assert report.sessions == ("S",)
    assert report.others == ()


def test_lab_entries_of_a_rounds_table_and_round_id_are_named_apart() -> None:
    """A DrawBatch or stream entry naming the round's table and round id fills no slot of the
    round (its own lab/<request id>): the dispute lists only the round's own slots and names
    the lab entries apart; a round with nothing but lab entries has no outcome."""

    def entry(index: int, round_id: str, kind: str, slot: str) -> LogEntry:
        return LogEntry(
            index=index, timestamp_ns=1_767_225_600_000_000_000 + index, kind=kind,
            params={}, outcome={"n": index}, client="c", table_id="T9", round_id=round_id,
            session_id="", request_id=f"d{index}", generator=GeneratorRef("g", 0, False),
            slot=slot, table_seq=index + 1, table_prev=None if index == 0 else index - 1,
        )  # fmt: skip

    log = [
        entry(0, "R1", "roulette_spin", "spin"),
        entry(1, "R2", "roulette_spin_batch", "lab/d1"),
        entry(2, "R2", "roulette_spin", "spin"),
        entry(3, "R2", "roulette_spin_batch", "lab/d3"),
        entry(4, "R3", "dice_roll_batch", "lab/d4"),
        entry(5, "R4", "roulette_spin", "spin"),
    ]
    rounds = found("R2", log=log)
    report = judge_dispute(client="c", table_id="T9", found=rounds, span=span(rounds, log=log))
    (finding,) = report.rounds
    assert [(e.index, e.slot) for e in finding.entries] == [(2, "spin")]
    assert [(e.index, e.slot) for e in finding.lab] == [(1, "lab/d1"), (3, "lab/d3")]
    assert report.previous is not None
    assert report.previous.index == 0
    assert report.following is not None
    assert report.following.index == 4
    # A lab entry the lookup hid is still named (it is in the chain, of a disputed round).
    hidden = {"R2": [e for e in rounds["R2"] if e.index != 3]}
    with pytest.raises(VerificationFailure, match=r"log index 3 .* did not return it"):
        judge_dispute(client="c", table_id="T9", found=hidden, span=span(rounds, log=log))
    lab_only = found("R3", log=log)
    with pytest.raises(VerificationFailure, match=r"round 'R3' .* has no outcome in the log: "
                       r"the only entries naming it are lab entries \(log index 4"):  # fmt: skip
        judge_dispute(client="c", table_id="T9", found=lab_only, span=span(lab_only, log=log))
