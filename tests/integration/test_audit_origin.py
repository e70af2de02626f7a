"""``rng-audit``'s live commands name their log (issue "Many logs", item 3 "Tools per log").

Two real in-process services, logs A and B (plaintext development mode: each refuses a call
naming another log, docs/security.md "Logs"), and a gRPC relay of our own between the tool and
a service: it records every call's ``rng-origin`` metadata and forwards the call, either to the
log it is meant for, or, as a misrouting front end would, to the other log with the metadata
dropped (the other log then answers for itself). Checked:

- every call of ``export``, ``verify-receipt --target``, ``consistency``, ``table-history
  --target`` and ``dispute --target`` names the log: ``--origin``, else the keys' name; ``export``
  without ``--origin`` names none (a single log's auditors see no change);
- an answer of another log is exit status 1 with both origins named, nothing written;
- a refusal of the log (PERMISSION_DENIED) is one line naming the log, exit status 2 (nothing
  was checked, as for an unreachable service: docs/cli.md convention 9), no traceback.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import pytest

from rng_service.cli.audit import main
from rng_service.log.receipt import Receipt, receipt_to_json
from rng_service.rpc.origin import ORIGIN_METADATA
from tests.integration.conftest import Running, make_config, start

A, B = "casino-a.test/rng-log", "casino-b.test/rng-log"


@dataclass
class Relay:
    """A gRPC relay on a loopback port: records (method, rng-origin or None) of every call and
    forwards it to ``to`` (a port), keeping the metadata, or with ``drop_origin`` without it."""

    to: int | dict[str, int]
    """The port to forward to, or one port per origin (one address serving both logs, routed
    by ``rng-origin`` as a front end serving several logs on one port does)."""
    drop_origin: bool = False
    seen: list[tuple[str, str | None]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handler(self, method: str) -> Callable[[bytes, grpc.ServicerContext], bytes]:
        def forward(request: bytes, context: grpc.ServicerContext) -> bytes:
            metadata = [(k, v) for k, v in context.invocation_metadata()
                        if not k.startswith(("grpc-", ":"))]  # fmt: skip
            origin = next((str(v) for k, v in metadata if k == ORIGIN_METADATA), None)
            with self.lock:
                self.seen.append((method.rsplit("/", 1)[-1], origin))
            if self.drop_origin:
                metadata = [(k, v) for k, v in metadata if k != ORIGIN_METADATA]
            port = self.to if isinstance(self.to, int) else self.to.get(origin or "")
            if port is None:
                context.abort(grpc.StatusCode.PERMISSION_DENIED, "no such log here")
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                call = channel.unary_unary(method, None, None)
                try:
                    answer: bytes = call(request, metadata=tuple(metadata), timeout=30)
                except grpc.RpcError as e:
                    context.abort(e.code(), e.details() or "")
            return answer

        return forward


if TYPE_CHECKING:  # generic in the type stubs only
    _Handler = grpc.GenericRpcHandler[bytes, bytes]
else:
    _Handler = grpc.GenericRpcHandler


class _Generic(_Handler):
    def __init__(self, relay: Relay) -> None:
        self._relay = relay

    def service(self, details: grpc.HandlerCallDetails) -> Any:
        method = details.method
        return grpc.unary_unary_rpc_method_handler(self._relay.handler(method))


@dataclass
class Logs:
    tmp: Path
    a: Running
    b: Running
    vkey: dict[str, str]
    receipt: dict[str, Path]  # a receipt file of each log

    def port(self, origin: str) -> int:
        return (self.a if origin == A else self.b).port


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Logs]:
    tmp = tmp_path_factory.mktemp("origins")
    running: dict[str, Running] = {}
    vkey: dict[str, str] = {}
    receipt: dict[str, Path] = {}
    try:
        for origin in (A, B):
            d = tmp / origin.split(".")[0]
            d.mkdir()
            config = make_config(d, RNG_SERVICE__LOG__ORIGIN=origin)
            r = running[origin] = start(config)
            vkey[origin] = str(config.log.key_file) + ".vkey"
            reply = None
            for i in range(3):
                reply = r.spin(f"{origin[:8]}-{i}", table_id="T1", round_id=f"G{i}")
            assert reply is not None
            got = reply.receipt
            path = receipt[origin] = d / "receipt.json"
            path.write_text(receipt_to_json(Receipt(
                index=got.index, entry=got.entry, leaf_hash=got.leaf_hash,
                inclusion_proof=tuple(got.inclusion_proof), tree_size=got.tree_size,
                checkpoint=got.checkpoint, replayed=got.replayed,
            )) + "\n")  # fmt: skip
        yield Logs(tmp, running[A], running[B], vkey, receipt)
    finally:
        for r in running.values():
            r.stop()


@pytest.fixture
def relay() -> Iterator[Callable[..., tuple[Relay, str]]]:
    servers: list[grpc.Server] = []

    def make(to: int | dict[str, int], *, drop_origin: bool = False) -> tuple[Relay, str]:
        r = Relay(to, drop_origin)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        server.add_generic_rpc_handlers((_Generic(r),))
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        return r, f"127.0.0.1:{port}"

    yield make
    for server in servers:
        server.stop(None)


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _live_commands(logs: Logs, origin: str, target: str, *, by_key: bool) -> dict[str, list[str]]:
    """Each live command reading log ``origin`` at ``target``: with --origin, or (``by_key``)
    naming the log by its key's name only."""
    key = ["--key", logs.vkey[origin]]
    named = [] if by_key else ["--origin", origin]
    out = logs.tmp / "out"
    out.mkdir(exist_ok=True)
    return {
        "verify-receipt": ["verify-receipt", str(logs.receipt[origin]), "--target", target,
                           *key, *named],
        "consistency": ["consistency", "--target", target, "--old", str(logs.receipt[origin]),
                        "--out", str(out / "c.json"), *key, *named],
        "table-history": ["table-history", "--target", target, "--table", "T1", *key, *named],
        "dispute": ["dispute", "--target", target, "--client", "default", "--table", "T1",
                    "--round", "G1", *key, *named],
    }  # fmt: skip


@pytest.mark.parametrize("by_key", [False, True], ids=["--origin", "keys-name"])
def test_every_call_of_a_live_command_names_the_log(
    logs: Logs, relay: Callable[..., tuple[Relay, str]], capsys: pytest.CaptureFixture[str],
    by_key: bool,
) -> None:  # fmt: skip
    for origin in (A, B):
        for name, args in _live_commands(logs, origin, "", by_key=by_key).items():
            r, target = relay(logs.port(origin))
            args = [target if a == "" else a for a in args]
            code, out, err = run(args, capsys)
            assert code == 0, (name, out, err)
            assert r.seen, name
            assert {o for _, o in r.seen} == {origin}, (name, r.seen)


def test_export_names_the_log_with_origin_and_none_without(
    logs: Logs, relay: Callable[..., tuple[Relay, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    for origin in (A, B):
        r, target = relay(logs.port(origin))
        out = logs.tmp / f"{origin[:8]}.export"
        code, text, err = run(["export", "--target", target, "--out", str(out), "--origin",
                               origin], capsys)  # fmt: skip
        assert code == 0, err
        assert f"of {origin} to {out}" in text
        assert r.seen, origin
        assert {o for _, o in r.seen} == {origin}, r.seen
        code, text, err = run(["verify", str(out), "--key", logs.vkey[origin]], capsys)
        assert code == 4, text + err  # truncation NOT CHECKED: no kept checkpoint
        assert text.startswith(f"OK: 3 entries of {origin}"), text
        # Without --origin, as a single log's auditor runs it: no log named, the one served.
        r, target = relay(logs.port(origin))
        code, text, err = run(["export", "--target", target, "--out", str(out)], capsys)
        assert code == 0, err
        assert r.seen, origin
        assert {o for _, o in r.seen} == {None}, r.seen


def test_an_answer_of_another_log_fails_naming_both(
    logs: Logs, relay: Callable[..., tuple[Relay, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    # Calls for log A reach log B without their rng-origin: B answers for itself.
    _, target = relay(logs.b.port, drop_origin=True)
    (logs.tmp / "out" / "c.json").unlink(missing_ok=True)
    for name, args in _live_commands(logs, A, target, by_key=False).items():
        code, out, err = run(args, capsys)
        assert code == 1, (name, out, err)
        assert f"of log {B!r}, not of {A!r}" in err, (name, err)
        assert "Traceback" not in err
    assert not (logs.tmp / "out" / "c.json").exists()  # consistency wrote nothing
    misrouted = logs.tmp / "misrouted.export"
    code, text, err = run(["export", "--target", target, "--out", str(misrouted), "--origin",
                           A], capsys)  # fmt: skip
    assert code == 1, text + err
    assert f"of log {B!r}, not of the log asked for {A!r} (--origin)" in err, err
    assert not misrouted.exists()


@pytest.fixture(autouse=True)
def quiet_services() -> Iterator[None]:
    """The in-process services' own log lines (a ``denied`` event for each refusal) stay off
    this process's stderr, where only the tool's output is checked."""
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


def test_a_log_refused_is_one_line_naming_it(
    logs: Logs, capsys: pytest.CaptureFixture[str]
) -> None:
    # Log A's service is asked for log B: not served there (the same refusal as a log the
    # client is not bound to, docs/security.md "Logs").
    target = f"127.0.0.1:{logs.a.port}"
    out = logs.tmp / "refused.export"
    cases = {
        **_live_commands(logs, B, target, by_key=False),
        "export": ["export", "--target", target, "--out", str(out), "--origin", B],
    }
    for name, args in cases.items():
        code, text, err = run(args, capsys)
        assert code == 2, (name, text, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1, (name, err)
        assert lines[0].startswith(f"error: {target} refused the call naming log {B!r} ("), err
        assert "PERMISSION_DENIED: the requested log is not available to client" in err
        assert f"either no log {B!r} is served there, or this client's certificate" in err
        assert "pass --origin" not in err  # the log was named by --origin
    assert not out.exists()
    # Named after the keys' name, the refusal says how to name it otherwise.
    code, text, err = run(_live_commands(logs, B, target, by_key=True)["table-history"], capsys)
    assert code == 2, err
    assert (
        "after the name of the key: if the log's key is not named by its origin, pass "
        "--origin" in err
    ), err
    assert len(err.strip().splitlines()) == 1


def test_export_from_a_store_checks_the_origin_asked_for(
    logs: Logs, capsys: pytest.CaptureFixture[str]
) -> None:
    db = logs.tmp / A.split(".")[0] / "log.sqlite3"
    out = logs.tmp / "db.export"
    code, text, err = run(["export", "--db", str(db), "--out", str(out), "--origin", B], capsys)
    assert code == 1, text + err
    assert f"of log {A!r}, not of the log asked for {B!r} (--origin)" in err, err
    assert not out.exists()
    code, text, err = run(["export", "--db", str(db), "--out", str(out), "--origin", A], capsys)
    assert code == 0, err
    assert f"of {A} to {out}" in text


def test_profiles_asks_the_service_of_the_exports_log(
    tmp_path: Path, relay: Callable[..., tuple[Relay, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    from rng_service._proto.rng.v1 import outcomes_pb2
    from tests.integration.test_profile_directory import approved, ctx

    approved(tmp_path / "approved")
    running = start(make_config(tmp_path, RNG_SERVICE__LOG__ORIGIN=A,
                                RNG_SERVICE__PROFILES__DIRECTORY="approved"))  # fmt: skip
    try:
        running.outcomes.SelectFireNumbers(
            outcomes_pb2.SelectFireNumbersRequest(context=ctx("f1"), profile="casino_mfb"),
            timeout=10,
        )
        export = tmp_path / "export.jsonl"
        code, _, err = run(["export", "--target", f"127.0.0.1:{running.port}", "--out",
                            str(export)], capsys)  # fmt: skip
        assert code == 0, err
        r, target = relay(running.port)
        code, text, err = run(["profiles", str(export), "--target", target], capsys)
        assert code == 0, text + err
        assert "casino_mfb v1, not an example (example = false)" in text
        assert [m for m, _ in r.seen] == ["GetProfile"], r.seen
        assert {o for _, o in r.seen} == {A}, r.seen
    finally:
        running.stop()


def test_both_logs_through_one_address(
    logs: Logs, relay: Callable[..., tuple[Relay, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """The address and the log are separate inputs: one address routing by ``rng-origin`` to
    either log serves every live command of both, each reading its own log."""
    r, target = relay({A: logs.a.port, B: logs.b.port})
    for origin in (A, B):
        for by_key in (False, True):
            for name, args in _live_commands(logs, origin, target, by_key=by_key).items():
                code, text, err = run(args, capsys)
                assert code == 0, (name, text, err)
        export = logs.tmp / "one-address.export"
        code, text, err = run(["export", "--target", target, "--out", str(export), "--origin",
                               origin], capsys)  # fmt: skip
        assert code == 0, err
        code, text, err = run(["verify", str(export), "--key", logs.vkey[origin]], capsys)
        assert text.startswith(f"OK: 3 entries of {origin}"), text + err
    assert {o for _, o in r.seen} == {A, B}


def test_rng_service_verify_receipt_against_the_live_log_names_it(
    logs: Logs, relay: Callable[..., tuple[Relay, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    from rng_service.cli.service import main as service_main

    for origin in (A, B):
        r, target = relay(logs.port(origin))
        code = service_main(["verify-receipt", str(logs.receipt[origin]), "--key",
                             logs.vkey[origin], "--target", target])  # fmt: skip
        captured = capsys.readouterr()
        assert code == 0, captured.out + captured.err
        assert captured.out.startswith("OK: entry 2 "), captured.out
        assert r.seen, origin
        assert {o for _, o in r.seen} == {origin}, r.seen
