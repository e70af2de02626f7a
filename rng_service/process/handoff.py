"""The supervisor's control channel to a shared front end (``rng_service.process.supervisor``,
``rng_service.process.shared_frontend``): messages, some carrying a descriptor.

A ``SOCK_SEQPACKET`` socketpair made by the supervisor before it starts the front end (the
front end inherits its end; nothing listens on a path, so no other process can connect): one
pickled message per datagram, with at most one descriptor passed alongside it
(``SCM_RIGHTS``): the front end's end of a log writer's channel (``rng_service.process.ipc``),
made by the supervisor when it started that log's process. Pickle is safe here for the reason
it is on the writer's channel: both ends are the same program, over an inherited descriptor.
"""

from __future__ import annotations

import pickle
import socket
from collections.abc import Sequence
from dataclasses import dataclass

from rng_service.config import Config

__all__ = ["MAX_MESSAGE", "SharedBoot", "control_pair", "receive", "send"]

#: Largest message either side reads (the deployment's configuration is a few kilobytes).
MAX_MESSAGE = 1 << 20


@dataclass(frozen=True)
class SharedBoot:
    """The supervisor's first message to a shared front end: the deployment's configuration
    (validated once, by the supervisor), the front end's index and the port it binds."""

    config: Config
    index: int
    port: int


def control_pair() -> tuple[socket.socket, socket.socket]:
    """(the supervisor's end, the front end's end), both close-on-exec (pass the second one
    with ``pass_fds``)."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def send(sock: socket.socket, message: object, fds: Sequence[int] = ()) -> None:
    """One message, with ``fds`` passed alongside (the receiver gets its own copies)."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    socket.send_fds(sock, [data], list(fds))


def receive(sock: socket.socket) -> tuple[object, list[int]]:
    """The next message and the descriptors that came with it; EOFError once the other end
    is closed (blocking: call it from a worker thread)."""
    data, fds, _flags, _address = socket.recv_fds(sock, MAX_MESSAGE, 4)
    if not data:
        for fd in fds:
            socket.close(fd)
        raise EOFError("the control channel is closed")
    # The supervisor's own message on an inherited socketpair (see the module docstring).
    return pickle.loads(data), fds  # noqa: S301
