"""rng-audit: export the outcome log and verify it, or one receipt, offline.

Commands:
  export          write the log (entries and published checkpoints) to an rng-audit-export/v3
                  file, from the SQLite store (--db) or from a running service (--target);
                  --witnessed ends it at the newest checkpoint witnesses cosigned
  verify          recompute an export's RFC 6962 tree and check every signed checkpoint
  verify-receipt  check a receipt's signature and proof, and that it belongs to the log
                  (against an export, or the live log's latest checkpoint)
  consistency     write a consistency file (rng-audit-consistency/v1): an earlier checkpoint (a
                  receipt's or a kept one), the live log's latest (--witnessed: the newest the
                  witnesses cosigned) and the RFC 6962 proof between them, for the verify page
  profiles        the game profiles an export's entries were drawn under: each SHA-256 with
                  its entries, resolved to its document (shipped examples, --profile files, or
                  GetProfile on --target), and which of them are EXAMPLE profiles
  table-history   prove a table's history complete from seq A to B: the (client, table) chain
                  with inclusion proofs in one signed checkpoint (--target, or a file saved
                  with --out), or from a full export (--against); names the first break
  dispute         answer a dispute about rounds (--round, --request-id): every outcome of the
                  rounds with its proof, and the table's chain around them unbroken, from
                  --target or a full export (--against)

Exit status: 0 when everything the command checks is proven, 1 when something does not verify
(the message says what and at which index): tampering, a fork, another log's origin, an export
with nothing in it (unless ``--allow-empty``), an entry the log does not give while exporting
(or the service refuses with DATA_LOSS), a broken table chain; 2 for usage errors (keys of
several names and no ``--origin``), unreadable or malformed files, unreachable services and
refusals; 4 (:data:`~rng_service.cli.support.EXIT_NOT_CHECKED`) when the output names something
NOT CHECKED: what is printed as OK is proven, the rest is not (docs/cli.md, convention 9).
``table-history`` and ``dispute`` print JSON with ``--json`` (a failure then too, with ``"ok":
false``; what was not checked in ``"not_checked"``) and show progress on a terminal while they
read an export.

Which log: ``--origin``, or else the name of the ``--key`` keys (a log's key is named by its
origin, C2SP tlog-checkpoint). A command that calls ``--target`` names that log on every call
(``rng-origin``, docs/security.md "Logs"; ``export``: ``--origin`` or none) and checks every
answer against it; a refusal of the log is exit status 2 with one line naming it. Unless a kept
checkpoint (``--checkpoint``) or one with enough witness cosignatures (``--witness KEY ...
--min-witnesses K``) covers the newest entry, the output says that truncation was NOT CHECKED
(exit status 4): a copy cut back to an older checkpoint, or regrown from one, verifies the same.
With ``--witness``, every cosignature of a given witness key is checked and listed with its
time, and a checkpoint carrying cosignatures of K of them must cover the export's newest entry
(``verify``, and ``table-history`` and ``dispute`` ``--against``, which check the export with
``verify``'s code) or the receipt (``verify-receipt``), no older than ``--max-witness-age`` if
given (:mod:`rng_service.audit.witnesses`, docs/auditing.md "Witnesses"); exit status 1 if not,
naming the entries no witnessed checkpoint covers.

A service with mTLS (docs/security.md) needs an auditor's certificate for ``--target``:
``rng-audit export --target HOST:PORT --ca CA --cert CERT --tls-key KEY ...`` (before or after
the command, as every option shared by the commands; ``--key`` is always the log's verifier
key). Without them ``--target`` is plaintext, which a service accepts on loopback only.
``--target`` is never taken from the environment: whether a check uses a live service is the
auditor's explicit choice (docs/cli.md). ``export`` and ``verify`` show their progress on
stderr when it is a terminal (never in a pipe or a log).
The verification itself is :mod:`rng_service.audit` (pure: RFC 6962 / RFC 9162 section 2.1
hashing and proofs, C2SP signed-note and tlog-checkpoint signatures); this module only does the
I/O: files, the SQLite store, and a running service through ``rng.v1.LogService``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from rng_service.cli.audit_commands import (
    _check_kept_against_head,
    _client_tls,
    _cmd_consistency,
    _cmd_export,
    _cmd_profiles,
    _cmd_verify,
    _cmd_verify_receipt,
    _export_lines,
    _export_lines_total,
    _kept,
    _pinned,
    _positive,
    _verifiers,
    _write_atomically,
    truncation_not_checked,
    verify_export_file,
)
from rng_service.cli.support import (
    EXIT_USAGE,
    TLS_OPTIONS,
    HelpFormatter,
    UsageError,
    add_shared,
    quiet_grpc_core,
    refuse_option,
    stdout_reader_went_away,
)
from rng_service.cli.text import add_command
from rng_service.cli.witness_options import witnessed_by
from rng_service.clock import Clock, SystemClock
from rng_service.errors import IntegrityError, RngServiceError

if TYPE_CHECKING:
    pass

__all__ = ["main"]


def _witness_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--witness", action="extend", nargs="+", default=[],
        help="a witness's cosignature verifier key <name>+<id>+<base64(0x04 || key)>, or a .vkey "
        "file (repeat for each witness you trust); its cosignatures are checked and listed",
    )  # fmt: skip
    p.add_argument(
        "--min-witnesses", type=int, default=None,
        help="how many of the --witness keys must have cosigned a checkpoint (default 1 with "
        "--witness); 0 only lists them",
    )  # fmt: skip
    p.add_argument(
        "--max-witness-age", metavar="DURATION", default=None,
        help="fail when the witnessed checkpoint's time (its K-th newest cosignature, K = "
        "--min-witnesses) is older than this: a number with s, m, h or d, e.g. 10m, 2h "
        "(default: no limit)",
    )  # fmt: skip


KEY_BEFORE_COMMAND = (
    "--key before the command is no option: this client's mTLS private key is --tls-key "
    "(before or after the command); --key after verify or verify-receipt is the log's "
    "verifier key"
)
KEY_NOT_HERE = (
    "--key is the log's verifier key (verify, verify-receipt); this client's mTLS private key "
    "is --tls-key"
)
_TLS_TITLE = "mTLS for --target (before or after the command)"


CONSISTENCY_DESCRIPTION = """\
Writes an rng-audit-consistency/v1 file (docs/log-format.md, "Consistency files"): the earlier
checkpoint (--old: a receipt file, or a signed checkpoint file you kept), the live log's latest
checkpoint (with --witnessed the newest one the witnesses cosigned, with their cosignatures)
and the RFC 6962 consistency proof between them. Both checkpoints and the proof are verified
with --key before the file is written. The verify page (web/verify, docs/verify-page.md) reads
it to show that the later checkpoint extends the earlier, and to check witness cosignatures
covering a receipt.

Prints what it wrote (with --json: {"file", "origin", "old", "new", "proof_hashes"}).

Exit status: 0 written; 1 it does not verify (a bad signature, another log's origin, a fork,
a log cut back below --old, or with --witnessed no witnessed checkpoint covering it yet):
nothing written; 2 nothing was done: a bad option or key, an unreadable --old, an unwritable
--out, an unreachable service."""


def _command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    help: str,
    *,
    tls: bool,
    description: str | None = None,
) -> argparse.ArgumentParser:
    description = description or help[0].upper() + help[1:] + "."
    p = add_command(sub, name, help, description=description)
    if tls:
        add_shared(p, TLS_OPTIONS, title=_TLS_TITLE, top=False)
    return p


HELP_DESCRIPTION = """\
rng-audit: export the outcome log and verify it, or one receipt, offline; prove a table's
history complete and answer disputes (rng-audit COMMAND --help: each command's options)."""

HELP_EPILOG = """\
Exit status: 0 when everything the command checks is proven; 1 when something does not verify
(the message says what and at which index): tampering, a fork, another log's origin, an export
with nothing in it (unless --allow-empty), an entry the log does not give while exporting (or
the service refuses with DATA_LOSS), a broken table chain; 2 nothing was checked: usage errors
(keys of several names and no --origin), unreadable or malformed files, unreachable services
or a service refusing the log;
4 what is printed as OK is proven, and what is named NOT CHECKED is not: the run proves less
than all (truncation with no kept or witnessed checkpoint covering the newest entry, verify
--fast, verify-receipt offline, a live table-history or dispute FOUND); 141 the reader of
standard output went away.

Which log: --origin, or else the name of the --key keys (a log's key is named by its origin,
C2SP tlog-checkpoint); a command that calls --target names that log on every call (export:
--origin, or none) and checks every answer against it. Without a kept checkpoint (--checkpoint)
or enough witness cosignatures (--witness KEY ... --min-witnesses K) the output says that
truncation was NOT CHECKED (exit status 4): a copy cut back to an older checkpoint verifies the
same. With --witness, every cosignature of a given witness key is checked and listed with its
time, and some checkpoint must carry cosignatures of K of them; exit status 1 if not.

A service with mTLS needs an auditor's certificate for --target: rng-audit export --target
HOST:PORT --ca CA --cert CERT --tls-key KEY ... (before or after the command; --key is always
the log's verifier key). Without them --target is plaintext, which a service accepts on
loopback only. --target is never taken from the environment: whether a check uses a live
service is the auditor's explicit choice. Progress is shown on stderr when it is a terminal,
never in a pipe or a log. Details: docs/auditing.md; conventions: docs/cli.md."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rng-audit",
        description=HELP_DESCRIPTION,
        epilog=HELP_EPILOG,
        formatter_class=HelpFormatter,
    )
    add_shared(parser, TLS_OPTIONS, title=_TLS_TITLE, top=True)
    refuse_option(parser, "--key", KEY_BEFORE_COMMAND)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = _command(sub, "export", "write the log to an rng-audit-export/v3 file", tls=True)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--db", metavar="FILE", help="the service's SQLite log file (read only)")
    source.add_argument(
        "--target", metavar="HOST:PORT", help="a running service (LogService, auditor role)"
    )
    p.add_argument("--out", required=True, metavar="FILE", help="the export file to write")
    p.add_argument(
        "--witnessed", action="store_true",
        help="end the export at the newest published checkpoint that --min-witnesses witnesses "
        "cosigned (the export to verify with --witness: its newest entry is then witnessed); "
        "default: at the newest published checkpoint",
    )  # fmt: skip
    p.add_argument(
        "--min-witnesses", type=_positive, default=None, metavar="K",
        help="with --witnessed: how many witnesses' cosignatures that checkpoint carries "
        "(default 1)",
    )  # fmt: skip
    p.add_argument(
        "--origin",
        help="the log to export, by its origin (a deployment of several logs): every call to "
        "--target names it (rng-origin), and every checkpoint read must be of it, else exit "
        "status 1 and nothing written (default: none named; the log served at --target, or "
        "the one in --db)",
    )  # fmt: skip
    refuse_option(p, "--key", KEY_NOT_HERE)
    p.set_defaults(fn=_cmd_export)

    key_help = (
        "the log's verifier keys <name>+<id>+<base64>, or .vkey files (all the log's keys; "
        "repeatable)"
    )
    origin_help = (
        "the log's origin (first line of its checkpoints); default: the keys' name, which "
        "a log's keys share with its origin (C2SP tlog-checkpoint); needed when they differ"
    )
    p = _command(sub, "verify", "verify an export: entries, tree, every checkpoint", tls=False)
    p.add_argument("export", help="the export file")
    p.add_argument(
        "--key", "--verifier-key", dest="key", action="extend", nargs="+", required=True,
        metavar="KEY", help=key_help,
    )  # fmt: skip
    p.add_argument(
        "--checkpoint",
        action="extend",
        nargs="+",
        default=[],
        metavar="FILE",
        help="a signed checkpoint you kept earlier (file); the export must be consistent with "
        "it (default: none, and truncation is NOT CHECKED)",
    )
    p.add_argument("--origin", help=origin_help)
    _witness_options(p)
    p.add_argument(
        "--allow-empty",
        action="store_true",
        help="accept an export with no entries or no checkpoint (it proves nothing; by "
        "default it fails)",
    )
    p.add_argument(
        "--fast",
        action="store_true",
        help="skip decoding each entry (canonical form, fields, own index): about half the "
        "time; any change is still caught by the tree and signatures, but located only "
        "between two checkpoints",
    )
    p.set_defaults(fn=_cmd_verify)

    p = _command(sub, "verify-receipt", "verify a receipt and that it is in the log", tls=True)
    p.add_argument("receipt", help="the receipt JSON file (rng-service call ... --receipt-out)")
    p.add_argument(
        "--key", "--verifier-key", dest="key", action="extend", nargs="+", required=True,
        metavar="KEY", help=key_help,
    )  # fmt: skip
    p.add_argument("--origin", help=origin_help)
    against = p.add_mutually_exclusive_group()
    against.add_argument(
        "--against", metavar="FILE", help="an export file to check the receipt against"
    )
    against.add_argument(
        "--target",
        metavar="HOST:PORT",
        help="a running service to check against (its latest checkpoint and proofs)",
    )
    p.add_argument(
        "--checkpoint",
        action="extend",
        nargs="+",
        default=[],
        metavar="FILE",
        help="with --against or --target: a signed checkpoint you kept earlier (file); the log "
        "must be consistent with it (a log cut back below it fails)",
    )
    _witness_options(p)
    p.set_defaults(fn=_cmd_verify_receipt)

    p = _command(
        sub,
        "consistency",
        "write a consistency file for the verify page: an earlier checkpoint, the live "
        "log's latest and the proof between them",
        tls=True,
        description=CONSISTENCY_DESCRIPTION,
    )
    p.add_argument(
        "--target", required=True, metavar="HOST:PORT",
        help="the running service whose latest checkpoint extends --old (LogService; with "
        "mTLS an auditor's certificate)",
    )  # fmt: skip
    p.add_argument(
        "--old", required=True, metavar="FILE",
        help="the earlier checkpoint: a receipt file (rng-service call ... --receipt-out), "
        "whose checkpoint is taken, or a signed checkpoint file you kept",
    )  # fmt: skip
    p.add_argument(
        "--out", required=True, metavar="FILE",
        help="the consistency file to write (checked writable before the call; written only "
        "once everything in it verified)",
    )  # fmt: skip
    p.add_argument(
        "--key", "--verifier-key", dest="key", action="extend", nargs="+", required=True,
        metavar="KEY", help=key_help,
    )  # fmt: skip
    p.add_argument("--origin", help=origin_help)
    p.add_argument(
        "--witnessed", action="store_true",
        help="the later checkpoint is the newest one witnesses cosigned (GetLatestCheckpoint "
        "witnessed), carrying their cosignatures (default: the log's current checkpoint)",
    )  # fmt: skip
    p.add_argument(
        "--json", action="store_true",
        help="print what was written as one JSON document instead of text (the file itself "
        "is JSON either way)",
    )  # fmt: skip
    p.set_defaults(fn=_cmd_consistency)

    p = _command(
        sub,
        "profiles",
        "the game profiles an export's entries name, and which are examples",
        tls=True,
    )
    p.add_argument("export", help="the export file")
    p.add_argument(
        "--profile", action="extend", nargs="+", default=[], metavar="FILE",
        help="profile files (TOML, or canonical JSON from GetProfile) the entries may name",
    )  # fmt: skip
    p.add_argument(
        "--target", metavar="HOST:PORT", help="a running service: fetch the others by SHA-256"
    )
    p.add_argument(
        "--save", metavar="DIR", help="with --target: write the fetched canonical bytes here"
    )
    refuse_option(p, "--key", KEY_NOT_HERE)
    p.set_defaults(fn=_cmd_profiles)

    from rng_service.cli.tables import add_commands
    from rng_service.cli.tables_common import Shared

    add_commands(
        sub,
        Shared(
            verifiers=_verifiers,
            pinned=_pinned,
            client_tls=_client_tls,
            kept=_kept,
            export_lines=_export_lines,
            check_kept=_check_kept_against_head,
            write_atomically=_write_atomically,
            usage_error=UsageError,
            command=_command,
            export_total=_export_lines_total,
            witness_options=_witness_options,
            witnessed_by=witnessed_by,
            verify_export=verify_export_file,
            truncation=truncation_not_checked,
        ),
        key_help=key_help,
        origin_help=origin_help,
    )
    return parser


def main(argv: list[str] | None = None, *, clock: Clock | None = None) -> int:
    """Runs rng-audit; returns 0 (all proven), 1 (verification failed), 2 (usage/format) or 4
    (what is printed OK is proven, what is named NOT CHECKED is not: truncation, ``--fast``,
    an offline receipt, a live table-history or dispute's completeness).
    ``clock``: the time witness cosignatures are judged against (the system clock)."""
    quiet_grpc_core()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return EXIT_USAGE if e.code else 0
    args.clock = clock if clock is not None else SystemClock()
    try:
        status: int = args.fn(args)
    except IntegrityError as e:  # VerificationFailure, and integrity errors of the log layer
        if getattr(args, "json", False):
            print(json.dumps({"ok": False, "failure": str(e), "index": getattr(e, "index", None)}))
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    except (UsageError, RngServiceError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # the reader went away (e.g. `| head`): no verdict was said
        return stdout_reader_went_away()
    except OSError as e:
        print(f"error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return EXIT_USAGE
    return status


if __name__ == "__main__":
    sys.exit(main())
