"""Offline verification of an export (``rng-audit verify``) against its irreducible work.

Baseline, measured alone in the same run: read the export's lines, base64-decode and hash every
entry (RFC 6962 leaf hash) and verify every published checkpoint's Ed25519 signature. The
verifier additionally rebuilds the tree, checks every checkpoint root and consistency, and (full
mode) checks every entry's canonical encoding and index. Long form: 10^6 entries with a
checkpoint every 1,000; also reports the verifier's peak RSS (it streams: O(log n) memory).
The same entries in format 3 (each committing the table map's root, made with the writer's
``TableMap``) are verified too, against the format 2 export's full verify in the same run:
the cost of recomputing every committed root (``rows(100_000, 3)`` for a 10^5-entry figure).

The peak RSS is the child process's own ``VmHWM`` (Linux): its ``ru_maxrss`` is not, because
the kernel carries the parent's high-water mark over ``vfork`` + ``exec`` (which
``subprocess`` uses), so it reported this benchmark's own memory (the export's leaf hashes)
as the verifier's: 324 MiB at 10^6 entries where the verifier itself peaks near 30 MiB.
"""

from __future__ import annotations

import base64
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from bench._common import Row
from rng_service.audit import verify_export, write_export
from rng_service.log import merkle
from rng_service.log.entry import GeneratorRef, LogEntry
from rng_service.log.note import Checkpoint, Ed25519NoteSigner, open_note, sign_note
from rng_service.log.table_map import TableMap

SIGNER = Ed25519NoteSigner("bench", Ed25519PrivateKey.from_private_bytes(b"\x05" * 32))
EVERY = 1000
TABLES = 30


def _entry(i: int, table_map: bytes | None = None, tables: int = TABLES) -> bytes:
    spin = {"number": str(i % 37), "colour": "red", "position": i % 38, "voided": False}
    return LogEntry(
        index=i,
        timestamp_ns=1_767_225_600_000_000_000 + i * 1000,
        kind="roulette_spin",
        params={"wheel": "double_zero"},
        outcome={"wheel": "double_zero", "spins": [spin], "final": spin},
        client="default",
        table_id=f"T{i % tables}",
        round_id=f"R{i}",
        session_id="",
        request_id=f"req-{i}",
        generator=GeneratorRef("9f2c" * 8, i // 65536, False),
        slot="spin",
        table_seq=i // tables + 1,  # that many tables, each a chain
        table_prev=i - tables if i >= tables else None,
        table_map=table_map,
        version=2 if table_map is None else 3,
    ).encode()


def make_export(path: Path, n: int, *, format_3: bool = False, tables: int = TABLES) -> int:
    """Writes an n-entry export on ``tables`` tables with a checkpoint every EVERY entries
    (format 3 entries, each with the table map's root after it, if ``format_3``); returns
    checkpoints."""
    leaves = bytearray()  # 32 bytes a leaf, not a list of bytes objects (about 100 bytes each)
    roots = bytearray()  # format 3: each entry's table map root, 32 bytes each
    heads = TableMap()
    stack: list[tuple[int, bytes]] = []
    notes: list[tuple[str, int]] = []

    def entry(i: int) -> bytes:
        return _entry(i, bytes(roots[32 * i : 32 * i + 32]) if format_3 else None, tables)

    for i in range(n):
        if format_3:
            heads.set("default", f"T{i % tables}", i, i // tables + 1)
            roots += heads.root()
        h = merkle.leaf_hash(entry(i))
        leaves += h
        level, value = 0, h
        while stack and stack[-1][0] == level:
            value = merkle.node_hash(stack.pop()[1], value)
            level += 1
        stack.append((level, value))
        if (i + 1) % EVERY == 0 or i + 1 == n:
            root = stack[-1][1]
            for _, left in reversed(stack[:-1]):
                root = merkle.node_hash(left, root)
            body = Checkpoint("bench.example/log", i + 1, root).body()
            notes.append((sign_note(body, [SIGNER]).decode(), 1_767_225_600_000_000_000 + i))

    def entries() -> Iterator[tuple[int, bytes, bytes]]:
        for i in range(n):
            yield i, bytes(leaves[32 * i : 32 * i + 32]), entry(i)

    with path.open("w", encoding="utf-8") as out:
        write_export(
            out, origin="bench.example/log", checkpoints=notes, entries=entries(), tree_size=n
        )
    return len(notes)


def baseline(path: Path) -> None:
    keys = [SIGNER.verifier()]
    with path.open(encoding="utf-8") as fh:
        header = json.loads(next(fh))
        for _ in range(header["checkpoints"]):
            open_note(json.loads(next(fh))["note"].encode(), keys)
        for line in fh:
            hashlib.sha256(b"\x00" + base64.b64decode(json.loads(line)["entry"])).digest()


def verify(path: Path, *, full: bool) -> None:
    with path.open(encoding="utf-8") as fh:
        verify_export(fh, [SIGNER.verifier()], check_entries=full)


def peak_rss_kib() -> int:
    """This process's peak resident set size in KiB: VmHWM where /proc has it (the high-water
    mark of this address space only), else ru_maxrss (which can include a parent's, see the
    module docstring)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _peak_rss_of_verify(path: Path) -> float:
    code = (
        "from pathlib import Path; from bench.bench_verify import peak_rss_kib, verify; "
        f"verify(Path({str(path)!r}), full=True); print(peak_rss_kib())"
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    out.check_returncode()
    return int(out.stdout.strip()) / 1024


def run(*, short: bool) -> list[Row]:
    return rows(2_000 if short else 1_000_000, 1 if short else 3)


def rows(n: int, rounds: int, tables: int = TABLES) -> list[Row]:
    """The rows for an ``n``-entry export on ``tables`` tables, best of ``rounds`` alternated
    runs."""
    with tempfile.TemporaryDirectory(prefix="rng-bench-verify-") as tmp:
        path = Path(tmp) / "export.jsonl"
        path_3 = Path(tmp) / "export-format-3.jsonl"
        checkpoints = make_export(path, n, tables=tables)
        make_export(path_3, n, format_3=True, tables=tables)
        best: dict[str, float] = {}
        for _ in range(rounds):  # interleaved; best of each (shared, noisy machine)
            runs: tuple[tuple[str, Callable[[], None]], ...] = (
                ("baseline", lambda: baseline(path)),
                ("full", lambda: verify(path, full=True)),
                ("fast", lambda: verify(path, full=False)),
                ("full_3", lambda: verify(path_3, full=True)),
            )
            for name, fn in runs:
                t0 = time.perf_counter()
                fn()
                best[name] = min(best.get(name, float("inf")), time.perf_counter() - t0)
        rss = _peak_rss_of_verify(path)
    base = f"read+hash {n:,} entries + verify {checkpoints} signatures"
    return [
        Row(f"rng-audit verify, {n:,} entries (full)", best["full"], "s", base,
            best["baseline"], "<= 2.0"),
        Row(f"rng-audit verify --fast, {n:,} entries", best["fast"], "s", base,
            best["baseline"], "<= 2.0"),
        Row(f"rng-audit verify, {n:,} entries on {tables:,} tables in format 3 (full, every "
            "table map root)",
            best["full_3"], "s", f"full verify of the same {n:,} entries in format 2",
            best["full"], "report"),
        Row("verifier peak RSS", rss, "MiB", "-", 0.0),
    ]  # fmt: skip
