"""``rng-certify rtp``: exact and measured return to player of every paytable and wager.

Usage::

    rng-certify rtp [--json OUT] [--html OUT] [--paytable TOML]... [--profile TOML]
    rng-certify rtp --target HOST:PORT [--rounds N] [--game NAME[=N]]... [--service-profile NAME]
                    [--time-limit S] [--run-id ID] [--ca F --cert F --tls-key F] [--json OUT] ...

(``--live`` and ``--key`` are accepted as the former names of ``--target`` and ``--tls-key``.)
Without ``--target``: per game, paytable and wager (and the wheel and reading it depends on),
the exact RTP, house edge and variance per unit staked as fractions and decimals, and the
standard deviation (``certification.rtp.exact``). With ``--target``: the same, plus N rounds of
each game played through the service (``certification.rtp.live``), the measured RTP and its
99 % confidence interval, whether the exact figure lies inside, and the log indexes of the
entries the rounds came from, and the verdict (``certification.rtp.build``). Exit status
(:mod:`certification.verdict`): with ``--target`` 0 PASS, 1 FAIL (an exact RTP outside its
family-wise 99 % interval), 3 INCONCLUSIVE (some wager had too few rounds to be judged);
without ``--target`` 0 (nothing is judged); 2 for usage and input errors.

This module only registers the command (``add_rtp_parser``); the work is imported when it
runs, so the other commands do not load the settlement code.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from certification.rtp.build import FORMAT

__all__ = ["FORMAT", "add_rtp_parser", "run_rtp"]

DEFAULT_ROUNDS = 10_000


def _game_item(text: str) -> tuple[str, int | None]:
    name, sep, count = text.partition("=")
    if not sep:
        return name, None
    try:
        value = int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: the count must be an integer") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: at least 2 rounds")
    return name, value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: at least 2")
    return value


def add_rtp_parser(commands: Any) -> None:
    """Registers ``rtp`` on the ``rng-certify`` sub-command parser."""
    rtp = commands.add_parser(
        "rtp",
        help="return to player of every paytable: exact, and measured through a live service",
        description="Exact RTP, house edge and standard deviation per unit staked of every "
        "paytable and wager (docs/games.md); with --live also the RTP measured on rounds "
        "played through a running service, with 99 % confidence intervals.",
    )
    rtp.add_argument("--json", type=Path, metavar="OUT", help="write the JSON document")
    rtp.add_argument("--html", type=Path, metavar="OUT", help="write an HTML report of it")
    rtp.add_argument(
        "--paytable", type=Path, action="append", default=[], metavar="TOML",
        help="a paytable document replacing the shipped one of its game (repeatable)",
    )  # fmt: skip
    rtp.add_argument(
        "--profile", type=Path, metavar="TOML",
        help="Mega Fire Blaze game profile for the exact figures (default: the shipped example; "
        "with --target: the service's)",
    )  # fmt: skip
    rtp.add_argument(
        "--target", "--live", dest="live", metavar="HOST:PORT",
        help="measure live: play rounds through the service at HOST:PORT (--live is the "
        "former name)",
    )  # fmt: skip
    rtp.add_argument(
        "--rounds", type=_positive, default=DEFAULT_ROUNDS, metavar="N",
        help=f"with --target: rounds per game and wheel (default: {DEFAULT_ROUNDS})",
    )  # fmt: skip
    rtp.add_argument(
        "--game", type=_game_item, action="append", metavar="NAME[=N]",
        help="with --target: only these games (repeatable), each with its own round count",
    )  # fmt: skip
    rtp.add_argument(
        "--service-profile", metavar="NAME",
        help="with --target: the service's Mega Fire Blaze profile (default: the first it lists)",
    )  # fmt: skip
    rtp.add_argument(
        "--time-limit", type=float, default=600.0, metavar="SECONDS",
        help="with --target: stop playing rounds after this long (default: 600)",
    )  # fmt: skip
    rtp.add_argument("--run-id", help="request id prefix (a rerun replays the logged rounds)")
    rtp.add_argument("--ca", type=Path, help="mTLS: the service's CA certificate (PEM)")
    rtp.add_argument("--cert", type=Path, help="mTLS: the lab's client certificate (PEM)")
    rtp.add_argument(
        "--tls-key", "--key", dest="key", type=Path,
        help="mTLS: the lab's client key (PEM; --key is the former name)",
    )  # fmt: skip
    rtp.set_defaults(handler=run_rtp)


def run_rtp(args: argparse.Namespace) -> int:
    from certification.errors import InputError
    from certification.report.html import render_rtp_page
    from certification.report.rtp import render_rtp_text
    from certification.rtp import build

    try:
        document = build.build_document(
            paytable_files=args.paytable,
            profile_file=args.profile,
            live=args.live,
            rounds=args.rounds,
            games=args.game,
            service_profile=args.service_profile,
            time_limit=args.time_limit,
            run_id=args.run_id or f"rtp{int(time.time() * 1000)}",
            tls=(args.ca, args.cert, args.key),
            generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
            progress=_progress,
            argv=args.argv,
        )
    except build.RtpInputError as e:
        raise InputError(str(e)) from e
    sys.stdout.write(render_rtp_text(document))
    if args.json is not None:
        _write(args.json, json.dumps(document, indent=1, sort_keys=True) + "\n")
    if args.html is not None:
        _write(args.html, render_rtp_page(document))
    from certification.verdict import Verdict, exit_code

    verdict = document["verdict"]
    word = "no verdict" if verdict is None else verdict
    sys.stdout.write(f"RESULT: {word} ({document['verdict_reason']})\n")
    return 0 if verdict is None else exit_code(Verdict[verdict])


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _write(path: Path, text: str) -> None:
    from certification.errors import InputError

    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}") from e
