"""Rewrites the tables of docs/operations.md that are generated from the code.

- the refusal/failure table, :data:`rng_service.rpc.errors.STATUS_CAUSES`, between the
  ``<!-- status-causes:begin -->`` and ``<!-- status-causes:end -->`` markers
  (``tests/unit/rpc/test_status_causes.py`` fails while the two differ);
- the documented misconfigurations, :data:`rng_service.cli.misconfigurations.MISCONFIGURATIONS`,
  between ``<!-- misconfigurations:begin -->`` and ``<!-- misconfigurations:end -->``
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

DOC = Path(__file__).resolve().parents[1] / "docs" / "operations.md"
#: marker name -> the function that renders the block between its markers
BLOCKS: dict[str, Callable[[], str]] = {
    "status-causes": status_causes_markdown,
    "misconfigurations": misconfigurations_markdown,
}


def main() -> int:
    original = text = DOC.read_text(encoding="utf-8")
    for name, render in BLOCKS.items():
        begin, end = f"<!-- {name}:begin -->\n", f"<!-- {name}:end -->"
        if begin not in text or end not in text:
            print(f"error: {DOC} has no {begin.strip()} ... {end} block", file=sys.stderr)
            return 1
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + begin + render() + end + tail
    if text != original:
        DOC.write_text(text, encoding="utf-8")
        print(f"updated {DOC}")
    else:
        print(f"{DOC} is up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
