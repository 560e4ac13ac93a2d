"""Train PPO agents: ``python scripts/train.py {coop,duel-greek,duel-persian,selfplay} [options]``.

All logic is in :mod:`thermopylae_agents.training` (also installed as the ``thermopylae-train`` command).
The CPU kernels are pinned first (:mod:`thermopylae_agents.players.kernels`), before NumPy and torch load, so that
a seed trains the same weights on any x86-64 machine.
"""

from thermopylae_agents.players.kernels import pin_kernels

pin_kernels()

from thermopylae_agents.training import main  # noqa: E402  (after the kernels are pinned)

if __name__ == "__main__":
    raise SystemExit(main())
