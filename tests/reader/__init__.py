"""An independent reader of docs/random-core.md and docs/outcomes.md, and of docs/log-format.md's
map of table heads (``table_map``), test-only code.

It re-derives every outcome kind from the documents alone: its own SP 800-90A CTR_DRBG for the
lab stream, the documented byte consumption of the sampling primitives, and each kind's
documented draw order. It imports nothing from ``rng_service`` or ``certification`` (the
``reader`` row of the layer table in docs/architecture.md; ``make lint`` enforces it), so the
tests that compare it with the code check the code against the documents, not against itself.
"""
