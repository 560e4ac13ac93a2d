"""The thread settings of the whole process: numba's parallel kernels, OpenMP, OpenBLAS and torch.

Why one place: several seeds trained at once on one machine are normal, and thread pools sized for an idle
machine collapse on a shared one. Two things go wrong there. Waiting threads that spin (OpenMP's default,
in numba's ``omp`` threading layer and in torch) burn the cores that the thread with the work needs, so a
parallel kernel or a policy forward runs many times slower than on one thread. And more threads than free
cores only adds hand-overs. So:

* every OpenMP runtime of the process waits passively (``OMP_WAIT_POLICY=passive``, and ``KMP_BLOCKTIME=0``
  for Intel's) and OpenBLAS gets one thread (its threads spin too):
  [`configure_environment`][thermopylae_env.threads.configure_environment]. These are settings of the whole
  process, so importing the package does not make them (a library leaves its host's environment alone): the
  package's entry points call it first (the ``thermopylae`` command and its ``thermopylae-NAME`` aliases,
  ``scripts/train.py``, ``scripts/evaluate.py``), and a library user who wants them calls it once, right
  after ``import thermopylae_env`` and before importing torch or stepping a vector env (an OpenMP runtime
  reads the variables once, when it loads: torch's when torch is imported, numba's at the first parallel
  kernel). NumPy, which the package's import loads, has read ``OPENBLAS_NUM_THREADS`` already: the call
  sets the count of its OpenBLAS directly. A variable the user has set is left as it is.
* the engines run a parallel kernel on [`kernel_threads`][thermopylae_env.threads.kernel_threads] threads: the
  free cores (the CPUs this process may run on, less the load that other processes put on them), never more
  than the kernel's chunks of work, and the serial path when that is one thread. The load is the larger of the
  load average and the threads runnable at the moment of reading; it is re-read every
  [`REFRESH_SECONDS`][thermopylae_env.threads.REFRESH_SECONDS], so a long run follows the machine.
* the load average counts this process's own threads too: a busy process alone on an idle machine would
  otherwise read its own work as another's and shrink towards one thread. Its own part is estimated from its
  CPU time ([`own_load`][thermopylae_env.threads.own_load]): between two readings (monotonic time, CPU
  seconds of all its threads) it ran ``CPU / elapsed`` threads on average, and the estimate is that rate
  averaged as the kernel averages the runnable threads, exponentially with a one-minute time constant
  ([`LOAD_WINDOW`][thermopylae_env.threads.LOAD_WINDOW]), so it follows the kernel's figure however often it
  is read (once per [`REFRESH_SECONDS`][thermopylae_env.threads.REFRESH_SECONDS] at most: two clock reads and
  an ``exp``). The other processes' load is the load less that part. The estimate counts threads that ran;
  the kernel also counts threads that waited for a core, so on an overloaded machine it is low, which errs
  on the side of fewer threads. It starts when this module loads (in a forked child, at its first reading).
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
import ctypes
import math
import os
import sys
import time
import warnings
from collections.abc import Iterator, Mapping, MutableMapping

__all__ = [
    "LOAD_WINDOW",
    "OVERRIDE",
    "OwnLoad",
    "REFRESH_SECONDS",
    "choose_threads",
    "configure_environment",
    "configure_torch",
    "free_threads",
    "kernel_threads",
    "machine",
    "own_load",
    "runnable_now",
]

OVERRIDE = "THERMOPYLAE_NUM_THREADS"  # a fixed thread count for the kernels (and OpenBLAS, torch defaults)
REFRESH_SECONDS = 10.0  # how long one reading of the load average is used
LOAD_WINDOW = 60.0  # the time constant of the kernel's 1-minute load average, an exponential average

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


def choose_threads(cpus: int, load: float, env: Mapping[str, str], *, own: float = 1.0) -> int:
    """Threads for a parallel kernel, given the CPUs this process may use, the load of the machine, the
    environment variables and ``own``, the part of ``load`` that is this process's own threads (default:
    its one runnable thread).

    ``THERMOPYLAE_NUM_THREADS``, else a ``NUMBA_NUM_THREADS`` the user set, fixes the count: plain ASCII
    digits of a positive integer (an empty value is unset; anything else raises a one-line ``ValueError``
    naming the variable), at most ``cpus`` (a larger count is capped, with one warning). Otherwise the
    free cores: ``cpus`` less what the other processes load (``load - own``), rounded, between 1 and
    ``cpus``. A process whose own threads are the whole load gets every core: ``choose_threads(16, 16.0, {},
    own=16.0)`` is 16.
    """
    if cpus < 1:
        raise ValueError(f"cpus must be a positive integer, got {cpus!r}")
    if load < 0:
        raise ValueError(f"load must not be negative, got {load!r}")
    if own < 0:
        raise ValueError(f"own must not be negative, got {own!r}")
    for name in (OVERRIDE, "NUMBA_NUM_THREADS"):
        value = env.get(name, "")
        if value:  # empty is unset, as after the shell's ``VAR= command``
            return _positive(name, value, cpus)
    others = max(0.0, load - own)
    return max(1, min(cpus, int(cpus - others + 0.5)))


class OwnLoad:
    """This process's own part of the kernel's 1-minute load average, estimated from its CPU time.

    Fed readings ``(monotonic seconds, CPU seconds of this process)``; between two readings the process ran
    ``CPU / elapsed`` threads on average, and ``average`` decays
    towards that rate as the kernel's average does, with the time constant
    [`LOAD_WINDOW`][thermopylae_env.threads.LOAD_WINDOW]: ``average * w + rate * (1 - w)``,
    ``w = exp(-elapsed / LOAD_WINDOW)``, whatever the spacing of the readings."""

    def __init__(self, now: float, cpu_seconds: float) -> None:
        self.average = 0.0  # the threads of this process that the kernel's average counts, estimated
        self._last = (now, cpu_seconds)

    def update(self, now: float, cpu_seconds: float) -> float:
        """Take the reading ``(now, cpu_seconds)``; returns the new average."""
        then, spent = self._last
        if cpu_seconds < spent:  # a forked child: its CPU clock started again, its load with it
            self.average, self._last = 0.0, (now, cpu_seconds)
            return self.average
        elapsed = now - then
        if elapsed <= 0:
            return self.average
        weight = math.exp(-elapsed / LOAD_WINDOW)
        self.average = self.average * weight + (cpu_seconds - spent) / elapsed * (1.0 - weight)
        self._last = (now, cpu_seconds)
        return self.average


# pid -> its OwnLoad, started when this module loads so that the first reading covers the run so far
_own: dict[int, OwnLoad] = {os.getpid(): OwnLoad(time.monotonic(), time.process_time())}


def own_load(now: float | None = None, cpu_seconds: float | None = None) -> float:
    """This process's average runnable threads over the last minute as the load average counts them
    (an [`OwnLoad`][thermopylae_env.threads.OwnLoad] fed ``time.monotonic()`` and ``time.process_time()``,
    the CPU seconds of all its threads, unless given)."""
    now = time.monotonic() if now is None else now
    cpu_seconds = time.process_time() if cpu_seconds is None else cpu_seconds
    pid = os.getpid()
    if pid not in _own:  # a forked child, with its parent's reading: its own starts now
        _own.clear()
        _own[pid] = OwnLoad(now, cpu_seconds)
        return 0.0
    return _own[pid].update(now, cpu_seconds)


def machine() -> tuple[int, float, float]:
    """``(cpus this process may run on, load, own)`` of this machine, for
    [`choose_threads`][thermopylae_env.threads.choose_threads].

    ``own`` is this process's part of the 1-minute load average
    ([`own_load`][thermopylae_env.threads.own_load]). The load is the larger of that average and the threads
    runnable right now ([`runnable_now`][thermopylae_env.threads.runnable_now]), in which this process is the
    one thread that reads them (its kernels' threads wait between kernels) and is counted at ``own``
    instead, so that ``load - own`` is the other processes' load either way. The average lags a load that
    has just started by a minute; the count alone flickers; the larger of the two is on the side of fewer
    threads, which costs little when it is wrong, where too many threads cost a collapse."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cpus = os.cpu_count() or 1
    try:
        average = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - no load average (Windows)
        average = 0.0
    own = own_load()
    return cpus, max(average, runnable_now() - 1.0 + own), own


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
        cpus, load, own = machine()
        _cache[:] = [now, float(choose_threads(cpus, load, os.environ, own=own))]
    return int(_cache[1])


def _numba():  # noqa: ANN202
    """numba with its thread pool started, or ``None`` without numba.

    Starting numba's ``omp`` pool sets the OpenMP thread count of the calling thread, and torch reads its
    own count from the same OpenMP runtime when both load GNU's: a torch limited to one thread before the
    first kernel ran would train on every core afterwards, its threads competing with the engines. The
    pool is started here, once, and torch's count put back."""
    try:
        import numba  # late: importing the thread settings loads no engine (see the module docstring)
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
    """The process-wide settings of the package's entry points: passive waiting for every OpenMP runtime
    (``OMP_WAIT_POLICY=passive``, ``KMP_BLOCKTIME=0``) and one OpenBLAS thread (``OPENBLAS_NUM_THREADS=1``:
    the package's matrix products are small, and OpenBLAS's threads spin while they wait). Variables already
    set are kept. Returns the settings now in ``env`` (default ``os.environ``).

    Importing the package does not call it. The ``thermopylae`` command, its aliases and ``scripts/`` call
    it first; a library user who wants the same calls it once, after importing ``thermopylae_env`` and
    before importing torch or running the first parallel kernel (an OpenMP runtime reads the variables
    once, when it loads). An OpenBLAS that NumPy has loaded already read its variable: with ``os.environ``
    and no count of the user's, its thread count is set to one as well (see `_limit_openblas`); child
    processes read the variable.
    """
    target = os.environ if env is None else env
    for name, value in _PASSIVE.items():
        target.setdefault(name, value)
    if "OPENBLAS_NUM_THREADS" not in target:
        target["OPENBLAS_NUM_THREADS"] = "1"
        if env is None and "numpy" in sys.modules:
            _limit_openblas(1)
    return {name: target.get(name, "") for name in (*_PASSIVE, "OPENBLAS_NUM_THREADS")}


# numpy's wheels rename OpenBLAS's symbols (scipy-openblas, 64-bit integers); a system OpenBLAS keeps them
_OPENBLAS_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                     "openblas_set_num_threads64_", "openblas_set_num_threads")


def _limit_openblas(count: int) -> int:
    """Set the thread count of every OpenBLAS this process has loaded, through the library's own
    ``openblas_set_num_threads`` (the variable is read once, when the library loads); returns how many
    libraries were set: 0 where none is loaded or ``/proc/self/maps`` cannot be read (not Linux)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {line.split(maxsplit=5)[5].strip() for line in maps
                     if "openblas" in line.rpartition("/")[2].lower() and len(line.split(maxsplit=5)) == 6}
    except OSError:  # pragma: no cover - not Linux
        return 0
    done = 0
    for path in sorted(paths):
        try:  # RTLD_NOLOAD: the copy already loaded, never a second one
            library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        except OSError:  # a file replaced since it was loaded ("(deleted)")
            continue
        setter = next((getattr(library, name) for name in _OPENBLAS_SETTERS if hasattr(library, name)), None)
        if setter is not None:
            setter.argtypes, setter.restype = [ctypes.c_int], None
            setter(count)
            done += 1
    return done


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
