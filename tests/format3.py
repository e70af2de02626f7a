"""Format 3 logs for the verifier's tests, made without the service's writer.

``to_format_3`` turns format 2 entries (from the tests' builders) into format 3 ones whose
``table_map`` is computed here, straight from the definition in docs/log-format.md ("Table
map") with ``hashlib`` and the ``rfc8785`` package: nothing of ``rng_service`` takes part in
the roots, so they are a second derivation of what the verifier recomputes. ``signed_export``
writes an export of any entries with checkpoints re-signed by a test key (what a log whose
writer committed those bytes would publish).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterable, Mapping, Sequence

import rfc8785

from rng_service.audit import write_export
from rng_service.log import merkle
from rng_service.log.note import Checkpoint, NoteSigner, sign_note

EMPTY = bytes(32)
Heads = dict[tuple[str, str], tuple[int, int]]
"""(client, table id) -> (log index, table_seq) of the chain's newest entry."""


def key_of(client: str, table: str) -> bytes:
    """K(client, table) = SHA-256(0x04 || canonical_json([client, table]))."""
    return hashlib.sha256(b"\x04" + rfc8785.dumps([client, table])).digest()


def leaf_of(key: bytes, index: int, seq: int) -> bytes:
    """L(K, index, seq) = SHA-256(0x02 || K || u64be(index) || u64be(seq))."""
    return hashlib.sha256(
        b"\x02" + key + index.to_bytes(8, "big") + seq.to_bytes(8, "big")
    ).digest()


def _bit(key: bytes, d: int) -> int:
    return (key[d // 8] >> (7 - d % 8)) & 1


def _h(leaves: list[tuple[bytes, bytes]], d: int) -> bytes:
    """H(S, d): EMPTY, the one leaf's hash, or N(H(S0, d + 1), H(S1, d + 1))."""
    if not leaves:
        return EMPTY
    if len(leaves) == 1:
        return leaves[0][1]
    zero = [kv for kv in leaves if _bit(kv[0], d) == 0]
    one = [kv for kv in leaves if _bit(kv[0], d) == 1]
    return hashlib.sha256(b"\x03" + _h(zero, d + 1) + _h(one, d + 1)).digest()


def root_of(heads: Mapping[tuple[str, str], tuple[int, int]]) -> bytes:
    """The map root of ``heads`` by the definition (recursive, O(n * depth) hashes)."""
    leaves = []
    for (client, table), (index, seq) in heads.items():
        key = key_of(client, table)
        leaves.append((key, leaf_of(key, index, seq)))
    return _h(leaves, 0)


def heads_through(entries: Sequence[bytes], end: int) -> Heads:
    """The heads of the chains of entries ``[0, end)`` (formats 2 and 3), in log order."""
    heads: Heads = {}
    for data in entries[:end]:
        record = json.loads(data)
        if record["v"] >= 2:
            heads[(record["client"], record["table_id"])] = (record["index"], record["table_seq"])
    return heads


def with_root(data: bytes, root: bytes) -> bytes:
    """A canonical format 2 entry as format 3 with ``table_map`` ``root`` (its key sorts
    between ``table_id`` and ``table_prev``; ``v`` is the last member)."""
    assert data.count(b',"table_prev":') == 1, data
    assert data.endswith(b',"v":2}'), data
    field = b',"table_map":"' + root.hex().encode("ascii") + b'","table_prev":'
    return data.replace(b',"table_prev":', field)[: -len(b"2}")] + b"3}"


def to_format_3(
    entries: Sequence[bytes], start: int, *, roots: Mapping[int, bytes] | None = None
) -> list[bytes]:
    """``entries`` with each format 2 entry from index ``start`` on made format 3, committing
    the map root after itself (``roots`` overrides the root of the entries it names: a writer
    that committed a wrong one)."""
    out = list(entries)
    heads = heads_through(entries, start)
    for i in range(start, len(out)):
        record = json.loads(out[i])
        if record["v"] < 2:
            continue
        heads[(record["client"], record["table_id"])] = (i, record["table_seq"])
        if record["v"] == 2:
            root = root_of(heads) if roots is None or i not in roots else roots[i]
            out[i] = with_root(out[i], root)
    return out


def signed_export(
    entries: Sequence[bytes],
    signer: NoteSigner,
    origin: str,
    *,
    sizes: Iterable[int] | None = None,
    form: str | None = None,
) -> list[str]:
    """An export of ``entries`` with a checkpoint signed by ``signer`` at each of ``sizes``
    (default: the whole log), its header's format ``form`` if given."""
    leaves = [merkle.leaf_hash(d) for d in entries]
    notes = []
    for size in sorted(set(sizes or (len(entries),))):
        root = merkle.root_from_leaf_hashes(leaves[:size])
        notes.append((sign_note(Checkpoint(origin, size, root).body(), [signer]).decode(), size))
    out = io.StringIO()
    write_export(
        out, origin=origin, checkpoints=notes,
        entries=[(i, leaves[i], d) for i, d in enumerate(entries)], tree_size=len(entries),
    )  # fmt: skip
    lines = out.getvalue().splitlines(keepends=True)
    if form is not None:
        header = json.loads(lines[0])
        header["format"] = form
        lines[0] = json.dumps(header) + "\n"
    return lines
