"""Game records with agents: record a game played by an agent spec, and the model opponent a caller names
for a replay.

The record format, reading, validating and the replay live in [`thermopylae_env.records`][]
([`iter_replay`][thermopylae_env.records.iter_replay],
[`replay_record`][thermopylae_env.records.replay_record]); this module adds what needs the agents package:
agent specs ([`thermopylae_agents.policies.registry`][]) for the player and for a duel's model opponent. A
replay never loads a model that a record names: the caller passes the opponent's spec explicitly, through
[`replay_opponent`][thermopylae_agents.evaluation.replay.replay_opponent]:
``records.replay_record(record, opponent=replay_opponent(record, "fast:duel_persian_maskable_ppo"))``.
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym

from thermopylae_agents.policies.registry import make_agent, resolve_env_id
from thermopylae_env import COOP_ID, GREEK_ID, PERSIAN_ID, records
from thermopylae_env.record_format import BUILT_IN_OPPONENTS, GameRecord

__all__ = ["agent_for_env", "opponent_agent", "record_agent_game", "replay_opponent"]


def _env_kwargs(options: dict[str, Any]) -> dict[str, Any]:
    """What the co-op heuristic and search players must know about the game (players, Persian deck)."""
    return {k: options[k] for k in ("num_players", "persian_deck") if k in options}


def _check_fits(agent: Any, env: gym.Env) -> None:
    check = getattr(agent, "check_fits", None)
    if callable(check):
        check(env.observation_space, env.action_space)


def agent_for_env(spec: Any, env: gym.Env, seed: int | None = None) -> tuple[Any, str]:
    """``act(observation, mask) -> int`` and a label for ``spec`` (a callable, an agent object or a spec
    string) on the made env ``env``; a model must fit ``env``'s spaces."""
    if callable(spec) and not hasattr(spec, "act"):
        return spec, getattr(spec, "__name__", type(spec).__name__)
    env_id = env.spec.id if env.spec is not None else None
    if env_id is None:
        side = getattr(env.unwrapped, "side", None)
        env_id = COOP_ID if side is None else (GREEK_ID if side == 0 else PERSIAN_ID)
    game = getattr(env.unwrapped, "game", None)
    kwargs = {}
    if hasattr(game, "persian"):  # the co-op game: its players must know the player count and the deck
        kwargs = {"num_players": game.num_players, "persian_deck": game.persian}
    agent, label = make_agent(spec, env_id, seed=seed, env_kwargs=kwargs)
    _check_fits(agent, env)
    return agent.act, label


def opponent_agent(spec: Any, env_id: str) -> tuple[Any, str]:
    """The duel opponent for the env ``env_id`` (the other side) from a spec: a built-in name stays a
    string (the env plays it), anything else becomes an agent object; returns ``(opponent, label)``."""
    env_id = resolve_env_id(env_id)
    if env_id == COOP_ID:
        raise ValueError("the co-op game has no opponent")
    if isinstance(spec, str) and spec in BUILT_IN_OPPONENTS:
        return spec, spec
    other = PERSIAN_ID if env_id == GREEK_ID else GREEK_ID
    agent, label = make_agent(spec, other)
    probe = gym.make(other, disable_env_checker=True)
    try:
        _check_fits(agent, probe)
    finally:
        probe.close()
    return agent, label


def record_agent_game(
    env_id: str,
    agent: Any,
    path: str | os.PathLike[str],
    *,
    seed: int = 0,
    options: dict[str, Any] | None = None,
    agent_seed: int | None = None,
) -> dict[str, Any]:
    """Play one game of ``env_id`` with ``agent`` (a spec string, an agent object or a callable) and write
    its record to ``path``. A duel ``opponent`` option may be any spec: a model is recorded by its label.

    Returns the result line (``steps``, ``return``, ``won``, ``reason``, ...).
    """
    env_id = resolve_env_id(env_id)
    options = dict(options or {})
    recorded = dict(options)
    if env_id != COOP_ID and "opponent" in options:
        options["opponent"], recorded["opponent"] = opponent_agent(options["opponent"], env_id)
    probe = gym.make(env_id, disable_env_checker=True, **options)
    try:
        act, label = agent_for_env(agent, probe, seed if agent_seed is None else agent_seed)
    finally:
        probe.close()
    return records.record_game(env_id, act, path, seed=seed, options=options, agent_label=label,
                               recorded_options=recorded)


def replay_opponent(record: GameRecord, opponent: Any) -> Any:
    """The ``opponent`` of a replay of ``record`` as the replay takes it: a spec (``--opponent MODEL``: a
    model path, ``fast:PATH``, a shipped policy's name) built for the record's game; ``None`` or an object as
    it is."""
    if opponent is None or not isinstance(opponent, (str, os.PathLike)):
        return opponent
    return opponent_agent(opponent, record.env_id)[0]
