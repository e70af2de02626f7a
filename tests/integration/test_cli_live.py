"""The command lines as a user runs them, against live services (issue 17, one test per
finding): the console scripts of this installation (``.venv/bin/rng-service``, ``rng-audit``)
run as subprocesses against ``rng-service serve`` subprocesses started once for the module,
one plaintext and one with mTLS. What the commands print is checked against the log itself,
read through the Python client, and proofs against the RFC 6962 code (tested on its own with
the upstream vectors).

Every wait is bounded; every address is loopback; ports are picked by the services (port 0).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rng_service.log import merkle
from rng_service.log.keys import generate_key_pair
from rng_service.log.note import NoteVerifier, open_checkpoint
from rng_service.rpc.client import ClientTls, RngClient

BIN = Path(sys.executable).parent
ORIGIN = "cli.test/log"
PROFILE = "mega_fire_blaze_example"


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def _env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a user's shell: none of our variables unless a test sets them."""
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RNG_SERVICE_", "RNG_TARGET", "GRPC_"))
    }
    return {**keep, **(extra or {})}


def run(
    tool: str, *args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> Run:
    done = subprocess.run(
        [str(BIN / tool), *args], capture_output=True, text=True, timeout=120,
        env=_env(env), cwd=cwd, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return Run(done.returncode, done.stdout, done.stderr)


@dataclass
class Live:
    proc: subprocess.Popen[str]
    port: int
    tmp: Path
    vkey: str
    certs: Path | None = None

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def client(self) -> RngClient:
        tls = None
        if self.certs is not None:
            c = self.certs
            tls = ClientTls.from_files(c / "ca.pem", c / "auditor-1.pem", c / "auditor-1.key")
        return RngClient(self.target, tls=tls, timeout=30)

    def size(self) -> int:
        with self.client() as c:
            return int(c.latest_checkpoint()["size"])

    def entry(self, index: int) -> dict[str, Any]:
        with self.client() as c:
            (row,) = c.entries(index, index + 1)
        return dict(json.loads(row["entry"]))


def _serve(config: Path, tmp: Path) -> Live:
    with open(tmp / "serve.err", "w") as err:  # the child keeps its own descriptor
        proc = subprocess.Popen(
            [str(BIN / "rng-service"), "serve", "--config", str(config)],
            stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True, cwd=tmp,
            env=_env(),
        )  # fmt: skip
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    line = proc.stdout.readline() if ready else ""
    if not line.startswith('{"event": "listening"'):
        proc.kill()
        proc.wait(30)
        proc.stdout.close()
        raise AssertionError(f"serve did not start: {line!r}\n{(tmp / 'serve.err').read_text()}")
    return Live(proc=proc, port=json.loads(line)["grpc_port"], tmp=tmp, vkey="")


def _stop(live: Live) -> None:
    live.proc.send_signal(signal.SIGTERM)
    try:
        live.proc.wait(60)
    except subprocess.TimeoutExpired:
        live.proc.kill()
        live.proc.wait(30)
    if live.proc.stdout is not None:
        live.proc.stdout.close()


def _config(tmp: Path, extra: str = "") -> Path:
    info = generate_key_pair(tmp / "log.pem", name=ORIGIN, passphrase=None)
    (tmp / "log.vkey").write_text(info.verifier_key + "\n")
    config = tmp / "config.toml"
    config.write_text(
        f"""
[server]
port = 0
lock_dir = "{tmp / "run"}"
[metrics]
enabled = false
[storage]
path = "{tmp / "log.sqlite3"}"
[log]
origin = "{ORIGIN}"
key_file = "{tmp / "log.pem"}"
[profiles]
allow_examples = true
{extra}
"""
    )
    return config


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp("cli-live")
    served = _serve(_config(tmp), tmp)
    served.vkey = (tmp / "log.vkey").read_text().strip()
    try:
        yield served
    finally:
        _stop(served)


@pytest.fixture(scope="module")
def mtls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp("cli-mtls")
    made = run("rng-service", "dev-ca", "--out", str(tmp / "tls"),
               "--client", "auditor-1:auditor", "--client", "healthcheck")  # fmt: skip
    assert made.code == 0, made.err
    # what dev-ca tells the user to call with names the TLS key --tls-key
    assert f"--tls-key {tmp / 'tls' / 'auditor-1.key'}" in made.err
    served = _serve(_config(tmp, made.out), tmp)
    served.certs = tmp / "tls"
    try:
        yield served
    finally:
        _stop(served)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spin(*args: str) -> list[str]:
    return ["spin", "--wheel", "double_zero", "--table", "T1", *args]


# --- finding 1: options before or after the subcommand; the target rule --------------------


def test_1_options_anywhere_and_the_target_rule(live: Live) -> None:
    # the form the service printed at start-up: --target after the subcommand
    after = run("rng-service", "call", *_spin("--round", "F1-a", "--target", live.target))
    assert after.code == 0, after.err
    before = run("rng-service", "call", "--target", live.target, *_spin("--round", "F1-b"))
    assert before.code == 0, before.err
    assert "[request cli-" in before.out
    split = run("rng-service", "call", "--timeout", "20", "health", "--target", live.target)
    assert (split.code, split.out.strip()) == (0, "SERVING")

    # no --target: $RNG_TARGET
    assert run("rng-service", "call", "health", env={"RNG_TARGET": live.target}).out == "SERVING\n"
    # neither: the configured server address, as serve reads it (defaults + RNG_SERVICE__*)
    configured = {"RNG_SERVICE__SERVER__PORT": str(live.port)}
    assert run("rng-service", "call", "health", env=configured).out == "SERVING\n"
    # --config names the service's own file; an explicit option beats the environment
    config = live.tmp / "call.toml"
    config.write_text(f"[server]\nport = {live.port}\n")
    dead = f"127.0.0.1:{_free_port()}"
    r = run("rng-service", "call", "health", "--config", str(config), env={"RNG_TARGET": dead})
    assert (r.code, r.out) == (0, "SERVING\n"), r.err
    # a failed connection names the target and the rule that chose it
    r = run("rng-service", "call", "health", env={"RNG_TARGET": dead})
    assert r.code == 1
    assert f"target {dead}: RNG_TARGET" in r.err
    assert "nothing accepts connections" in r.err
    r = run("rng-service", "call", "health", "--target", live.target, "--config", str(config))
    assert r.code == 2
    assert "give --target or --config, not both" in r.err


# --- finding 2: every RPC a person calls by hand ---------------------------------------------


def call_json(live: Live, *args: str) -> dict[str, Any]:
    r = run("rng-service", "call", *args, "--json", env={"RNG_TARGET": live.target})
    assert r.code == 0, r.err
    data: dict[str, Any] = json.loads(r.out)
    return data


def _bonus_round(live: Live) -> str:
    """A round whose spin came to rest on one of its Fire Numbers (drawn through the Python
    client; each round triggers with probability at least 1/37; at most 1000 rounds)."""
    with live.client() as c:
        for i in range(1000):
            ids = {"table_id": "MFB", "round_id": f"B{i}"}
            fire = c.fire_numbers(profile=PROFILE, request_id=f"mfb-f{i}", **ids)
            spin = c.spin(wheel="single_zero", request_id=f"mfb-s{i}", **ids)
            if int(spin.number) in fire.outcome["numbers"]:
                return f"B{i}"
    raise AssertionError("no spin hit its Fire Numbers in 1000 rounds")


def test_2_every_outcome_rpc(live: Live) -> None:
    ctx = ["--table", "T2"]
    multi = call_json(live, "multiball", "--wheel", "single_zero", *ctx, "--round", "M1")
    logged = live.entry(multi["log_index"])
    assert (multi["kind"], logged["kind"]) == ("multiball", "multiball")
    assert [b["number"] for b in multi["outcome"]["balls"]] == [
        b["number"] for b in logged["outcome"]["balls"]
    ]
    fire = call_json(live, "fire-numbers", "--profile", PROFILE, *ctx, "--round", "M2")
    assert fire["outcome"]["numbers"] == [
        int(n) for n in live.entry(fire["log_index"])["outcome"]["numbers"]
    ]
    jackpot = call_json(live, "jackpot", "--profile", PROFILE, *ctx, "--round", "M3")
    assert jackpot["outcome"]["tier"] == live.entry(jackpot["log_index"])["outcome"]["tier"]
    dice = call_json(live, "dice", *ctx, "--round", "M4")  # Sic Bo by default: 3 dice of 6
    assert dice["outcome"]["faces"] == live.entry(dice["log_index"])["outcome"]["faces"]
    assert len(dice["outcome"]["faces"]) == 3
    cards = call_json(live, "shuffle", "--plan", "four_card_poker", "--players", "2", *ctx,
                      "--round", "M5")  # fmt: skip
    assert cards["outcome"]["cards"] == live.entry(cards["log_index"])["outcome"]["cards"]
    assert [h["position"] for h in cards["outcome"]["hands"]][:2] == ["player1", "player2"]
    one = call_json(live, "uniform", "--low", "1", "--high", "6", "--count", "4", "--slot",
                    "card-1", *ctx, "--round", "M6")  # fmt: skip
    two = call_json(live, "uniform", "--low", "1", "--high", "6", "--slot", "card-2", *ctx,
                    "--round", "M6")  # fmt: skip
    assert live.entry(one["log_index"])["slot"] == "card-1"
    assert live.entry(two["log_index"])["outcome"]["values"] == two["outcome"]["values"]
    weighted = call_json(live, "weighted", "--weights", "1", "2", "3", "--count", "5", *ctx,
                         "--round", "M7")  # fmt: skip
    assert weighted["outcome"]["indices"] == live.entry(weighted["log_index"])["outcome"]["indices"]
    batch = call_json(live, "batch", "--count", "20", "--dice", "3", "6")
    assert batch["kind"] == "dice_roll_batch"
    assert batch["outcome"]["dice"]["faces"] == live.entry(batch["log_index"])["outcome"]["faces"]
    r = run("rng-service", "call", "stream", "--count", "25", "--chunk-size", "10", "--wheel",
            "single_zero", "--request-id", "lab-s1", "--json",
            env={"RNG_TARGET": live.target})  # fmt: skip
    chunks = [json.loads(line) for line in r.out.splitlines()]
    assert [c["request_id"] for c in chunks] == ["lab-s1/0", "lab-s1/1", "lab-s1/2"]
    assert [len(c["outcome"]["roulette"]["numbers"]) for c in chunks] == [10, 10, 5]
    assert live.entry(chunks[2]["log_index"])["request_id"] == "lab-s1/2"
    bonus_round = _bonus_round(live)
    bonus = call_json(live, "bonus", "--profile", PROFILE, "--table", "MFB", "--round", bonus_round)
    assert bonus["kind"] == "mega_fire_blaze_bonus"
    assert bonus["outcome"]["total"] == live.entry(bonus["log_index"])["outcome"]["total"]
    void = call_json(live, "void-round", *ctx, "--round", "M7", "--reason", "wheel jammed")
    assert live.entry(void["log_index"])["kind"] == "round_void"
    # text output: the outcome, then where it is logged
    r = run("rng-service", "call", "dice", *ctx, "--round", "M8", "--request-id", "m8",
            env={"RNG_TARGET": live.target})  # fmt: skip
    faces = live.entry(live.size() - 1)["outcome"]["faces"]
    assert r.out.startswith(f"{' '.join(map(str, faces))} (total {sum(faces)})  [request m8, ")


def test_2_every_log_read_publish_profiles_and_health(live: Live) -> None:
    env = {"RNG_TARGET": live.target}
    call_json(live, "dice", "--table", "T3", "--round", "L1")  # at least one entry
    keys = run("rng-service", "call", "keys", env=env)
    assert keys.out.split()[:2] == [live.vkey, "active"]
    note = run("rng-service", "call", "checkpoint", env=env).out
    verifier = NoteVerifier.from_verifier_key(live.vkey)
    checkpoint, _ = open_checkpoint(note.encode(), [verifier], origin=ORIGIN)
    size = checkpoint.size
    published = call_json(live, "publish")
    assert published["size"] >= size
    listed = call_json(live, "checkpoints", "--min-size", str(published["size"]))
    assert published["size"] in [c["size"] for c in listed]
    with live.client() as c:
        raw = [row["entry"] for row in c.entries(0, size)]
    leaves = [merkle.leaf_hash(data) for data in raw]
    rows = json.loads(run("rng-service", "call", "entries", "--start", "0", "--end", "2",
                          "--json", env=env).out)  # fmt: skip
    assert [r["leaf_hash"] for r in rows] == [h.hex() for h in leaves[:2]]
    found = call_json(live, "find", "--table", "T3")
    assert {e["entry"]["table_id"] for e in found["entries"]} == {"T3"}
    assert found["truncated"] is False
    proof = call_json(live, "inclusion", "--index", "1", "--tree-size", str(size))
    merkle.verify_inclusion(leaves[1], 1, size, [bytes.fromhex(h) for h in proof["proof"]],
                            checkpoint.root_hash)  # fmt: skip
    consistency = call_json(live, "consistency", "--first", "2", "--second", str(size))
    merkle.verify_consistency(
        2, size, [bytes.fromhex(h) for h in consistency["proof"]],
        merkle.root_from_leaf_hashes(leaves[:2]), checkpoint.root_hash,
    )  # fmt: skip
    profiles = run("rng-service", "call", "profiles", env=env).out
    line = next(p for p in profiles.splitlines() if p.startswith(f"{PROFILE} v1"))
    assert line.endswith("EXAMPLE")
    out = live.tmp / "profile.json"
    r = run("rng-service", "call", "profile", "--name", PROFILE, "--out", str(out), env=env)
    assert r.code == 0, r.err
    assert f"sha256 {hashlib.sha256(out.read_bytes()).hexdigest()}" in line
    assert run("rng-service", "call", "health", "--json", env=env).out == (
        '{\n  "service": "",\n  "status": "SERVING"\n}\n'
    )


def test_2_lookups_by_request_id_and_table_histories_come_with_proofs(live: Live) -> None:
    """call find --client --request-id and call table-history (issue "Round integrity, part
    2"): each entry with its inclusion proof in the tree the answer states, whose signed
    checkpoint it carries; a history cut by --limit says how to page on."""
    for n in (1, 2, 3):
        call_json(live, "spin", "--wheel", "double_zero", "--table", "T9", "--round", f"H{n}",
                  "--request-id", f"hist-{n}")  # fmt: skip
    verifier = NoteVerifier.from_verifier_key(live.vkey)

    def proven(answer: dict[str, Any]) -> list[dict[str, Any]]:
        checkpoint, _ = open_checkpoint(answer["checkpoint"].encode(), [verifier], origin=ORIGIN)
        assert checkpoint.size == answer["tree_size"]
        for e in answer["entries"]:
            data = json.dumps(
                e["entry"], separators=(",", ":"), sort_keys=True, ensure_ascii=False
            ).encode()
            leaf = bytes.fromhex(e["leaf_hash"])
            assert merkle.leaf_hash(data) == leaf  # the entry as printed is the signed one
            proof = [bytes.fromhex(h) for h in e.get("inclusion_proof", [])]
            merkle.verify_inclusion(leaf, e["index"], answer["tree_size"], proof,
                                    checkpoint.root_hash)  # fmt: skip
        return [e["entry"] for e in answer["entries"]]

    found = call_json(live, "find", "--client", "default", "--request-id", "hist-2")
    assert [(e["round_id"], e["table_seq"]) for e in proven(found)] == [("H2", 2)]
    history = call_json(live, "table-history", "--table", "T9")
    assert [e["round_id"] for e in proven(history)] == ["H1", "H2", "H3"]
    assert (history["client"], history["table_id"]) == ("default", "T9")
    assert history["truncated"] is False
    size = history["tree_size"]
    page = run("rng-service", "call", "table-history", "--table", "T9", "--limit", "1",
               "--tree-size", str(size), env={"RNG_TARGET": live.target})  # fmt: skip
    assert page.code == 0, page.err
    assert f"note: more entries follow: page on with --from 2 --tree-size {size}" in page.err
    refused = run("rng-service", "call", "find", "--request-id", "hist-2",
                  env={"RNG_TARGET": live.target})  # fmt: skip
    assert refused.code == 1
    assert "INVALID_ARGUMENT" in refused.err
    assert "request_id: needs client too" in refused.err


# --- finding 3: nothing drawn for what can be checked first; nothing lost after the draw ---


def test_3_bad_keys_and_outputs_stop_before_the_draw(live: Live) -> None:
    env = {"RNG_TARGET": live.target}
    size = live.size()
    for bad, says in [
        (["--verifier-key", "bogus"], "--verifier-key"),
        (["--verifier-key", "x+1+AAAA"], "--verifier-key"),
        (["--receipt-out", "/nonexistent/r.json"], "directory /nonexistent does not exist"),
        (["--receipt-out", str(live.tmp)], "is a directory"),
    ]:
        r = run("rng-service", "call", *_spin("--round", "F3-a", *bad), env=env)
        assert r.code == 2, (bad, r.err)
        assert says in r.err
        assert "request id" not in r.err  # refused before any request was made
    r = run("rng-service", "call", "profile", "--name", PROFILE, "--out", "/nonexistent/p.json",
            env=env)  # fmt: skip
    assert r.code == 2
    assert live.size() == size  # nothing drawn, nothing logged


def test_3_the_request_id_comes_first_and_the_outcome_survives(live: Live) -> None:
    env = {"RNG_TARGET": live.target}
    # the request id is on stderr before the call: even when the call cannot be made
    r = run("rng-service", "call", *_spin("--round", "F3-b"), "--target",
            f"127.0.0.1:{_free_port()}", "--timeout", "3")  # fmt: skip
    assert r.code == 1
    first, *rest = r.err.splitlines()
    request_id = first.removeprefix("request id: ")
    assert request_id.startswith("cli-")
    # nothing listens there: nothing was sent, so no retry advice (that is for a call that may
    # have reached the service: test_5_a_draw_that_reached_a_service_keeps_the_retry_advice)
    assert "nothing was sent" in "\n".join(rest)
    # a receipt that cannot be written after the draw: the outcome is printed all the same
    r = run("rng-service", "call", *_spin("--round", "F3-c", "--receipt-out", "/dev/full"),
            env=env)  # fmt: skip
    assert r.code == 3, r.err
    request_id = r.err.splitlines()[0].removeprefix("request id: ")
    outcome, where = r.out.splitlines()[0].split("  [")
    index = live.size() - 1
    assert where == f"request {request_id}, log index {index}]"
    assert live.entry(index)["request_id"] == request_id
    assert "the receipt was not written to /dev/full: No space left on device" in r.err
    assert f"--request-id {request_id} returns it again" in r.err
    again = run("rng-service", "call", *_spin("--round", "F3-c", "--request-id", request_id),
                env=env)  # fmt: skip
    assert again.out.startswith(f"{outcome}  [request {request_id}, log index {index}, replayed]")
    # a receipt that does not verify (another key of the same name): printed, exit 3, in JSON
    other = generate_key_pair(live.tmp / "other.pem", name=ORIGIN, passphrase=None)
    r = run("rng-service", "call", *_spin("--round", "F3-d", "--verifier-key", other.verifier_key,
            "--json"), env=env)  # fmt: skip
    assert r.code == 3
    document = json.loads(r.out)
    assert document["verified_by"] is None
    assert live.entry(document["log_index"])["request_id"] == document["request_id"]
    assert "the receipt did NOT verify" in r.err
    # the right key: written and verified
    receipt = live.tmp / "r.json"
    r = run("rng-service", "call", *_spin("--round", "F3-e", "--verifier-key",
            str(live.tmp / "log.vkey"), "--receipt-out", str(receipt)), env=env)  # fmt: skip
    assert r.code == 0, r.err
    assert r.out.splitlines()[1:] == [
        f"receipt written to {receipt}",
        f"receipt verified: signed by {ORIGIN}",
    ]


# --- finding 4: one name per key ------------------------------------------------------------


def test_4_tls_key_and_verifier_key_have_distinct_names(live: Live) -> None:
    env = {"RNG_TARGET": live.target}
    for args in (["call", "--key", "k.pem", *_spin("--round", "F4")],
                 ["call", *_spin("--round", "F4"), "--key", "K"]):  # fmt: skip
        r = run("rng-service", *args, env=env)
        assert r.code == 2
        assert "--tls-key is this client's mTLS private key" in r.err
        assert "--verifier-key the log's verifier key" in r.err
    r = run("rng-audit", "--key", "k.pem", "export", "--target", live.target, "--out", "x")
    assert r.code == 2
    assert "this client's mTLS private key is --tls-key" in r.err
    r = run("rng-service", "call", *_spin("--round", "F4", "--tls-key", "k.pem"), env=env)
    assert r.code == 2
    assert "--ca, --cert needed too (--ca, --cert and --tls-key go together)" in r.err
    # the verifier key: --key or --verifier-key, a key or a .vkey file, in every verifier
    receipt = live.tmp / "r4.json"
    r = run("rng-service", "call", *_spin("--round", "F4", "--receipt-out", str(receipt)),
            env=env)  # fmt: skip
    assert r.code == 0, r.err
    vkey_file = str(live.tmp / "log.vkey")
    # (offline: verified, and that the log still holds it NOT CHECKED, exit status 4)
    assert run("rng-service", "verify-receipt", str(receipt), "--key", vkey_file).code == 4
    assert run("rng-service", "verify-receipt", str(receipt), "--verifier-key", live.vkey).code == 4
    assert run("rng-audit", "verify-receipt", str(receipt), "--verifier-key", vkey_file).code == 4


# --- finding 5: a hint for TLS mismatches; ClientTls from str paths -------------------------


def test_5_tls_hints_and_client_tls_from_strings(live: Live, mtls: Live) -> None:
    assert mtls.certs is not None
    c = mtls.certs
    tls = ["--ca", str(c / "ca.pem"), "--cert", str(c / "healthcheck.pem"),
           "--tls-key", str(c / "healthcheck.key")]  # fmt: skip
    r = run("rng-service", "call", "health", "--target", mtls.target)
    assert r.code == 1
    assert "the port may want mTLS" in r.err
    assert "--ca, --cert and --tls-key" in r.err
    r = run("rng-audit", "export", "--target", mtls.target, "--out", str(mtls.tmp / "e.jsonl"))
    assert r.code == 2
    assert "the port may want mTLS" in r.err
    r = run("rng-service", "call", *tls, "health", "--target", live.target)
    assert r.code == 1
    assert "does not speak TLS: it may be a plaintext development service" in r.err
    other = mtls.tmp / "other-ca"
    assert run("rng-service", "dev-ca", "--out", str(other), "--client", "healthcheck").code == 0
    r = run("rng-service", "call", "--ca", str(other / "ca.pem"), "--cert",
            str(c / "healthcheck.pem"), "--tls-key", str(c / "healthcheck.key"), "health",
            "--target", mtls.target)  # fmt: skip
    assert r.code == 1
    assert "not issued by the given CA (--ca)" in r.err
    r = run("rng-service", "call", "--ca", str(c / "ca.pem"), "--cert",
            str(other / "healthcheck.pem"), "--tls-key", str(other / "healthcheck.key"),
            "health", "--target", mtls.target)  # fmt: skip
    assert r.code == 1
    assert "may not accept this client certificate" in r.err
    # the TLS options before, the target after the subcommand
    r = run("rng-service", "call", *tls, "health", "--target", mtls.target)
    assert (r.code, r.out) == (0, "SERVING\n"), r.err
    tls_files = ClientTls.from_files(str(c / "ca.pem"), str(c / "auditor-1.pem"),
                                     str(c / "auditor-1.key"))  # fmt: skip
    with RngClient(mtls.target, tls=tls_files, timeout=30) as client:
        assert client.public_keys()[0]["name"] == ORIGIN


def test_5_a_draw_that_never_connected_says_nothing_was_sent(live: Live, mtls: Live) -> None:
    """Issue 35, finding 3: a plaintext spin against the mTLS port fails in the handshake,
    before any request left the client: it says so, without the retry advice meant for a call
    that may have been logged. Nothing listening is the same case."""
    spin = ["call", "spin", "--wheel", "double_zero", "--table", "T0", "--round", "R0"]
    for target in (mtls.target, f"127.0.0.1:{_free_port()}"):
        r = run("rng-service", *spin, "--target", target)
        assert r.code == 1, r.err
        assert "UNAVAILABLE" in r.err
        assert "nothing was sent: the connection to the service never became ready" in r.err
        assert "may have been drawn" not in r.err
        assert "retry with --request-id" not in r.err
    r = run("rng-service", "call", "stream", "--count", "4", "--wheel", "single_zero",
            "--target", mtls.target)  # fmt: skip
    assert r.code == 1, r.err
    assert "nothing was sent" in r.err
    assert "replays them" not in r.err


def test_5_a_draw_that_reached_a_service_keeps_the_retry_advice(live: Live) -> None:
    """The other side: a call answered UNAVAILABLE by a server it reached (here a stand-in on
    loopback that fails every call, as a service whose store just went down does) may have
    been logged, so the retry advice with the request id stays."""
    from concurrent import futures

    import grpc

    def fail(request: bytes, context: grpc.ServicerContext) -> bytes:
        context.abort(grpc.StatusCode.UNAVAILABLE, "the log store cannot commit")

    server = grpc.server(futures.ThreadPoolExecutor(2))
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(
            "rng.v1.OutcomeService", {"SpinRoulette": grpc.unary_unary_rpc_method_handler(fail)}
        ),)
    )  # fmt: skip
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        r = run("rng-service", "call", "spin", "--wheel", "double_zero", "--table", "T0",
                "--round", "R0", "--request-id", "r-reached",
                "--target", f"127.0.0.1:{port}")  # fmt: skip
    finally:
        server.stop(0)
    assert r.code == 1, r.err
    assert "UNAVAILABLE: the log store cannot commit" in r.err
    assert "retry with --request-id r-reached" in r.err
    assert "nothing was sent" not in r.err


# --- finding 6: progress on a terminal, never elsewhere -------------------------------------


def _with_terminal_stderr(*args: str) -> tuple[int, str]:
    """Runs an rng-audit command with stderr on a pseudo-terminal; returns (status, what the
    terminal showed)."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [str(BIN / "rng-audit"), *args], stdout=subprocess.DEVNULL, stderr=slave,
            stdin=subprocess.DEVNULL, env=_env(),
        )  # fmt: skip
        os.close(slave)
        shown = b""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the terminal's other end closed
                    break
                if not chunk:
                    break
                shown += chunk
            elif proc.poll() is not None:
                break
        return proc.wait(60), shown.decode("utf-8", "replace")
    finally:
        with contextlib.suppress(OSError):
            os.close(master)


def test_6_progress_on_a_terminal_only(live: Live) -> None:
    call_json(live, "dice", "--table", "T6", "--round", "P1")
    size = live.size()
    export = live.tmp / "progress.jsonl"
    code, shown = _with_terminal_stderr("export", "--target", live.target, "--out", str(export))
    assert code == 0, shown
    assert f"exporting: {size:,} / {size:,} entries (100%)" in shown
    code, shown = _with_terminal_stderr("verify", str(export), "--key", live.vkey)
    assert code == 4, shown  # no kept checkpoint: truncation NOT CHECKED
    assert "verifying: " in shown
    assert "(100%)" in shown
    # not a terminal: no progress at all
    r = run("rng-audit", "export", "--target", live.target, "--out", str(export))
    assert (r.code, r.err) == (0, "")
    r = run("rng-audit", "verify", str(export), "--key", live.vkey)
    assert (r.code, r.err) == (4, "")  # truncation NOT CHECKED, as above


# --- finding 7: no enum reprs; the CLI spells colour ---------------------------------------


def test_7_messages_name_values_and_output_spells_colour(live: Live) -> None:
    env = {"RNG_TARGET": live.target}
    r = run("rng-service", "call", "multiball", "--wheel", "double_zero_as_single_zero",
            "--table", "T7", "--round", "E1", env=env)  # fmt: skip
    assert r.code == 1
    assert (
        "INVALID_ARGUMENT: wheel: unsupported wheel double_zero_as_single_zero for a multi-ball "
        "draw (allowed: single_zero, double_zero)"
    ) in r.err
    assert "<" not in r.err
    for args in (_spin("--round", "E2"), ["multiball", "--wheel", "double_zero", "--table",
                                          "T7", "--round", "E3"]):  # fmt: skip
        r = run("rng-service", "call", *args, "--json", env=env)
        assert r.code == 0, r.err
        assert '"colour"' in r.out
        assert '"color"' not in r.out
