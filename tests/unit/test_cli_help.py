"""Every option of every command line has help text, and the help says its default
(docs/cli.md, "Help"; issue finding 4): rng-service, rng-audit and rng-certify, walked
through their argparse parsers, plus the rendered help of the real console scripts."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from certification.cli import _parser as certify_parser
from rng_service.audit_cli import build_parser as audit_parser
from rng_service.cli import build_parser as service_parser

BIN = Path(sys.executable).parent
PARSERS = {"rng-service": service_parser, "rng-audit": audit_parser, "rng-certify": certify_parser}


def _walk(prog: str, parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(f"{prog} {name}", sub)
        elif action.option_strings and not isinstance(action, argparse._HelpAction):
            yield prog, action


def _options() -> list[object]:
    return [
        pytest.param(prog, action, id=f"{prog} {'/'.join(action.option_strings)}")
        for name, build in PARSERS.items()
        for prog, action in _walk(name, build())
    ]


def _rendered(prog: str, action: argparse.Action) -> str:
    """The option's help as ``--help`` prints it, from the parser's own formatter class."""
    parts = prog.split()
    parser = PARSERS[parts[0]]()
    for name in parts[1:]:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    formatter = parser._get_formatter()
    return formatter._expand_help(action) if action.help else ""


@pytest.mark.parametrize(("prog", "action"), _options())
def test_every_option_has_help_and_says_its_default(prog: str, action: argparse.Action) -> None:
    flag = "/".join(action.option_strings)
    if action.help == argparse.SUPPRESS:
        # the only hidden options are the refused names (rng_service.cli_support.refuse_option)
        assert "--tls-key" in str(action.const), f"{prog} {flag} is hidden"
        return
    assert action.help, f"{prog} {flag} has no help text"
    default = action.default
    if default in (None, False, "", argparse.SUPPRESS) or default == []:
        return
    assert "default" in _rendered(prog, action), f"{prog} {flag}: the help hides its default"


def test_the_real_help_shows_defaults_and_the_target_rule() -> None:
    out = subprocess.run(
        [BIN / "rng-service", "call", "dice", "--help"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    assert "--count COUNT" in out
    assert "(default: 3)" in out  # from the formatter, as rendered by the real command
    assert "(default: 10.0)" in out  # --timeout, shared with the parent command
    text = " ".join(
        subprocess.run(
            [BIN / "rng-service", "call", "--help"],
            capture_output=True, text=True, check=True, timeout=60,
        ).stdout.split()
    )  # fmt: skip
    assert "--target; else the server address of --config" in text
    assert "else $RNG_TARGET" in text
    certify = " ".join(
        subprocess.run(
            [BIN / "rng-certify", "all", "--help"],
            capture_output=True, text=True, check=True, timeout=60,
        ).stdout.split()
    )  # fmt: skip
    assert "--jobs JOBS worker processes" in certify


def test_rng_certify_help_gives_exit_statuses_docs_and_one_line_errors() -> None:
    """issue 35, finding 4: ``rng-certify --help`` lists its exit statuses and points to its
    docs; help says "(default: N)" and never "%%"; a usage error is one line, exit 2."""
    top = subprocess.run([BIN / "rng-certify", "--help"], capture_output=True, text=True,
                         check=True, timeout=60).stdout  # fmt: skip
    for status in ("0  PASS", "1  FAIL", "3  INCONCLUSIVE", "2  usage or input error"):
        assert status in top
    assert "docs/certification.md" in top
    for command in ("collect", "rtp", "nist", "dieharder"):
        text = subprocess.run([BIN / "rng-certify", command, "--help"], capture_output=True,
                              text=True, check=True, timeout=60).stdout  # fmt: skip
        assert "%%" not in text, command
        assert "(default " not in text.replace("\n", " "), command
        assert "--target HOST:PORT, --live HOST:PORT" in text, command
    bad = subprocess.run([BIN / "rng-certify", "collect", "--lab-seed", "s", "--time-limit",
                          "soon", "--output", "x"], capture_output=True, text=True,
                         timeout=60, check=False)  # fmt: skip
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1, bad.stderr
    assert "--time-limit" in bad.stderr
    assert "Traceback" not in bad.stderr
