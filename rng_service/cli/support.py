"""What every command line of the project shares: the conventions of docs/cli.md.

Owns, for ``rng-service``, ``rng-audit`` and every command added later:

* help: every option has help text, and the help says its default (:class:`HelpFormatter`);
* options accepted before or after the subcommand (:func:`add_shared`: one definition, added to
  the command and to each subcommand; the subcommand's copy only overrides when given);
* the target rule (:func:`resolve_target`): ``--target``, else ``--config`` (the service's own
  configuration file, read as ``serve`` reads it), else ``$RNG_TARGET``, else the default
  configuration (127.0.0.1:50051, ``RNG_SERVICE__SERVER__*`` applied);
* mTLS options ``--ca/--cert/--tls-key`` (:data:`TLS_OPTIONS`, :func:`client_tls`); the name
  ``--key`` is the log's verifier key wherever a command verifies, never a TLS key;
* output (:class:`Output`): text for people by default, one JSON document with ``--json``;
  results on stdout, everything else (the request id, notes, errors) on stderr; spelled as the
  log spells it (``colour``, :func:`jsonable`);
* progress on stderr only when stderr is a terminal (:class:`Progress`);
* checks made before anything is drawn or sent (:func:`writable_file`, :func:`verifier_keys`);
* the exit statuses (``EXIT_*``).

It holds no command of its own; a command module imports it. gRPC is imported only by the
functions that need it, so an offline command never loads it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import secrets
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from rng_service.cli.text import HelpFormatter, print_keygen_result
from rng_service.config import load_config
from rng_service.errors import RngServiceError

if TYPE_CHECKING:
    from rng_service.log.note import NoteVerifier
    from rng_service.rpc.client import ClientTls

__all__ = [
    "CONNECTION_OPTIONS",
    "EXIT_AFTER_DRAW",
    "EXIT_BROKEN_PIPE",
    "EXIT_FAILED",
    "EXIT_NOT_CHECKED",
    "EXIT_OK",
    "EXIT_USAGE",
    "OUTPUT_OPTIONS",
    "TARGET_ENV",
    "TLS_OPTIONS",
    "HelpFormatter",
    "Option",
    "Output",
    "Progress",
    "Target",
    "UsageError",
    "add_shared",
    "client_tls",
    "format_address",
    "jsonable",
    "new_request_id",
    "parse_time_ns",
    "print_keygen_result",
    "quiet_grpc_core",
    "refuse_option",
    "resolve_target",
    "stdout_reader_went_away",
    "verifier_keys",
    "writable_file",
]

#: Everything asked for was done, and everything the command checks was proven (nothing named
#: NOT CHECKED: that is :data:`EXIT_NOT_CHECKED`).
EXIT_OK = 0
#: The service refused or failed the call, or something did not verify: the message says what.
EXIT_FAILED = 1
#: Nothing was done: a bad option, an unreadable input, an unwritable output, a bad key or
#: configuration, found before anything was sent (``rng-audit``: an unreachable service too).
EXIT_USAGE = 2
#: The outcome was drawn and logged, but a step after the draw failed (its receipt not written,
#: or not verified): the outcome, its log index and request id are printed all the same.
EXIT_AFTER_DRAW = 3
#: What is printed as OK is proven, and what is named NOT CHECKED is not: the run proves less
#: than all (``rng-audit``: truncation with no kept or witnessed checkpoint covering the newest
#: entry, ``verify --fast``, an offline receipt, a live table history or dispute). 0 means
#: everything the command checks was proven (docs/cli.md, convention 9).
EXIT_NOT_CHECKED = 4
#: Standard output's reader went away (``rng-audit verify ... | head``) before the command
#: finished: 128 + SIGPIPE, as a tool killed by the signal would give. Not 0: a verification
#: whose output was cut short has not said its verdict.
EXIT_BROKEN_PIPE = 141

#: The environment variable naming the service to call when no option does.
TARGET_ENV = "RNG_TARGET"


class UsageError(Exception):
    """Bad options or unusable local input, found before anything was sent: exit status 2."""


@dataclass(frozen=True)
class Option:
    """One option's ``add_argument`` arguments, to add to several parsers."""

    flags: tuple[str, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)


def _option(*flags: str, **kwargs: Any) -> Option:
    return Option(flags, kwargs)


def add_shared(
    parser: argparse.ArgumentParser, options: Iterable[Option], *, title: str, top: bool
) -> None:
    """Adds ``options`` to ``parser`` under ``title``: with ``top`` to the command itself (with
    their defaults), else to a subcommand, where an option the user did not give sets nothing,
    so the value given before the subcommand (or the default) stays. argparse copies every
    attribute of a subcommand's namespace over the command's, hence the SUPPRESS there."""
    group = parser.add_argument_group(title)
    for o in options:
        kwargs = dict(o.kwargs)
        default = kwargs.get("default")
        text = str(kwargs.get("help", ""))
        if default not in (None, False, "") and "default" not in text:
            kwargs["help"] = f"{text} (default: {default})"
        if not top:
            kwargs["default"] = argparse.SUPPRESS
        group.add_argument(*o.flags, **kwargs)


class _Refused(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        parser.error(str(self.const))


def refuse_option(parser: argparse.ArgumentParser, flag: str, message: str) -> None:
    """``flag`` is not an option of ``parser``: using it stops with ``message`` (exit 2)
    instead of argparse's bare "unrecognized arguments" (a name that used to mean something
    else, or would be ambiguous). It does not show in the help."""
    parser.add_argument(flag, action=_Refused, nargs="?", const=message, help=argparse.SUPPRESS)


TLS_OPTIONS: tuple[Option, ...] = (
    _option(
        "--ca",
        metavar="PEM",
        help="mTLS: the CA certificate that issued the service's certificate (with --cert and "
        "--tls-key; without the three the call is plaintext, which a service accepts on "
        "loopback only)",
    ),
    _option("--cert", metavar="PEM", help="mTLS: this client's certificate"),
    _option(
        "--tls-key",
        metavar="PEM",
        help="mTLS: this client's private key (not the log's verifier key: that is --key or "
        "--verifier-key where a command verifies)",
    ),
)

CONNECTION_OPTIONS: tuple[Option, ...] = (
    _option(
        "--target",
        metavar="HOST:PORT",
        help=f"the service to call; without it: the server address of --config, else "
        f"${TARGET_ENV}, else that of the default configuration (127.0.0.1:50051, "
        "RNG_SERVICE__SERVER__HOST/PORT applied, as serve reads them)",
    ),
    _option(
        "--config",
        metavar="FILE",
        help="instead of --target: the service's configuration file, read as serve reads it "
        "(RNG_SERVICE__* variables applied); calls its server.port on server.host "
        "(127.0.0.1 for 0.0.0.0, ::1 for ::)",
    ),
    _option(
        "--origin",
        metavar="ORIGIN",
        help="the log to call, by its origin (a deployment of several [[logs]]); default: the "
        "log served at the target (with --config: the only log of its [[logs]])",
    ),
    _option(
        "--timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="deadline of each call, in seconds (of a whole stream for `stream`)",
    ),
    *TLS_OPTIONS,
)

OUTPUT_OPTIONS: tuple[Option, ...] = (
    _option(
        "--json",
        action="store_true",
        help="print the result as one JSON document (stream: one per line) instead of text",
    ),
)


@dataclass(frozen=True)
class Target:
    """The address to call and where it came from (said in errors: which rule chose it)."""

    address: str
    source: str


def format_address(host: str, port: int) -> str:
    """``HOST:PORT`` to call a server listening on ``host``: its loopback for every interface
    (0.0.0.0: 127.0.0.1; ``::``: ``::1``), IPv6 addresses in brackets."""
    if host in ("0.0.0.0", ""):  # noqa: S104  (every IPv4 interface: call its loopback)
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _configured_address(path: str | None, origin: str | None = None) -> str:
    """The gRPC address ``serve`` binds for the log ``origin`` (None: the only log)."""
    server = load_config(Path(path) if path is not None else None).select(origin).server
    return format_address(server.host, server.port)


def resolve_target(
    target: str | None,
    config: str | None,
    environ: Mapping[str, str] | None = None,
    origin: str | None = None,
) -> Target:
    """The target rule: ``--target``; else ``--config`` (an option on the command line beats
    the environment); else ``$RNG_TARGET``; else the server address of the default
    configuration with the ``RNG_SERVICE__*`` variables, as ``serve`` would bind it."""
    environ = os.environ if environ is None else environ
    if target and config:
        raise UsageError("give --target or --config, not both")
    if target:
        return Target(target, "--target")
    if config:
        return Target(_configured_address(config, origin), f"server address of --config {config}")
    from_env = environ.get(TARGET_ENV, "").strip()
    if from_env:
        return Target(from_env, TARGET_ENV)
    return Target(
        _configured_address(None),
        f"the default configuration's server address; --target or {TARGET_ENV} name another",
    )


def client_tls(ca: str | None, cert: str | None, tls_key: str | None) -> ClientTls | None:
    """``--ca/--cert/--tls-key`` as mTLS material (all three, read now), or None (plaintext)."""
    from rng_service.rpc.client import ClientTls

    given = {"--ca": ca, "--cert": cert, "--tls-key": tls_key}
    if not any(given.values()):
        return None
    missing = [name for name, value in given.items() if not value]
    if missing:
        raise UsageError(
            f"{', '.join(missing)} needed too (--ca, --cert and --tls-key go together)"
        )
    try:
        return ClientTls.from_files(str(ca), str(cert), str(tls_key))
    except OSError as e:
        raise UsageError(f"cannot read {e.filename}: {e.strerror}") from e


def verifier_keys(items: Sequence[str], option: str) -> list[NoteVerifier]:
    """Verifier keys (``<name>+<id>+<base64>``) or ``.vkey`` files, parsed now."""
    from rng_service.log.keys import load_verifier_keys

    try:
        return load_verifier_keys(items, base_dir=Path.cwd())
    except RngServiceError as e:
        raise UsageError(f"{option}: {e}") from e


def writable_file(path: str, option: str) -> Path:
    """``path`` as an output file that can be written (checked before anything is drawn):
    its directory exists and is writable, and it is not a directory or a read-only file."""
    out = Path(path)
    directory = out.parent
    if out.is_dir():
        raise UsageError(f"{option} {path}: is a directory")
    if not directory.is_dir():
        raise UsageError(f"{option} {path}: directory {directory} does not exist")
    if out.exists():
        if not os.access(out, os.W_OK):
            raise UsageError(f"{option} {path}: not writable")
    elif not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: cannot create files in {directory}")
    return out


def new_request_id() -> str:
    """A fresh idempotency key for a call that names none."""
    return f"cli-{secrets.token_hex(8)}"


def parse_time_ns(text: str) -> int:
    """An argparse type: nanoseconds since the Unix epoch, or an ISO 8601 time (UTC unless it
    names its offset), e.g. ``2026-11-29T10:00:00Z``."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither nanoseconds since the epoch nor an ISO 8601 time "
            "(e.g. 2026-11-29T10:00:00Z)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    delta = when - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def stdout_reader_went_away() -> int:
    """What a command does when writing to standard output raised BrokenPipeError: points the
    descriptor at /dev/null (so the interpreter's flush at exit does not fail again and print
    "Exception ignored") and returns :data:`EXIT_BROKEN_PIPE`, with nothing on standard error:
    the reader closing the pipe is not a failure of the command's own."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    return EXIT_BROKEN_PIPE


def quiet_grpc_core() -> None:
    """Client commands keep gRPC core's own info lines (a failed TLS handshake, ...) off the
    terminal: our error message says it, with a hint. Call before grpc is imported."""
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


#: The CLI's own output spells the word as log entries and receipts do; the proto field of
#: the gRPC API stays ``color`` (clients depend on it).
_SPELLING = {"color": "colour"}


def jsonable(value: Any) -> Any:
    """``value`` as JSON-ready data in the CLI's spelling: bytes as hex, tuples as lists,
    ``color`` keys as ``colour``."""
    if isinstance(value, Mapping):
        return {_SPELLING.get(str(k), str(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    return value


class Output:
    """Where a command's results go: stdout, as text, or with ``--json`` as JSON; notes (the
    request id, warnings, errors) always go to stderr, so stdout holds only the result."""

    def __init__(
        self, json_mode: bool, *, stdout: TextIO | None = None, stderr: TextIO | None = None
    ) -> None:
        self.json_mode = json_mode
        self._out = stdout
        self._err = stderr

    @property
    def out(self) -> TextIO:
        return self._out or sys.stdout

    @property
    def err(self) -> TextIO:
        return self._err or sys.stderr

    def result(self, data: Any, text: str | Callable[[], str], *, lines: bool = False) -> None:
        """Prints ``data`` as JSON (indented; one line with ``lines``, for JSON Lines) or
        ``text`` (a string, or a function giving it, so text is only built when needed)."""
        if self.json_mode:
            indent = None if lines else 2
            print(json.dumps(jsonable(data), indent=indent, ensure_ascii=False), file=self.out)
        else:
            print(text if isinstance(text, str) else text(), file=self.out)
        self.out.flush()

    def note(self, text: str) -> None:
        print(text, file=self.err, flush=True)

    def error(self, text: str) -> None:
        self.note(f"error: {text}")


_T = TypeVar("_T")


class Progress:
    """A progress line on stderr (``what: done / total unit (pct)``) redrawn at most every
    ``interval`` seconds, when the stream is a terminal; otherwise it writes nothing at all,
    so logs and pipes never hold progress lines."""

    def __init__(
        self,
        what: str,
        total: int | None,
        *,
        unit: str = "entries",
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        interval: float = 0.2,
    ) -> None:
        self._stream = stream or sys.stderr
        self.enabled = bool(getattr(self._stream, "isatty", lambda: False)())
        self._what = what
        self._total = total
        self._unit = unit
        self._clock = clock
        self._interval = interval
        self._last = float("-inf")
        self.done = 0

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.enabled and self._clock() - self._last >= self._interval:
            self._draw()

    def wrap(self, items: Iterable[_T]) -> Iterator[_T]:
        """``items`` unchanged, counting each one (without a terminal: ``items`` itself)."""
        if not self.enabled:
            yield from items
            return
        for item in items:
            yield item
            self.advance()

    def close(self) -> None:
        if self.enabled:
            self._draw()
            self._stream.write("\n")
            self._stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _draw(self) -> None:
        self._last = self._clock()
        line = f"{self._what}: {self.done:,}"
        if self._total:
            pct = 100 * min(self.done, self._total) // self._total
            line += f" / {self._total:,} {self._unit} ({pct}%)"
        else:
            line += f" {self._unit}"
        self._stream.write(f"\r{line}")
        self._stream.flush()
