"""``rng-audit dispute`` (registered by :mod:`rng_service.cli.tables`): a disputed round or
session answered from signed bytes; the judging is :mod:`rng_service.audit.dispute` (pure),
this module reads a running service's proven pages or a full export and prints the verdict
(docs/auditing.md, "Table histories and disputes").
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rng_service.audit import VerificationFailure, VerifiedHead
from rng_service.audit.dispute import DisputeReport, judge_dispute, span_of
from rng_service.audit.history import HistoryFormatError, ProvenItem, prove_entries
from rng_service.audit.table_proof import TableProofFile, read_table_proof, write_table_proof
from rng_service.audit.verify import PinnedOrigin
from rng_service.cli.support import Output, writable_file
from rng_service.cli.tables_live import LiveChain, check_saved, read_chain, reading_tree
from rng_service.log.entry import LogEntry

if TYPE_CHECKING:
    from rng_service.rpc.log_servicer import ProvenPage

from rng_service.cli.tables_common import (
    FOUND_UNPROVEN,
    Shared,
    VerifiedExport,
    _entry_json,
    _entry_line,
    _export_entries,
    _items,
    _live_head,
    _of_table,
    _same_tree,
    _signers,
    _verified_export,
    unchecked_and_witnessed,
)

__all__: list[str] = []


def _dispute_output(
    args: argparse.Namespace,
    report: DisputeReport,
    proven_by: str,
    *,
    exported: VerifiedExport | None = None,
    live: LiveChain | None = None,
) -> int:
    """Prints the answer; exit status 0 only when the committed map (``live.committed``) or
    a verified export (``exported``) that a kept or witnessed checkpoint covers proves it
    complete; else 4: FOUND (completeness unproven), or truncation NOT CHECKED (an export no
    kept or witnessed checkpoint covers: a later void or spin of a round could be past its
    end)."""
    committed = None if live is None else live.committed
    export = exported is not None
    complete = export or committed is not None
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
            else "the table's committed head (no later entry of the table as of this checkpoint)"
            if committed is not None
            else "the end of the table's chain as the log gives it (no later entry of the "
            "table as of this checkpoint; that none was hidden from its index is shown only by "
            "a full export, --against)"
        )
        chain_text = (
            f"Nothing of table {report.table_id!r} between {before} and {after} is missing: "
            f"its chain runs unbroken from seq {report.span[0].table_seq} to seq "
            f"{report.span[-1].table_seq}, each entry naming the one before" + _walk_note(live)
            if complete
            else f"Between {before} and {after}, the chain of table {report.table_id!r} as the "
            f"log gave it runs unbroken from seq {report.span[0].table_seq} to seq "
            f"{report.span[-1].table_seq}, each entry naming the one before"
        )
    else:
        chain_text = (
            "These rounds were drawn before entry format 2: their entries are in no table "
            "chain, so nothing is said about entries around them"
        )
    not_checked, witnessed = unchecked_and_witnessed(
        exported, complete, "of these rounds", None if live is None else live.witnessed
    )
    data = {
        "ok": not not_checked,
        "proven_complete": complete and not not_checked,
        "not_checked": not_checked,
        "witnessed": witnessed,
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
    as_of = "" if committed is None or live is None else " " + live.as_of()
    Output(args.json).result(
        data,
        lambda: "\n".join(
            [
                _dispute_text(report, proven_by, chain_text, proven_complete=complete, as_of=as_of),
                *([f"note: witnessed: {witnessed}"] if export and witnessed else []),
                *not_checked,
            ]
        ),
    )
    return FOUND_UNPROVEN if not_checked else 0


def _walk_note(live: LiveChain | None) -> str:
    committed = None if live is None else live.committed
    if committed is None or committed.proven.head is None:
        return ""
    head = committed.proven.head
    return (
        f"; the table's whole chain (seq 1 to {head.seq}) was walked back from its committed "
        f"head (log index {head.index}), proven by the map root signed in entry "
        f"{committed.proven.root_entry.index}, and every entry of the rounds in it is listed"
    )


def _dispute_text(
    report: DisputeReport,
    proven_by: str,
    chain_text: str,
    *,
    proven_complete: bool,
    as_of: str = "",
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
        f"OK: these are all the outcomes of {rounds} {of_table}{as_of}: {counted}"
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
    sources = [x for x in (args.proof, args.target, args.against) if x is not None]
    if len(sources) != 1:
        raise usage("give one of: a table proof FILE, --target HOST:PORT, --against EXPORT")
    if args.out is not None and args.target is None:
        raise usage("--out saves what --target fetched (a file or an export is already saved)")
    if args.proof is not None:
        return _dispute_saved(shared, args)
    if args.client is None:
        raise usage("--client is needed (a round is (client, table, round))")
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
    out_file = None if args.out is None else writable_file(args.out, "--out")
    from rng_service.rpc.log_servicer import LogClient

    with LogClient(
        args.target, tls=tls, timeout=args.timeout, origin=origin.origin,
        origin_from=origin.source,
    ) as client:  # fmt: skip
        tree = reading_tree(shared, args, client, verifiers=verifiers, origin=origin, kept=kept)
        head: VerifiedHead | None = None if tree is None else tree[0]
        note, witnessed = ("", None) if tree is None else (tree[1], tree[2])
        size = args.tree_size if head is None else head.checkpoint.size
        looked_up: dict[int, ProvenItem] = {}

        def proven(page: ProvenPage, what: str) -> list[LogEntry]:
            nonlocal head, size, note
            if head is None:
                head = _live_head(
                    shared, client, page.checkpoint, target=args.target, verifiers=verifiers,
                    origin=origin, kept=kept,
                )  # fmt: skip
                size, note = head.checkpoint.size, page.checkpoint
            _same_tree(page, head, what)
            if page.truncated:
                raise usage(f"{what}: more than 1000 entries; that is not one game round")
            items = _items(page)
            looked_up.update((item.index, item) for item in items)
            return prove_entries(items, head, what=f"{args.target}'s answer to {what}")

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
        if head is None:  # not reached: a head was verified above
            raise RuntimeError("no verified checkpoint")
        # The table's whole chain as of this checkpoint: with a committed map, walked back
        # from the proven head, so every entry of the rounds is found by its signed bytes.
        live = read_chain(
            shared, args, client, table_id=table, whose=args.client, first_seq=1,
            verifiers=verifiers, origin=origin, kept=kept, tree=(head, note, witnessed),
        )  # fmt: skip
    if live.committed is not None:
        found, rounds = _from_chain(live.committed.chain, found, rounds, args.session)
        chain: Sequence[LogEntry] = live.committed.chain
    else:
        chain = live.entries if found and all(found.values()) else ()
    bounds = span_of(found)
    span = [] if bounds is None else [
        e for e in chain if e.table_seq is not None and bounds[0] <= e.table_seq <= bounds[1]
    ]  # fmt: skip
    report = judge_dispute(
        client=args.client, table_id=table, found=found, span=span, sessions=args.session
    )
    if out_file is not None:
        _save_proof(shared, out_file, live, rounds, args.session, looked_up)
    return _dispute_output(
        args, report,
        f"proven in the checkpoint of tree size {head.checkpoint.size} signed by "
        f"{_signers(head)}" + (f" (saved to {args.out})" if args.out else ""),
        live=live,
    )  # fmt: skip


def _from_chain(
    chain: Sequence[LogEntry],
    found: Mapping[str, Sequence[LogEntry]],
    rounds: list[str],
    sessions: Sequence[str],
) -> tuple[dict[str, list[LogEntry]], list[str]]:
    """The rounds' entries as the committed chain holds them (every one, by its signed
    bytes), with the format 1 entries the lookups found (in no chain); the rounds of the
    disputed sessions added. An entry a lookup proved in the log that claims a place in the
    chain but is not on it is a second signed entry of that place: a failure."""
    on_chain = {e.index for e in chain}
    for round_id, entries in found.items():
        for entry in entries:
            if entry.table_seq is not None and entry.index not in on_chain:
                raise VerificationFailure(
                    f"log index {entry.index} (seq {entry.table_seq} of round {round_id!r}) is "
                    "in the log, but not on the table's chain walked back from its committed "
                    "head: two signed entries claim one place in the chain",
                    index=entry.index,
                )
    rounds = list(rounds)
    for entry in chain:
        if entry.session_id and entry.session_id in sessions and entry.round_id not in rounds:
            rounds.append(entry.round_id)
    out: dict[str, list[LogEntry]] = {}
    for round_id in rounds:
        unchained = [e for e in found.get(round_id, ()) if e.table_seq is None]
        out[round_id] = sorted(
            [*unchained, *(e for e in chain if e.round_id == round_id)], key=lambda e: e.index
        )
    return out, rounds


def _save_proof(
    shared: Shared,
    out_file: Path,
    live: LiveChain,
    rounds: Sequence[str],
    sessions: Sequence[str],
    looked_up: Mapping[int, ProvenItem],
) -> None:
    """``--out``: the table proof file (a log with a committed map only)."""
    committed = live.committed
    if committed is None:
        raise shared.usage_error(
            f"--out: nothing saved: the log has no committed map at tree size "
            f"{live.head.checkpoint.size} (its newest entry is of format 1 or 2), so there is "
            "no proof of completeness to save; dispute --against a full export instead"
        )
    on_chain = {item.index for item in live.items}
    unchained = tuple(
        item for index, item in sorted(looked_up.items())
        if index not in on_chain and LogEntry.decode(item.data).table_seq is None
    )  # fmt: skip
    saved = TableProofFile(
        origin=live.head.checkpoint.origin, client=live.client, table_id=live.table_id,
        first_seq=1, tree_size=live.head.checkpoint.size, checkpoint=live.note,
        root=committed.root, proof=committed.proof, items=live.items, rounds=tuple(rounds),
        sessions=tuple(sessions), extra=unchained,
    )  # fmt: skip
    shared.write_atomically(out_file, lambda fh: write_table_proof(fh, saved))


def _dispute_saved(shared: Shared, args: argparse.Namespace) -> int:
    """``rng-audit dispute FILE``: a saved table proof checked with the keys alone; the
    rounds (``--round``, ``--request-id``, ``--session``, else the saved ones) answered from
    the chain it proves."""
    usage = shared.usage_error
    if args.tree_size:
        raise usage("--tree-size is for --target")
    verifiers = shared.verifiers(args.key)
    origin = shared.pinned(verifiers, args.origin)
    try:
        with shared.export_lines(args.proof) as lines:
            saved = read_table_proof(lines)
    except HistoryFormatError as e:
        raise usage(f"table proof {args.proof}: {e}") from e
    for option, value, there in (("--client", args.client, saved.client),
                                 ("--table", args.table, saved.table_id)):  # fmt: skip
        if value is not None and value != there:
            raise usage(f"{option} {value!r}, but the file is of {there!r}")
    live, extra = check_saved(shared, args, saved, args.proof, verifiers, origin)
    if live.committed is None:  # not reached: check_saved proves the map
        raise RuntimeError("no committed map")
    chain = live.committed.chain
    rounds = list(dict.fromkeys(args.round))
    for request_id in args.request_id:
        match = [e for e in (*chain, *extra) if e.request_id == request_id]
        if not match:
            raise VerificationFailure(
                f"request {request_id!r} is not in the chain of table {saved.table_id!r} that "
                f"{args.proof} proves complete"
            )
        if match[0].round_id not in rounds:
            rounds.append(match[0].round_id)
    sessions = list(args.session)
    if not rounds and not sessions:
        rounds, sessions = list(saved.rounds), list(saved.sessions)
    lookups = {r: [e for e in extra if e.round_id == r] for r in rounds}
    found, rounds = _from_chain(chain, lookups, rounds, sessions)
    bounds = span_of(found)
    span = [] if bounds is None else [
        e for e in chain if e.table_seq is not None and bounds[0] <= e.table_seq <= bounds[1]
    ]  # fmt: skip
    report = judge_dispute(
        client=saved.client, table_id=saved.table_id, found=found, span=span, sessions=sessions
    )
    return _dispute_output(
        args, report,
        f"proven in the checkpoint of tree size {live.head.checkpoint.size} signed by "
        f"{_signers(live.head)} (saved in {args.proof})",
        live=live,
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
    exported = _verified_export(shared, args, verifiers, origin, kept)
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
    return _dispute_output(
        args, report, exported.proven_by("every entry of the rounds found by its signed bytes"),
        exported=exported,
    )  # fmt: skip
