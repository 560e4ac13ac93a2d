"""Agents for the thermopylae environments, in layers that import one way:

    players      the Agent protocol, co-op heuristic and search players, fight features, kernel pinning
    policies     agent spec strings, SB3 and pickle-free policies, the shipped policy files
    evaluation   scoring games, statistics, batched cross-play, exploitability, co-op bound, replays
    training     PPO (SB3 and the native loop), self-play, exploiters, imitation
    rllib        Ray RLlib training and sweeps
    cli          the ``thermopylae`` command and its subcommands

The old flat module paths still import (see `thermopylae_agents._moved`).
"""

from thermopylae_agents import _moved

_moved.install()
