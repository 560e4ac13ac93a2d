"""Agents for the thermopylae environments, in layers that import one way:

    players      the Agent protocol, co-op heuristic and search players
    policies     agent spec strings, SB3 and pickle-free policies (and their NumPy fight odds), the shipped
                 policy files
    gametheory   exact game theory on reduced duels: the game tree, CFR+, exact exploitability
    evaluation   scoring games, statistics, batched cross-play, the co-op bound, replays
    training     PPO (SB3 and the native loop), self-play, best responses, exploiters, imitation, the torch
                 fight features, CPU kernel pinning
    rllib        Ray RLlib training and sweeps
    web          the browser app of ``thermopylae web``
    cli          the ``thermopylae`` command and its subcommands
    openspiel    both games as OpenSpiel games: it imports only the environments, and nothing imports it

A layer imports only from the layers before it in this list (and from ``thermopylae_env``), counting imports
inside functions and modules loaded by name; ``tests/integration/test_architecture.py`` reads the list
from here. ``fight_features`` (this package's top) and ``training`` keep the class paths that saved SB3
models pickle; import every other name from the module that defines it.
"""
