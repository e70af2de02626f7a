"""The transparency log's writer: the sequencer (:mod:`~rng_service.writer.appender`), the
stored RFC 6962 tree, the store's own check and health, and the rounds that send published
C2SP checkpoints to witnesses (:mod:`~rng_service.writer.publisher`). The pure formats are
in :mod:`rng_service.log`.
"""

__all__: list[str] = []
