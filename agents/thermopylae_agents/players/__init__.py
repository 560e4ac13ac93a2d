"""Players: the :class:`~thermopylae_agents.players.base.Agent` protocol, the random, heuristic and search
players of both games, the batched duel players, and the fight features and kernels they use."""
