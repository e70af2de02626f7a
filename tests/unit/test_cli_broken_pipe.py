"""A command whose standard output reader goes away (``rng-audit verify ... | head``).

The shell-pipeline contract of docs/cli.md: no ``error: : Broken pipe`` on standard error, no
"Exception ignored" traceback from the interpreter's flush at exit, and exit status 141
(128 + SIGPIPE) rather than 0, since a verification cut short has not said its verdict.
The commands run as real processes, their standard output a pipe whose read end is closed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

V1 = Path(__file__).resolve().parents[1] / "vectors" / "v1_log"
BIN = Path(sys.executable).parent

COMMANDS = {
    "rng-audit verify": [
        "rng-audit",
        "verify",
        str(V1 / "export.jsonl"),
        "--key",
        str(V1 / "verifier.vkey"),
    ],
    "rng-audit verify --fast": [
        "rng-audit",
        "verify",
        str(V1 / "export.jsonl"),
        "--fast",
        "--key",
        str(V1 / "verifier.vkey"),
    ],
}


def run_with_closed_stdout(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone before the first byte
    try:
        return subprocess.run(
            [str(BIN / argv[0]), *argv[1:]],
            stdout=write_end,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_verification_cut_short_is_neither_an_error_nor_a_pass(name: str) -> None:
    result = run_with_closed_stdout(COMMANDS[name])
    assert result.stderr == b"", result.stderr.decode()
    assert result.returncode == 141


def test_the_same_verification_with_a_reader_passes() -> None:
    # The control: the export does verify, so 141 above is the pipe's doing, not a failure
    # (4, not 0: no kept checkpoint covers its newest entry, truncation is NOT CHECKED).
    result = subprocess.run(
        [str(BIN / "rng-audit"), *COMMANDS["rng-audit verify"][1:]],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert result.returncode == 4, result.stderr.decode()
    assert result.stdout.startswith(b"OK: ")
    assert b"NOT CHECKED: truncation" in result.stdout


def test_rng_service_stops_as_quietly(tmp_path: Path) -> None:
    key = tmp_path / "signing.key"
    made = subprocess.run(
        [str(BIN / "rng-service"), "keygen", "--out", str(key), "--name", "casino.example"],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert made.returncode == 0, made.stderr.decode()
    result = run_with_closed_stdout(
        ["rng-service", "pubkey", "--key-file", str(key), "--name", "casino.example"]
    )
    assert result.stderr == b"", result.stderr.decode()
    assert result.returncode == 141
