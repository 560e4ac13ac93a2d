"""Evaluation: playing and scoring games ([`games`][thermopylae_agents.evaluation.games]), tables and plots
([`tables`][thermopylae_agents.evaluation.tables]), statistics, batched duel play on the native engine
([`duel_batch`][thermopylae_agents.evaluation.duel_batch]), exploitability, the co-op upper bound, the duel
table, replays and rendered games.

The attributes of the old flat ``thermopylae_agents.evaluation`` module are still found here (with a
``DeprecationWarning``); new code imports them from the module that defines them.
"""

from thermopylae_agents._moved import forward_attributes

__getattr__ = forward_attributes(__name__)
