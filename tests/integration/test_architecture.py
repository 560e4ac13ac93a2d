"""The architecture rules of both packages, read from the source with ``ast`` (nothing is imported):

* no import cycle among the modules of ``thermopylae_env`` and ``thermopylae_agents``, counting the imports
  inside functions (a cycle closed by a late import still ties the modules together);
* no module over 800 lines;
* ``thermopylae_env`` imports nothing from ``thermopylae_agents`` (environments do not know the agents);
* ``main()`` is defined only by the command line (a ``cli`` package), not by library modules.

The checks walk whatever files the packages hold, so they follow the layout as it changes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

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


def _graph() -> dict[str, set[str]]:
    """Module -> the modules of the packages it imports, anywhere in its body."""
    graph = {}
    for module, (path, is_package) in MODULES.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for name in _imported_names(module, is_package, node):
                    owner = _owner(name)
                    if owner is not None and owner != module:
                        targets.add(owner)
        graph[module] = targets
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
    + [p for folder in ("scripts", "benchmarks") for p in (ROOT / folder).glob("*.py")]
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


# The agents' layers, lowest first: a layer imports only from layers before it (and from the env package).
AGENT_LAYERS = ("players", "policies", "evaluation", "training", "rllib", "cli")


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "thermopylae_agents" or len(parts) < 2 or parts[1] not in AGENT_LAYERS:
        return None
    return parts[1]


def test_the_agents_layers_import_only_downwards():
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in _graph().items()
        for target in targets
        if _layer(module) and _layer(target)
        and AGENT_LAYERS.index(_layer(target)) > AGENT_LAYERS.index(_layer(module))
    )
    assert not upward, "imports that point up the agents' layers:\n" + "\n".join(upward)
