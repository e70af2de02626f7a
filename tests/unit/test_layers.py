"""The import contracts: tables in docs/architecture.md, enforced by import-linter.

``scripts/layer_contracts.py`` turns the layer table into the ``forbidden`` contracts, and
the known-cycles table into the ignored imports of the ``acyclic_siblings`` contracts, in
.importlinter; ``make lint`` runs ``lint-imports`` on them. These tests check that

* .importlinter holds exactly the contracts of the tables (so the doc cannot drift), and
  pyproject.toml none;
* every module of rng_service, certification and tests/reader is in exactly one row;
* lint-imports keeps every contract on this tree, and reports each of a set of forbidden
  imports added to a copy of it: at module level, inside a function and under
  ``if TYPE_CHECKING:`` (import-linter's graph holds all three); a new import cycle, in any
  package, and a known cycle's import that is gone are reported too;
* no module imports by name at run time (``__import__``, ``importlib.import_module``), which
  no static graph sees;
* importing a row's modules in a fresh interpreter loads nothing the row must never reach
  (what static analysis cannot see: a package ``__init__`` that runs first, a third-party
  package importing a driver).
"""

from __future__ import annotations

import ast
import configparser
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import scripts

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
#: The source trees the table covers (module name prefix, directory).
TREES = (
    ("rng_service", ROOT / "rng_service"),
    ("certification", ROOT / "certification"),
    ("tests.reader", ROOT / "tests" / "reader"),
)


LC: Any = scripts.load("layer_contracts")
ROWS = LC.parse_table(DOC.read_text(encoding="utf-8"))
CYCLES = LC.parse_cycles(DOC.read_text(encoding="utf-8"))
CONTRACTS = LC.contracts(ROWS, CYCLES)
ROW_BY_NAME = {r.name: r for r in ROWS}


def _modules_on_disk() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for prefix, directory in TREES:
        for path in sorted(directory.rglob("*.py")):
            parts = path.relative_to(directory).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join((prefix, *parts))] = path
    return out


MODULES = _modules_on_disk()


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-logo", "--no-cache", ".importlinter"],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def _broken(output: str) -> set[str]:
    """Ids of the contracts lint-imports reported broken."""
    ids = {c["name"]: c["id"] for c in CONTRACTS}
    return {
        ids[m.group(1)]
        for m in re.finditer(r"^(.+) BROKEN( \(\d+ ignored imports?\))?$", output, re.M)
    }


# --- the table and the contracts -------------------------------------------------------------


def _ini_options(text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """What import-linter reads from an INI text: a value with a newline is a list."""
    parser = configparser.ConfigParser()
    parser.read_string(text)

    def clean(section: configparser.SectionProxy) -> dict[str, Any]:
        return {k: v.strip().split("\n") if "\n" in v else v for k, v in section.items()}

    contracts = [
        {"id": name.split(":")[-1], **clean(parser[name])}
        for name in parser.sections()
        if name.startswith("importlinter:contract:")
    ]
    return clean(parser["importlinter"]), contracts


def _as_read(contract: dict[str, object]) -> dict[str, object]:
    """A generated contract as the INI reader hands it to import-linter (strings and lists)."""
    return {k: [str(x) for x in v] if isinstance(v, list) else str(v) for k, v in contract.items()}


def test_importlinter_holds_exactly_the_contracts_of_the_tables() -> None:
    text = (ROOT / ".importlinter").read_text(encoding="utf-8")
    assert LC.render(ROWS, CYCLES) == text, "run `make layers`"
    session, contracts = _ini_options(text)
    assert contracts == [_as_read(c) for c in CONTRACTS]
    assert session["root_packages"] == ["rng_service", "certification", "tests"]
    assert session["include_external_packages"] == "True"
    # Imports under `if TYPE_CHECKING:` are imports too (a probe below proves they count).
    assert session["exclude_type_checking_imports"] == "False"
    # One place only: lint-imports reads whichever file it finds first.
    assert not LC.pyproject_has_contracts((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert not (ROOT / "setup.cfg").exists()


def test_the_check_refuses_contracts_in_pyproject(tmp_path: Path) -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert not LC.pyproject_has_contracts(text)
    assert LC.pyproject_has_contracts(text + '\n[tool.importlinter]\nroot_packages = ["x"]\n')
    assert LC.pyproject_has_contracts(text + "\n[[tool.importlinter.contracts]]\n")


def test_every_root_package_has_a_cycle_contract_reaching_its_deepest_package() -> None:
    cycle_contracts = {c["id"]: c for c in CONTRACTS if c["type"] == "acyclic_siblings"}
    assert set(cycle_contracts) == {f"no-cycles-{r}" for r in LC.ROOT_PACKAGES}
    for root in LC.ROOT_PACKAGES:
        assert cycle_contracts[f"no-cycles-{root}"]["ancestors"] == [root]
    # acyclic_siblings descends `depth` levels below each ancestor: every package of the
    # tree (a module's parent) must be within that.
    deepest = max(m.count(".") - 1 for m in MODULES)
    assert deepest < LC.CYCLE_DEPTH, deepest
    assert all(c["depth"] == LC.CYCLE_DEPTH for c in cycle_contracts.values())


def test_no_cycle_is_known() -> None:
    """Every cycle that predated the contract is broken: the table ignores no import."""
    assert CYCLES == []


#: A well-formed row, put into a copy of the document's text to test the table's parser.
_ROW = (
    "| `certification.rtp.build -> certification.rtp.command` | the build step once read the "
    "command's FORMAT constant, while the command calls the build step |"
)


def _with_row() -> str:
    text = DOC.read_text(encoding="utf-8")
    header = "| Import | Why |\n|---|---|\n"
    assert header in text
    return text.replace(header, header + _ROW + "\n", 1)


def test_a_listed_cycle_is_read_with_its_reason() -> None:
    (cycle,) = LC.parse_cycles(_with_row())
    assert cycle.expression == "certification.rtp.build -> certification.rtp.command"
    assert cycle.importer in MODULES
    assert cycle.imported in MODULES
    assert len(cycle.why.split()) >= 8


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "| `certification.rtp.build -> certification.rtp.command` |",
            "| `certification.rtp.build` |",
            "is not",
        ),
        (
            "| `certification.rtp.build -> certification.rtp.command` |",
            "| `certification.rtp.command -> rng_service.nothing` |",
            "both ends",
        ),
        ("| Import | Why |", "| Import |", "header"),
    ],
)
def test_a_malformed_cycles_table_is_refused(old: str, new: str, message: str) -> None:
    text = _with_row()
    assert old in text
    with pytest.raises(LC.TableError, match=re.escape(message)):
        LC.parse_cycles(text.replace(old, new, 1))


def test_a_known_cycle_without_a_reason_is_refused() -> None:
    text = _with_row()
    with pytest.raises(LC.TableError, match="no reason"):
        LC.parse_cycles(text.replace(_ROW, _ROW.split(" | ")[0] + " | |", 1))


def test_the_table_states_the_documented_rules() -> None:
    """The rules other documents and the issue state, read back from the table."""

    def reach(row: str) -> set[str]:
        return set(ROW_BY_NAME[row].never_reaches)

    assert {"storage-drivers", "sqlite3", "psycopg"} <= reach("rpc")
    for row in ("errors", "clock", "canonical", "drbg", "sampling", "outcomes"):
        assert {"grpc", "sqlite3", "psycopg", "prometheus_client"} <= reach(row), row
    assert ROW_BY_NAME["outcomes"].may_import == ("errors", "canonical", "sampling")
    # The canonical JSON sits below everything that encodes, and imports nothing of ours.
    assert ROW_BY_NAME["canonical"].may_import == ()
    assert {"writer", "log-formats"} <= reach("storage")
    assert {"writer", "storage"} <= reach("audit")
    assert {"rng_service.**", "certification.**"} <= reach("reader")
    assert ROW_BY_NAME["reader"].may_import == ()
    assert "rng_service.**" in reach("cert-statistics")
    # Only the bridge (and the wiring above it) may import rng_service from certification.
    rng_rows = {r.name for r in ROWS if any(m.startswith("rng_service") for m in r.modules)}
    for r in ROWS:
        if any(m.startswith("certification") for m in r.modules) and r.name != "cert-bridge":
            assert not set(r.may_import) & rng_rows, r.name
    # Only the gRPC adapters may import the generated code.
    assert {r.name for r in ROWS if "proto" in r.may_import} == {"rpc"}


def test_every_module_is_in_exactly_one_row() -> None:
    assert len(MODULES) > 100
    problems = {m: LC.row_of(m, ROWS) for m in MODULES}
    problems = {m: rows for m, rows in problems.items() if len(rows) != 1}
    assert not problems, (
        f"modules in no row or in several: {problems}; add each to one row of the layer "
        "table in docs/architecture.md and run `make layers`"
    )


def test_every_module_expression_of_the_table_matches_a_module() -> None:
    for r in ROWS:
        for item in r.modules:
            assert any(LC.row_of(m, [r]) and _matches(m, item) for m in MODULES), (r.name, item)


def _matches(module: str, item: str) -> bool:
    if item.endswith(".**"):
        return module == item[:-3] or module.startswith(item[:-2])
    return module == item


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "| errors, canonical, sampling | ",
            "| errors, sampling, storage-driver | ",
            "not another row",
        ),
        ("`rng_service.clock` |", "rng_service.clock |", "is not a `module`"),
        ("| Why |", "|", "header"),
        ("| proto | `rng_service._proto.**` | |", "| proto | | |", "no modules"),
        (
            "| errors, canonical, sampling | `grpc`",
            "| errors, sampling | sampling, `grpc`",
            "both allowed",
        ),
    ],
)
def test_a_malformed_table_is_refused(old: str, new: str, message: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    assert old in text
    with pytest.raises(LC.TableError, match=re.escape(message)):
        LC.parse_table(text.replace(old, new, 1))


def test_a_module_in_two_rows_is_found() -> None:
    text = DOC.read_text(encoding="utf-8")
    old = "| outcomes | `rng_service.outcomes.**` |"
    assert old in text
    rows = LC.parse_table(text.replace(old, old[:-1] + ", `rng_service.sampling` |", 1))
    assert LC.row_of("rng_service.sampling", rows) == ["sampling", "outcomes"]


# --- lint-imports on this tree and on a probed copy -------------------------------------------


def test_lint_imports_keeps_every_contract() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in result.stdout


#: (file, appended text, contracts it must break, the import as lint-imports reports it)
PROBES = [
    (
        "rng_service/outcomes/roulette.py",
        "\nimport grpc  # probe: module level\n",
        {"outcomes-reaches"},
        "rng_service.outcomes.roulette -> grpc",
    ),
    (
        "rng_service/outcomes/dice.py",
        "\n\ndef _probe() -> None:\n    import rng_service.storage.sqlite  # noqa: F401\n",
        {"outcomes-imports", "outcomes-reaches"},
        "rng_service.outcomes.dice -> rng_service.storage.sqlite",
    ),
    (
        "rng_service/rpc/convert.py",
        "\n\ndef _probe() -> None:\n    from rng_service.storage import postgres  # noqa: F401\n",
        {"rpc-reaches"},
        "rng_service.rpc.convert -> rng_service.storage.postgres",
    ),
    (
        "rng_service/storage/base.py",
        "\n\ndef _probe() -> None:\n    from rng_service.log import entry  # noqa: F401\n",
        {"storage-imports", "storage-reaches"},
        "rng_service.storage.base -> rng_service.log.entry",
    ),
    (
        "rng_service/drbg/entropy.py",
        "\nimport typing\n\nif typing.TYPE_CHECKING:\n    import rng_service.outcomes.cards\n",
        {"drbg-imports"},
        "rng_service.drbg.entropy -> rng_service.outcomes.cards",
    ),
    (
        "tests/reader/__init__.py",
        "\n\ndef _probe() -> None:\n    from rng_service import sampling  # noqa: F401\n",
        {"reader-imports", "reader-reaches"},
        "tests.reader -> rng_service.sampling",
    ),
    (
        "certification/power.py",
        "\n\ndef _probe() -> None:\n    import rng_service.writer.appender  # noqa: F401\n",
        {"cert-commands-imports"},
        "certification.power -> rng_service.writer.appender",
    ),
]


def _copy_tree(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("rng_service", "certification"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    shutil.copytree(ROOT / "tests" / "reader", dest / "tests" / "reader", ignore=ignore)
    shutil.copy(ROOT / "tests" / "__init__.py", dest / "tests" / "__init__.py")
    shutil.copy(ROOT / ".importlinter", dest / ".importlinter")


def test_each_forbidden_import_added_to_a_copy_breaks_its_contract(tmp_path: Path) -> None:
    _copy_tree(tmp_path)
    clean = _lint_imports(tmp_path)
    assert clean.returncode == 0, clean.stdout  # the copy itself is clean, and is what is read
    probe_lines = {}
    for file, text, _, _ in PROBES:
        path = tmp_path / file
        before = path.read_text(encoding="utf-8")
        path.write_text(before + text, encoding="utf-8")
        # The probe's forbidden import is the last import line it adds.
        last = text.rstrip("\n").rsplit("\n", 1)[-1]
        assert "import" in last
        probe_lines[file] = (before + text).rstrip("\n").count("\n") + 1
    result = _lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    broken = _broken(result.stdout)
    for file, _, contracts, edge in PROBES:
        assert contracts <= broken, (file, contracts - broken)
        # lint-imports names the importing module, the imported one and the probe's line.
        assert f"{edge} (l.{probe_lines[file]})" in result.stdout, (edge, result.stdout[-3000:])


# --- what static analysis cannot see ----------------------------------------------------------

_DYNAMIC = {"__import__", "import_module", "spec_from_file_location", "exec", "eval"}


def test_no_module_imports_by_name_at_run_time() -> None:
    found = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                name = (
                    f.id
                    if isinstance(f, ast.Name)
                    else f.attr
                    if isinstance(f, ast.Attribute)
                    else ""
                )
                if name in _DYNAMIC:
                    found.append(f"{module}:{node.lineno} {name}")
    assert not found, f"dynamic imports bypass the layer contracts: {found}"


def _runtime_rows() -> list[str]:
    return [r.name for r in ROWS if r.never_reaches]


def _is_never_reached(loaded: str, row: Any) -> bool:
    for name in row.never_rows:
        if LC.row_of(loaded, [ROW_BY_NAME[name]]):
            return True
    for item in row.never_modules:
        if item.endswith(".**"):
            if loaded == item[:-3] or loaded.startswith(item[:-2]):
                return True
        elif loaded == item or ("." not in item and loaded.startswith(item + ".")):
            return True
    return False


@pytest.mark.parametrize("row", _runtime_rows())
def test_importing_a_row_loads_nothing_it_must_never_reach(row: str) -> None:
    r = ROW_BY_NAME[row]
    modules = sorted(m for m in MODULES if LC.row_of(m, ROWS) == [row])
    code = (
        "import importlib, json, sys\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    loaded = json.loads(out.stdout)
    assert set(modules) <= set(loaded)
    bad = sorted(m for m in loaded if _is_never_reached(m, r))
    assert not bad, f"importing {row} loads {bad}"


#: (file, appended text, the package whose children it ties into a cycle)
CYCLE_PROBES = [
    (
        "rng_service/outcomes/dice.py",
        "\n\ndef _probe() -> None:\n    from rng_service.outcomes import batch  # noqa: F401\n",
        "rng_service.outcomes",
    ),
    (
        "certification/sp800_22/_result.py",
        "\n\ndef _probe() -> None:\n    from certification.sp800_22 import _walk  # noqa: F401\n",
        "certification.sp800_22",
    ),
    (
        "tests/reader/sampling.py",
        "\n\ndef _probe() -> None:\n    from tests.reader import kinds  # noqa: F401\n",
        "tests.reader",
    ),
]


def test_a_new_import_cycle_in_any_root_breaks_its_cycle_contract(tmp_path: Path) -> None:
    _copy_tree(tmp_path)
    for file, text, _ in CYCLE_PROBES:
        path = tmp_path / file
        path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")
    result = _lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    # Each probe stays inside its own row: only the cycle contracts break.
    assert _broken(result.stdout) == {f"no-cycles-{r}" for r in LC.ROOT_PACKAGES}
    for _, _, package in CYCLE_PROBES:
        assert f"No cycles are allowed in {package}." in result.stdout, result.stdout[-3000:]


def test_a_known_cycle_whose_import_is_gone_fails_until_its_row_goes(tmp_path: Path) -> None:
    """A row for an import the code does not make (its cycle broken) fails lint-imports, so
    the table cannot keep a stale exception."""
    _copy_tree(tmp_path)
    contracts = LC.render(ROWS, LC.parse_cycles(_with_row()))
    (tmp_path / ".importlinter").write_text(contracts, encoding="utf-8")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0, result.stdout + result.stderr
    assert "certification.rtp.build -> certification.rtp.command" in result.stdout + result.stderr
