"""The bootstrap frame of a front end of ``serve --front-ends N``: what the log writer process
hands each front end it starts, as one length-prefixed pickled frame on the front end's end of
a socketpair (``rng_service.process.ipc``: why pickle is safe on that channel). The writer
(``writer_process``) writes it and the front end (``frontend``) reads it; both import it from
here, so neither imports the other.
"""

from __future__ import annotations

import pickle
import socket
import struct
from dataclasses import dataclass

from rng_service.config import Config
from rng_service.rpc.log_servicer import PublicKeyInfo
from rng_service.rpc.profiles import ProfileRegistry

__all__ = ["Bootstrap", "profile_ids", "read_bootstrap", "write_bootstrap"]

_LEN = struct.Struct(">I")


@dataclass(frozen=True)
class Bootstrap:
    """What a front end is started with (one pickled frame on its channel)."""

    config: Config
    #: The owner's profiles and paytables, (name, version, sha256) each: the front end loads
    #: the same directory and refuses to serve unless it finds exactly these.
    profiles: tuple[tuple[str, str, str], ...]
    keys: tuple[PublicKeyInfo, ...]
    port: int
    index: int


def profile_ids(registry: ProfileRegistry) -> tuple[tuple[str, str, str], ...]:
    return tuple(sorted((d.id.name, str(d.id.version), d.id.sha256) for d in registry.all()))


def write_bootstrap(sock: socket.socket, bootstrap: Bootstrap) -> None:
    data = pickle.dumps(bootstrap, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_LEN.pack(len(data)) + data)


def read_bootstrap(sock: socket.socket) -> Bootstrap:
    def exactly(n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise EOFError("the owner closed the channel before the bootstrap frame")
            buf += chunk
        return bytes(buf)

    (n,) = _LEN.unpack(exactly(4))
    # The owner's own frame on an inherited socketpair (rng_service.process.ipc: why pickle is
    # safe).
    boot = pickle.loads(exactly(n))  # noqa: S301
    if not isinstance(boot, Bootstrap):
        raise TypeError("not a front-end bootstrap frame")
    return boot
