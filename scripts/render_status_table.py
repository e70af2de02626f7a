"""Rewrites the refusal/failure table in docs/operations.md from the code.

The table is :data:`rng_service.service.errors.STATUS_CAUSES`; the document shows it between the
``<!-- status-causes:begin -->`` and ``<!-- status-causes:end -->`` markers, and
``tests/unit/service/test_status_causes.py`` fails while the two differ. Run after adding a row:

    .venv/bin/python scripts/render_status_table.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from rng_service.service.errors import status_causes_markdown

DOC = Path(__file__).resolve().parents[1] / "docs" / "operations.md"
BEGIN, END = "<!-- status-causes:begin -->\n", "<!-- status-causes:end -->"


def main() -> int:
    text = DOC.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        print(f"error: {DOC} has no {BEGIN.strip()} ... {END} block", file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    updated = head + BEGIN + status_causes_markdown() + END + tail
    if updated != text:
        DOC.write_text(updated, encoding="utf-8")
        print(f"updated {DOC}")
    else:
        print(f"{DOC} is up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
