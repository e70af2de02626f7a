"""Servicer-level harness: the real OutcomeServicer over a real appender, in-memory storage and a
lab-mode generator, called with a fake gRPC context (no channel, no server)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from grpc import aio

from rng_service.clock import FakeClock
from rng_service.drbg import DeterministicGenerator
from rng_service.log.note import Ed25519NoteSigner
from rng_service.outcomes import roulette
from rng_service.rpc.profiles import ProfileRegistry
from rng_service.rpc.servicers import OutcomeServicer
from rng_service.sampling import RandomSource
from rng_service.storage.memory import MemoryStorage
from rng_service.writer.appender import Appender, AppendResult, DrawRequest
from rng_service.writer.tree import MerkleTree

SIGNER = Ed25519NoteSigner("unit-log", Ed25519PrivateKey.from_private_bytes(bytes(range(32))))
CLIENT = "unit-client"


class FakeContext:
    """What the servicers use of ``aio.ServicerContext``: abort, code and write."""

    def __init__(self) -> None:
        self.written: list[Any] = []
        self.status: grpc.StatusCode | None = None
        self.details = ""

    async def abort(self, code: grpc.StatusCode, details: str = "") -> None:
        self.status = code
        self.details = details
        raise aio.AbortError(details)

    def code(self) -> grpc.StatusCode | None:
        return self.status

    async def write(self, message: Any) -> None:
        self.written.append(message)


class Aborted(Exception):
    def __init__(self, code: grpc.StatusCode | None, details: str) -> None:
        super().__init__(f"{code}: {details}")
        self.code = code
        self.details = details


class ServicerHarness:
    def __init__(self, generator: DeterministicGenerator) -> None:
        self.storage = MemoryStorage()
        self.appender = Appender(
            storage=self.storage,
            tree=MerkleTree.load(self.storage),
            generator=generator,
            signer=SIGNER,
            origin="unit.example/log",
            clock=FakeClock(),
        )
        self.appender.start()
        self.servicer = OutcomeServicer(
            appender=self.appender,
            client_id=CLIENT,
            profiles=ProfileRegistry.load_builtin(),
        )

    def call(self, method: str, request: Any, servicer: OutcomeServicer | None = None) -> Any:
        """The response of a unary RPC, or :class:`Aborted` with the status."""
        context = FakeContext()
        try:
            return asyncio.run(getattr(servicer or self.servicer, method)(request, context))
        except aio.AbortError:
            raise Aborted(context.status, context.details) from None

    def stream(self, method: str, request: Any) -> list[Any]:
        context = FakeContext()
        try:
            asyncio.run(getattr(self.servicer, method)(request, context))
        except aio.AbortError:
            raise Aborted(context.status, context.details) from None
        return context.written

    def close(self) -> None:
        self.appender.stop(publish=False)

    def spin_landing_on(
        self, number: str, *, wheel: str, round_id: str, table_id: str = "T", client: str = CLIENT
    ) -> AppendResult:
        """Logs the round's spin, landing on ``number``, through a second appender on the same
        store (as another replica would) whose generator is chosen so that it does: the
        harness's own generator gives no byte to it."""
        params = roulette.SpinParams(wheel=roulette.WheelType(wheel))
        appender = Appender(
            storage=self.storage,
            tree=MerkleTree.load(self.storage),
            generator=_seeded(landing_seed(number, wheel)),
            signer=SIGNER,
            origin="unit.example/log",
            clock=FakeClock(),
        )
        appender.start()
        try:
            return appender.submit(
                DrawRequest(
                    client_id=client,
                    request_id=f"spin-{round_id}",
                    table_id=table_id,
                    round_id=round_id,
                    session_id="",
                    kind="roulette_spin",
                    params=params.to_record(),
                    draw=lambda src: roulette.draw(src, params).to_record(),
                )
            ).result(timeout=30)
        finally:
            appender.stop(publish=False)


def _seeded(seed: int) -> DeterministicGenerator:
    return DeterministicGenerator(entropy_input=seed.to_bytes(32, "big"), nonce=b"\x07" * 16)


@functools.cache
def landing_seed(number: str, wheel: str) -> int:
    """A generator seed whose first spin on ``wheel`` comes to rest on ``number``."""
    params = roulette.SpinParams(wheel=roulette.WheelType(wheel))
    for seed in range(100_000):
        if roulette.draw(RandomSource(_seeded(seed)), params).final.number == number:
            return seed
    raise AssertionError(f"no seed lands on {number}")  # pragma: no cover


@pytest.fixture
def harness() -> Iterator[ServicerHarness]:
    h = ServicerHarness(DeterministicGenerator(entropy_input=bytes(32), nonce=bytes(16)))
    try:
        yield h
    finally:
        h.close()
