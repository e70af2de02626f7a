"""MultiMMC's and LZ78Y's dictionary limits (SP 800-90B 6.3.9, 6.3.10) against NIST's tool.

MultiMMC keeps at most 100,000 (context, next) entries per model and LZ78Y at most 65,536
contexts in all; once full, nothing new is added. The inputs below (8-bit samples for both,
1-bit for MultiMMC's binary path) are made here from SHAKE-256 (tests/vectors/README.md,
"sp800_90b") so that each dictionary fills and the limit moves the figure: NIST's
``ea_non_iid -vv`` on them (version 1.1.7, unchanged) is the known answer in
``tests/vectors/sp800_90b/<name>.res``; the same tool built with one more entry of room
(``<name>.plus1.res``) and with both limits raised to 10^8 (``<name>.nolimit.res``) counts
other numbers of correct predictions (one more entry: the same on the 1-bit input). Our
estimate must match the first and, with our limit constant raised the same way, the other two.
C, N and r are compared exactly, the min-entropy to a relative 1e-6 as for NIST's sample files.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from certification.entropy import predictors
from certification.entropy._estimate import Estimate
from certification.entropy._samples import Samples

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "sp800_90b"
TOLERANCE = 1e-6
UNLIMITED = 100_000_000  # the limit the .nolimit.res tool was built with


def shake(label: bytes, n: int) -> bytes:
    return hashlib.shake_256(label).digest(n)


def multimmc_input() -> bytes:
    """101,000 SHAKE-256 bytes twice: over 100,000 distinct pairs per model in the first pass;
    in the second, the models predict only the part whose pairs got in."""
    return shake(b"SP 800-90B MultiMMC dictionary limit", 101_000) * 2


def lz78y_input(fill: int) -> bytes:
    """``fill`` symbols 0-127, then 64 distinct symbols 128-255 sixteen times.

    With ``fill`` = 4,385 the dictionary has room for 415 contexts when the motif starts: the
    new contexts of its first 26 samples (15, then 16 each) fill it exactly, and one more entry
    of room admits the 16-sample context before the 27th, which the later passes then predict
    (C 409 -> 424). With ``fill`` = 4,347 the room ends one entry into a sample's contexts, so
    one entry less moves C instead (949 -> 934). An unlimited dictionary admits every motif
    context (C 993).
    """
    head = bytes(b & 0x7F for b in shake(b"SP 800-90B LZ78Y dictionary limit: fill", fill))
    motif: list[int] = []
    for b in shake(b"SP 800-90B LZ78Y dictionary limit: motif", 4096):
        if b | 0x80 not in motif:
            motif.append(b | 0x80)
    return head + bytes(motif[:64]) * 16


def lfsr16() -> bytes:
    """One period (65,535 bits) of the 16-bit LFSR x^16 + x^14 + x^13 + x^11 + 1 from state 1."""
    out = bytearray()
    state = 1
    for _ in range(65_535):
        out.append(state & 1)
        state = (state >> 1) | ((state ^ state >> 2 ^ state >> 3 ^ state >> 5) & 1) << 15
    assert state == 1  # maximal length
    return bytes(out)


def multimmc_bits_input() -> bytes:
    """400,000 SHAKE-256 bits (most significant first), which offer the 16-bit model more than
    100,000 of its 131,072 pairs, then four periods of a 16-bit LFSR, whose next bit the 16-bit
    context decides: the pairs refused keep it from learning a quarter of them."""
    stream = np.frombuffer(shake(b"SP 800-90B binary dictionary limit", 50_000), dtype=np.uint8)
    return np.unpackbits(stream).tobytes() + lfsr16() * 4


Estimator = Callable[..., Estimate]
# name: (input, bits per sample, estimator, our limit constant, its value)
CASES = {
    "multimmc_limit": (multimmc_input, 8, "MultiMMC Prediction", "_MMC_ENTRIES", 100_000),
    "multimmc_limit_bits": (multimmc_bits_input, 1, "MultiMMC Prediction", "_MMC_ENTRIES", 100_000),
    "lz78y_limit": (lambda: lz78y_input(4385), 8, "LZ78Y Prediction", "_LZ_ENTRIES", 65_536),
    "lz78y_limit_short": (lambda: lz78y_input(4347), 8, "LZ78Y Prediction", "_LZ_ENTRIES", 65_536),
}
ESTIMATORS: dict[str, Estimator] = {
    "MultiMMC Prediction": predictors.multi_mmc,
    "LZ78Y Prediction": predictors.lz78y,
}
# The tool's builds: unchanged, with one entry of room more and less, and without a limit in
# practice.
BUILDS = {"res": 0, "plus1.res": 1, "minus1.res": -1, "nolimit.res": UNLIMITED}
_LINE = re.compile(r"^Literal (.+) Estimate: (.+?) = (\S+)$")


def tool(file: str, label: str) -> dict[str, str]:
    """The literal figures the tool printed for one estimator."""
    text = (VECTORS / file).read_text()
    return {m[2]: m[3] for line in text.splitlines() if (m := _LINE.match(line)) and m[1] == label}


def distinct(s: npt.NDArray[np.uint8], length: int) -> int:
    """How many distinct substrings of ``length`` samples ``s`` holds."""
    windows = np.ascontiguousarray(sliding_window_view(s, length))
    return int(np.unique(windows.view(np.dtype((np.void, length)))).size)


def check(got: Estimate, want: dict[str, str]) -> None:
    assert (got.details["C"], got.details["N"], got.details["r"]) == (
        int(want["C"]), int(want["N"]), int(want["r"])
    )  # fmt: skip
    assert got.min_entropy is not None
    assert got.min_entropy == pytest.approx(float(want["min entropy"]), rel=TOLERANCE)


def ours(name: str) -> Estimate:
    make, bits, label, _, _ = CASES[name]
    samples = Samples.from_bytes(make(), bits)
    return ESTIMATORS[label](samples.symbols, samples.alphabet, bitstring=False)


@pytest.mark.parametrize("name", list(CASES))
def test_inputs_are_the_bytes_the_tool_read_and_fill_the_dictionary(name: str) -> None:
    make, bits, label, _, limit = CASES[name]
    data = make()
    digest = hashlib.sha256(data).hexdigest()
    for file in (f"{name}.{build}" for build in BUILDS):
        assert f"SHA-256 hash {digest}" in (VECTORS / file).read_text(), file
    s = np.frombuffer(data, dtype=np.uint8)
    if label == "MultiMMC Prediction" and bits == 1:
        # Only the 16-bit model can fill: the others have at most 2^16 pairs.
        assert distinct(s, 17) > limit
    elif label == "MultiMMC Prediction":
        # The models of 2 .. 16 samples see more distinct (context, next) pairs than they keep
        # (a longer substring has at least as many distinct values less one); the 1-sample
        # model of 8-bit samples has at most 65,536.
        assert distinct(s, 3) > limit
    else:
        # Contexts of length 1 .. 16 before the predicted samples 16 .. n-1.
        assert sum(distinct(s[16 - j : -1], j) for j in range(1, 17)) > limit
    # The limit moves the tool's count of correct predictions.
    assert tool(f"{name}.res", label)["C"] != tool(f"{name}.nolimit.res", label)["C"]


@pytest.mark.slow
@pytest.mark.parametrize("build", list(BUILDS))
@pytest.mark.parametrize("name", list(CASES))
def test_estimate_agrees_with_the_tool_built_with_that_limit(
    name: str, build: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, label, constant, limit = CASES[name]
    if BUILDS[build]:  # else our constant as it is
        monkeypatch.setattr(predictors, constant, min(limit + BUILDS[build], UNLIMITED))
    check(ours(name), tool(f"{name}.{build}", label))
