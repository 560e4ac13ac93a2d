"""Players: the [`Agent`][thermopylae_agents.players.base.Agent] protocol, the co-op heuristic and search
players with the decoding and fight statistics they use. The duel's heuristic and random players are part
of the environments' definition: [`thermopylae_env.duel.opponents`][]. The co-op fight odds live with their
users: in NumPy with the pickle-free policies ([`thermopylae_agents.policies.fight_odds`][]), in torch with
training ([`thermopylae_agents.training.fight_features`][])."""
