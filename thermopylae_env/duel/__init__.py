"""The duel (Game B, Greek against Persian), one module per part, as in the co-op game's package:

* [`layout`][thermopylae_env.duel.layout]: the observation and action pieces, the sides and card kinds, and
  the action codec; [`config`][thermopylae_env.duel.config]: the size of the game (the full duel or a reduced
  one);
* [`state`][thermopylae_env.duel.state]: [`DuelState`][thermopylae_env.duel.state.DuelState],
  [`Phase`][thermopylae_env.duel.state.Phase] and the chance (shuffles, discard-card hits);
* [`rules`][thermopylae_env.duel.rules]: the reference engine
  [`DuelGame`][thermopylae_env.duel.rules.DuelGame] (the combat is
  [`DuelGame.resolve_combat`][thermopylae_env.duel.rules.DuelGame.resolve_combat]; the observation is
  written by [`DuelGame.observe`][thermopylae_env.duel.rules.DuelGame.observe]);
* [`kernel`][thermopylae_env.duel.kernel]: the compiled twin of the rules;
  [`opponents`][thermopylae_env.duel.opponents] and
  [`opponents_kernel`][thermopylae_env.duel.opponents_kernel]: the built-in players and their compiled
  twins; [`vector_engine`][thermopylae_env.duel.vector_engine]: many games at once;
  [`vector`][thermopylae_env.duel.vector]: the Gymnasium vector envs; [`env`][thermopylae_env.duel.env]:
  ``DuelGreek-v0`` / ``DuelPersian-v0``; [`sb3`][thermopylae_env.duel.sb3]: the SB3 ``VecEnv``;
  [`pettingzoo`][thermopylae_env.duel.pettingzoo]: the PettingZoo views (public as
  ``thermopylae_env.duel_v1``); [`render`][thermopylae_env.duel.render]: the picture of the table.

Import each name from the module that defines it.
"""
