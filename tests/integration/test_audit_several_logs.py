"""Auditing one log of a deployment with several (issue "Many logs", item 3 "Tools per log").

A real deployment as an operator starts it: ``rng-service serve`` with two ``[[logs]]`` (SQLite
stores), mTLS with a development CA, a game server and an auditor bound to each log. Each log's
auditor runs ``rng-audit`` as a command: ``export --origin`` and ``verify`` with that log's key
only (exit 0 with the checkpoint the auditor kept), and, live, ``table-history`` and
``dispute`` with ``--origin`` (exit 0: proven complete by the committed map, issue 40). The
same commands naming the other log fail: with the auditor's own certificate, the other log is
refused (PERMISSION_DENIED, one line naming the log, exit status 2: nothing was checked); with
the other log's key on the auditor's own log, nothing verifies (exit status 1).

Where each log is reached (``address``) and which log a command names (``--origin``) are
separate inputs: log A is reached on its own port, log B on the shared ``server.port`` that
routes by ``rng-origin`` (one deployment covers both routes); every case keeps its outcome
(a refusal for a log the certificate is not bound to is the same wherever it arrives,
docs/security.md "Logs").
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rng_service.rpc.client import ClientTls, RngClient
from rng_service.rpc.log_servicer import LogClient
from tests.several_logs import client_lines, prepare, serve, server_lines

pytestmark = [pytest.mark.serial]

BIN = Path(sys.executable).parent
A, B = "casino-a.test/rng-log", "casino-b.test/rng-log"
OTHER = {A: B, B: A}
GAME = {A: "game-a", B: "game-b"}
AUDITOR = {A: "auditor-a", B: "auditor-b"}
#: Bound on every wait and every command of this test, in seconds.
WAIT = 120.0


@dataclass
class Deployment:
    d: Path
    address: dict[str, str]
    """Where each log is reached (HOST:PORT), by origin: an input of its own, apart from the
    origin a command names."""

    def tls(self, identity: str) -> ClientTls:
        certs = self.d / "certs"
        return ClientTls.from_files(
            certs / "ca.pem", certs / f"{identity}.pem", certs / f"{identity}.key"
        )

    def mtls(self, identity: str) -> list[str]:
        certs = self.d / "certs"
        return ["--ca", str(certs / "ca.pem"), "--cert", str(certs / f"{identity}.pem"),
                "--tls-key", str(certs / f"{identity}.key")]  # fmt: skip

    def vkey(self, origin: str) -> str:
        return str(self.d / f"{origin.split('.')[0]}.pem.vkey")


def _config(d: Path) -> Path:
    text = server_lines(d)
    for origin in (A, B):
        name = origin.split(".")[0]
        text += ["[[logs]]", f'origin = "{origin}"', f'key_file = "{d}/{name}.pem"',
                 f'store = "{d}/{name}.sqlite3"', "port = 0", "metrics_port = 0"]  # fmt: skip
    text += client_lines(GAME, AUDITOR)
    text += ["[[clients]]", 'identity = "operator"', 'roles = ["operator"]', 'logs = ["*"]']
    path = d / "config.toml"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return path


def _addresses(listening: dict[str, object]) -> dict[str, str]:
    """Log A at its own port, log B at the shared port that serves both (from ``serve``'s
    listening line)."""
    logs = listening["logs"]
    assert isinstance(logs, dict)
    shared = int(str(listening["grpc_port"]))
    own = int(logs[A]["grpc_port"])
    assert own != shared
    return {A: f"127.0.0.1:{own}", B: f"127.0.0.1:{shared}"}


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    prepare(tmp_path, (A, B), [*GAME.values(), *AUDITOR.values(), "operator"])
    with serve(tmp_path, _config(tmp_path)) as (_, line):
        yield Deployment(tmp_path, _addresses(line))


def _rng_audit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "rng-audit"), *args], capture_output=True, text=True, timeout=WAIT,
        check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _rng_service(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "rng-service"), *args], capture_output=True, text=True, timeout=WAIT,
        check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _draw(dep: Deployment, origin: str) -> None:
    """Two rounds of table T1 by the log's game server, then a checkpoint published (by the
    operator), so that an export ends at the newest entry; the auditor keeps the checkpoint."""
    with RngClient(dep.address[origin], tls=dep.tls(GAME[origin]), origin=origin) as game:
        for i in (1, 2):
            game.spin(wheel="double_zero", table_id="T1", round_id=f"R{i}",
                      request_id=f"{GAME[origin]}-{i}")  # fmt: skip
    with RngClient(dep.address[origin], tls=dep.tls("operator"), origin=origin) as op:
        op.publish_checkpoint()
    with LogClient(dep.address[origin], tls=dep.tls(AUDITOR[origin]), origin=origin) as c:
        (dep.d / f"{origin.split('.')[0]}.kept").write_text(c.latest_checkpoint())


def test_each_log_audited_alone_and_the_other_refused(deployment: Deployment) -> None:
    dep = deployment
    for origin in (A, B):
        _draw(dep, origin)
    for origin in (A, B):
        other = OTHER[origin]
        name = origin.split(".")[0]
        me = dep.mtls(AUDITOR[origin])
        at = dep.address[origin]
        key = ["--key", dep.vkey(origin)]
        out = dep.d / f"{name}.export"
        done = _rng_audit(*me, "export", "--target", at, "--origin", origin, "--out", str(out))
        assert done.returncode == 0, done.stderr
        assert "exported 2 entries and " in done.stdout, done.stdout
        assert f"of {origin} to {out}" in done.stdout, done.stdout
        kept = ["--checkpoint", str(dep.d / f"{name}.kept")]
        ok = _rng_audit("verify", str(out), *key, *kept)
        assert ok.returncode == 0, ok.stdout + ok.stderr
        assert ok.stdout.startswith(f"OK: 2 entries of {origin}, root "), ok.stdout
        assert "NOT CHECKED" not in ok.stdout
        wrong = _rng_audit("verify", str(out), "--key", dep.vkey(other))
        assert wrong.returncode == 1, wrong.stdout + wrong.stderr
        assert f"is of log {origin!r}, not of the expected log {other!r}" in wrong.stderr

        history = ["table-history", "--target", at, "--client", GAME[origin], "--table", "T1"]
        done = _rng_audit(*me, *history, "--origin", origin, *key)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.startswith(
            f"OK: the history of table 'T1' (client {GAME[origin]!r}) is complete from seq 1 "
            "to seq 2 as of checkpoint "
        ), done.stdout
        dispute = ["dispute", "--target", at, "--client", GAME[origin], "--table", "T1",
                   "--round", "R2"]  # fmt: skip
        done = _rng_audit(*me, *dispute, "--origin", origin, *key, "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        answer = json.loads(done.stdout)
        assert (answer["ok"], answer["proven_complete"]) == (True, True), answer
        done = _rng_audit(*me, *dispute, "--origin", origin, *key)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.startswith("OK: these are all the outcomes of round 'R2' of table "
                                      f"'T1' (client {GAME[origin]!r}) as of ")  # fmt: skip

        # The other log, with this auditor's certificate: refused wherever it is reached,
        # naming it, whether named by --origin or by its key's name.
        there = dep.address[other]
        for named in (["--origin", other], []):
            for command in (history, dispute):
                args = [there if a == at else a for a in command]
                refused = _rng_audit(*me, *args, *named, "--key", dep.vkey(other))
                assert refused.returncode == 2, refused.stdout + refused.stderr
                lines = refused.stderr.strip().splitlines()
                assert len(lines) == 1, refused.stderr
                assert lines[0].startswith(f"error: {there} refused the call naming log "
                                           f"{other!r} ("), lines  # fmt: skip
                assert (f"PERMISSION_DENIED: the requested log is not available to client "
                        f"{AUDITOR[origin]!r}") in lines[0]  # fmt: skip
                assert ("pass --origin" in lines[0]) == (not named), lines
        refused = _rng_audit(*me, "export", "--target", there, "--origin", other, "--out",
                             str(dep.d / "refused.export"))  # fmt: skip
        assert refused.returncode == 2, refused.stderr
        assert f"refused the call naming log {other!r}" in refused.stderr
        assert not (dep.d / "refused.export").exists()
        # rng-service call reads name the log by --origin; a refusal names it (exit 1: refused
        # by the service, docs/cli.md convention 9).
        done = _rng_service("call", *me, "checkpoint", "--target", at, "--origin", origin)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(origin + "\n"), done.stdout
        refused = _rng_service("call", *me, "checkpoint", "--target", there, "--origin", other)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert (f"PERMISSION_DENIED: the requested log is not available to client "
                f"{AUDITOR[origin]!r} (the call named log {other!r}: either no log {other!r} "
                "is served there") in refused.stderr  # fmt: skip
        # This auditor's own log with the other log's key: nothing verifies (exit 1).
        done = _rng_audit(*me, *history, "--origin", origin, "--key", dep.vkey(other))
        assert done.returncode == 1, done.stdout + done.stderr
        assert done.stderr.startswith("FAILED: the checkpoint "), done.stderr
