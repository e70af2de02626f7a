"""The transparency log's writer, split by job as Tessera splits sequencing from integration.

:mod:`~rng_service.writer.queue` gathers commit groups; :mod:`~rng_service.writer.sequencer`
decides each group (idempotency, round rules, draws); :mod:`~rng_service.writer.integrator`
computes the new RFC 6962 nodes, root and proofs (pure); :mod:`~rng_service.writer.committer`
stores the group and signs its C2SP checkpoint; :mod:`~rng_service.writer.recovery` handles a
lost store and ambiguous commits; :mod:`~rng_service.writer.appender` wires them. Beside them:
the stored tree, the store's own check and health, and :mod:`~rng_service.writer.publisher`
(published checkpoints to witnesses). The pure formats are in :mod:`rng_service.log`.
"""

__all__: list[str] = []
