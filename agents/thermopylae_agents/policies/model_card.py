"""Model cards in the Hugging Face format, and the folder a pickle-free policy is uploaded as.

A model card is Markdown with YAML front matter, then the sections *Intended use*, *Limitations* and
*Training* (the commit and command that trained the policy and its training settings, from its
description's ``provenance``). The front matter is what the Hub's reinforcement-learning pages read:
``library_name: stable-baselines3`` (the shipped policies are SB3 MaskablePPO actors), ``license``, the
tags ``reinforcement-learning``, ``deep-reinforcement-learning``, ``stable-baselines3`` and the env id
(the Deep RL leaderboard finds models by their env id tag), and a ``model-index`` with one result per game
setting (an env id with its team size, or a duel side against one opponent: distinct dataset configs, so
that the Hub keeps them apart). Each result holds ``mean_reward`` first, as ``"mean +/- std"`` of the
episode returns (the leaderboard reads the first metric of the first result), then the win rate. For the
shipped policies ``benchmarks/policy_files.py cards`` writes the results from the committed result files;
the first result is the env as registered (the co-op game's team, the duel's default heuristic opponent).

Where ``huggingface_hub`` is installed the front matter is written by its ``ModelCardData`` and
``EvalResult``; otherwise by the small emitter here
([`to_yaml`][thermopylae_agents.policies.model_card.to_yaml]), with the same content, so that neither
writing nor loading a folder needs PyYAML.

[`write_hf_folder`][thermopylae_agents.policies.model_card.write_hf_folder] writes a folder ready to upload
(it uploads nothing; ``thermopylae export --push`` does): ``README.md`` (the model card), ``config.json``
(the policy description, with the training settings under ``provenance.hyperparameters``),
``model.safetensors`` (the arrays), ``results.json`` (greedy games on the policy's env, in the form SB3's
and RL Zoo's ``push_to_hub`` write, plus the win rate) and ``replay.mp4`` (one greedy game drawn by the
env's ``rgb_array`` render; needs the ``video`` extra, left out without it).
[`thermopylae_agents.policies.safe_policy.load_safe_policy`][] loads the folder by its path, with NumPy and
``safetensors`` only.
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import math
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from thermopylae_agents.policies.safe_policy import (
    HF_CONFIG,
    SafePolicy,
    description_path,
    load_safe_policy,
    write_policy,
)
from thermopylae_env import COOP_ID, GREEK_ID, PERSIAN_ID

__all__ = [
    "DEFAULT_EPISODES",
    "LIBRARY_NAME",
    "REPLAY_FILE",
    "RESULTS_FILE",
    "TAGS",
    "card_text",
    "default_card",
    "front_matter",
    "front_matter_yaml",
    "game_results",
    "game_setting",
    "hub_results",
    "intended_use",
    "limitations",
    "check_repo_id",
    "mean_reward_text",
    "push_to_hub",
    "return_stats",
    "split_card",
    "to_yaml",
    "training_text",
    "video_available",
    "write_hf_folder",
    "write_replay",
]

LIBRARY_NAME = "stable-baselines3"
TAGS = ("reinforcement-learning", "deep-reinforcement-learning", "stable-baselines3", "gymnasium",
        "thermopylae", "card-game", "action-masking", "maskable-ppo")
RESULTS_FILE, REPLAY_FILE = "results.json", "replay.mp4"
DEFAULT_EPISODES = 100
REPLAY_FPS = 2  # one decision every half second: slow enough to follow a card game
_MAX_EPISODES = 1_000_000
_FRONT = re.compile(r"\A---\n(?P<front>.*?\n)---\n", re.DOTALL)
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_GAMES = {
    COOP_ID: "the co-op game",
    GREEK_ID: "the Greek side of the duel",
    PERSIAN_ID: "the Persian side of the duel",
}
_SIDES = {GREEK_ID: ("Greek", "Persian"), PERSIAN_ID: ("Persian", "Greek")}
# The fields of huggingface_hub's EvalResult that a result of this module fills.
_RESULT_FIELDS = ("task_type", "task_name", "dataset_type", "dataset_name", "dataset_config", "dataset_args",
                  "metric_type", "metric_value", "metric_name", "metric_args", "verified")


# --------------------------------------------------------------------------------------------------------
# YAML
# --------------------------------------------------------------------------------------------------------


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))  # a JSON string is a YAML double-quoted scalar


def _key(key: Any) -> str:
    text = str(key)
    return text if _PLAIN_KEY.match(text) else json.dumps(text)


def to_yaml(value: Any, indent: int = 0) -> str:
    """Block-style YAML of nested dicts, lists, strings, numbers, booleans and ``None`` (strings quoted,
    so that no text is read back as another type)."""
    pad = " " * indent
    if isinstance(value, Mapping):
        if not value:
            return pad + "{}\n"
        lines = []
        for key, item in value.items():
            if isinstance(item, (Mapping, list, tuple)) and item:
                lines.append(f"{pad}{_key(key)}:\n{to_yaml(item, indent + 2)}")
            else:
                lines.append(f"{pad}{_key(key)}: {_inline(item)}\n")
        return "".join(lines)
    if isinstance(value, (list, tuple)):
        if not value:
            return pad + "[]\n"
        lines = []
        for item in value:
            if isinstance(item, (Mapping, list, tuple)) and item:
                nested = to_yaml(item, indent + 2)
                lines.append(f"{pad}- {nested[indent + 2:]}")
            else:
                lines.append(f"{pad}- {_inline(item)}\n")
        return "".join(lines)
    return pad + _scalar(value) + "\n"


def _inline(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{}"
    if isinstance(value, (list, tuple)):
        return "[]"
    return _scalar(value)


def split_card(text: str) -> tuple[str | None, str]:
    """A card's YAML front matter (``None`` when it has none) and its Markdown body."""
    match = _FRONT.match(text)
    if match is None:
        return None, text
    return match.group("front"), text[match.end():].lstrip("\n")


# --------------------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------------------


def return_stats(wins: int, games: int) -> tuple[float, float]:
    """The mean and standard deviation (of the games played, as SB3's ``evaluate_policy`` computes it) of
    the episode returns of ``games`` games with ``wins`` wins. Every episode of these envs returns +1 (a
    win) or -1 (a loss) under their default settings (no reward shaping, no draw, no truncation; a masked
    policy never plays an illegal action), so the counts alone give them exactly."""
    if not (isinstance(games, int) and isinstance(wins, int) and 0 <= wins <= games and games > 0):
        raise ValueError(f"return_stats: need 0 <= wins <= games and games > 0, got {wins!r} of {games!r}")
    rate = wins / games
    return 2 * rate - 1, 2 * math.sqrt(rate * (1 - rate))


def mean_reward_text(mean: float, std: float) -> str:
    """The ``mean_reward`` metric's value as SB3 and RL Zoo write it, which the leaderboard parses."""
    return f"{mean:.2f} +/- {std:.2f}"


def game_setting(env_id: str, env_options: Mapping[str, Any] | None = None,
                 opponent: str | None = None) -> dict[str, str]:
    """The task name, dataset name and dataset config of one game setting: the co-op game with its team
    size, or a duel side against ``opponent`` (default: the env's, the heuristic)."""
    options = dict(env_options or {})
    if env_id in _SIDES:
        side, other = _SIDES[env_id]
        opponent = opponent or "heuristic"
        return {"task_name": f"duel, {side} side", "dataset_name": f"{env_id} against the {other} {opponent}",
                "dataset_config": f"opponent={opponent}"}
    players = int(options.get("num_players", 1))
    team = f"{players} player{'s' if players > 1 else ''}"
    return {"task_name": "co-op game, the whole team", "dataset_name": f"{env_id}, {team}",
            "dataset_config": f"num_players={players}"}


def game_results(
    env_id: str,
    setting: Mapping[str, str],
    games: int,
    wins: int,
    *,
    win_rate_name: str,
    dataset_args: Mapping[str, Any] | None = None,
    win_rate_args: Mapping[str, Any] | None = None,
    mean_std: tuple[float, float] | None = None,
) -> list[dict[str, Any]]:
    """The two results of one game setting (see
    [`game_setting`][thermopylae_agents.policies.model_card.game_setting]), as the fields of
    ``huggingface_hub.EvalResult``: ``mean_reward`` first (``mean_std``, else from the counts by
    [`return_stats`][thermopylae_agents.policies.model_card.return_stats]), then the win rate."""
    mean, std = mean_std if mean_std is not None else return_stats(wins, games)
    common = {"task_type": "reinforcement-learning", "task_name": setting["task_name"],
              "dataset_type": env_id, "dataset_name": setting["dataset_name"],
              "dataset_config": setting["dataset_config"], "dataset_args": dict(dataset_args or {}) or None,
              "verified": False}
    return [
        {**common, "metric_type": "mean_reward", "metric_value": mean_reward_text(mean, std),
         "metric_name": "mean_reward", "metric_args": {"episodes": games}},
        {**common, "metric_type": "win_rate", "metric_value": wins / games, "metric_name": win_rate_name,
         "metric_args": {"deals": games, "wins": wins, **dict(win_rate_args or {})}},
    ]


def _model_index(name: str, results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``huggingface_hub``'s model-index of ``results``, for where it is not installed: the metrics of one
    task, env and config together, in order, and no null value."""
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for result in results:
        groups.setdefault((result["task_type"], result["dataset_type"], result.get("dataset_config")),
                          []).append(result)
    entries = []
    for members in groups.values():
        first = members[0]
        dataset = {"name": first["dataset_name"], "type": first["dataset_type"],
                   "config": first.get("dataset_config"), "args": first.get("dataset_args")}
        metrics = [{"type": r["metric_type"], "value": r["metric_value"], "name": r.get("metric_name"),
                    "args": r.get("metric_args"), "verified": r.get("verified")} for r in members]
        entries.append({"task": {"type": first["task_type"], "name": first.get("task_name")},
                        "dataset": _no_none(dataset), "metrics": [_no_none(m) for m in metrics]})
    return [{"name": name, "results": [_no_none(e) for e in entries]}]


def _no_none(mapping: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in mapping.items() if value is not None}


# --------------------------------------------------------------------------------------------------------
# Cards
# --------------------------------------------------------------------------------------------------------


def _hub_installed() -> bool:
    return importlib.util.find_spec("huggingface_hub") is not None


def front_matter(description: Mapping[str, Any], name: str | None = None,
                 results: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The front matter of a policy's card as plain data (what ``ModelCardData.to_dict`` gives): library,
    license, pipeline tag, tags (with its env id) and, with ``results`` (of
    [`game_results`][thermopylae_agents.policies.model_card.game_results]), the ``model-index`` named
    ``name``."""
    front: dict[str, Any] = {
        "library_name": LIBRARY_NAME,
        "license": "mit",
        "pipeline_tag": "reinforcement-learning",
        "tags": [*TAGS, str(description["env_id"])],
    }
    if results:
        front["model-index"] = _model_index(name or "policy", results)
    return front


def front_matter_yaml(description: Mapping[str, Any], name: str | None = None,
                      results: Sequence[Mapping[str, Any]] = (), *, use_hub: bool | None = None) -> str:
    """The YAML text of [`front_matter`][thermopylae_agents.policies.model_card.front_matter]: written by
    ``huggingface_hub``'s ``ModelCardData`` and ``EvalResult`` where it is installed (``use_hub``: force one
    writer), else by [`to_yaml`][thermopylae_agents.policies.model_card.to_yaml]."""
    if use_hub is None:
        use_hub = _hub_installed()
    if not use_hub:
        return to_yaml(front_matter(description, name, results))
    from huggingface_hub import EvalResult, ModelCardData  # extra: rlzoo

    front = front_matter(description, name, results)
    data = ModelCardData(
        library_name=front["library_name"], license=front["license"], pipeline_tag=front["pipeline_tag"],
        tags=front["tags"], model_name=(name or "policy") if results else None,
        eval_results=[EvalResult(**{key: result.get(key) for key in _RESULT_FIELDS}) for result in results]
        or None,
    )
    return data.to_yaml() + "\n"


def card_text(description: Mapping[str, Any], body: str, name: str | None = None,
              results: Sequence[Mapping[str, Any]] = (), *, use_hub: bool | None = None) -> str:
    """A model card: the front matter of ``description`` and ``results`` (see
    [`front_matter_yaml`][thermopylae_agents.policies.model_card.front_matter_yaml]), then ``body``."""
    front = front_matter_yaml(description, name, results, use_hub=use_hub)
    return f"---\n{front}---\n\n{body.lstrip(chr(10))}"


def _team(description: Mapping[str, Any]) -> str:
    players = description.get("env_options", {}).get("num_players")
    return f" with a team of {players} (`num_players={players}`)" if players is not None else ""


def intended_use(description: Mapping[str, Any]) -> str:
    """The *Intended use* section of a policy's card."""
    game = _GAMES.get(str(description["env_id"]), f"`{description['env_id']}`")
    return (
        f"Playing {game}{_team(description)} (`{description['env_id']}`, default decks): as an opponent or "
        "partner in `thermopylae play`, as a hint giver (`--hints`), as a baseline in "
        "`thermopylae evaluate`, and as a starting point for further training. It is loaded with NumPy "
        "and `safetensors` alone (`load_safe_policy`, no torch, no pickle) and plays the most likely "
        "legal action (or samples the masked softmax).\n"
    )


def limitations(description: Mapping[str, Any]) -> str:
    """The *Limitations* section of a policy's card."""
    return (
        f"Trained and measured on `{description['env_id']}`{_team(description)}, default decks only: "
        "the registry refuses it for any other game (env id or team size), and another Persian deck is "
        "outside its training distribution. It sees one seat's observation and the action mask, nothing "
        "more. "
        "The measured win rates hold for the opponents and deals they were measured on; they say nothing "
        "of other opponents. It is a research baseline for a card game, not a player of real stakes.\n"
    )


def training_text(description: Mapping[str, Any]) -> str:
    """What a policy's description records of its training: commit, command, package version, training
    settings, decks."""
    prov = description.get("provenance", {})
    lines = [
        f"* training commit: `{prov.get('training_commit', 'unknown')}`",
        f"* training command: `{prov.get('training_command', 'unknown')}`",
        f"* package version: `{prov.get('package_version', 'unknown')}`",
    ]
    if "shipped_in_commit" in prov:
        lines.append(f"* shipped in commit: `{prov['shipped_in_commit']}`")
    settings = prov.get("hyperparameters")
    if isinstance(settings, Mapping) and settings:
        shown = ", ".join(f"`{key}={value}`" for key, value in settings.items())
        lines.append(f"* training settings (recorded by the SB3 model): {shown}")
    for deck, entry in sorted(prov.get("decks", {}).items()):
        lines.append(f"* {deck} deck: `{entry.get('name')}` (SHA-256 `{entry.get('sha256')}`)")
    if "source" in description:
        lines.append(f"* exported from: `{description['source']}`")
    return "\n".join(lines) + "\n"


def default_card(name: str, description: Mapping[str, Any], results: Sequence[Mapping[str, Any]] = (),
                 *, use_hub: bool | None = None) -> str:
    """The model card of a policy that has none of its own: front matter (with ``results``, when given)
    and the sections, from its description."""
    measured = ""
    if results:
        first = [r for r in results if r["metric_type"] == "mean_reward"][0]
        measured = (f"Greedy play on `{first['dataset_name']}`: mean episode return "
                    f"{first['metric_value']} over {first['metric_args']['episodes']} games (`results.json`; "
                    "the front matter's `model-index` holds the win rate too).\n\n")
    body = (
        f"# {name}\n\nA pickle-free policy of thermopylae-env: {description['features']} features, "
        f"{description['observation_size']} observation values, {description['num_actions']} actions.\n\n"
        f"{measured}"
        f"## Intended use\n\n{intended_use(description)}\n## Limitations\n\n{limitations(description)}\n"
        f"## Training\n\n{training_text(description)}\n## Use\n\n```python\n"
        "from thermopylae_agents.policies.safe_policy import load_safe_policy\n"
        "policy = load_safe_policy(\"path/to/this/folder\")\n"
        "action = policy.act(observation, action_mask)\n```\n"
    )
    return card_text(description, body, name, results, use_hub=use_hub)


# --------------------------------------------------------------------------------------------------------
# Playing the policy: results.json and replay.mp4
# --------------------------------------------------------------------------------------------------------


def _make_env(policy: SafePolicy, render_mode: str | None = None) -> Any:
    return gym.make(policy.env_id, disable_env_checker=True, render_mode=render_mode,
                    **policy.env_options).unwrapped


def _check_count(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= _MAX_EPISODES:
        raise ValueError(f"{name} must be an integer in {minimum}..{_MAX_EPISODES:,}, not {value!r}")
    return value


def hub_results(policy: SafePolicy, episodes: int = DEFAULT_EPISODES, seed: int = 0) -> dict[str, Any]:
    """``results.json`` of ``policy``: ``episodes`` greedy games on its env (its game options; a duel side
    against the env's default opponent, the heuristic), game ``i`` reset with seed ``seed + i`` (the deals
    of ``thermopylae evaluate --seed SEED``). The keys SB3's and RL Zoo's ``push_to_hub`` write
    (``mean_reward`` and ``std_reward`` of the episode returns, ``is_deterministic``, ``n_eval_episodes``,
    ``eval_datetime``), then the env id, its options, the opponent, the seeds, the wins and the win
    rate."""
    _check_count("episodes", episodes, 1)
    _check_count("seed", seed, 0)
    env = _make_env(policy)
    returns, wins = [], 0
    try:
        for game in range(episodes):
            obs, info = env.reset(seed=seed + game)
            total, done = 0.0, False
            while not done:
                obs, reward, terminated, truncated, info = env.step(policy.act(obs, info["action_mask"]))
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
            wins += bool(info.get("is_success", False))
    finally:
        env.close()
    return {
        "mean_reward": float(np.mean(returns)),
        "std_reward": float(np.std(returns)),
        "is_deterministic": True,
        "n_eval_episodes": episodes,
        "eval_datetime": datetime.datetime.now().isoformat(),
        "env_id": policy.env_id,
        "env_options": dict(policy.env_options),
        "opponent": "heuristic" if policy.env_id in _SIDES else None,
        "seeds": f"{seed}..{seed + episodes - 1}",
        "wins": wins,
        "win_rate": wins / episodes,
    }


def video_available() -> bool:
    """Whether the ``video`` extra is installed (moviepy writes the video, Pillow draws the frames)."""
    return all(importlib.util.find_spec(name) is not None for name in ("moviepy", "PIL"))


def _replay_frames(policy: SafePolicy, seed: int) -> list[np.ndarray]:
    env = _make_env(policy, render_mode="rgb_array")
    try:
        obs, info = env.reset(seed=seed)
        frames, done = [env.render()], False
        while not done:
            obs, _, terminated, truncated, info = env.step(policy.act(obs, info["action_mask"]))
            done = terminated or truncated
            frames.append(env.render())
    finally:
        env.close()
    return frames


def _write_video(frames: list[np.ndarray], path: Path, fps: int) -> None:
    from moviepy.video.io.ImageSequenceClip import ImageSequenceClip  # extra: video (moviepy 1 and 2 alike)

    clip = ImageSequenceClip([np.asarray(frame) for frame in frames], fps=fps)
    try:
        clip.write_videofile(os.fspath(path), codec="libx264", audio=False, logger=None)
    finally:
        clip.close()


def write_replay(policy: SafePolicy, path: str | os.PathLike[str], seed: int = 0,
                 fps: int = REPLAY_FPS) -> Path:
    """``replay.mp4``: one greedy game of ``policy`` (reset with ``seed``), one frame after the reset and
    one after each of its decisions, drawn by the env's ``rgb_array`` render. Needs the ``video`` extra
    (an ``ImportError`` naming it otherwise)."""
    if not video_available():
        raise ImportError('the replay video needs the video extra: pip install "thermopylae-env[video]"')
    _check_count("seed", seed, 0)
    _check_count("fps", fps, 1)
    target = Path(path)
    _write_video(_replay_frames(policy, seed), target, fps)
    return target


# --------------------------------------------------------------------------------------------------------
# The folder
# --------------------------------------------------------------------------------------------------------


def _check_out_dir(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out}: the Hugging Face folder must be a new or empty folder")


def _own_card(source: Path) -> str | None:
    """The card ``NAME.md`` beside a policy's description, when it has front matter."""
    card_path = source.with_suffix(".md")
    if source.name == HF_CONFIG:
        card_path = source.with_name("README.md")
    if not card_path.is_file():
        return None
    text = card_path.read_text(encoding="utf-8")
    return text if split_card(text)[0] is not None else None


def write_hf_folder(
    policy: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    episodes: int = DEFAULT_EPISODES,
    seed: int = 0,
    replay: bool = True,
) -> Path:
    """Write the policy ``policy`` (a shipped name or a path, any format version) as a folder ready to
    upload to the Hugging Face Hub, and return its absolute path. The folder must be new or empty.

    * ``README.md``: the policy's own card (``NAME.md`` with front matter, whose results are the committed
      measurements), else [`default_card`][thermopylae_agents.policies.model_card.default_card] with the
      results of ``results.json``;
    * ``config.json`` and ``model.safetensors``: the description (its ``provenance.hyperparameters``: the
      training settings) and the arrays, loaded back and compared before returning;
    * ``results.json``: [`hub_results`][thermopylae_agents.policies.model_card.hub_results] of ``episodes``
      games from seed ``seed``;
    * ``replay.mp4``: with ``replay`` and the ``video`` extra installed,
      [`write_replay`][thermopylae_agents.policies.model_card.write_replay] of the game of seed ``seed``.

    Everything is played and checked before the folder is made; if writing fails, what was written is
    removed again.
    """
    out = Path(out_dir)
    _check_out_dir(out)
    _check_count("episodes", episodes, 1)
    _check_count("seed", seed, 0)
    source = description_path(policy)
    loaded = load_safe_policy(source)
    results = hub_results(loaded, episodes, seed)
    card = _own_card(source)
    if card is None:
        setting = game_setting(loaded.env_id, loaded.env_options, results["opponent"])
        card = default_card(loaded.name, loaded.description, game_results(
            loaded.env_id, setting, results["n_eval_episodes"], results["wins"],
            win_rate_name=f"win rate on {episodes} deals", dataset_args={"seeds": results["seeds"]},
            mean_std=(results["mean_reward"], results["std_reward"])))
    frames = _replay_frames(loaded, seed) if replay and video_available() else None
    description = {key: value for key, value in loaded.description.items()
                   if key not in ("format", "format_version", "arrays_sha256")}
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        write_policy(out / HF_CONFIG, description, loaded.arrays)
        (out / "README.md").write_text(card, encoding="utf-8")
        (out / RESULTS_FILE).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        if frames is not None:
            _write_video(frames, out / REPLAY_FILE, REPLAY_FPS)
    except BaseException:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        else:
            for child in out.iterdir():
                child.unlink()
        raise
    return out.resolve()  # a path, never read as a shipped name (a bare "hub" would be)


def check_repo_id(repo_id: str) -> str:
    """``repo_id`` if it names a Hub repository (``NAME`` or ``OWNER/NAME``), else a one-line
    ``ValueError``; needs ``huggingface_hub`` (an ``ImportError`` without it)."""
    from huggingface_hub.utils import validate_repo_id  # extra: rlzoo

    if not isinstance(repo_id, str) or not repo_id.strip():
        raise ValueError("the repository id is empty")
    try:
        validate_repo_id(repo_id)
    except ValueError as err:
        raise ValueError(str(err).strip().splitlines()[0]) from None
    return repo_id


def push_to_hub(folder: str | os.PathLike[str], repo_id: str, commit_message: str | None = None) -> str:
    """Upload the folder ``folder`` (from
    [`write_hf_folder`][thermopylae_agents.policies.model_card.write_hf_folder]) to the model repository
    ``repo_id`` of the Hugging Face Hub, creating the repository when it does not exist, with
    ``huggingface_hub``'s ``HfApi`` (its own login or ``HF_TOKEN``); returns the commit's address."""
    from huggingface_hub import HfApi  # extra: rlzoo

    check_repo_id(repo_id)
    path = Path(folder)
    if not path.is_dir():
        raise ValueError(f"{path}: not a folder to upload")
    api = HfApi()
    api.create_repo(repo_id=repo_id, repo_type="model", exist_ok=True)
    info = api.upload_folder(repo_id=repo_id, folder_path=os.fspath(path), repo_type="model",
                             commit_message=commit_message or f"thermopylae export: {path.name}")
    return str(getattr(info, "commit_url", None) or f"https://huggingface.co/{repo_id}")
