"""Agents for the thermopylae environments, in layers that import one way:

    players      the Agent protocol, co-op heuristic and search players
    policies     agent spec strings, SB3 and pickle-free policies (and their NumPy fight odds), the shipped
                 policy files
    evaluation   scoring games, statistics, batched cross-play, the co-op bound, replays
    training     PPO (SB3 and the native loop), self-play, best responses, exploiters, imitation, the torch
                 fight features, CPU kernel pinning
    rllib        Ray RLlib training and sweeps
    cli          the ``thermopylae`` command and its subcommands

``fight_features`` (this package's top) and ``training`` keep the class paths that saved SB3 models
pickle; import every other name from the module that defines it.
"""
