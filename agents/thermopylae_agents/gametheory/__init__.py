"""Exact game theory on reduced duels (``thermopylae_env.duel.config``): the whole extensive-form tree over
the reference engine ([`tree`][thermopylae_agents.gametheory.tree]), CFR+ and exact best responses
([`cfr`][thermopylae_agents.gametheory.cfr]), and players as tree strategies with their exact exploitability
([`players`][thermopylae_agents.gametheory.players])."""
