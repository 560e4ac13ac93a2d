"""The hand-written duel players; they live in :mod:`thermopylae_env.opponents` (they are part of the duel
environments' definition, ``opponent="heuristic"``) and are re-exported here for the agents code."""

from thermopylae_env.opponents import HeuristicGreek, HeuristicPersian, keep_value

__all__ = ["HeuristicGreek", "HeuristicPersian", "keep_value"]
