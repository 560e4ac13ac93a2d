"""Train PPO agents: ``python scripts/train.py {coop,duel-greek,duel-persian,selfplay} [options]``.

The same as ``thermopylae train`` (:mod:`thermopylae_agents.cli.train`). The CPU kernels are pinned first
(:mod:`thermopylae_agents.players.kernels`), before NumPy and torch load, so that a seed trains the same
weights on any x86-64 machine.
"""

from thermopylae_agents.players.kernels import pin_kernels

pin_kernels()

from thermopylae_agents.cli.train import main  # noqa: E402  (after the kernels are pinned)

if __name__ == "__main__":
    raise SystemExit(main())
