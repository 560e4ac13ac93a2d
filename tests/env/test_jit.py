"""The compiled engines' disk cache (``thermopylae_env.jit``): each engine module keys the cache of its
compiled functions on exactly the modules their code and constants come from, and an edit of such a module
compiles them again (numba alone would go on serving the code compiled before it)."""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from thermopylae_env.jit import COMPILED_FROM, HAVE_NUMBA, sources_digest

ROOT = Path(__file__).resolve().parents[2]
ENGINES = ["thermopylae_env.coop.kernel", "thermopylae_env.duel.kernel",
           "thermopylae_env.duel.opponents_kernel", "thermopylae_env.duel.vector_engine"]


def _source(module: str) -> Path:
    return ROOT / (module.replace(".", "/") + ".py")


def _imports(module: str) -> dict[str, set[str]]:
    """The project modules ``module`` imports names from at its top level (``jit`` aside: it compiles
    nothing in), each with the names taken from it."""
    found: dict[str, set[str]] = {}
    for node in ast.parse(_source(module).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("thermopylae_env") \
                and node.module != "thermopylae_env.jit":
            found.setdefault(node.module, set()).update(alias.asname or alias.name for alias in node.names)
    return found


def _closure(module: str) -> set[str]:
    """``module`` and every project module it imports, directly or through them."""
    seen, todo = set(), [module]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_imports(name))
    return seen


def _compiled_reads(module: str) -> set[str]:
    """The global names read inside ``module``'s functions decorated with ``njit``."""
    names = set()
    for node in ast.parse(_source(module).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef) and any(
                "njit" in ast.unparse(decorator) for decorator in node.decorator_list):
            names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return names


@pytest.mark.parametrize("module", ENGINES)
def test_an_engine_keys_its_cache_on_exactly_the_modules_its_compiled_code_reads(module):
    reads = _compiled_reads(module)
    needed = set()
    for source, names in _imports(module).items():
        if names & reads:
            needed |= _closure(source)
    keyed = getattr(importlib.import_module(module), COMPILED_FROM)
    assert set(keyed) == needed and len(keyed) == len(set(keyed)), module


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("module", ENGINES)
def test_every_cached_function_of_an_engine_is_stamped_with_its_keys_sources(module):
    from numba.core.caching import Cache
    from numba.core.registry import CPUDispatcher

    engine = importlib.import_module(module)
    cached = [value for value in vars(engine).values() if isinstance(value, CPUDispatcher)
              and value.py_func.__module__ == module and isinstance(value._cache, Cache)]
    assert cached, module
    digest = sources_digest(getattr(engine, COMPILED_FROM))
    for dispatcher in cached:
        assert dispatcher._cache._cache_file._source_stamp[1] == digest, dispatcher.__name__


_COMPILED = textwrap.dedent("""
    from thermopylae_env.jit import key_cache_on, njit
    from demo.constants import VALUE


    @njit(cache=True)
    def value():
        return VALUE

    {key}
""")


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
def test_an_edit_of_a_keyed_module_compiles_again_where_numba_alone_serves_the_old_code(tmp_path):
    package = tmp_path / "demo"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "keyed.py").write_text(_COMPILED.format(key='key_cache_on(globals(), "demo.constants")'))
    (package / "unkeyed.py").write_text(_COMPILED.format(key=""))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    env.pop("NUMBA_DISABLE_JIT", None)

    def values() -> list[str]:
        done = subprocess.run([sys.executable, "-c", "from demo import keyed, unkeyed; "
                               "print(keyed.value(), unkeyed.value())"], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.split()

    (package / "constants.py").write_text("VALUE = 1\n")
    assert values() == ["1", "1"]  # compiled and written to the cache
    (package / "constants.py").write_text("VALUE = 2\n")
    assert values() == ["2", "1"]  # the keyed cache compiled again; numba's own served VALUE = 1
