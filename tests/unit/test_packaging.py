"""Packaging: ``make install`` (an editable install) builds without a setuptools warning box.

pip shows every warning its build backend emits as a ``BuildBackendWarning`` box, which
``make run`` printed on a fresh clone. The cause was the flat layout without an explicit
``package-dir``: setuptools then installs through a meta-path finder and warns about folders
in the working directory that shadow the package. The test runs the backend's PEP 660 hook the
way pip does (on a copy of the project) with setuptools' warnings made errors.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_HOOK = """
import sys, warnings
import setuptools.warnings
warnings.simplefilter("error", setuptools.warnings.SetuptoolsWarning)
from setuptools import build_meta
print(getattr(build_meta, sys.argv[1])("dist"))
"""


def _build(tmp_path: Path, hook: str) -> Path:
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "web" / "verify", tmp_path / "web" / "verify")
    for package in ("rng_service", "certification"):
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    (tmp_path / "tests").mkdir()  # a folder beside the packages, as in the checkout
    proc = subprocess.run(
        [sys.executable, "-c", _HOOK, hook],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return tmp_path / "dist" / proc.stdout.strip().splitlines()[-1]


def test_editable_install_emits_no_setuptools_warning(tmp_path: Path) -> None:
    wheel = _build(tmp_path, "build_editable")
    with zipfile.ZipFile(wheel) as zf:
        pth = [n for n in zf.namelist() if n.endswith(".pth")]
        assert len(pth) == 1
        # A plain path entry (the checkout), not an import hook.
        assert zf.read(pth[0]).decode().strip() == str(tmp_path)


def test_the_wheel_holds_only_the_two_packages(tmp_path: Path) -> None:
    wheel = _build(tmp_path, "build_wheel")
    with zipfile.ZipFile(wheel) as zf:
        top = {name.split("/")[0] for name in zf.namelist()}
    dist_info = {name for name in top if name.endswith(".dist-info")}
    data = {name for name in top if name.endswith(".data")}  # the verify page (data-files)
    assert len(dist_info) == 1
    assert len(data) == 1
    assert top - dist_info - data == {"rng_service", "certification"}


def test_the_wheel_carries_the_report_templates_and_the_certify_extra(tmp_path: Path) -> None:
    """A wheel install renders the HTML report (its templates are package data) and declares
    scipy and jinja2 under the ``certify`` extra only, not as the service's dependencies."""
    wheel = _build(tmp_path, "build_wheel")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        requires = [
            line.removeprefix("Requires-Dist: ")
            for line in zf.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist: ")
        ]
    templates = ROOT / "certification" / "report" / "templates"
    shipped = {f"certification/report/templates/{p.name}" for p in templates.iterdir()}
    assert {p.rsplit("/", 1)[1] for p in shipped} >= {"report.html", "sections.html", "charts.svg"}
    assert shipped <= names
    by_name = {r.split(">", 1)[0].split("<", 1)[0].split(";", 1)[0].strip(): r for r in requires}
    for name in ("scipy", "jinja2"):
        assert 'extra == "certify"' in by_name[name], by_name[name]
    assert 'extra == "certify"' not in by_name["numpy"]  # the service's batch draws use it


def test_an_installed_wheel_serves_the_verify_page_from_its_prefix(tmp_path: Path) -> None:
    """Outside a checkout (the container image, ``pip install``), the page the service serves
    by default is the wheel's copy under <prefix>/share/rng-service/verify: every file of
    web/verify, found by rng_service.verify_page with no web/ beside the package."""
    (tmp_path / "build").mkdir()
    wheel = _build(tmp_path / "build", "build_wheel")
    site, prefix = tmp_path / "site", tmp_path / "prefix"
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            head, _, rest = name.partition("/")
            target = prefix / rest.removeprefix("data/") if head.endswith(".data") else site / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(name))
    page = ROOT / "web" / "verify"
    expected = sorted(str(p.relative_to(page)) for p in page.rglob("*") if p.is_file())
    installed_page = prefix / "share" / "rng-service" / "verify"
    got = sorted(
        str(p.relative_to(installed_page)) for p in installed_page.rglob("*") if p.is_file()
    )
    assert got == expected
    for name in expected:
        assert (installed_page / name).read_bytes() == (page / name).read_bytes()
    probe = (
        "import sys; from rng_service import verify_page as v; "
        "d = v.default_page_directory(sys.argv[1]); files = v.load_page(d); "
        "print(v.__file__); print(d); print(len(files))"
    )
    proc = subprocess.run(
        [sys.executable, "-S", "-c", probe, str(prefix)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    module, directory, count = proc.stdout.splitlines()
    assert module.startswith(str(site))  # the installed copy, not the checkout's package
    assert directory == str(installed_page)
    assert int(count) >= 1


def _make_n(*args: str) -> str:
    make = shutil.which("make")
    assert make is not None
    done = subprocess.run(
        [make, "-n", *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


def test_make_run_shows_its_progress_and_creates_the_logs_directory() -> None:
    """``make run`` on a fresh clone (the install step forced with ``-W pyproject.toml``):
    a line per step, pip's own output not silenced for the long install, and ./var (the
    SQLite log's directory, which the service never creates) made before the service starts."""
    lines = _make_n("-W", "pyproject.toml", "run").splitlines()
    steps = [line for line in lines if line.startswith('echo "install [')]
    assert [s.split("]")[0] for s in steps] == [
        'echo "install [1/3',
        'echo "install [2/3',
        'echo "install [3/3',
    ]
    long_install = next(line for line in lines if "-e '.[dev,certify]'" in line)
    assert "--quiet" not in long_install  # pip names each package as it goes
    assert "--line-buffered" in long_install  # and the filter passes each line on at once
    assert lines.index("mkdir -p var") < next(
        i for i, line in enumerate(lines) if "rng-service dev-run" in line and "echo" not in line
    )


def test_the_image_creates_the_logs_directory() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert "RNG_SERVICE__STORAGE__PATH=/var/lib/rng-service/outcome-log.sqlite3" in dockerfile
    assert "mkdir -p /var/lib/rng-service " in dockerfile
    compose = (ROOT / "deploy" / "docker-compose.yml").read_text(encoding="utf-8")
    assert "- rng-state:/var/lib/rng-service" in compose
