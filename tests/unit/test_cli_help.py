"""Every option of every command line has help text, and the help says its default
(docs/cli.md, "Help"; issue finding 4): rng-service, rng-audit, rng-witness and rng-certify,
walked through their argparse parsers, plus the rendered help of the real console scripts.
The commands in CONVENTION are held to the whole help convention: no markup, COMMAND for the
subcommands, each listed once, and the exit statuses in the top-level help."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from certification.cli import _parser as certify_parser
from rng_service.cli.audit import build_parser as audit_parser
from rng_service.cli.service import build_parser as service_parser
from rng_service.cli.witness import build_parser as witness_parser

BIN = Path(sys.executable).parent
PARSERS = {
    "rng-service": service_parser,
    "rng-audit": audit_parser,
    "rng-certify": certify_parser,
    "rng-witness": witness_parser,
}


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
        # the only hidden options are the refused names (rng_service.cli.support.refuse_option)
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


# -- one help convention (docs/cli.md, "CLI conventions" 1 and 9; issue 35, finding 4) ------

#: The commands held to the whole convention below. rng-certify joins with one more name here
#: (its parser is already in PARSERS, for the option test above).
CONVENTION = ("rng-service", "rng-audit", "rng-witness", "rng-certify")
#: reST/Sphinx markup that belongs in docstrings, never in what a person reads.
MARKUP = re.compile(r"``|:(mod|func|class|data|meth|attr):`")


def _parsers(
    prog: str, parser: argparse.ArgumentParser
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(f"{prog} {name}", sub)


def _helps() -> list[object]:
    return [
        pytest.param(prog, parser, id=prog)
        for name in CONVENTION
        for prog, parser in _parsers(name, PARSERS[name]())
    ]


@pytest.mark.parametrize(("prog", "parser"), _helps())
def test_help_has_no_markup_and_names_commands_by_metavar(
    prog: str, parser: argparse.ArgumentParser
) -> None:
    text = parser.format_help()
    assert not MARKUP.search(text), f"{prog} --help shows markup: {MARKUP.search(text)}"
    # RawDescriptionHelpFormatter (HelpFormatter's base): descriptions and epilogs as written
    assert isinstance(parser.formatter_class, type)
    assert issubclass(parser.formatter_class, argparse.RawDescriptionHelpFormatter), prog
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            assert action.metavar == "COMMAND", f"{prog} shows {{{','.join(action.choices)}}}"


@pytest.mark.parametrize("name", CONVENTION)
def test_the_real_top_level_help_lists_commands_once_and_exit_statuses(name: str) -> None:
    done = subprocess.run(
        [BIN / name, "--help"], capture_output=True, text=True, check=True, timeout=60,
        env={**os.environ, "COLUMNS": "100"},
    )  # fmt: skip
    text = done.stdout
    assert done.stderr == ""
    assert "Exit status: 0 " in text, f"{name} --help lists no exit statuses"
    assert re.search(r"\b2 nothing was (done|checked)", text), text
    assert f"usage: {name} [-h]" in text
    assert "COMMAND ..." in text.splitlines()[0]
    sub = next(a for a in PARSERS[name]()._actions if isinstance(a, argparse._SubParsersAction))
    for command in sub.choices:
        listed = [
            line
            for line in text.splitlines()
            if re.match(rf" {{2,4}}{re.escape(command)}( {{2}}|$)", line)
        ]
        assert len(listed) == 1, f"{name} --help lists {command} {len(listed)} times"
    assert "docs/cli.md" in text  # where the conventions are written
    assert "this module" not in text  # nothing written for developers
    assert "rng_service." not in text


def test_both_keygen_commands_print_the_same_form(tmp_path: Path) -> None:
    """The result (the verifier key) alone on stdout, as pubkey prints it; the files on
    stderr, in the same words."""
    forms = {}
    for name, key_name in (("rng-service", "casino.example"), ("rng-witness", "w.example/w1")):
        out = tmp_path / f"{name}.pem"
        done = subprocess.run(
            [BIN / name, "keygen", "--out", str(out), "--name", key_name],
            capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip
        vkey = out.with_name(out.name + ".vkey").read_text(encoding="utf-8").strip()
        assert done.stdout == vkey + "\n", (name, done.stdout)
        assert done.stderr.startswith(
            f"wrote {out} (private, mode 0600), {out}.pub and {out}.vkey; give the verifier key "
            "above to "
        ), (name, done.stderr)
        pubkey = subprocess.run(
            [BIN / name, "pubkey", "--key-file", str(out), "--name", key_name],
            capture_output=True, text=True, check=True, timeout=60,
        ).stdout  # fmt: skip
        assert pubkey == done.stdout
        forms[name] = done.stderr.split(" give the verifier key")[0].replace(name, "X")
    assert forms["rng-service"] == forms["rng-witness"]


def test_rng_certify_help_gives_exit_statuses_docs_and_one_line_errors() -> None:
    """issue 35, finding 4: ``rng-certify --help`` lists its exit statuses and points to its
    docs; help says "(default: N)" and never "%%"; a usage error is one line, exit 2."""
    top = subprocess.run([BIN / "rng-certify", "--help"], capture_output=True, text=True,
                         check=True, timeout=60).stdout  # fmt: skip
    flat = " ".join(top.split())
    for status in ("0 PASS", "1 FAIL", "3 INCONCLUSIVE", "2 nothing was checked"):
        assert status in flat
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
