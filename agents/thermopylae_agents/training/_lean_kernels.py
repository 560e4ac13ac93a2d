"""The row lookups of the co-op odds tables in [`thermopylae_agents.training.lean_mlp`][], compiled.

Each observation reads four rows of the stacked odds tables (``rows``, (B, 4)); the forward pass adds them
to its hidden row, the backward pass adds the hidden row's gradient into them. In torch these are an
``embedding_bag`` and an ``index_add_``, which sort or copy far more than the few megabytes they touch;
as loops they run at memory speed. CPU tensors go through the numba loops (on the tensors' own memory),
others through torch.
"""

from __future__ import annotations

import numpy as np
import torch as th

try:
    from numba import njit
except ImportError:  # pragma: no cover - numba is a dependency; without it the torch path runs
    njit = None

__all__ = ["add_rows", "gather_rows"]


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


if njit is not None:
    _gather_loop = njit(cache=True, nogil=True)(_gather_loop)
    _add_loop = njit(cache=True, nogil=True)(_add_loop)


def _numpy_ready(*tensors: th.Tensor) -> bool:
    return njit is not None and all(t.device.type == "cpu" and t.is_contiguous() for t in tensors)


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
