"""Players: the [`Agent`][thermopylae_agents.players.base.Agent] protocol, the co-op heuristic and search
players with the decoding and fight statistics they use, the co-op fight features (NumPy and torch) and the
CPU kernel pinning. The duel's heuristic and random players are part of the environments'
definition: [`thermopylae_env.duel.opponents`][]."""
