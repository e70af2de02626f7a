"""``rng-audit table-history`` and ``rng-audit dispute``: a table's history and disputed rounds,
answered from signed bytes (docs/auditing.md, "Table histories and disputes").

The judging is :mod:`rng_service.audit.history` and :mod:`rng_service.audit.dispute` (pure);
this module does the I/O: a running service through ``rng.v1.LogService`` (``GetTableHistory``
and ``FindEntries``, every answer proven in one signed checkpoint of one tree size), a
table-history file saved earlier, or a full export (verified in full, every chain followed).
``rng_service.cli.audit`` registers the commands; they share its exit statuses (0 verified,
1 not, 2 usage) and its errors, plus 4 (:data:`FOUND_UNPROVEN`) for a live answer: its entries
are proven, but not that none is missing (that rests on the store's index until table heads
are committed to the log); an answer against a full export proves that, and exits 0 when a kept
or witnessed checkpoint covers the export's end (else truncation is NOT CHECKED, exit 4).

They follow the CLI conventions (docs/cli.md, ``rng_service.cli.support``): every option has
help text with its default; the mTLS options ``--ca``, ``--cert``, ``--tls-key`` come before or
after the command; ``--key`` (``--verifier-key``) is the log's verifier key; ``--target`` is
explicit only (an auditor chooses to use a live service); text, or one JSON document with
``--json`` (a failure too: ``{"ok": false, ...}``); progress on stderr while an export is read,
on a terminal only; ``--out`` is checked to be writable before anything is fetched; exit
status 0 verified and proven complete (``--against`` an export a kept or witnessed checkpoint
covers, or a committed map), 4 entries proven but completeness not (``--target`` or a saved
file of a log without a committed map; ``--against`` with truncation NOT CHECKED, as
``verify``), 1 not verified (named), 2 nothing was checked (usage, unreadable
input, an unreachable service).
"""

from __future__ import annotations

import argparse
import json
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rng_service.audit import VerificationFailure, open_head
from rng_service.audit.history import (
    HistoryFile,
    HistoryFormatError,
    HistoryReport,
    check_history,
    prove_entries,
    read_history,
    write_history,
)
from rng_service.audit.table_proof import (
    PROOF_FORMAT,
    TableProofFile,
    read_table_proof,
    write_table_proof,
)
from rng_service.cli.support import Output, writable_file
from rng_service.cli.tables_live import LiveChain, check_saved, read_chain, reading_tree
from rng_service.log.entry import LogEntry

if TYPE_CHECKING:
    pass

from rng_service.cli.dispute import (
    _cmd_dispute,
)
from rng_service.cli.tables_common import (
    FOUND_UNPROVEN,
    Shared,
    VerifiedExport,
    _entry_json,
    _entry_line,
    _export_entries,
    _of_table,
    _signers,
    _verified_export,
    unchecked_and_witnessed,
)

__all__ = ["FOUND_UNPROVEN", "add_commands"]


# -- table-history ---------------------------------------------------------------------------


def _history_output(
    args: argparse.Namespace,
    report: HistoryReport,
    *,
    tree_size: int,
    proven_by: str,
    asked_to: int | None,
    exported: VerifiedExport | None = None,
    live: LiveChain | None = None,
) -> int:
    """Prints the history; exit status 0 only for a chain the committed map proves
    (``live.committed``), or one read in a verified export (``exported``) that a kept or
    witnessed checkpoint covers, which prove that no entry of the table is missing; else 4:
    FOUND (proven entries, completeness unproven), or truncation NOT CHECKED (an export that
    no kept or witnessed checkpoint covers: the log may hold later entries of the table)."""
    entries = report.entries
    committed = None if live is None else live.committed
    export = exported is not None
    complete = export or committed is not None
    end_note = ""
    if committed is not None and committed.proven.head is not None:
        head = committed.proven.head
        end_note = (
            f"the chain's head as of checkpoint {committed.proven.tree_size} is seq "
            f"{head.seq} (log index {head.index}), proven by the map root signed in entry "
            f"{committed.proven.root_entry.index}; the history was walked back from it by "
            "each entry's signed predecessor, so no entry of it can be hidden"
        )
    elif entries and asked_to is None and export:
        end_note = (
            f"the export holds no entry of this table after seq {report.last_seq}: the chain "
            f"ends there in its {tree_size} entries (every entry read by its signed bytes)"
        )
    elif entries and asked_to is None:
        end_note = (
            f"the log gave no entry of this table after seq {report.last_seq} as of tree size "
            f"{tree_size}: that is where the chain ends by the store's index; that no later "
            "entry was hidden from it is shown only by a full export (--against) or the "
            "store's own check (rng-service check-store)"
        )
    start_note = ""
    if report.starts_chain:
        start_note = (
            f"seq 1 (log index {entries[0].index}) names no predecessor: it is the first entry "
            "of this table's chain. In a log upgraded from entry format 1, the table's earlier "
            "(format 1) entries are in no chain (docs/log-format.md)"
        )
    notes = [n for n in (start_note, end_note) if n]
    not_checked, witnessed = unchecked_and_witnessed(
        exported, complete, "of this table's history", None if live is None else live.witnessed
    )
    data = {
        "ok": not not_checked,
        "proven_complete": complete and not not_checked,
        "not_checked": not_checked,
        "client": report.client,
        "table_id": report.table_id,
        "first_seq": report.first_seq,
        "last_seq": report.last_seq,
        "complete": complete,
        "tree_size": tree_size,
        "witnessed": witnessed,
        "head": None
        if committed is None or committed.proven.head is None
        else {
            "index": committed.proven.head.index,
            "seq": committed.proven.head.seq,
        },
        "proven_by": proven_by,
        "starts_chain": report.starts_chain,
        "notes": notes,
        "entries": [_entry_json(e) for e in entries],
    }

    def text() -> str:
        found = (
            f"{len(entries)} entries, log indexes {entries[0].index} to {entries[-1].index}, "
            f"each naming the one before as its predecessor, every one {proven_by}"
        )
        first = (
            f"OK: the history of table {report.table_id!r} (client {report.client!r}) is "
            f"complete from seq {report.first_seq} to seq {report.last_seq}"
            + ("" if live is None else " " + live.as_of())
            + f": {found}"
            if complete
            else f"FOUND: the history of table {report.table_id!r} (client {report.client!r}) "
            f"from seq {report.first_seq} to seq {report.last_seq} as the log gave it: {found}. "
            f"These entries are proven; that none is missing rests on the store's index (a "
            f"second entry of a seq, or a later one, hidden by edited columns would not be "
            f"given): prove it against a full export (--against EXPORT)"
        )
        lines = [
            first,
            *(_entry_line(entry) for entry in entries),
            *(f"note: {note}" for note in notes),
            *([f"note: witnessed: {witnessed}"] if exported is not None and witnessed else []),
            *not_checked,
        ]
        return "\n".join(lines)

    Output(args.json).result(data, text)
    return FOUND_UNPROVEN if not_checked else 0


def _proven_none(args: argparse.Namespace, live: LiveChain, first: int) -> int:
    """The committed map proves that the chain has no entry (from ``first`` on): exit 0."""
    committed = live.committed
    if committed is None:  # not reached: the caller checked it
        raise RuntimeError("no committed map")
    head = committed.proven.head
    root = committed.proven.root_entry.index
    name = f"table {live.table_id!r} (client {live.client!r})"
    if head is None:
        text = (
            f"OK: table {live.table_id!r} has no entries (client {live.client!r}) "
            f"{live.as_of()}: the map root signed in entry {root} proves that no chain of "
            "this client and table is in the log"
        )
    else:
        text = (
            f"OK: {name} has no entries from seq {first} {live.as_of()}: its chain ends at "
            f"seq {head.seq} (log index {head.index}), proven by the map root signed in entry "
            f"{root}"
        )
    data = {
        "ok": True, "proven_complete": True, "not_checked": [], "complete": True,
        "client": live.client,
        "table_id": live.table_id, "first_seq": None, "last_seq": None,
        "tree_size": live.head.checkpoint.size, "witnessed": live.witnessed,
        "head": None if head is None else {"index": head.index, "seq": head.seq},
        "notes": [text.removeprefix("OK: ")], "entries": [],
    }  # fmt: skip
    Output(args.json).result(data, lambda: text)
    return 0


def _live_history(
    args: argparse.Namespace, live: LiveChain, first: int, last: int | None, saved_to: str
) -> int:
    """The verdict on a chain read live (or from a saved proof file)."""
    size = live.head.checkpoint.size
    proven_by = f"in the checkpoint of tree size {size} signed by {_signers(live.head)}" + saved_to
    committed = live.committed
    if committed is None:
        entries = [e for e in live.entries if last is None or (e.table_seq or 0) <= last]
        if not entries:
            raise _no_history(live.client, live.table_id, first, size)
        report = check_history(
            entries, client=live.client, table_id=live.table_id, first_seq=first, last_seq=last
        )
        return _history_output(args, report, tree_size=size, proven_by=proven_by,
                               asked_to=last, live=live)  # fmt: skip
    head = committed.proven.head
    if head is None or head.seq < first:
        if last is not None:
            check_history([], client=live.client, table_id=live.table_id, first_seq=first,
                          last_seq=last)  # fmt: skip
        return _proven_none(args, live, first)
    chain = [e for e in committed.chain if last is None or (e.table_seq or 0) <= last]
    report = check_history(
        chain if last is None or last <= head.seq else committed.chain,
        client=live.client, table_id=live.table_id, first_seq=first, last_seq=last,
    )  # fmt: skip
    return _history_output(args, report, tree_size=size, proven_by=proven_by, asked_to=last,
                           live=live)  # fmt: skip


def _no_history(client: str, table_id: str, first: int, tree_size: int) -> VerificationFailure:
    return VerificationFailure(
        f"the log gave no entry of table {table_id!r} of client {client!r} from seq {first} "
        f"(tree size {tree_size}): nothing is proven (check the client and table ids, and "
        "--from)"
    )


def _is_table_proof(lines: Sequence[str]) -> bool:
    try:
        header = json.loads(lines[0]) if lines else None
    except json.JSONDecodeError:
        return False
    return isinstance(header, dict) and header.get("format") == PROOF_FORMAT


def _same_names(shared: Shared, args: argparse.Namespace, client: str, table_id: str) -> None:
    for option, value, there in (("--client", args.client, client), ("--table", args.table,
                                                                       table_id)):  # fmt: skip
        if value is not None and value != there:
            raise shared.usage_error(f"{option} {value!r}, but the file is of {there!r}")


def _cmd_table_history(shared: Shared, args: argparse.Namespace) -> int:
    usage = shared.usage_error
    sources = [x for x in (args.history, args.target, args.against) if x is not None]
    if len(sources) != 1:
        raise usage("give one of: a table-history FILE, --target HOST:PORT, --against EXPORT")
    tls = shared.client_tls(args, args.target)
    verifiers = shared.verifiers(args.key)
    origin = shared.pinned(verifiers, args.origin)
    kept = shared.kept(args.checkpoint)
    first = args.from_seq
    last = args.to_seq
    if first < 1 or (last is not None and last < first):
        raise usage("--from must be at least 1, and --to not below --from")
    if args.out is not None and args.target is None:
        raise usage("--out saves what --target fetched (a file or an export is already saved)")
    out_file = None if args.out is None else writable_file(args.out, "--out")
    if args.tree_size and args.target is None:
        raise usage("--tree-size is for --target")
    if args.history is not None:
        try:
            with shared.export_lines(args.history) as lines:
                text = list(lines)
            if _is_table_proof(text):
                proof = read_table_proof(text)
                _same_names(shared, args, proof.client, proof.table_id)
                live, _ = check_saved(shared, args, proof, args.history, verifiers, origin)
                return _live_history(args, live, proof.first_seq, last,
                                     f" (saved in {args.history})")  # fmt: skip
            saved = read_history(text)
        except HistoryFormatError as e:
            raise usage(f"table history {args.history}: {e}") from e
        _same_names(shared, args, saved.client, saved.table_id)
        origin.check(saved.origin, f"table history {args.history}")
        head = open_head(
            saved.checkpoint, verifiers, source=f"the checkpoint of {args.history}",
            origin=origin.origin,
        )  # fmt: skip
        if head.checkpoint.size != saved.tree_size:
            raise VerificationFailure(
                f"{args.history}: its checkpoint is for tree size {head.checkpoint.size}, its "
                f"header says {saved.tree_size}"
            )
        entries = prove_entries(saved.items, head, what=args.history)
        if not saved.last_seq:
            raise _no_history(saved.client, saved.table_id, saved.first_seq, saved.tree_size)
        report = check_history(
            entries, client=saved.client, table_id=saved.table_id, first_seq=saved.first_seq,
            last_seq=saved.last_seq,
        )  # fmt: skip
        return _history_output(
            args, report, tree_size=head.checkpoint.size,
            proven_by=f"in the checkpoint of tree size {head.checkpoint.size} signed by "
            f"{_signers(head)} (saved in {args.history})",
            asked_to=saved.last_seq if saved.last_seq else None,
        )  # fmt: skip
    if args.table is None:
        raise usage("--table is needed")
    if args.against is not None:
        if args.client is None:
            raise usage("--client is needed with --against (an export holds every client)")
        # The chain first, so that a missing entry is named by its place in the chain; then
        # the whole export (tree, signatures, every chain).
        found = _export_entries(
            shared, args.against, _of_table(args.client, args.table),
            f"reading the chain of {args.table!r} in {args.against}",
        )  # fmt: skip
        chain = [LogEntry.decode(data) for _, data in found]
        chain = [
            e for e in chain
            if e.table_seq is not None and e.table_seq >= first
            and (last is None or e.table_seq <= last)
        ]  # fmt: skip
        if not chain:
            raise _no_history(args.client, args.table, first, 0)
        report = check_history(
            chain, client=args.client, table_id=args.table, first_seq=first, last_seq=last
        )
        exported = _verified_export(shared, args, verifiers, origin, kept)
        return _history_output(
            args, report, tree_size=exported.size,
            proven_by=exported.proven_by("every chain followed"), asked_to=last,
            exported=exported,
        )  # fmt: skip
    from rng_service.rpc.log_servicer import LogClient

    with LogClient(
        args.target, tls=tls, timeout=args.timeout, origin=origin.origin,
        origin_from=origin.source,
    ) as client:  # fmt: skip
        tree = reading_tree(shared, args, client, verifiers=verifiers, origin=origin, kept=kept)
        live = read_chain(
            shared, args, client, table_id=args.table, whose=args.client or "", first_seq=first,
            verifiers=verifiers, origin=origin, kept=kept, tree=tree,
        )  # fmt: skip
    if out_file is not None:
        _save_live(shared, out_file, live, first, last)
    return _live_history(args, live, first, last, f" (saved to {args.out})" if args.out else "")


def _save_live(
    shared: Shared, out_file: Path, live: LiveChain, first: int, last: int | None
) -> None:
    """``--out``: a table proof file when a map proved the chain, else (a log without a
    committed map) the table-history file of the entries up to ``last``."""
    origin = live.head.checkpoint.origin
    committed = live.committed
    if committed is not None:
        proof = TableProofFile(
            origin=origin, client=live.client, table_id=live.table_id, first_seq=first,
            tree_size=live.head.checkpoint.size, checkpoint=live.note, root=committed.root,
            proof=committed.proof, items=live.items,
        )  # fmt: skip
        shared.write_atomically(out_file, lambda fh: write_table_proof(fh, proof))
        return
    items = [
        item for item, entry in zip(live.items, live.entries, strict=True)
        if last is None or (entry.table_seq or 0) <= last
    ]  # fmt: skip
    seqs = [e.table_seq or 0 for e in live.entries if last is None or (e.table_seq or 0) <= last]
    saved = HistoryFile(
        origin=origin, client=live.client, table_id=live.table_id, first_seq=first,
        last_seq=max(seqs, default=0), tree_size=live.head.checkpoint.size,
        checkpoint=live.note, items=tuple(items),
    )  # fmt: skip
    shared.write_atomically(out_file, lambda fh: write_history(fh, saved))


# -- parsers ---------------------------------------------------------------------------------


def add_commands(sub: Any, shared: Shared, *, key_help: str, origin_help: str) -> None:
    """Adds ``table-history`` and ``dispute`` to rng-audit's subparsers."""

    def common(p: argparse.ArgumentParser, *, client_help: str, client_required: bool) -> None:
        p.add_argument(
            "--key", "--verifier-key", dest="key", action="extend", nargs="+", required=True,
            metavar="KEY", help=key_help,
        )  # fmt: skip
        p.add_argument("--origin", help=origin_help)
        p.add_argument(
            "--checkpoint", action="extend", nargs="+", default=[], metavar="FILE",
            help="a signed checkpoint you kept earlier (file); the live log or the export "
            "must be consistent with it (default: none; with --against, truncation is then NOT "
            "CHECKED unless witnesses cosigned a checkpoint covering the export's newest entry)",
        )  # fmt: skip
        p.add_argument(
            "--target", metavar="HOST:PORT",
            help="a running service (its LogService: the auditor role, or a game server for "
            "its own tables' history); never taken from the environment (default: none)",
        )  # fmt: skip
        p.add_argument(
            "--against", metavar="FILE",
            help="a full export (rng-audit export) instead of a service: verified in full, "
            "entries found by their signed bytes (default: none)",
        )  # fmt: skip
        p.add_argument("--client", required=client_required, help=client_help)
        p.add_argument(
            "--tree-size", type=int, default=0,
            help="with --target: the tree to read and prove in (0: the current one)",
        )  # fmt: skip
        p.add_argument(
            "--timeout", type=float, default=30.0, help="seconds per call to --target"
        )  # fmt: skip
        p.add_argument(
            "--json", action="store_true",
            help="print one JSON document (a failure too, with \"ok\": false) instead of text",
        )  # fmt: skip
        shared.witness_options(p)

    p = shared.command(
        sub, "table-history",
        "prove a table's history complete from seq A to B (or name the first break)", tls=True,
    )  # fmt: skip
    p.epilog = textwrap.fill(
        "Checks that the entries of one (client, table) chain from seq A to seq B are all "
        "there: each entry names the one before (entry format 2), and each is proven in one "
        "signed checkpoint (--target, or a FILE saved with --out) or in a verified full export "
        "(--against). On a log with a committed map of table heads (entry format 3), the "
        "chain's head is proven by the map root signed in the checkpoint's newest entry and "
        "the chain is walked back from it: complete as of that checkpoint (with --witness, "
        "the newest witnessed one), or 'table T has no entries'. Exit status 0: complete, "
        "proven by the map (--target, or a FILE it saved) or against a full export "
        "(--against) that a kept checkpoint (--checkpoint) or one K witnesses cosigned "
        "(--witness, --min-witnesses) covers; 4: FOUND: the entries shown are proven, but the "
        "log has no committed map yet (its newest entry is of format 1 or 2), so that none is "
        "missing rests on the store's index and is named NOT CHECKED (--json: not_checked); "
        "or --against an export no such checkpoint covers: OK for the export, but whether the "
        "log holds later entries of the table is named NOT CHECKED (truncation); 1: a break or a "
        "failed proof, a map proof among them (named); 2: "
        "nothing was checked (usage, unreadable input, an unreachable service)."
    )
    p.add_argument(
        "history", nargs="?",
        help="a table-history file saved with --out (instead of --target or --against)",
    )  # fmt: skip
    p.add_argument("--table", help="the table id (required with --target and --against)")
    p.add_argument(
        "--from", dest="from_seq", type=int, default=1,
        help="the first table_seq (1: the chain's first entry)",
    )  # fmt: skip
    p.add_argument(
        "--to", dest="to_seq", type=int,
        help="the last table_seq (default: the last entry the log gives)",
    )  # fmt: skip
    p.add_argument(
        "--out", metavar="FILE",
        help="with --target: save what was fetched, to check it again offline (a table proof "
        "file when the log has a committed map; checked to be writable before anything is "
        "fetched; default: not saved)",
    )  # fmt: skip
    common(
        p, client_required=False,
        client_help="the client (game server identity) whose table (default with --target: "
        "the caller's own; needed with --against)",
    )  # fmt: skip
    p.set_defaults(fn=lambda a: _cmd_table_history(shared, a))

    p = shared.command(
        sub, "dispute",
        "answer a dispute: all outcomes of rounds, and their table's chain around them",
        tls=True,
    )  # fmt: skip
    p.epilog = textwrap.fill(
        "Fetches (--target) or finds in a full export (--against) every entry of the disputed "
        "rounds of one client's table, proves each one, and checks the table's chain from the "
        "entry before the rounds to the entry after: these are all the outcomes of the rounds, "
        "in their slots' order, with any voids, and nothing of the table between the previous "
        "and the next round is missing. On a log with a committed map of table heads (entry "
        "format 3), --target walks the table's whole chain back from its proven head and lists "
        "every entry of the rounds it holds; --out saves that proof as a file that 'rng-audit "
        "dispute FILE --key K' checks offline. Exit status 0: answered and proven complete (by "
        "the committed map, or against a full export that a kept checkpoint or one K "
        "witnesses cosigned covers); 4: FOUND: the entries shown are proven, but the log has no "
        "committed map yet, so that none is missing rests on the store's index and is named NOT "
        "CHECKED (--target; --json: not_checked); or --against an export no such checkpoint "
        "covers: a later void or spin of a round could be past its end, named NOT CHECKED "
        "(truncation); 1: something did "
        "not verify, a map proof among them (named); 2: "
        "nothing was checked (usage, unreadable input, an unreachable service)."
    )
    p.add_argument(
        "proof", nargs="?",
        help="a table proof file saved with --out (instead of --target or --against)",
    )  # fmt: skip
    p.add_argument(
        "--out", metavar="FILE",
        help="with --target: save the proof (checkpoint, map proof, the table's whole chain) "
        "as a table proof file, to check offline (checked to be writable before anything is "
        "fetched; default: not saved)",
    )  # fmt: skip
    p.add_argument("--table", help="the table id (needed with --round)")
    p.add_argument(
        "--round", action="append", default=[],
        help="a disputed round id (repeatable: a Touchdown Roulette game's trigger spin and "
        "four downs, a Roulette Up streak's rounds)",
    )  # fmt: skip
    p.add_argument(
        "--request-id", action="append", default=[],
        help="a disputed request id (repeatable): its round is disputed",
    )  # fmt: skip
    p.add_argument(
        "--session", action="append", default=[],
        help="a disputed session id (repeatable): every round with an entry of the session is "
        "disputed (a Roulette Up streak, a Touchdown Roulette game, linked by their "
        "session_id), and no entry of the session may lie in the table's chain around them "
        "unfound",
    )  # fmt: skip
    common(
        p, client_required=False,
        client_help="the client (game server identity) whose rounds (required with --target "
        "and --against: a round is (client, table, round))",
    )  # fmt: skip
    p.set_defaults(fn=lambda a: _cmd_dispute(shared, a))
