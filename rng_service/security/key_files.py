"""Permission checks of private key files (the log's signing keys, the server's TLS key), made
when the service loads them.

A private key file should be readable by its owner only (0600, or 0400 on a read-only mount).
What the check does with other modes:

- **world-writable** (``o+w``): refused, always: anyone on the host could replace the key (a
  signing key of their own would sign checkpoints of the log; a TLS key of their own would let
  them serve as this service);
- **readable or writable by the group, or readable by others** (``g+r``, ``g+w``, ``o+r``):
  a warning by default, since container secret mounts are often 0440 or 0444 (the container's
  only user reads them, and the host's own permissions guard the source); refused with
  ``server.key_file_permissions = "strict"``.

The mode is the one of the file a path leads to (symbolic links are followed, as the key's
reader follows them: Kubernetes secret volumes are links into a hidden directory). A file that
cannot be examined is left to the key's loader, which says why it cannot read it. Pure: no
logging (the caller logs the warning), no clock.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["KEY_FILE_PERMISSIONS", "KeyFilePermissionError", "check_key_file"]

#: The values of ``server.key_file_permissions``.
KEY_FILE_PERMISSIONS = ("warn", "strict")

_WORLD_WRITABLE = stat.S_IWOTH
_SHARED = stat.S_IRGRP | stat.S_IWGRP | stat.S_IROTH


class KeyFilePermissionError(ValueError):
    """A key file's mode lets others than its owner change it (or, strict, read it)."""

    def __init__(self, setting: str, path: str, problem: str) -> None:
        self.setting = setting
        self.path = path
        self.problem = problem
        super().__init__(f"{setting}: {problem}")


def check_key_file(path: str | os.PathLike[str], *, setting: str, strict: bool) -> str | None:
    """Checks the mode of the private key file at ``path`` (named by ``setting`` in messages).

    Raises :class:`KeyFilePermissionError` for a world-writable file, and with ``strict`` for
    one the group or others may read; returns a warning for the latter otherwise, and None for
    a file only its owner may read or write.
    """
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None  # missing or unreadable: the loader names the problem
    shown = f"{Path(path)} (mode {mode:04o})"
    if mode & _WORLD_WRITABLE:
        raise KeyFilePermissionError(
            setting,
            str(path),
            f"{shown} is writable by every user of the host, who could replace the key: "
            f"refused (chmod 0600, or 0400 on a read-only mount)",
        )
    if mode & _SHARED:
        found = [
            what
            for bit, what in (
                (stat.S_IRGRP, "group-readable"),
                (stat.S_IWGRP, "group-writable"),
                (stat.S_IROTH, "world-readable"),
            )
            if mode & bit
        ]
        problem = (
            f"{shown} is {' and '.join(found)}; a private key should be readable by its owner "
            f"only (0600, or 0400 on a read-only mount)"
        )
        if strict:
            raise KeyFilePermissionError(
                setting, str(path), f"{problem} (refused: server.key_file_permissions = strict)"
            )
        return problem
    return None
