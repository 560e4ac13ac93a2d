"""Train PPO agents: ``python scripts/train.py {coop,duel-greek,duel-persian,selfplay} [options]``.

The same as ``thermopylae train`` (:mod:`thermopylae_agents.cli.train`). The CPU kernels are pinned first
(:mod:`thermopylae_agents.training.kernels`), before torch loads, so that a seed trains the same weights on
any x86-64 machine, and the process's thread settings are made (passive OpenMP waiting, one OpenBLAS
thread: :func:`thermopylae_env.threads.configure_environment`), as the ``thermopylae`` command makes them.
"""

from thermopylae_agents.training.kernels import pin_kernels
from thermopylae_env.threads import configure_environment

# Both before the training modules import torch: torch reads its kernel choice and its OpenMP runtime its
# waiting policy once, when they load.
pin_kernels()
configure_environment()

from thermopylae_agents.cli.train import main  # noqa: E402  (after the settings above)

if __name__ == "__main__":
    raise SystemExit(main())
