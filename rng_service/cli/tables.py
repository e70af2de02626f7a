"""``rng-audit table-history`` and ``rng-audit dispute``: a table's history and disputed rounds,
answered from signed bytes (docs/auditing.md, "Table histories and disputes").

The judging is :mod:`rng_service.audit.history` and :mod:`rng_service.audit.dispute` (pure);
this module does the I/O: a running service through ``rng.v1.LogService`` (``GetTableHistory``
and ``FindEntries``, every answer proven in one signed checkpoint of one tree size), a
table-history file saved earlier, or a full export (verified in full, every chain followed).
``rng_service.cli.audit`` registers the commands; they share its exit statuses (0 verified,
1 not, 2 usage) and its errors, plus 4 (:data:`FOUND_UNPROVEN`) for a live answer: its entries
are proven, but not that none is missing (that rests on the store's index until table heads
are committed to the log); only an answer against a full export proves that, and exits 0.

They follow the CLI conventions (docs/cli.md, ``rng_service.cli.support``): every option has
help text with its default; the mTLS options ``--ca``, ``--cert``, ``--tls-key`` come before or
after the command; ``--key`` (``--verifier-key``) is the log's verifier key; ``--target`` is
explicit only (an auditor chooses to use a live service); text, or one JSON document with
``--json`` (a failure too: ``{"ok": false, ...}``); progress on stderr while an export is read,
on a terminal only; ``--out`` is checked to be writable before anything is fetched; exit
status 0 verified and proven complete (``--against``), 4 entries proven but completeness not
(``--target``, a saved file), 1 not verified (named), 2 nothing was checked (usage, unreadable
input, an unreachable service).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from rng_service.audit import ExportReader, VerificationFailure, VerifiedHead, open_head
from rng_service.audit.dispute import DisputeReport, judge_dispute, span_of
from rng_service.audit.history import (
    HistoryFile,
    HistoryFormatError,
    HistoryReport,
    ProvenItem,
    check_history,
    describe,
    prove_entries,
    read_history,
    write_history,
)
from rng_service.audit.verify import PinnedOrigin, verify_export
from rng_service.cli.support import Output, Progress, writable_file
from rng_service.log.entry import LogEntry
from rng_service.log.merkle import LEAF_PREFIX

if TYPE_CHECKING:
    from rng_service.rpc.log_servicer import LogClient, ProvenPage

__all__ = ["FOUND_UNPROVEN", "add_commands"]

FOUND_UNPROVEN = 4
"""Exit status of a live answer (``--target``, or a table-history file it saved): every entry
shown is proven in a signed checkpoint, but that none is missing rests on the store's index
(docs/cli.md, convention 9): not 0, which means proven. Until table heads are committed to the
log, only a full export (``--against``) proves completeness."""


class UsageError(Exception):
    """Bad arguments or unreadable input: exit status 2 (rng_service.cli.audit maps it)."""


@dataclass(frozen=True)
class Shared:
    """What rng_service.cli.audit lends these commands (its own helpers, to stay one tool)."""

    verifiers: Callable[[Sequence[str]], list[Any]]
    pinned: Callable[[Sequence[Any], str | None], PinnedOrigin]
    client_tls: Callable[[argparse.Namespace, str | None], Any]
    kept: Callable[[Sequence[str]], list[tuple[str, str]]]
    export_lines: Callable[[str], contextlib.AbstractContextManager[Iterator[str]]]
    check_kept: Callable[[VerifiedHead, VerifiedHead, Callable[[int, int], list[bytes]]], None]
    write_atomically: Callable[[Path, Callable[[IO[str]], object]], None]
    usage_error: type[Exception]
    command: Callable[..., argparse.ArgumentParser]
    """``command(sub, name, help, tls=True)``: a subcommand parser with the shared help
    formatter and the mTLS options (before or after the command)."""
    export_total: Callable[[str], int | None]
    """The lines an export's header declares (for progress only)."""


# -- output --------------------------------------------------------------------------------


def _entry_json(entry: LogEntry) -> dict[str, Any]:
    return {
        "index": entry.index,
        "seq": entry.table_seq,
        "table_prev": entry.table_prev,
        "time": entry.to_record()["time"],
        "round_id": entry.round_id,
        "slot": entry.slot,
        "kind": entry.kind,
        "request_id": entry.request_id,
        "session_id": entry.session_id,
        "params": dict(entry.params),
        "outcome": dict(entry.outcome),
        "summary": describe(entry),
    }


def _entry_line(entry: LogEntry) -> str:
    seq = "-" if entry.table_seq is None else str(entry.table_seq)
    session = f"  session {entry.session_id}" if entry.session_id else ""
    return (
        f"  seq {seq:>5}  log index {entry.index:>7}  {entry.to_record()['time']}  "
        f"round {entry.round_id}{session}  slot {entry.slot or '(format 1)'}  {entry.kind}: "
        f"{describe(entry)}"
    )


def _signers(head: VerifiedHead) -> str:
    return ", ".join(head.key_names)


# -- sources -------------------------------------------------------------------------------


def _items(page: ProvenPage) -> list[ProvenItem]:
    return [ProvenItem(e.index, e.data, e.leaf_hash, e.proof) for e in page.entries]


def _live_head(
    shared: Shared,
    client: LogClient,
    note: str,
    *,
    target: str,
    verifiers: Sequence[Any],
    origin: PinnedOrigin,
    kept: Sequence[tuple[str, str]],
) -> VerifiedHead:
    head = open_head(
        note, verifiers, source=f"the checkpoint {target} answered with", origin=origin.origin
    )
    for source, text in kept:
        shared.check_kept(
            open_head(text, verifiers, source=source, origin=origin.origin),
            head,
            client.consistency_proof,
        )
    return head


def _same_tree(page: ProvenPage, head: VerifiedHead, what: str) -> None:
    if page.tree_size != head.checkpoint.size:
        raise VerificationFailure(
            f"{what} was answered in the tree of size {page.tree_size}, not in the one asked "
            f"({head.checkpoint.size})"
        )


def _export_entries(
    shared: Shared, path: str, wanted: Callable[[bytes], bool], label: str
) -> list[tuple[int, bytes]]:
    """(index, bytes) of the export's entries that ``wanted`` keeps, in order (a plain read:
    no verification)."""
    out: list[tuple[int, bytes]] = []
    with shared.export_lines(path) as lines, Progress(label, shared.export_total(path),
                                                      unit="lines") as progress:  # fmt: skip
        reader = ExportReader(progress.wrap(lines))
        for _ in reader.checkpoints():
            pass
        for _, index, leaf, data in reader.entry_rows():
            if wanted(data):
                if hashlib.sha256(LEAF_PREFIX + data).digest() != leaf:
                    raise VerificationFailure(
                        f"export {path}: entry {index}: its leaf_hash is not SHA-256(0x00 || "
                        "entry): the entry bytes were changed",
                        index=index,
                    )
                out.append((index, data))
    return out


def _verified_export(
    shared: Shared,
    path: str,
    verifiers: Sequence[Any],
    origin: PinnedOrigin,
    kept: Sequence[tuple[str, str]],
) -> tuple[int, tuple[VerifiedHead, ...]]:
    """Verifies the whole export (tree, checkpoints, every chain); its size and checkpoints."""
    with shared.export_lines(path) as lines, Progress(f"verifying {path}",
                                                      shared.export_total(path),
                                                      unit="lines") as progress:  # fmt: skip
        report = verify_export(progress.wrap(lines), verifiers, kept=kept, origin=origin)
    return report.tree_size, report.heads


def _json_key(value: str) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def _of_table(client: str, table_id: str | None) -> Callable[[bytes], bool]:
    """A quick filter of entry bytes (a substring test before decoding), then the fields."""
    client_field = b'"client":' + _json_key(client) + b","
    table_field = None if table_id is None else b'"table_id":' + _json_key(table_id) + b","

    def wanted(data: bytes) -> bool:
        if client_field not in data or (table_field is not None and table_field not in data):
            return False
        record = json.loads(data)
        return bool(
            record.get("client") == client
            and (table_id is None or record.get("table_id") == table_id)
        )

    return wanted


# -- table-history ---------------------------------------------------------------------------


def _history_output(
    args: argparse.Namespace,
    report: HistoryReport,
    *,
    tree_size: int,
    proven_by: str,
    asked_to: int | None,
    export: bool = False,
) -> int:
    """Prints the history; exit status 0 only for an export (``export``), which proves that
    no entry of the table is missing; else 4 (FOUND: proven entries, completeness unproven)."""
    entries = report.entries
    end_note = ""
    if entries and asked_to is None and export:
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
    data = {
        "ok": export,
        "proven_complete": export,
        "client": report.client,
        "table_id": report.table_id,
        "first_seq": report.first_seq,
        "last_seq": report.last_seq,
        "complete": export,
        "tree_size": tree_size,
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
            f"complete from seq {report.first_seq} to seq {report.last_seq}: {found}"
            if export
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
        ]
        return "\n".join(lines)

    Output(args.json).result(data, text)
    return 0 if export else FOUND_UNPROVEN


def _no_history(client: str, table_id: str, first: int, tree_size: int) -> VerificationFailure:
    return VerificationFailure(
        f"the log gave no entry of table {table_id!r} of client {client!r} from seq {first} "
        f"(tree size {tree_size}): nothing is proven (check the client and table ids, and "
        "--from)"
    )


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
                saved = read_history(lines)
        except HistoryFormatError as e:
            raise usage(f"table history {args.history}: {e}") from e
        for option, value, there in (
            ("--client", args.client, saved.client), ("--table", args.table, saved.table_id)
        ):  # fmt: skip
            if value is not None and value != there:
                raise usage(f"{option} {value!r}, but the file is of {there!r}")
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
        size, heads = _verified_export(shared, args.against, verifiers, origin, kept)
        signers = sorted({n for h in heads for n in h.key_names})
        return _history_output(
            args, report, tree_size=size,
            proven_by=f"in the verified export {args.against} ({size} entries, "
            f"{len(heads)} checkpoints signed by {', '.join(signers)}, every chain followed)",
            asked_to=last, export=True,
        )  # fmt: skip
    from rng_service.rpc.log_servicer import LogClient

    with LogClient(args.target, tls=tls, timeout=args.timeout) as client:
        page = client.table_history(
            args.table, client=args.client or "", first_seq=first, last_seq=last or 0,
            tree_size=args.tree_size,
        )  # fmt: skip
        head = _live_head(
            shared, client, page.checkpoint, target=args.target, verifiers=verifiers,
            origin=origin, kept=kept,
        )  # fmt: skip
    _same_tree(page, head, "the table history")
    entries = prove_entries(_items(page), head, what=f"{args.target}'s table history")
    if args.out is not None:
        seqs = [e.table_seq or 0 for e in entries]
        saved = HistoryFile(
            origin=head.checkpoint.origin, client=page.client, table_id=args.table,
            first_seq=first, last_seq=max(seqs, default=0), tree_size=page.tree_size,
            checkpoint=page.checkpoint, items=tuple(_items(page)),
        )  # fmt: skip
        if out_file is None:  # not reached: set with the pages
            raise RuntimeError("no output file")
        shared.write_atomically(out_file, lambda fh: write_history(fh, saved))
    if not entries:
        raise _no_history(page.client, args.table, first, page.tree_size)
    report = check_history(
        entries, client=page.client, table_id=args.table, first_seq=first, last_seq=last
    )
    return _history_output(
        args, report, tree_size=page.tree_size,
        proven_by=f"in the checkpoint of tree size {page.tree_size} signed by {_signers(head)}"
        + (f" (saved to {args.out})" if args.out else ""),
        asked_to=last,
    )  # fmt: skip


# -- dispute -----------------------------------------------------------------------------------


def _dispute_output(
    args: argparse.Namespace, report: DisputeReport, proven_by: str, *, export: bool = False
) -> int:
    chained = [e for r in report.rounds for e in r.chained]
    format_1 = [e for r in report.rounds for e in r.entries if e.table_seq is None]
    if chained:
        lo = min(e.table_seq or 0 for e in chained)
        hi = max(e.table_seq or 0 for e in chained)
        before = (
            f"the previous round ({report.previous.round_id!r}, seq {lo - 1}, log index "
            f"{report.previous.index})"
            if report.previous is not None
            else f"the start of the table's chain (seq {lo} is its first entry)"
        )
        after = (
            f"the next round ({report.following.round_id!r}, seq {hi + 1}, log index "
            f"{report.following.index})"
            if report.following is not None
            else "the end of the table's chain in the export (no later entry of the table)"
            if export
            else "the end of the table's chain as the log gives it (no later entry of the "
            "table as of this checkpoint; that none was hidden from its index is shown only by "
            "a full export, --against)"
        )
        chain_text = (
            f"Nothing of table {report.table_id!r} between {before} and {after} is missing: "
            f"its chain runs unbroken from seq {report.span[0].table_seq} to seq "
            f"{report.span[-1].table_seq}, each entry naming the one before"
            if export
            else f"Between {before} and {after}, the chain of table {report.table_id!r} as the "
            f"log gave it runs unbroken from seq {report.span[0].table_seq} to seq "
            f"{report.span[-1].table_seq}, each entry naming the one before"
        )
    else:
        chain_text = (
            "These rounds were drawn before entry format 2: their entries are in no table "
            "chain, so nothing is said about entries around them"
        )
    data = {
        "ok": export,
        "proven_complete": export,
        "client": report.client,
        "table_id": report.table_id,
        "sessions": list(report.sessions),
        "proven_by": proven_by,
        "rounds": [
            {
                "round_id": r.round_id,
                "slots": [e.slot for e in r.entries],
                "voided": bool(r.voids),
                "entries": [_entry_json(e) for e in r.entries],
                # Batch or stream entries naming this table and round id: none of its slots.
                "lab_entries": [_entry_json(e) for e in r.lab],
            }
            for r in report.rounds
        ],
        "previous": None if report.previous is None else _entry_json(report.previous),
        "following": None if report.following is None else _entry_json(report.following),
        "others_between": [_entry_json(e) for e in report.others],
        "chain": chain_text,
        "format_1_entries": [e.index for e in format_1],
    }
    Output(args.json).result(
        data, lambda: _dispute_text(report, proven_by, chain_text, proven_complete=export)
    )
    return 0 if export else FOUND_UNPROVEN


def _dispute_text(
    report: DisputeReport, proven_by: str, chain_text: str, *, proven_complete: bool
) -> str:
    names = ", ".join(repr(r.round_id) for r in report.rounds)
    format_1 = [e for r in report.rounds for e in r.entries if e.table_seq is None]
    total = sum(len(r.entries) for r in report.rounds)
    of_sessions = (
        f" (session{'s' if len(report.sessions) > 1 else ''} "
        f"{', '.join(map(repr, report.sessions))})"
        if report.sessions
        else ""
    )
    rounds = f"round{'s' if len(report.rounds) > 1 else ''} {names}{of_sessions}"
    counted = f"{total} entr{'y' if total == 1 else 'ies'}, every one {proven_by}"
    of_table = f"of table {report.table_id!r} (client {report.client!r})"
    lines = [
        f"OK: these are all the outcomes of {rounds} {of_table}: {counted}"
        if proven_complete
        else f"FOUND: the outcomes of {rounds} {of_table} that the log gave: {counted}. These "
        "entries are proven; that none is missing rests on the store's index (an entry of "
        "these rounds whose columns were edited would not be given): prove it against a full "
        "export (--against EXPORT)"
    ]
    for finding in report.rounds:
        slots = ", ".join(f"{e.slot} (log index {e.index})" for e in finding.entries)
        lines.append(f"round {finding.round_id!r}: slots in order: {slots}")
        lines.extend(_entry_line(entry) for entry in finding.entries)
        if finding.lab:
            lines.append(
                f"  not among its slots: {len(finding.lab)} lab entr"
                f"{'y' if len(finding.lab) == 1 else 'ies'} naming this table and round id "
                "(batch or stream draws, each in a slot lab/<request id> of its own, none of "
                "the round's outcomes):"
            )
            lines.extend("  " + _entry_line(entry) for entry in finding.lab)
        for void in finding.voids:
            lines.append(
                f"  the round was VOIDED at log index {void.index}: "
                f"{dict(void.params).get('reason')!s} (nothing is drawn in it after that)"
            )
    if not any(finding.voids for finding in report.rounds):
        lines.append(
            "voids: none (the round was not voided)"
            if len(report.rounds) == 1
            else "voids: none (none of these rounds was voided)"
        )
    if report.others:
        lines.append(f"other entries of the table between them ({len(report.others)}):")
        lines.extend(_entry_line(entry) for entry in report.others)
    if report.previous is not None:
        lines += ["the entry before:", _entry_line(report.previous)]
    if report.following is not None:
        lines += ["the entry after:", _entry_line(report.following)]
    lines.append(chain_text + ".")
    if format_1:
        lines.append(
            f"note: log index(es) {', '.join(str(e.index) for e in format_1)} are format 1 "
            "entries (before the upgrade to entry format 2): in no chain"
        )
    return "\n".join(lines)


def _cmd_dispute(shared: Shared, args: argparse.Namespace) -> int:
    usage = shared.usage_error
    if (args.target is None) == (args.against is None):
        raise usage("give one of --target HOST:PORT and --against EXPORT")
    if not args.round and not args.request_id and not args.session:
        raise usage("give the disputed round(s) with --round, --request-id or --session")
    if args.round and args.table is None:
        raise usage("--round needs --table")
    if args.tree_size and args.target is None:
        raise usage("--tree-size is for --target")
    tls = shared.client_tls(args, args.target)
    verifiers = shared.verifiers(args.key)
    origin = shared.pinned(verifiers, args.origin)
    kept = shared.kept(args.checkpoint)
    if args.against is not None:
        return _dispute_against(shared, args, verifiers, origin, kept)
    from rng_service.rpc.log_servicer import LogClient

    with LogClient(args.target, tls=tls, timeout=args.timeout) as client:
        head: VerifiedHead | None = None
        size = args.tree_size

        def proven(page: ProvenPage, what: str) -> list[LogEntry]:
            nonlocal head, size
            if head is None:
                head = _live_head(
                    shared, client, page.checkpoint, target=args.target, verifiers=verifiers,
                    origin=origin, kept=kept,
                )  # fmt: skip
                size = head.checkpoint.size
            _same_tree(page, head, what)
            if page.truncated:
                raise usage(f"{what}: more than 1000 entries; that is not one game round")
            return prove_entries(_items(page), head, what=f"{args.target}'s answer to {what}")

        table = args.table
        rounds = list(dict.fromkeys(args.round))
        for request_id in args.request_id:
            what = f"request {request_id!r}"
            entries = proven(
                client.find_entries(client=args.client, request_id=request_id, tree_size=size),
                what,
            )
            if not entries:
                raise VerificationFailure(
                    f"request {request_id!r} of client {args.client!r} is not in the log (tree "
                    f"size {size}): check the ids"
                )
            entry = entries[0]
            if entry.client != args.client or entry.request_id != request_id:
                raise VerificationFailure(
                    f"log index {entry.index} was returned for {what}, but its signed bytes "
                    f"are request {entry.request_id!r} of client {entry.client!r}",
                    index=entry.index,
                )
            if table is not None and entry.table_id != table:
                raise usage(
                    f"request {request_id!r} is of table {entry.table_id!r}, not --table {table!r}"
                )
            table = entry.table_id
            if entry.round_id not in rounds:
                rounds.append(entry.round_id)
        for session in args.session:
            what = f"session {session!r}"
            entries = proven(
                client.find_entries(
                    client=args.client, table_id=table or "", session_id=session, tree_size=size
                ),
                what,
            )
            table = _session_rounds(
                usage, args.client, table, session, entries, rounds, source=f"the log (tree "
                f"size {size})",
            )  # fmt: skip
        if table is None:  # not reached: _session_rounds names the table
            raise RuntimeError("no table")
        found: dict[str, list[LogEntry]] = {}
        for round_id in rounds:
            found[round_id] = proven(
                client.find_entries(
                    client=args.client, table_id=table, round_id=round_id, tree_size=size
                ),
                f"round {round_id!r}",
            )
        bounds = span_of(found)
        span: list[LogEntry] = []
        if bounds is not None and found and all(found.values()):
            page = client.table_history(
                table, client=args.client, first_seq=bounds[0], last_seq=bounds[1],
                tree_size=size,
            )  # fmt: skip
            span = proven(page, f"the history of table {table!r}")
    if head is None:  # not reached: a head was verified above
        raise RuntimeError("no verified checkpoint")
    report = judge_dispute(
        client=args.client, table_id=table, found=found, span=span, sessions=args.session
    )
    return _dispute_output(
        args, report,
        f"proven in the checkpoint of tree size {head.checkpoint.size} signed by "
        f"{_signers(head)}",
    )  # fmt: skip


def _session_rounds(
    usage: type[Exception],
    client: str,
    table: str | None,
    session: str,
    entries: Sequence[LogEntry],
    rounds: list[str],
    *,
    source: str,
) -> str:
    """Adds the rounds of a session's entries (proven, or read from a verified export) to
    ``rounds`` in log order, and returns the session's table (``table`` if given)."""
    if not entries:
        where = "" if table is None else f" at table {table!r}"
        raise VerificationFailure(
            f"session {session!r} of client {client!r}{where} has no entry in {source}: check "
            "the ids"
        )
    for entry in entries:
        if (
            entry.client != client
            or entry.session_id != session
            or (table is not None and entry.table_id != table)
        ):
            raise VerificationFailure(
                f"log index {entry.index} was returned for session {session!r} of client "
                f"{client!r}, but its signed bytes are session {entry.session_id!r} of client "
                f"{entry.client!r} at table {entry.table_id!r}",
                index=entry.index,
            )
    tables = sorted({e.table_id for e in entries})
    if len(tables) > 1:
        raise usage(
            f"session {session!r} has entries at tables {', '.join(map(repr, tables))}: give "
            "--table (a dispute is about one table's chain)"
        )
    for entry in entries:
        if entry.round_id not in rounds:
            rounds.append(entry.round_id)
    return tables[0]


def _dispute_against(
    shared: Shared,
    args: argparse.Namespace,
    verifiers: Sequence[Any],
    origin: PinnedOrigin,
    kept: Sequence[tuple[str, str]],
) -> int:
    """A dispute against a full export: the export is verified in full (every chain), and the
    rounds' entries are found by their signed bytes, so no edited column can hide one."""
    size, heads = _verified_export(shared, args.against, verifiers, origin, kept)
    of_client = [
        (i, LogEntry.decode(d))
        for i, d in _export_entries(
            shared, args.against, _of_table(args.client, args.table),
            f"reading client {args.client!r} in {args.against}",
        )
    ]  # fmt: skip
    table = args.table
    rounds = list(dict.fromkeys(args.round))
    for request_id in args.request_id:
        match = [e for _, e in of_client if e.request_id == request_id]
        if not match:
            raise VerificationFailure(
                f"request {request_id!r} of client {args.client!r} is not in the export"
            )
        if table is not None and match[0].table_id != table:
            raise shared.usage_error(
                f"request {request_id!r} is of table {match[0].table_id!r}, not --table {table!r}"
            )
        table = match[0].table_id
        if match[0].round_id not in rounds:
            rounds.append(match[0].round_id)
    for session in args.session:
        table = _session_rounds(
            shared.usage_error, args.client, table, session,
            [e for _, e in of_client if e.session_id == session
             and (table is None or e.table_id == table)],
            rounds, source=f"the export {args.against}",
        )  # fmt: skip
    if table is None:  # not reached: _session_rounds names the table
        raise RuntimeError("no table")
    of_table = [e for _, e in of_client if e.table_id == table]
    found: Mapping[str, list[LogEntry]] = {
        r: [e for e in of_table if e.round_id == r] for r in rounds
    }
    span: list[LogEntry] = []
    bounds = span_of(found)
    if bounds is not None:
        span = [
            e for e in of_table
            if e.table_seq is not None and bounds[0] <= e.table_seq <= bounds[1]
        ]  # fmt: skip
    report = judge_dispute(
        client=args.client, table_id=table, found=found, span=span, sessions=args.session
    )
    signers = sorted({n for h in heads for n in h.key_names})
    return _dispute_output(
        args, report,
        f"in the verified export {args.against} ({size} entries, {len(heads)} checkpoints "
        f"signed by {', '.join(signers)}; every entry of the rounds found by its signed bytes)",
        export=True,
    )  # fmt: skip


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
            "must be consistent with it (default: none)",
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

    p = shared.command(
        sub, "table-history",
        "prove a table's history complete from seq A to B (or name the first break)", tls=True,
    )  # fmt: skip
    p.epilog = textwrap.fill(
        "Checks that the entries of one (client, table) chain from seq A to seq B are all "
        "there: each entry names the one before (entry format 2), and each is proven in one "
        "signed checkpoint (--target, or a FILE saved with --out) or in a verified full export "
        "(--against). Exit status 0: complete, proven against a full export (--against); 4: "
        "FOUND: the entries shown are proven, but that none is missing rests on the store's "
        "index (--target, or a FILE it saved); 1: a break or a failed proof (named); 2: "
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
        help="with --target: save what was fetched, to check it again offline (checked to be "
        "writable before anything is fetched; default: not saved)",
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
        "and the next round is missing. Exit status 0: answered and proven complete against a "
        "full export (--against); 4: FOUND: the entries shown are proven, but that none is "
        "missing rests on the store's index (--target); 1: something did not verify (named); "
        "2: nothing was checked (usage, unreadable input, an unreachable service)."
    )
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
        p, client_required=True,
        client_help="the client (game server identity) whose rounds (required: a round is "
        "(client, table, round))",
    )  # fmt: skip
    p.set_defaults(fn=lambda a: _cmd_dispute(shared, a))
