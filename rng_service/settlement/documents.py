"""Served documents: a game profile or a paytable, read from a file or from canonical bytes.

Owns: telling the two apart (a paytable says ``kind = "paytable"``), reading either from a
TOML file (an operator's profile directory) or from the canonical JSON bytes ``GetProfile``
returns (so a client re-derives the same validated document, and its identity, from the
bytes the log's entries name by SHA-256).

Must not: draw random values; the only I/O is reading a file when asked to.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeAlias

from rng_service.errors import InvalidArgument
from rng_service.outcomes.profiles import (
    MegaFireBlazeProfile,
    parse_canonical_json,
    parse_toml_document,
    profile_from_document,
)
from rng_service.settlement.paytables import (
    PaytableDocument,
    is_paytable_document,
    paytable_from_document,
)

__all__ = [
    "Document",
    "document_from_canonical",
    "document_kind",
    "load_document_file",
    "parse_document",
]

Document: TypeAlias = MegaFireBlazeProfile | PaytableDocument


def document_kind(document: Document) -> str:
    """``mega_fire_blaze`` for a profile, ``paytable:<game>`` for a paytable."""
    if isinstance(document, PaytableDocument):
        return document.kind
    return "mega_fire_blaze"


def _from(doc: dict[str, object], canonical: bytes, source: str) -> Document:
    if is_paytable_document(doc):
        return paytable_from_document(doc, canonical, source)
    return profile_from_document(doc, canonical, source)


def parse_document(data: bytes, source: str) -> Document:
    """A profile or paytable from a TOML file's bytes; errors name ``source`` and the key."""
    doc, canonical = parse_toml_document(data, source)
    return _from(doc, canonical, source)


def document_from_canonical(data: bytes, source: str) -> Document:
    """A profile or paytable from its canonical JSON bytes (as ``GetProfile`` returns them)."""
    doc, canonical = parse_canonical_json(data, source)
    return _from(doc, canonical, source)


def load_document_file(path: str | Path) -> Document:
    """Read and validate a profile or paytable file; errors name the file and the key."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise InvalidArgument(
            p.name, f"cannot read: {e.strerror}", allowed="a readable TOML file"
        ) from e
    return parse_document(data, p.name)
