"""docs/review-guide.md names only what exists: every file, every ``file.py:function`` (a top-level
def or class, or ``Class.method``) and every ``tests/...::test_name``, each file's line count
within a tenth of the one given, and every module of the certified packages in its reading order
(docs/review-guide.md; issue 36)."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "review-guide.md"

#: Packages and modules whose every module the guide's reading order must list.
CERTIFIED = (
    "rng_service/drbg",
    "rng_service/outcomes",
    "rng_service/settlement",
    "rng_service/log",
    "rng_service/writer",
    "rng_service/audit",
    "rng_service/sampling.py",
    "rng_service/canonical.py",
)

_SPAN = re.compile(r"`([^`\n]+)`")
_TEST_REF = re.compile(r"^(tests/[\w/]+\.py)::(\w+(?:::\w+)?)(\[[^\]]*\])?$")
_ROOTS = "rng_service|certification|tests|bench|scripts"
_CODE_REF = re.compile(rf"^((?:{_ROOTS})/[\w/]+\.py):([\w.]+)$")
_PATH = re.compile(rf"^(?:{_ROOTS}|docs|deploy)(?:/[\w.-]+)*/?$")
_ROW = re.compile(r"^\| `([^`]+)` \| (\d+) \|", re.MULTILINE)


def guide_text() -> str:
    return GUIDE.read_text(encoding="utf-8")


def references(text: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[str]]:
    """The guide's ``(file, function)`` and ``(test file, test)`` references, and its paths."""
    code: list[tuple[str, str]] = []
    tests: list[tuple[str, str]] = []
    paths: list[str] = []
    for span in _SPAN.findall(text):
        if m := _TEST_REF.match(span):
            tests.append((m.group(1), m.group(2)))
        elif m := _CODE_REF.match(span):
            code.append((m.group(1), m.group(2)))
        elif _PATH.match(span):
            paths.append(span)
    return code, tests, paths


@cache
def _tree(path: str) -> ast.Module:
    return ast.parse((ROOT / path).read_text(encoding="utf-8"), filename=path)


def _defines(body: list[ast.stmt], name: str) -> ast.stmt | None:
    for node in body:
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and node.name == name
        ):
            return node
    return None


def has_name(path: str, dotted: str, separator: str = ".") -> bool:
    """Whether ``path`` defines ``dotted``: a top-level def or class, or ``Class<sep>method``."""
    body: list[ast.stmt] = _tree(path).body
    node: ast.stmt | None = None
    for part in dotted.split(separator):
        node = _defines(body, part)
        if node is None:
            return False
        body = node.body if isinstance(node, ast.ClassDef) else []
    return True


def test_the_guide_names_enough_to_be_checked() -> None:
    code, tests, paths = references(guide_text())
    assert len(code) >= 80, len(code)
    assert len(tests) >= 80, len(tests)
    assert len(paths) >= 40, len(paths)


def test_every_file_it_names_exists() -> None:
    code, tests, paths = references(guide_text())
    files = {path for path, _ in code} | {path for path, _ in tests} | set(paths)
    missing = sorted(path for path in files if not (ROOT / path).exists())
    assert not missing, f"docs/review-guide.md names missing files: {missing}"


def test_every_function_it_names_is_defined_there() -> None:
    code, _, _ = references(guide_text())
    missing = [
        f"{path}:{name}"
        for path, name in code
        if not (ROOT / path).is_file() or not has_name(path, name)
    ]
    assert not missing, f"docs/review-guide.md names undefined functions: {missing}"


def test_every_test_it_names_is_defined_there() -> None:
    _, tests, _ = references(guide_text())
    missing = [
        f"{path}::{name}"
        for path, name in tests
        if not (ROOT / path).is_file() or not has_name(path, name, "::")
    ]
    assert not missing, f"docs/review-guide.md names undefined tests: {missing}"


def test_each_line_count_is_within_a_tenth_of_the_file() -> None:
    rows = _ROW.findall(guide_text())
    assert len(rows) >= 50, len(rows)
    stale = []
    for path, stated in rows:
        actual = len((ROOT / path).read_text(encoding="utf-8").splitlines())
        if abs(actual - int(stated)) > max(5, actual // 10):
            stale.append(f"{path}: {stated} stated, {actual} now")
    assert not stale, f"docs/review-guide.md's line counts are stale: {stale}"


def test_every_certified_module_is_in_the_reading_order() -> None:
    listed = {path for path, _ in _ROW.findall(guide_text())}
    modules: set[str] = set()
    for entry in CERTIFIED:
        path = ROOT / entry
        found = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        modules.update(str(p.relative_to(ROOT)) for p in found)
    assert not modules - listed, f"not in docs/review-guide.md: {sorted(modules - listed)}"


@pytest.mark.parametrize(
    ("span", "kind"),
    [
        ("`tests/unit/test_x.py::test_a[case-1]`", "test"),
        ("`tests/unit/test_x.py::TestA::test_b`", "test"),
        ("`rng_service/x.py:Cls.method`", "code"),
        ("`rng_service/x.py:func`", "code"),
        ("`rng_service/drbg/`", "path"),
        ("`synchronous=FULL`", None),
    ],
)
def test_the_reference_forms_are_parsed(span: str, kind: str | None) -> None:
    code, tests, paths = references(span)
    found = {"code": code, "test": tests, "path": paths}
    assert [k for k, v in found.items() if v] == ([kind] if kind else [])


def test_a_method_is_found_in_its_class_only() -> None:
    assert has_name("rng_service/drbg/ctr_drbg.py", "CtrDrbg.generate")
    assert has_name("rng_service/drbg/ctr_drbg.py", "block_cipher_df")
    assert not has_name("rng_service/drbg/ctr_drbg.py", "generate")  # a method, not top-level
    assert not has_name("rng_service/drbg/ctr_drbg.py", "CtrDrbg.no_such_method")
    assert not has_name("rng_service/drbg/ctr_drbg.py", "block_cipher_df.inner")
