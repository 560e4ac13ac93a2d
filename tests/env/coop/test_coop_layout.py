"""The co-op layout module is the one home of the action and observation layouts: the pieces tile the
observation, the engines use it, and the environments' docstring tables say what it says."""

from __future__ import annotations

import re

import numpy as np

from thermopylae_env import coop, coop_layout, coop_vector
from thermopylae_env.coop_env import CoopEnv
from thermopylae_env.coop_layout import ACTION_BLOCKS, OBS, OBS_SIZE, PIECES


def test_pieces_tile_the_observation_in_order():
    offset = 0
    for piece in PIECES:
        assert piece.offset == offset, piece.name
        offset = piece.stop
    assert offset == OBS_SIZE == 115
    assert [block.start for block in ACTION_BLOCKS] == [0, 1, 56, 60, 61]
    assert ACTION_BLOCKS[-1].stop == coop_layout.NUM_ACTIONS == 72


def test_engines_reexport_the_layout_constants():
    for name in ("NUM_ACTIONS", "OBS_SIZE", "RETREAT", "FIGHT_BASE", "GIVE_BASE", "DECLINE", "DISCARD_BASE"):
        assert getattr(coop, name) == getattr(coop_layout, name), name
    assert coop_vector.NUM_ACTIONS == coop_layout.NUM_ACTIONS and coop_vector.OBS_SIZE == OBS_SIZE


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
    game = coop.CoopGame(2)
    state = game.init(np.random.default_rng(0))
    obs = game.observe(state)
    assert obs[OBS["phase"].slice].tolist() == [1, 0, 0]
    assert obs[OBS["marker"].offset] == 1
    hands = obs[OBS["hands"].slice].reshape(OBS["hands"].shape) * OBS["hands"].scale
    assert hands.sum() == 6 and hands[2:].sum() == 0
    assert obs[OBS["support"].offset] * OBS["support"].scale == coop_layout.NUM_SUPPORT
