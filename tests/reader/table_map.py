"""The map of table heads as docs/log-format.md ("Table map") defines it (test-only code).

Written from that section alone: the chain key, the head leaf, the node and the empty subtree,
the root of a set of heads by the recursive definition, and the check of a proof (presence,
absence at an empty subtree, absence at another chain's leaf). Imports nothing from
``rng_service`` (the ``reader`` row of docs/architecture.md), so the tests comparing it with the
service's code and with the documented examples check both against the document.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

EMPTY = b"\x00" * 32


class BadProof(Exception):
    """A proof that does not prove its claim."""


def _h(*parts: bytes) -> bytes:
    return hashlib.sha256(b"".join(parts)).digest()


def chain_key(client_id: str, table_id: str) -> bytes:
    """SHA-256(0x04 || RFC 8785 JSON of [client_id, table_id]). For an array of two strings
    RFC 8785 is: no white space, the escapes \\" \\\\ \\b \\t \\n \\f \\r, \\u00xx (lowercase)
    for the other control characters, everything else as UTF-8 (lone surrogates refused)."""
    short = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f",
             "\r": "\\r"}  # fmt: skip

    def string(s: str) -> str:
        out = []
        for ch in s:
            if ch in short:
                out.append(short[ch])
            elif ord(ch) < 0x20:
                out.append(f"\\u{ord(ch):04x}")
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'

    text = "[" + string(client_id) + "," + string(table_id) + "]"
    return _h(b"\x04", text.encode("utf-8", errors="strict"))


def head_leaf(key: bytes, index: int, seq: int) -> bytes:
    """SHA-256(0x02 || key || u64be(index) || u64be(seq))."""
    return _h(b"\x02", key, index.to_bytes(8, "big"), seq.to_bytes(8, "big"))


def node(left: bytes, right: bytes) -> bytes:
    """SHA-256(0x03 || left || right)."""
    return _h(b"\x03", left, right)


def bits(key: bytes) -> str:
    """The key's 256 bits as text, bit 0 (the first) the most significant bit of byte 0."""
    return "".join(f"{b:08b}" for b in key)


@dataclass(frozen=True)
class Head:
    client_id: str
    table_id: str
    index: int
    seq: int


def root(heads: Iterable[Head]) -> bytes:
    """H(all heads, 0): EMPTY for none, the leaf for one, else N(H(S0), H(S1)) by the next bit."""
    leaves = {bits(chain_key(h.client_id, h.table_id)): h for h in heads}

    def hash_of(prefix: str) -> bytes:
        below = [b for b in leaves if b.startswith(prefix)]
        if not below:
            return EMPTY
        if len(below) == 1:
            h = leaves[below[0]]
            return head_leaf(bytes.fromhex(f"{int(below[0], 2):064x}"), h.index, h.seq)
        return node(hash_of(prefix + "0"), hash_of(prefix + "1"))

    return hash_of("")


def log_roots(chains: Sequence[tuple[str, str]]) -> list[bytes]:
    """The ``table_map`` each format 3 entry of a log carries, the log's entries being in
    these (client, table) chains in log order (index i for the i-th): the root after that
    entry's own head is applied."""
    current: dict[tuple[str, str], Head] = {}
    out = []
    for index, (client_id, table_id) in enumerate(chains):
        old = current.get((client_id, table_id))
        seq = 1 if old is None else old.seq + 1
        current[(client_id, table_id)] = Head(client_id, table_id, index, seq)
        out.append(root(current.values()))
    return out


def check_proof(
    map_root: bytes,
    client_id: str,
    table_id: str,
    siblings: Sequence[bytes],
    *,
    head: tuple[int, int] | None = None,
    other: tuple[bytes, int, int] | None = None,
) -> tuple[int, int] | None:
    """The proven (index, seq) of the chain's head, or None for a proven absence.

    ``head`` for a proof of presence; ``other`` (key, index, seq) for an absence at another
    chain's leaf; neither for an absence at an empty subtree. Raises :class:`BadProof`."""
    if len(siblings) > 256:
        raise BadProof("more than 256 siblings")
    if any(len(s) != 32 for s in siblings):
        raise BadProof("a sibling is not 32 bytes")
    key = chain_key(client_id, table_id)
    kbits = bits(key)
    if head is not None and other is not None:
        raise BadProof("both a head and another leaf")
    if head is not None:
        h = head_leaf(key, *head)
    elif other is not None:
        other_key, other_index, other_seq = other
        if len(other_key) != 32 or other_key == key:
            raise BadProof("the other key is not another 32-byte key")
        if bits(other_key)[: len(siblings)] != kbits[: len(siblings)]:
            raise BadProof("the other key does not share the path's prefix")
        h = head_leaf(other_key, other_index, other_seq)
    else:
        h = EMPTY
    depth = len(siblings)
    for s in siblings:  # deepest first
        depth -= 1
        h = node(s, h) if kbits[depth] == "1" else node(h, s)
    if h != map_root:
        raise BadProof("the path does not lead to the root")
    return head


def check_json_proof(proof: dict[str, Any]) -> tuple[int, int] | None:
    """:func:`check_proof` of a proof in the vectors' JSON form (tests/vectors/table_map)."""
    kind = proof["kind"]
    siblings = [bytes.fromhex(s) for s in proof["siblings"]]
    head = other = None
    if kind == "present":
        head = (int(proof["head"]["index"]), int(proof["head"]["seq"]))
    elif kind == "absent_other":
        other = (bytes.fromhex(proof["other_key"]), int(proof["other_index"]),
                 int(proof["other_seq"]))  # fmt: skip
    elif kind != "absent_empty":
        raise BadProof(f"unknown kind {kind!r}")
    return check_proof(bytes.fromhex(proof["root"]), proof["client_id"], proof["table_id"],
                       siblings, head=head, other=other)  # fmt: skip


__all__ = ["EMPTY", "BadProof", "Head", "bits", "chain_key", "check_json_proof", "check_proof",
           "head_leaf", "log_roots", "node", "root"]  # fmt: skip
