"""The thread settings of the whole process: numba's parallel kernels, OpenMP, OpenBLAS and torch.

Why one place: several seeds trained at once on one machine are normal, and thread pools sized for an idle
machine collapse on a shared one. Two things go wrong there. Waiting threads that spin (OpenMP's default,
in numba's ``omp`` threading layer and in torch) burn the cores that the thread with the work needs, so a
parallel kernel or a policy forward runs many times slower than on one thread. And more threads than free
cores only adds hand-overs. So:

* every OpenMP runtime of the process waits passively (``OMP_WAIT_POLICY=passive``, and ``KMP_BLOCKTIME=0``
  for Intel's): [`configure_environment`][thermopylae_env.threads.configure_environment] sets them when
  ``thermopylae_env`` is imported, before numba or torch start an OpenMP runtime (a runtime reads them once,
  when it loads). OpenBLAS gets one thread if NumPy is not loaded yet (its threads spin). A variable the user
  has set is left as it is.
* the engines run a parallel kernel on [`kernel_threads`][thermopylae_env.threads.kernel_threads] threads: the
  free cores (the CPUs this process may run on, less the load that other processes put on them), never more
  than the kernel's chunks of work, and the serial path when that is one thread. The load is the larger of the
  load average and the threads runnable at the moment of reading; it is re-read every
  [`REFRESH_SECONDS`][thermopylae_env.threads.REFRESH_SECONDS], so a long run follows the machine.
* ``THERMOPYLAE_NUM_THREADS`` fixes the count; so does a ``NUMBA_NUM_THREADS`` that the user set. Either is
  read as every number of the package is: plain ASCII digits of a positive integer (no sign, no blanks around
  it; an empty value is unset), else a one-line ``ValueError`` naming the variable; a count above the CPUs
  this process may run on is capped at them, with one warning. ``numba.set_num_threads`` stays an upper
  bound.
* torch: [`configure_torch`][thermopylae_env.threads.configure_torch], called by the training setup (importing
  this module imports neither torch nor numba: importing the environments stays light). numba's ``omp`` pool
  and torch share GNU's OpenMP runtime, and starting the pool resets the runtime's thread count: the pool is
  started before torch's count is set, and a count set earlier is put back (see `_numba`).

numba's threading layer stays its own choice (``omp`` where GNU OpenMP is installed): ``tbb`` does not come
with numba, and ``workqueue``, which does not spin either, showed no consistent gain over ``omp`` with
passive waiting (the ``workqueue`` rows of ``benchmarks/load_benchmark.py``'s first run, its JSON at commit
40499b3) and may not be entered from two threads at once.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from collections.abc import Iterator, Mapping, MutableMapping

__all__ = [
    "OVERRIDE",
    "REFRESH_SECONDS",
    "choose_threads",
    "configure_environment",
    "configure_torch",
    "free_threads",
    "kernel_threads",
    "machine",
]

OVERRIDE = "THERMOPYLAE_NUM_THREADS"  # a fixed thread count for the kernels (and OpenBLAS, torch defaults)
REFRESH_SECONDS = 10.0  # how long one reading of the load average is used

_PASSIVE = {"OMP_WAIT_POLICY": "passive", "KMP_BLOCKTIME": "0"}

_cache: list[float] = []  # [time read, threads chosen]
_launched: list[bool] = []  # [True] once numba's thread pool is started
_warned: set[tuple[str, str]] = set()  # the (variable, value) capped at the CPU count and warned about


def _positive(name: str, value: str, cpus: int) -> int:
    """The thread count the variable ``name`` sets, at most ``cpus`` (with one warning where it asked for
    more). Plain ASCII digits only, as every number the package reads: ``int`` would also take a sign,
    blanks, underscores and other scripts' digits, which a typo or a pasted value brings in unnoticed."""
    if not (value.isascii() and value.isdigit()) or len(value) > 18 or int(value) < 1:
        raise ValueError(f"{name} must be a positive integer (ASCII digits), got {value[:40]!r}")
    count = int(value)
    if count > cpus:
        # once per setting: the count is read again every REFRESH_SECONDS
        if (name, value) not in _warned:
            _warned.add((name, value))
            warnings.warn(f"{name}={value} is more than the CPUs this process may run on ({cpus}): "
                          f"using {cpus}", UserWarning, stacklevel=3)
        count = cpus
    return count


def choose_threads(cpus: int, load: float, env: Mapping[str, str]) -> int:
    """Threads for a parallel kernel, given the CPUs this process may use, the 1-minute load average and
    the environment variables.

    ``THERMOPYLAE_NUM_THREADS``, else a ``NUMBA_NUM_THREADS`` the user set, fixes the count: plain ASCII
    digits of a positive integer (an empty value is unset; anything else raises a one-line ``ValueError``
    naming the variable), at most ``cpus`` (a larger count is capped, with one warning). Otherwise the
    free cores: ``cpus`` less what the other processes load (the load less the one runnable thread of this
    process), rounded, between 1 and ``cpus``.
    """
    if cpus < 1:
        raise ValueError(f"cpus must be a positive integer, got {cpus!r}")
    if load < 0:
        raise ValueError(f"load must not be negative, got {load!r}")
    for name in (OVERRIDE, "NUMBA_NUM_THREADS"):
        value = env.get(name, "")
        if value:  # empty is unset, as after the shell's ``VAR= command``
            return _positive(name, value, cpus)
    others = max(0.0, load - 1.0)
    return max(1, min(cpus, int(cpus - others + 0.5)))


def machine() -> tuple[int, float]:
    """``(cpus this process may run on, load)`` of this machine: the load is the larger of the 1-minute load
    average and the number of threads runnable right now
    ([`runnable_now`][thermopylae_env.threads.runnable_now]). The average lags a load that has just started by
    a minute; the count alone flickers; the larger of the two is on the side of fewer threads, which costs
    little when it is wrong, where too many threads cost a collapse."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cpus = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - no load average (Windows)
        load = 0.0
    return cpus, max(load, float(runnable_now()))


def runnable_now(text: str | None = None) -> int:
    """Threads of the whole machine that are runnable at this instant (this one included): the fourth field
    of ``/proc/loadavg`` (``running/total``), or of ``text``; 0 where it cannot be read."""
    if text is None:
        try:
            with open("/proc/loadavg", encoding="ascii") as handle:
                text = handle.read()
        except OSError:  # pragma: no cover - not on Linux
            return 0
    fields = text.split()
    running = fields[3].partition("/")[0] if len(fields) > 3 else ""
    return int(running) if running.isdigit() else 0


def free_threads(now: float | None = None) -> int:
    """[`choose_threads`][thermopylae_env.threads.choose_threads] for this machine now (the reading is kept
    [`REFRESH_SECONDS`][thermopylae_env.threads.REFRESH_SECONDS])."""
    now = time.monotonic() if now is None else now
    if not _cache or now - _cache[0] >= REFRESH_SECONDS:
        cpus, load = machine()
        _cache[:] = [now, float(choose_threads(cpus, load, os.environ))]
    return int(_cache[1])


def _numba():  # noqa: ANN202
    """numba with its thread pool started, or ``None`` without numba.

    Starting numba's ``omp`` pool sets the OpenMP thread count of the calling thread, and torch reads its
    own count from the same OpenMP runtime when both load GNU's: a torch limited to one thread before the
    first kernel ran would train on every core afterwards, its threads competing with the engines. The
    pool is started here, once, and torch's count put back."""
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is optional
        return None
    if not _launched:
        torch = sys.modules.get("torch")
        kept = torch.get_num_threads() if torch is not None else None
        numba.get_num_threads()  # starts the pool
        if kept is not None and torch.get_num_threads() != kept:
            torch.set_num_threads(kept)
        _launched.append(True)
    return numba


@contextlib.contextmanager
def kernel_threads(chunks: int) -> Iterator[int]:
    """Run numba's parallel kernels inside on [`free_threads`][thermopylae_env.threads.free_threads] threads,
    at most ``chunks`` (the tasks of the kernel's loop) and at most ``numba.get_num_threads()``; yields that
    count. Where it is 1 the caller runs its serial path (or the parallel kernel runs on this thread alone):
    no thread pool is woken."""
    numba = _numba()
    if numba is None:  # pragma: no cover - the interpreted kernels have no threads
        yield 1
        return
    before = numba.get_num_threads()
    count = max(1, min(chunks, before, free_threads()))
    if count == before:
        yield count
        return
    numba.set_num_threads(count)
    try:
        yield count
    finally:
        numba.set_num_threads(before)


def configure_environment(env: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Passive waiting for every OpenMP runtime, and one OpenBLAS thread if NumPy is not loaded yet (the
    package's matrix products are small, and OpenBLAS's threads spin while they wait); variables already set
    are kept. Returns the settings now in ``env`` (default ``os.environ``)."""
    env = os.environ if env is None else env
    for name, value in _PASSIVE.items():
        env.setdefault(name, value)
    if "numpy" not in sys.modules:
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return {name: env.get(name, "") for name in (*_PASSIVE, "OPENBLAS_NUM_THREADS")}


def configure_torch(threads: int | None = None) -> int | None:
    """torch's intra-op threads: ``threads``, or [`free_threads`][thermopylae_env.threads.free_threads] when
    ``None``, if torch is imported (this does not import it); returns the count set, or ``None`` without
    torch."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    count = free_threads() if threads is None else threads
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"threads must be a positive integer, got {count!r}")
    _numba()  # numba's pool first: starting it later would reset torch's count (see _numba)
    torch.set_num_threads(count)
    return count
