"""Policies: agent spec strings ([`registry`][thermopylae_agents.policies.registry]), SB3 models
([`sb3_agent`][thermopylae_agents.policies.sb3_agent], the one place that unpickles them), frozen and
pickle-free policies with the NumPy fight odds they read
([`fight_odds`][thermopylae_agents.policies.fight_odds]), and the shipped policy files with their model
cards (this folder)."""
