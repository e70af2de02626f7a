"""The witness options of ``rng-audit`` (``--witness``, ``--min-witnesses``,
``--max-witness-age``) as the commands read them, and the WITNESSED line they print: the
coverage rule itself is :func:`rng_service.audit.check_witnesses` (docs/auditing.md,
"Witnesses"; C2SP tlog-cosignature). Shared by ``verify``, ``verify-receipt``, ``export
--witnessed`` and the table commands.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from rng_service.audit import WitnessFailure, WitnessReport, check_witnesses
from rng_service.cli.support import UsageError
from rng_service.cli.text import ordinal
from rng_service.clock import Clock
from rng_service.errors import RngServiceError
from rng_service.log.cosignature import CosignatureVerifier

__all__ = [
    "max_witness_age",
    "now_seconds",
    "parse_duration",
    "print_witnesses",
    "witness_keys",
    "witnessed_by",
]


def witness_keys(args: argparse.Namespace) -> tuple[list[CosignatureVerifier], int]:
    """``--witness`` keys (cosignature verifier keys or .vkey files) and ``--min-witnesses``
    (default: 1 when witness keys are given)."""
    keys: list[CosignatureVerifier] = []
    for item in args.witness:
        path = Path(item)
        try:
            text = item
            if "+" not in item or path.is_file():
                lines = path.read_text(encoding="utf-8").strip().splitlines()
                text = lines[0] if lines else ""
            keys.append(CosignatureVerifier.from_verifier_key(text))
        except OSError as e:
            raise UsageError(f"--witness: cannot read {item}: {e.strerror}") from e
        except RngServiceError as e:
            raise UsageError(f"--witness: {e}") from e
    wanted = args.min_witnesses
    if wanted is None:
        wanted = 1 if keys else 0
    if not 0 <= wanted <= len(keys) or (wanted and not keys):
        raise UsageError(
            f"--min-witnesses: {wanted} is not allowed (allowed: 0 to the number of --witness "
            f"keys, {len(keys)})"
        )
    return keys, wanted


def now_seconds(args: argparse.Namespace) -> int:
    """POSIX seconds from the injected clock (``main(clock=...)``; the system clock by
    default)."""
    clock: Clock = args.clock
    return clock.now_ns() // 10**9


_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)([smhd])")
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> int:
    """``--max-witness-age``: a number with s, m, h or d (``90s``, ``10m``, ``1.5h``, ``2d``) as
    whole seconds (at least 1); :class:`UsageError` naming the option and the allowed form."""
    match = _DURATION.fullmatch(text.strip())
    seconds = float(match[1]) * _DURATION_UNITS[match[2]] if match else 0.0
    if not match or seconds < 1 or seconds > 100 * 365 * 86400:
        raise UsageError(
            f"--max-witness-age: {text!r} is not a duration (allowed: a number with s, m, h or "
            f"d, from 1s to 36500d, e.g. 90s, 10m, 1.5h, 2d)"
        )
    return int(seconds)


def max_witness_age(args: argparse.Namespace) -> int | None:
    text = getattr(args, "max_witness_age", None)
    if text is None:
        return None
    seconds = parse_duration(text)
    if not args.witness or (args.min_witnesses is not None and args.min_witnesses < 1):
        raise UsageError("--max-witness-age needs --witness keys and --min-witnesses of at least 1")
    return seconds


def witnessed_by(args: argparse.Namespace, source: str, note: str, cover: int) -> str | None:
    """With ``--witness``: checks that ``note`` (a signed checkpoint whose log signature the
    caller verified, of tree size ``cover``) carries ``--min-witnesses`` valid cosignatures,
    no older than ``--max-witness-age``, and names them; None without ``--witness``. Raises
    :class:`WitnessFailure` otherwise (``rng-audit table-history``, ``dispute``)."""
    witnesses, min_witnesses = witness_keys(args)
    max_age = max_witness_age(args)
    if not witnesses:
        return None
    report = check_witnesses(
        [(source, note.encode("utf-8"))], witnesses, min_witnesses=max(min_witnesses, 1),
        now=now_seconds(args), cover=cover, cover_what=f"{source} (tree size {cover})",
        max_age_seconds=max_age,
    )  # fmt: skip
    best = report.best
    if best is None:  # not reached: check_witnesses raised
        raise WitnessFailure(f"{source} is not witnessed")
    names = ", ".join(v.witness.name for v in best.cosignatures)
    return f"cosigned by {names}"


def _age(seconds: int) -> str:
    if seconds < 0:
        return "in the future"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


def print_witnesses(report: WitnessReport, now: int) -> None:
    for line in report.lines:
        print(line)
    if report.best is not None and report.as_of is not None:
        print(
            f"WITNESSED: {report.best.source} (tree size {report.best.size}) is cosigned by "
            f"{len(report.best.cosignatures)} of the given witnesses ({report.required} "
            f"needed); the "
            f"{'' if report.required == 1 else ordinal(report.required) + ' '}"
            f"newest cosignature is of {_utc(report.as_of)} ({_age(now - report.as_of)}): "
            f"as far as those witnesses saw until then, the log had no larger tree than "
            f"{report.best.size} and no other tree of that size"
        )


def _utc(timestamp: int) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(timestamp, tz=datetime.UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
