"""numba's ``njit`` and ``prange`` for the compiled engines (``coop/kernel.py``, ``duel/kernel.py``,
``duel/opponents_kernel.py``, ``duel/vector_engine.py``), or stand-ins where numba cannot be imported: the
decorator is then the identity and ``prange`` is ``range``, so the same source runs as plain Python.

numba's disk cache (``cache=True``) checks a compiled function only against the content of its own source
file, but what the function takes from other modules is compiled into it as well: a compiled function it
calls, a global constant it reads (an offset of a layout, a column of a state row). After an edit of such
a module the cache would go on serving the code compiled before it.
[`key_cache_on`][thermopylae_env.jit.key_cache_on], called at the end of a module, keys the cache of each of
the module's compiled functions on the content of the modules it names too, so that an edit of any of them
compiles the functions again. ``tests/env/test_jit.py`` holds each engine's list to the modules it imports.
"""

from __future__ import annotations

import hashlib
import importlib
import warnings
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any

__all__ = ["HAVE_NUMBA", "COMPILED_FROM", "key_cache_on", "njit", "prange", "sources_digest"]

try:
    import numba
    from numba.core.caching import Cache as _DiskCache
    from numba.core.registry import CPUDispatcher as _Dispatcher

    njit = numba.njit
    prange = numba.prange
    HAVE_NUMBA = True
except ImportError:  # the same source, interpreted
    HAVE_NUMBA = False
    prange = range

    def njit(*args: Any, **kwargs: Any) -> Any:
        """``numba.njit`` without numba: the function itself."""
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]

        def identity(function: Callable) -> Callable:
            return function

        return identity

#: the name under which `key_cache_on` records, in the module, the modules its cache is keyed on
COMPILED_FROM = "__compiled_from__"


def sources_digest(modules: tuple[str, ...]) -> str:
    """SHA-256 of the source files of the (imported) modules named ``modules``, in order."""
    digest = hashlib.sha256()
    for name in modules:
        digest.update(Path(importlib.import_module(name).__file__).read_bytes())
    return digest.hexdigest()


def key_cache_on(namespace: MutableMapping[str, Any], *modules: str) -> None:
    """Key the disk cache of every cached compiled function that the module of ``namespace`` (its
    ``globals()``) defines on the source files of the modules named ``modules`` as well as on its own file;
    call it at the end of the module, after its functions are defined. ``modules`` are the project's modules
    it imports, directly or through them: what a compiled function can take code or constants from."""
    if COMPILED_FROM in namespace:
        raise RuntimeError(f"{namespace['__name__']}: key_cache_on is called once, at the end of the module")
    namespace[COMPILED_FROM] = modules
    if not HAVE_NUMBA:
        return
    extra = sources_digest(modules)
    for value in list(namespace.values()):
        if not (isinstance(value, _Dispatcher) and value.py_func.__module__ == namespace["__name__"]):
            continue
        cache = value._cache
        if not isinstance(cache, _DiskCache):
            continue  # compiled without cache=True
        cache_file = getattr(cache, "_cache_file", None)
        if cache_file is None or not hasattr(cache_file, "_source_stamp"):
            # numba keeps the stamp elsewhere now: compiling again in every process is slow but right
            cache.disable()
            warnings.warn(f"{namespace['__name__']}.{value.__name__}: numba's cache could not be keyed on "
                          "the modules compiled into it, so it is not cached on disk", RuntimeWarning,
                          stacklevel=2)
            continue
        # The stamp numba compares with the one its index file was written with: the own file's, as numba
        # made it, and the other sources'.
        cache_file._source_stamp = (cache_file._source_stamp, extra)
