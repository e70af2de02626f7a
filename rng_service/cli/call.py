"""``rng-service call``: every RPC a person calls by hand, for users without grpcurl.

Commands: the outcome RPCs of ``rng.v1.OutcomeService`` (spin, multiball, fire-numbers, bonus,
jackpot, dice, shuffle, uniform, weighted; batch and stream for labs; void-round for
operators; profiles and profile), the reads of ``rng.v1.LogService`` (keys, checkpoint,
checkpoints, entries, find, inclusion, consistency; publish for operators) and the gRPC health
check. It follows docs/cli.md ("CLI conventions", :mod:`rng_service.cli.support`).

An outcome is never lost to the command line (docs/cli.md, "Outcomes are never lost"):
everything that can be checked before the draw is checked before it (the TLS files, the
target, verifier keys, that output files can be written); the request id, given or new, is
printed on stderr before the call; once the service answered, the outcome, its log index and
the request id are printed whatever fails afterwards (writing or verifying the receipt: exit
status 3), and a call that failed on the way says to retry with the same request id, which
returns the logged outcome and never draws it again.

``--verify-url BASE`` (every command that draws or logs an outcome, ``stream`` too) prints a
link to the verify page (web/verify, docs/verify-page.md) carrying the receipt in its fragment
(:mod:`rng_service.audit.link`); BASE is checked before the draw, and the link is printed with
the outcome even when writing or verifying the receipt failed.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rng_service.cli.call_reads import READS, Read, entry_json
from rng_service.cli.support import (
    CONNECTION_OPTIONS,
    EXIT_AFTER_DRAW,
    EXIT_FAILED,
    EXIT_OK,
    OUTPUT_OPTIONS,
    Output,
    Target,
    UsageError,
    add_shared,
    client_tls,
    new_request_id,
    quiet_grpc_core,
    refuse_option,
    resolve_target,
    verifier_keys,
    writable_file,
)
from rng_service.cli.text import add_command
from rng_service.outcomes.cards import DEAL_PLANS, card_label
from rng_service.outcomes.roulette import WheelType

if TYPE_CHECKING:
    from rng_service.audit import PinnedOrigin
    from rng_service.log.note import NoteVerifier
    from rng_service.log.receipt import Receipt
    from rng_service.rpc.client import ClientError, ClientTls, OutcomeResult, RngClient

__all__ = ["add_parser"]

WHEELS = tuple(w.value for w in WheelType)  # as the client and the log name them
BATCH_WHEELS = (WheelType.SINGLE_ZERO.value, WheelType.DOUBLE_ZERO.value)

DESCRIPTION = """\
Calls a running service: every RPC a person calls by hand (docs/cli.md).

The service called: --target; else the server address of --config (the service's own file,
read as serve reads it); else $RNG_TARGET; else that of the default configuration
(127.0.0.1:50051, RNG_SERVICE__SERVER__HOST/PORT applied). Options of this command may come
before or after the subcommand. With --ca, --cert and --tls-key the call uses mTLS.

Outcomes: the request id (given, or a new one) is printed on stderr before the call; the
outcome, its log index and request id are printed even when a later step fails (exit status
3). Retrying with the same --request-id returns the logged outcome; it is never drawn twice.

With --verify-url BASE a drawing command also prints a link to the verify page (web/verify)
that carries the receipt in its fragment, for checking it in a browser (docs/verify-page.md).

Exit status: 0 done; 1 the service refused or failed the call (the message names the gRPC
status), or health is not SERVING; 2 nothing was sent (bad option, unreadable or unwritable
file, bad key or configuration, a --verify-url that is no http(s) or file URL); 3 the outcome
was drawn and logged but its receipt could not be written, did not verify, or is too large
for a --verify-url link."""

KEY_REFUSED = (
    "--key is not an option of call: --tls-key is this client's mTLS private key, "
    "--verifier-key the log's verifier key to check the receipt with"
)

# Codes after which the request may have been drawn and logged: say how to get it back.
_MAYBE_LOGGED = {"UNAVAILABLE", "DEADLINE_EXCEEDED", "CANCELLED", "UNKNOWN", "INTERNAL", "ABORTED"}
# Codes worth naming the target (and the rule that chose it) for.
_WHERE = {"UNAVAILABLE", "DEADLINE_EXCEEDED"}


# --- rendering --------------------------------------------------------------------------------


def _profile(ref: Mapping[str, Any]) -> str:
    example = ", an EXAMPLE profile" if ref.get("example") else ""
    return f"profile {ref.get('name')} v{ref.get('version')}{example}"


def _joined(values: Iterable[Any]) -> str:
    return " ".join(str(v) for v in values)


def _spin_text(o: Mapping[str, Any]) -> str:
    final = o["result"]
    voided = sum(1 for s in o["spins"] if s["void"])
    return f"{final['number']} {final['color']} (wheel position {final['wheel_position']})" + (
        f", after {voided} voided spin(s) of 00" if voided else ""
    )


def _multiball_text(o: Mapping[str, Any]) -> str:
    balls = ", ".join(
        f"{b['number']} {b['color']} (position {b['wheel_position']})" for b in o["balls"]
    )
    return f"balls: {balls}"


def _bonus_text(o: Mapping[str, Any]) -> str:
    odds = ", ".join(f"{b['bet']} {b['odds']} to 1" for b in o["odds"])
    segments = "; ".join(
        f"{s['index']} {s['designation']}"
        + (" complete" if s["complete"] else "")
        + (f" jackpot {s['jackpot_tier']} {s['jackpot_value']}" if s["jackpot_tier"] else "")
        for s in o["segments"]
    )
    cells = {c["index"]: c for c in o["cells"]}
    filled = " ".join(f"{i}:x{cells[i]['multiplier']}" for i in o["fill_order"] if i in cells)
    return (
        f"total multiplier {o['total']}; payout odds {odds} ({_profile(o['profile'])}; "
        f"{o['fire_number_count']} Fire Numbers, drawn at log index {o['fire_numbers_index']}, "
        f"spin at log index {o['spin_index']})\n"
        f"segments: {segments}\n"
        f"cells filled, in order (cell:multiplier): {filled}"
    )


def _shuffle_text(o: Mapping[str, Any]) -> str:
    text = f"{len(o['cards'])} cards, top first: {_joined(o['cards'])}"
    for hand in o["hands"]:
        text += f"\n{hand['position']}: {_joined(hand['cards'])}"
    return text


def _batch_text(o: Mapping[str, Any]) -> str:
    if "roulette" in o:
        return f"numbers: {_joined(o['roulette']['numbers'])}"
    if "dice" in o:
        dice, faces = o["dice"]["dice"], o["dice"]["faces"]
        rolls = [_joined(faces[i : i + dice]) for i in range(0, len(faces), max(dice, 1))]
        return f"rolls: {', '.join(rolls)}"
    return f"values: {_joined(o['uniform']['values'])}"


# --- the commands -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Draw:
    """A command that draws (or logs) one outcome: its client method, its own options, the
    method's keyword arguments from them, and the outcome as text."""

    name: str
    help: str
    define: Callable[[argparse.ArgumentParser], None]
    call: Callable[[RngClient, argparse.Namespace, dict[str, str]], OutcomeResult]
    text: Callable[[Mapping[str, Any]], str]
    session: bool = True
    slot: bool = False
    lab: bool = False


@dataclass(frozen=True)
class _Stream:
    """``stream``: chunks of a large batch, each its own log entry, printed as they arrive."""

    name: str
    help: str
    define: Callable[[argparse.ArgumentParser], None]


def _wheel(choices: Sequence[str]) -> Callable[[argparse.ArgumentParser], None]:
    def define(p: argparse.ArgumentParser) -> None:
        p.add_argument("--wheel", required=True, choices=choices, help="the wheel type")

    return define


def _define_multiball(p: argparse.ArgumentParser) -> None:
    # Every wheel name is accepted here: the service is the one authority on what a
    # multi-ball draw allows (it refuses a double zero wheel used as a single zero wheel).
    _wheel(WHEELS)(p)
    p.add_argument("--balls", type=int, default=3, help="balls released together (Blazing 7's: 3)")


def _define_profile(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--profile", required=True, help="the game profile's name (call profiles lists them)"
    )


def _define_bonus(p: argparse.ArgumentParser) -> None:
    _define_profile(p)
    p.add_argument(
        "--fire-numbers-index",
        type=int,
        help="optional: the log index of the round's Fire Number draw, checked by the service "
        "(it finds the draw by the round anyway)",
    )


def _define_dice(p: argparse.ArgumentParser) -> None:
    p.add_argument("--count", type=int, default=3, help="dice rolled together (Sic Bo: 3)")
    p.add_argument("--sides", type=int, default=6, help="sides of each die")


def _define_shuffle(p: argparse.ArgumentParser) -> None:
    p.add_argument("--decks", type=int, default=1, help="decks in the shoe")
    p.add_argument("--jokers", type=int, default=0, help="jokers per deck")
    p.add_argument(
        "--plan",
        choices=sorted(DEAL_PLANS),
        default="",
        help="a dealing plan: the answer deals each position's hand from the logged shuffle "
        "(default: none, the shuffle only)",
    )
    p.add_argument(
        "--players", type=int, help="with --plan: the players dealt to (default: 1 with --plan)"
    )


def _define_uniform(p: argparse.ArgumentParser) -> None:
    p.add_argument("--low", type=int, required=True, help="smallest value (inclusive)")
    p.add_argument("--high", type=int, required=True, help="largest value (inclusive)")
    p.add_argument("--count", type=int, default=1, help="values drawn")
    p.add_argument("--distinct", action="store_true", help="pairwise distinct values")


def _define_weighted(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--weights",
        type=int,
        nargs="+",
        required=True,
        metavar="W",
        help="positive integer weights: index i is drawn with probability W_i / sum",
    )
    p.add_argument("--count", type=int, default=1, help="indices drawn (independently)")


def _define_batch_kind(p: argparse.ArgumentParser) -> None:
    p.add_argument("--count", type=int, required=True, help="outcomes drawn (spins, rolls, values)")
    kind = p.add_mutually_exclusive_group(required=True)
    kind.add_argument("--wheel", choices=BATCH_WHEELS, help="roulette spins on this wheel")
    kind.add_argument(
        "--dice", type=int, nargs=2, metavar=("DICE", "SIDES"), help="rolls of DICE dice"
    )
    kind.add_argument(
        "--uniform", type=int, nargs=2, metavar=("LOW", "HIGH"), help="integers in [LOW, HIGH]"
    )


def _define_stream(p: argparse.ArgumentParser) -> None:
    _define_batch_kind(p)
    p.add_argument(
        "--chunk-size",
        type=int,
        default=0,
        help="outcomes per chunk, each chunk one log entry (0: the service's default, 10,000)",
    )


def _define_void(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reason", required=True, help="why, logged in the entry: 1 to 256 characters")
    p.add_argument(
        "--client",
        default="",
        help="whose round: a configured game server (default: the caller's own)",
    )


def _pair(values: Sequence[int] | None) -> tuple[int, int] | None:
    return (values[0], values[1]) if values else None


def _batch(c: RngClient, a: argparse.Namespace, ids: dict[str, str]) -> OutcomeResult:
    return c.batch(
        count=a.count, wheel=a.wheel, dice=_pair(a.dice), uniform=_pair(a.uniform), **ids
    )


def _spin(c: RngClient, a: argparse.Namespace, ids: dict[str, str]) -> OutcomeResult:
    from rng_service.rpc.client import OutcomeResult

    spin = c.spin(wheel=a.wheel, **ids)
    result = {"number": spin.number, "color": spin.color, "wheel_position": spin.wheel_position}
    return OutcomeResult({"result": result, "spins": list(spin.spins)}, spin.receipt)


def _shuffle(c: RngClient, a: argparse.Namespace, ids: dict[str, str]) -> OutcomeResult:
    from rng_service.rpc.client import OutcomeResult

    players = a.players if a.players is not None else (1 if a.plan else 0)
    r = c.shuffle(decks=a.decks, jokers=a.jokers, plan=a.plan, players=players, **ids)
    # the compact card codes of the answer, as the labels the log entry holds
    outcome = {**r.outcome, "cards": [card_label(code) for code in r.outcome["cards"]]}
    return OutcomeResult(outcome, r.receipt)


def _void(c: RngClient, a: argparse.Namespace, ids: dict[str, str]) -> OutcomeResult:
    from rng_service.rpc.client import OutcomeResult

    r = c.void_round(
        table_id=ids["table_id"], round_id=ids["round_id"], request_id=ids["request_id"],
        reason=a.reason, client=a.client,
    )  # fmt: skip
    outcome = {**r.outcome, "table_id": ids["table_id"], "round_id": ids["round_id"]}
    return OutcomeResult(outcome, r.receipt)


DRAWS: tuple[_Draw, ...] = (
    _Draw("spin", "one roulette spin (SpinRoulette)", _wheel(WHEELS), _spin, _spin_text),
    _Draw(
        "multiball",
        "balls on one wheel, the Blazing 7's bonus round (DrawMultiBall)",
        _define_multiball,
        lambda c, a, ids: c.multiball(wheel=a.wheel, balls=a.balls, **ids),
        _multiball_text,
    ),
    _Draw(
        "fire-numbers",
        "the Fire Numbers of a Mega Fire Blaze round, before its spin (SelectFireNumbers)",
        _define_profile,
        lambda c, a, ids: c.fire_numbers(profile=a.profile, **ids),
        lambda o: f"Fire Numbers: {_joined(o['numbers'])} ({_profile(o['profile'])})",
    ),
    _Draw(
        "bonus",
        "the Mega Fire Blaze bonus game of a round (PlayMegaFireBlazeBonus)",
        _define_bonus,
        lambda c, a, ids: c.mega_fire_blaze_bonus(
            profile=a.profile, fire_numbers_index=a.fire_numbers_index, **ids
        ),
        _bonus_text,
    ),
    _Draw(
        "jackpot",
        "a jackpot tier by the profile's weights (DrawJackpotTier)",
        _define_profile,
        lambda c, a, ids: c.jackpot_tier(profile=a.profile, **ids),
        lambda o: f"jackpot tier {o['tier']}, value {o['value']} ({_profile(o['profile'])})",
    ),
    _Draw(
        "dice",
        "a roll of dice, e.g. Sic Bo (RollDice)",
        _define_dice,
        lambda c, a, ids: c.roll_dice(count=a.count, sides=a.sides, **ids),
        lambda o: f"{_joined(o['faces'])} (total {o['total']})",
    ),
    _Draw(
        "shuffle",
        "a shuffled shoe, optionally dealt by a plan (ShuffleCards)",
        _define_shuffle,
        _shuffle,
        _shuffle_text,
    ),
    _Draw(
        "uniform",
        "integers uniform on [low, high] (DrawUniformIntegers)",
        _define_uniform,
        lambda c, a, ids: c.uniform(
            low=a.low, high=a.high, count=a.count, distinct=a.distinct, **ids
        ),
        lambda o: f"values: {_joined(o['values'])}",
        slot=True,
    ),
    _Draw(
        "weighted",
        "indices drawn by integer weights (DrawWeighted)",
        _define_weighted,
        lambda c, a, ids: c.weighted(weights=a.weights, count=a.count, **ids),
        lambda o: f"indices: {_joined(o['indices'])}",
        slot=True,
    ),
    _Draw(
        "batch",
        "labs: many outcomes of one kind in one log entry (DrawBatch, lab role)",
        _define_batch_kind,
        _batch,
        _batch_text,
        lab=True,
    ),
    _Draw(
        "void-round",
        "void a game round abandoned at the table (VoidRound, operator role)",
        _define_void,
        _void,
        lambda o: (
            f"voided round {o['round_id']!r} of table {o['table_id']!r} (client {o['client']!r})"
        ),
        session=False,
    ),
)


def _context_options(p: argparse.ArgumentParser, *, lab: bool, session: bool, slot: bool) -> None:
    group = p.add_argument_group("request context")
    if lab:
        group.add_argument("--table", default="LAB", help="table id")
        group.add_argument("--round", help="game round id (default: the request id)")
    else:
        group.add_argument("--table", required=True, help="table id")
        group.add_argument("--round", required=True, help="game round id")
    group.add_argument(
        "--request-id",
        help="idempotency key (default: a new one); printed on stderr before the call. The "
        "same id again returns the logged outcome, never a new draw",
    )
    if session:
        group.add_argument("--session", default="", help="session id linking outcomes")
    if slot:
        group.add_argument(
            "--slot",
            default="",
            help="the round's slot this draw fills, for several generic draws in one round "
            "(default: the kind's own, uniform_int or weighted_choice)",
        )


def _receipt_options(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("receipt (checked before the draw)")
    group.add_argument(
        "--receipt-out", metavar="FILE", help="write the receipt (JSON) to this file"
    )
    group.add_argument(
        "--verifier-key",
        action="append",
        metavar="KEY",
        help="check the receipt with the log's verifier key <name>+<id>+<base64>, or a .vkey "
        "file (repeatable): signature, leaf hash, inclusion proof, and that its checkpoint "
        "is of the log named by the key",
    )
    _verify_url_option(group)


def _verify_url_option(group: argparse._ActionsContainer, what: str = "the receipt") -> None:
    group.add_argument(
        "--verify-url",
        metavar="BASE",
        help="also print a link to the verify page at BASE, an http(s):// or file:// URL (e.g. "
        f"http://127.0.0.1:9465/ or file:///.../web/verify/index.html), carrying {what} in "
        "its fragment, which the browser never sends anywhere (docs/verify-page.md); a "
        "receipt too large for a link (over 16384 characters) is said, with exit status 3",
    )


# --- running ----------------------------------------------------------------------------------


@dataclass
class _Plan:
    """What a command needs, checked before anything is sent."""

    target: Target
    out: Output
    verifiers: list[NoteVerifier]
    origin: PinnedOrigin | None
    receipt_out: Path | None
    tls: ClientTls | None
    verify_url: str | None = None  # the verify page's URL, checked (--verify-url)
    named: str | None = None  # the log every call names (--origin), None: the one served


def _page_url(args: argparse.Namespace) -> str | None:
    """``--verify-url``, checked before anything is drawn: an http(s) or file URL."""
    from rng_service.audit.link import check_page_url
    from rng_service.errors import InvalidArgument

    given = getattr(args, "verify_url", None)
    if given is None:
        return None
    try:
        return check_page_url(given)
    except InvalidArgument as e:
        raise UsageError(f"--verify-url: {str(e).removeprefix(f'{e.field}: ')}") from e


def _link(plan: _Plan, receipt: Receipt) -> tuple[str | None, str | None]:
    """The verify page's link carrying ``receipt`` and, if it could not be made (a receipt
    past the link's size limit), why not; never raises: it runs after the draw."""
    from rng_service.audit.link import verify_link
    from rng_service.errors import InvalidArgument
    from rng_service.log.receipt import receipt_to_json

    if plan.verify_url is None:
        return None, None
    try:
        return verify_link(plan.verify_url, receipt_to_json(receipt) + "\n"), None
    except InvalidArgument as e:
        return None, f"no verify link: {str(e).removeprefix(f'{e.field}: ')}"
    except Exception as e:  # any failure after the draw is reported, never raised
        return None, f"no verify link: {e}"


def _plan(args: argparse.Namespace) -> _Plan:
    from rng_service.audit import pinned_origin
    from rng_service.errors import InvalidArgument

    out = Output(args.json)
    tls = client_tls(args.ca, args.cert, args.tls_key)
    target = resolve_target(args.target, args.config, origin=args.origin)
    keys = getattr(args, "verifier_key", None) or []
    verifiers = verifier_keys(keys, "--verifier-key") if keys else []
    origin = None
    if verifiers:
        try:
            origin = pinned_origin(verifiers, args.origin)
        except InvalidArgument as e:
            raise UsageError(f"--verifier-key: {e}") from e
    receipt = getattr(args, "receipt_out", None)
    receipt_out = writable_file(receipt, "--receipt-out") if receipt else None
    if getattr(args, "out", None):
        writable_file(args.out, "--out")
    return _Plan(target, out, verifiers, origin, receipt_out, tls, _page_url(args), args.origin)


def _failed(plan: _Plan, e: ClientError, request_id: str | None = None) -> int:
    from rng_service.rpc.log_client import LOG_REFUSAL, refusal_hint

    where = f" (target {plan.target.address}: {plan.target.source})" if e.code in _WHERE else ""
    if plan.named and e.code == "PERMISSION_DENIED" and LOG_REFUSAL in e.details:
        where = f" (the call named log {plan.named!r}: {refusal_hint(plan.named)})"
    plan.out.error(f"{e}{where}")
    if request_id is not None and not e.sent:
        plan.out.note(
            "nothing was sent: the connection to the service never became ready, so no "
            "outcome was drawn or logged"
        )
    elif request_id is not None and e.code in _MAYBE_LOGGED:
        plan.out.note(
            f"the outcome may have been drawn and logged: retry with --request-id {request_id} "
            "(a logged outcome is returned, never drawn again)"
        )
    return EXIT_FAILED


def _logged_kind(receipt: Receipt) -> str | None:
    entry = entry_json(receipt.entry)
    return entry.get("kind") if isinstance(entry, dict) else None


def _after_draw(plan: _Plan, draw: _Draw, result: OutcomeResult, request_id: str) -> int:
    """Writes and checks the receipt, then prints the outcome, whatever failed: nothing here
    may lose an outcome the log already holds."""
    from rng_service.log.receipt import receipt_to_json, verify_receipt

    receipt = result.receipt
    problems: list[str] = []
    written = verified = None
    link, no_link = _link(plan, receipt)
    if no_link:
        problems.append(no_link)
    if plan.receipt_out is not None:
        try:
            plan.receipt_out.write_text(receipt_to_json(receipt) + "\n")
            written = str(plan.receipt_out)
        except OSError as e:
            problems.append(f"the receipt was not written to {plan.receipt_out}: {e.strerror}")
    if plan.verifiers:
        try:
            checked = verify_receipt(receipt, plan.verifiers)
            if plan.origin is not None:
                plan.origin.check(checked.checkpoint.origin, "the receipt's checkpoint")
            verified = list(checked.key_names)
        except Exception as e:  # any failure after the draw is reported, never raised
            problems.append(f"the receipt did NOT verify: {e}")
    document: dict[str, Any] = {
        "request_id": request_id,
        "kind": _logged_kind(receipt),
        "log_index": receipt.index,
        "tree_size": receipt.tree_size,
        "replayed": receipt.replayed,
        "outcome": result.outcome,
    }
    if plan.receipt_out is not None:
        document["receipt_file"] = written
    if plan.verifiers:
        document["verified_by"] = verified
    if plan.verify_url is not None:
        document["verify_link"] = link

    def text() -> str:
        # the first line ends with where it is logged; a long outcome continues below
        first, *more = draw.text(result.outcome).split("\n")
        lines = [
            f"{first}  [request {request_id}, log index {receipt.index}"
            + (", replayed" if receipt.replayed else "")
            + "]",
            *more,
        ]
        if written:
            lines.append(f"receipt written to {written}")
        if verified:
            lines.append(f"receipt verified: signed by {', '.join(verified)}")
        if link:
            lines.append(f"verify in a browser: {link}")
        return "\n".join(lines)

    try:
        plan.out.result(document, text)
    except Exception:
        # Rendering failed (a bug): the logged entry itself still reaches the user.
        plan.out.note(f"logged entry {receipt.index}: {receipt.entry.decode('utf-8', 'replace')}")
        if link:
            plan.out.note(f"verify in a browser: {link}")
        problems.append("the outcome could not be shown as text; the logged entry is above")
    for problem in problems:
        plan.out.error(problem)
    if problems:
        plan.out.note(
            f"the outcome is logged at index {receipt.index} under request id {request_id}: "
            f"--request-id {request_id} returns it again"
        )
        return EXIT_AFTER_DRAW
    return EXIT_OK


def _ids(args: argparse.Namespace, request_id: str) -> dict[str, str]:
    """The RequestContext fields given (a lab command's round defaults to the request id)."""
    ids = {"table_id": args.table, "round_id": args.round or request_id, "request_id": request_id}
    if getattr(args, "session", ""):
        ids["session_id"] = args.session
    if getattr(args, "slot", ""):
        ids["slot"] = args.slot
    return ids


def _run_draw(args: argparse.Namespace, draw: _Draw) -> int:
    from rng_service.rpc.client import ClientError, RngClient

    plan = _plan(args)
    request_id = args.request_id or new_request_id()
    plan.out.note(f"request id: {request_id}")
    with RngClient(
        plan.target.address, timeout=args.timeout, tls=plan.tls, origin=args.origin
    ) as client:
        try:
            result = draw.call(client, args, _ids(args, request_id))
        except ClientError as e:
            return _failed(plan, e, request_id)
    return _after_draw(plan, draw, result, request_id)


def _run_stream(args: argparse.Namespace) -> int:
    from rng_service.rpc.client import ClientError, RngClient

    plan = _plan(args)
    request_id = args.request_id or new_request_id()
    plan.out.note(f"request id: {request_id}")
    chunks = 0
    problems: list[str] = []
    with RngClient(
        plan.target.address, timeout=args.timeout, tls=plan.tls, origin=args.origin
    ) as client:
        try:
            for r in client.stream_batch(
                count=args.count, chunk_size=args.chunk_size, wheel=args.wheel,
                dice=_pair(args.dice), uniform=_pair(args.uniform), **_ids(args, request_id),
            ):  # fmt: skip
                o, receipt = r.outcome, r.receipt
                chunk_id = f"{request_id}/{o['chunk']}"  # each chunk's own request id
                text = (
                    f"chunk {o['chunk'] + 1} of {o['chunks']}, from outcome {o['first']}: "
                    f"{_batch_text(o)}  [request {chunk_id}, log index {receipt.index}"
                    + (", replayed" if receipt.replayed else "")
                    + "]"
                )
                document = {
                    "request_id": chunk_id,
                    "log_index": receipt.index,
                    "tree_size": receipt.tree_size,
                    "replayed": receipt.replayed,
                    "outcome": o,
                }
                if plan.verify_url is not None:
                    link, no_link = _link(plan, receipt)
                    document["verify_link"] = link
                    if link:
                        text += f"\nverify in a browser: {link}"
                    if no_link:
                        problems.append(f"chunk {o['chunk'] + 1}: {no_link}")
                plan.out.result(document, text, lines=True)
                chunks += 1
        except ClientError as e:
            _failed(plan, e, None if e.sent else request_id)
            for problem in problems:
                plan.out.error(problem)
            if e.sent:
                plan.out.note(
                    f"{chunks} chunk(s) above are logged; --request-id {request_id} with the "
                    "same options replays them and draws only the missing ones"
                )
            return EXIT_FAILED
    for problem in problems:
        plan.out.error(problem)
    if problems:
        plan.out.note(
            f"the chunks are logged: --request-id {request_id} with the same options returns "
            "them again"
        )
        return EXIT_AFTER_DRAW
    return EXIT_OK


def _run_read(args: argparse.Namespace, read: Read) -> int:
    from rng_service.rpc.client import ClientError, RngClient

    plan = _plan(args)
    with RngClient(
        plan.target.address, timeout=args.timeout, tls=plan.tls, origin=args.origin
    ) as client:
        try:
            return read.run(client, args, plan.out)
        except ClientError as e:
            return _failed(plan, e)


def run(args: argparse.Namespace) -> int:
    """Runs the ``call`` subcommand chosen in ``args`` (set by :func:`add_parser`)."""
    quiet_grpc_core()
    command = args.call_command
    if isinstance(command, Read):
        return _run_read(args, command)
    if isinstance(command, _Stream):
        return _run_stream(args)
    return _run_draw(args, command)


STREAM = _Stream(
    "stream",
    "labs: a large batch in chunks, each chunk one log entry (StreamBatch, lab role)",
    _define_stream,
)
COMMANDS: tuple[_Draw | _Stream | Read, ...] = (*DRAWS[:-1], STREAM, DRAWS[-1], *READS)


def add_parser(commands: Any) -> None:
    """Adds ``call`` and its subcommands to ``rng-service``'s subparsers ``commands``."""
    p = add_command(
        commands,
        "call",
        "call a running service: outcomes, log reads, health (docs/cli.md)",
        description=DESCRIPTION,
    )
    shared = (*CONNECTION_OPTIONS, *OUTPUT_OPTIONS)
    title = "connection and output (before or after the subcommand)"
    add_shared(p, shared, title=title, top=True)
    refuse_option(p, "--key", KEY_REFUSED)
    calls = p.add_subparsers(dest="what", required=True, metavar="COMMAND")
    for command in COMMANDS:
        c = add_command(
            calls,
            command.name,
            command.help,
            description=command.help[0].upper() + command.help[1:] + ".",
        )
        command.define(c)
        if isinstance(command, _Draw):
            _context_options(c, lab=command.lab, session=command.session, slot=command.slot)
            _receipt_options(c)
        elif isinstance(command, _Stream):
            _context_options(c, lab=True, session=True, slot=False)
            _verify_url_option(
                c.add_argument_group("receipts (checked before the draw)"), "each chunk's receipt"
            )
        add_shared(c, shared, title=title, top=False)
        refuse_option(c, "--key", KEY_REFUSED)
        c.set_defaults(call_command=command)
    p.set_defaults(fn=run)
