"""The writer's table map work taken out, for the A/B benchmarks of what the map costs.

A benchmark harness, never a setting of the service: :func:`take_out_the_map` replaces, in
this process only, what the table map adds to the log writer (issue 40): no map path rehashed
per entry (``TableMap.set`` does nothing: every entry carries the empty map's root, so entries
keep their format-3 size), no round tail walked from the committed head (``WriterMap.tail``
answers "no entries": the load clients of the benchmarks start a new round with every spin,
for which the tail is not consulted), and no map rows in the append. Used by
``bench.hotpath --no-map`` and, for a whole service, by ``python -m bench._without_map serve
...`` (``bench/bench_map_service.py``'s "without the map" side).
"""

from __future__ import annotations

import sys

__all__ = ["take_out_the_map"]


def take_out_the_map() -> None:
    """Patches the writer's table map work out of this process (see the module docstring)."""
    from rng_service.log.table_map import TableMap
    from rng_service.storage.base import AppendBatch
    from rng_service.writer import committer, heads

    def no_set(self: object, *args: object) -> None:
        return None

    def no_tail(self: object, chain: object) -> None:
        return None

    def no_rows(entries: object, nodes: object, checkpoint: object, rows: object) -> AppendBatch:
        return AppendBatch(entries, nodes, checkpoint)  # type: ignore[arg-type]

    TableMap.set = no_set  # type: ignore[method-assign]
    heads.WriterMap.tail = no_tail  # type: ignore[method-assign,assignment]
    committer.AppendBatch = no_rows  # type: ignore[assignment,misc]


def main(argv: list[str]) -> int:
    """``rng-service ARGV`` with the map taken out."""
    take_out_the_map()
    from rng_service.cli.service import main as service_main

    return service_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
