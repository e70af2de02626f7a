"""The verifier's incremental table map (:mod:`rng_service.audit.map_check`) against the map's
definition (docs/log-format.md, "Table map"), computed in tests/format3.py with hashlib and the
``rfc8785`` package alone: random sequences of heads set, changed and removed; keys made from
an entry's JSON strings; the search that names a differing table.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from rng_service.audit.map_check import HeadMap, chain_key, diagnose, head_leaf_hash
from rng_service.log.table_map import MapHead, TableMap, map_root
from tests.format3 import EMPTY, key_of, leaf_of, root_of
from tests.reader import table_map as reader

AWKWARD = ["", "T1", 'q"uote\\', "tab\tnl\n\x00\x1f\x7f", "caf\u00e9 \u2028 \U0001f600", "/"]


def _canonical_string(text: str) -> bytes:
    """The string as an entry holds it (RFC 8785: only '"', '\\' and controls escaped)."""
    return json.dumps(text, ensure_ascii=False).encode("utf-8")


def test_keys_from_an_entrys_strings_are_the_definitions() -> None:
    for client in AWKWARD:
        for table in AWKWARD:
            assert chain_key(_canonical_string(client), _canonical_string(table)) == key_of(
                client, table
            )
    key = key_of("default", "T1")
    assert head_leaf_hash(key, 2**40 + 5, 7) == leaf_of(key, 2**40 + 5, 7)


@pytest.mark.parametrize("seed", range(4))
def test_the_incremental_map_has_the_definitions_root(seed: int) -> None:
    rng = random.Random(seed)
    tables = HeadMap()
    heads: dict[tuple[str, str], tuple[int, int]] = {}
    assert tables.root == EMPTY == root_of(heads)
    names = 3 + seed * 20  # from a few tables (shallow) to 63
    for step in range(600):
        chain = (f"c{rng.randrange(2)}", f"T{rng.randrange(names)}")
        key = key_of(*chain)
        if rng.random() < 0.2:
            heads.pop(chain, None)
            tables.remove(key)  # removing an absent key changes nothing
        else:
            heads[chain] = (rng.randrange(2**63), rng.randrange(1, 2**40))
            tables.set(key, leaf_of(key, *heads[chain]))
        assert tables.root == root_of(heads), step
    assert sorted(tables) == sorted((key_of(*c), leaf_of(key_of(*c), *h)) for c, h in heads.items())
    assert tables.get(key_of("nobody", "T")) is None
    for chain, head in heads.items():
        assert tables.get(key_of(*chain)) == leaf_of(key_of(*chain), *head)
    # Built in one go from the heads (as at the first format 3 entry): the same root.
    rebuilt = HeadMap((key_of(*c), leaf_of(key_of(*c), *h)) for c, h in reversed(heads.items()))
    assert rebuilt.root == tables.root


def test_keys_sharing_a_long_prefix_and_the_collapse_on_removal() -> None:
    # Two keys that agree on their first 12 bits: 12 one-sided branches above their split.
    base = key_of("default", "T0")
    prefix = int.from_bytes(base[:2], "big") >> 4
    other = next(
        key_of("default", f"T{n}") for n in range(1, 100_000)
        if int.from_bytes(key_of("default", f"T{n}")[:2], "big") >> 4 == prefix
    )  # fmt: skip
    tables = HeadMap([(base, leaf_of(base, 1, 1))])
    assert tables.root == leaf_of(base, 1, 1)  # one head: the root is its leaf
    tables.set(other, leaf_of(other, 2, 1))
    expected_pair = {("default", "T0"): (1, 1)}
    name = next(f"T{n}" for n in range(1, 100_000) if key_of("default", f"T{n}") == other)
    expected_pair[("default", name)] = (2, 1)
    assert tables.root == root_of(expected_pair)
    tables.remove(base)  # back to one leaf: the branches collapse into it
    assert tables.root == leaf_of(other, 2, 1)
    tables.remove(other)
    assert tables.root == EMPTY


def test_diagnose_finds_the_changed_head_and_leaves_the_map_as_it_was() -> None:
    heads = {("c", f"T{n}"): (n, n + 1) for n in range(40)}
    leaves = {c: (key_of(*c), leaf_of(key_of(*c), *h)) for c, h in heads.items()}
    tables = HeadMap(leaves.values())
    root = tables.root
    committed = root_of({**heads, ("c", "T7"): (3, 2)})
    order = [(*leaves[c], (3, 2) if c == ("c", "T7") else (0, 1)) for c in heads]
    assert diagnose(tables, committed, order) == (7, (3, 2))
    assert tables.root == root
    missing = root_of({c: h for c, h in heads.items() if c != ("c", "T30")})
    absent = [(*leaves[c], None) for c in heads]
    assert diagnose(tables, missing, absent) == (30, None)
    assert diagnose(tables, missing, absent, limit=30) is None  # T30 is the 31st candidate
    assert diagnose(tables, bytes(32), absent) is None
    assert tables.root == root


def test_the_verifiers_map_and_the_writers_agree() -> None:
    # The log layer's TableMap (the writer's) and its reference map_root, on the same heads.
    rng = random.Random(7)
    writer, verifier = TableMap(), HeadMap()
    heads: dict[tuple[str, str], tuple[int, int]] = {}
    for step in range(300):
        client, table = rng.choice(AWKWARD), f"T{rng.randrange(50)}"
        index, seq = step, rng.randrange(1, 1000)
        heads[(client, table)] = (index, seq)
        writer.set(client, table, index, seq)
        key = chain_key(_canonical_string(client), _canonical_string(table))
        verifier.set(key, head_leaf_hash(key, index, seq))
        assert verifier.root == writer.root(), step
    assert verifier.root == map_root(MapHead(c, t, i, s) for (c, t), (i, s) in heads.items())


VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "table_map"


def test_the_verifiers_map_reproduces_the_vectors() -> None:
    # tests/vectors/table_map/ (made by a generator that imports nothing of rng_service): each
    # map's root, and the root after each entry of the vectors' log.
    for vector in json.loads((VECTORS / "maps.json").read_text())["maps"]:
        tables = HeadMap()
        for h in vector["heads"]:
            key = chain_key(_canonical_string(h["client_id"]), _canonical_string(h["table_id"]))
            tables.set(key, head_leaf_hash(key, h["index"], h["seq"]))
        assert tables.root.hex() == vector["root"], vector["name"]
        heads = {(h["client_id"], h["table_id"]): (h["index"], h["seq"]) for h in vector["heads"]}
        assert root_of(heads).hex() == vector["root"]  # and so does the tests' own helper
    tables = HeadMap()
    for e in json.loads((VECTORS / "log.json").read_text())["entries"]:
        key = chain_key(_canonical_string(e["client_id"]), _canonical_string(e["table_id"]))
        tables.set(key, head_leaf_hash(key, e["index"], e["table_seq"]))
        assert tables.root.hex() == e["table_map"], e


def test_the_tests_roots_are_the_independent_readers() -> None:
    # tests/format3.py (used to make the verifier's format 3 logs) and tests/reader/table_map.py
    # (written from the docs alone) agree on a log's roots.
    chains = [("default", f"T{n % 7}") for n in range(40)] + [("other", "T1"), ('q"', "\n")]
    expected = reader.log_roots(chains)
    heads: dict[tuple[str, str], tuple[int, int]] = {}
    seqs: dict[tuple[str, str], int] = {}
    for index, chain in enumerate(chains):
        seqs[chain] = seqs.get(chain, 0) + 1
        heads[chain] = (index, seqs[chain])
        assert root_of(heads) == expected[index], index
