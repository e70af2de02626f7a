"""``rng-witness``: an independent party's C2SP tlog-witness for rng-service logs.

A witness cosigns a log's checkpoint only if it is consistent with every checkpoint of that log
it cosigned before, so a log operator cannot fork the log or cut it back without witnesses
refusing (docs/auditing.md, docs/operations/witnesses.md "Witnesses"). The package stands apart from
the service: it uses the log's formats (:mod:`rng_service.log.note`, ``cosignature``,
``tlog_witness``, ``merkle``) and its own SQLite state, never the service's store, sequencer or
drivers (the layer table in docs/architecture.md).

- :mod:`rng_service.witness.state`: per-origin latest cosigned checkpoint, atomic check-and-store
- :mod:`rng_service.witness.core`: one add-checkpoint request decided in C2SP tlog-witness order
- :mod:`rng_service.witness.server`: the HTTP(S) endpoint
- :mod:`rng_service.witness.config`, :mod:`rng_service.cli.witness`: the ``rng-witness`` command
- :mod:`rng_service.witness.metrics`: its own Prometheus series (``rng_witness_server_*``),
  fed by the server through an injected sink
"""

from rng_service.witness.core import Answer, Witness
from rng_service.witness.state import WitnessState

__all__ = ["Answer", "Witness", "WitnessState"]
