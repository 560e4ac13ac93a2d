"""Masked PPO on the native co-op vector engine, in one file (CleanRL style): ``python scripts/ppo_native.py
--help``.

The file to read is :mod:`thermopylae_agents.ppo_native` (``agents/thermopylae_agents/ppo_native.py``);
the same command is installed as ``thermopylae-ppo-native``. Without torch or tensorboard this says in one
line which extra to install.
"""

from thermopylae_agents.console import run

if __name__ == "__main__":
    raise SystemExit(run("ppo_native.py", "thermopylae_agents.ppo_native:main"))
