"""Outcome catalogue: pure game functions over the random core.

One module per outcome kind, each with a frozen, validated ``...Params`` dataclass, a frozen
outcome dataclass, ``draw(src, params) -> outcome`` drawing only through
:class:`rng_service.sampling.RandomSource`, and functions giving the kind's exact theoretical
distribution as :class:`fractions.Fraction` for the certification suite:

``roulette`` (58 Pa. Code 617a.1, 617a.3, 617a.4), ``multiball`` (Blazing 7's bonus round,
617c.2(f)-(i)), ``fire_numbers`` (Mega Fire Blaze, 617b.7(e)), ``mega_fire_blaze`` (bonus game,
617b.7(g)), ``jackpot`` (jackpot tier, 617b.7(g)(5)(ii)), ``dice`` (Sic Bo, ch. 625a),
``cards`` (shuffles and dealing plans, ch. 639a, 641a, 643a), ``generic`` (uniform integers and
weighted choice), ``profiles`` (versioned TOML game profiles), ``batch`` (vectorised
spins, dice and integers).

This package performs no I/O apart from ``profiles`` reading profile files, and imports no
grpc, database or prometheus module. docs/outcomes.md maps every draw to the bytes it consumes.
"""

__all__ = [
    "batch",
    "cards",
    "dice",
    "fire_numbers",
    "generic",
    "jackpot",
    "mega_fire_blaze",
    "multiball",
    "profiles",
    "roulette",
]
