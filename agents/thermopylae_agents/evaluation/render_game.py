"""Play one game with an agent and save it as pictures: an animated GIF or a PNG strip (a grid of frames).

Examples:

    thermopylae render --game coop --agent heuristic --seed 3 --out game.gif
    thermopylae render --game duel --side persian --agent heuristic --opponent random \\
        --seed 1 --out duel.png --every 4 --columns 4

One frame after the reset and one after each of the agent's steps (the duel's opponent moves happen inside
a step), drawn by [`thermopylae_env.render`][] (each frame 360 x 640 RGB). ``--every N`` keeps every N-th
frame (the first and last are always kept), ``--max-frames`` caps the count (a GIF then keeps the first
frames and the last). A ``.png`` output is a strip: the frames scaled by ``--scale`` in a grid of
``--columns`` columns. Needs Pillow (``pip install "thermopylae-env[render]"``).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import gymnasium as gym
import numpy as np

from thermopylae_agents.evaluation.replay import agent_for_env as make_agent
from thermopylae_env.render import render_env_rgb


def play(args: argparse.Namespace) -> tuple[list[np.ndarray], dict]:
    """Frames of one game and a summary (steps, return, outcome)."""
    if args.game == "coop":
        env = gym.make("thermopylae/Coop-v0", num_players=args.players, disable_env_checker=True)
    else:
        env_id = "thermopylae/DuelGreek-v0" if args.side == "greek" else "thermopylae/DuelPersian-v0"
        env = gym.make(env_id, opponent=args.opponent, disable_env_checker=True)
    act, label = make_agent(args.agent, env, args.seed)
    obs, info = env.reset(seed=args.seed)
    frames = [render_env_rgb(env)]
    total = 0.0
    steps = 0
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(act(obs, info["action_mask"]))
        total += float(reward)
        steps += 1
        done = terminated or truncated
        frames.append(render_env_rgb(env))
    env.close()
    return frames, {"agent": label, "steps": steps, "return": total, "won": bool(info.get("is_success"))}


def select(frames: list[np.ndarray], every: int, limit: int) -> list[np.ndarray]:
    """Every ``every``-th frame plus the last, at most ``limit`` (the first ``limit - 1`` and the last)."""
    if every < 1 or limit < 1:
        raise ValueError("--every and --max-frames must be at least 1")
    keep = list(range(0, len(frames), every))
    if keep[-1] != len(frames) - 1:
        keep.append(len(frames) - 1)
    if len(keep) > limit:
        keep = keep[: limit - 1] + [keep[-1]] if limit > 1 else [keep[-1]]
    return [frames[k] for k in keep]


def save_gif(frames: list[np.ndarray], path: Path, fps: float) -> None:
    from PIL import Image  # extra: render

    images = [Image.fromarray(f) for f in frames]
    duration = max(20, int(round(1000 / fps)))
    durations = [duration] * len(images)
    durations[-1] = duration * 4  # linger on the result before the loop starts again
    images[0].save(path, save_all=True, append_images=images[1:], duration=durations, loop=0, optimize=True)


def save_strip(frames: list[np.ndarray], path: Path, columns: int, scale: float) -> None:
    from PIL import Image  # extra: render

    if columns < 1 or not 0 < scale <= 1:
        raise ValueError("--columns must be >= 1 and --scale in (0, 1]")
    height, width = frames[0].shape[:2]
    w, h = max(1, int(width * scale)), max(1, int(height * scale))
    columns = min(columns, len(frames))
    rows = math.ceil(len(frames) / columns)
    gap = 4
    sheet = Image.new("RGB", (columns * w + (columns + 1) * gap, rows * h + (rows + 1) * gap), (40, 30, 24))
    for k, frame in enumerate(frames):
        row, col = divmod(k, columns)
        tile = Image.fromarray(frame).resize((w, h), Image.Resampling.LANCZOS)
        sheet.paste(tile, (gap + col * (w + gap), gap + row * (h + gap)))
    sheet.save(path)
