"""Evaluation: playing and scoring games (:mod:`~.games`), tables and plots (:mod:`~.tables`),
statistics, batched duel play on the native engine (:mod:`~.duel_batch`), exploitability, the co-op upper
bound, the duel table, replays and rendered games.

The attributes of the old flat ``thermopylae_agents.evaluation`` module are still found here (with a
``DeprecationWarning``); new code imports them from the module that defines them.
"""

from thermopylae_agents._moved import forward_attributes

__getattr__ = forward_attributes(__name__)
