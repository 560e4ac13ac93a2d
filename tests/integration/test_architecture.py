"""The architecture rules of both packages, read from the source with ``ast`` (nothing is imported):

* no import cycle among the modules of ``thermopylae_env`` and ``thermopylae_agents``, counting the imports
  inside functions (a cycle closed by a late import still ties the modules together) and the modules named
  in strings that are loaded by name (``importlib.import_module("...")``, lazy-loading tables, Gymnasium's
  ``"module:attr"`` entry points);
* no module over 800 lines;
* ``thermopylae_env`` imports nothing from ``thermopylae_agents`` (environments do not know the agents);
* the agents' layers, in the order the package docstring of ``thermopylae_agents`` states, import only
  downwards (the same for ``thermopylae_env`` if its docstring states layers);
* an import inside a function imports an optional extra's module, or a module of the packages that needs
  one when it is imported, and names the extra in a comment (``# extra: train``); every other import is at
  the top of its module;
* ``main()`` is defined only by the command line (a ``cli`` package), not by library modules.

The checks walk whatever files the packages hold, so they follow the layout as it changes.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "thermopylae_env": ROOT / "thermopylae_env",
    "thermopylae_agents": ROOT / "agents" / "thermopylae_agents",
}
MAX_LINES = 800


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package ``__init__``), for every ``.py`` file of both packages."""
    found = {}
    for folder in PACKAGES.values():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder.parent).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join(parts)] = (path, is_package)
    return found


MODULES = _modules()


def _imported_names(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The dotted names an import statement asks for (``from a import b`` gives ``a.b``: a submodule or a
    name of ``a``), relative imports resolved against ``module``."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name
        return
    base = node.module or ""
    if node.level:
        anchor = module.split(".") if is_package else module.split(".")[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join(anchor + ([node.module] if node.module else []))
    for alias in node.names:
        yield f"{base}.{alias.name}"


def _owner(name: str) -> str | None:
    """The module of the packages that ``name`` lands in: the longest prefix that is a module."""
    parts = name.split(".")
    while parts and ".".join(parts) not in MODULES:
        parts.pop()
    return ".".join(parts) or None


def _docstring_nodes(tree: ast.Module) -> set[int]:
    """The ``id`` of each docstring constant of a module (its own, its classes' and its functions')."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body \
                and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant) \
                and isinstance(node.body[0].value.value, str):
            found.add(id(node.body[0].value))
    return found


_MODULE_STRING = re.compile(r"(?:thermopylae_env|thermopylae_agents)(?:\.\w+)*(?::[\w.]+)?")


def _logger_names(tree: ast.Module) -> set[int]:
    """The ``id`` of each string passed to ``logging.getLogger``: a logger's name, which loads nothing."""
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    return {id(arg) for node in calls for arg in node.args
            if getattr(node.func, "attr", getattr(node.func, "id", None)) == "getLogger"}


def _string_references(tree: ast.Module) -> Iterator[str]:
    """The modules of the packages that a module names in strings (outside docstrings and logger names),
    which are loaded by name: an ``importlib.import_module`` argument, a lazy-loading table's value, an
    entry point ``"module:attr"``; a dotted path into a module (``"module.Class"``) names that module."""
    skipped = _docstring_nodes(tree) | _logger_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped \
                and _MODULE_STRING.fullmatch(node.value):
            owner = _owner(node.value.partition(":")[0])
            if owner is not None:
                yield owner


def _graph() -> dict[str, set[str]]:
    """Module -> the modules of the packages it imports, anywhere in its body, or names in a string."""
    graph = {}
    for module, (path, is_package) in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets = set(_string_references(tree))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for name in _imported_names(module, is_package, node):
                    owner = _owner(name)
                    if owner is not None:
                        targets.add(owner)
        graph[module] = targets - {module}
    return graph


GRAPH = _graph()


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a closed path ``a -> b -> ... -> a``) for every strongly connected component of more
    than one module or of one module that imports itself (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    components.append(set(component))
    return [_cycle_in(graph, component) for component in components]


def _cycle_in(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A closed path through the first module of ``component`` (breadth first, so a shortest one)."""
    start = min(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & component):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle in the component {sorted(component)}")


def test_the_checker_names_a_cycle_and_passes_a_chain():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": {"a"}}) == [["a", "a"]]
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_checker_resolves_relative_and_function_level_imports():
    source = "def f():\n    from .training import config\n    import thermopylae_env\n"
    node_f = ast.parse(source).body[0]
    relative, absolute = node_f.body
    assert list(_imported_names("thermopylae_agents.cli.app", False, relative)) == \
        ["thermopylae_agents.cli.training.config"]
    assert list(_imported_names("thermopylae_agents", True, relative)) == \
        ["thermopylae_agents.training.config"]
    assert list(_imported_names("x", False, absolute)) == ["thermopylae_env"]


def test_the_checker_counts_modules_named_in_strings_and_not_in_docstrings():
    tree = ast.parse('"""thermopylae_env.records"""\n'
                     'import importlib\n'
                     'ENTRY = {"entry_point": "thermopylae_env.coop.env:CoopEnv"}\n'
                     'LAZY = {"CoopFightFeatures": "thermopylae_agents.training.fight_features"}\n'
                     'def f():\n'
                     '    return importlib.import_module("thermopylae_agents.cli.train")\n'
                     'CLASS = "thermopylae_agents.training.config.LinearSchedule"\n'
                     'TEXT = "see thermopylae_env.duel.env for the duel"\n'
                     'LOG = logging.getLogger("thermopylae_env")\n')
    assert sorted(_string_references(tree)) == [
        "thermopylae_agents.cli.train", "thermopylae_agents.training.config",
        "thermopylae_agents.training.fight_features", "thermopylae_env.coop.env"]


def test_both_packages_are_found():
    assert any(name.startswith("thermopylae_env.") for name in MODULES)
    assert any(name.startswith("thermopylae_agents.") for name in MODULES)


def test_no_import_cycle_counting_imports_inside_functions():
    cycles = find_cycles(GRAPH)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_over_800_lines(module):
    path = MODULES[module][0]
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines (at most {MAX_LINES})"


def test_the_environments_import_nothing_from_the_agents():
    offenders = sorted(f"{module} -> {target}" for module, targets in GRAPH.items()
                       if module.split(".")[0] == "thermopylae_env"
                       for target in targets if target.split(".")[0] == "thermopylae_agents")
    assert not offenders, "thermopylae_env imports thermopylae_agents: " + ", ".join(offenders)


def test_only_the_command_line_defines_main():
    offenders = []
    for module, (path, _) in MODULES.items():
        if "cli" in module.split("."):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "main"
               for node in tree.body):
            offenders.append(module)
    assert not offenders, "library modules defining main() (move it to a cli module): " + ", ".join(offenders)


# ------------------------------------------------------------------------------------------ one home per name
def _defined_names(path: Path) -> set[str]:
    """The names a module defines at its top level (functions, classes, assignments, also under ``if`` /
    ``try``), not the names it imports."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        for inner in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else (node,):
            if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(inner.name)
            elif isinstance(inner, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = inner.targets if isinstance(inner, ast.Assign) else [inner.target]
                names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


DEFINED = {module: _defined_names(path) for module, (path, _) in MODULES.items()}
# Modules whose names are other modules' on purpose: the class paths saved SB3 models pickle, and
# PettingZoo's name of the duel.
KEPT_NAMES = {"thermopylae_agents.fight_features", "thermopylae_agents.training", "thermopylae_env.duel_v1"}
OWN_CODE = sorted(
    [path for _, (path, _) in MODULES.items()]
    + [p for folder in ("scripts", "benchmarks", "docs/_scripts") for p in (ROOT / folder).glob("*.py")]
    + list((ROOT / "tests").rglob("*.py"))
)


def _borrowed_imports(path: Path) -> list[str]:
    """``module.name`` for each ``from module import name`` of the packages where ``module`` neither defines
    ``name`` nor has it as a submodule."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module in MODULES \
                and node.module not in KEPT_NAMES:
            found += [f"{node.module}.{alias.name}" for alias in node.names if alias.name not in
                      DEFINED[node.module] and f"{node.module}.{alias.name}" not in MODULES]
    return found


def test_the_checker_finds_a_name_imported_through_another_module(tmp_path):
    source = tmp_path / "x.py"
    source.write_text("from thermopylae_env.duel.env import DuelGame\n"
                      "from thermopylae_env.duel import rules\n")
    assert _borrowed_imports(source) == ["thermopylae_env.duel.env.DuelGame"]


@pytest.mark.parametrize("path", OWN_CODE, ids=[str(p.relative_to(ROOT)) for p in OWN_CODE])
def test_every_import_names_the_module_that_defines_the_name(path: Path):
    """A name has one home: the project's code, scripts and tests import it from there, not through a module
    that imports it in turn (so the cycle check above sees every real edge, and a moved name moves once)."""
    borrowed = _borrowed_imports(path)
    assert not borrowed, f"{path.relative_to(ROOT)} imports names from modules that do not define them: " \
        + ", ".join(borrowed)


@pytest.mark.parametrize("module", sorted(set(MODULES) - KEPT_NAMES))
def test_a_module_exports_only_the_names_it_defines(module):
    path, _ = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exported = next((ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                     and any(getattr(t, "id", None) == "__all__" for t in node.targets)), [])
    foreign = [name for name in exported if name not in DEFINED[module] and f"{module}.{name}" not in MODULES]
    assert not foreign, f"{module}.__all__ lists names defined elsewhere: {foreign}"


# ------------------------------------------------------------------------------------------------ layers
def docstring_layers(source: str) -> list[str]:
    """The layers a package's docstring states, lowest first: the indented lines ``name  what it holds``
    right after the line that ends with ``in layers that import one way:`` (none without such a line)."""
    lines = (ast.get_docstring(ast.parse(source)) or "").splitlines()
    marker = "in layers that import one way:"
    start = next((i + 1 for i, line in enumerate(lines) if line.rstrip().endswith(marker)), None)
    if start is None:
        return []
    layers = []
    for line in lines[start:]:
        if not line.strip():
            if layers:
                break
            continue
        if not line.startswith("    "):
            break
        named = re.match(r" {4}([a-z_]+) {2,}\S", line)
        if named:
            layers.append(named.group(1))
    return layers


LAYERS = {package: docstring_layers((folder / "__init__.py").read_text(encoding="utf-8"))
          for package, folder in PACKAGES.items()}


def test_the_layer_reader_takes_the_names_of_the_indented_block_in_order():
    source = ('"""Agents, in layers that import one way:\n\n'
              '    players      the players\n'
              '    policies     the policies, and a line\n'
              '                 that goes on\n'
              '    cli          the command\n\n'
              'Other text.\n    code  not a layer\n"""\n')
    assert docstring_layers(source) == ["players", "policies", "cli"]
    assert docstring_layers('"""No layers.\n\n    import gymnasium as gym\n"""\n') == []


def test_the_agents_docstring_places_every_subpackage_in_a_layer():
    folder = PACKAGES["thermopylae_agents"]
    subpackages = {path.parent.name for path in folder.glob("*/__init__.py")}
    assert LAYERS["thermopylae_agents"], "the thermopylae_agents docstring states no layers"
    assert sorted(LAYERS["thermopylae_agents"]) == sorted(subpackages), \
        "the layers of the thermopylae_agents docstring are not its sub-packages"


def _layer(module: str) -> str | None:
    parts = module.split(".")
    layers = LAYERS.get(parts[0], [])
    return parts[1] if len(parts) > 1 and parts[1] in layers else None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``module -> target`` for each edge of ``graph`` from a layer to a later one of the same package."""
    found = []
    for module, targets in graph.items():
        for target in targets:
            low, high = _layer(module), _layer(target)
            if low and high and module.split(".")[0] == target.split(".")[0]:
                layers = LAYERS[module.split(".")[0]]
                if layers.index(high) > layers.index(low):
                    found.append(f"{module} -> {target}")
    return sorted(found)


def test_the_layer_check_names_an_import_up_the_layers_only():
    first, last = LAYERS["thermopylae_agents"][0], LAYERS["thermopylae_agents"][-1]
    low, high = f"thermopylae_agents.{first}.x", f"thermopylae_agents.{last}.y"
    assert upward_imports({low: {high}, high: {low, "thermopylae_env.core"}}) == [f"{low} -> {high}"]


def test_the_layers_import_only_downwards():
    upward = upward_imports(GRAPH)
    assert not upward, "imports that point up the layers of the package docstrings:\n" + "\n".join(upward)


# --------------------------------------------------------------------------------- imports inside functions
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
# Distributions (normalised: lower case, "-") whose import names are not their names.
IMPORT_NAMES = {"pyyaml": ("yaml",), "pillow": ("PIL",), "open-spiel": ("open_spiel", "pyspiel"),
                "dm-tree": ("tree",), "pytest-xdist": ("xdist",), "mkdocs-material": ("material",)}
# Extras that gather others: an import names the extra that installs it for its own commands.
GATHERING = {"dev"}
# Optional modules that no extra installs, with what needs them: the comment beside the import says
# ``# extra: none``.
UNLISTED = {"wandb": "thermopylae ppo-native --track (Weights & Biases; pip install wandb)"}
# Imports of a required dependency that stay late on purpose, with the reason: the comment beside the
# import says ``# late: ...``.
LATE = {("thermopylae_env.threads", "numba"):
        "importing the thread settings loads no engine: the command line reads them before any numba work"}


def _distribution(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9._-]+", requirement).group(0).lower().replace("_", "-")


def import_names(distribution: str) -> tuple[str, ...]:
    """The top-level modules a distribution installs (its name with ``_`` unless ``IMPORT_NAMES`` says)."""
    return IMPORT_NAMES.get(distribution, (distribution.replace("-", "_"),))


def extras_of_modules(project: dict) -> dict[str, set[str]]:
    """Top-level module -> the extras of ``project`` (pyproject.toml's ``[project]``) that install it; a
    core dependency is no extra's module."""
    optional = project.get("optional-dependencies", {})
    core = {name for requirement in project.get("dependencies", [])
            for name in import_names(_distribution(requirement))}

    def modules(extra: str) -> Iterator[str]:
        for requirement in optional[extra]:
            distribution = _distribution(requirement)
            if distribution == project["name"]:  # "thermopylae-env[train]": another extra's modules
                for inner in re.search(r"\[(.*)\]", requirement).group(1).split(","):
                    yield from modules(inner.strip())
            else:
                yield from import_names(distribution)

    found: dict[str, set[str]] = {}
    for extra in optional:
        if extra not in GATHERING:
            for module in set(modules(extra)) - core:
                found.setdefault(module, set()).add(extra)
    return found


EXTRA_OF = extras_of_modules(PYPROJECT)


def _in_function(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements of a module that run inside a function (a method, a nested function, a
    lambda), not when the module is imported."""
    def visit(node: ast.AST, inside: bool) -> Iterator[ast.Import | ast.ImportFrom]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and inside:
                yield child
            yield from visit(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                      ast.Lambda)))
    return visit(tree, False)


def _tolerates_import_error(node: ast.Try) -> bool:
    """A ``try`` whose ``except ImportError`` goes on without the module (it does not raise again)."""
    for handler in node.handlers:
        names = [handler.type] if not isinstance(handler.type, ast.Tuple) else handler.type.elts
        if any(getattr(name, "id", None) in ("ImportError", "ModuleNotFoundError") for name in names) \
                and not any(isinstance(inner, ast.Raise) for inner in ast.walk(handler)):
            return True
    return False


def _on_import(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that importing a module runs for sure: outside functions, outside
    ``if TYPE_CHECKING:`` and outside a ``try`` that goes on without the module."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        elif isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) \
                == "TYPE_CHECKING":
            yield from _on_import(node.orelse)
        elif isinstance(node, ast.Try) and _tolerates_import_error(node):
            yield from _on_import(node.orelse)
            yield from _on_import(node.finalbody)
        else:
            for _, value in ast.iter_fields(node):
                if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                    yield from _on_import(value)
                elif isinstance(value, list):
                    for inner in value:
                        if isinstance(inner, ast.excepthandler):
                            yield from _on_import(inner.body)


def _called_on_import(tree: ast.Module) -> set[str]:
    """The names of the functions that a module calls while it is imported (in its body, a class body, a
    decorator, a default value): their imports run on import too."""
    called = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called.add(node.func.id)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                args = child.args
                for part in [*getattr(child, "decorator_list", []), *args.defaults, *args.kw_defaults]:
                    if part is not None:
                        visit(part)
            else:
                visit(child)

    visit(tree)
    return called


def imports_on_import(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that importing a module runs: those of ``_on_import`` and every import of a
    function of the module that it calls while it is imported (``class Env(_base()):``)."""
    found = list(_on_import(tree.body))
    called = _called_on_import(tree)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in called:
            found += [inner for inner in ast.walk(node) if isinstance(inner, (ast.Import, ast.ImportFrom))]
    return found


def _packages_and_module(module: str) -> list[str]:
    """What importing ``module`` runs: each package ``__init__`` on its path, then the module."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in MODULES]


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> tuple[set[str], set[str]]:
    """(the modules of the packages, the other top-level modules) that an import statement loads."""
    own, other = set(), set()
    for name in _imported_names(module, is_package, node):
        owner = _owner(name)
        if owner is not None:
            own.update(_packages_and_module(owner))
        elif name.split(".")[0] not in PACKAGES:
            other.add(name.split(".")[0])
    return own, other


def _statement_modules(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The modules an import statement names (a module of the packages, or another top-level module)."""
    return {_owner(name) or name.split(".")[0] for name in _imported_names(module, is_package, node)}


def _needs() -> dict[str, set[str]]:
    """Module of the packages -> the optional modules (of an extra, or unlisted) that importing it loads,
    through the imports it runs on import."""
    direct: dict[str, tuple[set[str], set[str]]] = {}
    for module, (path, is_package) in MODULES.items():
        own, other = set(), set()
        for node in imports_on_import(ast.parse(path.read_text(encoding="utf-8"))):
            inner_own, inner_other = _targets(module, is_package, node)
            own |= inner_own
            other |= inner_other
        direct[module] = (own - {module}, {name for name in other if name in EXTRA_OF or name in UNLISTED})
    needs = {}
    for module in MODULES:
        seen, todo, found = {module}, [module], set()
        while todo:
            own, other = direct[todo.pop()]
            found |= other
            todo += [inner for inner in own if inner not in seen]
            seen |= own
        needs[module] = found
    return needs


NEEDS = _needs()


def _comment(lines: list[str], node: ast.stmt, tag: str) -> list[str]:
    """The words after ``# tag:`` in the comments on the lines of a statement."""
    return [word for line in lines[node.lineno - 1:node.end_lineno] if "#" in line
            for word in re.findall(rf"\b{tag}: *([\w-]+)", line[line.index("#"):])]


def late_import_problems(module: str, source: str, is_package: bool = False) -> list[str]:
    """What is wrong with the imports inside the functions of ``module`` (its ``source``), one line each
    (``LINE: problem``): an import that loads nothing optional (it belongs at the top of the module), or one
    whose comment does not name an extra that installs what it loads."""
    lines = source.splitlines()
    problems = []
    for node in _in_function(ast.parse(source)):
        own, other = _targets(module, is_package, node)
        if any((module, name) in LATE for name in other):
            if not _comment(lines, node, "late"):
                problems.append(f"{node.lineno}: a late import of {sorted(other)} without its "
                                "'# late: reason' comment")
            continue
        loads = {name for name in other if name in EXTRA_OF or name in UNLISTED}
        loads |= set().union(*(NEEDS[target] for target in own))
        if not loads:
            named = sorted(_statement_modules(module, is_package, node))
            problems.append(f"{node.lineno}: imports {', '.join(named)} inside a function, which loads no "
                            "optional extra: import it at the top of the module")
            continue
        if not loads - NEEDS.get(module, set()):
            named = sorted(_statement_modules(module, is_package, node))
            problems.append(f"{node.lineno}: imports {', '.join(named)} inside a function, though the module "
                            f"loads {', '.join(sorted(loads))} on import already: import it at the top")
            continue
        extras = set().union(*(EXTRA_OF.get(name, {"none"}) for name in loads))
        if not set(_comment(lines, node, "extra")) & extras:
            problems.append(f"{node.lineno}: an import of the extra {' or '.join(sorted(extras))} "
                            f"({', '.join(sorted(loads))}) without '# extra: NAME' beside it")
    return problems


def test_the_extras_of_pyproject_give_their_import_names():
    assert EXTRA_OF["torch"] == {"train", "rlzoo", "rllib"}  # rlzoo: thermopylae-env[train]
    assert EXTRA_OF["yaml"] == {"train", "rlzoo", "rllib"} and EXTRA_OF["PIL"] >= {"render", "video"}
    assert {"stable_baselines3", "sb3_contrib"} <= {m for m, extras in EXTRA_OF.items() if "rlzoo" in extras}
    assert "numpy" not in EXTRA_OF and "numba" not in EXTRA_OF  # core dependencies


def test_the_import_names_are_those_the_installed_distributions_give():
    installed: dict[str, set[str]] = {}
    for name, distributions in importlib.metadata.packages_distributions().items():
        for distribution in distributions:
            installed.setdefault(distribution.lower().replace("_", "-"), set()).add(name)
    extras = PYPROJECT["optional-dependencies"]
    checked = 0
    for requirement in {r for extra in extras.values() for r in extra}:
        distribution = _distribution(requirement)
        if installed.get(distribution):
            assert set(import_names(distribution)) <= installed[distribution], distribution
            checked += 1
    assert checked


def test_the_imports_run_on_import_include_a_function_called_on_import_and_skip_optional_ones():
    tree = ast.parse("import json\n"
                     "try:\n    import yaml\nexcept ImportError:\n    yaml = None\n"
                     "try:\n    import PIL\nexcept ImportError:\n    raise SystemExit('needs PIL')\n"
                     "if TYPE_CHECKING:\n    import torch\n"
                     "def _base():\n    from ray.rllib.env import MultiAgentEnv\n    return MultiAgentEnv\n"
                     "def later():\n    import scipy\n"
                     "class Env(_base()):\n    import numpy\n")
    loaded = sorted(name.name for node in imports_on_import(tree) for name in node.names)
    assert loaded == ["MultiAgentEnv", "PIL", "json", "numpy"]


def test_the_checker_sends_a_plain_late_import_to_the_top_and_wants_the_extra_named():
    source = ("def f():\n"
              "    import json\n"
              "    import torch  # extra: train\n"
              "    import scipy.stats\n"
              "    import yaml  # extra: web\n"
              "    from thermopylae_agents.training.fight_features import CoopFightFeatures  # extra: train\n"
              "    from thermopylae_agents.players.base import Agent\n"
              "    import wandb  # extra: none\n")
    problems = late_import_problems("thermopylae_agents.players.probe", source)
    assert [int(problem.split(":")[0]) for problem in problems] == [2, 4, 5, 7]
    assert "loads no optional extra" in problems[0] and "rllib or rlzoo or train" in problems[1]
    assert "thermopylae_agents.players.base" in problems[3]


def test_the_checker_sends_a_late_import_of_what_the_module_loads_anyway_to_the_top():
    source = ("import torch\n\n"
              "def f():\n    import torch.nn  # extra: train\n    import yaml  # extra: train\n")
    module = next(name for name in MODULES if NEEDS[name] >= {"torch"} and "yaml" not in NEEDS[name])
    problems = late_import_problems(module, source)
    assert len(problems) == 1 and problems[0].startswith("4: ")
    assert "loads torch on import already" in problems[0]


def test_the_late_imports_kept_on_purpose_are_still_there():
    for module, name in LATE:
        path, is_package = MODULES[module]
        assert any(name in _targets(module, is_package, node)[1]
                   for node in _in_function(ast.parse(path.read_text(encoding="utf-8")))), (module, name)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_an_import_inside_a_function_loads_an_extra_and_names_it(module):
    """Imports sit at the top of a module; one inside a function loads an optional extra (or a module of
    the packages that needs one), so that a command's help and the extra-free commands run without it, and
    a comment names the extra: ``import torch  # extra: train``."""
    path, is_package = MODULES[module]
    problems = late_import_problems(module, path.read_text(encoding="utf-8"), is_package)
    assert not problems, "\n".join(f"{path.relative_to(ROOT)}:{problem}" for problem in problems)


def test_openspiel_imports_only_the_environments():
    """The package docstring's promise for the top layer: the OpenSpiel games stand on the rules engines."""
    foreign = sorted(f"{module} -> {target}" for module, targets in GRAPH.items()
                     if module.startswith("thermopylae_agents.openspiel")
                     for target in targets if target.startswith("thermopylae_agents")
                     and not target.startswith("thermopylae_agents.openspiel"))
    assert not foreign, "thermopylae_agents.openspiel imports other agent code: " + ", ".join(foreign)
