"""The help and output forms every command line shares, for commands of any layer.

Owns :class:`HelpFormatter` (every option's help says its default), the parser and
subcommand setup every command line repeats (:func:`command_parser`, :func:`add_command`),
:func:`print_keygen_result` (the one form of a ``keygen`` command's result) and the words of
counts (:func:`count`: ``1 entry``, ``2 entries``; :func:`ordinal`: ``2nd``), the parts of the
CLI conventions (docs/cli.md, "CLI conventions" 1 and 5) that ``rng-witness``, which may not
import the service's app layer, follows as ``rng-service`` and ``rng-audit`` do. The standard
library only; ``rng_service.cli.support`` re-exports both with the rest of the conventions.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "HelpFormatter",
    "WrittenKeyPair",
    "add_command",
    "command_parser",
    "count",
    "ordinal",
    "print_keygen_result",
]


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps descriptions as written and adds ``(default: X)`` to an option's help when it has
    a default worth saying (not None, False or empty) and the help does not mention one."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            not action.option_strings
            or "default" in text
            or default in (None, False, "", argparse.SUPPRESS)
            or default == []
        ):
            return text
        return f"{text} (default: %(default)s)"


class WrittenKeyPair(Protocol):
    """What a key generator wrote (``rng_service.log.keys.KeyPairInfo``)."""

    @property
    def private_key_path(self) -> Path: ...
    @property
    def public_key_path(self) -> Path: ...
    @property
    def verifier_key_path(self) -> Path: ...
    @property
    def verifier_key(self) -> str: ...


def print_keygen_result(info: WrittenKeyPair, *, give_to: str) -> None:
    """What ``rng-service keygen`` and ``rng-witness keygen`` print, in one form: the verifier
    key alone on stdout (the result, as ``pubkey`` prints it: ``VKEY=$(... keygen ...)``), the
    files written on stderr."""
    print(info.verifier_key, flush=True)
    print(
        f"wrote {info.private_key_path} (private, mode 0600), {info.public_key_path} and "
        f"{info.verifier_key_path}; give the verifier key above to {give_to}",
        file=sys.stderr,
    )


def count(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` and its noun in the right number: ``1 entry``, ``2 entries``, ``0 checkpoints``."""
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``12th``, ``13th``, ``21st``, ``112th``."""
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }"


def command_parser(
    prog: str, description: str, epilog: str
) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction[argparse.ArgumentParser]]:
    """A command line's parser in the conventions (docs/cli.md): the shared help formatter,
    the exit statuses as epilog, and its required ``COMMAND``."""
    parser = argparse.ArgumentParser(
        prog=prog, description=description, epilog=epilog, formatter_class=HelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    return parser, sub


def add_command(sub: Any, name: str, help: str, **kwargs: Any) -> argparse.ArgumentParser:
    """A subcommand's parser with the shared help formatter (``kwargs``: ``add_parser``'s)."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=help, formatter_class=HelpFormatter, **kwargs
    )
    return parser
