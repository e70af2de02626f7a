"""The evidence record every ``rng-certify`` report carries, so that a lab can file it.

Owns the ``evidence`` object of the JSON documents (docs/certification.md, "Evidence"):

* ``software``: the installed ``rng-service`` distribution's version, and the git commit of the
  checkout the code runs from (``git rev-parse HEAD``; ``dirty`` when ``git status`` shows
  changes to tracked files; ``null`` with a reason when the code is not in a git checkout);
* ``command_line``: the argument vector the command was given (the program name first);
* ``generated_at``: UTC time of the run (the clock is the caller's);
* ``inputs``: every input, with its size in bytes and SHA-256 (files), or for live runs each
  raw-output session's request id, log index and receipt.

:func:`file_facts` hashes any file in bounded pieces; :class:`HashedInput` hashes an input (a
file, a pipe or standard input) *while* it is read, so that the evidence holds the size and
SHA-256 of exactly the bytes tested, never of a second read (a pipe read twice is empty the
second time). Nothing here tests randomness.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, BinaryIO

from certification.errors import InputError

__all__ = [
    "DISTRIBUTION",
    "HashedInput",
    "evidence_record",
    "file_facts",
    "now_utc",
    "open_input",
    "software",
]

DISTRIBUTION = "rng-service"
_PIECE = 1 << 22
_software_cache: dict[str, Any] | None = None


def now_utc() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _git(args: Sequence[str], cwd: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def software() -> dict[str, Any]:
    """Version and commit of the code that made the report (computed once per process)."""
    global _software_cache
    if _software_cache is None:
        try:
            version: str | None = metadata.version(DISTRIBUTION)
        except metadata.PackageNotFoundError:
            version = None
        here = Path(__file__).resolve().parent
        commit = _git(["rev-parse", "HEAD"], here)
        record: dict[str, Any] = {"name": DISTRIBUTION, "version": version, "git_commit": commit}
        if commit is None:
            record["git_note"] = "not run from a git checkout (or git is not installed)"
        else:
            status = _git(["status", "--porcelain", "--untracked-files=no"], here)
            record["git_dirty"] = bool(status)
            record["git_describe"] = _git(["describe", "--always", "--dirty", "--tags"], here)
        _software_cache = record
    return dict(_software_cache)


def file_facts(path: Path) -> dict[str, Any]:
    """``{"path", "size_bytes", "sha256"}`` of a file, read in bounded pieces."""
    digest = hashlib.sha256()
    size = 0
    try:
        with path.open("rb") as handle:
            while data := handle.read(_PIECE):
                digest.update(data)
                size += len(data)
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from e
    return {"path": str(path), "size_bytes": size, "sha256": digest.hexdigest()}


class HashedInput:
    """Lines of a binary input, hashed as they are read; :meth:`facts` after the last line."""

    def __init__(self, handle: BinaryIO, name: str) -> None:
        self._handle = handle
        self.name = name
        self._digest = hashlib.sha256()
        self.size = 0

    def lines(self) -> Iterator[bytes]:
        """Every line (the last one possibly without its newline), reading to the end."""
        rest = b""
        try:
            while data := self._handle.read(_PIECE):
                self._digest.update(data)
                self.size += len(data)
                parts = (rest + data).split(b"\n")
                rest = parts.pop()
                yield from parts
        except OSError as e:
            raise InputError(f"cannot read {self.name}: {e.strerror or e}") from e
        if rest:
            yield rest

    def facts(self) -> dict[str, Any]:
        """``{"path", "size_bytes", "sha256"}`` of the bytes read so far."""
        return {"path": self.name, "size_bytes": self.size, "sha256": self._digest.hexdigest()}

    def close(self) -> None:
        if self._handle is not sys.stdin.buffer:
            self._handle.close()


def open_input(path: Path) -> HashedInput:
    """A file, or standard input for ``-``, as a :class:`HashedInput`."""
    if str(path) == "-":
        return HashedInput(sys.stdin.buffer, "-")
    try:
        handle = path.open("rb")
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from e
    return HashedInput(handle, str(path))


def evidence_record(
    *,
    argv: Sequence[str] | None,
    inputs: Sequence[dict[str, Any]],
    generated_at: str | None = None,
) -> dict[str, Any]:
    """The ``evidence`` object of a report."""
    command = ["rng-certify", *(sys.argv[1:] if argv is None else argv)]
    return {
        "software": software(),
        "command_line": command,
        "generated_at": generated_at or now_utc(),
        "inputs": list(inputs),
    }
