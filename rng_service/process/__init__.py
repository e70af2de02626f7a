"""The process model: the composition root (``app``), and for ``serve --front-ends N`` the
writer process, the front-end processes it starts and the channel between them (``ipc``).
The command lines (``rng_service.cli``) start it; it never imports them (docs/architecture.md).
"""
