"""``rng-certify``: the certification suite's command line, for gaming labs.

Subcommands::

    rng-certify nist (--input FILE --format {binary,ascii} | --target HOST:PORT [--sequences M])
                     [--bits-per-sequence N] --json OUT [--jobs J] [--ca F --cert F --tls-key F]
    rng-certify outcomes --input RECORDS [--profile TOML] [--confidence C] --json OUT [--html OUT]
    rng-certify power [--replicates R] [--confidence C] --json OUT [--html OUT]
    rng-certify collect (--target HOST:PORT | --lab-seed SEED) [--kind NAME=COUNT]
                        [--time-limit S] --output RECORDS [--bits-output FILE]
    rng-certify report [--outcomes JSON] [--nist JSON] [--power JSON] [--dieharder JSON]
                       [--rtp JSON] --html OUT
    rng-certify all [--records RECORDS] [--bits FILE --format F] --out DIR
    rng-certify dieharder (--lab-seed SEED | --input FILE | --target HOST:PORT) [--test N]
                          [--resolve-ambiguity] [--json OUT] [--ca F --cert F --tls-key F]
    rng-certify rtp [--target HOST:PORT [--rounds N] [--game NAME[=N]]] [--json OUT] [--html OUT]
    rng-certify entropy FILE --bits-per-symbol N [--claim H] [--iid] [--restart FILE] [--json OUT]
                        [--html OUT]

``nist`` reads the file in sequence-sized pieces (memory flat in the number of sequences),
runs the NIST SP 800-22 battery on each sequence of N bits (default 10^6; optionally in J
worker processes, spawn start method), makes the section 4.2 decisions and the suite verdict,
writes the JSON report and prints a summary table; with ``--target`` (formerly ``--live``) it
takes M sequences of raw generator output from a running service's
``LabService.StreamRawOutput`` instead of a file (docs/certification.md, "The raw output
stream"). The other commands are described in
docs/certification.md (outcome-level tests, power study, evidence pack, dieharder). Every
report states its criteria and an evidence record (software version and commit, command line,
inputs' SHA-256 and size, raw-output sessions with their receipts).

Exit status (all commands, :mod:`certification.verdict`): 0 PASS, 1 FAIL, 3 INCONCLUSIVE (the
sample is below the battery's minimum and nothing is decisive), 2 usage or input error (a
message, never a traceback); ``all`` and ``report`` exit with the worst verdict. A progress bar
is drawn only when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import sys
import textwrap
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

import numpy as np

from certification.bitfile import (
    PackedBits,
    cut_sequences,
    file_sequences,
    inspect_bit_file,
    read_bits,
)
from certification.entropy.command import add_entropy_parser
from certification.errors import InputError
from certification.evidence import evidence_record, now_utc
from certification.report import render_summary, write_json
from certification.rtp.command import add_rtp_parser
from certification.sp800_22 import Bits, TestResult, assess, run_tests
from certification.sp800_22.assessment import suite_verdict
from certification.sp800_22.table import PValueTable
from certification.verdict import (
    EXIT_FAIL,
    EXIT_INCONCLUSIVE,
    EXIT_PASS,
    EXIT_USAGE,
    Verdict,
    combine,
    exit_code,
)

if TYPE_CHECKING:
    from typing import TypeAlias

    from certification.sources import LiveTls

    #: The ``rng-certify`` sub-command registry each ``_add_*_parser`` adds its command to
    #: (argparse's class is generic only to type checkers).
    _Commands: TypeAlias = "argparse._SubParsersAction[_Parser]"

__all__ = [
    "EXIT_FAIL",
    "EXIT_INCONCLUSIVE",
    "EXIT_PASS",
    "EXIT_USAGE",
    "InputError",
    "PackedBits",
    "main",
    "read_bits",
]

DEFAULT_BITS_PER_SEQUENCE = 1_000_000


def _run_packed(packed: bytes, n: int) -> dict[str, TestResult]:
    """Worker entry point: unpack one sequence and run the battery on it."""
    return run_tests(np.unpackbits(np.frombuffer(packed, dtype=np.uint8))[:n])


class _Progress:
    """A one-line progress bar on a terminal; silent otherwise."""

    def __init__(self, total: int, stream: TextIO, unit: str = "sequences") -> None:
        self._total = total
        self._unit = unit
        self._stream = stream
        self._enabled = stream.isatty()
        self._done = 0
        self._draw()

    def advance(self) -> None:
        self._done += 1
        self._draw()

    def close(self) -> None:
        if self._enabled:
            self._stream.write("\n")
            self._stream.flush()

    def _draw(self) -> None:
        if not self._enabled:
            return
        width = 40
        done = min(self._done, self._total)
        filled = width * done // max(self._total, 1)
        bar = "#" * filled + "." * (width - filled)
        self._stream.write(f"\r[{bar}] {done}/{self._total} {self._unit}")
        self._stream.flush()


def _run_battery(
    sequences: Iterator[Bits], n: int, jobs: int, on_done: Callable[[], None]
) -> PValueTable:
    """The battery on each sequence, in order, into a compact table. Sequences are read as
    they are needed (at most 2 x jobs are held at once), so memory does not grow with their
    number beyond one row of P-values each."""
    table = PValueTable()
    if jobs == 1:
        for sequence in sequences:
            table.append(run_tests(sequence))
            on_done()
        return table
    context = multiprocessing.get_context("spawn")
    done: dict[int, dict[str, TestResult]] = {}

    def collect(finished: Iterable[Future[dict[str, TestResult]]]) -> None:
        for future in finished:
            done[pending.pop(future)] = future.result()
            on_done()
        while table.sequences in done:  # append in sequence order
            table.append(done.pop(table.sequences))

    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        pending: dict[Future[dict[str, TestResult]], int] = {}
        for index, sequence in enumerate(sequences):
            pending[pool.submit(_run_packed, np.packbits(sequence).tobytes(), n)] = index
            while len(pending) >= 2 * jobs:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                collect(finished)
        collect(list(pending))
    return table


def _live_tls(args: argparse.Namespace) -> LiveTls | None:
    """The --ca/--cert/--key files as a ``sources.LiveTls`` (all three or none)."""
    from certification import sources

    given = [args.ca, args.cert, args.key]
    if not any(given):
        return None
    if not all(given):
        raise InputError("--ca, --cert and --tls-key go together (mTLS to the service)")
    return sources.LiveTls(ca=args.ca, cert=args.cert, key=args.key)


class _LiveBits:
    """--sequences x n bits of raw output from the live service, streamed sequence by sequence,
    hashed as they arrive, with every logged session recorded."""

    def __init__(self, args: argparse.Namespace, n: int) -> None:
        self.args = args
        self.n = n
        self.count: int = args.sequences
        self.num_bytes = -(-self.count * n // 8)
        self.sessions: list[dict[str, Any]] = []
        self.digest = hashlib.sha256()
        self.received = 0

    def _bits(self) -> Iterator[Bits]:
        from certification import sources

        args = self.args
        for chunk in sources.live_raw_bytes(
            args.live, tls=_live_tls(args), total=self.num_bytes,
            session_bytes=args.session_bytes, time_limit=args.time_limit,
            run_id=args.run_id, sessions=self.sessions,
        ):  # fmt: skip
            self.digest.update(chunk)
            self.received += len(chunk)
            yield np.unpackbits(np.frombuffer(chunk, dtype=np.uint8))

    def sequences(self) -> Iterator[Bits]:
        produced = 0
        for sequence in cut_sequences(self._bits(), self.n, self.count):
            produced += 1
            yield sequence
        if produced < self.count:
            raise InputError(
                f"raw output stream from {self.args.live}: only {self.received} of "
                f"{self.num_bytes} bytes arrived within the time limit of "
                f"{self.args.time_limit:g} s"
            )

    def info(self) -> dict[str, object]:
        return {
            "live": self.args.live,
            "format": "binary",
            "bits_per_sequence": self.n,
            "sequences": self.count,
            "bits_discarded": int(8 * self.received - self.count * self.n),
            "size_bytes": self.received,
            "sha256": self.digest.hexdigest(),
            "raw_output_sessions": self.sessions,
        }


def _cmd_nist(args: argparse.Namespace) -> int:
    n = args.bits_per_sequence
    live: _LiveBits | None = None
    if args.live is not None:
        if args.format not in (None, "binary"):
            raise InputError("--target streams raw bytes: --format is binary or left out")
        live = _LiveBits(args, n)
        count = live.count
        sequences = live.sequences()
    else:
        if args.format is None:
            raise InputError("--format is required with --input (binary or ascii)")
        facts = inspect_bit_file(args.input, args.format)
        count = facts.bits // n
        if count == 0:
            raise InputError(
                f"{args.input} holds {facts.bits} bits, fewer than one sequence of {n} bits "
                "(see --bits-per-sequence)"
            )
        sequences = file_sequences(facts, n)
    progress = _Progress(count, sys.stderr)
    try:
        table = _run_battery(sequences, n, args.jobs, progress.advance)
    finally:
        progress.close()
    if live is not None:
        input_info = live.info()
        inputs: list[dict[str, Any]] = [
            {"live": args.live, "size_bytes": live.received, "sha256": input_info["sha256"],
             "raw_output_sessions": live.sessions}
        ]  # fmt: skip
    else:
        input_info = {
            "path": str(args.input),
            "format": args.format,
            "bits_per_sequence": n,
            "sequences": count,
            "bits_discarded": int(facts.bits - count * n),
            "size_bytes": facts.size_bytes,
            "sha256": facts.sha256,
        }
        inputs = [facts.as_dict()]
    assessment = assess(table)
    verdict = suite_verdict(assessment, bits_per_sequence=n)
    try:
        with args.json.open("w") as handle:
            write_json(
                handle, table, assessment, verdict, input_info=input_info,
                evidence=evidence_record(argv=args.argv, inputs=inputs),
            )  # fmt: skip
    except OSError as e:
        raise InputError(f"cannot write {args.json}: {e.strerror or e}") from e
    sys.stdout.write(render_summary(assessment, verdict))
    return exit_code(verdict.verdict)


# --- outcome-level tests, power study, collection, reports, dieharder ---------------------------
# These import certification.sources (and so rng_service) lazily: the ``nist`` command and its
# spawn workers never load the service's code.


def _now() -> str:
    return now_utc()


def _write_json(path: Path, document: object) -> str:
    """Writes ``document``; returns the SHA-256 of the bytes written (for the HTML report)."""
    data = (json.dumps(document, indent=1) + "\n").encode()
    try:
        path.write_bytes(data)
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}") from e
    return hashlib.sha256(data).hexdigest()


def _write_text(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}") from e


def _read_json(path: Path, hashes: dict[str, str] | None = None, key: str = "") -> dict[str, Any]:
    """A JSON object from ``path``; with ``hashes``, records the SHA-256 of the bytes read
    under ``key`` (the page shows what it was rendered from)."""
    try:
        data = path.read_bytes()
        document = json.loads(data)
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not JSON ({getattr(e, 'msg', e)})") from e
    if not isinstance(document, dict):
        raise InputError(f"{path}: not a JSON object")
    if hashes is not None:
        hashes[key] = hashlib.sha256(data).hexdigest()
    return document


def _confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.5 <= value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not in [0.5, 1)")
    return value


def _plan_item(text: str) -> tuple[str, int]:
    name, sep, count = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=COUNT")
    return name, _positive_int(count)


def _outcome_documents(
    inputs: Sequence[Path], profiles: Sequence[Path], confidence: float, argv: Sequence[str]
) -> tuple[dict[str, object], str, Verdict]:
    from certification import sources, tallies
    from certification.evidence import file_facts, open_input
    from certification.outcomes import run_battery
    from certification.outcomes.battery import render_json as outcomes_json
    from certification.outcomes.battery import render_summary as outcomes_summary

    if sum(1 for p in inputs if str(p) == "-") > 1:
        raise InputError("--input -: standard input can be given once")
    opened = [open_input(p) for p in inputs]
    count = 0

    def records() -> Iterator[sources.Record]:
        nonlocal count
        for hashed in opened:  # each input read once, hashed while it is read
            for record in sources.records_from_lines(hashed.lines(), hashed.name):
                count += 1
                yield record

    try:
        sample = tallies.build_sample(records(), profile_files=profiles)
    finally:
        for hashed in opened:
            hashed.close()
    if sample.outcome_count == 0:
        raise InputError(
            f"no testable outcome records in {', '.join(map(str, inputs))} "
            f"(kinds seen: {', '.join(sorted(sample.untested)) or 'none'})"
        )
    result = run_battery(sample, confidence=confidence)
    facts = [h.facts() for h in opened] + [file_facts(p) for p in profiles]
    document = outcomes_json(
        result,
        input_info={"paths": [str(p) for p in inputs], "records": count,
                    "profiles": [str(p) for p in profiles]},
        evidence=evidence_record(argv=argv, inputs=facts),
    )  # fmt: skip
    return document, outcomes_summary(result), result.verdict


def _cmd_outcomes(args: argparse.Namespace) -> int:
    document, summary, verdict = _outcome_documents(
        args.input, args.profile, args.confidence, args.argv
    )
    digest = _write_json(args.json, document)
    if args.html is not None:
        from certification.report.html import render_html

        _write_text(
            args.html,
            render_html(
                outcomes=document, generated_at=_now(), inputs=[str(p) for p in args.input],
                lab=args.lab, generator=args.generator, document_hashes={"outcomes": digest},
            ),
        )  # fmt: skip
    sys.stdout.write(summary)
    return exit_code(verdict)


def _cmd_power(args: argparse.Namespace) -> int:
    from certification import power

    progress = _Progress(power.study_steps(args.replicates), sys.stderr, unit="battery runs")
    try:
        rows = power.run_study(
            replicates=args.replicates, confidence=args.confidence, on_step=progress.advance
        )
    finally:
        progress.close()
    document = power.study_json(
        rows, confidence=args.confidence, replicates=args.replicates,
        evidence=evidence_record(argv=args.argv, inputs=[{"generated": "power study seeds "
                                                          f"{power.SEED!r}"}]),
    )  # fmt: skip
    digest = _write_json(args.json, document)
    if args.html is not None:
        from certification.report.html import render_html

        _write_text(args.html, render_html(power=document, generated_at=_now(), lab=args.lab,
                                           generator=args.generator,
                                           document_hashes={"power": digest}))  # fmt: skip
    target = f"caught at ({power.POWER_TARGET:.0%})"
    out = [f"{'generator':16} {'outcome':9} {'first rejection':>16} {target:>17}"]
    for r in rows:
        first = "-" if r.first_rejection_at is None else f"{r.first_rejection_at:,}"
        caught = "-" if r.caught_at is None else f"{r.caught_at:,}"
        out.append(f"{r.name:16} {r.outcome:9} {first:>16} {caught:>17}")
        if not r.bad:
            rejected = sum(t.rejections for t in r.trials)
            runs = sum(t.replicates for t in r.trials)
            out[-1] += f"   (rejected {rejected}/{runs} runs)"
    out.append(f"RESULT: {document['verdict']} ({document['verdict_reason']})")
    sys.stdout.write("\n".join(out) + "\n")
    return exit_code(Verdict[document["verdict"]])


def _cmd_collect(args: argparse.Namespace) -> int:
    from certification import sources

    plan = dict(args.kind) if args.kind else None
    if args.live is not None:
        plan = plan or dict(sources.DEFAULT_LIVE_PLAN)
        progress = _Progress(sum(plan.values()), sys.stderr, unit="outcomes")
        try:
            records = sources.collect_live(
                args.live, plan, time_limit=args.time_limit, run_id=args.run_id,
                profile=args.service_profile, on_outcome=progress.advance,
            )  # fmt: skip
        finally:
            progress.close()
    else:
        plan = plan or dict(sources.DEFAULT_LAB_PLAN)
        generator = sources.lab_generator(args.lab_seed)
        records = sources.generate_records(generator, plan)
        if args.bits_output is not None:
            generator = sources.lab_generator(args.lab_seed + "/bits")
            sources.write_bit_file(
                args.bits_output, generator.random_bytes(args.bits_bytes), args.bits_format
            )
    n = sources.write_records(args.output, records)
    wanted = sum(plan.values())
    note = "" if n == wanted else f" (stopped by the time limit; {wanted} asked)"
    sys.stdout.write(f"wrote {n} outcome records to {args.output}{note}\n")
    return EXIT_PASS


def _cmd_report(args: argparse.Namespace) -> int:
    from certification.report.html import render_html

    hashes: dict[str, str] = {}
    docs = {
        name: (_read_json(path, hashes, name) if path is not None else None)
        for name, path in (
            ("outcomes", args.outcomes), ("nist", args.nist), ("power", args.power),
            ("dieharder", args.dieharder), ("rtp", args.rtp), ("entropy", args.entropy),
        )
    }  # fmt: skip
    if all(d is None for d in docs.values()):
        raise InputError(
            "give at least one of --outcomes, --nist, --power, --dieharder, --rtp, --entropy"
        )
    try:
        page = render_html(
            outcomes=docs["outcomes"], nist=docs["nist"], power=docs["power"],
            dieharder=docs["dieharder"], rtp=docs["rtp"], entropy=docs["entropy"],
            generated_at=_now(),
            inputs=[str(p) for p in (args.outcomes, args.nist, args.power, args.dieharder,
                                     args.rtp, args.entropy) if p is not None],
            lab=args.lab, generator=args.generator, document_hashes=hashes,
        )  # fmt: skip
    except (KeyError, TypeError) as e:
        raise InputError(f"a JSON document is not an rng-certify report ({e!r})") from e
    _write_text(args.html, page)
    found = (document_verdict(d) for d in docs.values() if d is not None)
    judged = [v for v in found if v is not None]
    verdict = combine(judged)
    why = "the worst verdict of the documents" if judged else "no document judges anything"
    sys.stdout.write(f"RESULT: {verdict.value} ({why})\n")
    return exit_code(verdict)


def document_verdict(document: dict[str, object]) -> Verdict | None:
    """The verdict of an rng-certify JSON document: its ``verdict`` member (null: the document
    judges nothing, as ``rtp`` without ``--live``), or for a document of an earlier version
    ``suite.passed`` / ``passed`` (True: PASS, else FAIL)."""
    from certification.report.html import NO_VERDICT
    from certification.report.html import document_verdict as shown

    value = shown(document)
    return None if value == NO_VERDICT else Verdict[value]


def _cmd_all(args: argparse.Namespace) -> int:
    """Outcome battery on the records and SP 800-22 on the bits; one evidence directory."""
    from certification.report.html import render_html

    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create {args.out}: {e.strerror or e}") from e
    documents: dict[str, dict[str, object]] = {}
    hashes: dict[str, str] = {}
    verdicts: list[Verdict] = []
    inputs: list[str] = []
    if args.records:
        doc, summary, verdict = _outcome_documents(
            args.records, args.profile, args.confidence, args.argv
        )
        hashes["outcomes"] = _write_json(args.out / "outcomes.json", doc)
        sys.stdout.write(summary)
        documents["outcomes"] = doc
        verdicts.append(verdict)
        inputs += [str(p) for p in args.records]
    if args.bits is not None:
        nist_args = [
            "nist", "--input", str(args.bits), "--format", args.format,
            "--bits-per-sequence", str(args.bits_per_sequence),
            "--json", str(args.out / "nist.json"), "--jobs", str(args.jobs),
        ]  # fmt: skip
        status = main(nist_args)
        if status == EXIT_USAGE:
            return EXIT_USAGE
        nist_doc: dict[str, Any] = _read_json(args.out / "nist.json")
        ran = nist_doc["evidence"]["command_line"]
        nist_doc["evidence"]["command_line"] = ["rng-certify", *args.argv]
        nist_doc["evidence"]["effective_command_line"] = ran
        hashes["nist"] = _write_json(args.out / "nist.json", nist_doc)
        documents["nist"] = nist_doc
        verdicts.append(document_verdict(documents["nist"]) or Verdict.INCONCLUSIVE)
        inputs.append(str(args.bits))
    if not documents:
        raise InputError("give --records and/or --bits")
    page = render_html(
        outcomes=documents.get("outcomes"), nist=documents.get("nist"),
        generated_at=_now(), inputs=inputs, lab=args.lab, generator=args.generator,
        document_hashes=hashes,
    )  # fmt: skip
    _write_text(args.out / "report.html", page)
    verdict = combine(verdicts)
    sys.stdout.write(f"evidence written to {args.out} (report.html); RESULT: {verdict.value}\n")
    return exit_code(verdict)


def _announce(line: str) -> None:
    print(line, file=sys.stderr)


def _cmd_dieharder(args: argparse.Namespace) -> int:
    from certification import dieharder

    sessions: list[dict[str, Any]] | None = None
    inputs: list[dict[str, Any]] = []
    if args.lab_seed is not None:
        from certification import sources

        stream = dieharder.generator_stream(sources.lab_generator(args.lab_seed))
        label = f"DeterministicGenerator (lab mode) seed {args.lab_seed!r}"
        inputs.append({"lab_seed": args.lab_seed})
    elif args.live is not None:
        from certification import sources

        sessions = []
        stream = sources.live_raw_bytes(
            args.live, tls=_live_tls(args),
            session_bytes=args.session_bytes, time_limit=args.time_limit, run_id=args.run_id,
            sessions=sessions,
        )  # fmt: skip
        label = f"raw output stream of {args.live} (LabService.StreamRawOutput)"
    else:
        from certification.evidence import file_facts

        inputs.append(file_facts(args.input))
        stream = dieharder.file_stream(args.input)
        label = str(args.input)
    tests = args.test or list(dieharder.QUICK_TESTS)
    feed = dieharder.HashingStream(stream)
    try:
        results = dieharder.run(
            feed, tests, executable=args.executable, psamples=args.psamples,
            resolve_ambiguity=args.resolve_ambiguity, on_test=_announce,
        )  # fmt: skip
    except dieharder.DieharderError as e:
        raise InputError(str(e)) from e
    finally:
        feed.close()
    consumed = {"bytes_fed": feed.size, "sha256_fed": feed.sha256}
    if sessions is not None:
        inputs.append({"live": args.live, **consumed, "raw_output_sessions": sessions})
    else:
        inputs[0] = {**inputs[0], **consumed}
    document = dieharder.to_json(
        results, source=label, raw_output_sessions=sessions,
        evidence=evidence_record(argv=args.argv, inputs=inputs),
    )  # fmt: skip
    if args.json is not None:
        _write_json(args.json, document)
    sys.stdout.write(dieharder.summary(results))
    sys.stdout.write(f"RESULT: {document['verdict']} ({document['verdict_reason']})\n")
    return exit_code(Verdict[document["verdict"]])


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def _add_page_options(parser: argparse.ArgumentParser) -> None:
    """--lab and --generator: who tested what, printed in the HTML report's header."""
    parser.add_argument("--lab", metavar="NAME", help="the laboratory, for the HTML header")
    parser.add_argument(
        "--generator", metavar="TEXT",
        help="the generator tested (make, model, version), for the HTML header",
    )  # fmt: skip


def _add_live_options(parser: argparse.ArgumentParser, *, time_limit: float) -> None:
    """Options of a --live raw-output source (mTLS files as for ``rng-service call``)."""
    live = parser.add_argument_group("live raw output (--target)")
    live.add_argument("--ca", type=Path, metavar="PEM", help="CA of the service's certificate")
    live.add_argument("--cert", type=Path, metavar="PEM", help="the lab's client certificate")
    live.add_argument("--tls-key", "--key", dest="key", type=Path, metavar="PEM",
                      help="the lab's client key (--key is the former name)")  # fmt: skip
    live.add_argument(
        "--time-limit",
        type=float,
        default=time_limit,
        metavar="SECONDS",
        help=f"stop streaming after this long (default: {time_limit:g})",
    )
    live.add_argument(
        "--session-bytes",
        type=_positive_int,
        default=256 * 1024 * 1024,
        metavar="N",
        help="bytes per logged raw output session (default: 268435456; the service allows "
        "up to certification.raw_stream_max_bytes)",
    )
    live.add_argument("--run-id", help="request id prefix of the sessions (default: the time)")


def _add_nist_parser(commands: _Commands) -> None:
    """``nist``: the NIST SP 800-22 battery on a bit file or a live raw-output stream."""
    nist = commands.add_parser(
        "nist",
        help="NIST SP 800-22 Rev.1a battery (agrees with sts-2.1.2)",
        description="Run the 15 NIST SP 800-22 tests on each sequence of the input and make "
        "the section 4.2 decisions over all sequences.",
    )
    nist_source = nist.add_mutually_exclusive_group(required=True)
    nist_source.add_argument("--input", type=Path, help="bit file to test")
    nist_source.add_argument(
        "--target",
        "--live",
        dest="live",
        metavar="HOST:PORT",
        help="stream raw generator output from a running service (lab role; the service "
        "configured for certification; --live is the former name)",
    )
    nist.add_argument(
        "--format",
        choices=("binary", "ascii"),
        help="with --input (required): binary: packed bytes, most significant bit first; "
        "ascii: '0'/'1' characters, whitespace ignored",
    )
    nist.add_argument(
        "--sequences",
        type=_positive_int,
        default=100,
        metavar="M",
        help="with --target: sequences to stream and test (default: 100)",
    )
    nist.add_argument(
        "--bits-per-sequence",
        type=_positive_int,
        default=DEFAULT_BITS_PER_SEQUENCE,
        metavar="N",
        help=f"sequence length in bits (default: {DEFAULT_BITS_PER_SEQUENCE})",
    )
    nist.add_argument("--json", type=Path, required=True, metavar="OUT", help="JSON report path")
    nist.add_argument("--jobs", type=_positive_int, default=1, help="worker processes (default: 1)")
    _add_live_options(nist, time_limit=600.0)
    nist.set_defaults(handler=_cmd_nist)


def _add_outcomes_parser(commands: _Commands) -> None:
    """``outcomes``: the outcome-level battery on outcome records."""
    outcomes = commands.add_parser(
        "outcomes",
        help="outcome-level battery on outcome records (JSON Lines)",
        description="Chi-square, Kolmogorov-Smirnov and Knuth's sequence tests of game "
        "outcomes against their exact distributions; Holm-adjusted decisions.",
    )
    outcomes.add_argument(
        "--input",
        type=Path,
        action="append",
        required=True,
        metavar="FILE",
        help="JSON Lines of log entries or an rng-audit-export file (repeatable; - reads "
        "standard input)",
    )
    outcomes.add_argument(
        "--profile",
        type=Path,
        action="append",
        default=[],
        metavar="TOML",
        help="game profile file for records of a profile not shipped",
    )
    outcomes.add_argument(
        "--confidence",
        type=_confidence,
        default=0.99,
        help="confidence of the decisions (default: 0.99)",
    )
    outcomes.add_argument(
        "--json", type=Path, required=True, metavar="OUT", help="JSON report path"
    )
    outcomes.add_argument("--html", type=Path, metavar="OUT", help="HTML report with plots")
    _add_page_options(outcomes)
    outcomes.set_defaults(handler=_cmd_outcomes)


def _add_power_parser(commands: _Commands) -> None:
    """``power``: the power study against known-bad generators."""
    pw = commands.add_parser(
        "power",
        help="power study: known-bad generators against the outcome battery",
        description="Finds the sample size at which each known-bad generator is rejected, "
        "and checks that our generator passes at those sizes.",
    )
    pw.add_argument(
        "--replicates",
        type=_positive_int,
        default=100,
        help="independent samples per size (default: 100; 99 must FAIL for the 99 %% target)",
    )
    pw.add_argument(
        "--confidence",
        type=_confidence,
        default=0.99,
        help="confidence of the outcome battery's decisions (default: 0.99)",
    )
    pw.add_argument("--json", type=Path, required=True, metavar="OUT", help="JSON report path")
    pw.add_argument("--html", type=Path, metavar="OUT", help="HTML report with plots")
    _add_page_options(pw)
    pw.set_defaults(handler=_cmd_power)


def _add_collect_parser(commands: _Commands) -> None:
    """``collect``: outcome records from the live service or the lab generator."""
    collect = commands.add_parser(
        "collect",
        help="collect outcome records from the live service or the lab generator",
        description="Writes outcome records (JSON Lines, one canonical entry's kind, params "
        "and outcome per line) for `rng-certify outcomes`.",
    )
    where = collect.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--target", "--live", dest="live", metavar="HOST:PORT",
        help="a running service on a loopback address (--live is the former name)",
    )  # fmt: skip
    where.add_argument(
        "--lab-seed",
        metavar="SEED",
        help="draw locally from DeterministicGenerator seeded with SEED",
    )
    collect.add_argument(
        "--kind",
        type=_plan_item,
        action="append",
        metavar="NAME=COUNT",
        help="what to collect (repeatable), e.g. roulette_double_zero=2000",
    )
    collect.add_argument(
        "--time-limit",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="stop a live collection after this long (default: 300)",
    )
    collect.add_argument("--run-id", help="request id prefix (a rerun replays the outcomes)")
    collect.add_argument(
        "--service-profile", metavar="NAME", help="profile name for Fire Numbers and jackpot RPCs"
    )
    collect.add_argument(
        "--output",
        type=Path,
        required=True,
        metavar="FILE",
        help="the outcome records to write (JSON Lines)",
    )
    collect.add_argument(
        "--bits-output",
        type=Path,
        metavar="FILE",
        help="lab mode: also write generator bytes as a bit file",
    )
    collect.add_argument(
        "--bits-bytes",
        type=_positive_int,
        default=12_500_000,
        metavar="N",
        help="bytes for --bits-output (default: 12,500,000 = 100 x 10^6 bits)",
    )
    collect.add_argument(
        "--bits-format",
        choices=("binary", "ascii"),
        default="binary",
        help="of --bits-output: packed bytes or '0'/'1' characters (default: binary)",
    )
    collect.set_defaults(handler=_cmd_collect)


def _add_report_parser(commands: _Commands) -> None:
    """``report``: the HTML evidence report from the JSON documents."""
    report = commands.add_parser(
        "report",
        help="HTML evidence report from JSON results",
        description="Renders the JSON documents of outcomes, nist, power, dieharder and rtp "
        "into one HTML page with plots. Exits with the worst verdict: 1 if any FAILed, else 3 "
        "if any is INCONCLUSIVE (or none has a verdict: rtp without --live judges nothing), "
        "else 0.",
    )
    report.add_argument(
        "--outcomes", type=Path, metavar="JSON", help="rng-certify outcomes --json output"
    )
    report.add_argument("--nist", type=Path, metavar="JSON", help="rng-certify nist --json output")
    report.add_argument(
        "--power", type=Path, metavar="JSON", help="rng-certify power --json output"
    )
    report.add_argument("--rtp", type=Path, metavar="JSON", help="rng-certify rtp --json output")
    report.add_argument(
        "--entropy", type=Path, metavar="JSON", help="rng-certify entropy --json output"
    )
    report.add_argument(
        "--dieharder", type=Path, metavar="JSON", help="rng-certify dieharder --json output"
    )
    report.add_argument("--html", type=Path, required=True, metavar="OUT", help="the HTML page")
    _add_page_options(report)
    report.set_defaults(handler=_cmd_report)


def _add_everything_parser(commands: _Commands) -> None:
    """``all``: both batteries into one evidence directory."""
    everything = commands.add_parser(
        "all",
        help="outcome battery and NIST battery into one evidence directory",
        description="Runs the outcome battery on --records and SP 800-22 on --bits, writing "
        "outcomes.json, nist.json and report.html to --out.",
    )
    everything.add_argument(
        "--records",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="outcome records (JSON Lines) or an rng-audit export for the outcome battery "
        "(repeatable; default: none, no outcome battery)",
    )
    everything.add_argument(
        "--profile",
        type=Path,
        action="append",
        default=[],
        metavar="TOML",
        help="game profile file for records of a profile not shipped (repeatable; default: none)",
    )
    everything.add_argument(
        "--bits",
        type=Path,
        metavar="FILE",
        help="bit file for the NIST SP 800-22 battery (default: none, no NIST battery)",
    )
    everything.add_argument(
        "--format",
        choices=("binary", "ascii"),
        default="binary",
        help="of --bits: packed bytes, most significant bit first, or '0'/'1' characters "
        "(default: binary)",
    )
    everything.add_argument(
        "--bits-per-sequence",
        type=_positive_int,
        default=DEFAULT_BITS_PER_SEQUENCE,
        metavar="N",
        help=f"NIST sequence length in bits (default: {DEFAULT_BITS_PER_SEQUENCE})",
    )
    everything.add_argument(
        "--jobs",
        type=_positive_int,
        default=1,
        help="worker processes for the NIST battery (default: 1)",
    )
    everything.add_argument(
        "--confidence",
        type=_confidence,
        default=0.99,
        help="confidence of the outcome battery's decisions (default: 0.99)",
    )
    everything.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="evidence directory: outcomes.json, nist.json, report.html",
    )
    _add_page_options(everything)
    everything.set_defaults(handler=_cmd_all)


def _add_dieharder_parser(commands: _Commands) -> None:
    """``dieharder``: a raw byte stream piped into dieharder."""
    dh = commands.add_parser(
        "dieharder",
        help="pipe a raw byte stream into dieharder -g 200",
        description="Runs dieharder tests on the lab generator's stream or a file "
        "(docs/certification.md, 'dieharder'). Each test gets its own dieharder process.",
    )
    source = dh.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--lab-seed", metavar="SEED", help="stream the lab generator (DeterministicGenerator)"
    )
    source.add_argument(
        "--input",
        type=Path,
        metavar="FILE",
        help="raw bytes; must hold enough for every test (no rewinding)",
    )
    source.add_argument(
        "--target",
        "--live",
        dest="live",
        metavar="HOST:PORT",
        help="raw generator output streamed from a running service (lab role; --live is the "
        "former name)",
    )
    _add_live_options(dh, time_limit=3600.0)
    dh.add_argument(
        "--test",
        type=int,
        action="append",
        metavar="N",
        help="dieharder test number (repeatable; default: a quick set)",
    )
    dh.add_argument(
        "--psamples",
        type=_positive_int,
        metavar="P",
        help="dieharder -p (default: dieharder's own per test)",
    )
    dh.add_argument(
        "--resolve-ambiguity",
        action="store_true",
        help="dieharder -Y 1 -k 2: add psamples to a WEAK test until it resolves to PASSED or "
        "FAILED (otherwise a WEAK result makes the verdict INCONCLUSIVE)",
    )
    dh.add_argument(
        "--executable", default="dieharder", help="the dieharder program (default: dieharder)"
    )
    dh.add_argument("--json", type=Path, metavar="OUT", help="JSON report path")
    dh.set_defaults(handler=_cmd_dieharder)


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written where a line is indented (lists, commands), each other
    paragraph filled to the terminal's width (docs/cli.md, "CLI conventions")."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = []
        for paragraph in text.strip("\n").split("\n\n"):
            if any(line.startswith(" ") for line in paragraph.splitlines()):
                paragraphs.append(textwrap.indent(paragraph, indent))
            else:
                paragraphs.append(
                    textwrap.fill(
                        " ".join(paragraph.split()),
                        width,
                        initial_indent=indent,
                        subsequent_indent=indent,
                    )
                )
        return "\n\n".join(paragraphs) + "\n"


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line (exit status 2, no usage block); every command's
    help by :class:`_Formatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


_EPILOG = """\
Exit status: 0 PASS: the data were enough and nothing rejects; 1 FAIL: a test rejects;
3 INCONCLUSIVE: nothing rejects, but the sample is below what the battery needs (the message
names the size), or a result could not be decided; 2 nothing was checked: a usage or input
error, one line naming the option or the file, nothing written.

documentation: docs/certification.md (how a lab runs each command, the tests, the verdicts and
the JSON documents); docs/cli.md (conventions shared with rng-service and rng-audit)
"""


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rng-certify",
        description="Statistical certification of the random outcomes and bit streams of "
        "rng-service, for gaming laboratories.",
        epilog=_EPILOG,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_nist_parser(commands)
    _add_outcomes_parser(commands)
    _add_power_parser(commands)
    _add_collect_parser(commands)
    _add_report_parser(commands)
    _add_everything_parser(commands)
    _add_dieharder_parser(commands)
    add_rtp_parser(commands)
    add_entropy_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse has printed the usage message
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    args.argv = list(sys.argv[1:] if argv is None else argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except InputError as e:
        print(f"rng-certify: error: {e}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
