"""The fast learner's small per-row steps, compiled: the co-op odds tables' rows (which an observation
reads, added forward, added into backward) and masked sampling.

Each is a handful of scalar operations per row that torch would run as a dozen whole-array operations
(or, for the table rows, an ``embedding_bag`` and an ``index_add_`` that sort or copy far more than the
few megabytes they touch); as loops they run at memory speed. CPU tensors go through the numba loops, on
the tensors' own memory; others through the torch code beside each loop, which computes the same thing.
"""

from __future__ import annotations

import numpy as np
import torch as th

try:
    from numba import njit
except ImportError:  # pragma: no cover - numba is a dependency; without it the torch path runs
    njit = None

__all__ = ["COMPILED", "add_rows", "gather_rows", "odds_rows", "sample_masked"]

# The loops run where this is true (and numba is there); tests set it false to run the torch code, which
# is what other devices (a GPU) run.
COMPILED = True


def _gather_loop(table: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
    for b in range(rows.shape[0]):
        for k in range(rows.shape[1]):
            row = rows[b, k]
            for h in range(out.shape[1]):
                out[b, h] += table[row, h]


def _add_loop(grad: np.ndarray, rows: np.ndarray, table_grad: np.ndarray) -> None:
    for b in range(rows.shape[0]):
        for k in range(rows.shape[1]):
            row = rows[b, k]
            for h in range(grad.shape[1]):
                table_grad[row, h] += grad[b, h]


def _odds_rows_loop(obs: np.ndarray, columns: np.ndarray, scale: np.float32, low: int, high: int,
                    max_dice: int, thresholds: int, empty_row: int, rows: np.ndarray) -> None:
    slot1, slot2, marker3, marker6 = columns[0], columns[1], columns[2], columns[3]
    for b in range(obs.shape[0]):
        location = int(min(max(np.rint(obs[b, marker3] + obs[b, marker6]), 0), max_dice))
        white1 = int(min(max(np.rint(obs[b, columns[4]] * scale), low), high))
        red1 = int(min(max(np.rint(obs[b, columns[5]] * scale), low), high))
        white2 = int(min(max(np.rint(obs[b, columns[6]] * scale), low), high))
        red2 = int(min(max(np.rint(obs[b, columns[7]] * scale), low), high))
        first = obs[b, slot1] > 0.5
        both = first and obs[b, slot2] > 0.5
        base = location * thresholds - low
        rows[b, 0] = ((base + white1) * 4 + 0) if first else empty_row
        rows[b, 1] = ((base + red1) * 4 + 1) if first else empty_row
        rows[b, 2] = ((base + max(white1, white2)) * 4 + 2) if both else empty_row
        rows[b, 3] = ((base + max(white1, red2)) * 4 + 3) if both else empty_row


def _sample_loop(logits: np.ndarray, masks: np.ndarray, uniform: np.ndarray, actions: np.ndarray,
                 log_probs: np.ndarray) -> None:
    for b in range(logits.shape[0]):
        top = -np.inf
        last = -1
        for a in range(logits.shape[1]):
            if masks[b, a]:
                last = a
                if logits[b, a] > top:
                    top = logits[b, a]
        total = 0.0
        for a in range(logits.shape[1]):
            if masks[b, a]:
                total += np.exp(logits[b, a] - top)
        target = uniform[b] * total
        chosen = last  # the last legal action takes what rounding leaves above the sum
        running = 0.0
        for a in range(logits.shape[1]):
            if masks[b, a]:
                running += np.exp(logits[b, a] - top)
                if running > target:
                    chosen = a
                    break
        actions[b] = chosen
        log_probs[b] = logits[b, chosen] - top - np.log(total)


if njit is not None:
    _gather_loop = njit(cache=True, nogil=True)(_gather_loop)
    _add_loop = njit(cache=True, nogil=True)(_add_loop)
    _odds_rows_loop = njit(cache=True, nogil=True)(_odds_rows_loop)
    _sample_loop = njit(cache=True, nogil=True)(_sample_loop)


def _numpy_ready(*tensors: th.Tensor) -> bool:
    on_cpu = all(t.device.type == "cpu" and t.is_contiguous() for t in tensors)
    return COMPILED and njit is not None and on_cpu


def gather_rows(table: th.Tensor, rows: th.Tensor, out: th.Tensor) -> None:
    """``out[b] += sum_k table[rows[b, k]]`` in place (float32 ``table`` (R, H), int32 ``rows`` (B, K),
    float32 ``out`` (B, H))."""
    if _numpy_ready(table, rows, out):
        _gather_loop(table.numpy(), rows.numpy(), out.numpy())
    else:
        out += th.nn.functional.embedding_bag(rows.long(), table, mode="sum")


def add_rows(grad: th.Tensor, rows: th.Tensor, table_grad: th.Tensor) -> None:
    """``table_grad[rows[b, k]] += grad[b]`` for every ``b`` and ``k``, in place."""
    if _numpy_ready(grad, rows, table_grad):
        _add_loop(grad.numpy(), rows.numpy(), table_grad.numpy())
    else:
        for k in range(rows.shape[1]):
            table_grad.index_add_(0, rows[:, k].long(), grad)


def odds_rows(obs: th.Tensor, columns: th.Tensor, scale: float, low: int, high: int, max_dice: int,
              thresholds: int, empty_row: int) -> th.Tensor | None:
    """The four odds-table rows each co-op observation reads (int32 (B, 4)), or ``None`` where the loop
    cannot run (the caller then computes them with torch). ``columns``: the observation columns of slot 1's
    and slot 2's presence, markers 3 and 6, and the four slot values."""
    if not _numpy_ready(obs) or obs.dtype != th.float32:
        return None
    rows = th.empty((obs.shape[0], 4), dtype=th.int32)
    _odds_rows_loop(obs.numpy(), columns.numpy(), np.float32(scale), low, high, max_dice, thresholds,
                    empty_row, rows.numpy())
    return rows


def sample_masked(
    logits: th.Tensor, masks: th.Tensor, uniform: th.Tensor
) -> tuple[th.Tensor, th.Tensor] | None:
    """One action per row of the masked distribution of ``logits`` (B, A), by the uniform draws
    ``uniform`` (B,) against its cumulative probabilities, and its log-probability; ``None`` where the loop
    cannot run. A row must have a legal action."""
    if not _numpy_ready(logits, masks, uniform) or logits.dtype != th.float32:
        return None
    actions = th.empty(logits.shape[0], dtype=th.long)
    log_probs = th.empty(logits.shape[0], dtype=th.float32)
    _sample_loop(logits.numpy(), masks.numpy(), uniform.numpy(), actions.numpy(), log_probs.numpy())
    return actions, log_probs
