"""The shape of the code: each library imported only in its home, small modules, the import
contracts kept.

import-linter sees import statements only; the walk below also reads the dynamic doors
(`importlib.import_module`, `__import__`, ...) so that no module dodges a contract through them.
"""

from __future__ import annotations

import ast
import shutil
import statistics
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "palui"

# Each library and the modules allowed to import it (a name and everything under it).
HOMES: dict[str, tuple[str, ...]] = {
    "telegram": ("palui.channels.telegram",),
    "litellm": ("palui.llm.via_litellm",),
    "sqlalchemy": ("palui.db",),
    "mcp": ("palui.connectors", "palui.recall_server"),
}
# The MCP SDK ships its protocol types as a package of their own.
FAMILY = {"mcp_types": "mcp"}
# Calls that import a module named by a string.
DYNAMIC_IMPORTS = frozenset({"import_module", "__import__", "run_module", "run_path"})

MAX_LINES = 400
MAX_MEDIAN_LINES = 150
# Modules over MAX_LINES today, being split on other branches; this list empties once they land.
TOO_LONG_FOR_NOW: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class LibraryImport:
    module: str  # the importing module, e.g. palui.llm
    line: int
    library: str  # e.g. litellm
    how: str  # the import as written

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.library} ({self.how})"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def palui_modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield module_name(path), path


def library_of(dotted: str) -> str | None:
    top = dotted.split(".", 1)[0]
    top = FAMILY.get(top, top)
    return top if top in HOMES else None


def _called_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def library_imports(module: str, source: str) -> list[LibraryImport]:
    """Every way `source` imports a watched library: import statements anywhere (functions and
    `TYPE_CHECKING` blocks too), dynamic import calls, and, in a module that makes dynamic
    import calls, any string naming a library (it may reach the call through a variable)."""
    tree = ast.parse(source)
    found: list[LibraryImport] = []

    def add(node: ast.AST, dotted: str, how: str) -> None:
        library = library_of(dotted)
        if library is not None:
            found.append(LibraryImport(module, getattr(node, "lineno", 0), library, how))

    dynamic = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(node, alias.name, f"import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            add(node, node.module, f"from {node.module} import ...")
        elif isinstance(node, ast.Call) and _called_name(node) in DYNAMIC_IMPORTS:
            dynamic = True
    if dynamic:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value.strip()
                if text and text.replace(".", "").replace("_", "").isalnum():
                    add(node, text, f"the string {node.value!r} beside a dynamic import")
    return found


def at_home(module: str, library: str) -> bool:
    return any(module == home or module.startswith(f"{home}.") for home in HOMES[library])


def test_the_scanner_sees_every_door_to_a_library() -> None:
    source = """
import importlib
from typing import TYPE_CHECKING
import telegram.ext
if TYPE_CHECKING:
    from sqlalchemy import select
def later():
    import mcp_types
    name = "litellm"
    return importlib.import_module(name), __import__("mcp.client")
"""
    seen = {(i.library, i.line) for i in library_imports("palui.example", source)}
    assert seen == {
        ("telegram", 4),
        ("sqlalchemy", 6),
        ("mcp", 8),
        ("litellm", 9),
        ("mcp", 10),
    }


def test_each_library_is_imported_only_in_its_home() -> None:
    strays = [
        found
        for module, path in palui_modules()
        for found in library_imports(module, path.read_text(encoding="utf-8"))
        if not at_home(module, found.library)
    ]
    assert not strays, "imported outside its home:\n" + "\n".join(map(str, strays))


def test_modules_stay_small() -> None:
    lengths = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for _, path in palui_modules()
    }
    print(f"allowed over {MAX_LINES} lines for now: {', '.join(sorted(TOO_LONG_FOR_NOW))}")
    too_long = {path: n for path, n in lengths.items() if n > MAX_LINES}
    new = sorted(
        f"{path} ({n} lines)" for path, n in too_long.items() if path not in TOO_LONG_FOR_NOW
    )
    assert not new, f"over {MAX_LINES} lines; split by concept: " + ", ".join(new)
    split = sorted(TOO_LONG_FOR_NOW - set(too_long))
    assert not split, "no longer over the limit; take off TOO_LONG_FOR_NOW: " + ", ".join(split)
    median = statistics.median(lengths.values())
    assert median <= MAX_MEDIAN_LINES, f"median module length {median} > {MAX_MEDIAN_LINES}"


def lint_imports() -> str | None:
    beside_python = Path(sys.executable).parent / "lint-imports"
    return str(beside_python) if beside_python.exists() else shutil.which("lint-imports")


def test_the_import_contracts_are_kept() -> None:
    command = lint_imports()
    if command is None:
        pytest.skip("lint-imports (import-linter) is not installed")
    done = subprocess.run(
        [command, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr


# -- the tests' own shape ------------------------------------------------------------------------

TESTS = ROOT / "tests"
# Test folders beside palui's own: what boots `palui run` as a process, the fakes' own tests
# (beside the fakes), and the benchmarks' fakes.
NOT_IN_PALUI = frozenset({"e2e", "fakes", "bench"})


def imported_names(source: str) -> Iterator[tuple[int, str]]:
    """Every module an import statement names, `from a import b` as both `a` and `a.b`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def test_no_test_module_imports_another() -> None:
    """Shared helpers live in tests/toolkit.py, the fakes in tests/fakes/, a folder's fixtures in
    its conftest.py: a test module is never imported (pytest would collect it twice over)."""
    strays = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in sorted(TESTS.rglob("*.py"))
        for line, name in imported_names(path.read_text(encoding="utf-8"))
        if name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")
    ]
    assert not strays, "a test module imports another:\n" + "\n".join(strays)


def test_the_tests_are_laid_out_like_the_code() -> None:
    """Each test module sits in the folder of the palui package it tests (or e2e/, fakes/,
    bench/); only this file, which reads the whole tree, stays at the root."""
    flat = sorted(p.name for p in TESTS.glob("test_*.py") if p.name != Path(__file__).name)
    assert not flat, "put these in the folder of the package they test: " + ", ".join(flat)
    palui_names = {p.stem for p in PACKAGE.iterdir() if p.suffix == ".py" or p.is_dir()}
    folders = {p.parent for p in TESTS.rglob("test_*.py")} - {TESTS}
    stray = sorted(
        str(f.relative_to(TESTS))
        for f in folders
        if f.relative_to(TESTS).parts[0] not in palui_names | NOT_IN_PALUI
    )
    assert not stray, "test folders named after no palui package: " + ", ".join(stray)
    # Without __init__.py two folders' test_x.py would clash as one top-level module name.
    bare = sorted(str(f.relative_to(TESTS)) for f in folders if not (f / "__init__.py").exists())
    assert not bare, "test folders without __init__.py: " + ", ".join(bare)
