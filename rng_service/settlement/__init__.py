"""Settlement: pure functions from outcomes and a wager to what the wager returns.

The service draws and logs outcomes; it never settles bets. These functions exist so that the
return to player (RTP) of every paytable can be computed exactly and measured against the
service's outcomes (``rng-certify rtp``), and game servers may use them to settle. Each game
module takes outcome values (the numbers, faces and cards the outcome records hold) and a
:class:`~rng_service.settlement.paytables.Paytable`, and returns what one unit staked returns,
stake included (0 for a loss, 1 for a push), as an exact :class:`fractions.Fraction`; each
also gives the exact distribution of that return, from the exact outcome distributions:

``roulette_up`` (58 Pa. Code 617b.4), ``blazing_7s`` (617c.2), ``sic_bo`` (ch. 625a, as amended
by 49 Pa.B. 4956), ``mega_fire_blaze`` (617b.7(h) with the bonus game of 617b.7(g)),
``six_card_bonus`` (641a.6(e), 641a.12(h), 643a.6(e), 643a.12(g)); ``paytables`` holds the
paytable document format and the shipped paytables; ``documents`` reads a profile or a
paytable from a file or from its canonical bytes; ``returns`` the moments of a return
distribution. docs/games.md has every paytable, its RTP and the readings of ambiguous text.

Must not: draw random values, perform I/O beyond reading paytable documents, or import
anything above the outcomes layer (no log, storage, service, grpc, database or metrics).
"""

__all__ = [
    "blazing_7s",
    "documents",
    "mega_fire_blaze",
    "paytables",
    "returns",
    "roulette_up",
    "sic_bo",
    "six_card_bonus",
]
