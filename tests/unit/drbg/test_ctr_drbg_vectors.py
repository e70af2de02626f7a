"""NIST CAVP known answers for CtrDrbg (SP 800-90A Rev.1 section 10.2.1), one test per COUNT.

The ``.rsp`` files under ``tests/vectors/ctr_drbg/`` are in their upstream CAVP format; the
loader below reads every one of them, so a lab can drop in the full ``CTR_DRBG.rsp`` (see
``docs/random-core.md``) and run this module unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rng_service.drbg import CAVP_KAT, CtrDrbg

VECTOR_DIR = Path(__file__).resolve().parents[2] / "vectors" / "ctr_drbg"


@dataclass
class CavpCase:
    section: str
    header: dict[str, str]
    count: int
    fields: dict[str, bytes] = field(default_factory=dict)
    additional_inputs: list[bytes] = field(default_factory=list)

    @property
    def cipher(self) -> str:
        return self.section.split(" ")[0]

    @property
    def derivation_function(self) -> bool:
        return self.section.endswith("use df")

    @property
    def id(self) -> str:
        df = "df" if self.derivation_function else "no_df"
        return (
            f"{self.cipher}-{df}-P{self.header['PersonalizationStringLen']}"
            f"-A{self.header['AdditionalInputLen']}-COUNT{self.count}"
        )


def load_rsp(path: Path) -> list[CavpCase]:
    """Parses a CAVP CTR_DRBG ``.rsp`` file (prediction resistance off) into cases."""
    cases: list[CavpCase] = []
    section = ""
    header: dict[str, str] = {}
    current: CavpCase | None = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            body = line[1:-1]
            if "=" in body:
                key, value = (s.strip() for s in body.split("=", 1))
                header[key] = value
            else:
                section, header, current = body, {}, None
            continue
        key, _, value = (s.strip() for s in line.partition("="))
        if key == "COUNT":
            current = CavpCase(section, dict(header), int(value))
            cases.append(current)
        elif current is None:
            raise ValueError(f"{path}: {key} before COUNT")
        elif key == "AdditionalInput":
            current.additional_inputs.append(bytes.fromhex(value))
        else:
            current.fields[key] = bytes.fromhex(value)
    return cases


CASES = [
    case
    for path in sorted(VECTOR_DIR.glob("*.rsp"))
    for case in load_rsp(path)
    if case.cipher == "AES-256" and case.header.get("PredictionResistance") == "False"
]


def test_vectors_are_present() -> None:
    assert len(CASES) == 8
    assert {c.derivation_function for c in CASES} == {True, False}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_cavp_ctr_drbg(case: CavpCase) -> None:
    f = case.fields
    returned_bytes = int(case.header["ReturnedBitsLen"]) // 8
    assert len(f["ReturnedBits"]) == returned_bytes
    assert len(case.additional_inputs) == 2
    drbg = CtrDrbg.instantiate(
        f["EntropyInput"],
        f["Nonce"],
        f["PersonalizationString"],
        derivation_function=case.derivation_function,
    )
    drbg.reseed(f["EntropyInputReseed"], f["AdditionalInputReseed"])
    drbg.generate(returned_bytes, case.additional_inputs[0])  # discarded, per the CAVP flow
    assert drbg.generate(returned_bytes, case.additional_inputs[1]) == f["ReturnedBits"]


def test_embedded_self_test_vector_is_a_checked_in_cavp_case() -> None:
    matching = [
        c
        for c in CASES
        if c.fields["EntropyInput"] == CAVP_KAT.entropy_input
        and c.fields["Nonce"] == CAVP_KAT.nonce
        and c.fields["PersonalizationString"] == CAVP_KAT.personalization
        and c.fields["EntropyInputReseed"] == CAVP_KAT.entropy_input_reseed
        and c.fields["AdditionalInputReseed"] == CAVP_KAT.additional_input_reseed
        and c.additional_inputs == [CAVP_KAT.additional_input_1, CAVP_KAT.additional_input_2]
        and c.fields["ReturnedBits"] == CAVP_KAT.returned_bits
        and c.derivation_function == CAVP_KAT.derivation_function
    ]
    assert len(matching) == 1
