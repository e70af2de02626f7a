"""The shared command-line conventions (rng_service.cli.support, docs/cli.md): progress only
on a terminal, the target rule, times, output spelling, output-file checks, connection hints."""

from __future__ import annotations

import argparse
import calendar
import io
import os
from pathlib import Path

import pytest

from rng_service.cli.support import (
    TARGET_ENV,
    HelpFormatter,
    Option,
    Progress,
    UsageError,
    add_shared,
    jsonable,
    parse_time_ns,
    resolve_target,
    writable_file,
)
from rng_service.rpc.client import connection_hint


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_draws_on_a_terminal_at_most_every_interval() -> None:
    stream, clock = Terminal(), Clock()
    progress = Progress("verifying", 2000, unit="lines", stream=stream, clock=clock)
    for _ in progress.wrap(range(1000)):
        pass  # all at one instant: one draw (the first), none after
    assert stream.getvalue() == "\rverifying: 1 / 2,000 lines (0%)"
    clock.now = 0.2
    progress.advance(999)
    progress.close()
    assert stream.getvalue().endswith(
        "\rverifying: 1,999 / 2,000 lines (99%)\rverifying: 1,999 / 2,000 lines (99%)\n"
    )


def test_progress_writes_nothing_elsewhere() -> None:
    stream = io.StringIO()  # a pipe or a file: not a terminal
    with Progress("exporting", 10, stream=stream) as progress:
        assert list(progress.wrap(range(10))) == list(range(10))
    assert stream.getvalue() == ""


def test_the_target_rule(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[server]\nport = 7001\n")
    env = {TARGET_ENV: "10.0.0.1:1"}
    assert resolve_target("h:1", None, env).address == "h:1"
    assert resolve_target(None, str(config), env).address == "127.0.0.1:7001"  # option first
    from_env = resolve_target(None, None, env)
    assert (from_env.address, from_env.source) == ("10.0.0.1:1", TARGET_ENV)
    with pytest.MonkeyPatch.context() as mp:  # the default configuration reads os.environ
        for name in [n for n in os.environ if n.startswith("RNG_SERVICE_")]:
            mp.delenv(name)
        assert resolve_target(None, None, {}).address == "127.0.0.1:50051"
        mp.setenv("RNG_SERVICE__SERVER__PORT", "7002")
        assert resolve_target(None, None, {}).address == "127.0.0.1:7002"
    with pytest.raises(UsageError, match="not both"):
        resolve_target("h:1", str(config), env)


def test_times_are_nanoseconds_or_iso_8601() -> None:
    seconds = calendar.timegm((2026, 11, 29, 10, 0, 0))  # an independent derivation
    assert parse_time_ns("2026-11-29T10:00:00Z") == seconds * 10**9
    assert parse_time_ns("2026-11-29T11:00:00.000001+01:00") == seconds * 10**9 + 1000
    assert parse_time_ns("2026-11-29T10:00:00") == seconds * 10**9  # UTC unless it says
    assert parse_time_ns("123") == 123
    with pytest.raises(argparse.ArgumentTypeError, match="ISO 8601"):
        parse_time_ns("yesterday")


def test_json_output_is_spelled_as_the_log() -> None:
    assert jsonable({"balls": ({"color": "red", "hash": b"\x01\xff"},)}) == {
        "balls": [{"colour": "red", "hash": "01ff"}]
    }


def test_output_files_are_checked_before_anything_is_drawn(tmp_path: Path) -> None:
    assert writable_file(str(tmp_path / "r.json"), "--out") == tmp_path / "r.json"
    with pytest.raises(UsageError, match=r"directory .* does not exist"):
        writable_file(str(tmp_path / "no" / "r.json"), "--out")
    with pytest.raises(UsageError, match="is a directory"):
        writable_file(str(tmp_path), "--out")


def test_shared_options_keep_the_value_given_before_the_subcommand() -> None:
    timeout = Option(("--timeout",), {"type": float, "default": 10.0, "help": "deadline"})
    parser = argparse.ArgumentParser(formatter_class=HelpFormatter)
    add_shared(parser, [timeout], title="shared", top=True)
    sub = parser.add_subparsers(dest="cmd").add_parser("go", formatter_class=HelpFormatter)
    add_shared(sub, [timeout], title="shared", top=False)
    assert parser.parse_args(["--timeout", "3", "go"]).timeout == 3.0
    assert parser.parse_args(["go", "--timeout", "4"]).timeout == 4.0
    assert parser.parse_args(["go"]).timeout == 10.0
    assert "deadline (default: 10.0)" in sub.format_help()


@pytest.mark.parametrize(
    ("details", "tls", "hint"),
    [
        ("ipv4:127.0.0.1:1: Failed to connect to remote host: Connection refused", False,
         "nothing accepts connections"),
        ("ipv4:127.0.0.1:5: Socket closed", False, "the port may want mTLS"),
        ("Tls handshake failed (TSI_PROTOCOL_FAILURE): ...WRONG_VERSION_NUMBER...", True,
         "does not speak TLS"),
        ("...CERTIFICATE_VERIFY_FAILED: unable to get local issuer certificate", True,
         "not issued by the given CA"),
        ("ipv4:127.0.0.1:5: Socket closed", True, "may not accept this client certificate"),
        ("the service is shutting down", False, ""),
    ],
)  # fmt: skip
def test_connection_hints(details: str, tls: bool, hint: str) -> None:
    said = connection_hint("UNAVAILABLE", details, tls=tls)
    assert hint in said
    assert bool(said) == bool(hint)
    assert connection_hint("INVALID_ARGUMENT", details, tls=tls) == ""


def test_counts_and_ordinals_read_as_english() -> None:
    from rng_service.cli.text import count, ordinal

    assert count(1, "entry", "entries") == "1 entry"
    assert count(0, "entry", "entries") == "0 entries"
    assert count(2, "checkpoint") == "2 checkpoints"
    assert count(1, "stored checkpoint") == "1 stored checkpoint"
    expected = {1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th",
                21: "21st", 22: "22nd", 23: "23rd", 101: "101st", 111: "111th",
                112: "112th"}  # fmt: skip
    assert {n: ordinal(n) for n in expected} == expected
