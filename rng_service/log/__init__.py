"""The transparency log's pure formats: entries, RFC 6962 hashing and proofs, signed-note
checkpoints (C2SP), keys, receipts, round rules, cosignatures. No store and no writer:
those are in :mod:`rng_service.writer`."""

__all__: list[str] = []
