"""The store's own check: the stored log must be the log that was signed.

Owns the check that the service runs at start-up (incremental) and ``rng-service check-store``
runs in full, over a store read through the :class:`~rng_service.storage.base.LogStorage`
Protocol only (entries as opaque bytes, complete-subtree nodes, signed checkpoint notes):

1. indexes without a gap: every index below the stored tree size has its entry;
2. every entry's RFC 6962 leaf hash ``SHA-256(0x00 || bytes)`` (RFC 6962 section 2.1) equals
   its stored leaf hash, and every lookup column (index, client, request id, kind, table,
   round, session, time, slot, table sequence number) equals the field of its signed bytes
   (:func:`rng_service.writer.columns.check_record`), so that no lookup can select an entry
   by what it is not, nor miss it by what it is;
3. every stored complete-subtree node is the hash the entries give (the tree is recomputed
   from the entries' bytes, as :class:`~rng_service.writer.tree.MerkleTree` appends them), and
   no node exists for a leaf beyond the stored tree;
4. the table map (issue 40; docs/log-format.md, "Table map"): the heads the entries' signed
   bytes give, in log order (:class:`~rng_service.writer.heads.MapReplay`), reproduce the
   root every format 3 entry carries (the first wrong one is named), every chain link follows
   (``table_seq`` and ``table_prev``), format 3 never goes back to 2, and the store's
   ``table_map`` rows are those heads (the first table whose row differs is named);
5. every stored checkpoint is a C2SP signed note that one of the configured keys signed (the
   active, co-signing and retired keys: C2SP signed-note), a C2SP tlog-checkpoint of the
   configured origin, for the size its row says, whose root is the root the entries give at
   that size; so all stored checkpoints are prefixes of one tree, i.e. pairwise consistent
   (RFC 9162 section 2.1.4); and no checkpoint is beyond the stored tree.

**Incremental.** After a successful check the caller records the newest stored checkpoint
that passed (its signed note, meta key :data:`VERIFIED_CHECKPOINT_KEY`). The next check
re-verifies that note's signature and that the stored tree's frontier nodes reproduce its
root (O(log n) node reads), and then checks only what lies beyond its size: the entries and
nodes from that size on, and the checkpoints of that size and above. A number kept in the
same database would prove nothing; a signed note does, as long as the stored nodes reproduce
it. A record beyond the stored tree means that entries were deleted (or the store was
restored from an older backup): that refuses the start at once. A record that is missing or
does not verify, or whose root the stored tree no longer reproduces, makes the check run in
full, which then names the first bad index or checkpoint. The table map resumes from the heads
as of the record's size (``LogStorage.map_heads_at``), which must reproduce the root signed in
the entry before it; if they do not, or that entry carries no root while a newer one does (the
first checks after an upgrade to format 3), the check runs in full.

**Keys.** The check also records which configured keys signed the checkpoints it verified (meta
key :data:`CHECKPOINT_SIGNERS_KEY`, each as ``name+key ID``, accumulated across starts). The
incremental check never reads the checkpoints below the recorded one again, so without that
record a start whose configuration no longer names a key that signed some of them (a rotation
without ``log.retired_keys``) would pass, and the service would serve checkpoints that its own
check, and ``GetPublicKeys``, cannot verify. A recorded signer that no configured key matches
refuses the check with :class:`UnconfiguredSigner`; a missing record makes the check run in
full (which verifies every stored checkpoint with the configured keys). The record only
names keys: deleting it costs a full check, adding to it refuses a start, and neither proves
or hides anything.

What a store cannot catch by itself: a consistent rollback (the newest entries, their nodes,
their checkpoints and the record all deleted or replaced by older ones) leaves a store that is
a valid, shorter log. Only a checkpoint kept outside the database (by auditors, by clients in
their receipts, or by witnesses that cosign checkpoints) shows it (docs/operations/running.md):
:func:`check_kept` compares such checkpoints with a checked store (``check-store
--checkpoint``).

The check parses each entry's JSON to compare its columns (format 1 and 2 alike; the canonical
form is the offline verifier's concern) and writes nothing; :func:`record_verified` is the one
write, made by the start-up step.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from dataclasses import dataclass

from rng_service.errors import IntegrityError, InvalidArgument
from rng_service.log.merkle import leaf_hash as merkle_leaf_hash
from rng_service.log.merkle import verify_inclusion
from rng_service.log.note import Checkpoint, MalformedNote, NoteVerifier, open_note, parse_note
from rng_service.log.table_map import MapHead, TableMap
from rng_service.storage.base import CheckpointRecord, LogStorage, NodeRecord
from rng_service.writer.columns import LookupIntegrityError, check_record, signed_fields
from rng_service.writer.heads import MapReplay, TableMapMismatch, describe_difference
from rng_service.writer.tree import MerkleTree

__all__ = [
    "CHECKPOINT_SIGNERS_KEY",
    "VERIFIED_CHECKPOINT_KEY",
    "StoreCheckFailed",
    "StoreCheckReport",
    "UnconfiguredSigner",
    "check_kept",
    "check_store",
    "record_verified",
]

VERIFIED_CHECKPOINT_KEY = "verified_checkpoint"
"""Meta key of the signed note of the newest checkpoint the last successful check verified."""

CHECKPOINT_SIGNERS_KEY = "checkpoint_signers"
"""Meta key of the keys (``name+key ID`` lines, sorted) that signed the stored checkpoints the
checks verified."""

_PAGE = 4096


class StoreCheckFailed(IntegrityError):
    """The stored log is not the log that was signed: the message says what and where.

    ``index``: the first entry at fault (or where the fault's range starts), if known;
    ``checkpoint_size``: the tree size of the stored checkpoint at fault, if one is.
    """

    def __init__(
        self, message: str, *, index: int | None = None, checkpoint_size: int | None = None
    ) -> None:
        super().__init__(message)
        self.index = index
        self.checkpoint_size = checkpoint_size


class UnconfiguredSigner(StoreCheckFailed):
    """Stored checkpoints were signed by keys that no configured key is: a configuration
    fault (``log.retired_keys`` lacks a former key), not an edit of the store. ``keys``: the
    missing keys as ``name+key ID``."""

    def __init__(self, message: str, *, keys: Sequence[str]) -> None:
        super().__init__(message)
        self.keys = tuple(keys)


@dataclass(frozen=True, slots=True)
class StoreCheckReport:
    """What a successful :func:`check_store` established."""

    tree_size: int
    """Entries in the store (all of them checked, or proven by the verified record)."""
    start: int
    """First index checked entry by entry: 0 for a full check, else the record's size."""
    full: bool
    reason: str
    """Why the check was full or where it started, in words (for the log line)."""
    entries: int
    nodes: int
    checkpoints: int
    """Stored checkpoints (rows) checked."""
    newest: CheckpointRecord | None
    """The newest stored checkpoint verified (to record), or None if none was checked."""
    root: bytes
    """Root of the stored tree of ``tree_size`` entries."""
    seconds: float
    signers: frozenset[str] = frozenset()
    """Every key (``name+key ID``) known to have signed a stored checkpoint: the recorded ones
    and those of the checkpoints verified now (to record)."""
    tables: int = 0
    """Table chains in the map the check rebuilt (0 when it did not: no format 3 entry)."""
    map_roots: int = 0
    """Format 3 entries whose ``table_map`` root the check recomputed."""


def _when(timestamp_ns: int) -> str:
    seconds = timestamp_ns // 10**9
    try:
        return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return f"{timestamp_ns} ns"


def _describe(record: CheckpointRecord) -> str:
    return f"stored checkpoint of tree size {record.size} (published {_when(record.timestamp_ns)})"


def _signers(note: bytes, verifiers: Sequence[NoteVerifier]) -> set[str]:
    """The configured keys (``name+key ID``) with a signature line in ``note`` (after
    :func:`_open` verified it)."""
    known = {(v.name, v.key_id) for v in verifiers}
    return {
        f"{s.name}+{s.key_id:08x}"
        for s in parse_note(note).signatures
        if (s.name, s.key_id) in known
    }


def _open(
    note: bytes,
    verifiers: Sequence[NoteVerifier],
    *,
    origin: str,
    source: str,
    size: int | None = None,
) -> Checkpoint:
    """The checkpoint in ``note`` after checking its signature (C2SP signed-note) and origin;
    ``size``: the stored row's size, named by the failure."""
    try:
        opened = open_note(note, verifiers)
        checkpoint = Checkpoint.parse(opened.text)
    except MalformedNote as e:
        raise StoreCheckFailed(f"{source}: {e}", checkpoint_size=size) from e
    except IntegrityError as e:
        raise StoreCheckFailed(
            f"{source}: {e}. Its signature must verify with one of the configured keys "
            f"(log.key_file, log.cosign_key_file, log.retired_keys)",
            checkpoint_size=size,
        ) from e
    if checkpoint.origin != origin:
        raise StoreCheckFailed(
            f"{source} is a checkpoint of log {checkpoint.origin!r}, but log.origin is "
            f"{origin!r}: the store belongs to another log (or log.origin was changed)",
            checkpoint_size=size,
        )
    return checkpoint


class _Check:
    """One run of the check; see :func:`check_store`."""

    def __init__(
        self, storage: LogStorage, verifiers: Sequence[NoteVerifier], origin: str, page: int
    ) -> None:
        self.storage = storage
        self.verifiers = verifiers
        self.origin = origin
        self.page = page
        self.entries = 0
        self.nodes = 0
        self.checkpoints = 0
        self.newest: CheckpointRecord | None = None
        self.signers: set[str] = set()
        self.last_ok = 0  # the size of the last checkpoint that matched
        self.size = 0  # the stored tree size being checked
        #: The table map replayed from the entries checked (None: not checked, see run_map)
        self.replay: MapReplay | None = None
        self.map_roots = 0

    def new_tree(self, size: int) -> MerkleTree:
        # No node cache: the check reads each node once.
        return MerkleTree(
            size=size, get_nodes=self.storage.nodes, cache_min_level=64, recent_nodes=0
        )

    def check_checkpoints(self, records: Sequence[CheckpointRecord], root: bytes) -> None:
        """The stored checkpoints of one size, against the root the entries give there."""
        seen: set[bytes] = set()
        for record in records:
            where = _describe(record)
            if record.note not in seen:
                checkpoint = _open(
                    record.note, self.verifiers, origin=self.origin, source=where, size=record.size
                )
                self.signers |= _signers(record.note, self.verifiers)
                if checkpoint.size != record.size:
                    raise StoreCheckFailed(
                        f"{where}: its signed note is for tree size {checkpoint.size}: the "
                        f"row's size was changed",
                        checkpoint_size=record.size,
                    )
                if checkpoint.root_hash != root:
                    raise StoreCheckFailed(
                        f"{where} does not match the stored entries: its root is "
                        f"{checkpoint.root_hash.hex()}, the entries [0, {record.size}) hash to "
                        f"{root.hex()}. An entry in [{self.last_ok}, {record.size}) was changed, "
                        f"deleted or inserted together with its hashes, or the checkpoint is "
                        f"from a fork",
                        index=self.last_ok,
                        checkpoint_size=record.size,
                    )
                seen.add(record.note)
            self.checkpoints += 1
            if self.newest is None or record.size >= self.newest.size:
                self.newest = record
        if records:
            self.last_ok = records[0].size

    def check_entries(self, start: int, end: int) -> list[bytes]:
        """The leaf hashes of the entries ``[start, end)`` after checking index and hash."""
        records = self.storage.entries(start, end)
        leaves: list[bytes] = []
        for offset, record in enumerate(records):
            index = start + offset
            if record.index != index:
                raise StoreCheckFailed(
                    f"entry {index} is missing from the store (the next stored entry is "
                    f"{record.index}, and the store holds indexes up to {self.size - 1}): "
                    f"a row was deleted",
                    index=index,
                )
            # The leaf hash, then every lookup column against the signed bytes: a row whose
            # columns were changed would hide from (or be answered by) the lookups.
            try:
                signed = check_record(record)
            except LookupIntegrityError as e:
                raise StoreCheckFailed(str(e), index=index) from e
            if self.replay is not None:
                try:
                    self.replay.apply(index, signed)
                except TableMapMismatch as e:
                    raise StoreCheckFailed(str(e), index=index) from e
                self.map_roots += signed.version >= 3
            leaves.append(record.leaf_hash)
        if len(records) < end - start:
            index = start + len(records)
            raise StoreCheckFailed(
                f"entry {index} is missing from the store (the store holds indexes up to "
                f"{self.size - 1}): a row was deleted",
                index=index,
            )
        self.entries += len(records)
        return leaves

    def check_nodes(self, computed: Sequence[NodeRecord]) -> None:
        """The stored nodes against the ones recomputed from the entries, in append order."""
        stored = self.storage.nodes((n.level, n.index) for n in computed)
        for node in computed:
            got = stored.get((node.level, node.index))
            if got == node.hash:
                continue
            first = node.index << node.level
            last = ((node.index + 1) << node.level) - 1
            what = (
                f"entry {first}'s leaf node (level 0, index {first})"
                if node.level == 0
                else f"Merkle node (level {node.level}, index {node.index}), over entries "
                f"[{first}, {last}],"
            )
            problem = "is missing" if got is None else "is not the hash the entries give"
            raise StoreCheckFailed(
                f"{what} {problem}: a stored node was changed or deleted, or an entry in that "
                f"range was changed together with its leaf hash",
                index=first,
            )
        self.nodes += len(computed)

    def run(self, tree: MerkleTree, start: int, size: int) -> MerkleTree:
        self.size = size
        self.last_ok = start
        self.check_checkpoints(
            self.storage.checkpoints(min_size=start, max_size=start), tree.root()
        )
        position = start
        while position < size:
            end = min(position + self.page, size)
            leaves = self.check_entries(position, end)
            by_size: dict[int, list[CheckpointRecord]] = {}
            for record in self.storage.checkpoints(min_size=position + 1, max_size=end):
                by_size.setdefault(record.size, []).append(record)
            computed: list[NodeRecord] = []
            cut = position
            for stop in sorted({*by_size, end}):
                if stop > cut:
                    pending = tree.prepare(leaves[cut - position : stop - position])
                    computed.extend(pending.nodes)
                    tree.commit(pending)
                    cut = stop
                if stop in by_size:
                    # The nodes first: a changed node names its range more closely.
                    self.check_nodes(computed)
                    computed = []
                    self.check_checkpoints(by_size[stop], tree.root())
            self.check_nodes(computed)
            position = end
        return tree

    def check_map_rows(self, size: int) -> None:
        """The store's table map rows (as of ``size``: a service beside the check may have
        moved some since) against the heads the signed entries gave."""
        if self.replay is None:
            return
        why = describe_difference(self.storage.map_heads_at(size), self.replay.heads)
        if why:
            raise StoreCheckFailed(why)

    def check_beyond(self, size: int) -> None:
        """Nothing of the log may lie beyond its stored entries: no checkpoint, no node."""
        beyond = self.storage.checkpoints(min_size=size + 1)
        probe = [(level, size >> level) for level in range(size.bit_length() + 1)]
        nodes = self.storage.nodes(probe)
        if not beyond and not nodes:
            return
        # A replica sharing the store may have appended (and published) meanwhile: what its
        # committed transactions hold is read after them, so it covers them.
        now = self.storage.tree_size()
        for record in beyond:
            if record.size > now:
                raise StoreCheckFailed(
                    f"{_describe(record)} is beyond the stored tree of {size} entries: entries "
                    f"[{size}, {record.size}) were deleted (or the store was restored from an "
                    f"older backup)",
                    index=size,
                    checkpoint_size=record.size,
                )
        for level, index in sorted(nodes):
            if (index + 1) << level > now:
                raise StoreCheckFailed(
                    f"the store holds Merkle node (level {level}, index {index}), which covers "
                    f"entry {size}, but only {size} entries: entries from {size} on were "
                    f"deleted (their nodes remain)",
                    index=size,
                )


def check_store(
    storage: LogStorage,
    verifiers: Sequence[NoteVerifier],
    *,
    origin: str,
    full: bool = False,
    page_size: int = _PAGE,
) -> StoreCheckReport:
    """Checks the stored log (see the module docstring); incremental unless ``full``.

    ``verifiers``: every key whose checkpoints may be in the store (active, co-signing,
    retired). Raises :class:`StoreCheckFailed` naming the first bad index or checkpoint;
    storage errors (StorageUnavailable) propagate. Reads only.
    """
    if not verifiers:
        raise InvalidArgument("verifiers", "at least one verifier key is needed")
    if page_size < 1:
        raise InvalidArgument("page_size", f"{page_size} is not positive", allowed=">= 1")
    started = time.perf_counter()
    check = _Check(storage, verifiers, origin, page_size)
    # The record first, then the size: a replica that records a newer checkpoint meanwhile has
    # stored its entries before, so the size read next covers it.
    record = None if full else storage.get_meta(VERIFIED_CHECKPOINT_KEY)
    recorded = None if full else _recorded_signers(storage)
    size = storage.tree_size()
    if recorded is not None:
        _check_signers_configured(recorded, verifiers)
    tree, start, reason = _resume(check, record, recorded, size, full=full)
    if tree is not None and not _resume_map(check, tree, start, size):
        tree, start, reason = (
            None,
            0,
            (
                f"full check: the table map's heads as of the verified checkpoint of tree size "
                f"{start} do not reproduce the root signed in entry {start - 1}, or that entry "
                f"carries none while a newer one does"
            ),
        )
    if tree is None:
        tree = check.new_tree(0)
        check.replay = MapReplay()
    tree = check.run(tree, start, size)
    check.check_beyond(size)
    check.check_map_rows(size)
    return StoreCheckReport(
        tree_size=size,
        start=start,
        full=start == 0,
        reason=reason,
        entries=check.entries,
        nodes=check.nodes,
        checkpoints=check.checkpoints,
        newest=check.newest,
        root=tree.root(),
        seconds=time.perf_counter() - started,
        signers=frozenset(check.signers | (recorded if start and recorded else set())),
        tables=len(check.replay.heads) if check.replay is not None else 0,
        map_roots=check.map_roots,
    )


def _resume_map(check: _Check, tree: MerkleTree, start: int, size: int) -> bool:
    """The table map as of ``start`` for an incremental check (``check.replay``), from the
    store's heads at that size checked against the root signed in entry ``start - 1``;
    False if the check must run in full instead. A log without any format 3 entry has no
    root to check (the writer compares its rows with the signed bytes at start-up)."""
    if start == 0:
        check.replay = MapReplay()
        return True
    try:
        record = check.storage.entries(start - 1, start)[0]
        # Its bytes (whatever its columns say: the row is not read again here) are the ones
        # the verified checkpoint commits to: an inclusion proof of their leaf against the
        # tree that reproduced it.
        before = signed_fields(record.data, index=start - 1)
        leaf, proof = tree.leaf_and_inclusion_proof(start - 1, start)
        verify_inclusion(leaf, start - 1, start, proof, tree.root())
        if leaf != merkle_leaf_hash(record.data):
            return False
        last = check.storage.entries(size - 1, size)[0]
        newest = signed_fields(last.data, index=size - 1)
    except (IndexError, IntegrityError):
        return False
    if before.version < 3:
        return newest.version < 3  # no root anywhere: nothing of the map to check
    heads = check.storage.map_heads_at(start)
    table_map = TableMap(MapHead(r.client_id, r.table_id, r.head_index, r.head_seq) for r in heads)
    if table_map.root() != before.table_map:
        return False
    replay = MapReplay()
    replay.map = table_map
    replay.heads = {(r.client_id, r.table_id): (r.head_index, r.head_seq) for r in heads}
    replay.size = start
    replay.format3_from = start - 1
    check.replay = replay
    return True


def _resume(
    check: _Check, record: bytes | None, recorded: set[str] | None, size: int, *, full: bool
) -> tuple[MerkleTree | None, int, str]:
    """Where the check starts: the tree of the store's verified checkpoint, its size and why,
    if the stored tree still reproduces it; otherwise no tree, 0 and why a full check."""
    if full:
        return None, 0, "full check requested"
    if record is None:
        return None, 0, "full check: no verified checkpoint is recorded in the store yet"
    if recorded is None:
        return (
            None,
            0,
            "full check: the keys that signed the stored checkpoints are not recorded yet",
        )
    source = "the store's record of the last verified checkpoint"
    try:
        verified = _open(record, check.verifiers, origin=check.origin, source=source)
    except StoreCheckFailed as e:
        return None, 0, f"full check: {e}"
    if verified.size > size:
        raise StoreCheckFailed(
            f"{source} is for tree size {verified.size}, beyond the stored tree of "
            f"{size} entries: entries [{size}, {verified.size}) were deleted (or the "
            f"store was restored from an older backup)",
            index=size,
            checkpoint_size=verified.size,
        )
    try:
        tree = check.new_tree(verified.size)
        reproduced = tree.root() == verified.root_hash
    except IntegrityError:
        reproduced = False
    if not reproduced:
        return (
            None,
            0,
            (
                f"full check: the stored tree no longer reproduces the verified "
                f"checkpoint of tree size {verified.size}"
            ),
        )
    check.signers |= _signers(record, check.verifiers)
    return tree, verified.size, f"from the verified checkpoint of tree size {verified.size}"


def _recorded_signers(storage: LogStorage) -> set[str] | None:
    value = storage.get_meta(CHECKPOINT_SIGNERS_KEY)
    if value is None:
        return None
    return {line for line in value.decode("utf-8", "replace").split("\n") if line}


def _check_signers_configured(recorded: set[str], verifiers: Sequence[NoteVerifier]) -> None:
    """Refuses (:class:`UnconfiguredSigner`) if a key that signed stored checkpoints is not
    among ``verifiers``."""
    configured = {f"{v.name}+{v.key_id:08x}" for v in verifiers}
    missing = sorted(recorded - configured)
    if missing:
        raise UnconfiguredSigner(
            f"stored checkpoints are signed by {', '.join(missing)}, which no configured key "
            f"is (configured: {', '.join(sorted(configured))}): name each former key's verifier "
            f"key in log.retired_keys (a rotation keeps it for good), or the service serves "
            f"checkpoints its own check cannot verify",
            keys=missing,
        )


def check_kept(
    storage: LogStorage,
    report: StoreCheckReport,
    kept: Sequence[tuple[str, bytes]],
    verifiers: Sequence[NoteVerifier],
    *,
    origin: str,
) -> list[Checkpoint]:
    """Checkpoints kept outside the database (``(source, note)``: an auditor's, a receipt's, a
    witness's) against the store that :func:`check_store` passed as ``report``: each is
    signed by one of ``verifiers`` and of ``origin`` (as a stored one), is no larger than the
    stored tree, and the stored tree's root at its size is its root (RFC 6962 section 2.1: the
    store holds the very log that was signed at that size). Returns them; raises
    :class:`StoreCheckFailed` naming the first that fails: a store cut back below it (or an
    older copy restored), or a fork."""
    tree = MerkleTree(size=report.tree_size, get_nodes=storage.nodes)
    checked = []
    for source, note in kept:
        checkpoint = _open(note, verifiers, origin=origin, source=source)
        if checkpoint.size > report.tree_size:
            raise StoreCheckFailed(
                f"{source} is signed for tree size {checkpoint.size}, but the store holds only "
                f"{report.tree_size} entries: its newest entries were deleted (or an older copy "
                f"of the log was restored)",
                index=report.tree_size,
            )
        root = tree.root(checkpoint.size)
        if root != checkpoint.root_hash:
            raise StoreCheckFailed(
                f"fork: {source} is signed for tree size {checkpoint.size} with root "
                f"{checkpoint.root_hash.hex()}, but the store's first {checkpoint.size} entries "
                f"give {root.hex()}: the store is not the log that was signed"
            )
        checked.append(checkpoint)
    return checked


def record_verified(storage: LogStorage, report: StoreCheckReport) -> bool:
    """Records the report's newest verified checkpoint, and the keys that signed the stored
    checkpoints, for the next incremental check; returns whether a record changed."""
    changed = False
    signers = "".join(f"{k}\n" for k in sorted(report.signers)).encode("utf-8")
    if report.signers and storage.get_meta(CHECKPOINT_SIGNERS_KEY) != signers:
        # The signers first: a record of a checkpoint whose signer is not recorded would let
        # the next incremental check skip that signer.
        storage.set_meta(CHECKPOINT_SIGNERS_KEY, signers)
        changed = True
    newest = report.newest
    if newest is None or storage.get_meta(VERIFIED_CHECKPOINT_KEY) == newest.note:
        return changed
    storage.set_meta(VERIFIED_CHECKPOINT_KEY, newest.note)
    return True
