"""Builds the ``rng-certify-rtp/v1`` document: exact figures, and measured ones with ``--live``.

Owns: which paytables and profile are priced (the shipped paytables, replaced per game by
``--paytable`` documents; the Mega Fire Blaze profile: the service's with ``--live``, fetched
by ``GetProfile`` and checked against its SHA-256, else ``--profile`` or the shipped
example), the live plan (rounds per game), and the JSON document (docs/certification.md,
"Return to player").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from certification.rtp import exact
from certification.rtp import live as play_live
from certification.rtp.command import FORMAT
from rng_service.errors import RngServiceError
from rng_service.outcomes.profiles import (
    MegaFireBlazeProfile,
    load_builtin_profile,
    load_profile_file,
)
from rng_service.settlement.documents import document_from_canonical, load_document_file
from rng_service.settlement.paytables import PaytableDocument, load_builtin_paytables

__all__ = ["RtpInputError", "build_document"]

EXAMPLE_PROFILE = "mega_fire_blaze_example"


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
    from rng_service.service.client import ClientTls, RngClient

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
) -> dict[str, Any]:
    """The JSON document of ``rng-certify rtp`` (module docstring); ``live`` is the service's
    address, None for the exact figures alone."""
    from rng_service.service.client import ClientError

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
            raise RtpInputError("--game needs --live")
        try:
            profile = (
                load_profile_file(profile_file)
                if profile_file is not None
                else load_builtin_profile(EXAMPLE_PROFILE)
            )
        except RngServiceError as e:
            raise RtpInputError(f"--profile {profile_file}: {e}") from e
        specs = exact.wager_specs(paytables, profile)
        return _document(paytables, profile, exact.exact_rows(specs), generated_at)
    if profile_file is not None:
        raise RtpInputError("--profile is for the exact figures alone; --live uses the service's")
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
    return document


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


def _measured(
    rows: list[dict[str, Any]],
    played: list[play_live.GameRounds],
    target: str,
    run_id: str,
    cpu: float,
    wall: float,
) -> dict[str, Any]:
    by_key = {row["key"]: row for row in rows}
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
