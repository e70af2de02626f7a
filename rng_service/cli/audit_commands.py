"""``rng-audit``'s commands (:mod:`rng_service.cli.audit` holds the parser and the exit
statuses): ``export``, ``verify``, ``verify-receipt``, ``consistency`` and ``profiles``, and the
helpers they and the table commands (:mod:`rng_service.cli.tables`) share: the keys and origin
to pin, witness cosignature checks, export files written atomically. They do the I/O around the
pure verifier :mod:`rng_service.audit` (docs/auditing.md).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from rng_service.audit import (
    ConsistencyFile,
    ExportReader,
    ExportReport,
    PinnedOrigin,
    ReceiptFieldError,
    VerificationFailure,
    VerifiedHead,
    WitnessFailure,
    WitnessReport,
    check_consistency,
    check_extends,
    check_receipt_against_export,
    check_receipt_against_head,
    check_witnesses,
    consistency_to_json,
    open_head,
    pinned_origin,
    read_receipt,
    verify_export,
    write_export,
)
from rng_service.cli.support import (
    EXIT_NOT_CHECKED,
    EXIT_OK,
    Output,
    Progress,
    UsageError,
    client_tls,
    verifier_keys,
    writable_file,
)
from rng_service.cli.text import count
from rng_service.cli.witness_options import (
    max_witness_age,
    now_seconds,
    print_witnesses,
    witness_keys,
)
from rng_service.errors import IntegrityError, InvalidArgument, RngServiceError
from rng_service.log.note import Checkpoint, MalformedNote, NoteVerifier, parse_note
from rng_service.log.receipt import verify_receipt
from rng_service.outcomes.profiles import builtin_profile_names, load_builtin_profile
from rng_service.settlement.documents import Document, document_from_canonical, parse_document

if TYPE_CHECKING:
    from rng_service.rpc.client import ClientTls
    from rng_service.storage.base import CosignatureRecord

__all__ = [
    "FAST_NOT_CHECKED",
    "RECEIPT_NOT_CHECKED",
    "TRUNCATION_NOT_CHECKED",
    "truncation_not_checked",
    "verify_export_file",
]

_PAGE = 1000


def _verifiers(items: Sequence[str]) -> list[NoteVerifier]:
    return verifier_keys(items, "--key")


def _pinned(verifiers: Sequence[NoteVerifier], origin: str | None) -> PinnedOrigin:
    try:
        return pinned_origin(verifiers, origin)
    except InvalidArgument as e:
        raise UsageError(str(e)) from e


FAST_NOT_CHECKED = (
    "NOT CHECKED: the entries' own bytes (--fast): their canonical form and format, the table "
    "chains, the committed table map roots and the round rules. A changed entry is still caught "
    "by the leaf hashes, the tree and the signatures (located only between two checkpoints); "
    "verify without --fast for the rest (docs/auditing.md)."
)
TRUNCATION_NOT_CHECKED = (
    "NOT CHECKED: truncation. No kept checkpoint (--checkpoint) and no checkpoint cosigned by "
    "enough witnesses (--witness, --min-witnesses) covers the newest of {what}, so nothing "
    "here shows whether the log is longer: a copy cut back to an older checkpoint (its newest "
    "entries and checkpoints dropped), or regrown from one, verifies the same. Keep the newest "
    "checkpoint of each audit and pass it with --checkpoint next time, or verify an export "
    "that ends at a witnessed checkpoint (rng-audit export --witnessed) with --witness "
    "(docs/auditing.md)."
)

RECEIPT_NOT_CHECKED = (
    "NOT CHECKED: that the log still holds this entry. Offline, only the receipt's own "
    "signed checkpoint is checked; whether the log was cut back or forked since needs "
    "--target (the live log) or --against (an export), with --checkpoint "
    "(docs/auditing.md)."
)


def _read_text(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot read {what} {path}: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise UsageError(f"{what} {path} is not UTF-8 text") from e


@contextlib.contextmanager
def _export_lines(path: str) -> Iterator[Iterator[str]]:
    try:
        fh = open(path, encoding="utf-8")  # noqa: SIM115 - closed by the context manager
    except OSError as e:
        raise UsageError(f"cannot read export {path}: {e.strerror}") from e
    with fh:

        def lines() -> Iterator[str]:
            number = 0
            try:
                for number, line in enumerate(fh, 1):  # noqa: B007 - used in the except
                    yield line
            except UnicodeDecodeError as e:
                raise UsageError(f"export {path}: line {number + 1} is not UTF-8") from e

        yield lines()


def _client_tls(args: argparse.Namespace, target: str | None) -> ClientTls | None:
    """The ``--ca/--cert/--tls-key`` files as mTLS material for ``--target``, or None
    (plaintext)."""
    if target is None and any((args.ca, args.cert, args.tls_key)):
        raise UsageError("--ca, --cert and --tls-key are for --target (a running service)")
    return client_tls(args.ca, args.cert, args.tls_key)


def _export_lines_total(path: str) -> int | None:
    """The lines an export's header declares (itself, its checkpoints and entries), for
    progress only: None if unreadable (the verifier reports what is wrong with the file)."""
    try:
        with open(path, encoding="utf-8") as fh:
            header = json.loads(fh.readline())
        return 1 + int(header["checkpoints"]) + int(header["tree_size"])
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _origin_of(note: bytes | str) -> tuple[str, int]:
    text = note.encode("utf-8") if isinstance(note, str) else note
    checkpoint = Checkpoint.parse(parse_note(text).text)
    return checkpoint.origin, checkpoint.size


def _write_atomically(out: Path, write: Callable[[IO[str]], object]) -> None:
    directory = out.parent if str(out.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise UsageError(f"--out: cannot write in {directory}: {e.strerror}") from e
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed (allowed: a whole number >= 1)")
    return value


def _cmd_export(args: argparse.Namespace) -> int:
    if args.min_witnesses is not None and not args.witnessed:
        raise UsageError("--min-witnesses is for --witnessed (where the export ends)")
    out = writable_file(args.out, "--out")  # before anything is read from the log
    tls = _client_tls(args, args.target)
    if args.db is not None:
        from rng_service.storage.sqlite import SqliteStorage

        if not Path(args.db).is_file():
            raise UsageError(f"--db: {args.db} does not exist")
        storage = SqliteStorage(args.db, read_only=True)
        try:
            stored = storage.checkpoints()
            if not stored:
                raise UsageError(f"--db: {args.db} has no published checkpoint to export")
            from rng_service.writer.publisher import cosigned_note

            cosignatures: dict[int, list[CosignatureRecord]] = {}
            for record in storage.cosignatures():
                cosignatures.setdefault(record.size, []).append(record)
            notes = [
                (cosigned_note(c.note, cosignatures.get(c.size, [])).decode("utf-8"),
                 c.timestamp_ns)
                for c in stored
            ]  # fmt: skip
            origin, size = _origin_of(stored[-1].note)
            _asked_log(args.origin, [n for n, _ in notes], f"--db {args.db}")
            if args.witnessed:
                notes, size = _witnessed_end(notes, args.min_witnesses)

            def entries() -> Iterator[tuple[int, bytes, bytes]]:
                for start in range(0, size, _PAGE):
                    for r in storage.entries(start, min(size, start + _PAGE)):
                        yield r.index, r.leaf_hash, r.data

            with Progress("exporting", size) as progress:
                _write_atomically(
                    out,
                    lambda fh: write_export(
                        fh, origin=origin, checkpoints=notes, entries=progress.wrap(entries()),
                        tree_size=size,
                    ),
                )  # fmt: skip
            total = storage.tree_size()
        finally:
            storage.close()
    else:
        from rng_service.rpc.log_servicer import LogClient

        with LogClient(args.target, tls=tls, origin=args.origin, origin_from="--origin") as client:
            notes = client.published_checkpoints()
            latest = client.latest_checkpoint()
            _asked_log(args.origin, [latest, *(n for n, _ in notes)], args.target)
            origin, size = _origin_of(latest)
            if all(_origin_of(n)[1] != size for n, _ in notes):
                notes.append((latest, 0))
            total = size
            if args.witnessed:
                notes, size = _witnessed_end(notes, args.min_witnesses)
            progress = Progress("exporting", size)
            with progress:
                _write_atomically(
                out,
                    lambda fh: write_export(
                        fh,
                        origin=origin,
                        checkpoints=notes,
                        entries=progress.wrap(e for s in range(0, size, _PAGE)
                                              for e in client.entries(s, min(size, s + _PAGE))),
                        tree_size=size,
                    ),
                )  # fmt: skip
    wait = "witnessed" if args.witnessed else "published"
    print(
        f"exported {count(size, 'entry', 'entries')} and {count(len(notes), 'checkpoint')} "
        f"of {origin} to {out}"
        + (
            ", ending at the newest checkpoint "
            + count(args.min_witnesses or 1, "witness", "witnesses")
            + " cosigned"
            if args.witnessed
            else ""
        )
        + (
            f" ({count(total - size, 'newer entry', 'newer entries')} "
            f"{'waits' if total - size == 1 else 'wait'} for the next {wait} checkpoint)"
            if total > size
            else ""
        )
    )
    return 0


def _asked_log(asked: str | None, notes: Sequence[str], where: str) -> None:
    """``export --origin``: every checkpoint ``where`` gave must be of the log asked for (read,
    not verified: ``verify`` checks the signatures), else :class:`VerificationFailure` naming
    both logs; nothing is written."""
    if asked is None:
        return
    for note in notes:
        origin, size = _origin_of(note)
        if origin != asked:
            raise VerificationFailure(
                f"{where} answered with a checkpoint (tree size {size}) of log {origin!r}, not "
                f"of the log asked for {asked!r} (--origin): nothing written"
            )


def _cosigners(note: str) -> int:
    """How many distinct keys carry a cosignature-shaped line (C2SP tlog-cosignature: an 8-byte
    time and a 64-byte Ed25519 signature; a log's own signature is 64 bytes) on ``note``. Only
    to choose where ``export --witnessed`` ends: ``verify --witness`` checks each one."""
    return len({(s.name, s.key_id) for s in parse_note(note.encode("utf-8")).signatures
                if len(s.signature) == 72})  # fmt: skip


def _witnessed_end(
    notes: list[tuple[str, int]], min_witnesses: int | None
) -> tuple[list[tuple[str, int]], int]:
    """``export --witnessed``: the checkpoints up to the newest one ``min_witnesses`` (default
    1) witnesses cosigned, and its size; :class:`WitnessFailure` if none is."""
    wanted = 1 if min_witnesses is None else min_witnesses
    sizes = [(_origin_of(n)[1], _cosigners(n)) for n, _ in notes]
    witnessed = [size for size, cosigners in sizes if cosigners >= wanted]
    if not witnessed:
        raise WitnessFailure(
            "no published checkpoint carries cosignatures of "
            + count(wanted, "witness", "witnesses")
            + f" yet (the most any has is {max((c for _, c in sizes), default=0)}): nothing "
            "written. The log asks its witnesses at every round (witnessing.interval_seconds)"
        )
    end = max(witnessed)
    return [n for n, s in zip(notes, sizes, strict=True) if s[0] <= end], end


def verify_export_file(
    args: argparse.Namespace,
    path: str,
    verifiers: Sequence[NoteVerifier],
    origin: PinnedOrigin,
    kept: Sequence[tuple[str, str]],
    *,
    label: str,
    now: int | None = None,
    check_entries: bool = True,
    allow_empty: bool = False,
) -> ExportReport:
    """Verifies the export file ``path`` in full (:func:`verify_export`), with the kept
    checkpoints and the witness options of ``args`` (``--witness``, ``--min-witnesses``,
    ``--max-witness-age``, judged at ``now``, default the injected clock), progress on a
    terminal: what ``verify`` runs, and ``table-history`` and ``dispute`` ``--against``."""
    witnesses, min_witnesses = witness_keys(args)
    max_age = max_witness_age(args)
    progress = Progress(label, _export_lines_total(path), unit="lines")
    with _export_lines(path) as lines, progress:
        return verify_export(
            progress.wrap(lines),
            verifiers,
            kept=kept,
            check_entries=check_entries,
            origin=origin,
            allow_empty=allow_empty,
            witnesses=witnesses,
            min_witnesses=min_witnesses,
            now=now_seconds(args) if now is None else now,
            max_witness_age=max_age,
        )


def truncation_not_checked(report: ExportReport, what: str) -> list[str]:
    """The truncation NOT CHECKED line (:data:`TRUNCATION_NOT_CHECKED`, of ``what``: the
    export's entries) unless a kept or witnessed checkpoint covers the export's newest entry
    (:func:`_truncation_checked`); else nothing."""
    return [] if _truncation_checked(report) else [TRUNCATION_NOT_CHECKED.format(what=what)]


def _cmd_verify(args: argparse.Namespace) -> int:
    _client_tls(args, None)  # refuses --ca/--cert/--key: verify reads files only
    verifiers = _verifiers(args.key)
    origin = _pinned(verifiers, args.origin)
    witness_keys(args)  # bad witness options: exit 2 before the export is read
    max_witness_age(args)
    kept = _kept(args.checkpoint)
    now = now_seconds(args)
    report = verify_export_file(
        args, args.export, verifiers, origin, kept, label="verifying", now=now,
        check_entries=not args.fast, allow_empty=args.allow_empty,
    )  # fmt: skip
    newest = max((h.checkpoint.size for h in report.heads), default=0)
    signers = sorted({name for h in report.heads for name in h.key_names})
    print(
        f"OK: {count(report.tree_size, 'entry', 'entries')} of {report.origin}, root "
        f"{report.root_hash.hex()}; {count(len(report.heads), 'checkpoint')} (newest: tree size "
        f"{newest}) verified, signed by "
        f"{', '.join(signers) or 'nobody'}, all consistent with the entries"
        + (f" and with {report.kept} kept checkpoint(s)" if report.kept else "")
        + (" (entries not decoded: --fast)" if args.fast else "")
        + (" (an empty export: --allow-empty)" if report.tree_size == 0 else "")
    )
    if report.chains is not None:
        # docs/log-format.md, "Verifying an export" (step 3)
        print(
            f"table chains: {report.chains} followed, each unbroken; round rules held across "
            f"the export: each slot of a round filled once, each request id logged once per "
            f"client, nothing after a void, Mega Fire Blaze in the rules' order"
        )
    _print_formats(report)
    not_checked: list[str] = []
    if args.fast:
        not_checked.append(FAST_NOT_CHECKED)
    witnessed = report.witnessed
    if witnessed is not None:
        print_witnesses(witnessed, now)
    not_checked += truncation_not_checked(report, f"this export's {report.tree_size} entries")
    return _not_checked(not_checked)


def _not_checked(lines: Sequence[str]) -> int:
    """Prints each NOT CHECKED line; the exit status: :data:`EXIT_NOT_CHECKED` (4) if there is
    any, the run proving less than all, else :data:`EXIT_OK` (docs/cli.md, convention 9)."""
    for line in lines:
        print(line)
    return EXIT_NOT_CHECKED if lines else EXIT_OK


def _print_formats(report: ExportReport) -> None:
    """Where the entry formats change, and the table map roots checked (docs/log-format.md,
    "Format 1 and format 2 in one log", "Table map")."""
    first, first_3 = report.first_format_2, report.first_format_3
    if first is not None and first > 0:
        what = (
            "format 3 (slots, table chains and committed table map roots)" if first == first_3
            else "format 2 (slots and table chains)"
        )  # fmt: skip
        print(
            f"entries 0 to {first - 1} are of entry format 1; {what} from entry {first} on, "
            f"where every table chain starts"
        )
    if first_3 is None or first is None:
        return
    if first_3 > first:
        print(
            f"entries {first} to {first_3 - 1} are of entry format 2; format 3 (committed "
            f"table map roots) from entry {first_3} on"
        )
    print(
        f"table map: rebuilt from the entries' heads in log order; the root committed by each "
        f"of the {count(report.map_roots or 0, 'format 3 entry', 'format 3 entries')} "
        f"recomputed and equal"
    )


def _truncation_checked(report: ExportReport) -> bool:
    """Whether a checkpoint from outside the export's own say covers its newest entry: one the
    auditor kept, or one K >= 1 witnesses cosigned. An older one does not: entries past it
    could be a regrown second history (docs/auditing.md, "Witnesses")."""
    size = report.tree_size
    kept = report.heads[len(report.heads) - report.kept :] if report.kept else ()
    if any(h.checkpoint.size >= size for h in kept):
        return True
    witnessed = report.witnessed
    return (
        witnessed is not None and witnessed.required >= 1 and witnessed.covering(size) is not None
    )


def _kept(paths: Sequence[str]) -> list[tuple[str, str]]:
    return [(f"checkpoint file {p}", _read_text(p, "checkpoint")) for p in paths]


def _cmd_verify_receipt(args: argparse.Namespace) -> int:
    tls = _client_tls(args, args.target)
    verifiers = _verifiers(args.key)
    origin = _pinned(verifiers, args.origin)
    witnesses, min_witnesses = witness_keys(args)
    max_age = max_witness_age(args)
    now = now_seconds(args)
    witnessed: WitnessReport | None = None
    if args.checkpoint and args.against is None and args.target is None:
        raise UsageError("--checkpoint needs --against or --target (what to compare it with)")
    kept = _kept(args.checkpoint)
    try:
        receipt = read_receipt(_read_text(args.receipt, "receipt"))
    except ReceiptFieldError as e:
        raise UsageError(f"receipt {args.receipt}: {e}") from e
    try:
        verified = verify_receipt(receipt, verifiers)
    except MalformedNote as e:
        raise UsageError(f"receipt {args.receipt}: field checkpoint: {e}") from e
    except IntegrityError as e:
        raise VerificationFailure(f"receipt {args.receipt}: {e}", index=receipt.index) from e
    origin.check(verified.checkpoint.origin, f"receipt {args.receipt}'s checkpoint")
    where = ""
    note = ""
    if args.against is not None:
        with _export_lines(args.against) as lines:
            report = verify_export(
                lines,
                verifiers,
                kept=kept,
                want_sizes=[receipt.tree_size],
                want_indices=[receipt.index],
                origin=origin,
                witnesses=witnesses,
                min_witnesses=min_witnesses,
                now=now,
                witness_cover=receipt.tree_size,
                max_witness_age=max_age,
            )
        check_receipt_against_export(receipt, verified, report)
        witnessed = report.witnessed
        where = f"; consistent with the export {args.against} (tree size {report.tree_size})"
        note = "".join(truncation_not_checked(report, f"the export's {report.tree_size} entries"))
    elif args.target is not None:
        from rng_service.rpc.log_servicer import LogClient

        with LogClient(
            args.target, tls=tls, origin=origin.origin, origin_from=origin.source
        ) as client:
            if witnesses:
                # The newest checkpoint the witnesses cosigned: the receipt is checked inside
                # the tree they vouched for.
                fetched = client.latest_checkpoint(witnessed=True)
                source = f"the latest witnessed checkpoint of {args.target}"
            else:
                fetched = client.latest_checkpoint()
                source = f"the latest checkpoint of {args.target}"
            head = open_head(fetched, verifiers, source=source, origin=origin.origin)
            if witnesses:
                witnessed = check_witnesses(
                    [(source, fetched.encode("utf-8"))], witnesses,
                    min_witnesses=min_witnesses, now=now, cover=receipt.tree_size,
                    cover_what=f"receipt {args.receipt} (tree size {receipt.tree_size})",
                    max_age_seconds=max_age,
                )  # fmt: skip
            size = head.checkpoint.size
            for source, text in kept:
                _check_kept_against_head(
                    open_head(text, verifiers, source=source, origin=origin.origin),
                    head,
                    client.consistency_proof,
                )
            if receipt.tree_size > size:
                raise VerificationFailure(
                    f"the receipt's tree size {receipt.tree_size} is beyond {head.source}'s "
                    f"size {size}: the log has lost entries, or this is another log"
                )
            check_receipt_against_head(
                receipt,
                verified,
                head,
                consistency_proof=client.consistency_proof(receipt.tree_size, size),
                inclusion_proof=client.inclusion_proof(receipt.index, size),
            )
        where = f"; consistent with the live log at {args.target} (tree size {size})"
        if kept:
            where += f" and with {len(kept)} kept checkpoint(s)"
    else:
        if witnesses:
            try:
                witnessed = check_witnesses(
                    [(f"receipt {args.receipt}'s checkpoint", receipt.checkpoint.encode("utf-8"))],
                    witnesses, min_witnesses=min_witnesses, now=now, cover=receipt.tree_size,
                    max_age_seconds=max_age,
                )  # fmt: skip
            except WitnessFailure as e:
                raise WitnessFailure(
                    f"{e}. A receipt carries the checkpoint the log signed when it issued the "
                    f"outcome, before any witness saw it: check it against the witnessed log "
                    f"with --target (or an export with --against)"
                ) from e
        note = RECEIPT_NOT_CHECKED
    entry = verified.entry
    print(
        f"OK: entry {entry.index} ({entry.kind}, table {entry.table_id}, round "
        f"{entry.round_id}) is in the log of size {verified.checkpoint.size} "
        f"({verified.checkpoint.origin}), signed by {', '.join(verified.key_names)}{where}"
    )
    if entry.profile_sha256:
        document = _known_documents(()).get(entry.profile_sha256)
        print(
            f"drawn under profile {entry.profile_sha256}: "
            + (
                "not a shipped profile (rng-audit profiles resolves it)"
                if document is None
                else f"{document.id.name} v{document.id.version}, {_example_flag(document)}"
            )
        )
    if witnessed is not None:
        print_witnesses(witnessed, now)
    return _not_checked([note] if note else [])


def _old_checkpoint(path: str) -> tuple[str, str]:
    """``--old``: a receipt file (its checkpoint) or a signed checkpoint file, and what it is."""
    text = _read_text(path, "--old")
    if text.lstrip().startswith("{"):
        try:
            return read_receipt(text).checkpoint, f"the checkpoint of receipt {path}"
        except ReceiptFieldError as e:
            raise UsageError(f"--old {path}: {e}") from e
    return text, f"checkpoint file {path}"


def _cmd_consistency(args: argparse.Namespace) -> int:
    from rng_service.rpc.log_servicer import LogClient

    output = Output(args.json)
    out = writable_file(args.out, "--out")  # everything local is checked before the call
    tls = _client_tls(args, args.target)
    verifiers = _verifiers(args.key)
    origin = _pinned(verifiers, args.origin)
    old_note, old_source = _old_checkpoint(args.old)
    old = open_head(old_note, verifiers, source=old_source, origin=None)
    origin.check(old.checkpoint.origin, old_source)
    with LogClient(args.target, tls=tls, origin=origin.origin, origin_from=origin.source) as client:
        new_note = client.latest_checkpoint(witnessed=args.witnessed)
        source = f"the latest{' witnessed' if args.witnessed else ''} checkpoint of {args.target}"
        new = open_head(new_note, verifiers, source=source, origin=origin.origin)
        if old.checkpoint.size > new.checkpoint.size:
            raise VerificationFailure(
                f"{old_source} is for tree size {old.checkpoint.size}, beyond {source}'s size "
                f"{new.checkpoint.size}"
                + (": not witnessed yet (try again after the next witnessing round)"
                   if args.witnessed else ": the log was cut back, or this is another log")
            )  # fmt: skip
        proof = client.consistency_proof(old.checkpoint.size, new.checkpoint.size)
    # What is written is checked first, exactly as a reader will check it.
    check_consistency(ConsistencyFile(old_note, new_note, tuple(proof)), verifiers, origin)
    _write_atomically(out, lambda fh: fh.write(consistency_to_json(old_note, new_note, proof)))
    output.result(
        {
            "file": str(out),
            "origin": new.checkpoint.origin,
            "old": {"source": old_source, "tree_size": old.checkpoint.size,
                    "root_hash": old.checkpoint.root_hash},
            "new": {"source": source, "tree_size": new.checkpoint.size,
                    "root_hash": new.checkpoint.root_hash, "witnessed": args.witnessed},
            "proof_hashes": len(proof),
        },
        f"wrote {out}: {source} (tree size {new.checkpoint.size}) extends {old_source} "
        f"(tree size {old.checkpoint.size}); {len(proof)} proof hashes",
    )  # fmt: skip
    return 0


def _check_kept_against_head(
    kept: VerifiedHead, head: VerifiedHead, proof: Callable[[int, int], list[bytes]]
) -> None:
    """A checkpoint the auditor kept must be a prefix of the live log's (RFC 9162 2.1.4.2)."""
    if kept.checkpoint.size <= head.checkpoint.size:
        check_extends(kept, head, proof(kept.checkpoint.size, head.checkpoint.size))
    else:
        check_extends(kept, head, [])  # names the cut back log


def _known_documents(files: Sequence[str]) -> dict[str, Document]:
    """Documents by SHA-256: the shipped example profiles and the given files (TOML, or the
    canonical JSON bytes ``GetProfile`` returns)."""
    known: dict[str, Document] = {}
    for name in builtin_profile_names():
        profile = load_builtin_profile(name)
        known[profile.id.sha256] = profile
    for path in files:
        data = Path(path).read_bytes()
        try:
            document = (
                document_from_canonical(data, path)
                if data.lstrip().startswith(b"{")
                else parse_document(data, Path(path).name)
            )
        except RngServiceError as e:
            raise UsageError(f"--profile {path}: {e}") from e
        known[document.id.sha256] = document
    return known


def _example_flag(document: Document) -> str:
    if document.example:
        return "EXAMPLE profile (example = true), not an approved one"
    return "not an example (example = false)"


def _cmd_profiles(args: argparse.Namespace) -> int:
    tls = _client_tls(args, args.target)
    used: dict[str, list[int]] = {}
    kinds: dict[str, set[str]] = {}
    entries = 0
    with _export_lines(args.export) as lines:
        reader = ExportReader(lines)
        log = reader.header.origin  # --target: GetProfile names the export's log
        for _ in reader.checkpoints():
            pass
        for _, index, _, data in reader.entry_rows():
            entries += 1
            entry = json.loads(data)
            sha = entry.get("profile_sha256") if isinstance(entry, dict) else None
            if sha:
                used.setdefault(sha, []).append(index)
                kinds.setdefault(sha, set()).add(str(entry.get("kind")))
    known = _known_documents(args.profile)
    fetched: dict[str, bytes] = {}
    if args.target is not None and any(sha not in known for sha in used):
        from rng_service.rpc.client import ClientError, RngClient

        with RngClient(args.target, tls=tls, origin=log) as client:
            for sha in used:
                if sha in known:
                    continue
                try:
                    _, canonical = client.profile(sha256=sha)
                except ClientError as e:
                    if e.code != "NOT_FOUND":
                        raise UsageError(f"GetProfile on {args.target}: {e}") from e
                    continue
                if hashlib.sha256(canonical).hexdigest() != sha:
                    raise VerificationFailure(
                        f"{args.target} served bytes for profile {sha} whose SHA-256 differs"
                    )
                known[sha] = document_from_canonical(canonical, f"GetProfile({sha[:16]})")
                fetched[sha] = canonical
    unresolved = 0
    print(f"{entries} entries; {sum(len(v) for v in used.values())} drawn under a profile")
    for sha, indexes in sorted(used.items(), key=lambda kv: kv[1][0]):
        listed = ", ".join(sorted(kinds[sha]))
        where = f"{len(indexes)} entries ({listed}), indexes {indexes[0]}..{indexes[-1]}"
        document = known.get(sha)
        if document is None:
            unresolved += 1
            print(f"profile {sha}: {where}: UNKNOWN (give its file with --profile, or --target)")
            continue
        flag = _example_flag(document)
        print(f"profile {sha}: {where}: {document.id.name} v{document.id.version}, {flag}")
        if args.save is not None and sha in fetched:
            out = Path(args.save) / f"{document.id.name}-v{document.id.version}-{sha[:16]}.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(fetched[sha])
    return 1 if unresolved else 0
