"""The command lines: ``rng-service`` (``service``, with ``call``), ``rng-audit`` (``audit``,
with ``tables``), ``rng-witness`` (``witness``) and what they share (``support``, ``text``).
``rng-certify`` lives in ``certification``. Nothing below this package imports it
(docs/architecture.md, "Layer contracts"; docs/cli.md for the conventions).
"""
