"""The certification suite's one error type for unusable input.

:class:`InputError` is what every ``rng-certify`` command turns into exit status 2 and a
one-line message (never a traceback): a missing, unreadable, malformed or too short input, a
refused live call, an unwritable output.
"""

from __future__ import annotations

__all__ = ["InputError"]


class InputError(Exception):
    """The input cannot be used: missing, unreadable, malformed or too short."""
