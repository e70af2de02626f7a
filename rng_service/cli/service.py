"""rng-service: run the service, manage keys, call it, verify receipts.

Subcommands:
  serve            run with a config file (production)
  dev-run          like serve, but first creates a development signing key if there is none
  keygen           write an Ed25519 key pair for signing checkpoints
  pubkey           print the verifier key of a private key file
  dev-ca           write a development CA, server and client certificates for mTLS
  call             every RPC a person calls by hand: outcomes, log reads, health
                   (rng_service.cli.call; mTLS with --ca/--cert/--tls-key)
  check-store      the full check of the log store (read only; docs/operations/running.md)
  verify-receipt   check a receipt offline with the log's verifier key
  migrate-store    bring the configured log store to this release's schema (after a backup)
The conventions every command follows (help, options, output, exit statuses) are in
docs/cli.md and :mod:`rng_service.cli.support`. Errors are messages with a non-zero exit
status, never tracebacks. ``serve`` writes only JSON lines: its log on stderr (a
configuration error is a ``startup_failed`` event, exit status 2), one ``listening`` object
on stdout once it serves.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

from rng_service.cli import call as cli_call
from rng_service.cli.support import (
    EXIT_NOT_CHECKED,
    EXIT_USAGE,
    UsageError,
    format_address,
    print_keygen_result,
    stdout_reader_went_away,
    verifier_keys,
)
from rng_service.cli.text import add_command, command_parser, count
from rng_service.config import Config, ConfigError, load_config
from rng_service.errors import RngServiceError

__all__ = ["main"]

EXIT_STATUSES = """\
Exit status: 0 done (and verified); 1 refused or failed by the service, or something did not
verify (check-store: the store is not the log that was signed); 2 nothing was done: a bad
option, an unreadable file, a bad key or configuration (serve, dev-run: a startup_failed event
naming the setting); 3 (call) the outcome is logged but a step after the draw failed; 4
(verify-receipt offline; check-store without a kept checkpoint of the store's size) what is
printed as OK is proven, and what is named NOT CHECKED is not; 141 the reader of standard
output went away. Each
command's options: rng-service COMMAND --help; the conventions: docs/cli.md; the settings:
docs/operations/configuration.md."""

DEV_BANNER = """\
************************************************************************
*  DEVELOPMENT KEY: {path}
*  rng-service created a new checkpoint-signing key because none existed.
*  It is for local development only: receipts signed with it prove
*  nothing to anyone else. Production keys come from `rng-service keygen`
*  on a secure host, with a passphrase (see docs/operations/keys.md).
************************************************************************"""


def _passphrase(env_name: str | None) -> bytes | None:
    if not env_name:
        return None
    value = os.environ.get(env_name)
    if value is None:
        raise SystemExit(f"error: environment variable {env_name} (the passphrase) is not set")
    return value.encode("utf-8")


def _serving_config(path: Path | None) -> Config | None:
    """JSON logging, then the validated config; None (after a ``startup_failed`` event) if it
    is invalid. Every line a serving process writes is JSON (``rng_service.jsonlog``)."""
    from rng_service import jsonlog

    jsonlog.configure()
    try:
        return load_config(path)
    except ConfigError as e:
        logging.getLogger("rng_service").error(
            {"event": "startup_failed", "error": str(e), "setting": str(e).split(":", 1)[0]}
        )
        return None


def _run(config: Config, on_ready: Callable[[int], None] | None = None, front_ends: int = 1) -> int:
    from rng_service import jsonlog

    jsonlog.route_process_output()  # gRPC core's own log lines become JSON events too
    from rng_service.process.app import run

    return run(config, on_ready, front_ends)


def _front_ends(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 64:
        raise argparse.ArgumentTypeError(f"{text!r}: allowed: an integer from 1 to 64")
    return n


def _several_logs(config: Config) -> bool:
    return len(config.logs) > 1 and not config.serving


def _supervise(config: Config, front_ends: int) -> int:
    """Several ``[[logs]]``: a process per log (``rng_service.process.supervisor``)."""
    from rng_service.process.supervisor import run_supervisor

    return run_supervisor(config, front_ends)


def _cmd_serve(args: argparse.Namespace) -> int:
    config = _serving_config(args.config)
    if config is None:
        return 2
    if _several_logs(config):
        return _supervise(config, args.front_ends)
    return _run(config, front_ends=args.front_ends)


def _cmd_dev_run(args: argparse.Namespace) -> int:
    from rng_service.log.keys import generate_key_pair

    config = _serving_config(args.config)
    if config is None:
        return 2
    logs = [config.for_log(d.origin) for d in config.logs] if _several_logs(config) else [config]
    for log in logs:
        key_file = log.log.key_file
        if not key_file.exists():
            key_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            generate_key_pair(key_file, name=log.log.key_name, passphrase=None)
            print(DEV_BANNER.format(path=key_file), file=sys.stderr, flush=True)
        else:
            print(f"using signing key {key_file}", file=sys.stderr)
    if len(logs) > 1:
        return _supervise(config, 1)
    key_file = config.log.key_file

    def try_it(port: int) -> None:  # once it serves: the port is the bound one (0 resolved)
        target = format_address(config.server.host, port)
        print(
            "try it:\n"
            f"  .venv/bin/rng-service call spin --target {target} --wheel double_zero "
            "--table T0 --round R0\n"
            f"  .venv/bin/rng-service pubkey --key-file {key_file} --name {config.log.key_name}",
            file=sys.stderr,
            flush=True,
        )

    return _run(config, try_it)


STORE_TAIL_NOT_CHECKED = (
    "NOT CHECKED: entries [{start}, {size}) against a signature. No checkpoint, stored or "
    "kept (--checkpoint), covers them yet: they match their Merkle nodes, but an edit of the "
    "database can change both. They are covered once a published checkpoint (or a kept one) "
    "of their size exists."
)
STORE_TRUNCATION_NOT_CHECKED = (
    "NOT CHECKED: truncation. No checkpoint kept outside the database (--checkpoint) covers "
    "the store's {size}, so nothing here shows whether the log was longer: a store cut back "
    "to an older checkpoint (its newest entries, nodes, checkpoints and record deleted, or an "
    "older backup restored) passes every check above. Pass the newest checkpoint that "
    "auditors, a receipt or a witness kept (docs/operations/running.md)."
)


def _kept_notes(paths: list[Path]) -> list[tuple[str, bytes]]:
    kept = []
    for path in paths:
        try:
            kept.append((f"checkpoint file {path}", path.read_bytes()))
        except OSError as e:
            raise UsageError(f"--checkpoint: cannot read {path}: {e.strerror or e}") from e
    return kept


def _cmd_check_store(args: argparse.Namespace) -> int:
    from rng_service.process.app import StartupError, check_store_offline
    from rng_service.writer.storecheck import StoreCheckFailed

    config = load_config(args.config).select(args.origin)
    kept = _kept_notes(args.checkpoint)
    where = str(config.storage.path) if config.storage.driver == "sqlite" else "the PostgreSQL log"
    try:
        report, checkpoints = check_store_offline(config, kept)
    except StoreCheckFailed as e:
        print(f"FAILED: {where}: {e}", file=sys.stderr)
        return 1
    except StartupError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    size = report.tree_size
    entries = count(size, "entry", "entries")
    print(
        f"OK: {where} holds {entries} of "
        f"{config.log.origin}: every index present, every leaf hash, lookup column and "
        f"{count(report.nodes, 'Merkle node')} match the entries' bytes, "
        f"{count(report.checkpoints, 'stored checkpoint')} verified with the configured keys "
        f"and consistent with the entries ({report.seconds:.1f} s)"
    )
    kept_size = max((c.size for c in checkpoints), default=None)
    if kept_size is not None:
        print(
            f"OK: {count(len(checkpoints), 'kept checkpoint')} (newest: tree size {kept_size}) "
            "verified with the configured keys; the store holds the log each was signed for"
        )
    signed = max(kept_size or 0, report.newest.size if report.newest is not None else 0)
    not_checked = []
    if signed < size:
        not_checked.append(STORE_TAIL_NOT_CHECKED.format(start=signed, size=size))
    if kept_size is None or kept_size < size:
        not_checked.append(STORE_TRUNCATION_NOT_CHECKED.format(size=entries))
    for line in not_checked:
        print(line)
    return EXIT_NOT_CHECKED if not_checked else 0


def _cmd_keygen(args: argparse.Namespace) -> int:
    from rng_service.log.keys import generate_key_pair

    out = Path(args.out)
    if out.exists() and not args.force:
        raise SystemExit(f"error: {out} exists (use --force to replace it)")
    info = generate_key_pair(
        out, name=args.name, passphrase=_passphrase(args.passphrase_env), overwrite=args.force
    )
    print_keygen_result(info, give_to="the log's auditors and witnesses")
    return 0


def _cmd_pubkey(args: argparse.Namespace) -> int:
    from rng_service.log.keys import load_private_key
    from rng_service.log.note import Ed25519NoteSigner

    _check_key_mode(Path(args.key_file))
    key = load_private_key(Path(args.key_file), _passphrase(args.passphrase_env))
    print(Ed25519NoteSigner(args.name, key).verifier_key())
    return 0


def _check_key_mode(path: Path) -> None:
    """The service's rule for a private key file it reads (rng_service.security.key_files):
    world-writable refused (exit 2), group/world-readable a warning on standard error."""
    from rng_service.security.key_files import KeyFilePermissionError, check_key_file

    try:
        warning = check_key_file(path, setting="--key-file", strict=False)
    except KeyFilePermissionError as e:
        raise UsageError(str(e)) from None
    if warning is not None:
        print(f"warning: {warning}", file=sys.stderr)


DEV_CA_BANNER = """\
************************************************************************
*  DEVELOPMENT CA in {out}
*  For local use only: its private key (ca.key) sits beside the
*  certificates it signed. Production certificates come from the
*  operator's CA (docs/security.md).
************************************************************************"""


def _client_spec(spec: str) -> tuple[str, str | None, tuple[str, ...]]:
    """``NAME[:ROLE[:TABLES]]`` of ``dev-ca --client`` as (identity, role or None, tables)."""
    from rng_service.security.policy import Role

    roles = [r.value for r in Role]
    name, _, rest = spec.partition(":")
    role, _, table_list = rest.partition(":")
    where = f"--client {spec!r}"
    if not rest:
        return name, None, ()
    if role not in roles:
        raise SystemExit(
            f"error: {where}: role {role!r} is not allowed (allowed: {', '.join(roles)}; "
            "the form is NAME[:ROLE[:TABLES]])"
        )
    tables = tuple(dict.fromkeys(t.strip() for t in table_list.split(","))) if table_list else ()
    if role == Role.GAME_SERVER.value:
        if not tables or "" in tables:
            raise SystemExit(
                f"error: {where}: a game server needs its tables (allowed: comma-separated "
                f"table ids, for example {name}:game_server:T1,T2, or * for any table)"
            )
    elif table_list:
        raise SystemExit(
            f"error: {where}: tables are for role game_server only (allowed: {name}:{role})"
        )
    return name, role, tables


def _one_game_server_a_table(
    given: list[str], specs: list[tuple[str, str | None, tuple[str, ...]]]
) -> None:
    """Refuses two game servers granted one table (``security.policy.shared_table``): the
    service would refuse the entries printed for them."""
    from rng_service.security.policy import ANY, Role, shared_table

    servers = [i for i, (_, role, _) in enumerate(specs) if role == Role.GAME_SERVER.value]
    shared = shared_table([(specs[i][0], specs[i][2]) for i in servers])
    if shared is None:
        return
    earlier, later, table = given[servers[shared[0]]], given[servers[shared[1]]], shared[2]
    what = (
        '"*" (every table) overlaps the tables of'
        if table == ANY
        else f"table {table!r} is also granted to"
    )
    raise SystemExit(
        f"error: --client {later!r}: {what} --client {earlier!r}; one physical table has one "
        "game server (allowed: tables no other game server is given)"
    )


def _toml_string(text: str) -> str:
    # A TOML basic string: JSON's escapes are TOML's (ensure_ascii=False: no surrogate pairs).
    return json.dumps(text, ensure_ascii=False)


def _client_logs(
    given: list[str], specs: list[tuple[str, str | None, tuple[str, ...]]]
) -> dict[str, tuple[str, ...]]:
    """``dev-ca --log NAME=ORIGIN[,ORIGIN...]``: the logs each client is bound to (a game
    server exactly one; docs/security.md, "Logs")."""
    from rng_service.security.policy import Role

    roles = {name: role for name, role, _ in specs}
    bound: dict[str, tuple[str, ...]] = {}
    for item in given:
        name, sep, origins_text = item.partition("=")
        origins = tuple(dict.fromkeys(o.strip() for o in origins_text.split(",") if o.strip()))
        where = f"--log {item!r}"
        if not sep or not origins:
            raise SystemExit(f"error: {where}: the form is NAME=ORIGIN[,ORIGIN...]")
        if roles.get(name) is None:
            raise SystemExit(
                f"error: {where}: {name!r} is not a --client with a role (allowed: the NAME of "
                "a --client NAME:ROLE[:TABLES])"
            )
        if name in bound:
            raise SystemExit(f"error: {where}: the logs of {name!r} are already given")
        if roles[name] == Role.GAME_SERVER.value and len(origins) != 1:
            raise SystemExit(
                f"error: {where}: a game server is bound to exactly one log (allowed: "
                f"{name}=ORIGIN)"
            )
        bound[name] = origins
    return bound


def _client_entry(
    identity: str, role: str | None, tables: tuple[str, ...], logs: tuple[str, ...] = ()
) -> str:
    """The least-privilege ``[[clients]]`` entry of one ``dev-ca --client`` (or, without a
    role, a comment saying why there is none)."""
    if role is None:
        return (
            f"# {identity}: no role given, so no entry: this certificate may call only the gRPC\n"
            "# health and reflection services (everything else answers UNAUTHENTICATED), which\n"
            f"# is all a health check needs. For more: --client {identity}:ROLE[:TABLES]."
        )
    lines = [
        "[[clients]]",
        f"identity = {_toml_string(identity)}",
        f"roles = [{_toml_string(role)}]",
    ]
    if tables:
        lines.append(f"tables = [{', '.join(_toml_string(t) for t in tables)}]")
    if logs:
        lines.append(f"logs = [{', '.join(_toml_string(o) for o in logs)}]")
    return "\n".join(lines)


def _cmd_dev_ca(args: argparse.Namespace) -> int:
    import datetime as dt

    from rng_service.clock import SystemClock
    from rng_service.security.certs import write_dev_ca

    specs = [_client_spec(spec) for spec in args.client or []]
    bound = _client_logs(args.log or [], specs)
    given = args.client or []
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, (name, _, _) in enumerate(specs):  # table ids are per log: checked per log
        groups.setdefault(bound.get(name, ()), []).append(i)
    for members in groups.values():
        _one_game_server_a_table([given[i] for i in members], [specs[i] for i in members])
    now = dt.datetime.fromtimestamp(SystemClock().now_ns() / 1e9, tz=dt.UTC)
    out = Path(args.out)
    try:
        files = write_dev_ca(
            out, [name for name, _, _ in specs], now=now, days=args.days, overwrite=args.force
        )
    except (ValueError, FileExistsError) as e:
        raise SystemExit(f"error: {e} (use --force to replace existing files)") from None
    except OSError as e:
        raise SystemExit(f"error: cannot write to {out}: {e.strerror}") from None
    print(DEV_CA_BANNER.format(out=out), file=sys.stderr)
    print("# add to the service's config file:")
    print(
        f"[tls]\ncert_file = {_toml_string(str(files.server_cert))}\n"
        f"key_file = {_toml_string(str(files.server_key))}\n"
        f"client_ca_file = {_toml_string(str(files.ca_cert))}"
    )
    if specs:
        print(
            "\n# One entry per client, with the least it needs: its role and, for a game server,\n"
            "# its tables (narrow it further with kinds and profiles: docs/security.md, Roles)."
        )
    for identity, role, tables in specs:
        print()
        print(_client_entry(identity, role, tables, bound.get(identity, ())))
    for identity, (cert, key) in files.clients.items():
        print(f"# {identity}: --ca {files.ca_cert} --cert {cert} --tls-key {key}", file=sys.stderr)
    return 0


def _cmd_migrate_store(args: argparse.Namespace) -> int:
    from rng_service.process.app import StartupError, migrate_store

    try:
        report = migrate_store(load_config(args.config).select(args.origin))
    except StartupError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if report.migrated_from is None:
        print(f"{report.where}: already at schema version {report.schema_version}; nothing to do")
    else:
        print(
            f"{report.where}: migrated from schema version {report.migrated_from} to "
            f"{report.schema_version} (its {report.entries} entries are unchanged); the table "
            f"map holds {report.tables} chain{'' if report.tables == 1 else 's'}, checked "
            "against the signed entries at the next start"
        )
    return 0


def _cmd_verify_receipt(args: argparse.Namespace) -> int:
    from rng_service.audit import pinned_origin
    from rng_service.errors import InvalidArgument
    from rng_service.log.receipt import receipt_from_json, verify_receipt

    if args.witness or args.target or args.max_witness_age is not None:
        # Witnesses and the live log: the auditor's verifier (rng-audit verify-receipt) does it.
        from rng_service.cli.audit import main as audit_main

        argv = ["verify-receipt", args.receipt, "--key", *args.key]
        if args.origin:
            argv += ["--origin", args.origin]
        if args.target:
            argv += ["--target", args.target]
        if args.witness:
            argv += ["--witness", *args.witness]
        if args.min_witnesses is not None:
            argv += ["--min-witnesses", str(args.min_witnesses)]
        if args.max_witness_age is not None:
            argv += [f"--max-witness-age={args.max_witness_age}"]
        return audit_main(argv)

    try:
        text = Path(args.receipt).read_text()
    except OSError as e:
        print(f"error: cannot read {args.receipt}: {e.strerror}", file=sys.stderr)
        return 2
    verifiers = verifier_keys(args.key, "--key")
    try:
        origin = pinned_origin(verifiers, args.origin)
    except InvalidArgument as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    receipt = receipt_from_json(text)
    checked = verify_receipt(receipt, verifiers)
    origin.check(checked.checkpoint.origin, f"receipt {args.receipt}'s checkpoint")
    print(
        f"OK: entry {checked.entry.index} ({checked.entry.kind}, table {checked.entry.table_id}, "
        f"round {checked.entry.round_id}) is in the log of size {checked.checkpoint.size} "
        f"({checked.checkpoint.origin}), signed by {', '.join(checked.key_names)}"
    )
    print(json.dumps(dict(checked.entry.outcome), indent=2))
    # Offline only the receipt's own checkpoint is checked (docs/cli.md, convention 9).
    print(
        "NOT CHECKED: that the log still holds this entry. Offline, only the receipt's own "
        "signed checkpoint is checked; whether the log was cut back or forked since needs "
        "--target (the live log), or rng-audit verify-receipt --against (an export) with "
        "--checkpoint (docs/auditing.md)."
    )
    return EXIT_NOT_CHECKED


def build_parser() -> argparse.ArgumentParser:
    parser, sub = command_parser(
        "rng-service",
        "rng-service: run the service, manage keys, call it, verify receipts.",
        EXIT_STATUSES,
    )
    config_help = (
        "the service's TOML configuration file (without it: the defaults); RNG_SERVICE__* "
        "variables override it (README, Configuration)"
    )

    p = add_command(sub, "serve", "run the service")
    p.add_argument("--config", type=Path, metavar="FILE", help=config_help)
    p.add_argument(
        "--front-ends", type=_front_ends, default=1, metavar="N",
        help="gRPC front-end processes on the port (1-64; default 1: one process serves "
        "and writes the log; above 1 this process is the log writer and starts N front ends)",
    )  # fmt: skip
    p.set_defaults(fn=_cmd_serve)

    p = add_command(sub, "dev-run", "run with a development key, creating it if missing")
    p.add_argument("--config", type=Path, metavar="FILE", help=config_help)
    p.set_defaults(fn=_cmd_dev_run)

    p = add_command(
        sub,
        "check-store",
        "check the whole log store (read only; may run while the service serves it)",
        description="The full check of the log store that the service runs incrementally at "
        "start-up: every index present, every entry's leaf hash and lookup columns (table, "
        "round, session, ... against its signed bytes), every Merkle node, every "
        "stored checkpoint's signature (active, co-signing and retired keys) and root; then "
        "each --checkpoint kept outside the database against the store. Reads only. Exit "
        "status 0: passed, and a kept checkpoint covers every entry; 1: the store is not the "
        "log that was signed (the message names the first bad index or checkpoint), or is "
        "shorter than a kept checkpoint; 2: configuration, store or checkpoint file "
        "unreadable; 4: passed, but what is named NOT CHECKED (truncation, entries no "
        "signature covers yet) was not proven.",
    )
    p.add_argument("--config", type=Path, metavar="FILE", help=config_help)
    p.add_argument(
        "--checkpoint", type=Path, metavar="FILE", action="append", default=[],
        help="a signed checkpoint kept outside the database (an auditor's, a receipt's, a "
        "witness's), repeatable: the store must hold the log it was signed for; one of the "
        "store's size proves it was not cut back",
    )  # fmt: skip
    p.add_argument(
        "--origin", metavar="ORIGIN",
        help="the log to work on, by its origin, when [[logs]] configures several (default: "
        "the only log)",
    )  # fmt: skip
    p.set_defaults(fn=_cmd_check_store)

    env_help = "the environment variable holding the key's passphrase (default: unencrypted)"
    p = add_command(sub, "keygen", "write an Ed25519 checkpoint-signing key pair")
    p.add_argument("--out", required=True, metavar="FILE", help="private key file (PEM, mode 0600)")
    p.add_argument(
        "--name", required=True, help="signed-note key name: the log's origin, e.g. casino.example"
    )
    p.add_argument("--passphrase-env", metavar="VAR", help=env_help)
    p.add_argument("--force", action="store_true", help="replace an existing file")
    p.set_defaults(fn=_cmd_keygen)

    p = add_command(sub, "pubkey", "print the verifier key of a private key")
    p.add_argument(
        "--key-file", required=True, metavar="FILE", help="the private key file (PEM), log.key_file"
    )
    p.add_argument(
        "--name", required=True, help="the key name configured as log.key_name (the origin)"
    )
    p.add_argument("--passphrase-env", metavar="VAR", help=env_help)
    p.set_defaults(fn=_cmd_pubkey)

    p = add_command(sub, "dev-ca", "write a development CA and mTLS certificates")
    p.add_argument(
        "--out", required=True, metavar="DIR", help="directory for the PEM files (keys mode 0600)"
    )
    p.add_argument(
        "--client",
        action="append",
        metavar="NAME[:ROLE[:TABLES]]",
        help="a client identity to certify (repeatable); with a role (game_server, auditor, lab, "
        "operator) and, for a game server, its comma-separated tables, its least-privilege "
        "[[clients]] entry is printed: game-1:game_server:T1,T2, auditor-1:auditor. A plain "
        "NAME gets a certificate and no entry (health checks only)",
    )
    p.add_argument(
        "--log", action="append", metavar="NAME=ORIGIN[,ORIGIN]",
        help="bind the --client NAME to the logs of these origins in its printed [[clients]] "
        "entry (repeatable; a game server to exactly one; several [[logs]]: docs/security.md, "
        "Logs). Without it the entry names no log: the only log, when there is one",
    )  # fmt: skip
    p.add_argument("--days", type=int, default=365, help="validity in days")
    p.add_argument("--force", action="store_true", help="replace existing files")
    p.set_defaults(fn=_cmd_dev_ca)

    cli_call.add_parser(sub)

    p = add_command(
        sub, "migrate-store", "migrate the configured log store to this release's schema"
    )
    p.add_argument("--config", type=Path, metavar="FILE", help=config_help)
    p.add_argument(
        "--origin", metavar="ORIGIN",
        help="the log to work on, by its origin, when [[logs]] configures several (default: "
        "the only log)",
    )  # fmt: skip
    p.set_defaults(fn=_cmd_migrate_store)

    p = add_command(sub, "verify-receipt", "verify a receipt offline")
    p.add_argument("receipt", help="receipt file (from call ... --receipt-out)")
    p.add_argument(
        "--key",
        "--verifier-key",
        dest="key",
        action="append",
        required=True,
        metavar="KEY",
        help="the log's verifier key <name>+<id>+<base64>, or a .vkey file (repeatable)",
    )
    p.add_argument(
        "--origin",
        help="the log's origin; default: the keys' name (a log's key is named by its origin)",
    )
    p.add_argument(
        "--target",
        help="check the receipt against the live log too (plaintext, a development service; "
        "for mTLS use rng-audit --ca/--cert/--key verify-receipt --target)",
    )
    p.add_argument(
        "--witness", action="extend", nargs="+", default=[],
        help="a witness's cosignature verifier key or .vkey file (repeatable): with --target, "
        "the receipt must be in a checkpoint these witnesses cosigned (rng-audit verify-receipt)",
    )  # fmt: skip
    p.add_argument(
        "--min-witnesses", type=int, default=None,
        help="how many of the --witness keys must have cosigned (default 1 with --witness)",
    )  # fmt: skip
    p.add_argument(
        "--max-witness-age", metavar="DURATION", default=None,
        help="with --witness: fail when the witnessed checkpoint is older than this (a number "
        "with s, m, h or d; rng-audit verify-receipt)",
    )  # fmt: skip
    p.set_defaults(fn=_cmd_verify_receipt)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except ConfigError as e:
        print(f"configuration error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except RngServiceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (e.g. `| head`)
        return stdout_reader_went_away()
    except OSError as e:  # a file that could not be read or written after all
        print(f"error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
