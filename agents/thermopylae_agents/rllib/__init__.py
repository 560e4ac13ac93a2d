"""Training on Ray RLlib (PPO with action masking, the duel as a multi-agent game) and sweeps on Ray Tune.

Everything here needs the ``rllib`` extra (``pip install -e '.[rllib]'``): Ray with RLlib and Tune. A
trained policy is exported to a data-only ``.npz`` file that needs only NumPy to play
([`thermopylae_agents.policies.rllib_policy`][]:
[`RLlibAgent`][thermopylae_agents.policies.rllib_policy.RLlibAgent],
[`load_rllib_agent`][thermopylae_agents.policies.rllib_policy.load_rllib_agent]), so evaluation, play and
hints use it without Ray. Modules:

* [`envs`][thermopylae_agents.rllib.envs]: the co-op game with dict observations ``{"observations",
  "action_mask"}`` (single and native vector engine) and the duel as an RLlib ``MultiAgentEnv``.
* [`modules`][thermopylae_agents.rllib.modules]: the masked PPO RLModule and the duel's heuristic RLModule.
* [`config`][thermopylae_agents.rllib.config]: the PPO settings and the RLlib configs (co-op, duel), and the
  audit of sampled actions against the mask.
* [`train`][thermopylae_agents.rllib.train]: the training loop with checkpoints and export, and evaluation.
* [`sweep`][thermopylae_agents.rllib.sweep]: the Ray Tune sweep over co-op PPO hyperparameters (ASHA).

The command line is ``thermopylae rllib {train,sweep}`` ([`thermopylae_agents.cli.rllib`][]).
"""
