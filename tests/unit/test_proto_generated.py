"""The committed generated code is what grpcio-tools makes from proto/ today."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_regenerating_gives_no_diff() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts/gen_proto.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
