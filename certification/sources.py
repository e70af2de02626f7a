"""Where the certification suite's data comes from: bit files, outcome logs, the lab-mode
generator and the live service. The only module of ``certification`` that imports
``rng_service`` (its outcome modules for the exact distributions, its generators and its client);
everything else in the package is pure statistics over what this module hands it.

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

:func:`build_sample` turns records into an :class:`~certification.outcomes.OutcomeSample` with
the exact expected distributions (``roulette.distribution``, ``dice.total_distribution``,
``fire_numbers.count_distribution``, ``jackpot.distribution``, ``multiball.hit_count_distribution``,
``cards.position_distribution`` ...). Input problems raise :class:`SourceError` naming the line.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import json
import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from certification.bitfile import PackedBits, read_bits
from certification.errors import InputError
from certification.outcomes.battery import (
    BONUS_CELLS,
    MAX_STREAM_SPAN,
    MAX_VALUE_CELLS,
    bonus_collision,
    uniform_group_name,
    weighted_group_name,
)
from certification.outcomes.sample import (
    BonusGroup,
    DiceGroup,
    FireNumberGroup,
    JackpotGroup,
    MultiBallGroup,
    OutcomeSample,
    ShuffleGroup,
    UniformGroup,
    WeightedGroup,
    WheelGroup,
    WheelTally,
    fire_collision,
    weighted_expected,
)
from certification.outcomes.shuffles import ShuffleStream, shoe_group
from certification.outcomes.stream import (
    DiscreteStream,
    InclusionTally,
    IntegerStream,
    RepeatStream,
)
from rng_service.drbg import DeterministicGenerator
from rng_service.errors import RngServiceError
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
    load_profile_file,
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
    "build_sample",
    "collect_live",
    "collect_live_bits",
    "generate_records",
    "lab_generator",
    "live_raw_bytes",
    "random_source",
    "read_bit_file",
    "read_records",
    "records_from_lines",
    "sample_from_positions",
    "sample_from_shuffles",
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


@dataclass
class _Profiles:
    """Profiles by SHA-256: the shipped ones plus any given files."""

    by_sha: dict[str, MegaFireBlazeProfile]

    @classmethod
    def load(cls, files: Sequence[Path] = ()) -> _Profiles:
        found = {}
        for name in builtin_profile_names():
            prof = load_builtin_profile(name)
            found[prof.id.sha256] = prof
        for path in files:
            try:
                prof = load_profile_file(path)
            except (OSError, RngServiceError) as e:
                raise SourceError(f"cannot load profile {path}: {e}") from e
            found[prof.id.sha256] = prof
        return cls(found)

    def get(self, params: Mapping[str, Any], where: str) -> MegaFireBlazeProfile:
        ident = params.get("profile")
        sha = ident.get("sha256") if isinstance(ident, dict) else None
        if not isinstance(sha, str) or sha not in self.by_sha:
            raise SourceError(
                f"{where}: profile {ident!r} is not known; pass its TOML file with --profile"
            )
        return self.by_sha[sha]


def _wheel_params(wheel: str) -> roulette.SpinParams:
    try:
        return roulette.SpinParams(wheel=WheelType(wheel))
    except (ValueError, RngServiceError) as e:
        raise SourceError(f"unknown wheel {wheel!r}") from e


def _sequence_alphabet(wheel: WheelType) -> tuple[dict[str, int], int]:
    """Final numbers -> 0..d-1 in wheel order, leaving out 00 where it is always voided."""
    order = [
        n
        for n in WHEEL_ORDER[wheel]
        if not (wheel is WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO and n == "00")
    ]
    return {n: i for i, n in enumerate(order)}, len(order)


def build_sample(records: Iterable[Record], *, profile_files: Sequence[Path] = ()) -> OutcomeSample:
    """Groups ``records`` by kind and parameters, with each group's exact distributions."""
    profiles = _Profiles.load(profile_files)
    spins: dict[str, _WheelTallier] = {}
    rolls: dict[tuple[int, int], _DiceTallier] = {}
    fires: dict[str, _FireTallier] = {}
    tiers: dict[str, _JackpotTallier] = {}
    balls: dict[tuple[str, int], _MultiBallTallier] = {}
    shoes: dict[tuple[int, int], _ShuffleTallier] = {}
    uniform: dict[tuple[int, int, bool], _UniformTallier] = {}
    weighted: dict[tuple[int, ...], _WeightedTallier] = {}
    bonus: dict[tuple[str, int], _BonusTallier] = {}
    untested: dict[str, int] = defaultdict(int)
    not_outcomes: dict[str, int] = defaultdict(int)
    for number, r in enumerate(records, 1):
        where = f"record {number}"
        kind, params, outcome = r["kind"], r.get("params") or {}, r["outcome"]
        try:
            if kind == "roulette_spin":
                wheel = outcome["wheel"]
                voids = sum(1 for s in outcome["spins"] if s["voided"])
                _tallier(spins, wheel).add(outcome["final"]["number"], voids)
            elif kind == "roulette_spin_batch":
                tallier = _tallier(spins, params["wheel"])
                for n in outcome["numbers"]:
                    tallier.add(n, 0)
            elif kind == "dice_roll":
                _dice_tallier(rolls, int(params["count"]), int(params["sides"])).add(
                    tuple(int(f) for f in outcome["faces"])
                )
            elif kind == "dice_roll_batch":
                k, faces = int(params["dice"]), [int(f) for f in outcome["faces"]]
                roller = _dice_tallier(rolls, k, int(params["sides"]))
                for i in range(0, len(faces), k):
                    roller.add(tuple(faces[i : i + k]))
            elif kind == "fire_numbers":
                prof = profiles.get(params, where)
                if prof.id.sha256 not in fires:
                    fires[prof.id.sha256] = _FireTallier(prof)
                fires[prof.id.sha256].add(tuple(outcome["numbers"]))
            elif kind == "jackpot_tier":
                prof = profiles.get(params, where)
                if prof.id.sha256 not in tiers:
                    tiers[prof.id.sha256] = _JackpotTallier(prof)
                tiers[prof.id.sha256].add(outcome["tier"])
            elif kind == "multiball":
                key = (outcome["wheel"], len(outcome["balls"]))
                if key not in balls:
                    balls[key] = _MultiBallTallier(*key)
                balls[key].add(tuple(b["number"] for b in outcome["balls"]))
            elif kind == "card_shuffle":
                key = (outcome["decks"], outcome["jokers"])
                if key not in shoes:
                    shoes[key] = _ShuffleTallier(*key)
                shoes[key].add(tuple(cards.card_code(c) for c in outcome["cards"]))
            elif kind in ("uniform_int", "uniform_int_batch"):
                ukey = (int(params["low"]), int(params["high"]), bool(params.get("distinct")))
                if ukey not in uniform:
                    uniform[ukey] = _UniformTallier(*ukey)
                uniform[ukey].add(tuple(int(v) for v in outcome["values"]))
            elif kind == "weighted_choice":
                wkey = tuple(int(w) for w in params["weights"])
                if wkey not in weighted:
                    weighted[wkey] = _WeightedTallier(wkey)
                weighted[wkey].add(tuple(int(i) for i in outcome["indices"]))
            elif kind == "mega_fire_blaze_bonus":
                prof = profiles.get(params, where)
                bkey = (prof.id.sha256, int(params["fire_number_count"]))
                if bkey not in bonus:
                    bonus[bkey] = _BonusTallier(prof, bkey[1])
                bonus[bkey].add(outcome)
            elif kind in NOT_OUTCOME_KINDS:
                not_outcomes[kind] += 1
            else:
                untested[kind] += 1
        except (KeyError, TypeError, ValueError, RngServiceError) as e:
            raise SourceError(f"{where}: malformed {kind!r} record ({e!r})") from e
    return OutcomeSample(
        wheel_tallies=tuple(t.tally() for _, t in sorted(spins.items())),
        dice=tuple(t.group() for _, t in sorted(rolls.items())),
        fire_numbers=tuple(t.group() for _, t in sorted(fires.items())),
        jackpots=tuple(t.group() for _, t in sorted(tiers.items())),
        multiball=tuple(t.group() for _, t in sorted(balls.items())),
        shuffles=tuple(t.group() for _, t in sorted(shoes.items())),
        uniform=tuple(t.group() for _, t in sorted(uniform.items())),
        weighted=tuple(t.group() for _, t in sorted(weighted.items())),
        bonus=tuple(t.group() for _, t in sorted(bonus.items())),
        untested=dict(untested),
        not_outcomes=dict(not_outcomes),
    )


class _WheelTallier:
    """One wheel type's spins, counted as they are read (memory bounded by the cells)."""

    CHUNK = 1 << 16

    def __init__(self, wheel: str) -> None:
        self.params = _wheel_params(wheel)
        self.wheel = wheel
        self.index, alphabet = _sequence_alphabet(self.params.wheel)
        symbols = tuple(sorted(self.index, key=self.index.__getitem__))
        self.stream = IntegerStream(alphabet, f"wheel/{wheel}", symbols)
        self.counts: dict[str, int] = defaultdict(int)
        self.voids: dict[int, int] = defaultdict(int)
        self.pending: list[int] = []
        self.outcomes = 0

    def add(self, number: str, voids: int) -> None:
        self.counts[number] += 1
        self.voids[voids] += 1
        self.pending.append(self.index.get(number, 0))
        self.outcomes += 1
        if len(self.pending) >= self.CHUNK:
            self._flush()

    def _flush(self) -> None:
        if self.pending:
            self.stream.add(np.asarray(self.pending, dtype=np.int64))
            self.pending = []

    def tally(self) -> WheelTally:
        self._flush()
        voiding = self.params.wheel is WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO
        return WheelTally(
            wheel=self.wheel,
            outcomes=self.outcomes,
            counts=dict(self.counts),
            expected=roulette.distribution(self.params),
            stream=self.stream,
            void_counts=dict(self.voids),
            void_expected=_conditional(roulette.void_count_distribution(self.params))
            if voiding
            else None,
        )


def _tallier(spins: dict[str, _WheelTallier], wheel: str) -> _WheelTallier:
    if wheel not in spins:
        spins[wheel] = _WheelTallier(wheel)
    return spins[wheel]


def _wheel_group(wheel: str, spins: list[tuple[str, int]]) -> WheelGroup:
    params = _wheel_params(wheel)
    index, alphabet = _sequence_alphabet(params.wheel)
    numbers = tuple(n for n, _ in spins)
    voids = params.wheel is WheelType.DOUBLE_ZERO_AS_SINGLE_ZERO
    return WheelGroup(
        wheel=wheel,
        numbers=numbers,
        expected=roulette.distribution(params),
        sequence=tuple(index.get(n, 0) for n in numbers),
        alphabet=alphabet,
        voids=tuple(v for _, v in spins),
        void_expected=_conditional(roulette.void_count_distribution(params)) if voids else None,
        symbols=tuple(sorted(index, key=index.__getitem__)),
    )


def _conditional(dist: Mapping[int, Fraction]) -> dict[int, Fraction]:
    """The distribution given that an outcome was issued: the void counts leave out the
    fail-closed mass (1/38)^64, so they are renormalised over the issued outcomes."""
    total = sum(dist.values(), Fraction(0))
    return {k: v / total for k, v in dist.items()}


def sample_from_positions(wheel: str, positions: Sequence[int]) -> OutcomeSample:
    """An :class:`OutcomeSample` of final spins given as compartment positions of a single zero
    or double zero wheel (for generators that map bytes to positions themselves)."""
    order = WHEEL_ORDER[_wheel_params(wheel).wheel]
    return OutcomeSample(wheels=(_wheel_group(wheel, [(order[p], 0) for p in positions]),))


class _DiceTallier:
    """One (count, sides) group's rolls, counted as they are read."""

    def __init__(self, count: int, sides: int) -> None:
        self.params = dice.DiceParams(count=count, sides=sides)
        self.count, self.sides = count, sides
        faces = tuple(str(f) for f in range(1, sides + 1))
        self.stream = IntegerStream(sides, f"dice/{count}d{sides}", faces)
        self.faces: dict[int, int] = defaultdict(int)
        self.tuples: dict[tuple[int, ...], int] = defaultdict(int)
        self.totals: dict[int, int] = defaultdict(int)
        self.combinations: dict[tuple[int, ...], int] = defaultdict(int)
        self.pending: list[int] = []
        self.outcomes = 0

    def add(self, roll: tuple[int, ...]) -> None:
        self.outcomes += 1
        for f in roll:
            self.faces[f] += 1
            # an impossible face fails the faces test; the stream keeps to its alphabet
            self.pending.append(min(max(f - 1, 0), self.sides - 1))
        self.tuples[roll] += 1
        self.totals[sum(roll)] += 1
        self.combinations[tuple(sorted(roll))] += 1
        if len(self.pending) >= _WheelTallier.CHUNK:
            self._flush()

    def _flush(self) -> None:
        if self.pending:
            self.stream.add(np.asarray(self.pending, dtype=np.int64))
            self.pending = []

    def group(self) -> DiceGroup:
        self._flush()
        p = self.params
        combos = (
            dice.combination_distribution(p) if self.sides ** min(self.count, 6) <= 10**6 else {}
        )
        return DiceGroup(
            count=self.count,
            sides=self.sides,
            outcomes=self.outcomes,
            face_counts=dict(self.faces),
            tuple_counts=dict(self.tuples),
            total_counts=dict(self.totals),
            combination_counts=dict(self.combinations),
            stream=self.stream,
            face_expected=dice.face_distribution(p),
            total_expected=dice.total_distribution(p),
            combination_expected=combos,
        )


def _dice_tallier(
    rolls: dict[tuple[int, int], _DiceTallier], count: int, sides: int
) -> _DiceTallier:
    if (count, sides) not in rolls:
        rolls[(count, sides)] = _DiceTallier(count, sides)
    return rolls[(count, sides)]


class _Pending:
    """Values handed to a stream in chunks of :data:`_WheelTallier.CHUNK`."""

    def __init__(self, stream: IntegerStream) -> None:
        self.stream = stream
        self.values: list[int] = []

    def add(self, value: int) -> None:
        self.values.append(value)
        if len(self.values) >= _WheelTallier.CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.values:
            self.stream.add(np.asarray(self.values, dtype=np.int64))
            self.values = []


class _FireTallier:
    """One profile's Fire Number draws, counted as they are read."""

    def __init__(self, prof: MegaFireBlazeProfile) -> None:
        self.name = f"{prof.id.name}@{prof.id.version}"
        self.expected = fire_numbers.count_distribution(fire_numbers.FireNumberParams(profile=prof))
        self.layout = tuple(fire_numbers.LAYOUT)
        self.counts: dict[int, int] = defaultdict(int)
        self.firsts: dict[str, int] = defaultdict(int)
        self.inclusion = InclusionTally(self.layout)
        self.repeats = RepeatStream(f"fire_numbers/{self.name}",
                                    fire_collision(self.expected, len(self.layout)))  # fmt: skip
        self.outcomes = 0

    def add(self, draw: tuple[str, ...]) -> None:
        self.outcomes += 1
        self.counts[len(draw)] += 1
        if draw:
            self.firsts[draw[0]] += 1
        self.inclusion.add(draw)
        self.repeats.add(draw)

    def group(self) -> FireNumberGroup:
        return FireNumberGroup(profile=self.name, outcomes=self.outcomes,
                               count_counts=dict(self.counts), first_counts=dict(self.firsts),
                               inclusion=self.inclusion, repeats=self.repeats,
                               count_expected=self.expected, layout=self.layout)  # fmt: skip


class _JackpotTallier:
    """One profile's jackpot tiers, counted as they are read."""

    def __init__(self, prof: MegaFireBlazeProfile) -> None:
        self.name = f"{prof.id.name}@{prof.id.version}"
        self.expected = jackpot.distribution(jackpot.JackpotParams(profile=prof))
        order = list(self.expected)
        self.index = {t: i for i, t in enumerate(order)}
        self.stream = (
            DiscreteStream(tuple(self.expected[t] for t in order), f"jackpot/{self.name}")
            if len(order) > 1
            else None
        )
        self.pending = None if self.stream is None else _Pending(self.stream)
        self.counts: dict[str, int] = defaultdict(int)
        self.unknown = False
        self.outcomes = 0

    def add(self, tier: str) -> None:
        self.outcomes += 1
        self.counts[tier] += 1
        i = self.index.get(tier)
        if i is None:
            self.unknown = True
        elif self.pending is not None and not self.unknown:
            self.pending.add(i)

    def group(self) -> JackpotGroup:
        if self.pending is not None:
            self.pending.flush()
        return JackpotGroup(profile=self.name, outcomes=self.outcomes, counts=dict(self.counts),
                            expected=self.expected, stream=self.stream,
                            unknown=self.unknown)  # fmt: skip


class _MultiBallTallier:
    """One (wheel, balls) group's multi-ball draws, counted as they are read."""

    def __init__(self, wheel: str, balls: int) -> None:
        self.params = multiball.MultiBallParams(wheel=WheelType(wheel), balls=balls)
        self.wheel, self.balls = wheel, balls
        self.layout = tuple(WHEEL_ORDER[self.params.wheel])
        self.targets = set(multiball.BLAZING_7S_NUMBERS)
        size = len(self.layout)
        collision = Fraction(math.factorial(size - balls), math.factorial(size))
        self.hits: dict[int, int] = defaultdict(int)
        self.firsts: dict[str, int] = defaultdict(int)
        self.inclusion = InclusionTally(self.layout)
        self.repeats = RepeatStream(f"multiball/{wheel}/{balls}", collision)
        self.outcomes = 0

    def add(self, draw: tuple[str, ...]) -> None:
        self.outcomes += 1
        self.hits[sum(1 for x in draw if x in self.targets)] += 1
        if draw:
            self.firsts[draw[0]] += 1
        self.inclusion.add(draw)
        self.repeats.add(draw)

    def group(self) -> MultiBallGroup:
        return MultiBallGroup(
            wheel=self.wheel, balls=self.balls, outcomes=self.outcomes, layout=self.layout,
            targets=multiball.BLAZING_7S_NUMBERS, hit_counts=dict(self.hits),
            hit_expected=multiball.hit_count_distribution(self.params),
            first_counts=dict(self.firsts), inclusion=self.inclusion, repeats=self.repeats,
        )  # fmt: skip


class _UniformTallier:
    """One (low, high, distinct) group's generic integers, counted as they are read (module
    ``certification.outcomes.sample``, :class:`UniformGroup`)."""

    def __init__(self, low: int, high: int, distinct: bool) -> None:
        self.low, self.high, self.distinct = low, high, distinct
        span = high - low + 1
        self.span = span
        name = uniform_group_name(low, high, distinct)
        self.stream = IntegerStream(span, name) if 0 < span <= MAX_STREAM_SPAN else None
        self.pending = None if self.stream is None else _Pending(self.stream)
        self.held: list[int] = []
        self.counts: dict[int, int] = defaultdict(int)
        self.inclusion = (
            InclusionTally(tuple(str(v) for v in range(span)))
            if distinct and span <= MAX_VALUE_CELLS
            else None
        )
        self.repeats = RepeatStream(name, 0) if distinct else None
        self.c_min: int | None = None
        self.outcomes = 0

    def _value(self, v: int) -> None:
        x = v - self.low
        if self.pending is not None:
            # an impossible value fails the values test; the stream keeps to its alphabet
            self.pending.add(min(max(x, 0), self.span - 1))
        else:
            self.held.append(x)

    def add(self, draw: tuple[int, ...]) -> None:
        self.outcomes += 1
        if not self.distinct:
            for v in draw:
                if self.span <= MAX_VALUE_CELLS:
                    self.counts[v - self.low] += 1
                self._value(v)
            return
        if draw:
            self._value(draw[0])
        if self.inclusion is not None:
            self.inclusion.add(tuple(str(v - self.low) for v in draw))
        self.c_min = len(draw) if self.c_min is None else min(self.c_min, len(draw))
        if self.repeats is not None:
            self.repeats.add(draw)

    def group(self) -> UniformGroup:
        if self.pending is not None:
            self.pending.flush()
        if self.repeats is not None:
            c_min = 1 if self.c_min is None else self.c_min
            self.repeats.collision = (
                Fraction(math.factorial(self.span - c_min), math.factorial(self.span))
                if self.span <= MAX_VALUE_CELLS
                else Fraction(1, self.span) ** c_min
            )
        return UniformGroup(
            low=self.low, high=self.high, distinct=self.distinct, outcomes=self.outcomes,
            value_counts=dict(self.counts),
            stream=self.stream,
            held=tuple(self.held), inclusion=self.inclusion, repeats=self.repeats,
        )  # fmt: skip


class _WeightedTallier:
    """One weight vector's choices, counted as they are read."""

    def __init__(self, weights: tuple[int, ...]) -> None:
        self.weights = weights
        expected = weighted_expected(weights)
        self.stream = (
            DiscreteStream(tuple(expected[i] for i in range(len(weights))),
                           weighted_group_name(weights))
            if len(weights) > 1
            else None
        )  # fmt: skip
        self.pending = None if self.stream is None else _Pending(self.stream)
        self.counts: dict[int, int] = defaultdict(int)
        self.unknown = False
        self.outcomes = 0

    def add(self, indices: tuple[int, ...]) -> None:
        self.outcomes += 1
        for i in indices:
            self.counts[i] += 1
            if not 0 <= i < len(self.weights):
                self.unknown = True
            elif self.pending is not None and not self.unknown:
                self.pending.add(i)

    def group(self) -> WeightedGroup:
        if self.pending is not None:
            self.pending.flush()
        return WeightedGroup(weights=self.weights, outcomes=self.outcomes,
                             counts=dict(self.counts), stream=self.stream,
                             unknown=self.unknown)  # fmt: skip


class _ShuffleTallier:
    """One shoe's shuffles, fed to its :class:`ShuffleStream` in chunks as they are read."""

    CHUNK = 4096

    def __init__(self, decks: int, jokers: int) -> None:
        params = cards.ShuffleParams(decks=decks, jokers=jokers)
        by_label = cards.position_distribution(params)
        self.top: dict[int, Fraction] = {
            code: by_label[cards.card_label(code)]
            for code in sorted(set(cards.canonical_shoe(params)))
        }
        self.decks, self.jokers = decks, jokers
        self.stream = ShuffleStream(self.top, distinct=decks == 1,
                                    group=shoe_group(decks, jokers))  # fmt: skip
        self.pending: list[tuple[int, ...]] = []
        self.outcomes = 0
        self.size = 0

    def add(self, shuffle: tuple[int, ...]) -> None:
        if self.size and len(shuffle) != self.size:
            raise SourceError(
                f"a {shoe_group(self.decks, self.jokers)} shuffle of {len(shuffle)} cards "
                f"among shuffles of {self.size}"
            )
        self.pending.append(shuffle)
        self.outcomes += 1
        self.size = len(shuffle)
        if len(self.pending) >= self.CHUNK:
            self._flush()

    def _flush(self) -> None:
        if self.pending:
            self.stream.add(np.asarray(self.pending, dtype=np.int64))
            self.pending = []

    def group(self) -> ShuffleGroup:
        self._flush()
        return ShuffleGroup(decks=self.decks, jokers=self.jokers, outcomes=self.outcomes,
                            size=self.size, stream=self.stream, top_expected=self.top,
                            distinct=self.decks == 1)  # fmt: skip


class _BonusTallier:
    """The bonus games of one profile and Fire Number count, counted as they are read, with
    their exact distributions (:class:`certification.outcomes.sample.BonusGroup`)."""

    def __init__(self, prof: MegaFireBlazeProfile, count: int) -> None:
        self.prof, self.count = prof, count
        self.name = f"{prof.id.name}@{prof.id.version}"
        self.rule = prof.segments
        self.layout = tuple(self.rule.layout)
        self.names = sorted(set(self.layout))
        self.code = {x: i for i, x in enumerate(self.names)}
        self.sorted_layout = sorted(self.layout)
        self.table = np.zeros((len(self.layout), len(self.names)), dtype=np.int64)
        self.cells = InclusionTally(tuple(str(i) for i in range(BONUS_CELLS)))
        self.repeats = RepeatStream(f"bonus/{self.name}/{count}", bonus_collision(count))
        self.totals: dict[int, int] = defaultdict(int)
        self.firsts: dict[int, int] = defaultdict(int)
        self.multipliers: dict[int, int] = defaultdict(int)
        self.designations: dict[str, int] = defaultdict(int)
        self.tiers: dict[str, int] = defaultdict(int)
        self.problem = ""
        self.outcomes = 0

    def add(self, o: Mapping[str, Any]) -> None:
        order = tuple(int(i) for i in o["fill_order"])
        by_index = {int(c["index"]): c for c in o["cells"]}
        multipliers = [int(by_index[i]["multiplier"]) for i in order]
        segs = sorted(o["segments"], key=lambda g: int(g["index"]))
        row = tuple(str(g["designation"]) for g in segs)
        tiers = [str(g["jackpot_tier"]) for g in segs if g["jackpot_tier"] is not None]
        total = int(o["total"])
        self.outcomes += 1
        self.cells.add(tuple(str(i) for i in order))
        if order:
            self.firsts[order[0]] += 1
        self.repeats.add(order)
        for m in multipliers:
            self.multipliers[m] += 1
        for t in tiers:
            self.tiers[t] += 1
        self.totals[total] += 1
        mode = self.rule.mode
        if mode == "independent" and self.rule.weights is not None:
            for d in row:
                self.designations[d] += 1
        elif self.problem:
            pass
        elif mode == "shuffled":
            if sorted(row) != self.sorted_layout:
                self.problem = "a designation row is not the profile's layout"
            else:
                self.table[np.arange(len(row)), [self.code[d] for d in row]] += 1
        elif row != self.layout:
            self.problem = "a designation differs from the profile's fixed layout"

    def group(self) -> BonusGroup:
        prof, rule = self.prof, self.rule
        return BonusGroup(
            profile=self.name, fire_number_count=self.count, outcomes=self.outcomes,
            total_counts=dict(self.totals),
            total_expected=mega_fire_blaze.total_distribution(prof, self.count),
            cells=self.cells, first_counts=dict(self.firsts), repeats=self.repeats,
            multiplier_counts=dict(self.multipliers),
            multiplier_expected=prof.multipliers.distribution(),
            designation_mode=rule.mode,
            designation_expected=None if rule.weights is None else rule.weights.distribution(),
            designation_counts=dict(self.designations),
            designation_table=self.table if rule.mode == "shuffled" else None,
            designation_problem=self.problem, layout=self.layout,
            jackpot_tier_counts=dict(self.tiers), jackpot_expected=prof.jackpot.distribution(),
        )  # fmt: skip


def sample_from_shuffles(shuffles: Sequence[Sequence[int]]) -> OutcomeSample:
    """An :class:`OutcomeSample` of one-deck shuffles given as card codes (0..51), top first."""
    tallier = _ShuffleTallier(1, 0)
    for s in shuffles:
        tallier.add(tuple(int(c) for c in s))
    return OutcomeSample(shuffles=(tallier.group(),))
