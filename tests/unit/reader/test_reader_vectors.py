"""The outcome known answers (tests/vectors/outcomes/) reproduced by the independent reader.

scripts/gen_outcome_vectors.py writes the vectors with the code under test, so on their own
they only catch change. Here the reader of docs/random-core.md and docs/outcomes.md (its own
CTR_DRBG, the documented byte consumption and draw order; tests/reader/) rebuilds every case
from the seed in the file, including the large batch cases (10^5 values, by digest) and the
outcome drawn after them, and the worked example of docs/random-core.md section 5.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.reader import kinds
from tests.reader.ctr_drbg import LabStream
from tests.reader.sampling import Source

ROOT = Path(__file__).resolve().parents[3]
VECTORS = ROOT / "tests" / "vectors" / "outcomes"
FILES = sorted(VECTORS.glob("*.json"))


def _stream(doc: dict[str, Any]) -> LabStream:
    seed = doc["seed"]
    assert seed["generator"] == "DeterministicGenerator"
    return LabStream(
        bytes.fromhex(seed["entropy_input"]),
        bytes.fromhex(seed["nonce"]),
        bytes.fromhex(seed["personalization"]),
    )


def _cases() -> list[tuple[str, int]]:
    return [
        (path.name, i)
        for path in FILES
        for i in range(len(json.loads(path.read_text(encoding="utf-8"))["cases"]))
    ]


def test_every_kind_has_vectors_and_every_batch_kind_a_large_case() -> None:
    docs = [json.loads(p.read_text(encoding="utf-8")) for p in FILES]
    assert {d["kind"] for d in docs} == set(kinds.KINDS)
    for d in docs:
        if d["kind"].endswith("_batch"):
            large = [c for c in d["cases"] if "outcome_digests" in c]
            assert large, d["kind"]
            assert all(g["count"] >= 100_000 for c in large for g in c["outcome_digests"])


@pytest.mark.parametrize(("name", "case"), _cases())
def test_the_reader_reproduces_the_known_answers(name: str, case: int) -> None:
    doc = json.loads((VECTORS / name).read_text(encoding="utf-8"))
    kind, vector = doc["kind"], doc["cases"][case]
    stream = _stream(doc)
    for i, expected in enumerate(vector.get("outcomes", [])):
        assert kinds.draw(kind, vector["params"], Source(stream)) == expected, f"outcome {i}"
    for i, expected in enumerate(vector.get("outcome_digests", [])):
        record = kinds.draw(kind, vector["params"], Source(stream))
        values = record[expected["key"]]
        canonical = json.dumps(record, sort_keys=True, separators=(",", ":")).encode()
        assert (len(values), values[:8], values[-8:]) == (
            expected["count"],
            expected["first"],
            expected["last"],
        ), f"batch {i}"
        assert hashlib.sha256(canonical).hexdigest() == expected["sha256"], f"batch {i}"
    if "then" in vector:
        then = vector["then"]
        assert kinds.draw(then["kind"], then["params"], Source(stream)) == then["outcome"]
    for shuffle, dealt in zip(vector.get("outcomes", []), vector.get("dealt", []), strict=False):
        p = vector["params"]
        assert kinds.deal(shuffle, p["plan"], p["players"]) == dealt


def test_the_worked_example_of_random_core_section_5() -> None:
    """docs/random-core.md section 5, "Worked example": one RandomSource over the lab stream."""
    src = Source(LabStream(bytes(32), bytes(16), b"known-answer"))
    assert [src.randbelow(38) for _ in range(12)] == [2, 0, 37, 15, 25, 5, 2, 3, 11, 15, 0, 4]
    assert src.shuffle(range(10)) == [4, 7, 0, 2, 1, 6, 3, 9, 8, 5]
    assert src.sample(range(52), 5) == [5, 22, 25, 2, 38]
