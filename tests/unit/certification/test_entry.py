"""``rng-certify`` without the ``certify`` extra: exit 2 and one line naming the extra to
install, never a traceback. The extra's packages are blocked in the subprocess by a meta path
finder (:mod:`tests.blocked_imports`), not uninstalled, and the installed console script itself
is run, so the test covers the entry point pyproject.toml declares."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from certification.entry import EXTRA_INSTALL
from tests.blocked_imports import attempts, blocking_env


def _script() -> str:
    beside = Path(sys.executable).with_name("rng-certify")
    found = str(beside) if beside.exists() else shutil.which("rng-certify")
    assert found is not None, "the rng-certify console script is not installed (make install)"
    return found


def _run(tmp_path: Path, blocked: list[str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_script(), *argv],
        env=blocking_env(tmp_path, blocked),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("blocked", "argv"),
    [(["scipy"], ["nist", "--help"]), (["jinja2"], ["report", "--help"]), (["scipy"], [])],
)
def test_without_the_extra_it_exits_2_naming_the_extra(
    tmp_path: Path, blocked: list[str], argv: list[str]
) -> None:
    proc = _run(tmp_path, blocked, *argv)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("rng-certify: error: ")
    assert "'certify' extra" in line
    assert f"({blocked[0]} is not installed)" in line
    assert line.endswith(EXTRA_INSTALL)
    assert EXTRA_INSTALL == "pip install 'rng-service[certify]'"
    assert attempts(tmp_path)  # the block was what stopped it


def test_with_the_extra_the_same_script_runs(tmp_path: Path) -> None:
    """The control: the same script and mechanism, with nothing of the extra blocked."""
    proc = _run(tmp_path, ["no_such_package_blocked_here"], "nist", "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: rng-certify nist")
    assert attempts(tmp_path) == []
