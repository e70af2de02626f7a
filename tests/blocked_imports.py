"""A Python environment without some installed packages, for subprocess tests: a
``sitecustomize`` module whose meta path finder refuses the named top-level packages, the way
an installation without them behaves (``ModuleNotFoundError``), and writes every attempt to a
file, so that an import swallowed by a ``try``/``except ImportError`` is still seen.

Used for the ``certify`` extra: the service must run without scipy and jinja2, and
``rng-certify`` must say what to install when they are missing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["attempts", "blocking_env"]

_SITECUSTOMIZE = """
import sys

_BLOCKED = {blocked!r}
_LOG = {log!r}


class _Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _BLOCKED:
            with open(_LOG, "a", encoding="utf-8") as f:
                f.write(name + "\\n")
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
        return None


sys.meta_path.insert(0, _Blocker())
"""


def blocking_env(directory: Path, blocked: Iterable[str]) -> dict[str, str]:
    """The environment of a subprocess in which ``blocked`` cannot be imported (a
    ``sitecustomize`` in ``directory``, first on ``PYTHONPATH``)."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "blocked-attempts.txt"
    (directory / "sitecustomize.py").write_text(
        _SITECUSTOMIZE.format(blocked=sorted(set(blocked)), log=str(log)), encoding="utf-8"
    )
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(directory), path]))}


def attempts(directory: Path) -> list[str]:
    """The blocked imports a subprocess run with :func:`blocking_env` tried."""
    log = directory / "blocked-attempts.txt"
    return log.read_text(encoding="utf-8").split() if log.exists() else []
