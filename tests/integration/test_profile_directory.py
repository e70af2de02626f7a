"""The service with an operator's profile directory: approved profiles and paytables are served
(listed, drawn under, fetched by hash); a shipped example is refused without allow_examples,
whether named by a client or placed in the directory (the start-up fails naming file and key)."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
from pathlib import Path

import grpc
import pytest

from rng_service._proto.rng.v1 import common_pb2, outcomes_pb2
from rng_service.cli.service import main as cli_main
from rng_service.process.app import Service, StartupError
from tests.fakes import CounterEntropy
from tests.integration.conftest import make_config, start

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "mega_fire_blaze_example"
EXAMPLE_TOML = (ROOT / "rng_service" / "profiles" / f"{EXAMPLE}.toml").read_text()


def approved(directory: Path) -> None:
    directory.mkdir()
    text = EXAMPLE_TOML.replace(f'name = "{EXAMPLE}"', 'name = "casino_mfb"')
    (directory / "casino_mfb.toml").write_text(text.replace("example = true", "example = false"))
    shutil.copy(ROOT / "rng_service" / "paytables" / "roulette_up.toml", directory)


def ctx(rid: str) -> common_pb2.RequestContext:
    return common_pb2.RequestContext(table_id="T1", round_id=rid, request_id=rid)


def test_operator_directory_is_served_and_examples_are_refused(tmp_path: Path) -> None:
    approved(tmp_path / "approved")
    running = start(make_config(tmp_path, RNG_SERVICE__PROFILES__DIRECTORY="approved"))
    try:
        listed = running.outcomes.ListProfiles(outcomes_pb2.ListProfilesRequest(), timeout=10)
        kinds = {p.id.name: (p.kind, p.example) for p in listed.profiles}
        assert kinds == {
            "casino_mfb": ("mega_fire_blaze", False),
            "roulette_up": ("paytable:roulette_up", False),
        }
        fire = running.outcomes.SelectFireNumbers(
            outcomes_pb2.SelectFireNumbersRequest(context=ctx("f1"), profile="casino_mfb"),
            timeout=10,
        )
        assert fire.profile.name == "casino_mfb"
        assert fire.profile.example is False
        served = running.outcomes.GetProfile(
            outcomes_pb2.GetProfileRequest(sha256=fire.profile.sha256), timeout=10
        )
        assert hashlib.sha256(served.canonical).hexdigest() == fire.profile.sha256
        # The same through `rng-service call profile`, which writes the canonical bytes.
        out = tmp_path / "casino_mfb.json"
        target = f"127.0.0.1:{running.port}"
        argv = ["call", "--target", target, "profile", "--name", "casino_mfb", "--out", str(out)]
        assert cli_main(argv) == 0
        assert out.read_bytes() == served.canonical
        # The shipped example is not served: a request naming it draws and logs nothing.
        size = running.service.appender.tree_size if running.service.appender else -1
        with pytest.raises(grpc.RpcError) as info:
            running.outcomes.SelectFireNumbers(
                outcomes_pb2.SelectFireNumbersRequest(context=ctx("f2"), profile=EXAMPLE),
                timeout=10,
            )
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "allow_examples" in (info.value.details() or "")
        assert running.service.appender is not None
        assert running.service.appender.tree_size == size
    finally:
        running.stop()


def test_an_example_in_the_directory_stops_the_start_without_allow_examples(
    tmp_path: Path,
) -> None:
    approved(tmp_path / "approved")
    shutil.copy(ROOT / "rng_service" / "profiles" / f"{EXAMPLE}.toml", tmp_path / "approved")
    service = Service(
        make_config(tmp_path, RNG_SERVICE__PROFILES__DIRECTORY="approved"), entropy=CounterEntropy()
    )

    async def attempt() -> None:
        try:
            await service.start()
        finally:
            await service.stop(0)

    with pytest.raises(StartupError) as info:
        asyncio.run(attempt())
    message = str(info.value)
    assert message.startswith(f"profiles.directory: {EXAMPLE}.toml:example:")
    assert "allow_examples = true" in message
    # With allow_examples the same directory starts, and the example is served as one.
    running = start(
        make_config(
            tmp_path,
            RNG_SERVICE__PROFILES__DIRECTORY="approved",
            RNG_SERVICE__PROFILES__ALLOW_EXAMPLES="true",
        )
    )
    try:
        listed = running.outcomes.ListProfiles(outcomes_pb2.ListProfilesRequest(), timeout=10)
        assert {p.id.name: p.example for p in listed.profiles}[EXAMPLE] is True
    finally:
        running.stop()


def test_rng_audit_profiles_names_the_example_entries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rng_service.cli.audit import main as audit_main

    approved(tmp_path / "approved")
    running = start(
        make_config(
            tmp_path,
            RNG_SERVICE__PROFILES__DIRECTORY="approved",
            RNG_SERVICE__PROFILES__ALLOW_EXAMPLES="true",
        )
    )
    try:
        for i, profile in enumerate(["casino_mfb", EXAMPLE, EXAMPLE]):
            running.outcomes.SelectFireNumbers(
                outcomes_pb2.SelectFireNumbersRequest(context=ctx(f"f{i}"), profile=profile),
                timeout=10,
            )
        running.spin("s1")
        export = tmp_path / "export.jsonl"
        target = f"127.0.0.1:{running.port}"
        assert audit_main(["export", "--target", target, "--out", str(export)]) == 0
        capsys.readouterr()
        # Offline, the shipped example is known; the operator's profile is not.
        assert audit_main(["profiles", str(export)]) == 1
        out = capsys.readouterr().out
        assert "4 entries; 3 drawn under a profile" in out
        assert f"{EXAMPLE} v1, EXAMPLE profile (example = true)" in out
        assert "UNKNOWN" in out
        # The service serves it by hash; its bytes are saved for the auditor.
        saved = tmp_path / "profiles"
        argv = ["profiles", str(export), "--target", target, "--save", str(saved)]
        assert audit_main(argv) == 0
        out = capsys.readouterr().out
        assert "casino_mfb v1, not an example (example = false)" in out
        (copy,) = saved.iterdir()
        assert audit_main(["profiles", str(export), "--profile", str(copy)]) == 0
    finally:
        running.stop()
