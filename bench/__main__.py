"""``python -m bench [--short] [AREA ...]``: runs the benchmark modules and writes JSON results."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path

from bench._common import print_rows, write_results


def areas() -> list[str]:
    here = Path(__file__).resolve().parent
    return sorted(
        m.name.removeprefix("bench_")
        for m in pkgutil.iter_modules([str(here)])
        if m.name.startswith("bench_")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--short", action="store_true", help="seconds-long smoke run")
    parser.add_argument("--results", type=Path, help="directory for the JSON results")
    parser.add_argument("areas", nargs="*", help=f"subset of: {', '.join(areas())}")
    args = parser.parse_args(argv)
    chosen = args.areas or areas()
    unknown = sorted(set(chosen) - set(areas()))
    if unknown:
        parser.error(f"unknown area(s) {unknown}; allowed: {areas()}")
    for area in chosen:
        print(f"== {area}")
        module = importlib.import_module(f"bench.bench_{area}")
        rows = module.run(short=args.short)
        print_rows(rows)
        print(f"   -> {write_results(area, rows, args.results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
