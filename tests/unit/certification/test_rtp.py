"""``rng-certify rtp``: the exact document, its options and errors, the live measurement's
interval and verdict against fair and biased dice (a fake lab client written here), and the
report section."""

from __future__ import annotations

import json
import random
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from certification.cli import main
from certification.report.html import render_html
from certification.rtp import build, live
from rng_service.log.receipt import Receipt
from rng_service.outcomes.profiles import load_builtin_profile

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = "mega_fire_blaze_example"


@pytest.fixture(scope="module")
def exact_doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("rtp") / "rtp.json"
    assert main(["rtp", "--json", str(out)]) == 0
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def test_exact_document_prices_every_paytable_and_wager(exact_doc: dict[str, Any]) -> None:
    assert exact_doc["format"] == "rng-certify-rtp/v1"
    rows = exact_doc["rows"]
    keys = [r["key"] for r in rows]
    assert len(keys) == len(set(keys)) == 100
    count = {g: sum(r["game"] == g for r in rows) for g in live.LIVE_GAMES}
    # Roulette Up: 5 tables x 3 wheels x 2 readings; Blazing 7's: 4 x 2 wheels; Sic Bo: 2 x
    # (21 wagers + the other reading of Two of a Kind); Mega Fire Blaze: 13 bets; Six Card: 5.
    assert count == {"roulette_up": 30, "blazing_7s": 8, "sic_bo": 44, "mega_fire_blaze": 13,
                     "six_card_bonus": 5}  # fmt: skip
    other = {r["key"] for r in rows if not r["decided"]}
    assert len(other) == 15 + 2
    assert all("reading=ends" in k or "reading=exactly_two" in k for k in other)
    for r in rows:
        rtp = Fraction(r["rtp"]["fraction"])
        assert Decimal(r["rtp"]["decimal"]) == pytest.approx(
            Decimal(rtp.numerator) / rtp.denominator
        )
        assert Fraction(r["house_edge"]["fraction"]) == 1 - rtp
        variance = Fraction(r["variance"]["fraction"])
        assert float(r["standard_deviation"]) ** 2 == pytest.approx(float(variance), rel=1e-9)
    by_key = {r["key"]: r for r in rows}
    assert by_key["sic_bo/A/small"]["rounds_for_interval"] == 11  # 5 / (105/216), rounded up
    assert Fraction(by_key["mega_fire_blaze/base/red"]["rtp"]["fraction"]) == Fraction(36, 37)
    assert exact_doc["profile"]["name"] == EXAMPLE
    assert exact_doc["profile"]["example"] is True


def test_a_paytable_document_replaces_the_shipped_one(tmp_path: Path) -> None:
    text = (ROOT / "rng_service" / "paytables" / "sic_bo.toml").read_text()
    head, _, rest = text.partition("[paytables.A]")
    table_a = rest.partition("[paytables.B]")[0].replace('small = "1 to 1"', 'small = "2 to 1"')
    mine = tmp_path / "house.toml"
    mine.write_text(
        head.replace('name = "sic_bo"', 'name = "house_sic_bo"') + "[paytables.H]" + table_a
    )
    doc = build.build_document(paytable_files=[mine])
    sic_bo = [r for r in doc["rows"] if r["game"] == "sic_bo"]
    assert {r["paytable"] for r in sic_bo} == {"H"}
    small = next(r for r in sic_bo if r["wager"] == "small")
    assert Fraction(small["rtp"]["fraction"]) == Fraction(3 * 105, 216)
    assert [g["paytables"]["name"] for g in doc["games"] if g["game"] == "sic_bo"] == [
        "house_sic_bo"
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["rtp", "--game", "sic_bo"], "--game needs --target"),
        (["rtp", "--paytable", "missing.toml"], "missing.toml"),
        (["rtp", "--paytable", f"{ROOT}/rng_service/profiles/{EXAMPLE}.toml"], "not a paytable"),
        (["rtp", "--live", "192.0.2.1:50051"], "loopback"),
        (["rtp", "--target", "127.0.0.1:1", "--game", "craps"], "unknown"),
        (["rtp", "--live", "127.0.0.1:1", "--ca", "ca.pem"], "go together"),
    ],
)
def test_usage_errors_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


#: 617b.7(h)'s odds "to 1" of the inside bets, typed from the regulation, and the numbers each
#: covers (617a.3(e)): the base game returns (m/37)(odds + 1) per unit staked.
REGULATION_ODDS = {"straight_up": (Fraction(29), 1), "split": (Fraction(14), 2),
                   "street": (Fraction(9), 3), "corner": (Fraction(13, 2), 4),
                   "line": (Fraction(4), 6)}  # fmt: skip


def test_mega_fire_blaze_returns_apart(exact_doc: dict[str, Any]) -> None:
    """Each inside wager: the base game's exact return by 617b.7(h) (30/37 for every one: 29 to
    1 straight up on 1 of 37 numbers ...), the bonus's contribution = total - base, and the
    total = the row's RTP, as exact fractions; outside wagers carry no split."""
    mfb = [r for r in exact_doc["rows"] if r["game"] == "mega_fire_blaze"]
    inside = [r for r in mfb if r["wager"].split(":")[0] in REGULATION_ODDS]
    assert len(inside) == 5
    for row in inside:
        odds, covered = REGULATION_ODDS[row["wager"].split(":")[0]]
        parts = row["mega_fire_blaze_returns"]
        assert Fraction(parts["base"]["fraction"]) == Fraction(covered, 37) * (odds + 1)
        assert Fraction(parts["base"]["fraction"]) == Fraction(30, 37)
        total = Fraction(parts["total"]["fraction"])
        assert total == Fraction(row["rtp"]["fraction"])
        assert Fraction(parts["bonus"]["fraction"]) == total - Fraction(30, 37)
        assert Fraction(parts["bonus"]["fraction"]) > 0
    assert all("mega_fire_blaze_returns" not in r for r in mfb if r not in inside)


# --- live, against a fake lab client --------------------------------------------------------


class FakeLab:
    """What ``rng-certify rtp --live`` uses of ``RngClient``, for Sic Bo: the profile calls
    and ``DrawBatch`` of dice, with faces from ``face()`` (a fair or a biased die)."""

    def __init__(self, face: Any) -> None:
        self.face = face
        self.index = 0
        profile = load_builtin_profile(EXAMPLE)
        self._profile = profile

    def __enter__(self) -> FakeLab:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def profiles(self) -> list[dict[str, Any]]:
        return [
            {"kind": "mega_fire_blaze", "id": {"name": EXAMPLE, "sha256": self._profile.id.sha256}}
        ]

    def profile(self, *, name: str) -> tuple[dict[str, Any], bytes]:
        return {"id": {"name": name, "sha256": self._profile.id.sha256}}, self._profile.canonical

    def batch(self, *, count: int, dice: tuple[int, int], **ids: str) -> Any:
        faces = [self.face() for _ in range(count * dice[0])]
        entry = json.dumps({"kind": "dice_roll_batch", "outcome": {"faces": faces}}).encode()
        self.index += 1
        receipt = Receipt(
            index=self.index - 1, entry=entry, leaf_hash=bytes(32), inclusion_proof=(),
            tree_size=self.index, checkpoint=f"fake checkpoint {self.index}\n", replayed=False,
        )  # fmt: skip
        return SimpleNamespace(receipt=receipt)


def _measure(monkeypatch: pytest.MonkeyPatch, face: Any, rounds: int = 20_000) -> dict[str, Any]:
    monkeypatch.setattr(build, "_client", lambda target, tls: FakeLab(face))
    return build.build_document(live="127.0.0.1:1", games=[("sic_bo", rounds)], run_id="fake")


def test_fair_dice_pass_and_a_die_that_never_shows_six_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fair = random.Random(1)
    doc = _measure(monkeypatch, lambda: fair.randint(1, 6))
    assert doc["live"]["family"]["passed"] is True
    # 20,000 rounds reach every Sic Bo wager's rounds_for_interval (at most 1,080).
    assert (doc["verdict"], doc["live"]["family"]["judged"]) == ("PASS", 44)
    # A bad generator written here: a die that never shows 6 makes Small win far more often.
    biased = random.Random(2)
    doc = _measure(monkeypatch, lambda: biased.randint(1, 5))
    family = doc["live"]["family"]
    assert family["passed"] is False
    assert doc["verdict"] == "FAIL"
    assert doc["verdict_reason"].startswith("42 of 44 judged wagers have their exact RTP outside")
    assert "sic_bo/A/small" in family["outside"]
    assert "sic_bo/A/big" in family["outside"]
    small = next(r for r in doc["rows"] if r["key"] == "sic_bo/A/small")
    assert small["live"]["exact_inside"] is False
    page = render_html(rtp=doc, generated_at="now")
    assert "Return to player: <span class='failv'>FAIL</span>" in page
    assert "data-key=\"sic_bo/A/small\" class='fail'" in page


def test_too_few_rounds_is_inconclusive_naming_the_rounds_needed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fair dice, 500 rounds: the wagers whose rounds_for_interval exceeds 500 are not judged,
    so the run cannot PASS; exit 3 and the rounds every Sic Bo wager needs (1,080)."""
    fair = random.Random(3)
    monkeypatch.setattr(build, "_client", lambda target, tls: FakeLab(lambda: fair.randint(1, 6)))
    out = tmp_path / "rtp.json"
    argv = ["rtp", "--live", "127.0.0.1:1", "--game", "sic_bo=500", "--run-id", "few",
            "--json", str(out)]  # fmt: skip
    assert main(argv) == 3
    doc = json.loads(out.read_text())
    need = max(r["rounds_for_interval"] for r in doc["rows"] if r["game"] == "sic_bo")
    assert need == 1080
    assert doc["verdict"] == "INCONCLUSIVE"
    assert "sic_bo 1,080" in doc["verdict_reason"]
    assert "RESULT: INCONCLUSIVE" in capsys.readouterr().out
    assert doc["live"]["family"]["outside"] == []
    # The evidence: the command line, and the rounds' log indexes with the last receipt.
    evidence = doc["evidence"]
    assert evidence["command_line"] == ["rng-certify", *argv]
    drawn = evidence["inputs"][-1]
    assert (drawn["live"], drawn["run_id"]) == ("127.0.0.1:1", "few")
    assert drawn["service_profile"]["name"] == EXAMPLE
    (game,) = drawn["rounds"]
    assert (game["game"], game["rounds"], game["entries"]) == ("sic_bo", 500, 1)
    assert game["log_index_ranges"] == [[0, 0]]
    assert game["receipt"]["format"] == "rng-service-receipt/v1"
    assert game["receipt"]["index"] == 0
    assert doc["criteria"]["family_confidence"] == 0.99
    # Enough rounds for every wager: PASS, exit 0.
    assert main([*argv[:4], "sic_bo=2000", "--run-id", "enough", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["verdict"] == "PASS"


def test_interval_uses_the_exact_standard_deviation() -> None:
    returns = np.array([0.0, 2.0] * 50)
    ci = live.interval(returns, sd=1.0)
    assert ci.mean == 1.0
    assert ci.standard_error == pytest.approx(0.1)
    assert (ci.low, ci.high) == pytest.approx((1 - live.Z99 * 0.1, 1 + live.Z99 * 0.1))
    assert live.family_z(1) == pytest.approx(live.Z99)
    assert live.family_z(50) > live.family_z(10) > live.Z99


def test_log_indexes_are_summarised_as_ranges() -> None:
    assert live.summarise_indexes([5, 0, 1, 2, 3, 7, 8]) == "0-3, 5, 7-8"
    assert live.summarise_indexes([]) == ""
    assert live.summarise_indexes(list(range(0, 20, 2)), limit=3) == "0, 2, 4, ... (7 more ranges)"


def test_report_takes_the_rtp_document(exact_doc: dict[str, Any], tmp_path: Path) -> None:
    source = tmp_path / "rtp.json"
    source.write_text(json.dumps(exact_doc))
    page = tmp_path / "report.html"
    # Exact figures judge nothing: no verdict, and a report of nothing else is INCONCLUSIVE.
    assert exact_doc["verdict"] is None
    assert main(["report", "--rtp", str(source), "--html", str(page)]) == 3
    html = page.read_text()
    assert '<section id="rtp">' in html
    assert html.count('<table class="rtp-table"') == 5
    assert "Return to player: <span class='noverdict'>NO VERDICT</span>" in html
    assert "No verdict: exact figures only" in html
    assert "rng-certify rtp --json" in html  # the evidence record's command line
