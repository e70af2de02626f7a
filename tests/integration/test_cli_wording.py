"""Counts read as English (issue 35, finding 5): "1 entry", "1 stored checkpoint", never
"1 entries"; the commands as a person types them, on a log of one entry."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from rng_service.log.keys import generate_key_pair
from tests.integration.test_store_integrity import ORIGIN, Served, write_config

BIN = Path(sys.executable).parent
WRONG = re.compile(r"\b1 (entries|checkpoints|stored checkpoints|Merkle nodes)\b")


def test_one_entry_and_one_checkpoint_are_singular(tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    generate_key_pair(key, name=ORIGIN)
    config = write_config(tmp_path, key)
    served = Served(config)
    try:
        served.spins("w", 1)
    finally:
        served.stop()
    db = tmp_path / "log.sqlite3"
    with sqlite3.connect(db) as conn:
        sizes = [row[0] for row in conn.execute("SELECT size FROM checkpoints ORDER BY size")]
    conn.close()
    assert sizes[-1] == 1
    done = subprocess.run(
        [BIN / "rng-service", "check-store", "--config", str(config)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 4, done.stderr  # no kept checkpoint: truncation NOT CHECKED
    assert f"holds 1 entry of {ORIGIN}" in done.stdout
    assert "the store's 1 entry, so nothing here shows" in done.stdout
    stored = len(sizes)
    assert f"{stored} stored checkpoint{'' if stored == 1 else 's'} verified" in done.stdout
    assert not WRONG.search(done.stdout), done.stdout
    out = tmp_path / "export.jsonl"
    done = subprocess.run(
        [BIN / "rng-audit", "export", "--db", str(db), "--out", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        f"exported 1 entry and {stored} checkpoint{'' if stored == 1 else 's'} of {ORIGIN}"
    ), done.stdout
    assert not WRONG.search(done.stdout + done.stderr)
