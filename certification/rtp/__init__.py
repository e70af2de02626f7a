"""``rng-certify rtp``: return to player of the regulations' paytables, exact and measured.

``exact`` lists what is priced and computes the exact figures from ``rng_service.settlement``;
``live`` plays rounds through a running service and measures them; ``build`` assembles the
``rng-certify-rtp/v1`` document; ``command`` registers the sub-command (importing the rest
only when it runs). The HTML section is ``certification.report.rtp``.
"""

__all__ = ["build", "command", "exact", "live"]
