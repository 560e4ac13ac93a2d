"""Evaluation: playing and scoring games ([`games`][thermopylae_agents.evaluation.games]), tables and plots
([`tables`][thermopylae_agents.evaluation.tables]), statistics
([`stats`][thermopylae_agents.evaluation.stats]), batched duel play on the native engine
([`duel_batch`][thermopylae_agents.evaluation.duel_batch]), the co-op upper bound, the duel table, replays
and rendered games. Import each name from the module that defines it.
"""
