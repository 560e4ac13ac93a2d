"""The co-operative game (Game A), one module per part:

* [`layout`][thermopylae_env.coop.layout]: the action blocks, the observation pieces and the action codec;
* [`state`][thermopylae_env.coop.state]: [`CoopState`][thermopylae_env.coop.state.CoopState],
  [`Phase`][thermopylae_env.coop.state.Phase] and the dice;
* [`rules`][thermopylae_env.coop.rules]: the reference engine
  [`CoopGame`][thermopylae_env.coop.rules.CoopGame] (the fight is
  [`CoopGame.resolve_fight`][thermopylae_env.coop.rules.CoopGame.resolve_fight]);
* [`observation`][thermopylae_env.coop.observation]: [`CoopView`][thermopylae_env.coop.observation.CoopView]
  and ``state_from_observation``;
* [`kernel`][thermopylae_env.coop.kernel]: the compiled twin of the rules;
  [`vector_engine`][thermopylae_env.coop.vector_engine] and [`chance`][thermopylae_env.coop.chance]: many
  games at once and the chance they draw; [`vector`][thermopylae_env.coop.vector]: the Gymnasium vector env;
  [`env`][thermopylae_env.coop.env]: ``thermopylae/Coop-v0``; [`sb3`][thermopylae_env.coop.sb3]: the SB3
  ``VecEnv``; [`render`][thermopylae_env.coop.render]: the picture of the table.

Import each name from the module that defines it.
"""
