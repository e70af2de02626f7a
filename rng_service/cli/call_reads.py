"""``rng-service call``'s read commands (:mod:`rng_service.cli.call`): the reads of
``rng.v1.LogService`` (keys, checkpoint, checkpoints, entries, find, table-history, inclusion,
consistency; publish for operators), the profiles and the gRPC health check. They draw
nothing; each prints its answer as text or, with ``--json``, as JSON (docs/cli.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rng_service.cli.support import EXIT_FAILED, EXIT_OK, Output, parse_time_ns

if TYPE_CHECKING:
    from rng_service.rpc.client import RngClient

__all__ = ["READS", "Read", "entry_json"]


def entry_json(data: bytes) -> Any:
    """A log entry's bytes as JSON (they are canonical JSON), or as text if they are not."""
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", errors="replace")


def _entry_row(e: Mapping[str, Any]) -> dict[str, Any]:
    row = {
        "index": e["index"],
        "leaf_hash": e["leaf_hash"],
        "commit_size": e["commit_size"],
        "entry": entry_json(e["entry"]),
    }
    if e.get("inclusion_proof"):
        row["inclusion_proof"] = e["inclusion_proof"]
    return row


def _proven_rows(found: Mapping[str, Any]) -> dict[str, Any]:
    """A FindEntries or GetTableHistory answer as printed with --json: the entries with their
    proofs, the tree they are proven in and its signed checkpoint (rng-audit verifies)."""
    return {
        "entries": [_entry_row(e) for e in found["entries"]],
        "truncated": bool(found["truncated"]),
        "tree_size": found["tree_size"],
        "checkpoint": found["checkpoint"],
    }


def _entry_line(e: Mapping[str, Any]) -> str:
    return f"{e['index']} {e['entry'].decode('utf-8', errors='replace')}"


def _time(ns: int) -> str:
    if not ns:
        return "-"
    when = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=ns // 1000)
    return when.isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class Read:
    """A command that draws nothing: it reads, publishes or checks health."""

    name: str
    help: str
    define: Callable[[argparse.ArgumentParser], None]
    run: Callable[[RngClient, argparse.Namespace, Output], int]


def _none(_: argparse.ArgumentParser) -> None:
    pass


# --- read commands ----------------------------------------------------------------------------


def _run_keys(c: RngClient, a: argparse.Namespace, out: Output) -> int:
    keys = c.public_keys()

    def state(k: Mapping[str, Any]) -> str:
        return "active" if k["active"] else "cosigning" if k["cosigning"] else "retired"

    out.result(keys, lambda: "\n".join(f"{k['verifier_key']}  {state(k)}" for k in keys))
    return EXIT_OK


def _run_health(c: RngClient, a: argparse.Namespace, out: Output) -> int:
    status = c.health(a.service)
    out.result({"service": a.service, "status": status}, status)
    return EXIT_OK if status == "SERVING" else EXIT_FAILED


def _define_health(p: argparse.ArgumentParser) -> None:
    p.add_argument("--service", default="", help="the service name to check (default: the server)")


def _profile_line(p: Mapping[str, Any]) -> str:
    ref = p["id"]
    return f"{ref['name']} v{ref['version']}  {p['kind']}  sha256 {ref['sha256']}" + (
        "  EXAMPLE" if p["example"] else ""
    )


def _run_profiles(c: RngClient, a: argparse.Namespace, out: Output) -> int:
    profiles = c.profiles()
    out.result(profiles, lambda: "\n".join(_profile_line(p) for p in profiles))
    return EXIT_OK


def _define_profile_get(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", default="", help="its name")
    p.add_argument("--version", type=int, help="its version, with --name (default: the one served)")
    p.add_argument("--sha256", default="", help="or its SHA-256 (a log entry's profile_sha256)")
    p.add_argument(
        "--out", metavar="FILE", help="write its canonical bytes (RFC 8785 JSON) to this file"
    )


def _run_profile(c: RngClient, a: argparse.Namespace, out: Output) -> int:
    described, canonical = c.profile(name=a.name, version=a.version, sha256=a.sha256)
    if a.out:
        Path(a.out).write_bytes(canonical)
    text = _profile_line(described) + (
        f"\n{described['description']}" if described["description"] else ""
    )
    if a.out:
        text += f"\ncanonical bytes written to {a.out}"
    out.result({**described, "canonical_file": a.out}, text)
    return EXIT_OK


def _run_checkpoint(c: RngClient, a: argparse.Namespace, out: Output) -> int:
    checkpoint = c.latest_checkpoint()
    # The text is the signed note exactly (it ends in a newline): `call checkpoint > cp.note`.
    out.result(checkpoint, checkpoint["note"].removesuffix("\n"))
    return EXIT_OK


def _run_publish(c: RngClient, a: argparse.Namespace, out: Output) -> int:
    checkpoint = c.publish_checkpoint()
    out.result(
        checkpoint,
        f"published the checkpoint of tree size {checkpoint['size']}:\n"
        + checkpoint["note"].removesuffix("\n"),
    )
    return EXIT_OK


def _define_checkpoints(p: argparse.ArgumentParser) -> None:
    p.add_argument("--min-size", type=int, default=0, help="smallest tree size (0: any)")
    p.add_argument("--max-size", type=int, default=0, help="largest tree size (0: any)")
    _time_options(p, "published")


def _time_options(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--since",
        type=parse_time_ns,
        default=0,
        metavar="TIME",
        help=f"{what} at or after TIME: ns since the epoch or ISO 8601, e.g. "
        "2026-11-29T10:00:00Z (0: unbounded)",
    )
    p.add_argument(
        "--until",
        type=parse_time_ns,
        default=0,
        metavar="TIME",
        help=f"{what} before TIME, as --since (0: unbounded)",
    )


def _run_checkpoints(c: RngClient, a: argparse.Namespace, out: Output) -> int:
    rows = c.checkpoints(
        min_size=a.min_size, max_size=a.max_size, since_ns=a.since, until_ns=a.until
    )
    lines = [
        f"size {r['size']} root {r['root_hash'].hex()} published {_time(r['published_at_ns'])}"
        for r in rows
    ]
    out.result(rows, "\n".join(lines) or "no published checkpoint matches")
    return EXIT_OK


def _define_entries(p: argparse.ArgumentParser) -> None:
    p.add_argument("--start", type=int, required=True, help="first index")
    p.add_argument("--end", type=int, help="index after the last one (default: start + 1)")


def _run_entries(c: RngClient, a: argparse.Namespace, out: Output) -> int:
    rows = c.entries(a.start, a.end if a.end is not None else a.start + 1)
    out.result([_entry_row(e) for e in rows], lambda: "\n".join(_entry_line(e) for e in rows))
    return EXIT_OK


def _define_find(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--client", default="", help="the client (certificate identity) whose entries (default: "
        "any)",
    )  # fmt: skip
    p.add_argument(
        "--request-id", default="", help="a request id of --client (needs --client; default: any)"
    )
    p.add_argument("--table", default="", help="table id (default: any)")
    p.add_argument("--round", default="", help="game round id (default: any)")
    p.add_argument("--session", default="", help="session id (default: any)")
    _time_options(p, "sequenced")
    p.add_argument("--limit", type=int, default=0, help="most entries (0: 1000, the maximum)")
    p.add_argument(
        "--tree-size", type=int, default=0, help="the tree to search and prove in (0: the current)"
    )


def _run_find(c: RngClient, a: argparse.Namespace, out: Output) -> int:
    found = c.find_entries(
        client=a.client, request_id=a.request_id, table_id=a.table, round_id=a.round,
        session_id=a.session, since_ns=a.since, until_ns=a.until, limit=a.limit,
        tree_size=a.tree_size,
    )  # fmt: skip
    rows, truncated = found["entries"], bool(found["truncated"])
    out.result(
        _proven_rows(found),
        lambda: "\n".join(_entry_line(e) for e in rows) or "no entry matches",
    )
    if truncated:
        out.note("note: more entries match than were returned: narrow the filters")
    return EXIT_OK


def _define_table_history(p: argparse.ArgumentParser) -> None:
    p.add_argument("--table", required=True, help="the table id")
    p.add_argument(
        "--client", default="",
        help="whose table: a client's certificate identity (default: the caller; a game "
        "server may read its own tables only)",
    )  # fmt: skip
    p.add_argument("--from", dest="first_seq", type=int, default=1, help="the first table_seq")
    p.add_argument(
        "--to", dest="last_seq", type=int, default=0, help="the last table_seq (0: the chain's end)"
    )
    p.add_argument(
        "--limit", type=int, default=0, help="most entries (0: 1000, the maximum; page on with "
        "--from and --tree-size)",
    )  # fmt: skip
    p.add_argument(
        "--tree-size", type=int, default=0, help="the tree to read and prove in (0: the current)"
    )


def _run_table_history(c: RngClient, a: argparse.Namespace, out: Output) -> int:
    found = c.table_history(
        a.table, client=a.client, first_seq=a.first_seq, last_seq=a.last_seq, limit=a.limit,
        tree_size=a.tree_size,
    )  # fmt: skip
    rows = found["entries"]
    out.result(
        {"client": found["client"], "table_id": found["table_id"], **_proven_rows(found)},
        lambda: "\n".join(_entry_line(e) for e in rows) or "no entry of that table in the range",
    )
    if found["truncated"]:
        last = entry_json(rows[-1]["entry"]) if rows else {}
        seq = last.get("table_seq") if isinstance(last, dict) else None
        out.note(
            f"note: more entries follow: page on with --from {(seq or 0) + 1} --tree-size "
            f"{found['tree_size']}"
        )
    return EXIT_OK


def _define_inclusion(p: argparse.ArgumentParser) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--index", type=int, help="the entry's log index")
    which.add_argument(
        "--leaf-hash", type=bytes.fromhex, metavar="HEX", help="or its leaf hash, in hex"
    )
    p.add_argument("--tree-size", type=int, default=0, help="the tree (0: the current one)")


def _proof_lines(proof: Sequence[bytes]) -> str:
    return "\n".join(f"  {h.hex()}" for h in proof)


def _run_inclusion(c: RngClient, a: argparse.Namespace, out: Output) -> int:
    r = c.inclusion_proof(index=a.index, leaf_hash=a.leaf_hash, tree_size=a.tree_size)
    out.result(
        r,
        lambda: (
            f"entry {r['index']} in the tree of size {r['tree_size']} (root "
            f"{r['root_hash'].hex()})\nleaf hash {r['leaf_hash'].hex()}\n"
            f"inclusion proof, {len(r['proof'])} hashes (RFC 6962 2.1.1):\n"
            + _proof_lines(r["proof"])
        ),
    )
    return EXIT_OK


def _define_consistency(p: argparse.ArgumentParser) -> None:
    p.add_argument("--first", type=int, required=True, help="the older tree size")
    p.add_argument("--second", type=int, required=True, help="the newer tree size")


def _run_consistency(c: RngClient, a: argparse.Namespace, out: Output) -> int:
    r = c.consistency_proof(a.first, a.second)
    out.result(
        r,
        lambda: (
            f"consistency proof from tree size {r['first_size']} to {r['second_size']}, "
            f"{len(r['proof'])} hashes (RFC 6962 2.1.2):\n" + _proof_lines(r["proof"])
        ),
    )
    return EXIT_OK


READS: tuple[Read, ...] = (
    Read("profiles", "the game profiles and paytables served (ListProfiles)", _none,
          _run_profiles),
    Read("profile", "one profile or paytable and its canonical bytes (GetProfile)",
          _define_profile_get, _run_profile),
    Read("keys", "the log's public keys, active and retired (GetPublicKeys)", _none, _run_keys),
    Read("checkpoint", "the signed checkpoint of the current tree (GetLatestCheckpoint)",
          _none, _run_checkpoint),
    Read("checkpoints", "published checkpoints by size and time (GetCheckpoints)",
          _define_checkpoints, _run_checkpoints),
    Read("entries", "log entries by index (GetEntries)", _define_entries, _run_entries),
    Read("find", "every entry of a client, request id, table, round, session or time range "
          "(FindEntries)", _define_find, _run_find),
    Read("table-history", "one (client, table) chain by sequence number (GetTableHistory)",
          _define_table_history, _run_table_history),
    Read("inclusion", "an entry's inclusion proof (GetInclusionProof)", _define_inclusion,
          _run_inclusion),
    Read("consistency", "a consistency proof between two tree sizes (GetConsistencyProof)",
          _define_consistency, _run_consistency),
    Read("publish", "store the current checkpoint as published (PublishCheckpoint, operator)",
          _none, _run_publish),
    Read("health", "the gRPC health status (grpc.health.v1.Health/Check)", _define_health,
          _run_health),
)  # fmt: skip
