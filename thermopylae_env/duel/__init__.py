"""The duel (Game B, Greek against Persian), one module per part:

* [`layout`][thermopylae_env.duel.layout]: the observation and action pieces, the sides and card kinds, and
  the action codec;
* [`rules`][thermopylae_env.duel.rules]: the reference engine
  [`DuelGame`][thermopylae_env.duel.rules.DuelGame] and [`DuelState`][thermopylae_env.duel.rules.DuelState]
  (the combat is [`DuelGame.resolve_combat`][thermopylae_env.duel.rules.DuelGame.resolve_combat]; the
  observation is written by [`DuelGame.observe`][thermopylae_env.duel.rules.DuelGame.observe]);
  [`config`][thermopylae_env.duel.config]: the size of the game (the full duel or a reduced one);
* [`kernel`][thermopylae_env.duel.kernel], [`vector`][thermopylae_env.duel.vector]: the compiled twin and the
  vector envs; [`env`][thermopylae_env.duel.env]: ``DuelGreek-v0`` / ``DuelPersian-v0``;
  [`sb3`][thermopylae_env.duel.sb3]: the SB3 ``VecEnv``; [`opponents`][thermopylae_env.duel.opponents]: the
  built-in players; [`pettingzoo`][thermopylae_env.duel.pettingzoo]: the PettingZoo views (public as
  ``thermopylae_env.duel_v1``); [`render`][thermopylae_env.duel.render]: the picture of the table.

Import each name from the module that defines it.
"""
