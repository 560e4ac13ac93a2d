"""``thermopylae_agents.fight_features.CoopFightFeatures``: the module path that the co-op SB3 models saved
between the split of ``training`` and the ``players`` package pickle their features extractor under.

An SB3 ``.zip`` stores its ``policy_kwargs`` (in the zip's ``data`` entry) as a cloudpickle, which names
the class by the module that defined it when the model was saved: the shipped
``policies/coop_{2,3,4}p_maskable_ppo.zip`` and users' runs of that time name this module. The class
lives in [`thermopylae_agents.training.fight_features`][]; import it from there.
"""

from thermopylae_agents.training.fight_features import CoopFightFeatures

__all__ = ["CoopFightFeatures"]
