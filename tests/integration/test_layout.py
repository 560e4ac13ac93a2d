"""The test suite's own layout: tests live in folders laid out like the code they check (tests/env/coop,
tests/env/duel, tests/env; tests/agents/NAME for thermopylae_agents/NAME; tests/integration), one conftest.py,
and no test imports a script of scripts/, benchmarks/ or docs/_scripts/: a test runs such a file as a user
does, in a subprocess."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
SCRIPT_FOLDERS = ("scripts", "benchmarks", "docs/_scripts")
# Calls that load or run Python code in the test's own process from a path or a module name.
LOADERS = {"spec_from_file_location", "SourceFileLoader", "run_path", "run_module", "import_module",
           "__import__", "exec_module", "load_module"}
# Calls that read data (a committed result JSON, YAML text), which run no code whatever they name.
DATA_READERS = {"json.loads", "json.load", "yaml.safe_load"}
TEST_FILES = sorted(p for p in TESTS.rglob("*.py") if (TESTS / "data") not in p.parents)


def _script_names() -> set[str]:
    return {p.stem for folder in SCRIPT_FOLDERS for p in (ROOT / folder).glob("*.py")}


def _names_a_script(node: ast.AST, scripts: set[str]) -> bool:
    if isinstance(node, ast.Constant) and node.value in scripts:
        return True
    text = ast.unparse(node).lower()
    return any(folder.rstrip("s") in text for folder in SCRIPT_FOLDERS)


def script_imports(source: str) -> list[str]:
    """What in ``source`` imports a file of scripts/ or benchmarks/ into the running process: an import of
    a script's module name (or of a ``scripts``/``benchmarks`` package), a loader call (or a helper named
    for loading or importing) or a ``sys.path`` change naming one of those folders or scripts."""
    found = []
    scripts = _script_names()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            names = []
        for name in names:
            if name.split(".")[0] in scripts or name.split(".")[0] in SCRIPT_FOLDERS:
                found.append(f"line {node.lineno}: import {name}")
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if ast.unparse(func) in DATA_READERS:
            continue
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        on_sys_path = isinstance(func, ast.Attribute) and ast.unparse(func.value) == "sys.path"
        loads = called in LOADERS or on_sys_path or "load" in called.lower() or "import" in called.lower()
        if loads and any(_names_a_script(a, scripts) for a in node.args):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", TEST_FILES, ids=[p.relative_to(TESTS).as_posix() for p in TEST_FILES])
def test_no_test_imports_a_script_of_scripts_or_benchmarks(path: Path) -> None:
    assert script_imports(path.read_text(encoding="utf-8")) == [], path.relative_to(ROOT)


@pytest.mark.parametrize("source", [
    line for line in (TESTS / "data" / "script_import_examples.txt").read_text(encoding="utf-8").splitlines()
    if line and not line.startswith("#")
])
def test_the_import_check_finds_each_way_of_importing_a_script(source: str) -> None:
    assert len(script_imports(source)) == 1, source


def test_running_a_script_in_a_subprocess_is_not_an_import() -> None:
    source = ("subprocess.run([sys.executable, str(ROOT / 'benchmarks' / 'soak.py'), '--quick'])\n"
              "sys.path.insert(0, str(Path(__file__).parent / 'data'))\n"
              "from thermopylae_agents.training import main\n")
    assert script_imports(source) == []


def test_tests_live_in_the_folders_of_the_code_they_check_with_unique_names() -> None:
    tests = sorted(TESTS.rglob("test_*.py"))
    folders = {p.parent.relative_to(TESTS).as_posix() for p in tests}
    assert {f for f in folders if not f.startswith("agents/")} == {
        "env", "env/coop", "env/duel", "integration"}
    stems = [p.stem for p in tests]
    assert len(stems) == len(set(stems)), "test module names must stay unique (pytest's prepend imports)"
    assert [p.name for p in TESTS.glob("*.py")] == ["conftest.py"]
    assert not list(TESTS.rglob("__init__.py"))


def test_the_agents_tests_mirror_the_sub_packages_of_thermopylae_agents() -> None:
    """tests/agents/NAME/ holds the tests of thermopylae_agents/NAME/; no test sits in tests/agents itself."""
    packages = {p.parent.name for p in (ROOT / "agents" / "thermopylae_agents").glob("*/__init__.py")}
    agents = TESTS / "agents"
    folders = {p.parent.relative_to(agents).as_posix() for p in agents.rglob("test_*.py")}
    assert folders <= packages, sorted(folders - packages)


def test_the_root_conftest_is_the_only_one() -> None:
    """Tests import its helpers as ``from conftest import ...``: pytest imports every conftest.py of a folder
    without ``__init__.py`` under the one module name ``conftest``, so a second conftest.py would take that
    name from the root's for the tests collected after it."""
    assert [p.relative_to(TESTS).as_posix() for p in TESTS.rglob("conftest.py")] == ["conftest.py"]
