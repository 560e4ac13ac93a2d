"""Policies: agent spec strings (:mod:`~.registry`), SB3 models (:mod:`~.sb3_agent`, the one place that
unpickles them), frozen and pickle-free policies, and the shipped policy files with their model cards
(this folder)."""
