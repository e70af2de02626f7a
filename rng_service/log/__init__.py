"""The tamper-evident log: entries, RFC 6962 Merkle tree, signed checkpoints, keys, appender."""

__all__: list[str] = []
