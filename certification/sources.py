"""Where the certification suite's data comes from: bit files, outcome logs, the lab-mode
generator and the live service. With :mod:`certification.tallies` (and ``rtp``), the only
modules of ``certification`` that import ``rng_service`` (its outcome modules for the exact
distributions, its generators and its client); everything else in the package is pure
statistics over what they hand it.

* **Bit files** (part 1's formats, docs/certification.md): ``binary`` = raw bytes, most
  significant bit first; ``ascii`` = the characters 0/1, whitespace ignored
  (:func:`read_bit_file`, :func:`write_bit_file`).
* **Outcome records**, JSON Lines (:func:`read_records`), either
  - canonical log entries, one per line (docs/log-format.md, "Entries"): objects with at least
    ``"kind"``, ``"params"`` and ``"outcome"`` (``params`` may be omitted for kinds whose
    parameters are inside the outcome, such as ``roulette_spin``); or
  - an ``rng-audit-export`` file, v1 or v2 (``rng-audit export``): the header and checkpoint
    lines are skipped and each ``{"type": "entry", "entry": <base64>}`` line is decoded to its
    entry.
  The signatures and Merkle tree of an export are checked by ``rng-audit verify``, not here.
* **Lab mode** (:func:`lab_generator`, :func:`generate_records`): outcomes drawn exactly as the
  service draws them (``rng_service.outcomes.*.draw`` over a ``RandomSource``) from a
  ``DeterministicGenerator`` (SP 800-90A CTR_DRBG with a caller-given seed), so a lab can
  reproduce a run byte for byte.
* **The live service** (:func:`collect_live`): the ordinary outcome RPCs through
  ``rng_service.rpc.client.RngClient``, loopback addresses only, bounded by a count and a
  time limit; each outcome is taken from its receipt's canonical entry, so the record is what
  the log holds.
* **The live raw stream** (:func:`live_raw_bytes`, :func:`collect_live_bits`): raw generator
  bytes from ``LabService.StreamRawOutput`` (lab role, a service configured for certification),
  in sessions of at most ``session_bytes``, each logged by the service as one
  ``raw_output_session`` entry (its request id, log index and receipt are recorded); over
  mTLS (``--ca/--cert/--key``) to any address, in plaintext
  to loopback only; bounded in bytes and time.

:mod:`certification.tallies` turns the records into an
:class:`~certification.outcomes.OutcomeSample`. Input problems raise :class:`SourceError`
naming the line.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from certification.bitfile import PackedBits, read_bits
from certification.errors import InputError
from rng_service.drbg import DeterministicGenerator
from rng_service.outcomes import (
    cards,
    dice,
    fire_numbers,
    generic,
    jackpot,
    mega_fire_blaze,
    multiball,
    roulette,
)
from rng_service.outcomes.profiles import (
    MegaFireBlazeProfile,
    builtin_profile_names,
    load_builtin_profile,
)
from rng_service.outcomes.roulette import WHEEL_ORDER, WheelType
from rng_service.sampling import RandomSource

__all__ = [
    "DEFAULT_LAB_PLAN",
    "DEFAULT_LIVE_PLAN",
    "KIND_PARAMS",
    "LIVE_SESSION_BYTES",
    "LIVE_TIME_LIMIT",
    "ByteSource",
    "LiveTls",
    "RandBelow",
    "Record",
    "SourceError",
    "collect_live",
    "collect_live_bits",
    "generate_records",
    "lab_generator",
    "live_raw_bytes",
    "random_source",
    "read_bit_file",
    "read_records",
    "records_from_lines",
    "spin_positions",
    "write_bit_file",
    "write_records",
]

Record = dict[str, Any]

#: Kinds :func:`generate_records` and :func:`collect_live` can produce, with their parameters.
KIND_PARAMS: dict[str, dict[str, Any]] = {
    "roulette_single_zero": {"wheel": "single_zero"},
    "roulette_double_zero": {"wheel": "double_zero"},
    "roulette_double_zero_as_single_zero": {"wheel": "double_zero_as_single_zero"},
    "sic_bo": {"count": 3, "sides": 6},
    "fire_numbers": {},
    "jackpot_tier": {},
    "multiball_3": {"wheel": "double_zero", "balls": 3},
    "card_shuffle": {"decks": 1, "jokers": 0},
    "card_shoe_6": {"decks": 6, "jokers": 0},
    "mega_fire_blaze_bonus": {},
    "uniform_int": {"low": 1, "high": 100, "count": 5, "distinct": False},
    "uniform_int_distinct": {"low": 1, "high": 80, "count": 20, "distinct": True},
    "weighted_choice": {"weights": [1, 2, 3, 4, 10], "count": 5},
}
#: Log entry kinds that are not outcomes: game profile registrations, raw-output sessions and
#: an operator's voided rounds (``VoidRound``). The battery lists them and tests nothing in them.
NOT_OUTCOME_KINDS = ("mega_fire_blaze", "raw_output_session", "round_void")
DEFAULT_LIVE_PLAN: dict[str, int] = {"roulette_double_zero": 2000}
#: What ``rng-certify collect --lab-seed`` draws unless told otherwise (a few seconds).
DEFAULT_LAB_PLAN: dict[str, int] = {
    "roulette_single_zero": 50_000,
    "roulette_double_zero": 50_000,
    "roulette_double_zero_as_single_zero": 20_000,
    "sic_bo": 20_000,
    "fire_numbers": 20_000,
    "jackpot_tier": 5_000,
    "multiball_3": 10_000,
    "card_shuffle": 2_000,
    "card_shoe_6": 1_000,
    "mega_fire_blaze_bonus": 5_000,
    "uniform_int": 5_000,
    "uniform_int_distinct": 1_000,
    "weighted_choice": 5_000,
}
#: Seconds a live collection may take at most unless told otherwise.
LIVE_TIME_LIMIT = 300.0
#: Bytes asked for in one raw-output session (the service allows up to
#: certification.raw_stream_max_bytes, by default 1 GiB).
LIVE_SESSION_BYTES = 256 * 1024 * 1024
_LOOPBACK_NAMES = ("localhost",)


class SourceError(InputError):
    """A source cannot be read or used: missing file, bad line, unknown profile, refused
    address, service error. Subclasses the CLI's input error, so it exits with status 2."""


class ByteSource(Protocol):
    def random_bytes(self, n: int) -> bytes: ...


class RandBelow(Protocol):
    """What the known-bad shuffles need from a fair source: uniform integers below n."""

    def randbelow(self, n: int) -> int: ...


# --- bit files ---------------------------------------------------------------------------------


def read_bit_file(path: Path, fmt: str) -> PackedBits:
    """Part 1's reader (``binary`` MSB first, ``ascii`` 0/1 with whitespace ignored)."""
    return read_bits(path, fmt)


def write_bit_file(path: Path, data: bytes, fmt: str) -> None:
    """Writes ``data`` as a bit file: ``binary`` as is, ``ascii`` one character per bit (MSB
    first), 64 characters a line."""
    if fmt == "binary":
        path.write_bytes(data)
        return
    bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8)) + np.uint8(ord("0"))
    text = bits.tobytes()
    lines = [text[i : i + 64] for i in range(0, len(text), 64)]
    path.write_bytes(b"\n".join(lines) + b"\n")


# --- generators --------------------------------------------------------------------------------


def lab_generator(seed: str | bytes) -> ByteSource:
    """A ``DeterministicGenerator`` (lab mode, docs/random-core.md) seeded from ``seed``:
    entropy input SHA-256("certification-entropy" || seed), nonce SHA-256("certification-nonce"
    || seed)[:16], personalization ``b"rng-certify"``."""
    raw = seed.encode() if isinstance(seed, str) else bytes(seed)
    return DeterministicGenerator(
        entropy_input=hashlib.sha256(b"certification-entropy" + raw).digest(),
        nonce=hashlib.sha256(b"certification-nonce" + raw).digest()[:16],
        personalization=b"rng-certify",
    )


def random_source(source: ByteSource) -> RandomSource:
    """The service's own unbiased sampler over ``source``."""
    return RandomSource(source)


def spin_positions(source: ByteSource, wheel: str, count: int) -> list[int]:
    """``count`` wheel positions drawn exactly as ``roulette.draw`` draws a single zero or
    double zero wheel (one ``randbelow(size)`` each)."""
    size = len(WHEEL_ORDER[WheelType(wheel)])
    return [int(x) for x in RandomSource(source).randbelow_batch(size, count)]


# --- records -----------------------------------------------------------------------------------


def _decode_line(line: str, where: str) -> Record | None:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise SourceError(f"{where}: not JSON ({e.msg})") from e
    if not isinstance(obj, dict):
        raise SourceError(f"{where}: not a JSON object")
    if "format" in obj or obj.get("type") == "checkpoint":
        return None  # rng-audit-export header or checkpoint
    if obj.get("type") == "entry":
        try:
            entry = json.loads(base64.b64decode(obj["entry"], validate=True))
        except (KeyError, binascii.Error, ValueError, TypeError) as e:
            raise SourceError(f"{where}: export entry line without a base64 JSON entry") from e
        obj = entry
        if not isinstance(obj, dict):
            raise SourceError(f"{where}: the exported entry is not a JSON object")
    if not isinstance(obj.get("kind"), str) or not isinstance(obj.get("outcome"), dict):
        raise SourceError(f"{where}: a record needs a string 'kind' and an object 'outcome'")
    return obj


def records_from_lines(lines: Iterable[bytes], name: str) -> Iterator[Record]:
    """Records of JSON Lines given as bytes (canonical entries or an ``rng-audit-export``
    file), one at a time: nothing is kept."""
    for number, raw in enumerate(lines, 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SourceError(f"{name}:{number}: not UTF-8 text") from e
        if line.strip():
            record = _decode_line(line, f"{name}:{number}")
            if record is not None:
                yield record


def read_records(path: Path) -> Iterator[Record]:
    """Records of a JSON Lines file (canonical entries or an ``rng-audit-export`` file)."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError as e:
        raise SourceError(f"cannot read {path}: {e.strerror or e}") from e
    with handle:
        try:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    record = _decode_line(line, f"{path}:{number}")
                    if record is not None:
                        yield record
        except UnicodeDecodeError as e:
            raise SourceError(f"{path}: not UTF-8 text") from e


def write_records(path: Path, records: Iterable[Record]) -> int:
    """Writes records as JSON Lines (sorted keys, compact); returns how many."""
    n = 0
    try:
        with path.open("w", encoding="utf-8") as out:
            for r in records:
                out.write(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n")
                n += 1
    except OSError as e:
        raise SourceError(f"cannot write {path}: {e.strerror or e}") from e
    return n


def generate_records(source: ByteSource, plan: Mapping[str, int]) -> list[Record]:
    """Lab-mode outcomes: for each plan item (a :data:`KIND_PARAMS` name and a count), that many
    outcomes drawn by the service's own ``draw`` functions over one ``RandomSource``."""
    src = RandomSource(source)
    profile = load_builtin_profile(builtin_profile_names()[0])
    records: list[Record] = []
    for name, count in plan.items():
        if name not in KIND_PARAMS:
            raise SourceError(f"unknown kind {name!r}; known: {', '.join(KIND_PARAMS)}")
        for _ in range(count):
            records.append(_draw_one(src, name, profile))
    return records


def _draw_one(src: RandomSource, name: str, profile: MegaFireBlazeProfile) -> Record:
    p = KIND_PARAMS[name]
    if name.startswith("roulette_"):
        sp = roulette.SpinParams(wheel=WheelType(p["wheel"]))
        return _record("roulette_spin", sp.to_record(), roulette.draw(src, sp).to_record())
    if name == "sic_bo":
        dp = dice.DiceParams(count=p["count"], sides=p["sides"])
        return _record("dice_roll", dp.to_record(), dice.draw(src, dp).to_record())
    if name == "fire_numbers":
        fp = fire_numbers.FireNumberParams(profile=profile)
        return _record("fire_numbers", fp.to_record(), fire_numbers.draw(src, fp).to_record())
    if name == "jackpot_tier":
        jp = jackpot.JackpotParams(profile=profile)
        return _record("jackpot_tier", jp.to_record(), jackpot.draw(src, jp).to_record())
    if name == "multiball_3":
        mp = multiball.MultiBallParams(wheel=WheelType(p["wheel"]), balls=p["balls"])
        return _record("multiball", mp.to_record(), multiball.draw(src, mp).to_record())
    if name == "mega_fire_blaze_bonus":
        fp = fire_numbers.FireNumberParams(profile=profile)
        count = len(fire_numbers.draw(src, fp).numbers)
        bp = mega_fire_blaze.BonusParams(profile=profile, fire_number_count=count)
        return _record("mega_fire_blaze_bonus", bp.to_record(),
                       mega_fire_blaze.draw(src, bp).to_record())  # fmt: skip
    if name.startswith("uniform_int"):
        up = generic.UniformParams(**p)
        return _record("uniform_int", up.to_record(), generic.draw_uniform(src, up).to_record())
    if name == "weighted_choice":
        wp = generic.WeightedParams(weights=tuple(p["weights"]), count=p["count"])
        return _record("weighted_choice", wp.to_record(),
                       generic.draw_weighted(src, wp).to_record())  # fmt: skip
    cp = cards.ShuffleParams(decks=p["decks"], jokers=p["jokers"])
    return _record("card_shuffle", cp.to_record(), cards.draw(src, cp).to_record())


def _record(kind: str, params: Mapping[str, Any], outcome: Mapping[str, Any]) -> Record:
    return {"kind": kind, "params": dict(params), "outcome": dict(outcome)}


# --- the live service --------------------------------------------------------------------------


def _check_loopback(target: str) -> None:
    host = target.rsplit(":", 1)[0].strip("[]")
    if host in _LOOPBACK_NAMES:
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise SourceError(
        f"refusing to collect from {target}: only loopback addresses (127.0.0.0/8, ::1, "
        "localhost) are allowed; run the collector on the service's host"
    )


def collect_live(
    target: str,
    plan: Mapping[str, int],
    *,
    time_limit: float = LIVE_TIME_LIMIT,
    table_id: str = "CERT",
    run_id: str | None = None,
    profile: str | None = None,
    on_outcome: Callable[[], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> list[Record]:
    """Outcomes from a running service through its ordinary RPCs, as logged.

    ``plan`` maps :data:`KIND_PARAMS` names to counts; collection stops at the counts or after
    ``time_limit`` seconds, whichever comes first (the records so far are returned). Request
    ids are ``<run_id>-<kind>-<i>``, each outcome in a round of its own (a round's slot is
    filled once), so a rerun with the same ``run_id`` replays the logged outcomes instead of
    drawing new ones. Only loopback targets are accepted.
    """
    # Imported here: only live collection needs grpc, so reading files never loads it.
    from rng_service.rpc.client import ClientError, RngClient

    _check_loopback(target)
    for name in plan:
        if name not in KIND_PARAMS:
            raise SourceError(f"unknown kind {name!r}; known: {', '.join(KIND_PARAMS)}")
    run = run_id or f"cert{int(time.time() * 1000)}"
    deadline = clock() + time_limit
    records: list[Record] = []
    try:
        with RngClient(target) as client:
            profile_name = profile or _first_profile(client.profiles())
            for name, count in plan.items():
                for i in range(count):
                    if clock() >= deadline:
                        return records
                    ids = {"table_id": table_id, "round_id": f"{run}-{name}-{i}",
                           "request_id": f"{run}-{name}-{i}"}  # fmt: skip
                    entry = _live_one(client, name, ids, profile_name, deadline, clock)
                    if entry is None:  # the time limit ran out inside a bonus game's rounds
                        return records
                    records.append(_record(entry["kind"], entry["params"], entry["outcome"]))
                    if on_outcome is not None:
                        on_outcome()
    except ClientError as e:
        raise SourceError(f"service at {target}: {e}") from e
    return records


@dataclass(frozen=True)
class LiveTls:
    """mTLS files for a live source, as ``rng-service call --ca/--cert/--key``: the CA of the
    service's certificate, and the lab's client certificate and key (PEM)."""

    ca: Path
    cert: Path
    key: Path


def _raw_client(target: str, tls: LiveTls | None) -> Any:
    from rng_service.rpc.client import ClientTls, RngClient

    if tls is None:
        try:
            _check_loopback(target)
        except SourceError as e:
            raise SourceError(f"{e} (or stream over mTLS with --ca/--cert/--key)") from None
        return RngClient(target)
    try:
        creds = ClientTls.from_files(tls.ca, tls.cert, tls.key)
    except OSError as e:
        raise SourceError(f"cannot read a TLS file: {e.filename}: {e.strerror or e}") from e
    return RngClient(target, tls=creds)


def live_raw_bytes(
    target: str,
    *,
    tls: LiveTls | None = None,
    total: int | None = None,
    session_bytes: int = LIVE_SESSION_BYTES,
    time_limit: float = LIVE_TIME_LIMIT,
    run_id: str | None = None,
    sessions: list[dict[str, Any]] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[bytes]:
    """Raw generator output from ``LabService.StreamRawOutput``, chunk by chunk.

    ``total`` bytes in all (None: until ``time_limit``, for dieharder, which reads what it
    needs and stops), in sessions of at most ``session_bytes`` with request ids
    ``<run_id>-raw-<n>``; each session (request id, log index, generator instance and epoch,
    bytes, and its receipt as ``rng-service-receipt/v1`` JSON) is appended to ``sessions``.
    Stops when ``time_limit`` seconds have passed (the chunks so far are what was yielded).
    Service errors raise :class:`SourceError`.
    """
    from rng_service.log.receipt import receipt_to_json
    from rng_service.rpc.client import ClientError, RawSession

    if session_bytes < 1 or (total is not None and total < 1):
        raise SourceError("the raw byte counts must be positive")
    run = run_id or f"cert{int(time.time() * 1000)}"
    deadline = clock() + time_limit
    sent = 0
    number = 0
    client = _raw_client(target, tls)
    try:
        while total is None or sent < total:
            remaining = deadline - clock()
            if remaining <= 0:
                return
            want = session_bytes if total is None else min(session_bytes, total - sent)
            rid = f"{run}-raw-{number}"

            def note(session: RawSession, rid: str = rid) -> None:
                if sessions is not None:
                    sessions.append({
                        "request_id": rid,
                        "log_index": session.receipt.index,
                        "generator_instance": session.generator_instance,
                        "generator_epoch": session.generator_epoch,
                        "num_bytes": session.num_bytes,
                        "receipt": json.loads(receipt_to_json(session.receipt)),
                    })  # fmt: skip

            stream = client.raw_stream(
                want, request_id=rid, table_id="CERT", timeout=remaining, on_session=note
            )
            for chunk in stream:
                sent += len(chunk)
                yield chunk
            number += 1
    except ClientError as e:
        if e.code == "DEADLINE_EXCEEDED" and clock() >= deadline - 1.0:
            return  # the time limit ran out in the middle of a session
        raise SourceError(f"raw output stream from {target}: {e}") from e
    finally:
        client.close()


def collect_live_bits(
    target: str,
    num_bytes: int,
    *,
    tls: LiveTls | None = None,
    session_bytes: int = LIVE_SESSION_BYTES,
    time_limit: float = LIVE_TIME_LIMIT,
    run_id: str | None = None,
    sessions: list[dict[str, Any]] | None = None,
) -> PackedBits:
    """Exactly ``num_bytes`` raw bytes from the live service as part 1's packed bits (MSB
    first); fewer before the time limit is an error."""
    buffer = bytearray()
    for chunk in live_raw_bytes(
        target, tls=tls, total=num_bytes, session_bytes=session_bytes,
        time_limit=time_limit, run_id=run_id, sessions=sessions,
    ):  # fmt: skip
        buffer += chunk
    if len(buffer) < num_bytes:
        raise SourceError(
            f"raw output stream from {target}: only {len(buffer)} of {num_bytes} bytes "
            f"arrived within the time limit of {time_limit:g} s"
        )
    packed = np.frombuffer(bytes(buffer), dtype=np.uint8)
    return PackedBits(packed=packed, size=8 * int(packed.size))


def _first_profile(profiles: Sequence[Mapping[str, Any]]) -> str:
    for p in profiles:
        name = p.get("name") or p.get("id", {}).get("name")
        if isinstance(name, str) and name:
            return name
    return builtin_profile_names()[0]


#: Rounds tried for one Mega Fire Blaze bonus game: a round has one only when its spin comes to
#: rest on one of its Fire Numbers (617b.7(f)), under the example profile about 1 round in 27
#: (1.39 Fire Numbers on average of 37 pockets); 2,000 misses in a row happen with probability
#: below 10^-30.
BONUS_ROUND_ATTEMPTS = 2_000


def _live_bonus(
    client: Any,
    ids: dict[str, str],
    profile: str,
    deadline: float,
    clock: Callable[[], float],
) -> Any:
    """The receipt of one bonus game, played in the rules' order: per round the Fire Numbers,
    then the round's spin on the single zero wheel, and the bonus when the spin came to rest
    on a Fire Number; else the next round (round ids ``<request id>-r<j>``, the draws' request
    ids end in ``-fire`` and ``-spin``, the bonus has the record's request id). None when the
    time limit runs out first."""
    base = ids["request_id"]
    for j in range(BONUS_ROUND_ATTEMPTS):
        if clock() >= deadline:
            return None
        round_ids = {"table_id": ids["table_id"], "round_id": f"{base}-r{j}"}
        fire = client.fire_numbers(profile=profile, request_id=f"{base}-r{j}-fire", **round_ids)
        numbers = json.loads(fire.receipt.entry)["outcome"]["numbers"]
        spin = client.spin(wheel="single_zero", request_id=f"{base}-r{j}-spin", **round_ids)
        if json.loads(spin.receipt.entry)["outcome"]["final"]["number"] in numbers:
            return client.mega_fire_blaze_bonus(
                profile=profile, fire_numbers_index=fire.receipt.index, request_id=base,
                **round_ids,
            ).receipt  # fmt: skip
    raise SourceError(
        f"no spin came to rest on a Fire Number in {BONUS_ROUND_ATTEMPTS} rounds ({base})"
    )


def _live_one(
    client: Any,
    name: str,
    ids: dict[str, str],
    profile: str,
    deadline: float,
    clock: Callable[[], float],
) -> Record | None:
    p = KIND_PARAMS[name]
    if name.startswith("roulette_"):
        receipt = client.spin(wheel=p["wheel"], **ids).receipt
    elif name == "sic_bo":
        receipt = client.roll_dice(count=p["count"], sides=p["sides"], **ids).receipt
    elif name == "fire_numbers":
        receipt = client.fire_numbers(profile=profile, **ids).receipt
    elif name == "jackpot_tier":
        receipt = client.jackpot_tier(profile=profile, **ids).receipt
    elif name == "multiball_3":
        receipt = client.multiball(wheel=p["wheel"], balls=p["balls"], **ids).receipt
    elif name == "mega_fire_blaze_bonus":
        # The bonus takes its Fire Number count from the round's logged Fire Number draw.
        receipt = _live_bonus(client, ids, profile, deadline, clock)
        if receipt is None:
            return None
    elif name.startswith("uniform_int"):
        receipt = client.uniform(**p, **ids).receipt
    elif name == "weighted_choice":
        receipt = client.weighted(weights=list(p["weights"]), count=p["count"], **ids).receipt
    else:
        receipt = client.shuffle(decks=p["decks"], jokers=p["jokers"], **ids).receipt
    entry = json.loads(receipt.entry)
    if not isinstance(entry, dict):
        raise SourceError("the service returned a receipt whose entry is not a JSON object")
    return entry


# --- records -> OutcomeSample ------------------------------------------------------------------
