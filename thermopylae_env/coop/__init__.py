"""The co-operative game (Game A), one module per part:

* [`layout`][thermopylae_env.coop.layout]: the action blocks, the observation pieces and the action codec;
* [`state`][thermopylae_env.coop.state]: [`CoopState`][thermopylae_env.coop.state.CoopState],
  [`Phase`][thermopylae_env.coop.state.Phase] and the dice;
* [`rules`][thermopylae_env.coop.rules]: the reference engine
  [`CoopGame`][thermopylae_env.coop.rules.CoopGame] (the fight is
  [`CoopGame.resolve_fight`][thermopylae_env.coop.rules.CoopGame.resolve_fight]);
* [`observation`][thermopylae_env.coop.observation]: [`CoopView`][thermopylae_env.coop.observation.CoopView]
  and ``state_from_observation``;
* [`kernel`][thermopylae_env.coop.kernel], [`vector`][thermopylae_env.coop.vector]: the compiled twin and the
  vector env; [`env`][thermopylae_env.coop.env]: ``thermopylae/Coop-v0``; [`sb3`][thermopylae_env.coop.sb3]:
  the SB3 ``VecEnv``; [`render`][thermopylae_env.coop.render]: the picture of the table.

This package re-exports the names the former single module ``thermopylae_env.coop`` had, so
``from thermopylae_env.coop import CoopGame`` keeps working; inside the project, import a name from the
module that defines it.
"""

from __future__ import annotations

from thermopylae_env.cards import PERSIAN_DECK_SIZE
from thermopylae_env.coop.layout import (
    DECLINE,
    DISCARD_BASE,
    FIGHT_BASE,
    GIVE_BASE,
    GRAVEYARD_WIN,
    LOSS_MARKER,
    MAX_PLAYERS,
    MIN_VALUE,
    NUM_ACTIONS,
    NUM_SUPPORT,
    NUM_VALUES,
    OBS,
    OBS_SIZE,
    RETREAT,
    SPARTAN_DECK_SIZE,
    VALUE_SCALE,
    decode_action,
    discard_action,
    encode_action,
    fight_action,
    give_action,
)
from thermopylae_env.coop.observation import CoopView
from thermopylae_env.coop.rules import CoopGame
from thermopylae_env.coop.state import (
    END_REASONS,
    HAND_LIMIT,
    LOCATION_DIE_MARKERS,
    MAX_DICE,
    CoopState,
    Phase,
    roll_dice,
)

__all__ = [
    "NUM_ACTIONS",
    "OBS_SIZE",
    "RETREAT",
    "DECLINE",
    "FIGHT_BASE",
    "GIVE_BASE",
    "DISCARD_BASE",
    "MAX_PLAYERS",
    "HAND_LIMIT",
    "NUM_SUPPORT",
    "LOSS_MARKER",
    "GRAVEYARD_WIN",
    "MAX_DICE",
    "SPARTAN_DECK_SIZE",
    "Phase",
    "CoopGame",
    "CoopState",
    "CoopView",
    "fight_action",
    "give_action",
    "discard_action",
    "decode_action",
    "encode_action",
    "roll_dice",
    # also importable from the former module, outside its __all__
    "END_REASONS",
    "LOCATION_DIE_MARKERS",
    "MIN_VALUE",
    "NUM_VALUES",
    "OBS",
    "PERSIAN_DECK_SIZE",
    "VALUE_SCALE",
]
