"""docs/log-format.md's worked examples of the map of table heads, and the vectors of
tests/vectors/table_map/, reproduced by the independent reader (tests/reader/table_map.py,
written from the document alone, importing nothing from rng_service)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.reader import table_map as reader

ROOT = Path(__file__).resolve().parents[3]
DOC = (ROOT / "docs" / "log-format.md").read_text(encoding="utf-8")
VECTORS = ROOT / "tests" / "vectors" / "table_map"


def _section() -> str:
    start = DOC.index("\n## Table map\n")
    return DOC[start : DOC.index("\n## ", start + 1)]


def _documented() -> dict[str, bytes]:
    """Every ``name = [definition =] hex`` line of the section's code blocks."""
    values: dict[str, bytes] = {}
    for block in re.findall(r"```\n(.*?)```", _section(), flags=re.S):
        for line in block.splitlines():
            m = re.fullmatch(r"(\w+) = (?:.* = )?([0-9a-f]{64})", line)
            assert m, f"a worked-example line the test cannot read: {line!r}"
            values[m.group(1)] = bytes.fromhex(m.group(2))
    return values


def _computed() -> dict[str, bytes]:
    k1, k2, k3, k4 = (reader.chain_key("default", f"T{i}") for i in (1, 2, 3, 4))
    leaf_t1_0_1 = reader.head_leaf(k1, 0, 1)
    leaf_t4_1_1 = reader.head_leaf(k4, 1, 1)
    leaf_t1_2_2 = reader.head_leaf(k1, 2, 2)
    roots = reader.log_roots([("default", "T1"), ("default", "T4"), ("default", "T1")])
    return {
        "K1": k1, "K2": k2, "K3": k3, "K4": k4,
        "root_empty": reader.root([]),
        "leaf_T1_0_1": leaf_t1_0_1,
        "root_after_0": roots[0],
        "leaf_T4_1_1": leaf_t4_1_1,
        "node_after_1": reader.node(leaf_t1_0_1, leaf_t4_1_1),
        "root_after_1": roots[1],
        "leaf_T1_2_2": leaf_t1_2_2,
        "node_after_2": reader.node(leaf_t1_2_2, leaf_t4_1_1),
        "root_after_2": roots[2],
    }  # fmt: skip


def test_the_worked_examples_values() -> None:
    documented = _documented()
    assert documented == _computed()
    # The structure the text describes: N(node, EMPTY) at the root, the root of one head its leaf.
    assert documented["root_after_2"] == reader.node(documented["node_after_2"], reader.EMPTY)
    assert documented["root_after_0"] == documented["leaf_T1_0_1"]
    assert documented["root_empty"] == reader.EMPTY
    # The bytes hashed, as printed.
    assert "`045b2264656661756c74222c225431225d`" in _section()
    assert reader.chain_key("default", "T1") == reader._h(
        bytes.fromhex("045b2264656661756c74222c225431225d")
    )
    bits = {f"K{i}": reader.bits(documented[f"K{i}"])[:8] for i in (1, 2, 3, 4)}
    assert "(bits `{K1}` for K1, `{K2}` K2, `{K3}` K3, `{K4}` K4.)".format(**bits) in _section()


def test_the_worked_examples_proofs() -> None:
    d = _documented()
    root = d["root_after_2"]
    assert reader.check_proof(
        root, "default", "T1", [d["leaf_T4_1_1"], reader.EMPTY], head=(2, 2)
    ) == (2, 2)
    assert reader.check_proof(root, "default", "T2", [d["node_after_2"]]) is None
    assert reader.check_proof(
        root, "default", "T3", [d["leaf_T4_1_1"], reader.EMPTY], other=(d["K1"], 2, 2)
    ) is None  # fmt: skip
    # ... and they are the proofs of the vectors' "two heads" map.
    maps = json.loads((VECTORS / "maps.json").read_text(encoding="utf-8"))["maps"]
    two = next(m for m in maps if m["name"] == "two heads")
    assert bytes.fromhex(two["root"]) == root
    by_table = {p["table_id"]: p for p in two["proofs"]}
    assert by_table["T1"]["siblings"] == [d["leaf_T4_1_1"].hex(), reader.EMPTY.hex()]
    assert by_table["T2"]["siblings"] == [d["node_after_2"].hex()]
    assert by_table["T2"]["kind"] == "absent_empty"
    assert by_table["T3"]["kind"] == "absent_other"
    assert by_table["T3"]["other_key"] == d["K1"].hex()


def _load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))


def test_the_reader_agrees_with_every_vector() -> None:
    for k in _load("keys.json")["keys"]:
        assert reader.chain_key(k["client_id"], k["table_id"]).hex() == k["key"]
    for case in _load("maps.json")["maps"]:
        heads = [reader.Head(h["client_id"], h["table_id"], h["index"], h["seq"])
                 for h in case["heads"]]  # fmt: skip
        assert reader.root(heads).hex() == case["root"], case["name"]
        for p in case["proofs"]:
            proven = reader.check_json_proof({**p, "root": case["root"]})
            expected = None if p["kind"] != "present" else (p["head"]["index"], p["head"]["seq"])
            assert proven == expected
    entries = _load("log.json")["entries"]
    roots = reader.log_roots([(e["client_id"], e["table_id"]) for e in entries])
    assert [r.hex() for r in roots] == [e["table_map"] for e in entries]


@pytest.mark.parametrize("bad", _load("bad_proofs.json")["proofs"], ids=lambda b: b["why"])
def test_the_reader_refuses_every_bad_proof(bad: dict[str, Any]) -> None:
    with pytest.raises(reader.BadProof):
        reader.check_json_proof(bad)
