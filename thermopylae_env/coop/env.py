"""``thermopylae/Coop-v0``: the co-operative game as a single-agent Gymnasium environment.

A thin adapter over the rules engine [`thermopylae_env.coop.rules`][], on the shared base
[`thermopylae_env.core.TurnBasedEnv`][] (step guard, illegal-action policy); the agent plays for the
whole team.
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from thermopylae_env.actions import check_reward_shaping
from thermopylae_env.cards import PersianRows
from thermopylae_env.coop.layout import (
    GRAVEYARD_WIN,
    LOSS_MARKER,
    NUM_ACTIONS,
    NUM_SUPPORT,
    OBS_SIZE,
    decode_action,
    encode_action,
)
from thermopylae_env.coop.observation import CoopView
from thermopylae_env.coop.render import render_coop_rgb
from thermopylae_env.coop.rules import CoopGame
from thermopylae_env.coop.state import HAND_LIMIT, LOCATION_DIE_MARKERS, CoopState, Phase
from thermopylae_env.core import TurnBasedEnv

__all__ = ["CoopEnv", "marker_track"]


class CoopEnv(TurnBasedEnv):
    """The co-operative card game *Thermopyles*: 1 to 4 Spartan players against the Persian deck.

    ## Description

    The team holds Spartan cards (values 10..20) and four Greek support cards; two Persian cards stand in
    the line, each with a white (combat) value, a red (annihilation) value and sometimes a bonus mark. On
    each turn the acting seat either retreats (the marker moves one step towards 7, where the game is
    lost) or fights with one card plus any support cards (one die each; one more die when the marker is on
    3 or 6). A total at least the white value beats a Persian card, at least the red value sends it to the
    graveyard. Twelve cards in the graveyard, or a Persian deck that cannot refill the line, win the game.
    Draws are offered after a retreat and for each beaten bonus card; the team chooses who gets each
    draw, and a draw into a full hand (5 cards) is declined or followed by a discard. The complete rules
    are in ``seeds/rules_coop.md``; the default Persian red values and bonus marks are a reconstruction.

    The single agent makes every decision of the team, whichever seat acts.

    ## Action Space

    ``Discrete(72)``, the same at every decision point; ``info["action_mask"]`` (int8) and
    [`action_masks`][thermopylae_env.core.TurnBasedEnv.action_masks] (bool, for sb3-contrib's ``MaskablePPO``)
    mark the legal actions.

    | index | action |
    | --- | --- |
    | 0 | retreat |
    | 1 + (v-10)*5 + s | fight with a card of value v (10..20) and s (0..4) support cards |
    | 56 + p | give the offered draw to seat p (0..3, below ``num_players``) |
    | 60 | decline the offered draw |
    | 61 + (v-10) | discard a card of value v from the recipient's 6-card hand |

    [`encode_action`][thermopylae_env.coop.env.CoopEnv.encode_action] /
    [`decode_action`][thermopylae_env.coop.env.CoopEnv.decode_action] (also methods of the env) translate
    between indices and names such as ``"fight 17 +2 support"``.

    ## Observation Space

    ``Box(0, 1, (115,), float32)``:

    | slice | content |
    | --- | --- |
    | 0:3 | pending decision one-hot: MAIN, DRAW_OFFER, DISCARD (all 0 once over) |
    | 3:7 | acting seat one-hot |
    | 7:11 | seat that must discard (DISCARD only) |
    | 11:55 | hands: 11 + 11*p + (v-10) = count of value v in seat p's hand / 2 |
    | 55:59, 59:63 | slot 1 and slot 2: present, white/30, red/30, bonus |
    | 63:70 | marker one-hot 1..7 |
    | 70 | support cards left / 4 |
    | 71, 72 | Spartan deck size / 20, Persian deck size / 28 |
    | 73, 74 | graveyard size / 12, Persian discard pile size / 28 |
    | 75 | draw offers still pending after the current one / 2 |
    | 76:87 | Spartan cards still in the deck per value 10..20, count / 2 |
    | 87:115 | Persian deck table row i still in the Persian deck |

    ## Rewards

    +1 on the winning step, -1 on the losing step, 0 otherwise. An illegal action (with
    ``illegal_action="loss"``) ends the episode with ``illegal_action_penalty``. With
    ``reward_shaping = c > 0`` every non-final step also earns ``c`` per Persian card beaten to the
    discard pile, ``2c`` per card sent to the graveyard, and ``-c`` per retreat; the final step stays
    exactly +1 or -1.

    ## Starting State

    Both decks shuffled; two Persian cards in the line; the marker on 1; four support cards; solo: four
    Spartan cards in hand, 2 to 4 players: three each. Seat 0 acts first.

    ## Episode End

    Terminated on a win (12th graveyard card, or the Persian deck cannot refill the line) or a loss
    (the marker reaches 7, or every hand and the Spartan deck are empty after an action), or on an illegal
    action in ``"loss"`` mode. The game is finite (at most 20 Spartan cards and 6 retreats), so there is
    no truncation. ``info["is_success"]`` is set on the final step.

    ## Arguments

    * ``num_players`` (int, 1..4, default 1)
    * ``persian_deck``: a CSV path (``white,red,bonus``) or 28 rows; ``None`` for the default deck
    * ``illegal_action``: ``"loss"`` (default) or ``"raise"`` (raise ``IllegalActionError``, nothing
      changes and the episode goes on); out-of-space actions always raise ``TypeError``/``ValueError``
      (``"replace"``: the nearest legal action is played, see [`thermopylae_env.actions`][])
    * ``illegal_action_penalty`` (float, default -1.0)
    * ``reward_shaping`` (float, default 0.0): see Rewards
    * ``render_mode``: ``None``, ``"ansi"`` (text) or ``"rgb_array"`` (a (360, 640, 3) uint8 picture of the
      table, [`render_coop_rgb`][thermopylae_env.coop.render.render_coop_rgb]; needs
      Pillow)
    * ``record_events`` (bool, default False): put the engine's events of each step in ``info["events"]``

    ``env.game`` is the [`CoopGame`][thermopylae_env.coop.rules.CoopGame], ``env.state`` the live
    [`CoopState`][thermopylae_env.coop.state.CoopState] (``None`` before the first reset).

    ## Version History

    The version number of an id changes whenever the same seed and actions could give a different
    episode (other observations, masks, rewards or ends): a rule change, a new observation or action
    layout, or a change of the default Persian deck (``seeds/persian_deck.csv``, a reconstruction) is a
    new version. Additions that leave every existing episode as it was (a new argument whose default keeps
    the old behaviour, a new render mode) keep the version.

    * v0: initial version. Later changes that kept every episode: the shared env base
      ([`thermopylae_env.core`][]), each step validated once, NumPy integer seeds accepted, unknown reset
      options refused (``reset`` takes no options).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    encode_action = staticmethod(encode_action)
    decode_action = staticmethod(decode_action)

    def __init__(
        self,
        num_players: int = 1,
        persian_deck: str | os.PathLike[str] | PersianRows | None = None,
        illegal_action: str = "loss",
        illegal_action_penalty: float = -1.0,
        reward_shaping: float = 0.0,
        render_mode: str | None = None,
        record_events: bool = False,
    ) -> None:
        shaping = check_reward_shaping(reward_shaping)
        game = CoopGame(num_players, persian_deck)
        self._init_core(game, NUM_ACTIONS, illegal_action, illegal_action_penalty, render_mode, record_events)
        self.reward_shaping = shaping
        self._view = CoopView(game)
        # the view's methods called directly (one Python call less per step than the methods below)
        self._observe = self._view.observe
        self._legal_mask = self._view.mask
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(OBS_SIZE,), dtype=np.float32)

    @property
    def game(self) -> CoopGame:
        """The static game (player count, card tables)."""
        return self._game

    @property
    def state(self) -> CoopState | None:
        """The engine state of the running episode (``None`` before the first reset)."""
        return self._state

    # --- the parts of TurnBasedEnv --------------------------------------------------------------------

    def _start(self, events: list[dict] | None, options: dict[str, Any]) -> CoopState:
        return self._game.init(self.np_random)

    def _advance(self, state: CoopState, action: int, events: list[dict] | None) -> float:
        shaping = self.reward_shaping
        if not shaping:
            # _np_random: the generator reset() seeded (the np_random property is a call per step)
            self._game.apply(state, action, self._np_random, events)
            return 0.0
        before = (len(state.persian_discard), len(state.graveyard), state.marker)
        self._game.apply(state, action, self._np_random, events)
        return shaping * (
            (len(state.persian_discard) - before[0])
            + 2 * (len(state.graveyard) - before[1])
            - (state.marker - before[2])
        )

    def _observe(self, state: CoopState) -> np.ndarray:
        return self._view.observe(state)

    def _legal_mask(self, state: CoopState) -> np.ndarray:
        return self._view.mask(state)

    def _won(self, state: CoopState) -> bool:
        return bool(state.won)

    def _new_info(self, state: CoopState, action_mask: np.ndarray) -> dict[str, Any]:
        return {"action_mask": action_mask, "phase": state.phase, "current_player": state.current_player,
                "turn": state.turn}

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' to the env")
            return None
        if self.render_mode == "rgb_array":
            return render_coop_rgb(self._game, self._state)
        if self._state is None:
            return "Thermopyles co-op: not started (call reset())\n"
        return render_text(self._game, self._state)


def marker_track(marker: int) -> str:
    """The marker track as text: each position (``*`` where the location adds a die), the marker's in
    brackets."""
    cells = []
    for position in range(1, LOSS_MARKER + 1):
        label = f"{position}{'*' if position in LOCATION_DIE_MARKERS else ''}"
        cells.append(f"[{label}]" if position == marker else f" {label} ")
    return " ".join(cells)


def render_text(game: CoopGame, state: CoopState) -> str:
    """A plain-text table of ``state``: hands, the Persian line, the marker track, supplies."""
    lines = []
    if state.terminated:
        outcome = "WON" if state.won else "LOST"
        why = {
            "graveyard": f"{GRAVEYARD_WIN} Persian cards in the graveyard",
            "refill": "the Persian deck cannot refill the line",
            "marker": f"the marker reached {LOSS_MARKER}",
            "exhausted": "no Spartan cards left in hand or deck",
        }[state.reason]
        status = f"game over: {outcome} ({why})"
    elif state.phase == Phase.MAIN:
        status = f"seat {state.current_player} to act: retreat or fight"
    elif state.phase == Phase.DRAW_OFFER:
        more = f", {state.offers} more pending" if state.offers else ""
        status = f"draw offered: give it to a seat or decline{more}"
    else:
        status = f"seat {state.recipient} holds {HAND_LIMIT + 1} cards: discard one"
    lines.append(f"Thermopyles co-op | {game.num_players} player(s) | turn {state.turn} | {status}")

    lines.append("Marker    " + marker_track(state.marker) + f"   (* location die, {LOSS_MARKER} loses)")

    def slot_text(card: int) -> str:
        if card < 0:
            return "(empty)"
        persian = game.persian[card]
        return f"white {persian.white:>2} red {persian.red:>2}{' bonus' if persian.bonus else '      '}"

    lines.append(f"Persians  slot 1: {slot_text(state.slot1)} | slot 2: {slot_text(state.slot2)}")
    lines.append(
        f"Support   {state.support}/{NUM_SUPPORT} left | Spartan deck {state.spartan_deck_size} | "
        f"Persian deck {state.persian_deck_size} | Persian discard {len(state.persian_discard)} | "
        f"graveyard {len(state.graveyard)}/{GRAVEYARD_WIN}"
    )
    for seat, hand in enumerate(state.hands):
        values = " ".join(str(v) for v in sorted(game.spartan[c] for c in hand)) or "(empty)"
        pointer = ">" if seat == state.current_player and not state.terminated else " "
        lines.append(f"Hand {pointer} seat {seat}: {values}")
    return "\n".join(lines) + "\n"
