"""The README's "Try it" section, run exactly as written (issue 17), port aside.

As a new developer does: ``rng-service dev-run --config config/dev.toml`` (what ``make run``
runs) in a fresh directory holding the repository's ``config/dev.toml`` and its ``.venv``; then
the section's shell block, command by command in one shell, and its Python block. The only
change is the port: the service binds a free one (port 0), the shell gets it as
``RNG_TARGET`` (``rng-service call`` without ``--target`` reads it), and ``127.0.0.1:50051``
in the text (``rng-audit export --target``, the Python client) is replaced by the service's
address. The grpcurl block is not run (grpcurl is not packaged here). The "try it" lines that
``dev-run`` prints once it serves are run too.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VENV = Path(sys.executable).parent.parent
DEFAULT = "127.0.0.1:50051"


def _section() -> str:
    text = (REPO / "README.md").read_text()
    start = text.index("\n## Try it\n")
    return text[start : text.index("\n## ", start + 1)]


def _blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.DOTALL)


def _commands(block: str) -> list[str]:
    """The shell block's commands: continuation lines joined, comments and blanks dropped."""
    commands: list[str] = []
    current = ""
    for line in block.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line
        if line.endswith("\\"):
            current += "\n"
            continue
        commands.append(current)
        current = ""
    assert not current, "a command ends with a backslash"
    return commands


def _env(**extra: str) -> dict[str, str]:
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RNG_SERVICE_", "RNG_TARGET", "GRPC_"))
    }
    return {**keep, **extra}


@dataclass
class DevRun:
    cwd: Path
    target: str
    stderr: Path


@pytest.fixture(scope="module")
def dev_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevRun]:
    cwd = tmp_path_factory.mktemp("readme")
    (cwd / ".venv").symlink_to(VENV)
    (cwd / "config").mkdir()
    shutil.copy(REPO / "config" / "dev.toml", cwd / "config" / "dev.toml")
    stderr = cwd / "dev-run.err"
    with open(stderr, "w") as err:
        proc = subprocess.Popen(
            [".venv/bin/rng-service", "dev-run", "--config", "config/dev.toml"],
            cwd=cwd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True,
            env=_env(RNG_SERVICE__SERVER__PORT="0", RNG_SERVICE__METRICS__PORT="0"),
        )  # fmt: skip
    assert proc.stdout is not None
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline() if ready else ""
        assert line.startswith('{"event": "listening"'), line + stderr.read_text()
        yield DevRun(cwd, f"127.0.0.1:{json.loads(line)['grpc_port']}", stderr)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)
        proc.stdout.close()


def _try_it_lines(dev: DevRun) -> list[str]:
    """The commands dev-run prints once it serves (bounded wait)."""
    deadline = time.monotonic() + 30
    while "try it:" not in dev.stderr.read_text():
        assert time.monotonic() < deadline, dev.stderr.read_text()
        time.sleep(0.05)
    time.sleep(0.2)  # the two lines follow the header in the same write
    lines = dev.stderr.read_text().split("try it:\n", 1)[1].splitlines()
    return [line.strip() for line in lines if line.startswith("  .venv/bin/")]


def test_dev_run_prints_commands_that_work(dev_run: DevRun) -> None:
    key = dev_run.cwd / "var" / "keys" / "dev-log-signing-key.pem"
    assert f"DEVELOPMENT KEY: {key}" in dev_run.stderr.read_text()
    spin, pubkey = _try_it_lines(dev_run)
    assert f"--target {dev_run.target}" in spin  # the port it serves on, after the subcommand
    for command in (spin, pubkey):
        done = subprocess.run(
            command, shell=True, cwd=dev_run.cwd, capture_output=True, text=True, timeout=60,
            env=_env(), check=False,
        )  # fmt: skip
        assert done.returncode == 0, (command, done.stderr)
    assert done.stdout.startswith("rng-service.local-dev+")


def test_the_try_it_section_as_written(dev_run: DevRun) -> None:
    section = _section().replace(DEFAULT, dev_run.target)
    shell, grpcurl = _blocks(section, "sh")
    assert "grpcurl" in grpcurl
    assert "grpcurl" not in shell
    commands = _commands(shell)
    out = dev_run.cwd / "steps"
    out.mkdir()
    script = "".join(
        f'{{ {command}\n}} >"{out}/{i}.out" 2>"{out}/{i}.err"; echo $? >"{out}/{i}.rc"\n'
        for i, command in enumerate(commands)
    )
    subprocess.run(
        ["bash", "-c", script], cwd=dev_run.cwd, env=_env(RNG_TARGET=dev_run.target),
        stdin=subprocess.DEVNULL, timeout=300, check=True,
    )  # fmt: skip

    def step(i: int) -> tuple[int, str, str]:
        return (
            int((out / f"{i}.rc").read_text()),
            (out / f"{i}.out").read_text(),
            (out / f"{i}.err").read_text(),
        )

    results = {command: step(i) for i, command in enumerate(commands)}

    def output(fragment: str) -> str:
        (match,) = [c for c in commands if fragment in c]
        return results[match][1]

    first = output("--request-id demo-1 --receipt-out receipt.json")
    shown = re.fullmatch(
        r"\d+ (red|black|green) \(wheel position \d+\)(, after \d voided spin\(s\) of 00)?"
        r"  \[request demo-1, log index (?P<index>\d+)\]\nreceipt written to receipt.json\n",
        first,
    )
    assert shown, first
    index = shown["index"]
    refused = [c for c in commands if c.endswith("--round R1") and "--request-id" not in c]
    assert len(refused) == 1
    offline = [c for c in commands if "verify-receipt" in c]
    assert len(offline) == 1
    for command, (code, _, err) in results.items():
        assert "Traceback" not in err, (command, err)
        if command in refused:
            assert code == 1, (command, err)
            assert "FAILED_PRECONDITION" in err
            assert f"slot 'spin' is already filled by request 'demo-1' at log index {index}" in err
        elif command in offline:  # what the comment above it says: exit status 4
            assert code == 4, (command, err)
        else:
            assert code == 0, (command, err)

    replay = output("--round R1 --request-id demo-1")
    assert replay == first.splitlines()[0].replace("]", ", replayed]") + "\n"
    vkey = (dev_run.cwd / "log.vkey").read_text()
    assert vkey.startswith("rng-service.local-dev+")
    assert output("verify-receipt").startswith(
        f"OK: entry {index} (roulette_spin, table T1, round R1)"
    )
    assert "NOT CHECKED: that the log still holds this entry" in output("verify-receipt")
    dice = json.loads(output("call dice"))
    assert dice["kind"] == "dice_roll"
    assert len(dice["outcome"]["faces"]) == 3
    note = (dev_run.cwd / "checkpoint.note").read_text()
    assert note.startswith("rng-service.local-dev\n")
    size = int(note.splitlines()[1])
    assert output("rng-audit export").startswith(f"exported {size} entries")
    verified = output("rng-audit verify")
    assert verified.startswith(f"OK: {size} entries of rng-service.local-dev")
    assert "and with 1 kept checkpoint(s)" in verified
    assert "NOT CHECKED" not in verified
    disputed = output("rng-audit dispute")
    assert disputed.startswith(
        "OK: these are all the outcomes of round 'R1' of table 'T1' (client 'default'): 1 entry"
    )
    assert "the start of the table's chain (seq 1 is its first entry) and the next round ('R4'" in (
        disputed
    )
    assert "consistent with 1 kept checkpoint(s)" in disputed
    assert "NOT CHECKED" not in disputed  # the kept checkpoint covers the export: exit 0 above
    history = output("rng-audit table-history")
    assert history.startswith(
        "OK: the history of table 'T1' (client 'default') is complete from seq 1 to seq 2"
    )
    assert "NOT CHECKED" not in history
    store = dev_run.cwd / "var" / "outcome-log.sqlite3"
    checked = output("check-store")
    assert checked.startswith(f"OK: {store} holds {size} entries")
    assert "OK: 1 kept checkpoint (newest: tree size" in checked
    assert "NOT CHECKED" not in checked  # exit status 0, asserted above

    (python,) = _blocks(section, "python")
    done = subprocess.run(
        [str(VENV / "bin" / "python"), "-c", python], cwd=dev_run.cwd, capture_output=True,
        text=True, timeout=60, env=_env(), check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(rf"\d+ (red|black|green) at log index {size} of {size + 1}\n", done.stdout)
