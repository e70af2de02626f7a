"""Certified RNG and audited outcome service for the Pennsylvania table games.

Layers, each importing only those below it:

``rng_service.drbg`` and ``rng_service.sampling`` (random core: SP 800-90A DRBG, SP 800-90B
health tests, unbiased integer sampling) <- ``rng_service.outcomes`` (pure game functions) <-
``rng_service.log`` (entries, RFC 6962 Merkle tree, checkpoints) <- ``rng_service.rpc``
(thin gRPC adapters) <- ``rng_service.process.app`` / ``rng_service.cli.service`` (wiring). Storage
(``rng_service.storage``) sits beside the log and keeps opaque bytes.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
