"""Writes the format-1 log fixture of this directory WITH THE CODE OF RELEASE 1 (commit 54081de).

Run once, from a checkout of that commit (the code before entry format 2), for example:

    git archive 54081de | tar -x -C /tmp/rng-v1
    cd /tmp/rng-v1 && /path/to/.venv/bin/python /path/to/tests/vectors/v1_log/make_v1_log.py \
        --code /tmp/rng-v1 --out /path/to/tests/vectors/v1_log

It starts that release's service (``python -m rng_service.cli.service serve``, SQLite, plaintext on
loopback) with the test-only signing key below, makes the requests of ``REQUESTS`` through that
release's RngClient (format 1 allowed a second spin of a round under another request id: the
fixture holds one), stops it with SIGTERM (the final checkpoint is published), and exports the
log with that release's ``rng-audit export --db``. It refuses to run with code that writes
another entry format. Not collected by pytest (no test_ prefix); the fixture's tests are in
tests/integration/test_v1_upgrade.py.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

#: Test-only signing key of the fixture (never a real key): Ed25519 from these 32 bytes.
KEY_SEED = b"rng-service v1 log fixture key!!"
KEY_NAME = "v1-fixture.example/log"
ORIGIN = "v1-fixture.example/log"
PROFILE = "mega_fire_blaze_example"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, required=True, help="checkout of commit 54081de")
    parser.add_argument("--out", type=Path, required=True, help="this fixture's directory")
    args = parser.parse_args()
    code = args.code.resolve()
    sys.path.insert(0, str(code))
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from rng_service.log import entry
    from rng_service.log.note import Ed25519NoteSigner
    from rng_service.rpc.client import RngClient

    if entry.FORMAT_VERSION != 1 or not entry.__file__.startswith(str(code)):
        raise SystemExit(f"needs the release 1 code (format 1); got {entry.__file__}")
    key = Ed25519PrivateKey.from_private_bytes(KEY_SEED)
    vkey = Ed25519NoteSigner(KEY_NAME, key).verifier_key()
    with tempfile.TemporaryDirectory() as tmp:
        key_file = Path(tmp) / "key.pem"
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        db = Path(tmp) / "log.sqlite3"
        env = {
            **os.environ,
            "PYTHONPATH": str(code),
            "RNG_SERVICE__SERVER__PORT": "0",
            "RNG_SERVICE__METRICS__ENABLED": "false",
            "RNG_SERVICE__STORAGE__PATH": str(db),
            "RNG_SERVICE__LOG__KEY_FILE": str(key_file),
            "RNG_SERVICE__LOG__KEY_NAME": KEY_NAME,
            "RNG_SERVICE__LOG__ORIGIN": ORIGIN,
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "rng_service.cli.service", "serve"],
            cwd=code, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert proc.stdout is not None
        port = 0
        for line in proc.stdout:
            found = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if found:
                port = int(found.group(1))
                break
        try:
            with RngClient(f"127.0.0.1:{port}") as c:
                c.spin(wheel="double_zero", table_id="T1", round_id="R1", request_id="spin-1")
                # Format 1 let a game server spin a round again under another request id.
                c.spin(wheel="double_zero", table_id="T1", round_id="R1", request_id="reroll-1")
                fire = c.fire_numbers(profile=PROFILE, table_id="T1", round_id="R2",
                                      request_id="fire-2")  # fmt: skip
                c.spin(wheel="single_zero", table_id="T1", round_id="R2", request_id="spin-2")
                c.mega_fire_blaze_bonus(
                    profile=PROFILE, fire_numbers_index=fire.receipt.index, table_id="T1",
                    round_id="R2", request_id="bonus-2",
                )  # fmt: skip
                c.roll_dice(count=3, sides=6, table_id="T2", round_id="R1", request_id="dice-1")
                c.uniform(low=1, high=10, count=2, table_id="T2", round_id="R2", request_id="u-2")
                c.multiball(wheel="double_zero", balls=3, table_id="T1", round_id="R3",
                            request_id="mb-3")  # fmt: skip
                c.fire_numbers(profile=PROFILE, table_id="T1", round_id="R4", request_id="fire-4")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        # One database file, no WAL beside it.
        with sqlite3.connect(db) as raw:
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            raw.execute("PRAGMA journal_mode = DELETE")
        export = Path(tmp) / "export.jsonl"
        subprocess.run(
            [sys.executable, "-m", "rng_service.cli.audit", "export", "--db", str(db),
             "--out", str(export)],
            cwd=code, env=env, check=True,
        )  # fmt: skip
        args.out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(db, args.out / "log.sqlite3")
        shutil.copyfile(export, args.out / "export.jsonl")
        (args.out / "verifier.vkey").write_text(vkey + "\n")
    print(f"wrote {args.out}/log.sqlite3, export.jsonl, verifier.vkey ({vkey})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
