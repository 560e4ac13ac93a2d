"""The duel's PettingZoo environment under PettingZoo's ``<game>_v<version>`` name (``from thermopylae_env
import duel_v1``), as PettingZoo's own games are published: ``env``, ``raw_env`` and ``parallel_env`` of
[`thermopylae_env.duel.pettingzoo`][], where the code lives. The version goes up when the same seed and
actions could play out differently (v1: ``max_cycles`` counts cycles; see the CHANGELOG)."""

from thermopylae_env.duel.pettingzoo import env, parallel_env, raw_env

__all__ = ["env", "parallel_env", "raw_env"]
