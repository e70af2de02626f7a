"""The repository's Dockerfile as (INSTRUCTION, arguments) pairs, for the deploy and image tests."""

from __future__ import annotations

from pathlib import Path

DOCKERFILE = Path(__file__).resolve().parents[2] / "Dockerfile"


def instructions(path: Path = DOCKERFILE) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile: continuation lines joined, comment lines
    dropped (also those inside a continued instruction, which Docker ignores too)."""
    found: list[tuple[str, str]] = []
    current = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("#") or (not current and not line.strip()):
            continue
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        current += line
        word, _, rest = current.strip().partition(" ")
        found.append((word.upper(), rest.strip()))
        current = ""
    return found
