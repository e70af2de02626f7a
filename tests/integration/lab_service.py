"""An in-process outcome service on the deterministic lab generator: the real OutcomeServicer,
appender, Merkle tree and signed log (in memory), served by grpc.aio on a loopback port 0 in
its own thread. With a fixed seed every outcome, and so every measured figure, is the same on
every run (a fresh generator per service)."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from grpc import aio

from rng_service._proto.rng.v1 import outcomes_pb2_grpc
from rng_service.clock import FakeClock
from rng_service.drbg import DeterministicGenerator
from rng_service.log.note import Ed25519NoteSigner
from rng_service.rpc.profiles import ProfileRegistry
from rng_service.rpc.servicers import OutcomeServicer
from rng_service.storage.memory import MemoryStorage
from rng_service.writer.appender import Appender
from rng_service.writer.tree import MerkleTree

SIGNER = Ed25519NoteSigner("lab-log", Ed25519PrivateKey.from_private_bytes(bytes(range(32))))


@dataclass
class LabService:
    storage: MemoryStorage
    appender: Appender
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    server: aio.Server
    port: int

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(1.0), self.loop).result(30)
        self.appender.stop(publish=False)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()


def lab_generator(seed: bytes) -> DeterministicGenerator:
    return DeterministicGenerator(
        entropy_input=hashlib.sha256(b"lab-service-entropy" + seed).digest(),
        nonce=hashlib.sha256(b"lab-service-nonce" + seed).digest()[:16],
        personalization=b"rng-service lab service for tests",
    )


def start_lab_service(seed: bytes, profiles: ProfileRegistry | None = None) -> LabService:
    storage = MemoryStorage()
    appender = Appender(
        storage=storage,
        tree=MerkleTree.load(storage),
        generator=lab_generator(seed),
        signer=SIGNER,
        origin="lab.example/log",
        clock=FakeClock(),
    )
    appender.start()
    servicer = OutcomeServicer(
        appender=appender,
        client_id="lab",
        profiles=profiles or ProfileRegistry.load(directory=None, allow_examples=True),
    )
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="lab-service-loop", daemon=True)
    thread.start()

    async def serve() -> tuple[aio.Server, int]:
        server = aio.server()
        outcomes_pb2_grpc.add_OutcomeServiceServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        return server, port

    server, port = asyncio.run_coroutine_threadsafe(serve(), loop).result(30)
    return LabService(storage, appender, loop, thread, server, port)
