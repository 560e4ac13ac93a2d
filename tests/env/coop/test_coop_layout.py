"""The co-op layout module is the one home of the action and observation layouts: the pieces tile the
observation, the engines use it, and the environments' docstring tables say what it says."""

from __future__ import annotations

import re

import numpy as np
import pytest

from thermopylae_env.coop import layout as coop_layout
from thermopylae_env.coop import vector as coop_vector
from thermopylae_env.coop.env import CoopEnv
from thermopylae_env.coop.layout import (
    ACTION_BLOCKS,
    DECLINE,
    NUM_ACTIONS,
    OBS,
    OBS_SIZE,
    PIECES,
    RETREAT,
    decode_action,
    encode_action,
)
from thermopylae_env.coop.rules import CoopGame


def test_pieces_tile_the_observation_in_order():
    offset = 0
    for piece in PIECES:
        assert piece.offset == offset, piece.name
        offset = piece.stop
    assert offset == OBS_SIZE == 115
    assert [block.start for block in ACTION_BLOCKS] == [0, 1, 56, 60, 61]
    assert ACTION_BLOCKS[-1].stop == coop_layout.NUM_ACTIONS == 72


def test_both_engines_play_in_the_layouts_sizes_and_name_each_action_block_by_it():
    game = CoopGame(num_players=2)
    state = game.init(np.random.default_rng(0))
    assert game.legal_action_mask(state).shape == (coop_layout.NUM_ACTIONS,)
    assert game.observe(state).shape == (OBS_SIZE,)
    env = coop_vector.CoopVectorEnv(3, num_players=2)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (3, OBS_SIZE) and env.action_masks().shape == (3, coop_layout.NUM_ACTIONS)
    first = {coop_layout.RETREAT: "retreat", coop_layout.FIGHT_BASE: "fight 10 +0 support",
             coop_layout.GIVE_BASE: "give draw to seat 0", coop_layout.DECLINE: "decline draw",
             coop_layout.DISCARD_BASE: "discard 10"}
    assert {action: decode_action(action) for action in first} == first


def _table(doc: str, header: str) -> list[tuple[str, str]]:
    """The rows ``| a | b |`` of the Markdown table under ``## header`` in a docstring."""
    section = doc.split(f"## {header}", 1)[1].split("## ", 1)[0]
    rows = re.findall(r"^\s*\|([^|]+)\|([^|]+)\|\s*$", section, flags=re.M)
    return [(a.strip(), b.strip()) for a, b in rows if not set(a.strip()) <= {"-"} and a.strip() != "index"
            and a.strip() != "slice"]


def test_coop_env_action_table_matches_the_layout():
    rows = _table(CoopEnv.__doc__, "Action Space")
    starts = [int(re.match(r"\d+", index).group()) for index, _ in rows]
    assert starts == [block.start for block in ACTION_BLOCKS]
    kinds = [text.split()[0] for _, text in rows]
    assert kinds == ["retreat", "fight", "give", "decline", "discard"] == [b.name for b in ACTION_BLOCKS]


def test_coop_env_observation_table_matches_the_layout():
    spans = []
    for index, _ in _table(CoopEnv.__doc__, "Observation Space"):
        for part in index.split(","):
            part = part.strip()
            if ":" in part:
                start, stop = (int(x) for x in part.split(":"))
            else:
                start, stop = int(part), int(part) + 1
            spans.append((start, stop))
    assert sorted(spans) == [(piece.offset, piece.stop) for piece in PIECES]


def test_a_new_game_observation_reads_back_through_the_pieces():
    game = CoopGame(2)
    state = game.init(np.random.default_rng(0))
    obs = game.observe(state)
    assert obs[OBS["phase"].slice].tolist() == [1, 0, 0]
    assert obs[OBS["marker"].offset] == 1
    hands = obs[OBS["hands"].slice].reshape(OBS["hands"].shape) * OBS["hands"].scale
    assert hands.sum() == 6 and hands[2:].sum() == 0
    assert obs[OBS["support"].offset] * OBS["support"].scale == coop_layout.NUM_SUPPORT


@pytest.mark.parametrize(
    ("action", "error", "message"),
    [("3", TypeError, "action must be an integer, got str"), (2.7, TypeError, "action must be an integer"),
     (True, TypeError, "got the boolean"), (None, TypeError, "action is None"),
     (NUM_ACTIONS, ValueError, f"outside the action space Discrete\\({NUM_ACTIONS}\\)"),
     (-1, ValueError, "outside the action space")],
)
def test_decode_action_takes_only_an_integer_action_of_the_space(action, error, message):
    with pytest.raises(error, match=message) as caught:
        decode_action(action)
    assert "\n" not in str(caught.value)


def test_decode_action_takes_numpy_integers():
    assert decode_action(np.int64(RETREAT)) == decode_action(np.uint8(RETREAT)) == "retreat"
    assert decode_action(np.array(DECLINE)) == "decline draw"


@pytest.mark.parametrize("name", [None, 0, b"retreat", ["retreat"]])
def test_encode_action_takes_only_a_string(name):
    with pytest.raises(TypeError, match="action name must be a string") as caught:
        encode_action(name)
    assert "\n" not in str(caught.value)
