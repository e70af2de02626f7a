"""``rng-witness``: a C2SP tlog-witness for rng-service logs (and any C2SP checkpoint log).

Subcommands:
  keygen   write the witness's Ed25519 key pair; prints its cosignature verifier key (type 0x04)
  pubkey   print the cosignature verifier key of a witness key file
  serve    run the witness (``--config FILE``): JSON log lines on stderr, one ``listening``
           object on stdout once it serves (``port``, ``url``, and ``metrics_port``: the
           Prometheus endpoint's bound port, null when ``[metrics]`` is off)
  state    print the latest cosigned checkpoint of each log, and any evidence kept

Exit status: 0 success, 2 configuration or usage errors (``serve``: a ``startup_failed`` event
naming the setting), 1 anything else. The witness is docs/operations/witnesses.md, "Witnesses".
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    PlatformCollector,
    ProcessCollector,
    start_http_server,
)

from rng_service import __version__
from rng_service.cli.text import add_command, command_parser, print_keygen_result
from rng_service.clock import SystemClock
from rng_service.errors import RngServiceError
from rng_service.log.cosignature import CosignatureSigner
from rng_service.log.keys import generate_key_pair, load_private_key
from rng_service.security.key_files import KeyFilePermissionError, check_key_file
from rng_service.witness.config import WitnessConfig, WitnessConfigError, load_witness_config
from rng_service.witness.core import Witness
from rng_service.witness.metrics import StateCollector, WitnessMetrics
from rng_service.witness.server import WitnessServer
from rng_service.witness.state import WitnessState

__all__ = ["main"]

_log = logging.getLogger("rng_witness")


def _passphrase(env_name: str) -> bytes | None:
    if not env_name:
        return None
    value = os.environ.get(env_name)
    if value is None:
        raise WitnessConfigError(f"key_passphrase_env: environment variable {env_name} is not set")
    return value.encode("utf-8")


def _cmd_keygen(args: argparse.Namespace) -> int:
    info = generate_key_pair(
        Path(args.out), name=args.name, passphrase=_passphrase(args.passphrase_env or ""),
        cosigner=True,
    )  # fmt: skip
    print_keygen_result(info, give_to="the log's operator and its auditors")
    return 0


def _cmd_pubkey(args: argparse.Namespace) -> int:
    try:
        warning = check_key_file(Path(args.key_file), setting="--key-file", strict=False)
    except KeyFilePermissionError as e:
        raise WitnessConfigError(str(e)) from None
    if warning is not None:
        print(f"warning: {warning}", file=sys.stderr)
    key = load_private_key(Path(args.key_file), _passphrase(args.passphrase_env or ""))
    print(CosignatureSigner(args.name, key).verifier().verifier_key())
    return 0


def _cmd_state(args: argparse.Namespace) -> int:
    config = load_witness_config(Path(args.config))
    if not config.state.is_file():
        raise WitnessConfigError(f"state: {config.state} does not exist (nothing cosigned yet)")
    state = WitnessState(config.state)
    try:
        heads = [
            {"origin": h.origin, "size": h.size, "root": base64.b64encode(h.root).decode(),
             "updated_ns": h.updated_ns}
            for h in state.heads()
        ]  # fmt: skip
        evidence = [
            {"origin": e.origin, "received_ns": e.received_ns, "reason": e.reason,
             "request": e.request.decode("utf-8", errors="replace")}
            for e in state.evidence()
        ]  # fmt: skip
    finally:
        state.close()
    print(json.dumps({"logs": heads, "evidence": evidence}, indent=2))
    return 0


def _check_key_files(config: WitnessConfig) -> None:
    """The modes of the cosigning key and the TLS key (rng_service.security.key_files): a
    refusal is a WitnessConfigError naming the setting; a warning is logged."""
    strict = config.key_file_permissions == "strict"
    for setting, path in (("key_file", config.key_file), ("tls.key_file", config.tls_key_file)):
        if path is None:
            continue
        try:
            warning = check_key_file(path, setting=setting, strict=strict)
        except KeyFilePermissionError as e:
            raise WitnessConfigError(str(e)) from None
        if warning is not None:
            message = f"{warning}; key_file_permissions = strict refuses it"
            _log.warning({"event": "key_file_permissions", "setting": setting,
                          "file": str(path), "message": message})  # fmt: skip


def _cmd_serve(args: argparse.Namespace) -> int:
    from rng_service import jsonlog

    jsonlog.configure()
    try:
        config = load_witness_config(Path(args.config))
        _check_key_files(config)
        passphrase = _passphrase(config.key_passphrase_env)
        try:
            key = load_private_key(config.key_file, passphrase)
        except RngServiceError as e:
            raise WitnessConfigError(f"key_file: {e}") from None
        signer = CosignatureSigner(config.name, key)
        config.state.parent.mkdir(parents=True, exist_ok=True)
        try:
            state = WitnessState(config.state)
        except RngServiceError as e:
            raise WitnessConfigError(f"state: {e}") from None
    except WitnessConfigError as e:
        setting = str(e).split(":", 1)[0]
        _log.error({"event": "startup_failed", "error": str(e), "setting": setting})
        return 2
    witness = Witness(signer=signer, logs=config.trusted(), state=state, clock=SystemClock())
    registry = CollectorRegistry()
    try:
        metrics = WitnessMetrics(
            registry, name=signer.name, version=__version__,
            origins=[log.origin for log in config.logs], heads=state.heads(),
        )  # fmt: skip
    except RngServiceError as e:
        _log.error({"event": "startup_failed", "error": str(e), "setting": "state"})
        state.close()
        return 2
    try:
        server = WitnessServer(
            witness, host=config.host, port=config.port, prefix=config.prefix,
            max_connections=config.max_connections, tls_cert_file=config.tls_cert_file,
            tls_key_file=config.tls_key_file, sink=metrics,
        )  # fmt: skip
    except (OSError, ValueError) as e:
        _log.error(
            {
                "event": "startup_failed",
                "setting": "port" if isinstance(e, OSError) else "tls",
                "error": f"cannot serve on {config.host}:{config.port}: {e}",
            }
        )
        state.close()
        return 2
    port = server.server_address[1]
    metrics_server: Any = None
    metrics_port: int | None = None
    if config.metrics.enabled:
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        registry.register(StateCollector(state.probe))
        mhost = config.metrics.host.strip("[]")
        try:
            metrics_server, _ = start_http_server(
                config.metrics.port, addr=mhost, registry=registry
            )
        except OSError as e:
            _log.error({"event": "startup_failed", "setting": "metrics.port",
                        "error": f"cannot serve metrics on {config.metrics.host}:"
                                 f"{config.metrics.port}: {e}"})  # fmt: skip
            server.server_close()
            state.close()
            return 2
        metrics_port = int(metrics_server.server_port)
    stop = threading.Event()

    def _stop(*_: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    thread = threading.Thread(target=server.serve_forever, name="witness-http", daemon=True)
    thread.start()
    _log.info({
        "event": "started", "name": signer.name,
        "verifier_key": signer.verifier().verifier_key(),
        "address": f"{config.host}:{port}", "tls": server.tls,
        "endpoint": server.add_checkpoint_path, "state": str(config.state),
        "metrics": None if metrics_port is None else f"{config.metrics.host}:{metrics_port}",
        "logs": {log.origin: [k.verifier_key() for k in log.keys] for log in config.logs},
    })  # fmt: skip
    scheme = "https" if server.tls else "http"
    print(json.dumps({"event": "listening", "port": port,
                      "url": f"{scheme}://{config.host}:{port}{config.prefix}",
                      "metrics_port": metrics_port}),
          flush=True)  # fmt: skip
    stop.wait()
    server.shutdown()
    server.server_close()
    if metrics_server is not None:
        metrics_server.shutdown()
        metrics_server.server_close()
    state.close()
    _log.info({"event": "stopped"})
    return 0


EXIT_STATUSES = """\
Exit status: 0 done; 1 anything else that failed (a key that does not decrypt, a state file
that cannot be read); 2 nothing was done: a bad option or configuration (serve: one
startup_failed event naming the setting). Each command's options: rng-witness COMMAND
--help; the witness: docs/operations/witnesses.md, "Witnesses"; the conventions: docs/cli.md."""


def build_parser() -> argparse.ArgumentParser:
    parser, sub = command_parser(
        "rng-witness",
        "rng-witness: a C2SP tlog-witness that cosigns log checkpoints.",
        EXIT_STATUSES,
    )
    env_help = (
        "the environment variable holding the key's passphrase (default: none, the key is "
        "not encrypted)"
    )
    p = add_command(sub, "keygen", "write the witness's Ed25519 key pair; print its verifier key")
    p.add_argument(
        "--out", required=True, metavar="FILE",
        help="the private key file to write (PEM, mode 0600; FILE.pub and FILE.vkey beside it)",
    )  # fmt: skip
    p.add_argument("--name", required=True, help="the witness's key name, e.g. witness.example/w1")
    p.add_argument("--passphrase-env", metavar="VAR", help=env_help)
    p.set_defaults(fn=_cmd_keygen)
    p = add_command(sub, "pubkey", "print the cosignature verifier key of a witness key")
    p.add_argument(
        "--key-file", required=True, metavar="FILE",
        help="the witness's private key file (PEM), its key_file",
    )  # fmt: skip
    p.add_argument("--name", required=True, help="the witness's key name (its name setting)")
    p.add_argument("--passphrase-env", metavar="VAR", help=env_help)
    p.set_defaults(fn=_cmd_pubkey)
    config_help = "the witness's TOML configuration file (docs/operations/witnesses.md)"
    p = add_command(sub, "serve", "run the witness")
    p.add_argument("--config", required=True, metavar="FILE", help=config_help)
    p.set_defaults(fn=_cmd_serve)
    p = add_command(sub, "state", "print the latest cosigned checkpoint of each log, and evidence")
    p.add_argument("--config", required=True, metavar="FILE", help=config_help)
    p.set_defaults(fn=_cmd_state)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except WitnessConfigError as e:
        print(f"configuration error: {e}", file=sys.stderr)
        return 2
    except RngServiceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
