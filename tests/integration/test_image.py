"""The container image is built from pinned inputs only, and `make image` uses them.

Static checks of the Dockerfile, the hash-locked requirements/image.txt, scripts/build-image.sh
and the Makefile (no container runtime, no registry, no network): every Python package the
image gets comes from the lock with pip's --require-hashes, the lock pins every dependency of
pyproject.toml (and the build backend) with hashes, the Debian base is a digest-pinned image of
a dated Debian snapshot whose packages come from that snapshot, both recorded in labels, and the
build script needs nothing outside the repository. The real build and its check
(scripts/check-image.sh compares the image's packages with the lock) run under `make image`;
`test_make_image_builds_and_checks` runs them under `make soak` (root, ~3 minutes).
"""

from __future__ import annotations

import fnmatch
import importlib.metadata
import os
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.integration.dockerfile import DOCKERFILE, instructions

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements" / "image.txt"
BUILD = ROOT / "scripts" / "build-image.sh"
CHECK = ROOT / "scripts" / "check-image.sh"
#: The image's Python: Debian bookworm's python3 (3.11) on Linux.
IMAGE_ENV = {
    "python_version": "3.11",
    "python_full_version": "3.11.2",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "platform_machine": "x86_64",
}


def pip_installs() -> list[list[str]]:
    """The argv of every ``pip install`` in the Dockerfile's RUN instructions (``.../pip
    install`` or ``python -m pip install``), all of them."""
    found = []
    mentions = 0
    for word, rest in instructions():
        if word != "RUN":
            continue
        mentions += len(re.findall(r"\bpip\s+install\b", rest))
        for command in re.split(r"&&|;|\|\|", rest):
            argv = shlex.split(command)
            for i in range(len(argv) - 1):
                if argv[i].endswith("pip") and argv[i + 1] == "install":
                    found.append(argv[i:])
    assert len(found) == mentions  # none hidden from the parse
    return found


def lock_pins() -> dict[str, tuple[Version, str, list[str]]]:
    """name -> (version, marker text, sha256 hashes) of requirements/image.txt."""
    text = LOCK.read_text(encoding="utf-8")
    pins: dict[str, tuple[Version, str, list[str]]] = {}
    for block in re.split(r"\n(?=\S)", text):
        first = block.split("\\", 1)[0].strip()
        if not first or first.startswith("#"):
            continue
        m = re.fullmatch(r"([A-Za-z0-9._-]+)==([^\s;]+)\s*(?:;\s*(.*))?", first)
        assert m, f"not a pinned requirement: {first!r}"
        hashes = re.findall(r"--hash=sha256:([0-9a-f]+)", block)
        pins[canonicalize_name(m.group(1))] = (Version(m.group(2)), m.group(3) or "", hashes)
    return pins


def test_the_dockerfile_installs_python_packages_from_the_lock_only() -> None:
    installs = pip_installs()
    assert len(installs) == 2
    locked, project = installs
    # 1. the lock: every file's hash checked, wheels only, no resolver (the lock is the closure)
    assert "--require-hashes" in locked
    assert locked[locked.index("-r") + 1] == "requirements/image.txt"
    assert "--only-binary=:all:" in locked
    assert "--no-deps" in locked
    # 2. the project itself: from the build context, fetching nothing, with the locked backend
    assert project[-1] == "."
    assert {"--no-index", "--no-deps", "--no-build-isolation"} <= set(project)
    # the lock is copied in before it is used, and kept in the image for check-image.sh
    words = instructions()
    copy = words.index(("COPY", "requirements/image.txt requirements/image.txt"))
    first_pip = next(i for i, (w, r) in enumerate(words) if w == "RUN" and "pip install" in r)
    assert copy < first_pip
    assert "/opt/rng-service/requirements-image.txt" in words[first_pip][1]
    # nothing else upgrades or adds Python packages (the old `pip install --upgrade pip` did)
    for word, rest in words:
        if word == "RUN":
            assert "--upgrade" not in rest
            assert "requirements.txt" not in rest


def test_the_lock_pins_every_dependency_with_hashes() -> None:
    pins = lock_pins()
    assert len(pins) >= 15
    for name, (_, _, hashes) in pins.items():
        assert hashes, f"{name} has no --hash"
        assert all(len(h) == 64 for h in hashes), name
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    wanted = [Requirement(r) for r in project["project"]["dependencies"]]
    wanted += [Requirement(r) for r in project["build-system"]["requires"]]
    for req in wanted:
        name = canonicalize_name(req.name)
        assert name in pins, f"{req} is not in requirements/image.txt: run make lock"
        version, marker, _ = pins[name]
        assert req.specifier.contains(version, prereleases=True), (
            f"requirements/image.txt pins {name}=={version}, outside pyproject's {req}: make lock"
        )
        if req.marker is not None:
            assert marker, f"{name}: pyproject's marker {req.marker} is lost in the lock"
        for extra in req.extras:  # psycopg[binary] -> psycopg-binary, pinned on its own
            assert f"{name}-{extra}" in pins, f"{req}: the extra's package is not pinned"


def test_the_lock_is_closed_under_dependencies() -> None:
    """Each locked distribution's own requirements (for the image's Python) are locked too, so
    the image's ``--no-deps`` install misses nothing. Read from the metadata of the same
    versions in this environment; at least the runtime core must be checkable here."""
    pins = lock_pins()
    checked = []
    for name, (version, _, _) in pins.items():
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if Version(dist.version) != version:
            continue
        checked.append(name)
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({**IMAGE_ENV, "extra": ""}):
                continue
            dep = canonicalize_name(req.name)
            assert dep in pins, f"{name}=={version} needs {req}, which the lock lacks: make lock"
            assert req.specifier.contains(pins[dep][0], prereleases=True), (name, req)
    assert {"grpcio", "cryptography", "protobuf", "numpy", "cffi"} <= set(checked)


def test_the_lock_holds_nothing_of_the_certify_extra() -> None:
    """The service's image is the service: the certification suite's libraries (pyproject's
    ``certify`` extra, and what only they need) are not in its lock."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extra = {
        canonicalize_name(Requirement(r).name)
        for r in project["project"]["optional-dependencies"]["certify"]
    }
    assert {"scipy", "jinja2"} <= extra
    base = {canonicalize_name(Requirement(r).name) for r in project["project"]["dependencies"]}
    assert not extra & base
    pins = lock_pins()
    assert not extra & set(pins), "a certify package is in requirements/image.txt: make lock"
    assert "markupsafe" not in pins  # jinja2's own dependency


def test_the_base_is_a_digest_pinned_dated_debian_image_recorded_in_labels() -> None:
    args = {}
    for word, rest in instructions():
        if word == "ARG" and "=" in rest:
            key, _, value = rest.partition("=")
            args.setdefault(key, value)
    snapshot = args["DEBIAN_SNAPSHOT"]
    assert re.fullmatch(r"\d{8}T\d{6}Z", snapshot)
    m = re.fullmatch(
        r"docker\.io/library/debian:bookworm-(\d{8})@sha256:[0-9a-f]{64}", args["BASE_IMAGE"]
    )
    assert m, args["BASE_IMAGE"]
    assert m.group(1) == snapshot[:8], "the base image and the apt snapshot must be of one date"
    text = DOCKERFILE.read_text(encoding="utf-8")
    # Debian packages the Dockerfile installs come from that snapshot, signature-checked
    assert "http://snapshot.debian.org/archive/debian/${DEBIAN_SNAPSHOT}" in text
    assert "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" in text
    labels = " ".join(rest for word, rest in instructions() if word == "LABEL")
    assert 'io.rng-service.debian-snapshot="${DEBIAN_SNAPSHOT}"' in labels
    assert 'org.opencontainers.image.base.name="${BASE_IMAGE}"' in labels


def test_make_image_builds_this_dockerfile_with_this_lock() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^image:(.*)\n((?:\t.*\n)+)", makefile, re.M)
    assert recipe, "no image target"
    assert "requirements/image.txt" in recipe.group(1) or "$(LOCK)" in recipe.group(1)
    assert "scripts/build-image.sh" in recipe.group(2)
    assert "scripts/check-image.sh" in recipe.group(2)
    assert re.search(r"^LOCK := requirements/image\.txt$", makefile, re.M)
    assert re.search(r"^lock:", makefile, re.M), "no make lock"
    build = BUILD.read_text(encoding="utf-8")
    podman = [line for line in build.splitlines() if line.lstrip().startswith("podman build")]
    assert len(podman) == 1
    assert podman[0].rstrip().endswith(" .")  # the repository as context, its Dockerfile
    assert " -f " not in podman[0]
    assert "--format docker" in podman[0]  # keeps the HEALTHCHECK
    # the snapshot the script defaults to is the Dockerfile's
    assert "DEBIAN_SNAPSHOT=${DEBIAN_SNAPSHOT:-$(dockerfile_arg DEBIAN_SNAPSHOT)}" in build
    # the lock reaches the build context
    ignored = [p.strip() for p in (ROOT / ".dockerignore").read_text().splitlines() if p.strip()]
    for path in ("requirements/image.txt", "requirements", "pyproject.toml", "rng_service"):
        assert not any(fnmatch.fnmatch(path, pattern) for pattern in ignored), path


def test_the_image_scripts_need_nothing_outside_the_repository() -> None:
    for script in (BUILD, CHECK):
        text = script.read_text(encoding="utf-8")
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        assert 'cd "$(dirname "$0")/.."' in code  # paths are the repository's
        assert "../" not in code.replace('cd "$(dirname "$0")/.."', "")
        assert "shared" not in text
        assert "/work/" not in text


@pytest.mark.soak
def test_make_image_builds_and_checks() -> None:
    """The real thing (root, podman, debootstrap, network to PyPI): build, then check-image.sh,
    which compares the image's packages with the lock and serves it under chroot."""
    if os.geteuid() != 0:
        pytest.fail("make image needs root (debootstrap, podman --isolation=chroot)")
    proc = subprocess.run(
        ["make", "image"], cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "check-image: all checks passed" in proc.stdout
    assert "exactly the" in proc.stdout  # the lock comparison ran
