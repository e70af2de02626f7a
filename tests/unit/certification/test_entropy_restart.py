"""``rng-certify entropy --restart``: the section 3.1.4 restart matrix end to end.

The matrix (1,000 restarts x 1,000 one-bit samples) is made here from SHAKE-256, so it is the
same bytes on every machine; NIST's ``ea_restart -v -v`` on it (H_I = 0.8) is the known answer,
in ``tests/vectors/sp800_90b/restart_shake.ea_restart.res`` (README there): the largest count
in a row or column, and every estimator's figure on the rows and on the columns (to a relative
1e-6), hence H_r and H_c. The sanity check's cutoff is the binomial critical value section
3.1.4.3 states, computed here with mpmath; NIST's tool simulates it instead (643 in that run,
642 in another).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import mpmath
import numpy as np
import pytest

from certification.cli import main

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "sp800_90b"
H_I = 0.8
LABELS = {
    "Most Common Value": "Most Common Value", "Collision": "Collision", "Markov": "Markov",
    "Compression": "Compression", "t-Tuple": "t-Tuple", "LRS": "LRS",
    "MultiMCW Prediction": "MultiMCW Prediction", "Lag Prediction": "Lag Prediction",
    "MultiMMC Prediction": "MultiMMC Prediction", "LZ78Y Prediction": "LZ78Y Prediction",
}  # fmt: skip


def shake_bits(label: bytes, n: int) -> bytes:
    """``n`` one-bit samples, one per byte: the bits of SHAKE-256(label), most significant first."""
    stream = hashlib.shake_256(label).digest(n // 8)
    return np.unpackbits(np.frombuffer(stream, dtype=np.uint8)).tobytes()


def tool_output() -> str:
    return (VECTORS / "restart_shake.ea_restart.res").read_text()


def tool_figures() -> dict[str, tuple[float, float]]:
    """Each estimator's (rows, columns) figure: the tool prints the rows' first."""
    seen: dict[str, list[float]] = {}
    for label, value in re.findall(r"^Literal (.+) Estimate: min entropy = (\S+)$", tool_output(),
                                   re.M):  # fmt: skip
        seen.setdefault(label, []).append(float(value))
    assert all(len(v) == 2 for v in seen.values()), seen
    return {label: (v[0], v[1]) for label, v in seen.items()}


def binomial_cutoff(p: float, alpha: float, n: int = 1000) -> int:
    """The least c with P(X > c) <= alpha for X ~ binomial(n, p), in 50-digit arithmetic."""
    mpmath.mp.dps = 50
    q = mpmath.mpf(p)
    tail = mpmath.mpf(0)
    for c in range(n, -1, -1):  # tail = P(X > c - 1) after adding P(X = c)
        tail += mpmath.binomial(n, c) * q**c * (1 - q) ** (n - c)
        if tail > alpha:
            return c
    return 0


@pytest.mark.slow
@pytest.mark.timeout(1800)  # three 1,000,000-sample non-IID runs on a shared machine
def test_restart_matrix_end_to_end_agrees_with_ea_restart(tmp_path: Path) -> None:
    restart = tmp_path / "restart.bin"
    restart.write_bytes(shake_bits(b"SP 800-90B restart matrix", 1_000_000))
    digest = hashlib.sha256(restart.read_bytes()).hexdigest()
    assert f"SHA-256 hash {digest}" in tool_output()  # the same bytes the tool read
    samples = tmp_path / "samples.bin"
    samples.write_bytes(shake_bits(b"SP 800-90B sequential samples", 1_000_000))
    out = tmp_path / "e.json"
    status = main(["entropy", str(samples), "--bits-per-symbol", "1", "--claim", str(H_I),
                   "--restart", str(restart), "--json", str(out)])  # fmt: skip
    doc = json.loads(out.read_text())
    assert status == 0, doc["verdict_reason"]
    assert doc["verdict"] == "PASS"
    rs = doc["restart"]
    assert rs["H_I"] == H_I
    x_max = int(re.search(r"^X_max: (\d+)$", tool_output(), re.M)[1])  # type: ignore[index]
    assert max(rs["max_row_count"], rs["max_column_count"]) == x_max
    assert rs["cutoff"] == binomial_cutoff(2**-H_I, 1 - 0.99 ** (1 / 2000))
    assert rs["sanity_check_passed"]
    figures = tool_figures()
    assert len(figures) == len(rs["row_estimates"]) == len(rs["column_estimates"]) == 10
    for label, (row_want, column_want) in figures.items():
        [row] = [e for e in rs["row_estimates"] if e["name"] == LABELS[label]]
        [column] = [e for e in rs["column_estimates"] if e["name"] == LABELS[label]]
        assert row["min_entropy"] == pytest.approx(row_want, rel=1e-6), label
        assert column["min_entropy"] == pytest.approx(column_want, rel=1e-6), label
    h_r = float(re.search(r"^H_r: (\S+)$", tool_output(), re.M)[1])  # type: ignore[index]
    h_c = float(re.search(r"^H_c: (\S+)$", tool_output(), re.M)[1])  # type: ignore[index]
    assert rs["H_r"] == pytest.approx(h_r, abs=5e-7)  # the tool prints 6 decimals
    assert rs["H_c"] == pytest.approx(h_c, abs=5e-7)
    assert rs["validation_passed"]
    assert "Validation Test Passed" in tool_output()
