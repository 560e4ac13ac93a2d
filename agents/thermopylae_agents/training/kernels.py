"""One choice of CPU kernels for training, so that a seed gives the same weights on any x86-64 machine.

Why: torch picks its vectorized ATen kernels (AVX512, AVX2, ...) and MKL its matrix products by the
instruction sets of the CPU, and NumPy's OpenBLAS does the same; each choice rounds differently, and PPO
amplifies a difference in the last bit into a different policy. Pinning all three to their AVX2 code
paths (what every x86-64 CPU of the last decade runs) makes the floating-point work the same everywhere.
OpenBLAS also gets one thread, for speed (its matrices here are small).

The settings are environment variables that the libraries read once, when first used:
[`pin_kernels`][thermopylae_agents.training.kernels.pin_kernels] must run before NumPy and torch are imported
(``scripts/train.py`` calls it first). A variable the user has set is left as it is.
"""

from __future__ import annotations

import os

__all__ = ["PINNED", "kernel_settings", "pin_kernels"]

PINNED = {
    "ATEN_CPU_CAPABILITY": "avx2",  # torch's vectorized element-wise and reduction kernels
    "MKL_CBWR": "AVX2",  # MKL's conditional numerical reproducibility: the AVX2 code path on any CPU
    "OPENBLAS_CORETYPE": "Haswell",  # NumPy's matrix products (FrozenPolicy, the report's players)
    # One OpenBLAS thread: a frozen opponent multiplies a few dozen rows at a time, and OpenBLAS's
    # threads waiting on cores that the envs and torch already use made it many times slower.
    "OPENBLAS_NUM_THREADS": "1",
}


def pin_kernels() -> dict[str, str]:
    """Set the variables of [`PINNED`][thermopylae_agents.training.kernels.PINNED] that are not set yet;
    returns the values now in force."""
    for name, value in PINNED.items():
        os.environ.setdefault(name, value)
    return kernel_settings()


def kernel_settings() -> dict[str, str]:
    """The kernel choice of this process: the variables of
    [`PINNED`][thermopylae_agents.training.kernels.PINNED] and torch's capability in use."""
    settings = {name: os.environ.get(name, "") for name in PINNED}
    try:
        import torch  # extra: train

        settings["torch_cpu_capability"] = str(torch.backends.cpu.get_cpu_capability())
    except ImportError:  # pragma: no cover - torch is part of the train extra
        pass
    return settings
