"""What ``rng-audit table-history`` and ``rng-audit dispute`` (:mod:`rng_service.cli.tables`)
share: their exit status for a live answer (:data:`FOUND_UNPROVEN`), the helpers
``rng_service.cli.audit`` lends them (:class:`Shared`), entries as text and JSON, and the
proven pages of a running service or a verified export they read (docs/auditing.md, "Table
histories and disputes").
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from rng_service.audit import (
    ExportReader,
    ExportReport,
    VerificationFailure,
    VerifiedHead,
    open_head,
)
from rng_service.audit.history import (
    ProvenItem,
    describe,
)
from rng_service.audit.verify import PinnedOrigin
from rng_service.cli.support import EXIT_NOT_CHECKED, Progress
from rng_service.log.entry import LogEntry
from rng_service.log.merkle import LEAF_PREFIX

if TYPE_CHECKING:
    from rng_service.rpc.log_servicer import LogClient, ProvenPage

__all__ = [
    "COMPLETENESS_NOT_CHECKED",
    "FOUND_UNPROVEN",
    "Shared",
    "UsageError",
    "VerifiedExport",
    "unchecked_and_witnessed",
]

FOUND_UNPROVEN = EXIT_NOT_CHECKED
"""Exit status of a live answer (``--target``, or a table-history file it saved): every entry
shown is proven in a signed checkpoint, but that none is missing rests on the store's index
(docs/cli.md, convention 9: the run proves less than all): not 0, which means all proven.
Until table heads are committed to the log, only a full export (``--against``) proves
completeness."""

COMPLETENESS_NOT_CHECKED = (
    "NOT CHECKED: that no entry {what} is missing. The log gave these entries by the store's "
    "index and has no committed map of table heads yet (entries of format 1 or 2): prove it "
    "against a full export (--against EXPORT)."
)
"""The NOT CHECKED line (and ``"not_checked"`` item) of a FOUND answer (exit status 4)."""


def unchecked_and_witnessed(
    exported: VerifiedExport | None, complete: bool, what: str, live_witnessed: str | None
) -> tuple[list[str], str | None]:
    """An answer's NOT CHECKED lines and the witnesses of its checkpoint: the export's, when it
    was answered against one; otherwise completeness ``what`` (e.g. "of these rounds") unless
    ``complete`` was proven, and ``live_witnessed`` (None when not read live)."""
    if exported is not None:
        return exported.not_checked, exported.witnessed
    return ([] if complete else [COMPLETENESS_NOT_CHECKED.format(what=what)]), live_witnessed


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
    witness_options: Callable[[argparse.ArgumentParser], None]
    """Adds ``--witness``, ``--min-witnesses`` and ``--max-witness-age`` to a parser."""
    witnessed_by: Callable[[argparse.Namespace, str, str, int], str | None]
    """``witnessed_by(args, source, note, size)``: with ``--witness``, the witnesses that
    cosigned ``note`` (else a WitnessFailure); None without ``--witness``."""
    verify_export: Callable[..., ExportReport]
    """``verify_export(args, path, verifiers, origin, kept, label=...)``: the export verified
    in full as ``verify`` does it, with ``--checkpoint`` and the witness options of ``args``."""
    truncation: Callable[[ExportReport, str], list[str]]
    """``truncation(report, what)``: ``verify``'s "NOT CHECKED: truncation" line unless a kept
    or witnessed checkpoint covers the export's newest entry; else nothing."""


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


@dataclass(frozen=True)
class VerifiedExport:
    """A full export verified as ``verify`` does it (tree, checkpoints, every chain), and
    what it could not prove: truncation, unless a kept (``--checkpoint``) or witnessed
    (``--witness``) checkpoint covers its newest entry (docs/cli.md, convention 9)."""

    path: str
    report: ExportReport
    not_checked: list[str]

    @property
    def size(self) -> int:
        return self.report.tree_size

    def proven_by(self, what: str) -> str:
        """Where the answer's entries are proven (said after "every one ...")."""
        heads = self.report.heads
        signers = ", ".join(sorted({n for h in heads for n in h.key_names}))
        kept = self.report.kept
        also = f", consistent with {kept} kept checkpoint(s)" if kept else ""
        return (
            f"in the verified export {self.path} ({self.size} entries, {len(heads) - kept} "
            f"checkpoints signed by {signers}{also}; {what})"
        )

    @property
    def witnessed(self) -> str | None:
        """The witnessed checkpoint covering the newest entry, and its cosigners (``--witness``
        with K >= 1), else None."""
        witnessed = self.report.witnessed
        best = None if witnessed is None or witnessed.required < 1 else witnessed.best
        if best is None:
            return None
        names = ", ".join(v.witness.name for v in best.cosignatures)
        return f"checkpoint of tree size {best.size} cosigned by {names}"


def _verified_export(
    shared: Shared,
    args: argparse.Namespace,
    verifiers: Sequence[Any],
    origin: PinnedOrigin,
    kept: Sequence[tuple[str, str]],
) -> VerifiedExport:
    """Verifies the whole export ``--against`` (tree, checkpoints, every chain; with the kept
    checkpoints and the witness options), and names truncation NOT CHECKED unless a kept or
    witnessed checkpoint covers its newest entry."""
    path: str = args.against
    report = shared.verify_export(args, path, verifiers, origin, kept, label=f"verifying {path}")
    return VerifiedExport(
        path, report, shared.truncation(report, f"the export's {report.tree_size} entries")
    )


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
