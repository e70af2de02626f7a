"""rng_service.log.table_map against the vectors of tests/vectors/table_map/, which
gen_table_map.py writes with hashlib and json alone from docs/log-format.md ("Table map"): keys,
roots (the reference and the incremental map), proofs of every kind, proofs to refuse, and the
roots a log's format 3 entries carry. A generator rerun must reproduce the files byte for
byte, and the generator must import nothing from rng_service."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rng_service.log.table_map import (
    EMPTY,
    MapHead,
    MapProof,
    MapProofError,
    TableMap,
    map_key,
    map_root,
    verify_map_proof,
)

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "table_map"
GENERATOR = VECTORS / "gen_table_map.py"


def _load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))


MAPS = _load("maps.json")["maps"]
BAD = _load("bad_proofs.json")["proofs"]


def test_the_generator_reproduces_the_files() -> None:
    done = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in VECTORS.glob("*.json")) == [
        "bad_proofs.json", "keys.json", "log.json", "maps.json",
    ]  # fmt: skip


def test_the_generator_imports_only_the_standard_library_it_names() -> None:
    tree = ast.parse(GENERATOR.read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert imported <= {"__future__", "hashlib", "json", "sys", "pathlib", "typing"}, imported


def test_keys() -> None:
    keys = _load("keys.json")["keys"]
    assert any(not k["table_id"].isascii() for k in keys)
    for k in keys:
        assert map_key(k["client_id"], k["table_id"]).hex() == k["key"], k


def _heads(case: dict[str, Any]) -> list[MapHead]:
    return [MapHead(h["client_id"], h["table_id"], h["index"], h["seq"]) for h in case["heads"]]


def _proof(p: dict[str, Any]) -> MapProof:
    siblings = tuple(bytes.fromhex(s) for s in p["siblings"])
    if p["kind"] == "present":
        head = MapHead(p["client_id"], p["table_id"], p["head"]["index"], p["head"]["seq"])
        return MapProof(siblings=siblings, head=head)
    if p["kind"] == "absent_other":
        return MapProof(siblings=siblings, other_key=bytes.fromhex(p["other_key"]),
                        other_index=p["other_index"], other_seq=p["other_seq"])  # fmt: skip
    assert p["kind"] == "absent_empty"
    return MapProof(siblings=siblings)


@pytest.mark.parametrize("case", MAPS, ids=[c["name"] for c in MAPS])
def test_roots_and_proofs(case: dict[str, Any]) -> None:
    heads = _heads(case)
    root = bytes.fromhex(case["root"])
    assert map_root(heads) == root
    table_map = TableMap(heads)
    assert table_map.root() == root
    for p in case["proofs"]:
        expected = _proof(p)
        assert table_map.prove(p["client_id"], p["table_id"]) == expected, p
        proven = verify_map_proof(root, p["client_id"], p["table_id"], expected)
        assert proven == expected.head


def test_every_kind_of_proof_is_in_the_vectors() -> None:
    kinds = {(p["kind"], bool(p["siblings"])) for c in MAPS for p in c["proofs"]}
    assert kinds == {(k, s) for k in ("present", "absent_empty", "absent_other") for s in (0, 1)}
    assert any(c["root"] == EMPTY.hex() for c in MAPS)


@pytest.mark.parametrize("bad", BAD, ids=[b["why"] for b in BAD])
def test_bad_proofs_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(MapProofError):
        verify_map_proof(bytes.fromhex(bad["root"]), bad["client_id"], bad["table_id"], _proof(bad))


def test_the_roots_a_log_carries() -> None:
    table_map = TableMap()
    for e in _load("log.json")["entries"]:
        table_map.set(e["client_id"], e["table_id"], e["index"], e["table_seq"])
        assert table_map.root().hex() == e["table_map"], e
