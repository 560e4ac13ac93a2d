"""Shared test fakes and helpers: one scripted chance source for both co-op engines, snapshots of the
vector engine's arrays (for the "a refused call changes nothing" checks), a walk through random games of an
env; under pytest-xdist, one numba compile per package of kernels at a time across the workers, and each
worker's torch and OpenBLAS threads on its share of the CPUs.

This is the suite's only conftest.py: tests import its helpers as ``from conftest import ...`` from every
folder (pytest's prepend import mode puts tests/ on ``sys.path``), and a conftest.py in a sub-folder would
take the module name ``conftest`` from this one (tests/integration/test_layout.py holds that rule)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest


class ScriptedChance:
    """Stands in for ``numpy.random.Generator`` where the co-op engines draw chance: ``permutation(n)``
    (what ``CoopGame.init`` calls) serves the given deck order of that length, ``integers(1, 7, size)``
    (what ``roll_dice`` calls) the given dice, in order. ``rolled`` lists how many dice each roll asked
    for. A test that rolls more dice than it scripted fails, naming that."""

    def __init__(self, dice: Iterable[int] = (), spartan: Sequence[int] | None = None,
                 persian: Sequence[int] | None = None) -> None:
        self.dice = [int(d) for d in dice]
        self.used = 0
        self.rolled: list[int] = []
        self.orders = {len(order): tuple(order) for order in (spartan, persian) if order is not None}

    @classmethod
    def from_tables(cls, tables: tuple[Sequence[int], Sequence[int], Sequence[int]]) -> ScriptedChance:
        """From a vector engine's ``chance_tables(game)``: ``(spartan_order, persian_order, dice)``."""
        spartan, persian, dice = tables
        return cls(dice, spartan, persian)

    def permutation(self, n: int) -> np.ndarray:
        assert n in self.orders, f"the test scripted no deck order of {n} cards"
        return np.array(self.orders[n])

    def integers(self, low: int, high: int, size: int | None = None) -> np.ndarray:
        assert (low, high) == (1, 7), "the engines roll six-sided dice only"
        assert size is not None and self.used + size <= len(self.dice), "the test scripted too few dice"
        self.rolled.append(size)
        out = np.array(self.dice[self.used : self.used + size], dtype=np.int64)
        self.used += size
        return out


def scripted_dice(*values: int) -> ScriptedChance:
    """A chance source that only rolls the given dice (for hand-built states)."""
    return ScriptedChance(values)


ENGINE_ARRAYS = ("phase", "current", "recipient", "marker", "support", "spartan_pos", "persian_pos",
                 "graveyard", "persian_discard", "offers", "slot1", "slot2", "hands", "hand_total",
                 "hand_bits", "spartan_order", "persian_order", "dice_sum", "dice_pos", "turn", "won", "lost",
                 "keys", "episodes", "obs", "masks")


def engine_snapshot(engine: object) -> dict[str, np.ndarray]:
    """Copies of every array of a ``CoopVectorEngine`` (and whether it is seeded)."""
    snap = {name: getattr(engine, name).copy() for name in ENGINE_ARRAYS}
    snap["seeded"] = np.array(engine.seeded)
    return snap


def assert_same_snapshot(a: dict[str, np.ndarray], b: dict[str, np.ndarray], where: str = "") -> None:
    """Every array equal, dtype and shape included."""
    assert a.keys() == b.keys(), where
    for name, x in a.items():
        y = b[name]
        assert x.dtype == y.dtype and x.shape == y.shape, (where, name)
        assert np.array_equal(x, y), (where, name, np.argwhere(x != y)[:5])


def assert_same_engines(a: object, b: object, where: str = "") -> None:
    """Two vector engines hold the same arrays."""
    assert_same_snapshot(engine_snapshot(a), engine_snapshot(b), where)


def visit_states(env: Any, games: int, seed: int, check: Callable[[np.ndarray, np.ndarray], None]) -> int:
    """Walk ``games`` random games of ``env`` and call ``check(obs, mask)`` at every decision."""
    rng = np.random.default_rng(seed)
    visited = 0
    for game in range(games):
        obs, info = env.reset(seed=seed + game)
        done = False
        while not done:
            mask = info["action_mask"].astype(bool)
            check(obs, mask)
            visited += 1
            obs, _, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
            done = terminated or truncated
    return visited


def compile_lock_name(module: str) -> str:
    """The lock a numba kernel of ``module`` compiles under: one per package (``thermopylae_env.coop``,
    ``thermopylae_agents.players``, ...), since a kernel's compile also compiles the kernels it calls, which
    live in its own module or a sibling (the co-op search's observations call its kernel, the team bound
    calls the one-seat bound)."""
    return "numba-compile-" + (module.rpartition(".")[0] or module or "kernels") + ".lock"


@pytest.fixture(scope="session", autouse=True)
def one_numba_compile_per_package_at_a_time(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Under pytest-xdist (scripts/test.sh runs two workers), a worker compiles a numba kernel only while it
    holds a lock shared by the workers, one lock per package of kernels. A kernel that both workers need is
    then compiled once: the second worker waits, then loads it from numba's cache (``cache=True``) instead
    of compiling it again at the same time, which on a fresh clone would spend both cores on the same
    compile. Kernels of different packages (the co-op engine's and the duel's, say) compile at the same
    time, so that neither worker waits for a compile it does not need."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    try:
        from numba.core.dispatcher import Dispatcher
    except ImportError:  # the engines then run their kernels as plain Python
        yield
        return
    # Each worker's base temp is popen-gwN inside the run's shared directory.
    lock_folder = tmp_path_factory.getbasetemp().parent
    compile_one = Dispatcher.compile
    held = [0]  # a kernel's compile compiles the kernels it calls: only the outermost takes a lock

    def locked_compile(self: Dispatcher, sig: object) -> object:
        if held[0]:
            return compile_one(self, sig)
        module = getattr(self.py_func, "__module__", None) or ""
        with open(lock_folder / compile_lock_name(module), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            held[0] += 1
            try:
                return compile_one(self, sig)
            finally:
                held[0] -= 1
                fcntl.flock(lock, fcntl.LOCK_UN)

    Dispatcher.compile = locked_compile
    yield
    Dispatcher.compile = compile_one


@pytest.fixture(scope="session", autouse=True)
def threads_shared_among_the_workers() -> Iterator[None]:
    """Under pytest-xdist, each worker's torch and OpenBLAS (NumPy's matrix products) run on its share of
    the CPUs (one thread when two workers share two cores) instead of one thread per CPU in each worker:
    with more threads than cores, their threads spin while they wait for one another and take the cores
    from the other worker's tests. In this process only: the environment that subprocesses inherit stays
    as it was. A test that needs another torch count sets it and puts it back."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if workers < 2:
        yield
        return
    from thermopylae_env.threads import _limit_openblas

    share = max(1, len(os.sched_getaffinity(0)) // workers)
    _limit_openblas(share)
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(share)
    yield
    torch.set_num_threads(before)


def shrink_block(hp: dict, **values: object) -> dict:
    """Set ``values`` in a training config block and, for the keys its ``fast`` section (the fast
    learner's own recipe) also sets, there too, so that a test's tiny budget holds for either learner."""
    hp.update(values)
    fast = hp.get("fast")
    if isinstance(fast, dict):
        fast.update({key: value for key, value in values.items() if key in fast or key == "batch_size"})
    return hp
