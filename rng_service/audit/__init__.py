"""Auditing the log without the service: the export format and the offline verifier.

Pure code over bytes and text (no database, no gRPC): :mod:`~rng_service.audit.export` owns the
``rng-audit-export/v3`` file format; :mod:`~rng_service.audit.verify` checks an export's C2SP
signed checkpoints against its RFC 6962 tree, and receipts, and holds the reference check of an
entry (the one to read); :mod:`~rng_service.audit.walk` is its one pass over the entries
(faster with :mod:`~rng_service.audit.fast_check`), :mod:`~rng_service.audit.rounds_check` the
round rules; :mod:`~rng_service.audit.witnesses` checks witness cosignatures (C2SP
tlog-cosignature); table histories and disputes are :mod:`~rng_service.audit.history` and
:mod:`~rng_service.audit.dispute`; :mod:`~rng_service.audit.consistency` the consistency files
and :mod:`~rng_service.audit.link` the verify page's receipt links. The ``rng-audit`` command
does the I/O. See docs/auditing.md.
"""

from rng_service.audit.consistency import (
    CONSISTENCY_FORMAT,
    ConsistencyFile,
    check_consistency,
    check_extends,
    consistency_to_json,
    read_consistency,
)
from rng_service.audit.export import (
    EXPORT_FORMAT,
    ExportCheckpoint,
    ExportEntry,
    ExportFormatError,
    ExportHeader,
    ExportReader,
    MissingEntries,
    write_export,
)
from rng_service.audit.fast_check import EntryChecker
from rng_service.audit.receipts import ReceiptFieldError, read_receipt
from rng_service.audit.verify import (
    ExportReport,
    PinnedOrigin,
    VerificationFailure,
    VerifiedHead,
    check_receipt_against_export,
    check_receipt_against_head,
    open_head,
    pinned_origin,
    verify_export,
)
from rng_service.audit.witnesses import (
    WitnessedCheckpoint,
    WitnessFailure,
    WitnessReport,
    check_witnesses,
)

__all__ = [
    "CONSISTENCY_FORMAT",
    "EXPORT_FORMAT",
    "ConsistencyFile",
    "EntryChecker",
    "ExportCheckpoint",
    "ExportEntry",
    "ExportFormatError",
    "ExportHeader",
    "ExportReader",
    "ExportReport",
    "MissingEntries",
    "PinnedOrigin",
    "ReceiptFieldError",
    "VerificationFailure",
    "VerifiedHead",
    "WitnessFailure",
    "WitnessReport",
    "WitnessedCheckpoint",
    "check_consistency",
    "check_extends",
    "check_receipt_against_export",
    "check_receipt_against_head",
    "check_witnesses",
    "consistency_to_json",
    "open_head",
    "pinned_origin",
    "read_consistency",
    "read_receipt",
    "verify_export",
    "write_export",
]
