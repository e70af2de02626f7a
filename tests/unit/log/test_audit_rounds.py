"""rng-audit verify's round rules over a whole export (``RoundTracker``), from signed bytes.

Logs are built here the way the sequencer numbers them (index, table chain) and signed with the
log's real key, so that each one is what a sequencer that broke a rule, or a store whose
columns were edited under it, would publish: only the round rules can catch them (the leaf
hashes, the tree, the signatures and the chains all verify). The expected rules are those of
docs/log-format.md ("Slots and chains", "Format 1 and format 2 in one log") and 58 Pa. Code
617b.7, written here from the docs, not from the verifier.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.audit import VerificationFailure, verify_export, write_export
from rng_service.log import merkle
from rng_service.log.entry import GeneratorRef, JsonValue, LogEntry
from rng_service.log.note import Checkpoint, Ed25519NoteSigner, sign_note

ORIGIN = "audit.test/log"
SIGNER = Ed25519NoteSigner("audit-test", Ed25519PrivateKey.from_private_bytes(b"\x01" * 32))
KEYS = [SIGNER.verifier()]
PROFILE = "ab" * 32


@dataclass
class Log:
    """Entries appended as the sequencer numbers them: index, and each (client, table) chain's
    table_seq and table_prev (format 2), or format 1 entries without them."""

    entries: list[bytes] = field(default_factory=list)
    heads: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)

    def add(
        self,
        kind: str,
        round_id: str,
        *,
        slot: str | None = None,
        request_id: str | None = None,
        table: str = "T5",
        client: str = "default",
        params: dict[str, JsonValue] | None = None,
        outcome: dict[str, JsonValue] | None = None,
        profile: str = "",
        version: int = 2,
    ) -> int:
        index = len(self.entries)
        chain: dict[str, Any] = {}
        if version == 2:
            head = self.heads.get((client, table))
            seq = 1 if head is None else head[0] + 1
            chain = {"slot": slot or kind, "table_seq": seq,
                     "table_prev": None if head is None else head[1]}  # fmt: skip
            self.heads[(client, table)] = (seq, index)
        self.entries.append(
            LogEntry(
                index=index, timestamp_ns=1_767_225_600_000_000_000 + index * 1000, kind=kind,
                params=params or {}, outcome=outcome or {}, client=client, table_id=table,
                round_id=round_id, session_id="", request_id=request_id or f"q{index}",
                generator=GeneratorRef("ab12", 0, False), profile_sha256=profile,
                version=version, **chain,
            ).encode()
        )  # fmt: skip
        return index

    def spin(self, round_id: str, number: str = "7", wheel: str = "double_zero", **kw: Any) -> int:
        final: dict[str, JsonValue] = {"number": number, "colour": "red"}
        outcome: dict[str, JsonValue] = {"final": final, "spins": [final], "wheel": wheel}
        return self.add(
            "roulette_spin", round_id, slot="spin", params={"wheel": wheel}, outcome=outcome, **kw
        )

    def fire(self, round_id: str, numbers: tuple[str, ...] = ("7", "17"), **kw: Any) -> int:
        outcome: dict[str, JsonValue] = {"count": len(numbers), "numbers": list(numbers)}
        params: dict[str, JsonValue] = {"profile": {"name": "p"}}
        return self.add(
            "fire_numbers", round_id, slot="fire_numbers", profile=PROFILE, params=params,
            outcome=outcome, **kw,
        )  # fmt: skip

    def bonus(self, round_id: str, fire: int, spin: int, count: int = 2, **kw: Any) -> int:
        kw.setdefault("profile", PROFILE)
        params: dict[str, JsonValue] = {"profile": {"name": "p"}, "fire_number_count": count,
                                        "fire_numbers_index": fire, "spin_index": spin}  # fmt: skip
        return self.add("mega_fire_blaze_bonus", round_id, slot="bonus", params=params,
                        outcome={"total": 5}, **kw)  # fmt: skip

    def balls(self, round_id: str, spin: int | None = None, wheel: str = "double_zero",
              **kw: Any) -> int:  # fmt: skip
        """A multi-ball draw: a game server's names its round's spin, a lab's none."""
        params: dict[str, JsonValue] = {"wheel": wheel, "balls": 3}
        if spin is not None:
            params["spin_index"] = spin
        return self.add("multiball", round_id, slot="multiball", params=params,
                        outcome={"wheel": wheel, "balls": []}, **kw)  # fmt: skip

    def void(self, round_id: str, **kw: Any) -> int:
        return self.add(
            "round_void", round_id, slot="void", request_id=f"void@v{len(self.entries)}",
            params={"reason": "wheel fault"}, outcome={"voided": True}, **kw,
        )  # fmt: skip

    def export(self) -> list[str]:
        """The export of these entries with one checkpoint the log's key signed over them."""
        data = self.entries
        out = io.StringIO()
        root = merkle.root_from_leaf_hashes([merkle.leaf_hash(d) for d in data])
        note = sign_note(Checkpoint(ORIGIN, len(data), root).body(), [SIGNER]).decode()
        write_export(
            out, origin=ORIGIN, checkpoints=[(note, 1)],
            entries=[(i, merkle.leaf_hash(d), d) for i, d in enumerate(data)],
            tree_size=len(data),
        )  # fmt: skip
        return out.getvalue().splitlines(keepends=True)


def refused(log: Log, message: str) -> VerificationFailure:
    """verify fails with ``message`` at the last entry; --fast (no entry checks) passes."""
    lines = log.export()
    with pytest.raises(VerificationFailure, match=message) as info:
        verify_export(lines, KEYS)
    assert info.value.index == len(log.entries) - 1
    verify_export(lines, KEYS, check_entries=False)  # signed, hashed, chained: only rules catch it
    return info.value


def a_log_of_every_rule_kept() -> Log:
    log = Log()
    log.spin("R1")
    fire = log.fire("R2")
    spin = log.spin("R2", number="17", wheel="single_zero")
    log.bonus("R2", fire, spin)
    log.add("multiball", "R2", slot="multiball")
    log.add("uniform_int", "R3")  # unnamed generic draw: its kind's slot
    log.add("uniform_int", "R3", slot="door-1")
    log.add("uniform_int", "R3", slot="door-2")
    log.spin("R4")
    log.void("R4")
    log.add("roulette_spin_batch", "R4", slot="lab/batch-1", request_id="batch-1")  # lab: own slot
    log.spin("R1", table="T6")  # the same round id on another table
    log.spin("R1", client="other")  # ... of another client
    log.spin("R5", request_id="q0", client="other2")  # a request id of another client
    return log


def test_a_log_that_keeps_every_rule_verifies() -> None:
    report = verify_export(a_log_of_every_rule_kept().export(), KEYS)
    assert report.tree_size == 14


def test_a_slot_filled_twice_is_a_game_event_drawn_twice() -> None:
    """A new request id for a spun round: what the sequencer refuses, and what it would log
    if the first spin's round or slot column were edited in the store."""
    log = a_log_of_every_rule_kept()
    log.spin("R1", request_id="another-id")
    e = refused(
        log,
        r"entry 14 \(line 17\) fills slot 'spin' of round 'R1' of table 'T5' \(client "
        r"'default'\), which entry 0 already filled: a game event was drawn twice",
    )
    assert "entry 0" in str(e)


def test_a_bonus_or_generic_slot_filled_twice() -> None:
    log = a_log_of_every_rule_kept()
    log.add("uniform_int", "R3", slot="door-2")
    refused(log, r"entry 14 .* fills slot 'door-2' of round 'R3' .* which entry 7 already filled")
    log = a_log_of_every_rule_kept()
    log.bonus("R2", 1, 2, request_id="again")
    refused(log, r"entry 14 .* fills slot 'bonus' of round 'R2' .* which entry 3 already filled")


def test_a_request_id_is_logged_once_per_client() -> None:
    log = a_log_of_every_rule_kept()
    log.spin("R9", request_id="q0")
    refused(
        log,
        r"entry 14 \(line 17\) has request id 'q0' of client 'default', which entry 0 already "
        r"has",
    )


def test_nothing_after_a_void() -> None:
    log = a_log_of_every_rule_kept()
    log.add("dice_roll", "R4", slot="dice")
    refused(
        log,
        r"entry 14 .* is in slot 'dice' of round 'R4' of table 'T5' \(client 'default'\), "
        r"but that round was voided at entry 9",
    )
    log = a_log_of_every_rule_kept()
    log.void("R4")
    refused(log, r"entry 14 .* round 'R4' .* voided at entry 9")


@pytest.mark.parametrize(
    ("kind", "slot", "request_id"),
    [
        ("roulette_spin", "spin2", None),  # a spin escaping its round's spin slot
        ("uniform_int", "spin", None),  # a generic draw taking a game kind's slot
        ("roulette_spin_batch", "lab/other", "batch-9"),  # a lab entry in another's slot
        ("roulette_spin", "lab/x", "x"),  # a game kind in a lab slot
        ("roulette_spin_batch", "batch", "batch-9"),  # a lab entry in a round's slot
    ],
)
def test_a_slot_agrees_with_its_kind(kind: str, slot: str, request_id: str | None) -> None:
    log = a_log_of_every_rule_kept()
    log.add(kind, "R1", slot=slot, request_id=request_id)
    refused(log, rf"entry 14 .* is a {kind} entry in slot '{slot}' .*: that is not its kind's slot")


def test_mega_fire_blaze_order() -> None:
    log = Log()
    log.spin("R1")
    log.fire("R1")
    refused(log, r"entry 1 .*fire_numbers.* breaks the round's order: the Fire Numbers come "
                 r"before the round's spin .*617b.7\(e\).*entry 0")  # fmt: skip

    log = Log()
    log.fire("R1")
    log.spin("R1", wheel="double_zero")
    refused(log, r"entry 1 .* single zero wheel \(58 Pa. Code 617b.7\(a\)\), not 'double_zero'")

    log = Log()
    log.bonus("R1", 0, 0)
    refused(log, r"entry 0 .* the round has no Fire Number draw before it")

    log = Log()
    fire = log.fire("R1")
    log.bonus("R1", fire, 0)
    refused(log, r"entry 1 .* the round has no spin before it")

    log = Log()
    fire = log.fire("R1", numbers=("3", "4"))
    spin = log.spin("R1", number="7", wheel="single_zero")
    log.bonus("R1", fire, spin)
    refused(log, r"entry 2 .* came to rest on 7, not on one of its Fire Numbers \['3', '4'\]")

    log = Log()
    other = log.fire("R0")
    fire = log.fire("R1")
    spin = log.spin("R1", wheel="single_zero")
    log.bonus("R1", other, spin)
    refused(log, r"entry 3 .* names Fire Number draw 0 and spin 2, but the round's are entries "
                 r"1 and 2")  # fmt: skip

    log = Log()
    fire = log.fire("R1")
    spin = log.spin("R1", wheel="single_zero")
    log.bonus("R1", fire, spin, count=5)
    refused(log, r"entry 2 .* Fire Number count or profile is not that of the round's")

    log = Log()
    fire = log.fire("R1")
    spin = log.spin("R1", wheel="single_zero")
    log.bonus("R1", fire, spin, profile="cd" * 32)
    refused(log, r"entry 2 .* Fire Number count or profile is not that of the round's")


def test_format_1_entries_fill_their_kinds_slot_from_the_first() -> None:
    """docs/log-format.md: a format 1 entry fills the slot of its kind (the first one of a
    round: format 1 logged several), so a round begun before the upgrade is not drawn again."""
    log = Log()
    log.spin("R1", version=1)
    log.spin("R1", version=1)  # format 1 had no slots: allowed
    fire = log.fire("R2", version=1)
    spin = log.spin("R2", version=2, wheel="single_zero")
    log.bonus("R2", fire, spin)  # a round begun before the upgrade, finished after it
    verify_export(log.export(), KEYS)
    log.spin("R1")
    refused(log, r"entry 5 .* fills slot 'spin' of round 'R1' .* which entry 0 already filled")


def test_no_jackpot_tier_draw_in_a_mega_fire_blaze_round() -> None:
    """617b.7(g)(5)(ii): the jackpot's tier is drawn inside the bonus game; a round holds a
    jackpot tier draw or Fire Numbers, not both, in either order."""
    log = Log()
    log.fire("R1")
    log.add("jackpot_tier", "R1", slot="jackpot")
    refused(
        log,
        r"entry 1 .*\(jackpot_tier\) in slot 'jackpot' of round 'R1' .* breaks the "
        r"round's order: the round has Fire Numbers \(entry 0\): .*617b.7\(g\)\(5\)\(ii\)",
    )

    log = Log()
    log.add("jackpot_tier", "R1", slot="jackpot")
    log.fire("R1")
    refused(log, r"entry 1 .*\(fire_numbers\) .* the round has a jackpot tier draw \(entry 0\)")

    log = Log()
    log.add("jackpot_tier", "R1", slot="jackpot", version=1)  # a round begun in release 1
    log.fire("R1")
    refused(log, r"entry 1 .*\(fire_numbers\) .* the round has a jackpot tier draw \(entry 0\)")


def test_release_1_rounds_keep_no_order_rules() -> None:
    """Format 1 logged a jackpot tier beside Fire Numbers (release 1 had no such rule): those
    entries still verify; the rule holds from format 2 on."""
    log = Log()
    log.fire("R1", version=1)
    log.add("jackpot_tier", "R1", version=1)
    log.add("multiball", "R2", version=1, params={"wheel": "double_zero", "balls": 3})
    verify_export(log.export(), KEYS)


def test_a_game_servers_blazing_7s_bonus_round_follows_its_rounds_spin_on_a_7() -> None:
    """617c.2(e): a multi-ball draw naming a spin (a game server's) names its round's spin,
    which came to rest on 7, 17 or 27 on the same wheel type; one naming none is a lab's."""
    for number in ("7", "17", "27"):
        log = Log()
        spin = log.spin("R1", number=number)
        log.balls("R1", spin=spin)
        log.balls("R2")  # a lab's draw alone
        log.add("jackpot_tier", "R3", slot="jackpot")  # a jackpot tier without Fire Numbers
        verify_export(log.export(), KEYS)

    log = Log()
    log.balls("R1", spin=0)
    refused(
        log, r"entry 0 .*\(multiball\) .* names spin 0, but the round has no spin: .*617c.2\(e\)"
    )

    log = Log()
    log.spin("R0")
    spin = log.spin("R1", number="8")
    log.balls("R1", spin=spin)
    refused(log, r"entry 2 .* the round's spin \(entry 1\) did not come to rest on 7, 17 or 27 "
                 r"on a double_zero wheel")  # fmt: skip

    log = Log()
    spin = log.spin("R1", number="7", wheel="single_zero")
    log.balls("R1", spin=spin)  # double zero balls after a single zero spin
    refused(log, r"entry 1 .* did not come to rest on 7, 17 or 27 on a double_zero wheel")

    log = Log()
    other = log.spin("R0")
    log.spin("R1", number="17")
    log.balls("R1", spin=other)
    refused(log, r"entry 2 .* names spin 0, but the round has its spin at entry 1")

    log = Log()  # a spin of a lab batch entry in the same round is no spin of the round
    log.add("roulette_spin_batch", "R1", slot="lab/b1", request_id="b1",
            outcome={"final": {"number": "7"}})  # fmt: skip
    log.balls("R1", spin=0)
    refused(log, r"entry 1 .* names spin 0, but the round has no spin")

    log = Log()  # a round begun in release 1: its format 1 spin is the round's spin
    spin = log.spin("R1", number="27", version=1)
    log.balls("R1", spin=spin)
    verify_export(log.export(), KEYS)
