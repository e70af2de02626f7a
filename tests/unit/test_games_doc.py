"""docs/games.md states the exact RTP of every priced wager: each row's fraction and its decimal
stand on one line of the document, as the code computes them today."""

from __future__ import annotations

from pathlib import Path

from certification.rtp import exact
from rng_service.outcomes.profiles import load_builtin_profile
from rng_service.settlement import six_card_bonus
from rng_service.settlement.paytables import load_builtin_paytables

DOC = (Path(__file__).resolve().parents[2] / "docs" / "games.md").read_text()


def test_every_exact_rtp_is_in_the_document() -> None:
    specs = exact.wager_specs(
        load_builtin_paytables(), load_builtin_profile("mega_fire_blaze_example")
    )
    lines = DOC.splitlines()
    missing = []
    for row in exact.exact_rows(specs):
        if row["conditions"].get("wheel") == "double_zero_as_single_zero":
            continue  # the document says these are the single zero figures
        cells = [
            f"`{row['rtp']['fraction']}`",
            f"{float(row['rtp']['decimal']):.6f}",
            f"{float(row['standard_deviation']):.4f}",
        ]
        cells.append(f"| {row['paytable']} |" if row["game"] != "mega_fire_blaze" else "")
        if row["game"] in ("sic_bo", "mega_fire_blaze"):
            cells.append(f"| {row['wager']}")
        if "wheel" in row["conditions"]:
            cells.append(f"| {row['conditions']['wheel'].replace('_', ' ')} |")
        if row["conditions"].get("reading") in ("ends", "exactly_two"):
            cells.append("other reading" if row["game"] == "sic_bo" else "does not count")
        if not any(all(c in line for c in cells) for line in lines):
            missing.append(row["key"])
    assert not missing, f"docs/games.md lacks or misstates: {missing}"


def test_the_hand_counts_are_in_the_document() -> None:
    counts = six_card_bonus.category_counts()
    for hand in ("straight_flush", "four_of_a_kind", "full_house", "flush", "straight",
                 "three_of_a_kind"):  # fmt: skip
        assert f"| {counts[hand]:,} |" in DOC, hand
    losing = counts["two_pair"] + counts["pair"] + counts["high_card"]
    assert f"| {losing:,} |" in DOC
