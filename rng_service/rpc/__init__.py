"""Thin gRPC adapters: proto -> domain -> proto. The only importer of ``rng_service._proto``."""

__all__: list[str] = []
