"""Builds the ``rng-certify-rtp/v1`` document: exact figures, and measured ones with ``--live``.

Owns: which paytables and profile are priced (the shipped paytables, replaced per game by
``--paytable`` documents; the Mega Fire Blaze profile: the service's with ``--live``, fetched
by ``GetProfile`` and checked against its SHA-256, else ``--profile`` or the shipped
example), the live plan (rounds per game), the verdict of a live run, and the JSON document
(docs/certification.md, "Return to player").

Verdict of a live run (:mod:`certification.verdict`, the rule of the other batteries): a
wager is *judged* when its rounds reach its ``rounds_for_interval`` (below it the normal
interval of the mean is not to be trusted: the minimum sample). **FAIL** when a judged wager's
exact RTP lies outside its family-wise 99 % interval (Bonferroni over the judged wagers);
else **INCONCLUSIVE** when some measured wager is not judged (the reason names the rounds
each game needs); else **PASS**. Without ``--live`` nothing is measured: the document's
verdict is null and the command exits 0.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from certification.evidence import evidence_record, file_facts
from certification.rtp import exact
from certification.rtp import live as play_live
from certification.verdict import Verdict
from rng_service.errors import RngServiceError
from rng_service.outcomes.profiles import (
    MegaFireBlazeProfile,
    load_builtin_profile,
    load_profile_file,
)
from rng_service.settlement.documents import document_from_canonical, load_document_file
from rng_service.settlement.paytables import PaytableDocument, load_builtin_paytables

__all__ = ["FORMAT", "NO_VERDICT_REASON", "RtpInputError", "build_document", "live_verdict"]

#: The format of the rtp JSON document.
FORMAT = "rng-certify-rtp/v1"

EXAMPLE_PROFILE = "mega_fire_blaze_example"
NO_VERDICT_REASON = (
    "exact figures only: nothing was measured, so nothing is judged (--target plays rounds "
    "through a service and judges them)"
)


class RtpInputError(Exception):
    """A file, option or service answer cannot be used; the message says which."""


def _paytables(files: Sequence[Path]) -> dict[str, PaytableDocument]:
    docs = load_builtin_paytables()
    for path in files:
        try:
            doc = load_document_file(path)
        except RngServiceError as e:
            raise RtpInputError(f"--paytable {path}: {e}") from e
        if not isinstance(doc, PaytableDocument):
            raise RtpInputError(f"--paytable {path}: a game profile, not a paytable document")
        docs[doc.game] = doc
    return docs


def _document_json(doc: PaytableDocument | MegaFireBlazeProfile) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": doc.id.name,
        "version": doc.id.version,
        "sha256": doc.id.sha256,
        "example": doc.example,
        "description": doc.description,
    }
    if isinstance(doc, PaytableDocument):
        out["citation"] = doc.citation
    return out


def _client(target: str, tls: tuple[Path | None, Path | None, Path | None]) -> Any:
    from rng_service.rpc.client import ClientTls, RngClient

    given = [p for p in tls if p is not None]
    if not given:
        try:
            play_live.check_loopback(target)
        except play_live.LiveError as e:
            raise RtpInputError(str(e)) from e
        return RngClient(target, timeout=60.0)
    if len(given) != 3:
        raise RtpInputError("--ca, --cert and --key go together")
    ca, cert, key = tls
    if ca is None or cert is None or key is None:
        raise RtpInputError("--ca, --cert and --key go together")
    try:
        return RngClient(target, timeout=60.0, tls=ClientTls.from_files(ca, cert, key))
    except OSError as e:
        raise RtpInputError(f"cannot read a TLS file: {e.filename}: {e.strerror or e}") from e


def _service_profile(client: Any, name: str | None) -> MegaFireBlazeProfile:
    listed = [p for p in client.profiles() if p.get("kind") == "mega_fire_blaze"]
    if name is None:
        if not listed:
            raise RtpInputError("the service serves no Mega Fire Blaze profile (ListProfiles)")
        name = listed[0]["id"]["name"]
    wanted = [p for p in listed if p["id"]["name"] == name]
    if not wanted:
        names = ", ".join(p["id"]["name"] for p in listed) or "none"
        raise RtpInputError(f"--service-profile {name!r} is not served (served: {names})")
    described, canonical = client.profile(name=name)
    try:
        profile = document_from_canonical(canonical, f"GetProfile({name})")
    except RngServiceError as e:
        raise RtpInputError(f"the service's profile {name}: {e}") from e
    if (
        not isinstance(profile, MegaFireBlazeProfile)
        or profile.id.sha256 != described["id"]["sha256"]
    ):
        raise RtpInputError(f"the service's profile {name} does not match its SHA-256")
    return profile


def build_document(
    *,
    paytable_files: Sequence[Path] = (),
    profile_file: Path | None = None,
    live: str | None = None,
    rounds: int = 10_000,
    games: Sequence[tuple[str, int | None]] | None = None,
    service_profile: str | None = None,
    time_limit: float = 600.0,
    run_id: str = "rtp",
    tls: tuple[Path | None, Path | None, Path | None] = (None, None, None),
    generated_at: str = "",
    progress: Callable[[str], None] | None = None,
    argv: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The JSON document of ``rng-certify rtp`` (module docstring); ``live`` is the service's
    address, None for the exact figures alone. ``argv`` (the command's arguments; None: this
    process's) goes into the evidence record."""
    files = [file_facts(p) for p in (*paytable_files, *([profile_file] if profile_file else []))]
    from rng_service.rpc.client import ClientError

    paytables = _paytables(paytable_files)
    plan: dict[str, int] = {}
    for name, count in games or [(g, None) for g in play_live.LIVE_GAMES]:
        if name not in play_live.LIVE_GAMES:
            raise RtpInputError(
                f"--game {name!r}: unknown (known: {', '.join(play_live.LIVE_GAMES)})"
            )
        plan[name] = count or rounds
    target = live
    if target is None:
        if games:
            raise RtpInputError("--game needs --target (the service to measure)")
        try:
            profile = (
                load_profile_file(profile_file)
                if profile_file is not None
                else load_builtin_profile(EXAMPLE_PROFILE)
            )
        except RngServiceError as e:
            raise RtpInputError(f"--profile {profile_file}: {e}") from e
        specs = exact.wager_specs(paytables, profile)
        document = _document(paytables, profile, exact.exact_rows(specs), generated_at)
        document["verdict"] = None
        document["verdict_reason"] = NO_VERDICT_REASON
        document["evidence"] = evidence_record(
            argv=argv, inputs=files, generated_at=generated_at or None
        )
        return document
    if profile_file is not None:
        raise RtpInputError("--profile is for the exact figures alone; --target uses the service's")
    client = _client(target, tls)
    try:
        with client:
            profile = _service_profile(client, service_profile)
            specs = [s for s in exact.wager_specs(paytables, profile) if s.game in plan]
            rows = exact.exact_rows(specs)
            cpu, wall = time.process_time(), time.monotonic()

            def note(g: play_live.GameRounds) -> None:
                if progress is not None:
                    wheel = f" ({g.wheel})" if g.wheel else ""
                    progress(f"rtp: {g.game}{wheel}: {g.rounds} rounds in {g.seconds:.1f} s")

            played = play_live.play(
                client, specs, paytables, plan, profile=profile, run=run_id,
                time_limit=time_limit, on_game=note,
            )  # fmt: skip
            cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    except ClientError as e:
        raise RtpInputError(f"service at {target}: {e}") from e
    except play_live.LiveError as e:
        raise RtpInputError(f"service at {target}: {e}") from e
    document = _document(paytables, profile, rows, generated_at)
    document["live"] = _measured(rows, played, target, run_id, cpu, wall)
    verdict, reason = live_verdict(rows, document["live"]["family"])
    document["verdict"] = verdict.value
    document["verdict_reason"] = reason
    document["criteria"] = {
        "confidence_per_wager": 0.99,
        "z_per_wager": document["live"]["z"],
        "family_confidence": 0.99,
        "multiple_testing": "Bonferroni over the judged wagers (z_family for 0.01 / judged, "
        "two-sided)",
        "z_family": document["live"]["family"]["z"],
        "interval": "measured mean +- z * sigma / sqrt(rounds), sigma the wager's exact "
        "standard deviation",
        "minimum_sample": "a wager is judged at rounds >= its rounds_for_interval (every "
        "return making up 1 % of the variance expected 5 times)",
        "rule": "FAIL if a judged wager's exact RTP lies outside its family-wise interval; "
        "INCONCLUSIVE if nothing is outside but some measured wager is not judged; PASS "
        "otherwise",
    }
    drawn: dict[str, Any] = {
        "live": target,
        "run_id": run_id,
        "service_profile": {"name": profile.id.name, "sha256": profile.id.sha256},
        "rounds": [_rounds_evidence(g) for g in played],
    }
    document["evidence"] = evidence_record(
        argv=argv, inputs=[*files, drawn], generated_at=generated_at or None
    )
    return document


def _rounds_evidence(g: play_live.GameRounds) -> dict[str, Any]:
    """One game's rounds for the evidence record: every log index (as ranges) and the receipt
    of the last entry, whose signed checkpoint covers them all."""
    from rng_service.log.receipt import receipt_to_json

    return {
        "game": g.game,
        "wheel": g.wheel,
        "rounds": g.rounds,
        "entries": len(g.indexes),
        "log_index_ranges": play_live.index_ranges(g.indexes),
        "receipt": (
            None if g.last_receipt is None else json.loads(receipt_to_json(g.last_receipt))
        ),
    }


def live_verdict(rows: Sequence[dict[str, Any]], family: dict[str, Any]) -> tuple[Verdict, str]:
    """The verdict of a live run (module docstring) and its reason, from the rows' ``live``
    members and the family check."""
    measured = [r for r in rows if "live" in r]
    if family["outside"]:
        return Verdict.FAIL, (
            f"{len(family['outside'])} of {family['judged']} judged wagers have their exact "
            f"RTP outside the family-wise 99 % interval: {', '.join(family['outside'][:6])}"
        )
    short = [r for r in measured if not r["live"]["judged"]]
    if not measured:
        return Verdict.INCONCLUSIVE, "no wager was measured"
    if short:
        need: dict[str, int] = {}
        for r in short:
            need[r["game"]] = max(need.get(r["game"], 0), int(r["rounds_for_interval"]))
        games = ", ".join(f"{g} {n:,}" for g, n in need.items())
        return Verdict.INCONCLUSIVE, (
            f"{len(short)} of {len(measured)} measured wagers had too few rounds for their "
            f"interval to be judged (none judged is outside); rounds needed for every wager: "
            f"{games} (--game NAME=N)"
        )
    return Verdict.PASS, (
        f"all {len(measured)} measured wagers judged; each exact RTP lies inside its "
        f"family-wise 99 % interval"
    )


def _document(
    paytables: dict[str, PaytableDocument],
    profile: MegaFireBlazeProfile,
    rows: list[dict[str, Any]],
    generated_at: str,
) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "generated_at": generated_at,
        "games": [
            {"game": game, "title": title, "paytables": _document_json(paytables[game])}
            for game, title in exact.GAME_TITLES.items()
            if any(row["game"] == game for row in rows)
        ],
        "profile": _document_json(profile),
        "rows": rows,
    }


def _measured_parts(total: Any, base: Any, exact: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The measured base game return, bonus contribution (total - base, per round) and total
    of a Mega Fire Blaze inside wager, each with its 99 % interval (the rounds' own standard
    deviation: the parts have no exact variance of their own here) and whether the exact
    fraction lies inside."""
    out: dict[str, dict[str, Any]] = {}
    for name, values in (("base", base), ("bonus", total - base), ("total", total)):
        sd = float(values.std(ddof=1)) if values.size > 1 else 0.0
        ci = play_live.interval(values, sd)
        exact_value = Fraction(exact[name]["fraction"])
        out[name] = {"measured": f"{ci.mean:.6f}", "ci99": [f"{ci.low:.6f}", f"{ci.high:.6f}"],
                     "exact_inside": ci.holds(exact_value)}  # fmt: skip
    return out


def _measured(
    rows: list[dict[str, Any]],
    played: list[play_live.GameRounds],
    target: str,
    run_id: str,
    cpu: float,
    wall: float,
) -> dict[str, Any]:
    by_key = {row["key"]: row for row in rows}
    base_rounds = {key: v for g in played for key, v in g.base_returns.items()}
    measured = [(key, values) for g in played for key, values in g.returns.items()]
    judged = [(k, v) for k, v in measured if v.size >= by_key[k]["rounds_for_interval"]]
    z_family = play_live.family_z(len(judged))
    outside: list[str] = []
    for key, values in measured:
        row = by_key[key]
        value = Fraction(row["rtp"]["fraction"])
        sd = float(row["standard_deviation"])
        ci = play_live.interval(values, sd)
        family = play_live.interval(values, sd, z_family)
        enough = values.size >= row["rounds_for_interval"]
        if enough and not family.holds(value):
            outside.append(key)
        sample_sd = float(values.std(ddof=1)) if values.size > 1 else 0.0
        row["live"] = {
            "rounds": int(values.size),
            "rtp": f"{ci.mean:.6f}",
            "standard_error": f"{ci.standard_error:.6f}",
            "sample_standard_deviation": f"{sample_sd:.6f}",
            "ci99": [f"{ci.low:.6f}", f"{ci.high:.6f}"],
            "exact_inside": ci.holds(value),
            "judged": bool(enough),
            "family_interval": [f"{family.low:.6f}", f"{family.high:.6f}"],
            "exact_inside_family": family.holds(value),
        }
        if key in base_rounds and "mega_fire_blaze_returns" in row:
            row["live"]["mega_fire_blaze_returns"] = _measured_parts(
                values, base_rounds[key], row["mega_fire_blaze_returns"]
            )
    return {
        "target": target,
        "run_id": run_id,
        "confidence": 0.99,
        "z": f"{play_live.Z99:.6f}",
        "games": [
            {
                "game": g.game,
                "wheel": g.wheel,
                "rounds": g.rounds,
                "entries": len(g.indexes),
                "first_index": min(g.indexes, default=None),
                "last_index": max(g.indexes, default=None),
                "log_indexes": play_live.summarise_indexes(g.indexes),
                "seconds": round(g.seconds, 3),
            }
            for g in played
        ],
        "family": {
            "wagers": len(measured),
            "judged": len(judged),
            "z": f"{z_family:.6f}",
            "passed": not outside,
            "outside": outside,
        },
        "cpu_seconds": round(cpu, 3),
        "wall_seconds": round(wall, 3),
    }
