"""The process-wide thread settings (thermopylae_env.threads): the thread count chosen from the machine,
passive OpenMP waiting set before any OpenMP runtime loads, and games that do not depend on the count."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from thermopylae_env import threads
from thermopylae_env.threads import OVERRIDE, choose_threads, configure_environment, configure_torch

ROOT = Path(__file__).resolve().parents[2]
THREAD_VARIABLES = ("THERMOPYLAE_NUM_THREADS", "NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER",
                    "OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME",
                    "OPENBLAS_NUM_THREADS")


def _child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "agents"), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


# --------------------------------------------------------------------------------- the thread count


def test_quiet_machine_gets_every_cpu() -> None:
    assert choose_threads(2, 0.0, {}) == 2
    assert choose_threads(16, 0.3, {}) == 16


def test_own_runnable_thread_is_not_counted_as_other_load() -> None:
    assert choose_threads(2, 1.0, {}) == 2
    assert choose_threads(8, 1.4, {}) == 8


def test_loaded_machine_gets_the_free_cores_rounded() -> None:
    assert choose_threads(8, 3.0, {}) == 6
    assert choose_threads(8, 3.6, {}) == 5
    assert choose_threads(2, 2.0, {}) == 1


def test_saturated_machine_gets_one_thread() -> None:
    assert choose_threads(2, 3.0, {}) == 1
    assert choose_threads(2, 7.0, {}) == 1
    assert choose_threads(16, 40.0, {}) == 1


def test_override_fixes_the_count_whatever_the_load() -> None:
    assert choose_threads(2, 7.0, {OVERRIDE: "2"}) == 2
    assert choose_threads(16, 0.0, {OVERRIDE: "1"}) == 1
    assert choose_threads(16, 0.0, {OVERRIDE: "007"}) == 7


def test_users_numba_num_threads_is_respected_and_override_wins_over_it() -> None:
    assert choose_threads(8, 7.0, {"NUMBA_NUM_THREADS": "3"}) == 3
    assert choose_threads(8, 0.0, {"NUMBA_NUM_THREADS": "3", OVERRIDE: "5"}) == 5
    assert choose_threads(8, 0.0, {"NUMBA_NUM_THREADS": ""}) == 8  # empty: unset, as the shell's VAR= cmd


@pytest.mark.filterwarnings("ignore:THERMOPYLAE_NUM_THREADS=2 is more than the CPUs")  # on 1 CPU
def test_choice_is_a_function_of_its_inputs_only() -> None:
    cases = [(cpus, load, env) for cpus in (1, 2, 3, 8) for load in (0.0, 0.9, 2.5, 6.7)
             for env in ({}, {OVERRIDE: "2"}, {"NUMBA_NUM_THREADS": "1"})]
    first = [choose_threads(*case) for case in cases]
    assert first == [choose_threads(*case) for case in cases]
    assert all(count >= 1 for count in first)


# Plain ASCII digits only, as every other number the package reads (thermopylae_agents.cli.args): no sign,
# no surrounding blanks, no other script's digits, which int() would take.
@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5", "\u0663", "+3", " 2 ", "2 ", "\t2", " ",
                                   "\u0661\u0662", "\uff13", "1_0", "1" * 19])
def test_bad_override_is_refused_naming_the_variable(value: str) -> None:
    for name in (OVERRIDE, "NUMBA_NUM_THREADS"):
        with pytest.raises(ValueError) as refused:
            choose_threads(2, 0.0, {name: value})
        message = str(refused.value)
        assert message.startswith(f"{name} must be a positive integer (ASCII digits), got ")
        assert repr(value[:40]) in message
        assert "\n" not in message


def test_a_count_above_the_cpus_is_capped_at_them_with_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "_warned", set())
    capped = fr"{OVERRIDE}=99999 is more than the CPUs this process may run on \(2\): using 2"
    with pytest.warns(UserWarning, match=capped) as caught:
        assert choose_threads(2, 0.0, {OVERRIDE: "99999"}) == 2
        assert choose_threads(2, 7.0, {OVERRIDE: "99999"}) == 2  # the same setting read again: no new warning
    assert len(caught) == 1
    with pytest.warns(UserWarning, match=r"NUMBA_NUM_THREADS=16 is more than the CPUs .* \(8\)"):
        assert choose_threads(8, 0.0, {"NUMBA_NUM_THREADS": "16"}) == 8


def test_a_bad_override_leaves_the_kept_reading_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "machine", lambda: (4, 0.0, 0.0))
    monkeypatch.setattr(threads, "_cache", [100.0, 3.0])
    monkeypatch.setenv(OVERRIDE, "+3")
    with pytest.raises(ValueError, match=f"{OVERRIDE} must be a positive integer"):
        threads.free_threads(now=100.0 + threads.REFRESH_SECONDS)
    assert threads._cache == [100.0, 3.0]


def test_bad_machine_readings_are_refused() -> None:
    with pytest.raises(ValueError, match="cpus must be a positive integer"):
        choose_threads(0, 0.0, {})
    with pytest.raises(ValueError, match="load must not be negative"):
        choose_threads(2, -1.0, {})


def test_free_threads_reads_the_machine_again_after_the_refresh_period(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    readings = iter([(4, 0.0, 0.0), (4, 4.0, 0.0)])
    monkeypatch.setattr(threads, "machine", lambda: next(readings))
    monkeypatch.setattr(threads, "_cache", [])
    for name in (OVERRIDE, "NUMBA_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    assert threads.free_threads(now=100.0) == 4
    assert threads.free_threads(now=100.0 + threads.REFRESH_SECONDS / 2) == 4  # the same reading
    assert threads.free_threads(now=100.0 + threads.REFRESH_SECONDS) == 1  # load 4 on 4 CPUs


def test_kernel_threads_never_exceeds_the_chunks_and_restores_numbas_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    numba = pytest.importorskip("numba")
    monkeypatch.setattr(threads, "free_threads", lambda now=None: 64)
    before = numba.get_num_threads()
    with threads.kernel_threads(1) as count:
        assert count == 1
        assert numba.get_num_threads() == 1
    assert numba.get_num_threads() == before
    with threads.kernel_threads(10_000) as count:
        assert count == before  # numba's own count bounds it
    monkeypatch.setattr(threads, "free_threads", lambda now=None: 1)
    with pytest.raises(RuntimeError, match="inside"), threads.kernel_threads(8):
        raise RuntimeError("inside")
    assert numba.get_num_threads() == before


# --------------------------------------------------------------------------------- environment and torch


def test_configure_environment_sets_passive_waiting_and_keeps_the_users_values() -> None:
    env: dict[str, str] = {}
    assert configure_environment(env) == env
    assert env == {"OMP_WAIT_POLICY": "passive", "KMP_BLOCKTIME": "0", "OPENBLAS_NUM_THREADS": "1"}
    mine = {"OMP_WAIT_POLICY": "active", "KMP_BLOCKTIME": "200", "OPENBLAS_NUM_THREADS": "3"}
    env = dict(mine)
    assert configure_environment(env) == mine
    assert env == mine


def test_configure_torch_leaves_an_unimported_torch_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert configure_torch(1) is None
    assert "torch" not in sys.modules


def test_configure_torch_refuses_a_bad_count(monkeypatch: pytest.MonkeyPatch) -> None:
    class FakeTorch:
        threads = 0

        def set_num_threads(self, count: int) -> None:
            self.threads = count

    fake = FakeTorch()
    monkeypatch.setitem(sys.modules, "torch", fake)
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="threads must be a positive integer"):
            configure_torch(bad)  # type: ignore[arg-type]
    assert fake.threads == 0
    assert configure_torch(3) == 3
    assert fake.threads == 3


LEAVES_ENVIRONMENT = r"""
import json, os
before = dict(os.environ)
import gymnasium as gym
import thermopylae_env
from thermopylae_env import COOP_ID, GREEK_ID, PERSIAN_ID
for env_id in (COOP_ID, GREEK_ID, PERSIAN_ID):
    env = gym.make(env_id)
    obs, info = env.reset(seed=0)
    env.step(int(info["action_mask"].argmax()))
    env.close()
    vec = gym.make_vec(env_id, num_envs=64)  # the vector engines read the thread count (kernel_threads)
    obs, infos = vec.reset(seed=0)
    vec.step(infos["action_mask"].argmax(axis=1))
    vec.close()
after = dict(os.environ)
print(json.dumps({k: [before.get(k), after.get(k)] for k in set(before) | set(after)
                  if before.get(k) != after.get(k)}))
"""


def test_importing_the_package_and_making_every_env_leaves_the_environment_unchanged() -> None:
    out = subprocess.run(
        [sys.executable, "-c", LEAVES_ENVIRONMENT], env=_child_env(),
        capture_output=True, text=True, timeout=300, check=True, cwd=ROOT)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {}


IMPORT_ORDER = r"""
import json, os, sys
def openmp_loaded():
    with open("/proc/self/maps") as maps:
        return any(name in line for line in maps for name in ("libgomp", "libiomp", "libomp"))
import thermopylae_env
from thermopylae_env.duel.vector import DuelSelfPlayVectorEnv
from thermopylae_env.threads import configure_environment
before = openmp_loaded()
configure_environment()  # after the package's import, before the first parallel kernel
env = DuelSelfPlayVectorEnv(1024)
obs, infos = env.reset(seed=1)
env.step(infos["action_mask"].argmax(axis=1))
import numba
print(json.dumps({"before": before, "policy": os.environ.get("OMP_WAIT_POLICY"),
                  "layer": numba.threading_layer(), "loaded": openmp_loaded()}))
"""


def test_configure_environment_after_importing_the_package_is_in_time_for_openmp() -> None:
    """Importing the package loads no OpenMP runtime, so an explicit call after it still makes the runtime
    that the first parallel kernel loads wait passively."""
    pytest.importorskip("numba")
    out = subprocess.run(
        [sys.executable, "-c", IMPORT_ORDER],
        env=_child_env(OMP_DISPLAY_ENV="VERBOSE", THERMOPYLAE_NUM_THREADS="2", NUMBA_NUM_THREADS="2"),
        capture_output=True, text=True, timeout=300, check=True, cwd=ROOT)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["before"] is False
    assert got["policy"] == "passive"
    if got["layer"] != "omp":
        pytest.skip(f"numba's threading layer here is {got['layer']}, not OpenMP")
    assert got["loaded"] is True
    # GNU OpenMP prints its settings when it loads: a spin count of 0 is passive waiting (its default
    # without the variable is to spin).
    spin = [line for line in out.stderr.splitlines() if "GOMP_SPINCOUNT" in line]
    assert spin, out.stderr
    assert all(line.split("=")[1].strip() == "'0'" for line in spin), spin


OPENBLAS_AFTER_NUMPY = r"""
import ctypes, json, os
import numpy
import thermopylae_env
from thermopylae_env.threads import configure_environment

def openblas_threads():
    with open("/proc/self/maps") as maps:
        paths = {line.split(maxsplit=5)[5].strip() for line in maps if "openblas" in line.lower()}
    for path in sorted(paths):
        library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads"):
            if hasattr(library, name):
                return getattr(library, name)()
    return None

first = openblas_threads()
settings = configure_environment()
print(json.dumps({"first": first, "then": openblas_threads(), "settings": settings,
                  "variable": os.environ.get("OPENBLAS_NUM_THREADS")}))
"""


def test_configure_environment_gives_an_already_loaded_openblas_one_thread() -> None:
    """NumPy is loaded by the package's import (Gymnasium), and its OpenBLAS reads the variable only then:
    the call sets the loaded library's count, and the variable for child processes."""
    out = subprocess.run(
        [sys.executable, "-c", OPENBLAS_AFTER_NUMPY], env=_child_env(),
        capture_output=True, text=True, timeout=300, check=True, cwd=ROOT)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    if got["first"] is None:
        pytest.skip("NumPy here does not use OpenBLAS")
    assert got["then"] == 1
    assert got["variable"] == "1"
    assert got["settings"] == {"OMP_WAIT_POLICY": "passive", "KMP_BLOCKTIME": "0",
                               "OPENBLAS_NUM_THREADS": "1"}


def test_configure_environment_keeps_the_users_openblas_count() -> None:
    out = subprocess.run(
        [sys.executable, "-c", OPENBLAS_AFTER_NUMPY], env=_child_env(OPENBLAS_NUM_THREADS="2"),
        capture_output=True, text=True, timeout=300, check=True, cwd=ROOT)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    if got["first"] is None:
        pytest.skip("NumPy here does not use OpenBLAS")
    assert got["then"] == got["first"]
    assert got["variable"] == "2"


# --------------------------------------------------------------------------------- games vs thread count

GAMES = r"""
import hashlib, json, sys
import numpy as np
import thermopylae_env
from thermopylae_env import threads
from thermopylae_env.coop.kernel import CHUNK as COOP_CHUNK
from thermopylae_env.duel.vector_engine import CHUNK as DUEL_CHUNK
from thermopylae_env.coop.vector import CoopVectorEnv
from thermopylae_env.duel.vector import DuelSelfPlayVectorEnv

digest = hashlib.sha256()
used = []
rng = np.random.default_rng(5)
for env in (CoopVectorEnv(2 * COOP_CHUNK + 37, num_players=2), DuelSelfPlayVectorEnv(3 * DUEL_CHUNK + 5)):
    obs, infos = env.reset(seed=9)
    with threads.kernel_threads(8) as count:
        used.append(count)
    for _ in range(60):
        masks = infos["action_mask"]
        actions = (rng.random(masks.shape) * masks).argmax(axis=1)
        obs, rewards, terminated, truncated, infos = env.step(actions)
        for array in (obs, rewards, terminated, truncated, infos["action_mask"]):
            digest.update(np.ascontiguousarray(array).tobytes())
print(json.dumps({"sha256": digest.hexdigest(), "threads": used}))
"""


def test_games_are_the_same_on_one_thread_and_on_two() -> None:
    pytest.importorskip("numba")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: a count of two is capped at one")
    results = []
    for count in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", GAMES],
            env=_child_env(THERMOPYLAE_NUM_THREADS=count, NUMBA_NUM_THREADS="2"),
            capture_output=True, text=True, timeout=600, check=True, cwd=ROOT)
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert results[0]["threads"] == [1, 1]
    assert results[1]["threads"] == [2, 2]  # the parallel kernels really ran on two threads
    assert results[0]["sha256"] == results[1]["sha256"]


TORCH_AFTER_KERNEL = r"""
import json
import thermopylae_env
import torch
from thermopylae_env.coop.vector import CoopVectorEnv
from thermopylae_env.threads import configure_torch

torch.set_num_threads(1)  # before numba's pool starts (the first kernel call starts it) ...
torch.get_num_threads()  # ... and torch's own threads started (as any torch call does)
env = CoopVectorEnv(4096)
env.reset(seed=0)
set_first = torch.get_num_threads()
configure_torch(1)
env.step(env.engine.masks.argmax(axis=1))
print(json.dumps([set_first, torch.get_num_threads()]))
"""


def test_torchs_thread_count_survives_the_start_of_numbas_pool() -> None:
    # numba's omp pool and torch share GNU's OpenMP runtime; starting the pool resets its thread count.
    pytest.importorskip("numba")
    pytest.importorskip("torch")
    out = subprocess.run(
        [sys.executable, "-c", TORCH_AFTER_KERNEL],
        env=_child_env(THERMOPYLAE_NUM_THREADS="2", NUMBA_NUM_THREADS="2"),
        capture_output=True, text=True, timeout=300, check=True, cwd=ROOT)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [1, 1]


# ------------------------------------------------------------------------------------- reading the load


def test_runnable_now_reads_the_running_count_of_proc_loadavg() -> None:
    assert threads.runnable_now("0.52 0.41 0.35 3/412 12345\n") == 3
    assert threads.runnable_now("0.52 0.41 0.35 1/412 12345") == 1
    for unreadable in ("", "0.5 0.4", "0.5 0.4 0.3 x/412 1"):
        assert threads.runnable_now(unreadable) == 0


def _machine_reads(monkeypatch: pytest.MonkeyPatch, cpus: int, average: float, runnable: int,
                   own: float) -> None:
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: set(range(cpus)))
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (average, average, average))
    monkeypatch.setattr(threads, "runnable_now", lambda text=None: runnable)
    monkeypatch.setattr(threads, "own_load", lambda now=None, cpu_seconds=None: own)


def test_a_load_that_just_started_counts_before_the_load_average_follows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two busy processes started a moment ago: the 1-minute average still reads an idle machine, the
    runnable count does not, and the kernels get one thread instead of every CPU."""
    _machine_reads(monkeypatch, cpus=2, average=0.1, runnable=3, own=0.05)
    cpus, load, own = threads.machine()
    assert (cpus, own) == (2, 0.05)
    assert choose_threads(cpus, load, {}, own=own) == 1
    _machine_reads(monkeypatch, cpus=2, average=0.1, runnable=1, own=0.05)  # only this process
    cpus, load, own = threads.machine()
    assert choose_threads(cpus, load, {}, own=own) == 2


# ------------------------------------------------------------------------ this process's own part of the load


def test_a_busy_process_alone_on_the_machine_gets_every_core() -> None:
    """The load average counts this process's own threads: all 16 runnable threads being its own, nothing
    is left for other processes."""
    assert choose_threads(16, 16.0, {}, own=16.0) == 16
    assert choose_threads(2, 2.0, {}, own=2.0) == 2
    assert choose_threads(8, 8.3, {}, own=8.0) == 8


def test_another_processs_load_still_takes_its_cores() -> None:
    assert choose_threads(16, 16.0, {}, own=0.0) == 1
    assert choose_threads(8, 4.0, {}, own=0.0) == 4
    assert choose_threads(16, 16.0, {}) == 1  # default: this process is its one runnable thread


def test_a_mixed_load_leaves_the_cores_that_other_processes_do_not_use() -> None:
    assert choose_threads(16, 12.0, {}, own=4.0) == 8
    assert choose_threads(8, 6.0, {}, own=2.5) == 5  # 3.5 cores taken by others, rounded
    assert choose_threads(8, 3.0, {}, own=5.0) == 8  # more own than load (the estimate lags): no one else


def test_own_part_is_refused_when_negative() -> None:
    with pytest.raises(ValueError, match="own must not be negative"):
        choose_threads(2, 1.0, {}, own=-0.5)


def test_machine_counts_the_load_of_others_beside_this_busy_process(monkeypatch: pytest.MonkeyPatch) -> None:
    _machine_reads(monkeypatch, cpus=16, average=16.0, runnable=1, own=16.0)  # alone, 16 busy threads
    cpus, load, own = threads.machine()
    assert choose_threads(cpus, load, {}, own=own) == 16
    _machine_reads(monkeypatch, cpus=16, average=16.0, runnable=1, own=8.0)  # half of it another's
    cpus, load, own = threads.machine()
    assert choose_threads(cpus, load, {}, own=own) == 8
    # two busy processes that started a moment ago, beside this one's average of 16 threads
    _machine_reads(monkeypatch, cpus=16, average=16.0, runnable=3, own=16.0)
    cpus, load, own = threads.machine()
    assert choose_threads(cpus, load, {}, own=own) == 14


def test_free_threads_uses_this_processs_own_part(monkeypatch: pytest.MonkeyPatch) -> None:
    _machine_reads(monkeypatch, cpus=8, average=8.0, runnable=1, own=8.0)
    monkeypatch.setattr(threads, "_cache", [])
    for name in (OVERRIDE, "NUMBA_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    assert threads.free_threads(now=50.0) == 8


def _busy(own: threads.OwnLoad, start: float, seconds: float, threads_busy: float, cpu: float,
          every: float = threads.REFRESH_SECONDS) -> tuple[float, float]:
    """Feed ``own`` readings of a process running ``threads_busy`` threads for ``seconds``."""
    now = start
    while now < start + seconds - 1e-9:
        now += every
        cpu += threads_busy * every
        own.update(now, cpu)
    return now, cpu


def test_own_load_of_a_process_busy_for_minutes_is_its_busy_threads() -> None:
    own = threads.OwnLoad(now=1000.0, cpu_seconds=3.0)
    _busy(own, 1000.0, 600.0, 16.0, 3.0)
    assert own.average == pytest.approx(16.0, rel=1e-3)


def test_own_load_follows_the_kernels_one_minute_exponential_average() -> None:
    """Busy on 4 threads from an idle start: after one minute the kernel's average has reached 1 - 1/e of
    it, and one minute after the process went idle it has fallen to 1/e; the estimate does the same."""
    own = threads.OwnLoad(now=0.0, cpu_seconds=0.0)
    _busy(own, 0.0, threads.LOAD_WINDOW, 4.0, 0.0, every=5.0)
    assert own.average == pytest.approx(4.0 * (1 - math.exp(-1)), rel=1e-6)
    own = threads.OwnLoad(now=0.0, cpu_seconds=0.0)
    now, cpu = _busy(own, 0.0, 600.0, 4.0, 0.0)
    _busy(own, now, threads.LOAD_WINDOW, 0.0, cpu, every=5.0)
    assert own.average == pytest.approx(4.0 * math.exp(-1), rel=1e-3)


def test_own_load_does_not_depend_on_how_often_it_is_read() -> None:
    often, rarely = threads.OwnLoad(0.0, 0.0), threads.OwnLoad(0.0, 0.0)
    _busy(often, 0.0, 90.0, 3.0, 0.0, every=1.0)
    _busy(rarely, 0.0, 90.0, 3.0, 0.0, every=30.0)
    assert often.average == pytest.approx(rarely.average, rel=1e-9)


def test_own_load_restarts_when_the_cpu_clock_goes_back() -> None:
    """A forked child inherits the parent's reading but its own CPU clock starts again from zero."""
    own = threads.OwnLoad(now=0.0, cpu_seconds=0.0)
    _busy(own, 0.0, 300.0, 2.0, 0.0)
    assert own.update(310.0, 1.0) == 0.0
    assert own.update(320.0, 1.0 + 10.0) == pytest.approx(1.0 - math.exp(-10.0 / threads.LOAD_WINDOW))


def test_own_load_keeps_its_value_when_no_time_has_passed() -> None:
    own = threads.OwnLoad(now=0.0, cpu_seconds=0.0)
    _busy(own, 0.0, 120.0, 1.0, 0.0)
    before = own.average
    assert own.update(120.0, 500.0) == before  # the same instant: no rate to read


def test_own_load_of_this_process_reads_its_cpu_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "_own", {os.getpid(): threads.OwnLoad(now=0.0, cpu_seconds=0.0)})
    assert threads.own_load(now=30.0, cpu_seconds=30.0) == pytest.approx(1 - math.exp(-0.5))
    monkeypatch.setattr(threads, "_own", {os.getpid() + 1: threads.OwnLoad(now=0.0, cpu_seconds=0.0)})
    assert threads.own_load(now=30.0, cpu_seconds=30.0) == 0.0  # a reading of another process: start again
    assert threads.own_load() >= 0.0  # the real clocks
