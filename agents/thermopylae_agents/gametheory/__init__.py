"""Exact game theory on reduced duels (``thermopylae_env.duel.config``): the whole extensive-form tree over
the reference engine (:mod:`.tree`), CFR+ and exact best responses (:mod:`.cfr`), and players as tree
strategies with their exact exploitability (:mod:`.players`)."""
