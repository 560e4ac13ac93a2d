"""Game records: write a game as JSON lines, read one back with validation, and replay it exactly.

A record holds everything needed to play the very same game again: the environment id, its options and
the reset seed fix every shuffle, die and random opponent move, so re-applying the recorded actions
reproduces the game, and the recorded events (cards drawn, fights with their dice, combats, results) and
observation digests are there to check that it did.

File format (``.jsonl``, one JSON object per line, version 1):

    {"type": "header", "format": "thermopylae-record", "version": 1, "env_id": "thermopylae/Coop-v0",
     "options": {"num_players": 1}, "seed": 7, "agent": "heuristic", "package_version": "0.1.0",
     "reset": {"events": [...], "obs": "<digest>"}}
    {"type": "step", "step": 1, "action": 13, "action_name": "fight 12 +2 support", "reward": 0.0,
     "terminated": false, "truncated": false, "events": [{"type": "fight", ...}, ...], "obs": "<digest>"}
    ...
    {"type": "result", "steps": 17, "finished": true, "return": 1.0, "won": true, "reason": "graveyard"}

``options`` are the env's keyword arguments (without ``render_mode`` and ``record_events``: a replay
sets those itself; no argument of ``gymnasium.make`` itself such as ``max_episode_steps``); they must be
JSON values of the types [`ENV_OPTIONS`][thermopylae_env.record_format.ENV_OPTIONS] lists, so a duel opponent
is recorded as ``"heuristic"``, ``"random"`` or the label of a model (a path), never as a Python callable,
and a custom co-op ``persian_deck`` as its rows (``[[white, red, bonus], ...]``), never as a file name.
``events`` are the engine's event dicts (``record_events=True``; the duel's include both sides' moves
and every card drawn: a record is for people and tests, not for an agent). ``obs`` is
[`obs_digest`][thermopylae_env.records.obs_digest] of the observation after the reset or step. ``agent``
(optional) says who chose the actions (a claim a replay cannot check, so the replay does not show it). A game
stopped before its end (a player quit) has ``"finished": false`` and null ``won`` and ``reason`` in its result
line. Extra keys are allowed and kept.

A record is data and never runs code: reading one parses JSON only (a regular file of at most
[`MAX_RECORD_BYTES`][thermopylae_env.record_format.MAX_RECORD_BYTES], nested at most
[`MAX_JSON_DEPTH`][thermopylae_env.record_format.MAX_JSON_DEPTH] deep), a replay makes only this package's
environments (``env_id`` starts with ``thermopylae/``), and it never loads a model file that a record names: a
game played against a model opponent is replayed by passing that opponent explicitly.

API: [`RecordEpisode`][thermopylae_env.records.RecordEpisode] (a Gymnasium wrapper that writes one record per
episode), [`record_game`][thermopylae_env.records.record_game] (play a callable or agent object for one game
and record it; agent spec strings are built by ``thermopylae_agents.evaluation.replay.record_agent_game``),
[`load_record`][thermopylae_env.record_format.load_record] (read and validate: a malformed file raises
``ValueError`` naming the line and the problem; defined with
[`GameRecord`][thermopylae_env.record_format.GameRecord] in [`thermopylae_env.record_format`][]),
[`iter_replay`][thermopylae_env.records.iter_replay] /
[`replay_record`][thermopylae_env.records.replay_record] (re-create the env, re-apply the actions, recompute
every recorded field and raise [`RecordMismatchError`][thermopylae_env.records.RecordMismatchError] at the
first difference), [`describe_event`][thermopylae_env.records.describe_event] (one line of text per event).
This module imports nothing from the agents package.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from thermopylae_env import __version__
from thermopylae_env.actions import as_seed
from thermopylae_env.duel.layout import card_name, duel_kinds
from thermopylae_env.record_format import (
    BUILT_IN_OPPONENTS,
    FORMAT,
    RESERVED_OPTIONS,
    VERSION,
    GameRecord,
    load_record,
    record_options_problem,
)

__all__ = [
    "RecordEpisode",
    "RecordMismatchError",
    "RecordNeedsOpponentError",
    "ReplayResult",
    "ReplayStep",
    "describe_event",
    "end_reason",
    "iter_replay",
    "check_writable",
    "make_record_env",
    "obs_digest",
    "record_game",
    "replay_record",
]


class RecordMismatchError(ValueError):
    """A replay did not reproduce the recorded game (different events, observation, reward or end)."""


def obs_digest(obs: Any) -> str:
    """A short fingerprint (16 hex digits of SHA-256) of an observation, as float32 bytes."""
    return hashlib.sha256(np.ascontiguousarray(obs, dtype=np.float32).tobytes()).hexdigest()[:16]


def _jsonable(value: Any) -> Any:
    """``value`` with NumPy scalars/arrays and tuples turned into plain JSON types (for events)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _env_options(env: gym.Env) -> dict[str, Any]:
    spec = env.spec
    if spec is None:
        raise ValueError("the env has no spec (it was not made by gymnasium.make): pass env_id= and options=")
    return {k: v for k, v in (spec.kwargs or {}).items() if k not in RESERVED_OPTIONS}


def _deck_as_rows(env: gym.Env, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with a custom Persian deck (a file name or rows) replaced by the rows the env plays
    with: a record holds its deck and never names a file."""
    deck = getattr(getattr(env.unwrapped, "game", None), "persian", None)
    if options.get("persian_deck") is None or deck is None:
        return options
    return {**options, "persian_deck": [[card.white, card.red, int(card.bonus)] for card in deck]}


def _check_options(options: dict[str, Any]) -> dict[str, Any]:
    clean = {}
    for key, value in options.items():
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if key == "config" and hasattr(value, "to_dict"):  # a reduced duel: recorded in its JSON form
            value = value.to_dict()
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise ValueError(
                f"cannot record option {key}={value!r}: a replay re-creates the env from the record, so its "
                "options must be JSON values (e.g. opponent='heuristic', 'random' or a model path)"
            ) from err
        clean[str(key)] = value
    return clean


def check_writable(path: str | os.PathLike[str]) -> None:
    """Raise ``ValueError`` naming ``path`` when a record cannot be written there (a folder, a missing or
    read-only parent folder), before anything is played."""
    target = Path(path)
    if target.is_dir():
        raise ValueError(f"cannot write the record {target}: it is a folder")
    if target.exists() and not os.access(target, os.W_OK):
        raise ValueError(f"cannot write the record {target}: the file is not writable")
    parent = target.parent if str(target.parent) else Path(".")
    existing = next((p for p in (parent, *parent.parents) if p.exists()), Path("."))
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write the record {target}: {existing} is not a writable folder")


def _open_for_writing(path: Path):
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return open(path, "w", encoding="utf-8")  # noqa: SIM115 - kept open for the episode
    except OSError as err:
        raise ValueError(f"cannot write the record {path}: {err.strerror or err}") from None


def end_reason(env: gym.Env) -> str | None:
    """Why the game of ``env`` ended (the engine's reason), or ``None`` while it is not over."""
    state = getattr(env.unwrapped, "state", None)
    return getattr(state, "reason", None) or None


def _end_summary(env: gym.Env) -> dict[str, Any]:
    return {"reason": end_reason(env)}


class RecordEpisode(gym.Wrapper):
    """Write each episode of ``env`` as a record file (format in the module docstring).

    ``env`` must come from ``gymnasium.make(env_id, ..., record_events=True)`` (its id and keyword
    arguments go into the header; or pass ``env_id`` and ``options``). ``path`` is the file to write; a
    ``{episode}`` in it is replaced by the episode number (0, 1, ...), otherwise each reset starts the
    same file afresh. A ``reset`` without a seed draws a fresh seed and records it, so every record can
    be replayed. The record is complete when the episode ends; ``close`` (or a new ``reset``) in the middle
    of an episode ends the file with ``"finished": false``.
    """

    def __init__(
        self,
        env: gym.Env,
        path: str | os.PathLike[str],
        *,
        env_id: str | None = None,
        options: dict[str, Any] | None = None,
        agent: str | None = None,
    ) -> None:
        super().__init__(env)
        if not getattr(env.unwrapped, "record_events", False):
            raise ValueError("RecordEpisode needs the engine's events: make the env with record_events=True")
        if env_id is None:
            if env.spec is None:
                raise ValueError("the env has no spec (not made by gymnasium.make): pass env_id= and "
                                 "options=")
            env_id = env.spec.id
        self.env_id = env_id
        given = _env_options(env) if options is None else dict(options)
        self.options = _check_options(_deck_as_rows(env, given))
        problem = record_options_problem(env_id, self.options)
        if problem:
            raise ValueError(f"cannot record this game: {problem}")
        self.agent = agent
        self.path_template = os.fspath(path)
        check_writable(self.path_template.replace("{episode}", "0"))
        self.episode = -1
        self.path: Path | None = None  # the file of the current (or last) episode
        self._file = None
        self._steps = 0
        self._return = 0.0

    def _write(self, obj: dict[str, Any]) -> None:
        self._file.write(json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n")

    def _finish(self, finished: bool, won: bool | None) -> None:
        if self._file is None:
            return
        result = {"type": "result", "steps": self._steps, "finished": finished, "return": self._return,
                  "won": won}
        result.update(_end_summary(self.env) if finished else {"reason": None})
        self._write(result)
        self._file.close()
        self._file = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._finish(False, None)
        seed = as_seed(seed)
        if seed is None:
            seed = secrets.randbits(31)
        if options:
            raise ValueError("RecordEpisode cannot record reset options (a replay would not know them)")
        path = Path(self.path_template.replace("{episode}", str(self.episode + 1)))
        handle = _open_for_writing(path)  # before the reset: a path that cannot be written changes nothing
        try:
            obs, info = self.env.reset(seed=seed)
        except BaseException:
            handle.close()
            raise
        self.episode += 1
        self.path = path
        self._file = handle
        self._steps = 0
        self._return = 0.0

        header = {"type": "header", "format": FORMAT, "version": VERSION, "env_id": self.env_id,
                  "options": self.options, "seed": int(seed)}
        if self.agent is not None:
            header["agent"] = self.agent
        header["package_version"] = __version__
        header["reset"] = {"events": _jsonable(info.get("events", [])), "obs": obs_digest(obs)}
        self._write(header)
        self._file.flush()
        return obs, info

    def step(self, action: Any):
        if self._file is None:
            raise RuntimeError("RecordEpisode: step() before reset() or after the episode ended")
        obs, reward, terminated, truncated, info = self.env.step(action)
        a = int(info["played_action"]) if info.get("illegal_action_replaced") else int(action)
        self._steps += 1
        self._return += float(reward)
        line = {"type": "step", "step": self._steps, "action": a,
                "action_name": self.env.unwrapped.decode_action(a), "reward": float(reward),
                "terminated": bool(terminated), "truncated": bool(truncated),
                "events": _jsonable(info.get("events", [])), "obs": obs_digest(obs)}
        if info.get("illegal_action"):
            line["illegal_reason"] = str(info.get("illegal_reason", ""))
        self._write(line)
        if terminated or truncated:
            won = info.get("is_success")
            self._finish(True, None if won is None else bool(won))
        return obs, reward, terminated, truncated, info

    def flush(self) -> None:
        """Write the lines buffered so far to the file (for a reader of the game in progress)."""
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        self._finish(False, None)
        super().close()


# ------------------------------------------------------------------------------------------- recording

AgentFn = Callable[[np.ndarray, np.ndarray], int]


def _as_act(agent: Any) -> tuple[AgentFn, str]:
    """``act(observation, mask) -> int`` and a label for a callable or an object with ``act``."""
    if hasattr(agent, "act") and callable(agent.act):
        return agent.act, str(getattr(agent, "name", None) or type(agent).__name__)
    if callable(agent) and not isinstance(agent, type):
        return agent, getattr(agent, "__name__", type(agent).__name__)
    raise TypeError(
        f"agent must be a callable act(observation, mask) -> int or an object with such an act method, got "
        f"{agent!r} (agent specs such as 'heuristic' are built by "
        "thermopylae_agents.evaluation.replay.record_agent_game)"
    )


def record_game(
    env_id: str,
    agent: Any,
    path: str | os.PathLike[str],
    *,
    seed: int = 0,
    options: dict[str, Any] | None = None,
    agent_label: str | None = None,
    recorded_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Play one game of ``env_id`` with ``agent`` (a callable ``act(obs, mask)`` or an object with ``act``)
    and write its record to ``path``.

    ``options`` go to ``gymnasium.make``; ``recorded_options`` (default: ``options``) are what the header
    says, for options that are objects (a model opponent: record its label, and pass the object to the
    replay). Returns the result line (``steps``, ``return``, ``won``, ``reason``, ...).
    """
    act, label = _as_act(agent)
    options = dict(options or {})
    written = _check_options(dict(options if recorded_options is None else recorded_options))
    env = gym.make(env_id, record_events=True, disable_env_checker=True, **options)
    recorder = RecordEpisode(env, path, env_id=env_id, options=written, agent=agent_label or label)
    try:
        obs, info = recorder.reset(seed=seed)
        done = False
        while not done:
            action = act(obs, info["action_mask"])
            obs, _, terminated, truncated, info = recorder.step(action)
            done = terminated or truncated
    finally:
        recorder.close()
    return load_record(recorder.path).result


# --------------------------------------------------------------------------------------------- reading


class RecordNeedsOpponentError(ValueError):
    """A duel record was played against a model; a replay never loads a file a record names, so the
    caller must pass that opponent explicitly."""


def make_record_env(record: GameRecord, render_mode: str | None = None, opponent: Any = None) -> gym.Env:
    """The environment of ``record`` (same id and options, events on), not yet reset.

    Only this package's environments are made, and the record's options are checked against the env's
    option names and types ([`record_options_problem`][thermopylae_env.record_format.record_options_problem])
    before anything is made: a record is data, it cannot make Gymnasium import a module, set
    ``gymnasium.make`` arguments such as ``max_episode_steps`` or name a file (a custom deck is its rows). A
    duel record whose ``opponent`` option is not a built-in player (``heuristic``, ``random``) names a model
    file; it is never loaded from the record: pass ``opponent`` (an agent object or callable) to replay it,
    else [`RecordNeedsOpponentError`][thermopylae_env.records.RecordNeedsOpponentError]. Options the env
    refuses raise ``ValueError`` naming the record.
    """
    name = record.path or "record"
    problem = record_options_problem(record.env_id, record.options)
    if problem:
        raise ValueError(f"{name}: {problem}")
    kwargs = dict(record.options)
    recorded = kwargs.get("opponent")
    if opponent is not None:
        kwargs["opponent"] = opponent
    elif recorded is not None and not (isinstance(recorded, str) and recorded in BUILT_IN_OPPONENTS):
        raise RecordNeedsOpponentError(
            f"{name}: the game was played against {recorded!r}, which a replay never loads from a record; "
            "pass that opponent explicitly (thermopylae replay FILE --opponent MODEL, or opponent=)"
        )
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    try:
        return gym.make(record.env_id, record_events=True, disable_env_checker=True, **kwargs)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name}: the options are invalid for {record.env_id}: {err}") from err


@dataclass
class ReplayStep:
    """One moment of a replay: ``index`` 0 is the reset, then one per recorded step (``step`` its line).

    Everything here comes from the replayed env (``action_name`` is recomputed); with ``check`` it was
    compared with the record first."""

    index: int
    env: gym.Env
    obs: np.ndarray
    info: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    step: dict[str, Any] | None = None
    reward: float = 0.0
    done: bool = False
    action_name: str | None = None


@dataclass(frozen=True)
class ReplayResult:
    """The end of a replayed game, recomputed from the env (and, when checked, equal to the record)."""

    steps: int
    total: float
    finished: bool
    won: bool | None
    reason: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"steps": self.steps, "return": self.total, "won": self.won, "reason": self.reason,
                "finished": self.finished}


def _normalise(events: Any) -> Any:
    return json.loads(json.dumps(_jsonable(events)))


def _compare_events(where: str, recorded: list, replayed: list) -> None:
    replayed = _normalise(replayed)
    if recorded == replayed:
        return
    for k, (a, b) in enumerate(zip(recorded, replayed, strict=False)):
        if a != b:
            raise RecordMismatchError(f"{where}: event {k} differs: recorded {a}, replay gave {b}")
    raise RecordMismatchError(f"{where}: recorded {len(recorded)} events, replay gave {len(replayed)}")


def _compare(where: str, what: str, replayed: Any, recorded: Any) -> None:
    if replayed != recorded or type(replayed) is not type(recorded):
        raise RecordMismatchError(
            f"{where}: {what} is {replayed!r} in the replay, the record says {recorded!r}")


def _compare_step(where: str, step: dict[str, Any], replayed: dict[str, Any]) -> None:
    """Every field of a step line against the replay (the action itself was applied)."""
    _compare(where, "the action name", replayed["action_name"], step["action_name"])
    _compare_events(where, step["events"], replayed["events"])
    if float(replayed["reward"]) != float(step["reward"]):
        raise RecordMismatchError(f"{where}: reward {replayed['reward']}, the record says {step['reward']}")
    _compare(where, "terminated", replayed["terminated"], step.get("terminated", False))
    _compare(where, "truncated", replayed["truncated"], step.get("truncated", False))
    _compare(where, "the illegal-move reason", replayed.get("illegal_reason"), step.get("illegal_reason"))
    if step.get("obs") is not None and step["obs"] != replayed["obs"]:
        raise RecordMismatchError(f"{where}: the observation differs from the record")


def iter_replay(
    record: GameRecord | str | os.PathLike[str], *, check: bool = True, render_mode: str | None = None,
    opponent: Any = None,
) -> Iterator[ReplayStep]:
    """Replay ``record`` step by step: yields the reset, then each step, with the live env.

    With ``check`` (default) every field of every line (action name, events, reward, end flags,
    illegal-move reason, observation digest; at the end the return, the winner and the reason) is
    recomputed and compared with the record, and the first difference raises
    [`RecordMismatchError`][thermopylae_env.records.RecordMismatchError]. ``opponent``: see
    [`make_record_env`][thermopylae_env.records.make_record_env]. The env is closed when the iteration ends.
    """
    yield from _replay(record, check, render_mode, opponent, [])


def _replay(record: GameRecord | str | os.PathLike[str], check: bool, render_mode: str | None,
            opponent: Any, outcome_out: list[ReplayResult]) -> Iterator[ReplayStep]:
    """[`iter_replay`][thermopylae_env.records.iter_replay], appending the recomputed
    [`ReplayResult`][thermopylae_env.records.ReplayResult] to ``outcome_out`` at the end."""
    if not isinstance(record, GameRecord):
        record = load_record(record)
    name = record.path or "record"
    env = make_record_env(record, render_mode, opponent)
    try:
        obs, info = env.reset(seed=record.seed)
        reset = record.header.get("reset", {})
        if check:
            _compare_events(f"{name}: reset", reset.get("events", []), info.get("events", []))
            if reset.get("obs") is not None and reset["obs"] != obs_digest(obs):
                raise RecordMismatchError(f"{name}: the observation after the reset differs from the record")
        yield ReplayStep(0, env, obs, info, events=_normalise(info.get("events", [])))
        total = 0.0
        ended = False
        won = None
        for step in record.steps:
            action = step["action"]
            action_name = env.unwrapped.decode_action(action) if action < env.action_space.n else None
            where = f"{name}: step {step['step']} ({action_name})"
            mask = info.get("action_mask")
            legal = mask is None or (action < len(mask) and bool(mask[action]))
            if check and not legal and "illegal_reason" not in step:
                raise RecordMismatchError(f"{where}: action {action} is not legal in the replayed game")
            obs, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            ended = bool(terminated or truncated)
            if ended:
                won = None if info.get("is_success") is None else bool(info["is_success"])
            if check:
                illegal = str(info.get("illegal_reason", "")) if info.get("illegal_action") else None
                replayed = {"action_name": action_name, "events": info.get("events", []), "reward": reward,
                            "terminated": bool(terminated), "truncated": bool(truncated),
                            "illegal_reason": illegal, "obs": obs_digest(obs)}
                _compare_step(where, step, replayed)
            yield ReplayStep(step["step"], env, obs, info, events=_normalise(info.get("events", [])),
                             step=step, reward=float(reward), done=ended, action_name=action_name)
        outcome = ReplayResult(len(record.steps), total, ended, won,
                               _end_summary(env)["reason"] if ended else None)
        if check:
            _compare_result(name, record.result, outcome)
        outcome_out.append(outcome)
    finally:
        env.close()


def _compare_result(name: str, result: dict[str, Any], outcome: ReplayResult) -> None:
    if not math.isclose(outcome.total, float(result["return"]), abs_tol=1e-9):
        raise RecordMismatchError(
            f"{name}: replay return {outcome.total}, the record says {result['return']}")
    where = f"{name}: the result line"
    _compare(where, "finished", outcome.finished, result["finished"])
    _compare(where, "won", outcome.won, result.get("won"))
    _compare(where, "the reason", outcome.reason, result.get("reason"))


def replay_record(path: str | os.PathLike[str] | GameRecord, *, opponent: Any = None) -> dict[str, Any]:
    """Replay a record and check every field against the replayed game (raises
    [`RecordMismatchError`][thermopylae_env.records.RecordMismatchError] at the first difference). Returns the
    recomputed ``{"steps", "return", "won", "reason", "finished"}``. ``opponent``: see
    [`make_record_env`][thermopylae_env.records.make_record_env]."""
    record = path if isinstance(path, GameRecord) else load_record(path)
    outcome: list[ReplayResult] = []
    for _ in _replay(record, True, None, opponent, outcome):
        pass
    return outcome[0].as_dict()


# ------------------------------------------------------------------------------------------- describing


def _duel_card(card: Any) -> str:
    try:
        return card_name(int(card))
    except (IndexError, TypeError, ValueError):
        return f"card {card}"


def _duel_cards(cards: Any) -> str:
    return ", ".join(_duel_card(c) for c in cards) or "nothing"


def describe_event(event: dict[str, Any], viewer: int | None = None) -> str | None:
    """One line of text for an engine event (co-op or duel).

    For the duel, ``viewer`` (0 Greek, 1 Persian) hides what that side may not see: the opponent's drawn
    cards and the cards it adds while building an attack/defence (``None`` returned: nothing to show).
    With ``viewer=None`` everything is told (replays).
    """
    kind = event.get("type")
    if "player" in event or "winner" in event or kind in ("deal", "combat"):
        return _describe_duel(event, viewer)
    return _describe_coop(event)


def _describe_coop(event: dict[str, Any]) -> str | None:
    kind = event.get("type")
    if kind == "retreat":
        return f"seat {event.get('seat')} retreats: marker to {event.get('marker')}"
    if kind == "fight":
        dice = event.get("dice") or []
        extra = " (+ location die)" if event.get("location_die") else ""
        roll = f", dice {' '.join(str(d) for d in dice)}{extra}" if dice else ""
        lines = [f"seat {event.get('seat')} fights with {event.get('card')} + {event.get('support')} "
                 f"support{roll}: total {event.get('total')}"]
        words = {"stays": "stays", "discard": "beaten (discard pile)", "graveyard": "beaten (graveyard)"}
        for r in event.get("results") or []:
            bonus = ", bonus" if r.get("bonus") else ""
            lines.append(f"slot {r.get('slot')} (white {r.get('white')}, red {r.get('red')}{bonus}): "
                         f"{words.get(r.get('outcome'), r.get('outcome'))}")
        return "; ".join(lines)
    if kind == "offer":
        more = f" ({event.get('pending')} more after this one)" if event.get("pending") else ""
        return f"a Spartan draw is offered{more}"
    if kind == "draw":
        return f"seat {event.get('seat')} draws a {event.get('card')}"
    if kind == "decline":
        return "the draw is declined"
    if kind == "discard":
        return f"seat {event.get('seat')} discards a {event.get('card')}"
    if kind == "refill":
        bonus = ", bonus" if event.get("bonus") else ""
        return (f"a new Persian card enters slot {event.get('slot')}: white {event.get('white')}, "
                f"red {event.get('red')}{bonus}")
    if kind == "end":
        why = {"graveyard": "12 Persians in the graveyard",
               "refill": "the Persian deck cannot refill the line",
               "marker": "the marker reached 7", "exhausted": "no Spartan cards left"}
        reason = why.get(event.get("reason"), event.get("reason"))
        return f"game over: {'WON' if event.get('won') else 'LOST'} ({reason})"
    return f"(unknown event) {event}"


def _describe_duel(event: dict[str, Any], viewer: int | None) -> str | None:
    names = ("Greek", "Persian")
    kind = event.get("type")
    player = event.get("player")
    who = names[player] if player in (0, 1) else "?"
    if viewer is not None and player in (0, 1) and player == viewer:
        who = f"{who} (you)"
    hidden = viewer is not None and player in (0, 1) and player != viewer
    if kind == "deal":
        hands = event.get("hands") or [[], []]
        if viewer is None:
            return f"the Greek is dealt {_duel_cards(hands[0])}; the Persian {_duel_cards(hands[1])}"
        return f"you are dealt {_duel_cards(hands[viewer])}"
    if kind == "draw":
        return f"{who} draws a card" if hidden else f"{who} draws {_duel_card(event.get('card'))}"
    if kind == "discard":
        return f"{who} discards {_duel_card(event.get('card'))}"
    if kind == "play_discard_card":
        victim = names[event.get("victim", 1 - (player or 0))]
        return (f"{who} plays {_duel_card(event.get('card'))}: the {victim} discards "
                f"{_duel_cards(event.get('discarded') or [])}")
    if kind == "done_discarding":
        return f"{who} ends the discard phase" + (" (nothing to do)" if event.get("auto") else "")
    if kind == "add":
        if hidden:
            return None

        try:
            label = duel_kinds()[player][int(event.get("kind"))].label
        except (IndexError, TypeError, ValueError):
            label = f"a card of kind {event.get('kind')}"
        return f"{who} adds {label}"
    if kind == "attack":
        return f"{who} attacks with {_duel_cards(event.get('cards') or [])}: total {event.get('total')}"
    if kind == "no_attack":
        return f"{who} does not attack" + (" (no Attack card)" if event.get("auto") else "")
    if kind == "defence":
        return f"{who} defends with {_duel_cards(event.get('cards') or [])}: total {event.get('total')}"
    if kind == "no_defence":
        return f"{who} does not defend" + (" (no troop card)" if event.get("auto") else "")
    if kind == "combat":
        return (f"combat: attack {event.get('attack')} against defence {event.get('defence')}: "
                f"the Greeks lose {event.get('tokens_lost')} token(s), {event.get('tokens')} left")
    if kind == "end":
        reasons = {"persian_deck_empty": "the Persian deck is empty", "no_tokens": "no Greek tokens left"}
        winner = names[event.get("winner")] if event.get("winner") in (0, 1) else "?"
        return f"game over: the {winner}s win ({reasons.get(event.get('reason'), event.get('reason'))})"
    return f"(unknown event) {event}"
