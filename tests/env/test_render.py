"""Pictures of the table (thermopylae_env.render), the co-op env's rgb_array mode with Gymnasium's rendering
wrappers, and thermopylae render."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import thermopylae_env  # noqa: F401 - registers the environments
from thermopylae_env.coop.render import render_coop_rgb
from thermopylae_env.coop.rules import CoopGame
from thermopylae_env.drawing import FRAME_SHAPE
from thermopylae_env.duel.layout import GREEK, PERSIAN
from thermopylae_env.duel.render import render_duel_rgb
from thermopylae_env.duel.rules import DuelGame
from thermopylae_env.render import render_env_rgb

pytest.importorskip("PIL")

ROOT = Path(__file__).resolve().parents[2]


def _first_legal(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def test_frame_shape_is_the_documented_360_by_640_rgb():
    assert FRAME_SHAPE == (360, 640, 3)


@pytest.mark.parametrize("players", [1, 2, 4])
def test_coop_frame_has_the_documented_shape_and_dtype(players):
    game = CoopGame(players)
    state = game.init(np.random.default_rng(0))
    frame = render_coop_rgb(game, state)
    assert frame.shape == FRAME_SHAPE
    assert frame.dtype == np.uint8
    assert frame.std() > 10  # a drawing, not a blank canvas


def test_coop_frame_changes_when_the_state_changes():
    game = CoopGame(1)
    rng = np.random.default_rng(1)
    state = game.init(rng)
    before = render_coop_rgb(game, state)
    assert np.array_equal(before, render_coop_rgb(game, state.copy()))  # same state, same picture
    game.step(state, 0, rng)  # retreat: the marker moves
    after = render_coop_rgb(game, state)
    assert not np.array_equal(before, after)


def test_coop_frame_of_every_state_of_a_game_including_the_end():
    game = CoopGame(3)
    rng = np.random.default_rng(2)
    state = game.init(rng)
    frames = [render_coop_rgb(game, state)]
    while not state.terminated:
        game.step(state, int(np.flatnonzero(game.legal_action_mask(state))[-1]), rng)
        frames.append(render_coop_rgb(game, state))
    assert all(f.shape == FRAME_SHAPE and f.dtype == np.uint8 for f in frames)
    assert not np.array_equal(frames[-1], frames[-2])


def test_coop_frame_before_the_game_starts():
    frame = render_coop_rgb(CoopGame(1), None)
    assert frame.shape == FRAME_SHAPE


@pytest.mark.parametrize("side", [GREEK, PERSIAN])
def test_duel_frame_has_the_documented_shape_and_changes_during_a_game(side):
    game = DuelGame()
    rng = np.random.default_rng(3)
    state = game.init(rng)
    frames = [render_duel_rgb(game, state, side)]
    for step in range(1, 400):
        if state.terminated:
            break
        legal = game.legal_actions(state)
        game.step(state, legal[len(legal) // 2], rng)
        if step % 8 == 0 or state.terminated:
            frames.append(render_duel_rgb(game, state, side))
    assert state.terminated
    assert all(f.shape == FRAME_SHAPE and f.dtype == np.uint8 for f in frames)
    assert not np.array_equal(frames[0], frames[-1])


def test_duel_frame_never_shows_the_opponents_hand():
    game = DuelGame()
    greek = list(range(52))
    persian_a = list(range(52, 104))
    persian_b = persian_a[::-1]  # different Persian hand and deck order, same sizes
    state_a = game.new_state(greek, persian_a)
    state_b = game.new_state(greek, persian_b)
    assert sorted(state_a.hands[PERSIAN]) != sorted(state_b.hands[PERSIAN])
    greek_view = [render_duel_rgb(game, s, GREEK) for s in (state_a, state_b)]
    persian_view = [render_duel_rgb(game, s, PERSIAN) for s in (state_a, state_b)]
    assert np.array_equal(*greek_view)
    assert not np.array_equal(*persian_view)


def test_duel_frame_rejects_an_unknown_side():
    game = DuelGame()
    with pytest.raises(ValueError, match="side"):
        render_duel_rgb(game, game.init(np.random.default_rng(0)), 2)


def test_missing_pillow_is_reported_with_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    game = CoopGame(1)
    with pytest.raises(ImportError, match=r"thermopylae-env\[render\]"):
        render_coop_rgb(game, game.init(np.random.default_rng(0)))


def test_coop_env_rgb_array_render_mode():
    env = gym.make("thermopylae/Coop-v0", render_mode="rgb_array")
    assert "rgb_array" in env.metadata["render_modes"]
    obs, info = env.reset(seed=0)
    first = env.render()
    assert first.shape == FRAME_SHAPE and first.dtype == np.uint8
    env.step(_first_legal(info["action_mask"]))
    assert not np.array_equal(first, env.render())
    assert np.array_equal(env.render(), render_env_rgb(env))


def test_coop_env_rgb_array_passes_gymnasiums_env_checker():
    from gymnasium.utils.env_checker import check_env

    # made through gymnasium.make so that the checker also tries the other render modes
    check_env(gym.make("thermopylae/Coop-v0", render_mode="rgb_array").unwrapped, skip_render_check=False)


@pytest.mark.parametrize("env_id", ["thermopylae/DuelGreek-v0", "thermopylae/DuelPersian-v0"])
def test_duel_env_rgb_array_render_mode(env_id):
    from gymnasium.utils.env_checker import check_env

    env = gym.make(env_id, render_mode="rgb_array")
    assert env.unwrapped.render().shape == FRAME_SHAPE  # before reset: an empty table
    _, info = env.reset(seed=0)
    first = env.render()
    assert first.shape == FRAME_SHAPE and first.dtype == np.uint8
    assert np.array_equal(first, render_env_rgb(env))
    env.step(_first_legal(info["action_mask"]))
    assert not np.array_equal(first, env.render())
    check_env(gym.make(env_id, render_mode="rgb_array").unwrapped, skip_render_check=False)


def test_render_collection_and_render_observation_wrappers():
    from gymnasium.wrappers import AddRenderObservation, RenderCollection

    env = RenderCollection(gym.make("thermopylae/Coop-v0", render_mode="rgb_array"))
    _, info = env.reset(seed=1)
    for _ in range(3):
        _, _, terminated, _, info = env.step(_first_legal(info["action_mask"]))
        assert not terminated
    frames = env.render()
    assert len(frames) == 4
    assert all(f.shape == FRAME_SHAPE for f in frames)

    env = AddRenderObservation(gym.make("thermopylae/Coop-v0", render_mode="rgb_array"), render_only=True)
    obs, _ = env.reset(seed=1)
    assert obs.shape == FRAME_SHAPE


def test_record_video_wrapper_writes_a_video(tmp_path):
    pytest.importorskip("moviepy")
    from gymnasium.wrappers import RecordVideo

    env = RecordVideo(gym.make("thermopylae/Coop-v0", render_mode="rgb_array"), str(tmp_path),
                      episode_trigger=lambda episode: True)
    _, info = env.reset(seed=0)
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step(_first_legal(info["action_mask"]))
        done = terminated or truncated
    env.close()
    assert list(tmp_path.glob("*.mp4"))


def test_human_rendering_wrapper(monkeypatch):
    pytest.importorskip("pygame")
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    from gymnasium.wrappers import HumanRendering

    env = HumanRendering(gym.make("thermopylae/Coop-v0", render_mode="rgb_array"))
    _, info = env.reset(seed=0)
    env.step(_first_legal(info["action_mask"]))
    env.close()


def test_the_render_command_writes_a_gif_and_a_png_strip(tmp_path):
    from PIL import Image

    gif = tmp_path / "coop.gif"
    png = tmp_path / "duel.png"
    command = [sys.executable, "-m", "thermopylae_agents", "render"]
    done = subprocess.run(
        [*command, "--game", "coop", "--agent", "random", "--seed", "1", "--out", str(gif)],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    with Image.open(gif) as image:
        assert image.size == (640, 360)
        assert image.n_frames > 1
    done = subprocess.run(
        [*command, "--game", "duel", "--side", "persian", "--agent", "heuristic", "--opponent",
         "random", "--seed", "1", "--out", str(png), "--max-frames", "6", "--columns", "3", "--scale", "0.5"],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    with Image.open(png) as image:
        # 3 columns x 2 rows of 320x180 tiles with 4-pixel gaps
        assert image.size == (3 * 320 + 4 * 4, 2 * 180 + 3 * 4)
    assert "frames" in done.stdout


# ----------------------------------------------------------------------------- text from files (safe_text)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [("\x1b[2J", "\\x1b[2J"), ("\x1b]0;title\x07", "\\x1b]0;title\\x07"), ("a\rb", "a\\rb"),
     ("\x9b31m", "\\x9b31m"), ("\u202eevil", "\\u202eevil"), ("\x7f", "\\x7f"), ("\x00", "\\x00")],
)
def test_safe_text_makes_terminal_control_characters_visible(raw, shown):
    from thermopylae_env.render import safe_text

    assert safe_text(raw) == shown


def test_safe_text_keeps_printable_text_and_line_breaks_unless_asked():
    from thermopylae_env.render import safe_text

    text = "Immortals (10) x 2\n\tsecond line: é ü Ω"
    assert safe_text(text) == text
    assert safe_text("a\nb", newlines=False) == "a\\nb"
