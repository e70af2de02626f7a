"""Rewrites the tables of docs/operations/ that are generated from the code.

- in docs/operations/monitoring.md, the refusal/failure table,
  :data:`rng_service.rpc.errors.STATUS_CAUSES`, between the
  ``<!-- status-causes:begin -->`` and ``<!-- status-causes:end -->`` markers
  (``tests/unit/rpc/test_status_causes.py`` fails while the two differ);
- in docs/operations/configuration.md, the documented misconfigurations,
  :data:`rng_service.cli.misconfigurations.MISCONFIGURATIONS`, between
  ``<!-- misconfigurations:begin -->`` and ``<!-- misconfigurations:end -->``
  (``tests/integration/test_misconfigurations.py`` fails while they differ, and runs each row).

Run after adding a row:

    .venv/bin/python scripts/render_status_table.py
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from rng_service.cli.misconfigurations import misconfigurations_markdown
from rng_service.rpc.errors import status_causes_markdown

DOCS = Path(__file__).resolve().parents[1] / "docs" / "operations"
#: marker name -> the document holding the block and the function that renders it
BLOCKS: dict[str, tuple[Path, Callable[[], str]]] = {
    "status-causes": (DOCS / "monitoring.md", status_causes_markdown),
    "misconfigurations": (DOCS / "configuration.md", misconfigurations_markdown),
}


def main() -> int:
    for name, (doc, render) in BLOCKS.items():
        if render_block(doc, name, render) != 0:
            return 1
    return 0


def render_block(doc: Path, name: str, render: Callable[[], str]) -> int:
    """Rewrites the block ``name`` of ``doc`` with ``render()``; 1 if the markers are missing."""
    original = text = doc.read_text(encoding="utf-8")
    begin, end = f"<!-- {name}:begin -->\n", f"<!-- {name}:end -->"
    if begin not in text or end not in text:
        print(f"error: {doc} has no {begin.strip()} ... {end} block", file=sys.stderr)
        return 1
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    text = head + begin + render() + end + tail
    if text != original:
        doc.write_text(text, encoding="utf-8")
        print(f"updated {doc}")
    else:
        print(f"{doc} is up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
