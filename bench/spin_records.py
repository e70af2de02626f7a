"""Writes fair roulette outcome records to standard output, for measuring ``rng-certify
outcomes --input -`` on any number of spins (docs/certification.md, "Streaming"):

    python -m bench.spin_records --spins 10000000 | rng-certify outcomes --input - --json o.json

Each line is a canonical ``roulette_spin`` entry's kind, params and outcome, as
``rng-certify collect`` writes them (``--batch K``: ``roulette_spin_batch`` entries of K spins
instead); the compartments come from the lab generator (``DeterministicGenerator`` seeded with
``--seed``) through the service's own sampler, ``RandomSource.randbelow_batch``, so the stream
is fair and the same for the same seed.

``--mix`` writes, instead of spins, the draw kinds in turn (Fire Numbers, jackpot tiers,
multi-ball, generic integers with and without replacement, weighted choices, bonus games),
each drawn by the service's own ``draw`` functions (``certification.sources.generate_records``)
in chunks, so memory stays flat whatever ``--spins`` is (then: outcomes in all).
"""

from __future__ import annotations

import argparse
import json
import sys

from certification.sources import generate_records, lab_generator, random_source
from rng_service.outcomes.roulette import WHEEL_ORDER, WheelType, colour_of

__all__ = ["main"]

CHUNK = 1 << 16


def _spin_line(wheel: WheelType, position: int) -> str:
    number = WHEEL_ORDER[wheel][position]
    spin = {"colour": colour_of(number), "number": number, "position": position,
            "voided": False}  # fmt: skip
    record = {"kind": "roulette_spin", "outcome": {"final": spin, "spins": [spin],
              "wheel": wheel.value}, "params": {"wheel": wheel.value}}  # fmt: skip
    return json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.spin_records", description=__doc__)
    parser.add_argument("--spins", type=int, required=True, help="spins to write")
    parser.add_argument("--wheel", choices=("single_zero", "double_zero"), default="double_zero",
                        help="wheel type (default: double_zero)")  # fmt: skip
    parser.add_argument("--batch", type=int, default=0,
                        help="spins per roulette_spin_batch entry (default: 0, one "
                        "roulette_spin entry per spin)")  # fmt: skip
    parser.add_argument("--seed", default="spin-records", help="lab generator seed "
                        "(default: spin-records)")  # fmt: skip
    parser.add_argument("--mix", action="store_true",
                        help="the draw kinds in turn instead of spins")  # fmt: skip
    args = parser.parse_args(argv)
    if args.mix:
        return _mix(args.spins, args.seed)
    wheel = WheelType(args.wheel)
    size = len(WHEEL_ORDER[wheel])
    lines = [_spin_line(wheel, p) for p in range(size)]
    src = random_source(lab_generator(args.seed))
    out = sys.stdout
    left = args.spins
    while left > 0:
        n = min(CHUNK, left)
        positions = src.randbelow_batch(size, n).tolist()
        if args.batch > 0:
            for start in range(0, n, args.batch):
                numbers = [WHEEL_ORDER[wheel][p] for p in positions[start : start + args.batch]]
                out.write(json.dumps({"kind": "roulette_spin_batch", "outcome": {"numbers":
                          numbers}, "params": {"wheel": wheel.value}}) + "\n")  # fmt: skip
        else:
            out.write("".join(lines[p] for p in positions))
        left -= n
    out.flush()
    return 0


_MIX = ("fire_numbers", "jackpot_tier", "multiball_3", "uniform_int", "uniform_int_distinct",
        "weighted_choice", "mega_fire_blaze_bonus")  # fmt: skip


def _mix(outcomes: int, seed: str) -> int:
    source = lab_generator(seed)
    out = sys.stdout
    left = outcomes
    while left > 0:
        n = min(len(_MIX) * 1_000, left)
        plan = {kind: n // len(_MIX) + (1 if i < n % len(_MIX) else 0)
                for i, kind in enumerate(_MIX)}  # fmt: skip
        records = generate_records(source, plan)
        out.write("".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n"
                          for r in records))  # fmt: skip
        left -= n
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
