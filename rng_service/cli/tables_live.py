"""A table's chain read from a running service and proven complete by the committed map.

Owns :func:`read_chain`, what ``rng-audit table-history --target`` and ``rng-audit dispute
--target`` share (docs/auditing.md, "Table histories and disputes"): the checkpoint to read in
(with ``--witness`` the newest witnessed one, its cosignatures checked), the chain from a first
seq to its end as ``GetTableHistory`` gives it, every entry proven in that checkpoint, and,
when the log has a committed map (entry format 3), the map proof of the chain's head checked
against the root signed in the tree's newest entry and the chain walked back from that head
(:mod:`rng_service.audit.table_proof`). Without a map proof, the tree's newest entry is
fetched and proven: a format 3 entry there means the service withheld the proof (a failure);
a format 1 or 2 entry, a log not yet upgraded, leaves completeness unproven (exit status 4,
as before the map). Also the offline check of a saved proof file (:func:`check_saved`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rng_service.audit import VerificationFailure, VerifiedHead, open_head
from rng_service.audit.history import ProvenItem, prove_entries
from rng_service.audit.table_proof import (
    ProvenHead,
    TableProofFile,
    prove_head,
    walk_back,
)
from rng_service.audit.verify import PinnedOrigin
from rng_service.cli.tables_common import Shared, _items, _live_head, _same_tree
from rng_service.errors import Unavailable
from rng_service.log.entry import LogEntry
from rng_service.log.table_map import MapProof

if TYPE_CHECKING:
    from rng_service.rpc.log_servicer import LogClient

__all__ = ["Committed", "LiveChain", "check_saved", "read_chain", "reading_tree"]


@dataclass(frozen=True, slots=True)
class Committed:
    """The chain proven by the map: its proven head and the chain from the first seq asked
    to that head (walked back by ``table_prev``), with what proves it (to save it)."""

    proven: ProvenHead
    chain: tuple[LogEntry, ...]
    root: ProvenItem
    proof: MapProof


@dataclass(frozen=True, slots=True)
class LiveChain:
    """A chain read from a service: the verified checkpoint (``note``: as fetched, with any
    cosignatures), the proven entries of the answer, and ``committed`` when a map proved it."""

    head: VerifiedHead
    note: str
    client: str
    table_id: str
    entries: tuple[LogEntry, ...]
    items: tuple[ProvenItem, ...]
    committed: Committed | None
    witnessed: str | None

    def as_of(self) -> str:
        size = self.head.checkpoint.size
        signers = ", ".join(self.head.key_names)
        if self.witnessed is not None:
            return f"as of witnessed checkpoint {size} (signed by {signers}, {self.witnessed})"
        return f"as of checkpoint {size} (signed by {signers})"


def reading_tree(
    shared: Shared,
    args: argparse.Namespace,
    client: LogClient,
    *,
    verifiers: Sequence[Any],
    origin: PinnedOrigin,
    kept: Sequence[tuple[str, str]],
) -> tuple[VerifiedHead, str, str | None] | None:
    """With ``--witness``: the newest witnessed checkpoint of the service, verified (its
    signature, its cosignatures, any kept checkpoint), its note and its witnesses; else None
    (the first answer's checkpoint is read in)."""
    if not args.witness:
        return None
    if args.tree_size:
        raise shared.usage_error("--tree-size and --witness: give one (--witness reads in the "
                                 "newest witnessed checkpoint)")  # fmt: skip
    note = client.latest_checkpoint(witnessed=True)
    source = f"the latest witnessed checkpoint of {args.target}"
    head = _live_head(shared, client, note, target=args.target, verifiers=verifiers,
                      origin=origin, kept=kept)  # fmt: skip
    witnessed = shared.witnessed_by(args, source, note, head.checkpoint.size)
    return head, note, witnessed


def read_chain(
    shared: Shared,
    args: argparse.Namespace,
    client: LogClient,
    *,
    table_id: str,
    whose: str,
    first_seq: int,
    verifiers: Sequence[Any],
    origin: PinnedOrigin,
    kept: Sequence[tuple[str, str]],
    tree: tuple[VerifiedHead, str, str | None] | None,
) -> LiveChain:
    """The chain of (``whose``, ``table_id``) from ``first_seq`` to its end in the tree of
    ``tree`` (else of ``--tree-size``, else the current one); see the module docstring."""
    size = tree[0].checkpoint.size if tree is not None else args.tree_size
    page = client.table_history(table_id, client=whose, first_seq=first_seq, tree_size=size)
    if tree is None:
        head = _live_head(shared, client, page.checkpoint, target=args.target,
                          verifiers=verifiers, origin=origin, kept=kept)  # fmt: skip
        note, witnessed = page.checkpoint, None
    else:
        head, note, witnessed = tree
    _same_tree(page, head, "the table history")
    items = tuple(_items(page))
    entries = prove_entries(items, head, what=f"{args.target}'s table history")
    committed = None
    if page.map_proof is None:
        _no_map_there(client, head, args.target)
    else:
        wire = page.map_proof
        root = ProvenItem(wire.root_index, wire.root_data, wire.root_leaf_hash, wire.root_proof)
        committed = _committed(root, wire.proof, head, page.client, table_id, entries, first_seq)
    return LiveChain(head, note, page.client, table_id, tuple(entries), items, committed,
                     witnessed)  # fmt: skip


def _committed(
    root: ProvenItem,
    proof: MapProof,
    head: VerifiedHead,
    client: str,
    table_id: str,
    entries: Sequence[LogEntry],
    first_seq: int,
) -> Committed:
    proven = prove_head(root, proof, head, client=client, table_id=table_id)
    chain = walk_back(entries, proven, first_seq)
    return Committed(proven, tuple(chain), root, proof)


def _no_map_there(client: LogClient, head: VerifiedHead, target: str) -> None:
    """No map proof was given: the tree's newest entry must then carry no map root (format 1
    or 2); a format 3 entry there is a withheld proof (VerificationFailure)."""
    size = head.checkpoint.size
    if size == 0:
        return
    try:
        rows = client.entries(size - 1, size)
        proof = tuple(client.inclusion_proof(size - 1, size)) if len(rows) == 1 else ()
    except Unavailable:
        # A caller without the auditor role (a game server reading its own table) may not
        # read other entries: the answer stays unproven (exit 4), never more.
        return
    if len(rows) != 1:
        raise VerificationFailure(f"{target} did not give entry {size - 1} of its tree")
    index, leaf, data = rows[0]
    item = ProvenItem(index, data, leaf, proof)
    (entry,) = prove_entries([item], head, what=f"{target}'s newest entry")
    if entry.table_map is not None:
        raise VerificationFailure(
            f"{target} gave no map proof of the table's head, but its tree's newest entry "
            f"(log index {entry.index}) carries the committed map root "
            f"{entry.table_map.hex()}: the service withheld the proof of completeness",
            index=entry.index,
        )


def check_saved(
    shared: Shared,
    args: argparse.Namespace,
    saved: TableProofFile,
    path: str,
    verifiers: Sequence[Any],
    origin: PinnedOrigin,
) -> tuple[LiveChain, list[LogEntry]]:
    """A saved ``rng-audit-table-proof/v1`` file checked with the keys alone: its checkpoint
    (and with ``--witness`` its cosignatures), every entry's inclusion, the map proof, the
    chain walked back from the proven head; returns the chain and the saved lookup's other
    proven entries (format 1)."""
    origin.check(saved.origin, f"table proof {path}")
    head = open_head(saved.checkpoint, verifiers, source=f"the checkpoint of {path}",
                     origin=origin.origin)  # fmt: skip
    if head.checkpoint.size != saved.tree_size:
        raise VerificationFailure(
            f"{path}: its checkpoint is for tree size {head.checkpoint.size}, its header says "
            f"{saved.tree_size}"
        )
    witnessed = shared.witnessed_by(args, f"the checkpoint of {path}", saved.checkpoint,
                                    head.checkpoint.size)  # fmt: skip
    entries = prove_entries(saved.items, head, what=path)
    extra = prove_entries(saved.extra, head, what=path)
    committed = _committed(saved.root, saved.proof, head, saved.client, saved.table_id, entries,
                           saved.first_seq)  # fmt: skip
    live = LiveChain(head, saved.checkpoint, saved.client, saved.table_id, tuple(entries),
                     saved.items, committed, witnessed)  # fmt: skip
    return live, extra
